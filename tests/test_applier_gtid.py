"""The target's binlog stays a valid GTID stream for its own replicas (issue 20's bookkeeping defect).

A MariaDB replica never binlogs its position bookkeeping. The applier writes its position row inside each applied
group's transaction (which carries the source's GTID), and everything it writes on its own (the schema at
start-up, the position after DDL and after groups with nothing to apply) either stays out of the binlog or goes
to a GTID domain of its own: never the target's own GTIDs interleaved with the source's in the source's domain.
Checked with a real replica of the target in gtid_strict_mode=ON that must keep replicating throughout, and
with `mariadb-binlog` reading the target's binlog (it stops at an out-of-order GTID).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.harness.applier import ApplierProc
from tests.test_applier import wait_applied

STRICT = ("--log-bin=mysql-bin", "--binlog-format=ROW", "--gtid-strict-mode=ON")


@pytest.fixture
def applier(harness_dir: Path) -> Iterator[Any]:
    """`applier(target, *args)` starts binlogd-apply; every process is stopped (by PID) after the test."""
    procs: list[ApplierProc] = []

    def start(target: MariaDB, *args: str) -> ApplierProc:
        p = ApplierProc([f"--target=mysql://root@127.0.0.1:{target.port}", *args],
                        harness_dir / f"applier-{len(procs) + 1}.log")
        procs.append(p)
        return p.start()

    yield start
    for p in procs:
        p.stop()


def _binlog_text(server: MariaDB) -> subprocess.CompletedProcess[str]:
    files = [str(server.datadir / name) for name, _ in server.binary_logs()]
    return subprocess.run(["mariadb-binlog", "--no-defaults", *files], capture_output=True, text=True, timeout=60)


def test_strict_mode_replica_of_the_target_keeps_replicating(mariadb: Any, applier: Any) -> None:
    primary = mariadb("primary", 1, *STRICT)
    target = mariadb("target", 3, *STRICT)
    downstream = mariadb("downstream", 4, "--gtid-strict-mode=ON")
    downstream.change_master(target.host, target.port, use_gtid="slave_pos")
    downstream.start_slave()
    primary.execute("CREATE DATABASE d1; CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;"
                    " CREATE DATABASE d2; CREATE TABLE d2.t (id INT PRIMARY KEY) ENGINE=InnoDB")
    channel = f"--channel==mysql://root@127.0.0.1:{primary.port}"
    args = (channel, "--replicate-wild-ignore-table=d2.%", "--replicate-events-marked-for-skip=FILTER_ON_SLAVE")
    for run in range(3):  # each start-up writes what the applier writes on its own
        proc = applier(target, *args)
        for i in range(5):
            n = run * 100 + i
            primary.execute(f"INSERT INTO d1.t VALUES ({n}, 'r{run}')")  # applied: the source's GTID
            primary.execute(f"INSERT INTO d2.t VALUES ({n})")  # filtered by the rules
            primary.execute(f"SET skip_replication=1; INSERT INTO d1.t VALUES ({n + 50}, 'flagged')")  # dropped
            primary.execute(f"ALTER TABLE d1.t COMMENT 'ddl {n}'")  # DDL: its position is written after it
        want = primary.master_status()
        wait_applied(target, proc, want)
        proc.stop()
        got = str(target.query("SELECT @@gtid_binlog_pos")[0][0])
        downstream.wait_slave_pos(*target.master_status())  # fails at once if strict mode stopped it
    source = str(primary.query("SELECT @@gtid_binlog_pos")[0][0])
    domain0 = [g for g in got.split(",") if g.startswith("0-")]
    assert domain0 == [source]  # domain 0 holds only the source's GTIDs
    status = downstream.slave_status()
    assert status["Slave_SQL_Running"] == "Yes" and status["Last_SQL_Errno"] == 0, status
    assert downstream.table_checksums(["d1"]) == target.table_checksums(["d1"])
    assert target.query("SELECT COUNT(*) FROM d1.t") == [(15,)]
    shown = _binlog_text(target)
    assert shown.returncode == 0 and "out of order" not in shown.stderr, shown.stderr[-2000:]
