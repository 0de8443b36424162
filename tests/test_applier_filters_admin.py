"""The applier's admin SQL port, driven with the real `mariadb` command-line client.

* The WL#7361 / MySQL 8.0 manual examples: startup options with channels, CHANGE REPLICATION FILTER [FOR
  CHANNEL], RESET SLAVE ALL FOR CHANNEL, and the P_S tables replication_applier_filters and
  replication_applier_global_filters, with the outputs the manual gives for them.
* A running channel (real primary, real target): hit counters, and the refusals of changes while it runs,
  compared code and text with a real MariaDB 10.11 replica's.
* Bad input: clear MySQL errors.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from binlogd.applier.status import SLAVE_STATUS_COLUMNS

from binlogd.testing.mariadb import HOST, find_binary, free_port, wait_until
from tests.harness.applier import running_applier

SO, SOC = "STARTUP_OPTIONS", "STARTUP_OPTIONS_FOR_CHANNEL"
CRF, CRFC = "CHANGE_REPLICATION_FILTER", "CHANGE_REPLICATION_FILTER_FOR_CHANNEL"


@contextlib.contextmanager
def applier_process(args: list[str], log_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`python -m applier.cli ARGS --admin-port P`, ready when the admin port answers; stopped by PID."""
    port = free_port()
    with running_applier([*args, "--admin-port", str(port)], log_path) as p:
        proc = p.proc
        assert proc is not None

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"binlogd-apply exited {proc.returncode}:\n{p.log()[-3000:]}")
            try:
                pymysql.connect(host=HOST, port=port, user="root").close()
                return True
            except pymysql.MySQLError:
                return False

        wait_until(up, 20, 0.05, "the admin port")
        yield proc, port


def cli(port: int, sql: str) -> tuple[int, list[list[str]], str]:
    """The mariadb client in batch mode: (exit code, rows as lists of strings, stderr)."""
    binary = find_binary("mariadb")
    assert binary, "the mariadb client is needed"
    p = subprocess.run([binary, f"-h{HOST}", f"-P{port}", "-uroot", "--batch", "--skip-column-names", "-e", sql],
                       capture_output=True, text=True, timeout=20)
    rows = [line.split("\t") for line in p.stdout.splitlines()]
    return p.returncode, rows, p.stderr.strip()


def ok(port: int, sql: str) -> list[list[str]]:
    rc, rows, err = cli(port, sql)
    assert rc == 0, f"{sql}: {err}"
    return rows


def error(port: int, sql: str) -> str:
    rc, _rows, err = cli(port, sql)
    assert rc != 0, f"{sql} succeeded"
    return err


DO_DB = SLAVE_STATUS_COLUMNS.index("Replicate_Do_DB")
P_S = ("SELECT CHANNEL_NAME, FILTER_NAME, FILTER_RULE, CONFIGURED_BY, COUNTER "
       "FROM performance_schema.replication_applier_filters")
P_S_GLOBAL = "SELECT FILTER_NAME, FILTER_RULE, CONFIGURED_BY FROM performance_schema.replication_applier_global_filters"


@pytest.fixture(scope="module")
def idle_applier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """The manual's startup example, channels not started (no source is contacted)."""
    log = tmp_path_factory.mktemp("admin") / "apply.log"
    dead = f"mysql://root@{HOST}:{free_port()}"
    args = ["--target", dead, "--channel", f"channel_1={dead}", "--channel", f"channel_2={dead}",
            "--replicate-do-db=db1", "--replicate-do-db=channel_1:db2", "--replicate-do-db=db3",
            "--replicate-ignore-db=db4", "--replicate-ignore-db=channel_2:db5",
            "--replicate-wild-do-table=channel_1:db6.t1%", "--replicate-rewrite-db=channel_9:a->b", "--no-start"]
    with applier_process(args, log) as (_proc, port):
        yield port, log


