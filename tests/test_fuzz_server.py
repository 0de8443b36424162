"""A short run of benchmarks/fuzz.py (issue 19) against binlogd in directory and standalone modes: fixed seeds,
bounded in packets and seconds; no traceback in the server's log, no hang, the server still running, RSS back
within 32 MiB of the start, and a `mariadb-binlog --raw` dump afterwards byte-identical to the files."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from benchmarks.fuzz import raw_dump_matches, rss_mib, run_storm
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
