"""Network-level robustness of binlogd: malformed packets, broken handshakes, bad logins, vanishing replicas,
duplicate server_ids and bad command lines.

Every case ends with the same two checks (`assert_healthy`): a fresh connection still gets an answer to
`SELECT 1`, and binlogd's log has no "Traceback" (a bug must not be papered over by the catch-all handlers
in server/app.py and server/connection.py). Every socket read has a timeout: a server that stops answering
fails the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import socket
import struct
import subprocess
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.commands import build_binlog_dump, build_register_slave
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.harness import Binlogd
from tests.harness.cli import run_cli
from tests.oracle_data import ORACLE

ORACLE_FILES = ("mysql-bin.000001", "mysql-bin.000002")
TIMEOUT = 3.0  # seconds any single answer may take

COM_QUIT, COM_INIT_DB, COM_QUERY, COM_PING = 0x01, 0x02, 0x03, 0x0E
COM_CHANGE_USER, COM_BINLOG_DUMP, COM_REGISTER_SLAVE = 0x11, 0x12, 0x15
COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE = 0x16, 0x17, 0x18, 0x19
COM_STMT_RESET, COM_STMT_FETCH, COM_BINLOG_DUMP_GTID, COM_RESET_CONNECTION = 0x1A, 0x1C, 0x1E, 0x1F
# commands binlogd implements (everything else must be ERR 1047, as on MariaDB for e.g. COM_BINLOG_DUMP_GTID)
HANDLED = {COM_QUIT, COM_INIT_DB, COM_QUERY, COM_PING, COM_CHANGE_USER, COM_BINLOG_DUMP, COM_REGISTER_SLAVE,
           COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE, COM_STMT_RESET,
           COM_STMT_FETCH, COM_RESET_CONNECTION,
           0x04, 0x07, 0x09, 0x0A, 0x0C, 0x0D, 0x1B, 0xFA}  # server/minor_commands.py (MariaDB's answers, not 1047)
NO_REPLY = {COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE}  # the protocol defines no answer for these

# what a 10.11 client sends in its handshake response (CLIENT_PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH ...)
CLIENT_CAPS = 0x00000001 | 0x00000004 | 0x00000200 | 0x00002000 | 0x00008000 | 0x00020000 | 0x00080000
REPL_SESSION = ["SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=4"]


# ---- wire helpers --------------------------------------------------------------------------------------------


def send_packet(sock: socket.socket, payload: bytes, seq: int = 0) -> None:
    sock.sendall(struct.pack("<I", len(payload) | (seq << 24)) + payload)


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """n bytes, or None if the server closed the connection first. A timeout raises (= the server hung)."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError:
            return None
        except TimeoutError as e:
            raise AssertionError(f"no answer from binlogd within {sock.gettimeout()} s (hung?)") from e
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_packet(sock: socket.socket) -> tuple[int, bytes] | None:
    """(seq, payload) of the next logical packet (>= 16 MiB ones reassembled), or None on close."""
    payload = bytearray()
    while True:
        hdr = recv_exact(sock, 4)
        if hdr is None:
            return None
        (w,) = struct.unpack("<I", hdr)
        n, seq = w & 0xFFFFFF, w >> 24
        body = recv_exact(sock, n) if n else b""
        if body is None:
            return None
        payload += body
        if n < 0xFFFFFF:
            return seq, bytes(payload)


def parse_err(payload: bytes) -> tuple[int, str, str]:
    """(code, sqlstate, message) of an ERR packet, checking its layout."""
    assert payload[:1] == b"\xff", payload[:40]
    (code,) = struct.unpack_from("<H", payload, 1)
    assert payload[3:4] == b"#", f"ERR without SQLSTATE marker: {payload!r}"
    return code, payload[4:9].decode(), payload[9:].decode(errors="replace")


def is_closed(sock: socket.socket, wait: float = TIMEOUT) -> bool:
    """True once the server closed the connection (EOF or reset); False if it sent data instead."""
    sock.settimeout(wait)
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError as e:
        raise AssertionError("binlogd neither answered nor closed the connection") from e
    return data == b""


def parse_handshake(payload: bytes) -> bytes:
    """The 20-byte scramble of a HandshakeV10 packet."""
    assert payload[0] == 10, payload[:20]
    i = payload.index(b"\0", 1)
    salt1 = payload[i + 5 : i + 13]
    salt2 = payload[i + 32 : i + 32 + 12]
    return salt1 + salt2