@pytest.mark.mariadb
def test_wl7361_startup_options_in_the_p_s_tables(idle_applier):
    port, log = idle_applier
    assert ok(port, P_S_GLOBAL) == [
        ["REPLICATE_DO_DB", "db1,db3", SO],
        ["REPLICATE_IGNORE_DB", "db4", SO],
    ]
    rows = ok(port, P_S + " WHERE CHANNEL_NAME = 'channel_1'") + ok(port, P_S + " WHERE CHANNEL_NAME = 'channel_2'")
    assert rows == [
        ["channel_1", "REPLICATE_DO_DB", "db2", SOC, "0"],
        ["channel_1", "REPLICATE_IGNORE_DB", "db4", SO, "0"],
        ["channel_1", "REPLICATE_WILD_DO_TABLE", "db6.t1%", SOC, "0"],
        ["channel_2", "REPLICATE_DO_DB", "db1,db3", SO, "0"],
        ["channel_2", "REPLICATE_IGNORE_DB", "db5", SOC, "0"],
    ]
    assert "channel 'channel_9' which does not exist. The filter(s) have been discarded" in log.read_text()
    # SHOW SLAVE STATUS carries the effective rules (MariaDB's column names)
    conn = pymysql.connect(host=HOST, port=port, user="root")
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW SLAVE STATUS FOR CHANNEL 'channel_1'")
            st = cur.fetchone()
            assert st is not None and len(st) == 51  # MariaDB 10.11's 54 without the relay log columns
            assert (st["Replicate_Do_DB"], st["Replicate_Ignore_DB"], st["Replicate_Wild_Do_Table"]) == (
                "db2", "db4", "db6.t1%")
            cur.execute("SHOW ALL SLAVES STATUS")
            assert [r["Connection_name"] for r in cur.fetchall()] == ["channel_1", "channel_2"]
            active = cur.execute("SELECT ACTIVE_SINCE FROM performance_schema.replication_applier_global_filters")
            assert active == 2
    finally:
        conn.close()


