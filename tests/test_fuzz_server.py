"""A short run of benchmarks/fuzz.py (issue 19) against binlogd in directory and standalone modes: fixed seeds,
bounded in packets and seconds; no traceback in the server's log, no hang, the server still running, RSS back
within 32 MiB of the start, and a `mariadb-binlog --raw` dump afterwards byte-identical to the files."""

from __future__ import annotations

import contextlib
import shutil
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.commands import build_binlog_dump

from benchmarks.fuzz import ANSWER_TIMEOUT, Closed, Fuzzer, Stats, raw_dump_matches, rss_mib, run_storm
from binlogd.testing.mariadb import HOST, free_port, wait_until
from tests.harness.applier import running_applier
from tests.oracle_data import ORACLE

PACKETS = 4000
SECONDS = 20.0


@pytest.mark.parametrize("mode", ["directory", "standalone"])
def test_fuzz_storm(binlogd: Any, tmp_path: Path, mode: str) -> None:
    d = tmp_path / "binlogs"
    d.mkdir()
    if mode == "directory":
        for name in ("mysql-bin.000001", "mysql-bin.000002"):
            shutil.copyfile(ORACLE / name, d / name)
        server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    else:
        server = binlogd(["--datadir", str(d), "--server-id", "1"])
    before = rss_mib(server.pid)
    stats = run_storm(server.host, server.port, PACKETS, SECONDS, seed=19 if mode == "directory" else 20)
    time.sleep(1.0)
    after = rss_mib(server.pid)
    log = server.log_text()
    assert server.is_running, server.log_tail()
    assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:3000]
    assert stats.hangs == 0, stats.hang_cases
    assert stats.packets >= PACKETS * 0.9 and stats.connections > 100, stats  # the storm really ran
    assert after - before < 32, (before, after)
    files = {p.name: p for p in d.rglob("*-bin.[0-9]*")}
    assert files
    assert raw_dump_matches(server.port, files, tmp_path / "copy")


def test_fuzz_storm_on_the_applier_admin_port(tmp_path: Path) -> None:
    """The applier's admin port (same StrictConnection): no traceback, no hang, still answering afterwards."""
    port = free_port()
    args = ["--target=mysql://root@127.0.0.1:1", f"--channel==mysql://root@{HOST}:{free_port()}", "--no-start",
            "--admin-port", str(port)]
    with running_applier(args, tmp_path / "applier.log") as p:
        def up() -> bool:
            assert p.alive, p.log()[-3000:]
            try:
                pymysql.connect(host=HOST, port=port, user="root", ssl_disabled=True, connect_timeout=5).close()
                return True
            except pymysql.MySQLError:
                return False

        wait_until(up, 20, 0.05, "the admin port")
        assert p.proc is not None
        before = rss_mib(p.proc.pid)
        stats = run_storm(HOST, port, PACKETS, SECONDS, seed=21)
        time.sleep(1.0)
        after = rss_mib(p.proc.pid)
        assert p.alive
        log = p.log()
        assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:3000]
        assert stats.hangs == 0, stats.hang_cases
        assert stats.packets >= PACKETS * 0.9 and stats.connections > 100, stats
        assert after - before < 32, (before, after)
        with pymysql.connect(host=HOST, port=port, user="root", ssl_disabled=True, connect_timeout=5) as conn, \
                conn.cursor() as cur:
            cur.execute("SHOW ALL SLAVES STATUS")
            assert len(cur.fetchall()) == 1