def native_scramble(password: str, salt: bytes) -> bytes:
    if not password:
        return b""
    s1 = hashlib.sha1(password.encode()).digest()
    s2 = hashlib.sha1(s1).digest()
    s3 = hashlib.sha1(salt + s2).digest()
    return bytes(a ^ b for a, b in zip(s1, s3, strict=True))


def handshake_response(user: str, auth: bytes, caps: int = CLIENT_CAPS, plugin: bytes | None = b"mysql_native_password"
                       ) -> bytes:
    out = struct.pack("<IIB", caps, 1 << 24, 33) + bytes(23) + user.encode() + b"\0" + bytes((len(auth),)) + auth
    if plugin is not None:
        out += plugin + b"\0"
    return out


def raw_connect(server: Binlogd) -> tuple[socket.socket, bytes]:
    """A TCP connection that has read the server's handshake (returns the scramble)."""
    sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    pkt = read_packet(sock)
    assert pkt is not None, "binlogd closed the connection before its handshake"
    return sock, parse_handshake(pkt[1])


def logged_in(server: Binlogd, **kw: object) -> tuple[pymysql.connections.Connection, socket.socket]:  # type: ignore[type-arg]
    conn = server.connect(connect_timeout=TIMEOUT, read_timeout=TIMEOUT, write_timeout=TIMEOUT, **kw)
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.settimeout(TIMEOUT)
    return conn, sock


def assert_healthy(server: Binlogd) -> None:
    """The server answers a fresh SELECT 1 and has logged no traceback."""
    assert server.is_running, f"binlogd exited: {server.log_tail()}"
    try:
        conn = server.connect(connect_timeout=TIMEOUT, read_timeout=TIMEOUT, write_timeout=TIMEOUT)
    except pymysql.Error as e:
        raise AssertionError(f"binlogd no longer accepts connections: {e!r}\n{server.log_tail()}") from e
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        conn.close()
    log = server.log_text()
    assert "Traceback" not in log, f"traceback in binlogd's log:\n{_traceback_excerpt(log)}"


def _traceback_excerpt(log: str) -> str:
    i = log.index("Traceback")
    start = log.rfind("\n", 0, max(0, i - 1)) + 1
    return log[start : start + 2500]


def close_quietly(*things: object) -> None:
    for t in things:
        with contextlib.suppress(Exception):
            t.close()  # type: ignore[attr-defined]


# ---- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture
def oracle_dir(tmp_path: Path) -> Path:
    if not ORACLE.is_dir():
        pytest.fail(f"oracle binlogs missing at {ORACLE}")
    d = tmp_path / "binlogs"
    d.mkdir()
    for name in ORACLE_FILES:
        shutil.copyfile(ORACLE / name, d / name)
    return d


@pytest.fixture
def server(binlogd: Any, oracle_dir: Path) -> Binlogd:
    started: Binlogd = binlogd(["--binlog-dir", str(oracle_dir), "--server-id", "1"])
    return started


# ---- hypothesis fuzz of the command phase ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    kind: str
    payload: bytes = b""
    seq: int = 0
    declared: int = 0  # "oversized": the length the header claims
    session: tuple[str, ...] = ()


def _valid_dump() -> bytes:
    return build_binlog_dump(4, 1, 9, "mysql-bin.000001")


def _valid_register() -> bytes:
    return build_register_slave(9, "replica.example", "u", "p", 3306)


_command_byte = st.one_of(st.sampled_from([*sorted(HANDLED - {COM_BINLOG_DUMP}), 0, 4, 10, 30, 64, 255]),
                          st.integers(0, 255).filter(lambda b: b != COM_BINLOG_DUMP))
_body = st.binary(max_size=64)
_name_chars = st.characters(min_codepoint=0x21, max_codepoint=0x7E)