@pytest.mark.mariadb
def test_wl7361_change_replication_filter_and_reset_slave_all(idle_applier):
    port, _log = idle_applier
    ok(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB=(db1) FOR CHANNEL channel_1;")  # the manual's example
    assert ok(port, P_S + " WHERE CHANNEL_NAME = 'channel_1'")[0] == [
        "channel_1", "REPLICATE_DO_DB", "db1", CRFC, "0"]
    ok(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB = (db7, `db 8`), REPLICATE_IGNORE_TABLE = (db7.t1) "
             "FOR CHANNEL 'channel_1'")
    ok(port, "CHANGE REPLICATION FILTER REPLICATE_WILD_IGNORE_TABLE = ('mysql.%'), "
             "REPLICATE_REWRITE_DB = ((dbA, dbB), (dbC, dbD))")
    assert ok(port, P_S) == [
        ["channel_1", "REPLICATE_DO_DB", "db7,db 8", CRFC, "0"],  # replaced; the other types kept
        ["channel_1", "REPLICATE_IGNORE_DB", "db4", SO, "0"],
        ["channel_1", "REPLICATE_IGNORE_TABLE", "db7.t1", CRFC, "0"],
        ["channel_1", "REPLICATE_WILD_DO_TABLE", "db6.t1%", SOC, "0"],
        ["channel_1", "REPLICATE_WILD_IGNORE_TABLE", "mysql.%", CRF, "0"],  # a global change reaches every channel
        ["channel_1", "REPLICATE_REWRITE_DB", "(dbA,dbB),(dbC,dbD)", CRF, "0"],
        ["channel_2", "REPLICATE_DO_DB", "db1,db3", SO, "0"],
        ["channel_2", "REPLICATE_IGNORE_DB", "db5", SOC, "0"],
        ["channel_2", "REPLICATE_WILD_IGNORE_TABLE", "mysql.%", CRF, "0"],
        ["channel_2", "REPLICATE_REWRITE_DB", "(dbA,dbB),(dbC,dbD)", CRF, "0"],
    ]
    assert ok(port, P_S_GLOBAL)[-2:] == [
        ["REPLICATE_WILD_IGNORE_TABLE", "mysql.%", CRF],
        ["REPLICATE_REWRITE_DB", "(dbA,dbB),(dbC,dbD)", CRF],
    ]
    ok(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB = () FOR CHANNEL 'channel_1'")  # () removes the type
    assert ["channel_1", "REPLICATE_DO_DB"] not in [r[:2] for r in ok(port, P_S)]
    ok(port, "CHANGE REPLICATION FILTER REPLICATE_REWRITE_DB=() FOR CHANNEL channel_1;")  # the manual's example
    assert [r[:2] for r in ok(port, P_S) if r[1] == "REPLICATE_REWRITE_DB"] == [["channel_2", "REPLICATE_REWRITE_DB"]]
    # MariaDB's per-connection variable syntax does the same thing
    ok(port, "SET GLOBAL channel_2.replicate_ignore_table = 'db5.x,db5.y'")
    assert ok(port, P_S + " WHERE FILTER_NAME = 'REPLICATE_IGNORE_TABLE' AND CHANNEL_NAME = 'channel_2'") == [
        ["channel_2", "REPLICATE_IGNORE_TABLE", "db5.x,db5.y", CRFC, "0"]]
    # RESET SLAVE needs the target (the channel's stored position is deleted there): unreachable here, so a
    # clear error, and nothing is lost
    assert "ERROR 1105 (HY000) at line 1: cannot connect to the target" in error(
        port, "RESET SLAVE ALL FOR CHANNEL 'channel_2'")
    assert {r[0] for r in ok(port, P_S)} == {"channel_1", "channel_2"}
    assert "ERROR 1617" in error(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB = (x) FOR CHANNEL 'channel_9'")


@pytest.mark.mariadb
@pytest.mark.parametrize(("sql", "expected"), [
    ("SHOW TABLES", "ERROR 1235 (42000) at line 1: This version of binlogd-apply's admin port doesn't yet support "
                    "'SHOW TABLES'"),
    ("CHANGE REPLICATION FILTER REPLICATE_DO_DB = (", "ERROR 1064 (42000)"),
    ("CHANGE REPLICATION FILTER REPLICATE_DO_TABLE = (nodot)", "ERROR 1210 (HY000) at line 1: Incorrect arguments "
     "to CHANGE REPLICATION FILTER: Supplied filter list contains a value which is not in the required format"),
    ("CHANGE REPLICATION FILTER REPLICATE_DO_DB = (a), REPLICATE_DO_DB = (b)", "ERROR 1064 (42000)"),
    ("SELECT * FROM performance_schema.replication_applier_status", "ERROR 1146 (42S02) at line 1: Table "
     "'performance_schema.replication_applier_status' doesn't exist"),
    ("SELECT NOPE FROM performance_schema.replication_applier_filters", "ERROR 1054 (42S22)"),
    ("SET GLOBAL replicate_events_marked_for_skip = SOMETIMES", "ERROR 1231 (42000) at line 1: Variable "
     "'replicate_events_marked_for_skip' can't be set to the value of 'SOMETIMES'"),
    ("SET GLOBAL sql_slave_skip_counter = 'x'", "ERROR 1231"),
    ("START SLAVE 'nope'", "ERROR 1617 (HY000) at line 1: There is no master connection 'nope'"),
])
def test_bad_statements_get_mysql_errors(idle_applier, sql, expected):
    port, _log = idle_applier
    assert expected in error(port, sql)
    assert ok(port, "SELECT @@version_comment") == [["binlogd-apply admin port"]]  # the session survives


# --- a running channel ----------------------------------------------------------------------------------


@pytest.mark.mariadb
def test_running_channel_counts_hits_and_refuses_changes_like_mariadb(mariadb, harness_dir):
    primary = mariadb.primary("p", 1)
    target = mariadb("target", 11)
    real = mariadb("real", 12)
    primary.query("CREATE DATABASE keep")
    primary.query("CREATE DATABASE drop_me")
    for db in ("keep", "drop_me"):  # with the database as default: ignore-db rules look at the default database
        conn = primary.connect(database=db)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO t VALUES (1),(2)")
        conn.close()
    end = primary.master_status()
    src = f"mysql://root@{HOST}:{primary.port}"
    args = ["--target", f"mysql://root@{HOST}:{target.port}", "--channel", f"c1={src}?gtid=slave_pos",
            "--replicate-ignore-db=drop_me", "--no-start"]
    real.query("CHANGE MASTER 'c1' TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='root', MASTER_CONNECT_RETRY=1",
               HOST, primary.port)
    real.is_replica = True
    real.query("START SLAVE 'c1'")
    with applier_process(args, harness_dir / "apply.log") as (_proc, port):
        ok(port, "START SLAVE 'c1'")
        assert ok(port, "SELECT @@sql_slave_skip_counter") == [["0"]]

        def caught_up() -> bool:
            try:
                rows = target.query("SELECT log_file, log_pos FROM binlogd_apply.channel_position WHERE channel='c1'")
            except pymysql.MySQLError:
                return False
            return bool(rows) and (str(rows[0][0]), int(rows[0][1])) == end

        wait_until(caught_up, 30, 0.05, "the applier to reach the primary's end")
        assert target.query("SHOW DATABASES LIKE 'drop_me'") == []
        assert target.query("SELECT id FROM keep.t ORDER BY id") == [(1,), (2,)]
        (counter,) = ok(port, "SELECT COUNTER FROM performance_schema.replication_applier_filters "
                              "WHERE FILTER_NAME = 'REPLICATE_IGNORE_DB'")[0]
        assert int(counter) >= 3  # CREATE DATABASE, CREATE TABLE and the insert into drop_me

        # changes that need a stopped channel: the same code and text as MariaDB's replica
        for stmt in ("SET GLOBAL replicate_events_marked_for_skip = FILTER_ON_SLAVE",):
            with pytest.raises(pymysql.MySQLError) as real_err:
                real.query(stmt)
            ours = error(port, stmt)
            code, text = real_err.value.args
            assert ours.endswith(f"ERROR {code} (HY000) at line 1: {text}")
        assert "ERROR 1198" in error(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB = (keep) FOR CHANNEL 'c1'")
        assert "ERROR 1198" in error(port, "RESET SLAVE 'c1' ALL")

        ok(port, "STOP SLAVE 'c1'")
        ok(port, "SET GLOBAL replicate_events_marked_for_skip = FILTER_ON_SLAVE")
        assert ok(port, "SELECT @@replicate_events_marked_for_skip") == [["FILTER_ON_SLAVE"]]
        ok(port, "SET GLOBAL sql_slave_skip_counter = 2")
        assert ok(port, "SELECT @@sql_slave_skip_counter") == [["2"]]
        ok(port, "CHANGE REPLICATION FILTER REPLICATE_DO_DB = (keep) FOR CHANNEL 'c1'")
        assert ok(port, "SHOW SLAVE 'c1' STATUS")[0][DO_DB] == "keep"

        # RESET SLAVE (without ALL) forgets the position and keeps the channel and its filters
        ok(port, "RESET SLAVE 'c1'")
        assert ok(port, P_S + " WHERE CHANNEL_NAME = 'c1'")[0][:4] == ["c1", "REPLICATE_DO_DB", "keep", CRFC]
        assert ok(port, "SHOW SLAVE 'c1' STATUS")[0][DO_DB] == "keep"
        # WL#7361: RESET SLAVE ALL FOR CHANNEL removes the channel and its filters; the global filters stay
        ok(port, "RESET SLAVE ALL FOR CHANNEL 'c1'")
        assert ok(port, P_S) == []
        assert ok(port, P_S_GLOBAL) == [["REPLICATE_IGNORE_DB", "drop_me", SO]]
        assert error(port, "SHOW SLAVE 'c1' STATUS").endswith("There is no master connection 'c1'")
        assert target.query("SELECT COUNT(*) FROM binlogd_apply.channel_position WHERE channel='c1'") == [(0,)]
    real.query("STOP SLAVE 'c1'")

