"""The standalone primary's fast command path (server/fast_commands.py) against its stream path, with real clients.

Two binlogd servers, `--command-path fast` (the default) and `--command-path stream`, get the same sessions from
pymysql, from raw pipelined bursts (statements the fast path answers mixed with ones it hands back: a SELECT, a
COM_PING, errors) and from the mariadb CLI: every answer's bytes and the binlog bytes must be equal. Then what only
the fast path does on its own: wait_timeout, a peer that vanishes mid-burst, a client that does not read its answers
(back-pressure hands the connection to the stream path), and commits that wait for the writer thread
(--sync-binlog 1) with the packets behind them held back, answered in order.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import GTID_EVENT, QUERY_EVENT
from binlogd.protocol.events import parse_event
from hypothesis import given, settings
from hypothesis import strategies as st

from binlogd.testing import find_binary
from tests.standalone_client import TIMEOUT, connect, packet, read_packet, start, with_table
from tests.test_standalone_fast_path import SESSION_SETS, shapes
from tests.test_standalone_fast_path import SETUP as FAST_PATH_SETUP

STAMP = 1_700_000_000

SESSION = [  # one pymysql session: the fast path's statements, its errors, and statements it hands back
    f"SET timestamp={STAMP}",
    "CREATE DATABASE d",
    "USE d",
    "CREATE TABLE t (id INT NOT NULL, b VARCHAR(20), c INT NOT NULL)",
    "INSERT INTO t VALUES (1, 'a', 1)",
    "INSERT INTO t VALUES (2, 'it''s \\\\ \\n', 2)",
    'insert into t values (3, "dq", 3)',
    "INSERT INTO nope VALUES (1)",
    "INSERT INTO t VALUES (",
    "INSERT INTO t (id) VALUES (4)",
    "INSERT INTO t VALUES (1, 2)",
    "SET @x = 5, @s = 'str'",
    "INSERT INTO t VALUES (@x, @s, 5)",
    "SET NAMES latin1",
    "INSERT INTO t VALUES (6, 'é', 6)",
    "SET NAMES utf8mb4",
    "INSERT INTO t VALUES (6, 'é', 6)",
    "BEGIN",
    "INSERT INTO t VALUES (7, 'in trx', 7)",
    "UPDATE t SET b = 'u' WHERE id = 7",
    "COMMIT",
    "START TRANSACTION",
    "DELETE FROM t WHERE id = 7",
    "ROLLBACK",
    "SET autocommit=0",
    "INSERT INTO t VALUES (8, 'ac0', 8)",
    "SET skip_replication=1",
    "SET autocommit=1",
    "SET skip_replication=1",
    "INSERT INTO t VALUES (9, 'flagged', 9)",
    "SET skip_replication=0",
    "SET sql_log_bin=0",
    "INSERT INTO t VALUES (10, 'not logged', 10)",
    "SET sql_log_bin=1",
    "SELECT @x, @s",
    "SET insert_id=100",
    "INSERT INTO t VALUES (11, 'iid', 11)",
    "SET @@session.auto_increment_increment=2",
    "REPLACE INTO t VALUES (1, 'r', 1)",
    "SET SESSION sql_mode=''",
    "INSERT INTO t (id) VALUES (12)",
    "UPDATE t SET b = NOW() WHERE id = 1",
    "DELETE FROM t WHERE id = 2",
    "INSERT INTO t VALUES (13, 'x', 1), (14, 'y', 2), (15, 'z', 3)",
    "BEGIN",
    "INSERT INTO t VALUES (16, 'before begin', 1)",
    "BEGIN",
    "COMMIT",
    "SHOW BINLOG EVENTS",
]

BURST = [  # (command byte, text) in one TCP segment
    (0x03, "INSERT INTO d.t VALUES (20, 'burst', 1)"),
    (0x03, "SELECT 1, 'two'"),
    (0x03, "SET @y = 21"),
    (0x03, "INSERT INTO d.t VALUES (@y, 'uv', 2)"),
    (0x0E, ""),  # COM_PING
    (0x03, "INSERT INTO d.missing VALUES (1)"),
    (0x03, "UPDATE d.t SET c = c + 1 WHERE id = 20"),
    (0x03, "DELETE FROM"),
    (0x03, "INSERT INTO d.t VALUES (22, 'last', 3)"),
]


def _until_quiet(sock: socket.socket, quiet: float = 1.0) -> bytes:
    """Every byte the server sends until it has been silent for `quiet` seconds."""
    sock.settimeout(quiet)
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return out
        if not chunk:
            return out
        out += chunk


def binlog_after_header(datadir: Path) -> bytes:
    """The binlog files' bytes from the first GTID event on (the file headers carry the server's start time)."""
    out = b""
    for name in (datadir / "mysql-bin.index").read_text().split():
        data = (datadir / Path(name).name).read_bytes()
        first = next((ev.pos for ev in scan(data).events if ev.type_code == GTID_EVENT), len(data))
        out += data[first:]
    return out


def queries(datadir: Path) -> list[str]:
    out = []
    for name in (datadir / "mysql-bin.index").read_text().split():
        data = (datadir / Path(name).name).read_bytes()
        for ev in scan(data).events:
            if ev.type_code == QUERY_EVENT:
                out.append(parse_event(data[ev.pos : ev.end], 1).body.query.decode("utf-8", "replace"))
    return out


def _answer(cur: Any, sql: str) -> tuple[Any, ...]:
    try:
        cur.execute(sql)
    except pymysql.MySQLError as e:
        return ("err", *e.args)
    rows = cur.fetchall()
    if sql.startswith("SHOW BINLOG EVENTS"):  # positions and texts, not the header's server start time
        rows = tuple(r[1:] for r in rows)
    return ("ok", cur.rowcount, rows, cur.connection.insert_id())


def _session(server: Any) -> list[tuple[Any, ...]]:
    conn = connect(server)
    with conn.cursor() as cur:
        got = [_answer(cur, sql) for sql in SESSION]
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.sendall(b"".join(packet(bytes((cmd,)) + text.encode()) for cmd, text in BURST))
    got.append(("burst", _until_quiet(sock)))
    conn.close()
    return got


def _cli(server: Any) -> str:
    mariadb = find_binary("mariadb")
    assert mariadb is not None, "the mariadb CLI is needed"
    script = (f"SET timestamp={STAMP}; CREATE DATABASE cli; USE cli; CREATE TABLE t (a INT, b TEXT);"
              "INSERT INTO t VALUES (1, 'one'); SET @v = 'var'; INSERT INTO t VALUES (2, @v);"
              "BEGIN; UPDATE t SET a = a + 1; DELETE FROM t WHERE a > 5; COMMIT;"
              "SELECT 'after', @v; INSERT INTO t VALUES (3, 'three');")
    done = subprocess.run([mariadb, "-h", server.host, "-P", str(server.port), "-uroot", "--skip-ssl", "-N", "-e",
                           script], capture_output=True, text=True, timeout=TIMEOUT)
    return f"{done.returncode} {done.stdout} {done.stderr}"


def test_fast_and_stream_paths_answer_and_log_the_same(binlogd: Any, tmp_path: Path) -> None:
    fast = start(binlogd, tmp_path / "fast")
    stream = start(binlogd, tmp_path / "stream", "--command-path", "stream")
    answers = [_session(srv) for srv in (fast, stream)]
    assert answers[0] == answers[1]
    errors = {a[1] for a in answers[0] if a[0] == "err"}
    assert {1146, 1064, 1364, 1136, 1929} <= errors, errors
    burst = answers[0][-1][1]
    assert b"\xff" + (1146).to_bytes(2, "little") in burst and b"two" in burst  # an error and the SELECT's row
    clis = [_cli(srv) for srv in (fast, stream)]
    assert clis[0] == clis[1] and clis[0].startswith("0 after\tvar"), clis
    logs = [binlog_after_header(tmp_path / name) for name in ("fast", "stream")]
    assert logs[0] == logs[1]
    logged = queries(tmp_path / "fast")
    assert "INSERT INTO d.t VALUES (22, 'last', 3)" in logged and "INSERT INTO t VALUES (@x, @s, 5)" in logged
    assert not any("not logged" in q for q in logged)
    assert "INSERT INTO cli.t VALUES (3, 'three')" not in logged and "INSERT INTO t VALUES (3, 'three')" in logged


def test_wait_timeout_drops_an_idle_client_on_the_fast_path(binlogd: Any, tmp_path: Path) -> None:
    server = start(binlogd, tmp_path / "data")
    conn = connect(server)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.t (a INT)")
        cur.execute("SET SESSION wait_timeout=2")
        for i in range(3):  # busy for longer than the timeout: not dropped
            time.sleep(1)
            cur.execute(f"INSERT INTO d.t VALUES ({i})")
    t0 = time.monotonic()  # the timeout counts from the last statement
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.settimeout(10)
    assert sock.recv(1) == b""  # closed by the server, without an answer
    assert 1.5 <= time.monotonic() - t0 <= 5
    assert queries(tmp_path / "data")[-3:] == [f"INSERT INTO d.t VALUES ({i})" for i in range(3)]
    conn2 = connect(server)
    with conn2.cursor() as cur:
        cur.execute("SELECT 1")
    conn2.close()


def test_a_peer_that_vanishes_mid_burst(binlogd: Any, tmp_path: Path) -> None:
    """Three INSERTs and half of a fourth, then the client is gone: the three whole ones are logged, the torn one is
    not, and the server serves on."""
    server = start(binlogd, tmp_path / "data")
    conn = with_table(server)
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    torn = packet(b"\x03INSERT INTO d.t VALUES (4)")
    sock.sendall(b"".join(packet(b"\x03INSERT INTO d.t VALUES (%d)" % i) for i in range(1, 4)) + torn[:12])
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # a reset: the OKs are never read
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and len(queries(tmp_path / "data")) < 5:
        time.sleep(0.1)
    conn2 = connect(server)
    with conn2.cursor() as cur:
        cur.execute("INSERT INTO d.t VALUES (5)")
    conn2.close()
    assert queries(tmp_path / "data")[2:] == [f"INSERT INTO d.t VALUES ({i})" for i in (1, 2, 3, 5)]
    assert "internal error" not in server.log_text().lower()


def test_a_half_close_behind_a_burst_with_a_handed_back_statement(binlogd: Any, tmp_path: Path) -> None:
    """INSERT, SELECT (handed back to the stream path), two INSERTs, then the client shuts its sending side: every
    command is answered in order and the server then closes the connection (the end of file is not lost between the
    two paths)."""
    server = start(binlogd, tmp_path / "data")
    conn = with_table(server)
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sqls = ["INSERT INTO d.t VALUES (1)", "SELECT 7", "INSERT INTO d.t VALUES (2)", "INSERT INTO d.t VALUES (3)"]
    sock.sendall(b"".join(packet(b"\x03" + s.encode()) for s in sqls))
    sock.shutdown(socket.SHUT_WR)
    t0 = time.monotonic()
    answers = _until_quiet(sock, 5.0)
    assert time.monotonic() - t0 < 4  # closed by the server, not after a quiet period
    frames = []
    while answers:
        length = int.from_bytes(answers[:3], "little")
        frames.append((answers[3], answers[4 : 4 + length]))
        answers = answers[4 + length :]
    is_ok = [seq == 1 and payload[:1] == b"\x00" for seq, payload in frames]
    assert is_ok[0] and is_ok[-2:] == [True, True] and not any(is_ok[1:-2]), frames  # OK, the SELECT's, OK, OK
    assert any(payload == b"\x017" for _, payload in frames)  # the SELECT's row
    assert queries(tmp_path / "data")[2:] == ["INSERT INTO d.t VALUES (1)", "INSERT INTO d.t VALUES (2)",
                                              "INSERT INTO d.t VALUES (3)"]


def test_a_client_that_does_not_read_its_answers(binlogd: Any, tmp_path: Path) -> None:
    """60 000 pipelined statements sent before any answer is read (all but every tenth an INSERT into a missing table
    with a long name, whose ERR is ~160 bytes: more than the kernel's 4 MiB send buffer): the server's send buffer
    fills, the stream path takes over until the client reads; every statement gets its answer, in order, and each
    INSERT is logged once."""
    server = start(binlogd, tmp_path / "data", "--log-level", "DEBUG")
    conn = with_table(server)
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    n = 60_000
    missing = b"m" * 64 + b"." + b"n" * 64
    burst = b"".join(packet(b"\x03INSERT INTO %s VALUES (%d)" % (b"d.t" if i % 10 == 0 else missing, i))
                     for i in range(n))
    sender = threading.Thread(target=sock.sendall, args=(burst,))
    sender.start()
    deadline = time.monotonic() + 120  # the answers pile up until the server stops sending
    while "answers not read: the stream path takes over" not in server.log_text() and time.monotonic() < deadline:
        time.sleep(0.5)
    sock.settimeout(TIMEOUT)
    answers = [read_packet(sock) for _ in range(n)]
    sender.join(TIMEOUT)
    assert [(seq, payload[:3]) for seq, payload in answers] == [
        (1, b"\x00\x00\x00" if i % 10 == 0 else b"\xff" + (1146).to_bytes(2, "little")) for i in range(n)]
    with conn.cursor() as cur:
        cur.execute("SELECT 2")
        assert cur.fetchall() == ((2,),)
    conn.close()
    assert queries(tmp_path / "data")[2:] == [f"INSERT INTO d.t VALUES ({i})" for i in range(0, n, 10)]
    assert "answers not read: the stream path takes over" in server.log_text()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_commits_that_wait_hold_the_packets_behind_them(binlogd: Any, tmp_path: Path, loop: str) -> None:
    """--sync-binlog 1: each autocommit INSERT waits for the writer thread's fsync. 4 writers each pipeline 50 INSERTs
    (with a SET and an error among them; the first writer half-closes its socket right behind them): the answers
    come in order, one per command, and the binlog holds each writer's statements once, in its order."""
    server = start(binlogd, tmp_path / "data", "--sync-binlog", "1", "--event-loop", loop)
    conn = with_table(server, "w INT, i INT")
    conn.close()
    results: dict[int, list[tuple[int, int]]] = {}

    def work(w: int) -> None:
        c = connect(server)
        sock: socket.socket = c._sock  # type: ignore[attr-defined]
        cmds = [f"INSERT INTO d.t VALUES ({w}, {i})" if i != 25 else "INSERT INTO d.nope VALUES (1)"
                for i in range(50)]
        cmds.insert(10, "SET @a = 1")
        sock.sendall(b"".join(packet(b"\x03" + s.encode()) for s in cmds))
        if w == 0:  # a half-close right behind the burst: the end of file waits for the answers before it
            sock.shutdown(socket.SHUT_WR)
        sock.settimeout(TIMEOUT)
        results[w] = [(seq, payload[0]) for seq, payload in (read_packet(sock) for _ in cmds)]
        c.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * TIMEOUT)
    for w in range(4):
        expected = [(1, 0)] * 51
        expected[26] = (1, 0xFF)  # the INSERT into the missing table (after the SET at 10)
        assert results[w] == expected
    logged = queries(tmp_path / "data")
    for w in range(4):
        mine = [q for q in logged if q.startswith(f"INSERT INTO d.t VALUES ({w},")]
        assert mine == [f"INSERT INTO d.t VALUES ({w}, {i})" for i in range(50) if i != 25]


