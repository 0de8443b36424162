"""binlogd as a semi-synchronous primary (standalone, --rpl-semi-sync-master-enabled) with a real MariaDB 10.11 replica
that runs rpl_semi_sync_slave_enabled=ON: commits wait for its ack (Rpl_semi_sync_master_yes_tx), a stopped replica
makes the next commit wait the timeout and the server go asynchronous (_no_tx, _no_times, _status OFF), and a
replica that catches up switches it back ON. SHOW STATUS / SHOW VARIABLES names and layout are MariaDB's own,
compared with a real 10.11 server's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.harness import MariaDB

TIMEOUT_MS = 2000


def _status(server, like: str = "Rpl_semi_sync%") -> dict[str, str]:
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"SHOW GLOBAL STATUS LIKE '{like}'")
        return {str(k): str(v) for k, v in cur.fetchall()}


def _timed(server, sql: str) -> float:
    with server.connect(autocommit=True) as c, c.cursor() as cur:
        t0 = time.monotonic()
        cur.execute(sql)
        return time.monotonic() - t0


def test_semisync_names_match_mariadb(mariadb, binlogd, harness_dir: Path) -> None:
    """The rpl_semi_sync_* variables and Rpl_semi_sync_* status variables: the names and order a real 10.11 shows."""
    real: MariaDB = mariadb("names", 1)
    ours = binlogd(["--datadir", str(harness_dir / "data"), "--no-ledger"])
    for sql in ("SHOW VARIABLES LIKE 'rpl_semi%'", "SHOW GLOBAL STATUS LIKE 'Rpl_semi%'",
                "SHOW STATUS LIKE 'rpl_semi_sync_master_status'"):
        with ours.connect() as c, c.cursor() as cur:
            cur.execute(sql)
            got = [tuple(map(str, r)) for r in cur.fetchall()]
        assert got == [tuple(map(str, r)) for r in real.query(sql)], sql  # both idle: same values too


@pytest.mark.parametrize("use_gtid", ["slave_pos", "no"])
def test_commits_wait_for_a_real_replicas_ack_then_time_out_to_async(mariadb, binlogd, harness_dir: Path,
                                                                     use_gtid: str) -> None:
    """GTID replica: back ON when it acks a catch-up event; file/pos replica: when its dump starts at the end."""
    ours = binlogd(["--datadir", str(harness_dir / "data"), "--no-ledger", "--server-id", "1",
                    "--rpl-semi-sync-master-enabled", "--rpl-semi-sync-master-timeout", str(TIMEOUT_MS)])
    assert _status(ours)["Rpl_semi_sync_master_status"] == "ON"
    replica: MariaDB = mariadb("semi", 2, "--rpl-semi-sync-slave-enabled=ON")
    if use_gtid == "no":
        replica.change_master(ours.host, ours.port, use_gtid="no", log_file="mysql-bin.000001", log_pos=4)
    else:
        replica.change_master(ours.host, ours.port, use_gtid="slave_pos")
    replica.start_slave()
    replica.wait_until(lambda: _status(ours)["Rpl_semi_sync_master_clients"] == "1", timeout=30,
                       message="the replica's dump is semi-sync")
    assert replica.query("SHOW STATUS LIKE 'Rpl_semi_sync_slave_status'") == [("Rpl_semi_sync_slave_status", "ON")]

    writes = ["CREATE DATABASE s", "CREATE TABLE s.t (id INT PRIMARY KEY)",
              *(f"INSERT INTO s.t VALUES ({i})" for i in range(1, 11))]
    took = [_timed(ours, sql) for sql in writes]
    st = _status(ours)
    assert max(took) < TIMEOUT_MS / 1000 / 2, took  # acked, not timed out
    assert st["Rpl_semi_sync_master_yes_tx"] == str(len(writes)), st
    assert st["Rpl_semi_sync_master_no_tx"] == "0" and st["Rpl_semi_sync_master_no_times"] == "0", st
    assert int(st["Rpl_semi_sync_master_get_ack"]) >= len(writes), st
    assert st["Rpl_semi_sync_master_status"] == "ON", st
    with ours.connect() as c, c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    replica.wait_slave_pos(file, pos)  # the ack came after the replica had the group: it has all of them
    assert replica.query("SELECT COUNT(*) FROM s.t") == [(10,)]
    assert int(replica.query("SHOW STATUS LIKE 'Rpl_semi_sync_slave_send_ack'")[0][1]) >= len(writes)

    # the replica stops: the next commit waits the timeout, then the server is asynchronous
    replica.stop_slave()
    replica.wait_until(lambda: _status(ours)["Rpl_semi_sync_master_clients"] == "0", timeout=30,
                       message="the replica's dump ended")
    t = _timed(ours, "INSERT INTO s.t VALUES (100)")
    assert TIMEOUT_MS / 1000 - 0.1 <= t < TIMEOUT_MS / 1000 + 3, t
    st = _status(ours)
    assert st["Rpl_semi_sync_master_status"] == "OFF", st
    assert st["Rpl_semi_sync_master_no_tx"] == "1" and st["Rpl_semi_sync_master_no_times"] == "1", st
    assert _timed(ours, "INSERT INTO s.t VALUES (101)") < 1.0  # asynchronous: no wait
    assert _status(ours)["Rpl_semi_sync_master_no_tx"] == "2"

    # it comes back and catches up: semi-sync is ON again and commits wait for its ack
    replica.start_slave()
    replica.wait_until(lambda: _status(ours)["Rpl_semi_sync_master_status"] == "ON", timeout=30,
                       message="semi-sync switched back ON once the replica caught up")
    yes = int(_status(ours)["Rpl_semi_sync_master_yes_tx"])
    assert _timed(ours, "INSERT INTO s.t VALUES (102)") < TIMEOUT_MS / 1000 / 2
    st = _status(ours)
    assert int(st["Rpl_semi_sync_master_yes_tx"]) == yes + 1 and st["Rpl_semi_sync_master_no_tx"] == "2", st
    replica.wait_until(lambda: replica.query("SELECT COUNT(*) FROM s.t") == [(13,)], timeout=30,
                       message="the replica has every row")
    rs = replica.slave_status()
    assert rs["Last_IO_Errno"] == 0 and rs["Last_SQL_Errno"] == 0 and rs["Slave_IO_Running"] == "Yes", rs
    assert "Traceback" not in ours.log_text()