CASES = st.one_of(
    st.builds(lambda c, b: Case("command", bytes((c,)) + b), _command_byte, _body),
    st.builds(lambda n: Case("trunc_dump", _valid_dump()[:n]), st.integers(1, 10)),
    st.builds(lambda n, b: Case("trunc_register", _valid_register()[:n] + b),
              st.integers(1, len(_valid_register()) - 1), st.binary(max_size=3)),
    st.builds(lambda b: Case("register_garbage", bytes((COM_REGISTER_SLAVE,)) + b), st.binary(max_size=40)),
    st.builds(lambda s, b: Case("bad_seq", bytes((COM_PING,)) + b, seq=s), st.integers(1, 255), st.binary(max_size=4)),
    st.just(Case("zero")),
    st.builds(lambda b, extra: Case("oversized", b, declared=min(0xFFFFFF, len(b) + extra)),
              st.binary(min_size=1, max_size=32), st.integers(1, 0xFFFFFF)),
    st.builds(lambda b: Case("dump_gtid", bytes((COM_BINLOG_DUMP_GTID,)) + b), st.binary(max_size=64)),
    st.builds(lambda pos, sid, f, sess: Case("dump_pos", build_binlog_dump(pos, 1, sid, f), session=sess),
              st.one_of(st.integers(0, 3400), st.integers(0, 0xFFFFFFFF)), st.integers(0, 0xFFFFFFFF),
              st.sampled_from(ORACLE_FILES),
              st.sampled_from([tuple(REPL_SESSION), ("SET @master_binlog_checksum='CRC32'",), (),
                               ("SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=0",
                                "SET skip_replication=1")])),
    st.builds(lambda pos, flags, sid, name: Case("dump_nofile", build_binlog_dump(pos, flags, sid, name),
                                                 session=tuple(REPL_SESSION)),
              st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF),
              st.text(_name_chars, min_size=1, max_size=40).filter(lambda n: n not in ORACLE_FILES)),
)


def _expect_answer_or_close(sock: socket.socket, case: Case) -> tuple[int, bytes] | None:
    pkt = read_packet(sock)
    if pkt is not None:
        first = pkt[1][:1]
        assert first in (b"\xff", b"\x00", b"\xfe") or case.kind == "command", f"odd answer {pkt[1][:40]!r}"
        if first == b"\xff":
            parse_err(pkt[1])
    return pkt


def run_case(server: Binlogd, case: Case) -> None:
    conn, sock = logged_in(server)
    try:
        with conn.cursor() as cur:
            for stmt in case.session:
                cur.execute(stmt)
        if case.kind == "oversized":
            # a header announcing more than ever comes, then the client goes away: binlogd must just drop it
            sock.sendall(struct.pack("<I", case.declared) + case.payload)
            sock.shutdown(socket.SHUT_WR)
            pkt = read_packet(sock)
            if pkt is not None:
                parse_err(pkt[1])
                assert read_packet(sock) is None
            return
        send_packet(sock, case.payload, case.seq)
        if case.kind == "command":
            cmd = case.payload[0]
            if cmd == COM_QUIT:
                assert is_closed(sock)
                return
            if cmd in NO_REPLY:  # nothing comes back; the connection must still work (or have been closed)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    send_packet(sock, bytes((COM_PING,)))
            pkt = _expect_answer_or_close(sock, case)
            if cmd not in HANDLED:
                assert pkt is not None, f"command 0x{cmd:02x}: connection closed instead of ERR 1047"
                assert parse_err(pkt[1])[0] == 1047, pkt
            return
        if case.kind == "dump_gtid":
            pkt = read_packet(sock)
            assert pkt is not None, "COM_BINLOG_DUMP_GTID: connection closed instead of ERR 1047"
            code, state, msg = parse_err(pkt[1])
            assert (code, state, msg) == (1047, "08S01", "Unknown command")
            return
        if case.kind == "dump_pos":  # non-blocking: events, then EOF or ERR 1236, never a hang
            while True:
                pkt = read_packet(sock)
                assert pkt is not None, "dump ended without EOF or ERR"
                if pkt[1][:1] == b"\xff":
                    assert parse_err(pkt[1])[0] == 1236, pkt[1]
                    return
                if pkt[1][:1] == b"\xfe" and len(pkt[1]) < 9:
                    return
                assert pkt[1][:1] == b"\x00", pkt[1][:40]
        if case.kind == "dump_nofile":
            pkt = read_packet(sock)
            assert pkt is not None
            assert parse_err(pkt[1]) == (1236, "HY000", "Could not find first log file name in binary log index file")
            return
        # trunc_dump, trunc_register, register_garbage, bad_seq, zero: an ERR or a clean close
        pkt = _expect_answer_or_close(sock, case)
        if case.kind in ("bad_seq", "zero"):
            assert pkt is None or pkt[1][:1] == b"\xff", pkt
        elif case.kind == "trunc_dump":  # the missing bytes read as zeros (MariaDB reads past the end): position 4
            # of the first file when the position survived the cut, which dumps (from the fake ROTATE), else an ERR
            starts = case.payload[1:2] == b"\x04"
            assert pkt is not None and pkt[1][:1] == (b"\x00" if starts else b"\xff"), pkt
    finally:
        close_quietly(conn)


