"""`binlogd show FILES | mariadb` against `mariadb-binlog FILES | mariadb` on a real MariaDB 10.11 primary (MIXED
format, annotate on): same tables, the skip flag (WL#234) on the same GTIDs of the target's binlog, and
`--skip-flagged` equal to what a real FILTER_ON_SLAVE replica applies (replayed, and as --output-binlog files served
by binlogd to a plain replica).

The workload has flagged statements (autocommit, in a transaction, a DDL, a statement-format INSERT), row changes
(UUID() makes MIXED log rows), RENAME chains, CREATE ... LIKE / ... SELECT, user variables, RAND and LAST_INSERT_ID,
and two files, the first ending with a flagged group (its closing Rotate, unflagged, turns the flag off again).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from binlogd.protocol.events import iter_binlog

from tests.harness import MariaDB
from tests.test_show_helpers import copy_binlogs, gtid_flags, mariadb_binlog, replay, server_binlogs, show

pytestmark = pytest.mark.mariadb

DBS = ("d", "e")
WORKLOAD_1 = """
CREATE DATABASE d; CREATE DATABASE e;
CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(40), u VARCHAR(40));
INSERT INTO d.t VALUES (1,'a',NULL);
INSERT INTO d.t VALUES (2,'b',UUID());
SET skip_replication=1; INSERT INTO d.t VALUES (3,'flagged row',UUID()); SET skip_replication=0;
SET skip_replication=1; INSERT INTO d.t VALUES (4,'flagged stmt',NULL); CREATE TABLE d.fl (x INT);
  INSERT INTO d.fl VALUES (1); SET skip_replication=0;
SET skip_replication=1; BEGIN; INSERT INTO d.t VALUES (10,'flagged trx',UUID()); UPDATE d.t SET v='f' WHERE id=1;
  COMMIT; SET skip_replication=0;
BEGIN; INSERT INTO d.t VALUES (5,'trx',NULL); UPDATE d.t SET u=UUID() WHERE id=1; COMMIT;
CREATE TABLE e.t2 LIKE d.t; INSERT INTO e.t2 SELECT * FROM d.t;
CREATE TABLE e.t3 AS SELECT id, v FROM d.t;
RENAME TABLE e.t2 TO e.tmp, e.t3 TO e.t2, e.tmp TO e.t3;
SET @uv='user var'; INSERT INTO d.t VALUES (6,@uv,NULL);
SET binlog_format=ROW; DELETE FROM d.t WHERE id=2; UPDATE d.t SET v='x' WHERE id=5; SET binlog_format=MIXED;
INSERT INTO d.t VALUES (7, RAND(1), LAST_INSERT_ID());
SET skip_replication=1; INSERT INTO e.t3 VALUES (99,'flagged last of file 1',UUID()); SET skip_replication=0;
"""
WORKLOAD_2 = """
INSERT INTO d.t VALUES (8,'file 2, not flagged',NULL);
SET skip_replication=1; ALTER TABLE d.t ADD COLUMN n INT; SET skip_replication=0;
UPDATE d.t SET v=CONCAT(v, UUID()) WHERE id < 3;
"""


def _start(mariadb, specs: list[tuple[str, int, tuple[str, ...]]]) -> list[MariaDB]:
    with ThreadPoolExecutor(len(specs)) as pool:
        return list(pool.map(lambda s: mariadb(s[0], s[1], *s[2]), specs))


@pytest.fixture
def recorded(mariadb, harness_dir: Path) -> tuple[MariaDB, list[Path]]:
    """A MIXED/annotate primary after the workload, and copies of its two binlog files."""
    primary = mariadb("primary", 1, "--log-bin=mysql-bin", "--binlog-format=MIXED", "--binlog-annotate-row-events=ON")
    primary.execute(WORKLOAD_1)
    primary.query("FLUSH BINARY LOGS")
    primary.execute(WORKLOAD_2)
    return primary, copy_binlogs(primary, harness_dir / "binlogs")


def test_replay_equals_mariadb_binlog_and_keeps_the_flag(mariadb, recorded: tuple[MariaDB, list[Path]]) -> None:
    primary, files = recorded
    ours, theirs = _start(mariadb, [(n, i, ("--log-bin=mysql-bin", "--binlog-format=MIXED"))
                                    for n, i in (("ours", 21), ("theirs", 22))])
    text = show(*files).stdout
    reference = mariadb_binlog(*files).stdout
    assert text == reference  # the default text is mariadb-binlog's, byte for byte
    replay(ours, text)
    replay(theirs, reference)

    expected = primary.table_checksums(DBS)
    assert set(expected) == {"d.t", "d.fl", "e.t2", "e.t3"}
    assert ours.table_checksums(DBS) == expected
    assert theirs.table_checksums(DBS) == expected

    primary_flags = gtid_flags(server_binlogs(primary))
    assert sum(primary_flags.values()) == 7  # the workload's flagged groups
    assert gtid_flags(server_binlogs(ours)) == primary_flags
    assert gtid_flags(server_binlogs(theirs)) == primary_flags
    assert text.count(b"SET skip_replication=1") == 3  # printed only when the flag changes: three flagged runs


def test_flag_state_kept_across_files(mariadb, harness_dir: Path, recorded: tuple[MariaDB, list[Path]]) -> None:
    """File 1 without its closing Rotate (as a crashed primary leaves it) ends in a flagged group; file 2 starts
    unflagged. binlogd show prints `=0` there; mariadb-binlog starts file 2 with a fresh state and its replay flags
    file 2's first group too."""
    primary, (f1, f2) = recorded
    *_, (rotate_pos, _) = iter_binlog(f1.read_bytes())
    cut = harness_dir / "cut" / f1.name
    cut.parent.mkdir()
    cut.write_bytes(f1.read_bytes()[:rotate_pos])
    ours, theirs = _start(mariadb, [(n, i, ("--log-bin=mysql-bin",)) for n, i in (("ours", 23), ("theirs", 24))])
    replay(ours, show(cut, f2).stdout)
    replay(theirs, mariadb_binlog(cut, f2).stdout)
    primary_flags = gtid_flags(server_binlogs(primary))
    assert gtid_flags(server_binlogs(ours)) == primary_flags
    first_of_file_2 = next(iter(gtid_flags([f2])))
    wrong = {g for g, flagged in gtid_flags(server_binlogs(theirs)).items() if flagged != primary_flags[g]}
    assert wrong == {first_of_file_2}


def test_skip_flagged_equals_a_filter_on_slave_replica(mariadb, binlogd, harness_dir: Path,
                                                        recorded: tuple[MariaDB, list[Path]]) -> None:
    primary, files = recorded
    replica, target, downstream = _start(mariadb, [("replica", 31, ()), ("target", 32, ()), ("downstream", 33, ())])
    replica.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
    replica.set_skip_mode("FILTER_ON_SLAVE")
    replica.start_slave()
    replica.wait_caught_up(primary)

    out = harness_dir / "unflagged"
    text = show("--skip-flagged", "--output-binlog", out, *files).stdout
    assert b"skip_replication" not in text
    replay(target, text)
    got = target.table_checksums(DBS)
    assert got == replica.table_checksums(DBS)
    assert "d.fl" not in got  # the flagged CREATE TABLE is left out by both
    assert got != primary.table_checksums(DBS)

    # the --output-binlog files (flagged groups as same-length dummies) served by binlogd to a plain replica
    server = binlogd.serve(out)
    downstream.change_master(server.host, server.port, log_file="mysql-bin.000001", log_pos=4)
    downstream.start_slave()
    downstream.wait_caught_up(server)
    assert downstream.table_checksums(DBS) == got
