"""The semi-sync options on the command line: MariaDB's value forms, refused in the modes where they do nothing,
bad values named (exit 2, nothing started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli import run_cli


@pytest.mark.parametrize(("args", "needle"), [
    (["--binlog-dir", "{d}", "--rpl-semi-sync-master-enabled"],
     "--rpl-semi-sync-master-enabled is for the standalone primary"),
    (["--upstream", "mysql://root@127.0.0.1:1", "--datadir", "{d}", "--rpl-semi-sync-master-timeout", "5"],
     "--rpl-semi-sync-master-timeout is for the standalone primary"),
    (["--datadir", "{d}", "--rpl-semi-sync-slave-enabled"], "--rpl-semi-sync-slave-enabled is for relay mode"),
    (["--datadir", "{d}", "--rpl-semi-sync-master-timeout", "abc"],
     "argument --rpl-semi-sync-master-timeout: expected milliseconds, not 'abc'"),
    (["--datadir", "{d}", "--rpl-semi-sync-master-timeout", "-1"],
     "argument --rpl-semi-sync-master-timeout: -1 is out of range 0..4294967295"),
    (["--datadir", "{d}", "--rpl-semi-sync-master-enabled=maybe"],
     "argument --rpl-semi-sync-master-enabled: expected ON or OFF, not 'maybe'"),
])
def test_refused(tmp_path: Path, args: list[str], needle: str) -> None:
    d = tmp_path / "d"
    res = run_cli("serve", *(a.format(d=d) for a in args))
    assert res.returncode == 2 and needle in res.stderr, res
    assert "Traceback" not in res.stderr and not d.exists()  # refused before anything was written


def test_value_forms(binlogd, harness_dir: Path) -> None:
    """--opt, --opt=ON and --opt=OFF as mariadbd takes them; SHOW VARIABLES shows what was given."""
    for form, want in (("--rpl-semi-sync-master-enabled=OFF", "OFF"), ("--rpl-semi-sync-master-enabled=on", "ON")):
        server = binlogd(["--datadir", str(harness_dir / f"d{want}"), "--no-ledger", form,
                          "--rpl-semi-sync-master-timeout=1234"])
        with server.connect() as c, c.cursor() as cur:
            cur.execute("SHOW VARIABLES LIKE 'rpl_semi_sync_master_%'")
            rows = dict(cur.fetchall())
            cur.execute("SHOW STATUS LIKE 'Rpl_semi_sync_master_status'")
            status = cur.fetchall()
        assert rows["rpl_semi_sync_master_enabled"] == want and rows["rpl_semi_sync_master_timeout"] == "1234"
        assert status == (("Rpl_semi_sync_master_status", want),)
        server.stop()