@settings(max_examples=200, deadline=None, database=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],  # no shrinking: each example talks to a live server
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=CASES)
@example(case=Case("dump_gtid", bytes((COM_BINLOG_DUMP_GTID,)) + bytes(30)))
@example(case=Case("zero"))
@example(case=Case("bad_seq", bytes((COM_PING,)), seq=3))
@example(case=Case("trunc_dump", bytes((COM_BINLOG_DUMP,)) + b"\x04\x00"))
@example(case=Case("trunc_register", bytes((COM_REGISTER_SLAVE,)) + b"\x01\x00"))
@example(case=Case("oversized", b"\x03SEL", declared=0xFFFFFF))
@example(case=Case("command", bytes((COM_STMT_EXECUTE, 1))))
def test_fuzz_command_phase(server: Binlogd, case: Case) -> None:
    run_case(server, case)
    assert_healthy(server)


# ---- specific command-phase cases (deterministic, named after the bug they show) ----------------------------


def test_com_binlog_dump_gtid_is_err_1047_and_connection_stays_usable(server: Binlogd) -> None:
    conn, sock = logged_in(server)
    try:
        send_packet(sock, bytes((COM_BINLOG_DUMP_GTID,)) + struct.pack("<HII", 0, 9, 0) + bytes(8 + 4))
        pkt = read_packet(sock)
        assert pkt is not None
        assert parse_err(pkt[1]) == (1047, "08S01", "Unknown command")
        with conn.cursor() as cur:  # like MariaDB, the session goes on
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        close_quietly(conn)
    assert_healthy(server)


@pytest.mark.parametrize("payload", [
    pytest.param(bytes((COM_STMT_EXECUTE, 1)), id="stmt_execute"),
    pytest.param(bytes((COM_STMT_FETCH, 1)), id="stmt_fetch"),
    pytest.param(bytes((COM_STMT_RESET,)), id="stmt_reset"),
])
def test_truncated_statement_commands_get_malformed_packet_not_a_traceback(server: Binlogd, payload: bytes) -> None:
    conn, sock = logged_in(server)
    try:
        send_packet(sock, payload)
        pkt = read_packet(sock)
        if pkt is not None:
            code, _, msg = parse_err(pkt[1])
            assert code != 1105 or "Internal error" not in msg, f"internal error answered: {code} {msg}"
    finally:
        close_quietly(conn)
    assert_healthy(server)


def test_com_change_user_without_nul_terminator_does_not_hang_the_server(server: Binlogd) -> None:
    conn, sock = logged_in(server)
    try:
        send_packet(sock, bytes((COM_CHANGE_USER,)) + b"\xff\xff")
        pkt = read_packet(sock)
        assert pkt is None or pkt[1][:1] == b"\xff", pkt
    finally:
        close_quietly(conn)
    assert_healthy(server)


def test_packet_header_split_across_tcp_segments(server: Binlogd) -> None:
    """A legitimate client whose 4-byte header arrives in two TCP segments (TCP_NODELAY on both ends)."""
    conn, sock = logged_in(server)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        query = bytes((COM_QUERY,)) + b"SELECT 1"
        wire = struct.pack("<I", len(query)) + query
        sock.sendall(wire[:2])
        time.sleep(0.2)
        sock.sendall(wire[2:])
        pkt = read_packet(sock)
        assert pkt is not None and pkt[1][:1] != b"\xff", f"split header refused: {pkt!r}"
    finally:
        close_quietly(conn)
    assert_healthy(server)


@pytest.mark.parametrize("wire", [
    pytest.param(b"\x05\x00", id="half_header"),
    pytest.param(struct.pack("<I", 100) + b"\x03SELECT", id="half_packet"),
    pytest.param(struct.pack("<I", 0xFFFFFF) + b"\x03SELECT", id="max_header_short_body"),
])
def test_partial_packet_then_close_in_command_phase(server: Binlogd, wire: bytes) -> None:
    conn, sock = logged_in(server)
    try:
        sock.sendall(wire)
        sock.shutdown(socket.SHUT_WR)
        pkt = read_packet(sock)
        assert pkt is None or pkt[1][:1] == b"\xff"
    finally:
        close_quietly(conn)
    assert_healthy(server)