def test_random_shapes_through_both_paths(binlogd: Any, tmp_path: Path) -> None:
    """tests/test_standalone_fast_path.py's random DML shapes and session SETs, sent by pymysql to a fast-path and a
    stream-path server: the same answer (OK, or MariaDB's error) for each, and the same binlog bytes."""
    dirs = [tmp_path / "fast", tmp_path / "stream"]
    servers = [start(binlogd, dirs[0]), start(binlogd, dirs[1], "--command-path", "stream")]
    conns = [connect(s) for s in servers]
    for c in conns:
        with c.cursor() as cur:
            for sql in [f"SET timestamp={STAMP}.25", *FAST_PATH_SETUP, "USE bench"]:
                cur.execute(sql)

    @settings(max_examples=150, deadline=None)
    @given(pair=shapes(), session_set=st.sampled_from(SESSION_SETS))
    def same(pair: tuple[str, str], session_set: str) -> None:
        for sql in ([session_set] if session_set else []) + list(pair):
            answers = []
            for c in conns:
                with c.cursor() as cur:
                    answers.append(_answer(cur, sql))
            assert answers[0] == answers[1], sql
        assert binlog_after_header(dirs[0]) == binlog_after_header(dirs[1]), pair

    same()
    assert len(queries(dirs[0])) > 20  # (the shapes did reach the binlog)
