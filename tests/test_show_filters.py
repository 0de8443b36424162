"""WL40 table filters of `binlogd show` against real MariaDB 10.11 replicas: for each filter option, in statement
and in row format, replaying `binlogd show --OPTION FILES` into a real target gives the tables a real replica with
the matching replicate-* option ends with, and so does a real replica of `binlogd serve --binlog-dir` serving the
`--output-binlog` files (left-out events there are same-length dummies; mariadb-binlog reads them too).

The workload has a RENAME chain (t1 and t2 swap names), renames into and out of filtered names, CREATE TABLE ...
LIKE and ... SELECT, INSERT ... SELECT, an unqualified statement and a cross-database one (statements use the
default database, rows their table's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import MariaDB
from tests.test_show_helpers import copy_binlogs, mariadb_binlog, replay, show

pytestmark = pytest.mark.mariadb

DBS = ("a", "b")
WORKLOAD = """
CREATE DATABASE a; CREATE DATABASE b;
USE a;
CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(30));
CREATE TABLE t2 (id INT PRIMARY KEY, v VARCHAR(30));
INSERT INTO t1 VALUES (1,'a.t1'),(2,'a.t1');
INSERT INTO a.t2 VALUES (1,'a.t2');
USE b;
CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(30));
INSERT INTO t1 VALUES (1,'b.t1');
INSERT INTO a.t2 VALUES (2,'cross-db from b');
CREATE TABLE b.t2 AS SELECT * FROM b.t1;
USE a;
CREATE TABLE a.t3 LIKE a.t1;
INSERT INTO a.t3 SELECT * FROM a.t1;
RENAME TABLE a.t1 TO a.tmp, a.t2 TO a.t1, a.tmp TO a.t2;
INSERT INTO a.t1 VALUES (10,'after the swap');
INSERT INTO a.t2 VALUES (10,'after the swap');
RENAME TABLE a.t3 TO a.t4;
UPDATE a.t4 SET v='t3 renamed to t4';
RENAME TABLE a.t4 TO a.t5;
INSERT INTO a.t5 VALUES (11,'into t5');
USE b;
UPDATE t1 SET v='b updated';
DELETE FROM b.t2;
INSERT INTO b.t2 VALUES (7,'b.t2 again');
"""
# option -> values: each value set keeps the replica free of errors (no statement on a table it filtered away)
OPTIONS: list[tuple[str, list[str]]] = [
    ("do-table", ["a.t1", "a.t2"]),
    ("ignore-table", ["a.t2"]),
    ("do-db", ["a"]),
    ("ignore-db", ["b"]),
    ("wild-do-table", ["a.%"]),
    ("wild-ignore-table", ["%.t2", "a.t5"]),
]
ALL_VARS = ("do_db", "ignore_db", "do_table", "ignore_table", "wild_do_table", "wild_ignore_table")


def _reset(server: MariaDB) -> None:
    server.execute("DROP DATABASE IF EXISTS a; DROP DATABASE IF EXISTS b")


@pytest.mark.parametrize("fmt", ["STATEMENT", "ROW"])
def test_each_filter_equals_a_real_replica(mariadb, binlogd, harness_dir: Path, fmt: str) -> None:
    primary = mariadb("primary", 1, "--log-bin=mysql-bin", f"--binlog-format={fmt}")
    primary.execute(WORKLOAD)
    files = copy_binlogs(primary, harness_dir / "binlogs")
    everything = primary.table_checksums(DBS)
    replica = mariadb("replica", 2)
    target = mariadb("target", 3)
    downstream = mariadb("downstream", 4)  # replicates the --output-binlog files through binlogd, no filters
    for option, values in OPTIONS:
        if replica.slave_status():
            replica.stop_slave()
            replica.query("RESET SLAVE ALL")
        _reset(replica)
        var = "replicate_" + option.replace("-", "_")
        for v in ALL_VARS:
            replica.query(f"SET GLOBAL replicate_{v}=%s", ",".join(values) if f"replicate_{v}" == var else "")
        replica.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
        replica.start_slave()
        replica.wait_caught_up(primary)

        _reset(target)
        out = harness_dir / f"filtered-{option}"
        out.mkdir()  # an existing directory: the files keep their names (binlogd serve --binlog-dir reads it)
        replay(target, show(*[f"--{option}={v}" for v in values], "--output-binlog", out, *files).stdout)
        got = target.table_checksums(DBS)
        assert got == replica.table_checksums(DBS), (fmt, option)
        assert got != everything, (fmt, option)  # the filter left something out

        written = sorted(out.glob("mysql-bin.0*"))
        assert [f.stat().st_size for f in written] == [f.stat().st_size for f in files]  # positions kept
        assert b"# Dummy event replacing event type" in mariadb_binlog(*written).stdout  # it reads them
        server = binlogd.serve(out)
        if downstream.slave_status():
            downstream.stop_slave()
            downstream.query("RESET SLAVE ALL")
        _reset(downstream)
        downstream.change_master(server.host, server.port, log_file="mysql-bin.000001", log_pos=4)
        downstream.start_slave()
        downstream.wait_caught_up(server)
        assert downstream.table_checksums(DBS) == got, (fmt, option)
        server.stop()