# ---- garbage before / during the handshake ----------------------------------------------------------------


def test_peer_connects_and_vanishes(server: Binlogd) -> None:
    for _ in range(3):
        s = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
        s.close()
    s = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST instead of FIN
    s.close()
    time.sleep(0.3)
    assert_healthy(server)


def test_peer_reads_handshake_then_vanishes(server: Binlogd) -> None:
    sock, _ = raw_connect(server)
    sock.close()
    time.sleep(0.3)
    assert_healthy(server)


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_instead_of_handshake_response(server: Binlogd, seed: int) -> None:
    rnd = __import__("random").Random(seed)
    body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 200)))
    sock, _ = raw_connect(server)
    try:
        send_packet(sock, body, seq=1)
        pkt = read_packet(sock)
        assert pkt is None or pkt[1][:1] == b"\xff", pkt
    finally:
        sock.close()
    assert_healthy(server)


@pytest.mark.parametrize("body,ok_allowed", [
    pytest.param(b"\x01\x02\x03\x04\x05", False, id="too_short"),
    pytest.param(struct.pack("<IIB", CLIENT_CAPS, 1 << 24, 33) + bytes(23), False, id="ssl_request_without_tls"),
    pytest.param(struct.pack("<IIB", CLIENT_CAPS, 1 << 24, 33) + bytes(23) + b"root-without-nul", False,
                 id="user_no_nul"),
    pytest.param(handshake_response("root", b"", plugin=None), False, id="plugin_auth_flag_without_plugin_name"),
    pytest.param(handshake_response("root", b"")[:-1], False, id="plugin_name_without_nul"),
    pytest.param(struct.pack("<IIB", CLIENT_CAPS, 1 << 24, 33) + bytes(23) + b"root\0\x40", False,
                 id="auth_data_longer_than_packet"),
    # MariaDB falls back to its default character set for an unknown number: OK or a clean ERR both do
    pytest.param(struct.pack("<IIB", CLIENT_CAPS, 1 << 24, 0) + bytes(23) + b"root\0\0mysql_native_password\0", True,
                 id="unknown_charset_0"),
])
def test_malformed_handshake_response(server: Binlogd, body: bytes, ok_allowed: bool) -> None:
    sock, _ = raw_connect(server)
    try:
        send_packet(sock, body, seq=1)
        pkt = read_packet(sock)
        allowed = (b"\xff", b"\x00") if ok_allowed else (b"\xff",)
        assert pkt is None or pkt[1][:1] in allowed, pkt
    finally:
        sock.close()
    assert_healthy(server)


@pytest.mark.parametrize("wire", [
    pytest.param(b"\x40\x00", id="half_header"),
    pytest.param(struct.pack("<I", 100 | (1 << 24)) + b"abc", id="half_packet"),
])
def test_partial_handshake_response_then_close(server: Binlogd, wire: bytes) -> None:
    sock, _ = raw_connect(server)
    try:
        sock.sendall(wire)
        sock.shutdown(socket.SHUT_WR)
        pkt = read_packet(sock)
        assert pkt is None or pkt[1][:1] == b"\xff"
    finally:
        sock.close()
    assert_healthy(server)


def test_handshake_response_with_wrong_sequence_id(server: Binlogd) -> None:
    sock, salt = raw_connect(server)
    try:
        send_packet(sock, handshake_response("root", native_scramble("", salt)), seq=7)
        pkt = read_packet(sock)
        assert pkt is None or pkt[1][:1] == b"\xff", pkt
        if pkt is not None:
            assert is_closed(sock)
    finally:
        sock.close()
    assert_healthy(server)


def test_raw_handshake_login_works(server: Binlogd) -> None:
    """The raw helpers above are right: a proper response logs in and COM_QUERY answers."""
    sock, salt = raw_connect(server)
    try:
        send_packet(sock, handshake_response("root", native_scramble("", salt)), seq=1)
        pkt = read_packet(sock)
        assert pkt is not None and pkt[1][:1] == b"\x00", pkt
        send_packet(sock, bytes((COM_QUERY,)) + b"SELECT 1")
        pkt = read_packet(sock)
        assert pkt is not None and pkt[1] == b"\x01", pkt  # one column
    finally:
        sock.close()
    assert_healthy(server)