def test_rss_returns_after_big_statements(binlogd: Any, tmp_path: Path) -> None:
    """A 16 MB string literal (answered), 4 MB of `(` and 6 MB of `1+1+...` (refused before parsing), each twice:
    RSS comes back within 32 MiB of the start (it stayed over 100 MiB above before the mmap threshold was fixed)."""
    from tests.test_bad_input_mariadb import login, query

    d = tmp_path / "binlogs"
    d.mkdir()
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copyfile(ORACLE / name, d / name)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    before = rss_mib(server.pid)
    expected = {"'": ("data",), "(": ("err", 1064), "1": ("err", 1064)}
    big = ["SELECT '" + "a" * 16_000_000 + "'", "SELECT " + "(" * 4_000_000, "SELECT " + "1+" * 3_000_000 + "1"]
    for sql in big * 2:
        s = login(server.host, server.port)
        s.settimeout(60)
        assert query(s, sql)[:2] == expected[sql[7]]
        s.close()
    time.sleep(2.0)
    after = rss_mib(server.pid)
    assert after - before < 32, (before, after)
    assert "Traceback" not in server.log_text()


# the last packets of the two connections the default-seed standalone storm reported as hung (`--packets 14000`):
# mutated COM_BINLOG_DUMPs whose command byte became COM_STMT_SEND_LONG_DATA, which MariaDB never answers
STORM_HANG_CASES = [bytes.fromhex("182c"), bytes.fromhex("1830eab5406564639a706173737764")]


def test_the_storms_former_hangs_are_followed_as_mariadb_answers(mariadb: Any, binlogd: Any, tmp_path: Path) -> None:
    """The fuzzer's hang detection agrees with a real MariaDB 10.11: after the packets of the two former standalone
    'hangs' (no answer: the fuzzer used to wait 10 s for a dump's) its resynchronising SELECT is answered by
    MariaDB and by binlogd; a packet that is a blocking COM_BINLOG_DUMP (whatever built it) ends the session after
    its first answer instead of waiting for the SELECT a dump never reads."""
    d = tmp_path / "binlogs"
    d.mkdir()
    servers = {"mariadb": mariadb("real", 1, "--log-bin=mysql-bin"),
               "binlogd": binlogd(["--datadir", str(d), "--server-id", "1"])}
    blocking_dump = build_binlog_dump(4, 0, 99, "")  # from the first binlog, flags 0: it never ends by itself
    for label, srv in servers.items():
        stats = Stats()
        fz = Fuzzer(srv.host, srv.port, 19, stats)
        with socket.create_connection((srv.host, srv.port), timeout=ANSWER_TIMEOUT) as sock:
            fz.login(sock)
            for payload in STORM_HANG_CASES:
                assert fz.replay(sock, payload) == "replay", label  # (a Hang would raise)
            assert fz.replay(sock, blocking_dump) == "dump", label
        assert stats.answers == {"ok": 1}, (label, stats.answers)  # the dump's first event (00 + Rotate), no more
    assert "Traceback" not in servers["binlogd"].log_text()


def test_a_dump_from_inside_an_event_gets_its_error_not_a_traceback(binlogd: Any, tmp_path: Path) -> None:
    """Found by the directory-mode long run: a random packet was a blocking COM_BINLOG_DUMP from position 101 (inside
    an event) by a client that does not take checksums. The bytes at 101 framed as an event, the next read failed
    (1236), and flushing that ERR ran the framed bytes through the checksum stage, whose crc failure escaped the
    error path: a traceback, and the client got no ERR. Now the error met first in the stream is the one sent."""
    d = tmp_path / "binlogs"
    d.mkdir()
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copyfile(ORACLE / name, d / name)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    got = {}
    for pos in (101, 102):
        fz = Fuzzer(server.host, server.port, 0, Stats())
        with socket.create_connection((server.host, server.port), timeout=ANSWER_TIMEOUT) as sock:
            fz.login(sock)
            payload = build_binlog_dump(pos, 0, 0, "")
            sock.sendall(struct.pack("<I", len(payload)) + payload)
            answers = []
            with contextlib.suppress(Closed):
                while True:
                    answers.append(fz._answer(sock))
        got[pos] = [a[9:].decode(errors="replace").split(";")[0] if a[:1] == b"\xff" else a[:1].hex() for a in answers]
    assert got == {101: ["00", "00", "event read from binlog did not pass crc check"],
                   102: ["00", "00", "bogus data in log event"]}, got
    assert "Traceback" not in server.log_text(), server.log_tail()