# ---- authentication -------------------------------------------------------------------------------------------


@pytest.fixture
def users_server(binlogd: Any, oracle_dir: Path, tmp_path: Path) -> Binlogd:
    native = hashlib.sha1(hashlib.sha1(b"hashpw").digest()).hexdigest().upper()
    users = tmp_path / "users"
    users.write_text(f"# binlogd users\nu:secret\nh:*{native}\n\nempty:\n")
    started: Binlogd = binlogd(["--binlog-dir", str(oracle_dir), "--server-id", "1", "--users", str(users)],
                               user="u", password="secret")
    return started


def _login_error(server: Binlogd, user: str, password: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.OperationalError) as ei:
        server.connect(user=user, password=password, connect_timeout=TIMEOUT, read_timeout=TIMEOUT).close()
    code, msg = ei.value.args
    return int(code), str(msg)


def test_wrong_password_is_1045_with_mariadb_text(users_server: Binlogd) -> None:
    assert _login_error(users_server, "u", "wrong") == (
        1045, "Access denied for user 'u'@'127.0.0.1' (using password: YES)")
    assert _login_error(users_server, "u", "") == (1045, "Access denied for user 'u'@'127.0.0.1' (using password: NO)")
    assert_healthy_as(users_server, "u", "secret")


def test_unknown_user_is_1045(users_server: Binlogd) -> None:
    assert _login_error(users_server, "nobody", "x") == (
        1045, "Access denied for user 'nobody'@'127.0.0.1' (using password: YES)")
    # root is not special once a users file is given
    assert _login_error(users_server, "root", "") == (
        1045, "Access denied for user 'root'@'127.0.0.1' (using password: NO)")
    assert_healthy_as(users_server, "u", "secret")


def test_correct_passwords_work(users_server: Binlogd) -> None:
    for user, password in (("u", "secret"), ("h", "hashpw"), ("empty", "")):
        conn = users_server.connect(user=user, password=password, connect_timeout=TIMEOUT)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
        finally:
            conn.close()
    assert "Traceback" not in users_server.log_text()


def test_root_without_users_file_works(server: Binlogd) -> None:
    conn = server.connect(user="root", password="", connect_timeout=TIMEOUT)
    conn.close()
    assert _login_error(server, "root", "x")[0] == 1045
    assert _login_error(server, "admin", "")[0] == 1045
    assert_healthy(server)


def _failed_raw_login(server: Binlogd, user: str, password: str) -> tuple[socket.socket, bytes]:
    """A raw login with bad credentials; returns the socket and the first answer (must be ERR 1045)."""
    sock, salt = raw_connect(server)
    send_packet(sock, handshake_response(user, native_scramble(password, salt)), seq=1)
    pkt = read_packet(sock)
    assert pkt is not None
    assert parse_err(pkt[1])[:2] == (1045, "28000"), pkt
    return sock, pkt[1]


@pytest.mark.parametrize("user,password", [("u", "wrong"), ("nobody", "secret")])
def test_failed_login_closes_the_connection(users_server: Binlogd, user: str, password: str) -> None:
    """After the 1045 nothing the client sends is executed: no OK / result set ever comes, only the close."""
    sock, _ = _failed_raw_login(users_server, user, password)
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            send_packet(sock, bytes((COM_QUERY,)) + b"SET @x = 1")
            send_packet(sock, bytes((COM_QUERY,)) + b"SELECT 1", seq=0)
        while (pkt := read_packet(sock)) is not None:
            assert pkt[1][:1] == b"\xff", f"binlogd answered a COM_QUERY after a failed login: {pkt!r}"
    finally:
        sock.close()
    assert_healthy_as(users_server, "u", "secret")


def test_failed_login_sends_exactly_one_err_packet(users_server: Binlogd) -> None:
    """MariaDB sends the 1045 and closes. binlogd must not add a second, empty ERR (mimic's 1043 for AuthFailed)."""
    sock, _ = _failed_raw_login(users_server, "u", "wrong")
    try:
        extra = []
        while (pkt := read_packet(sock)) is not None:
            extra.append(pkt)
        assert extra == [], f"packets after the ERR 1045: {extra!r}"
    finally:
        sock.close()
    assert_healthy_as(users_server, "u", "secret")


def assert_healthy_as(server: Binlogd, user: str, password: str) -> None:
    conn = server.connect(user=user, password=password, connect_timeout=TIMEOUT, read_timeout=TIMEOUT)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        conn.close()
    assert "Traceback" not in server.log_text(), _traceback_excerpt(server.log_text())


# ---- replicas that vanish, duplicate server_ids -------------------------------------------------------------


def start_dump(server: Binlogd, server_id: int, flags: int = 0, file: str = "mysql-bin.000001",
               pos: int = 4) -> tuple[pymysql.connections.Connection, socket.socket]:  # type: ignore[type-arg]
    conn, sock = logged_in(server)
    with conn.cursor() as cur:
        for stmt in REPL_SESSION:
            cur.execute(stmt)
    send_packet(sock, build_binlog_dump(pos, flags, server_id, file))
    return conn, sock


def read_until_idle(sock: socket.socket, idle: float = 0.7) -> tuple[list[bytes], str]:
    """Payloads until ERR/EOF/close or `idle` seconds of silence: (payloads, 'ERR'|'EOF'|'closed'|'idle')."""
    out: list[bytes] = []
    sock.settimeout(idle)
    while True:
        try:
            pkt = read_packet(sock)
        except AssertionError:
            return out, "idle"
        if pkt is None:
            return out, "closed"
        out.append(pkt[1])
        if pkt[1][:1] == b"\xff":
            return out, "ERR"
        if pkt[1][:1] == b"\xfe" and len(pkt[1]) < 9:
            return out, "EOF"


def wait_for_log(server: Binlogd, pattern: str, timeout: float = 5.0, count: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if len(re.findall(pattern, server.log_text())) >= count:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"binlogd did not log /{pattern}/ within {timeout} s:\n{server.log_tail()}")
        time.sleep(0.05)


def test_replica_vanishes_during_blocking_dump(server: Binlogd) -> None:
    conn, sock = start_dump(server, server_id=5)
    packets, end = read_until_idle(sock)
    assert end == "idle" and len(packets) > 50, (end, len(packets))  # both files' events, then it waits for more
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    close_quietly(conn)
    wait_for_log(server, r"\[conn \d+ sid 5 [^\]]*\] dump ended \((replica disconnected|connection lost)")
    assert_healthy(server)
    # the vanished dump is forgotten: a new one with the same server_id is not "a second slave"
    conn2, sock2 = start_dump(server, server_id=5, flags=1)
    packets2, end2 = read_until_idle(sock2, idle=TIMEOUT)
    close_quietly(conn2)
    assert end2 == "EOF" and len(packets2) == len(packets) + 1
    assert "4052" not in server.log_text()
    assert_healthy(server)


def _big_binlog(path: Path, events: int = 96, size: int = 256 * 1024) -> int:
    """A copy of the oracle's first file without its ROTATE, plus `events` Query events of `size` bytes."""
    data = (ORACLE / "mysql-bin.000001").read_bytes()
    res = scan(data)
    rotate = res.events[-1]
    assert rotate.type_code == 4
    query = next(e for e in res.events if e.type_code == 2)
    template = data[query.pos : query.end - 4]
    body = template + b" /*" + b"x" * (size - len(template) - 9) + b"*/"
    out = bytearray(data[: rotate.pos])
    for _ in range(events):
        ev = bytearray(body + b"\0\0\0\0")
        struct.pack_into("<II", ev, 9, len(ev), len(out) + len(ev))
        struct.pack_into("<I", ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])) & 0xFFFFFFFF)
        out += ev
    path.write_bytes(bytes(out))
    return len(out)


def test_replica_vanishes_while_data_is_flowing(binlogd: Any, tmp_path: Path) -> None:
    d = tmp_path / "big"
    d.mkdir()
    _big_binlog(d / "mysql-bin.000001")
    server: Binlogd = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    for n, flags in enumerate((0, 1), 1):
        conn, sock = start_dump(server, server_id=6, flags=flags)
        got = recv_exact(sock, 256 << 10)  # 256 KiB of ~24 MiB (more than the socket buffers hold), then away
        assert got is not None
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        close_quietly(conn)
        wait_for_log(server, r"\[conn \d+ sid 6 [^\]]*\] dump ended \((replica disconnected|connection lost)", count=n)
    assert_healthy(server)


def test_same_server_id_kills_the_older_dump_with_4052(server: Binlogd) -> None:
    conn_a, sock_a = start_dump(server, server_id=7)
    packets_a, end_a = read_until_idle(sock_a)
    assert end_a == "idle" and packets_a[0][:1] == b"\x00"
    conn_b, sock_b = start_dump(server, server_id=7)
    try:
        rest_a, end_a = read_until_idle(sock_a, idle=TIMEOUT)
        assert end_a == "ERR", (end_a, rest_a[-1:] if rest_a else None)
        code, state, msg = parse_err(rest_a[-1])
        assert (code, state) == (4052, "HY000")
        assert re.fullmatch(r"A slave with the same server_uuid/server_id is already connected; the first event "
                            r"'mysql-bin\.000001' at 4, the last event read from '[^']+' at \d+, the last byte read "
                            r"from '[^']+' at \d+\.", msg), msg
        assert is_closed(sock_a)
        # the new one streams: every event, then it keeps waiting (blocking)
        packets_b, end_b = read_until_idle(sock_b)
        assert end_b == "idle"
        assert packets_b == packets_a
    finally:
        close_quietly(conn_a, conn_b)
    assert_healthy(server)


def test_server_id_zero_dumps_do_not_kill_each_other(server: Binlogd) -> None:
    """mariadb-binlog sends server_id 0: several may run at once (MariaDB skips kill_zombie_dump_threads)."""
    conn_a, sock_a = start_dump(server, server_id=0)
    conn_b, sock_b = start_dump(server, server_id=0)
    try:
        a, end_a = read_until_idle(sock_a, idle=TIMEOUT)
        b, end_b = read_until_idle(sock_b, idle=TIMEOUT)
        assert end_a == end_b == "EOF" and a == b
    finally:
        close_quietly(conn_a, conn_b)
    assert_healthy(server)


# ---- bad command lines ----------------------------------------------------------------------------------------


def run_serve(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """`binlogd serve ARGS`, which must end (refused) instead of serving."""
    return run_cli("serve", *args, timeout=timeout)


def _assert_clean_failure(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    text = res.stdout + res.stderr
    assert res.returncode not in (0, None), text
    assert "Traceback" not in text, text
    for n in needles:
        assert n in text, f"{n!r} not in:\n{text}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_missing_binlog_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    res = run_serve("--binlog-dir", str(missing), "--port", str(_free_port()))
    _assert_clean_failure(res, str(missing), "does not exist")


def test_cli_binlog_dir_and_datadir_exclude_each_other(tmp_path: Path) -> None:
    # (without either option `serve` is the standalone primary on ./var: docs/standalone.md)
    res = run_serve("--binlog-dir", str(tmp_path), "--datadir", str(tmp_path / "w"), "--port", str(_free_port()))
    _assert_clean_failure(res, "--binlog-dir", "--datadir")


def test_cli_empty_binlog_dir(tmp_path: Path) -> None:
    res = run_serve("--binlog-dir", str(tmp_path), "--port", str(_free_port()))
    _assert_clean_failure(res, str(tmp_path), "no binlog files")


def test_cli_port_in_use(oracle_dir: Path) -> None:
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(1)
        port = squatter.getsockname()[1]
        res = run_serve("--binlog-dir", str(oracle_dir), "--port", str(port))
    _assert_clean_failure(res, f"127.0.0.1:{port}", "Address already in use")


def test_cli_bad_users_file_line(oracle_dir: Path, tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text("u:secret\n# comment\nthis line has no colon\n")
    res = run_serve("--binlog-dir", str(oracle_dir), "--port", str(_free_port()), "--users", str(users))
    _assert_clean_failure(res, f"{users}:3")


def test_cli_missing_users_file(oracle_dir: Path, tmp_path: Path) -> None:
    users = tmp_path / "absent-users"
    res = run_serve("--binlog-dir", str(oracle_dir), "--port", str(_free_port()), "--users", str(users))
    _assert_clean_failure(res, str(users))


@pytest.mark.parametrize("args", [
    pytest.param(["--server-id", "0"], id="server_id_zero"),
    pytest.param(["--server-id", "x"], id="server_id_not_a_number"),
    pytest.param(["--port", "70000"], id="port_out_of_range"),
    pytest.param(["--compat", "mysql"], id="unknown_compat"),
])
def test_cli_bad_option_values(oracle_dir: Path, args: list[str]) -> None:
    port = [] if "--port" in args else ["--port", str(_free_port())]
    res = run_serve("--binlog-dir", str(oracle_dir), *port, *args)
    _assert_clean_failure(res, args[0])

