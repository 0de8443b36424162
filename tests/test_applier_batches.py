"""binlogd-apply under load (issue 20): many groups per round trip, kill -9, and a target binlog that stays a
valid GTID stream for the target's own replicas.

* Batches (applier/pipeline.py, TargetSession.apply_many): an error in the middle of a batch stops the channel
  exactly there, as for a lone group: the groups before it are committed with their positions, the ones after it
  are not applied, and the error reads as MariaDB's SQL thread words it. A backlog written before the applier
  starts makes its worker take the groups in batches.
* Bookkeeping: a MariaDB replica never binlogs its position bookkeeping. The applier writes its position row inside
  each applied group's transaction (which carries the source's GTID), and what it writes on its own (the schema at
  start-up, the position after DDL and after groups with nothing to apply) goes to a GTID domain of its own: never
  the target's own GTIDs interleaved with the source's in the source's domain. Checked with a real replica of the
  target in gtid_strict_mode=ON that must keep replicating throughout, and with `mariadb-binlog` reading the
  target's binlog (it stops at an out-of-order GTID).
"""


from __future__ import annotations

import random
import re
import subprocess
import threading
import time
from typing import Any

import pymysql
import pytest

from tests.harness import MariaDB, free_port
from tests.test_applier import stored_position, wait_applied

STRICT = ("--log-bin=mysql-bin", "--binlog-format=ROW", "--gtid-strict-mode=ON")


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


@pytest.mark.parametrize(("parallel", "binlog", "rows"),
                         [(1, True, "binlog"), (4, True, "binlog"), (1, False, "sql"), (1, False, "binlog")],
                         ids=["serial", "parallel4", "serial-chained", "serial-grouped"])
def test_kill9_under_load_nothing_lost_or_doubled(mariadb: Any, applier: Any, parallel: int, binlog: bool,
                                                  rows: str) -> None:
    """kill -9 of the applier again and again while the primary commits small transactions (the worker takes them
    in batches of many groups per round trip; with --parallel-apply=4 on four target sessions committing in
    order, every transaction touching the one counter row): the target ends equal to a real replica, no
    transaction applied twice (a counter row is incremented by each one), and a strict-mode replica of the target
    never stops. A transaction that is one row statement goes as one autocommit BINLOG statement with its
    position row's UPDATE (no BEGIN). With `--row-apply=sql` a target without a binlog (no GTID to set per group)
    gets back-to-back groups chained, each COMMIT AND CHAIN opening the next group's transaction: crash-safe all
    the same. With the row events as BINLOG statements on a target without a binlog (no GTID per transaction),
    the transactions of a backlog are committed many per target transaction (applier/grouping.py): kill -9 while
    such a run is being applied leaves the whole run or none of it."""
    primary = mariadb("primary", 1, *STRICT)
    replica = mariadb("replica", 2)
    replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
    replica.start_slave()
    target = mariadb("target", 3, *(STRICT if binlog else ()))
    downstream = mariadb("downstream", 4, "--gtid-strict-mode=ON") if binlog else None
    if downstream is not None:
        downstream.change_master(target.host, target.port, use_gtid="slave_pos")
        downstream.start_slave()
    primary.execute("CREATE DATABASE d1; CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;"
                    " CREATE TABLE d1.c (k INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB;"
                    " INSERT INTO d1.c SELECT seq, 0 FROM test.seq_0_to_7")
    # the kills start once the set-up's DDL is applied: DDL commits on its own before its position row (the window
    # MariaDB's own replica has, applier/position.py); this test is about the transactions under load
    setup = primary.master_status()
    stop = threading.Event()
    written = [0]

    def write() -> None:
        conn = primary.connect(autocommit=True)
        try:
            with conn.cursor() as cur:
                while not stop.is_set():
                    i = written[0] + 1
                    cur.execute(f"INSERT INTO d1.t VALUES ({i}, 'v{i}')")
                    cur.execute(f"UPDATE d1.c SET n = n + 1 WHERE k = {i % 8}")  # neighbours rarely conflict
                    if i % 7 == 0:  # a transaction of two statements, an UPDATE and a DELETE
                        cur.execute("BEGIN")
                        cur.execute(f"DELETE FROM d1.t WHERE id = {i - 3}")
                        cur.execute("UPDATE d1.c SET n = n + 1")  # conflicts with every other transaction
                        cur.execute("COMMIT")
                    written[0] = i
        finally:
            conn.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    channel = (f"--channel==mysql://root@127.0.0.1:{primary.port}", f"--parallel-apply={parallel}",
               "--parallel-min-bytes=0", f"--row-apply={rows}")  # one-row transactions too
    rng = random.Random(20)
    kills = moved = 0
    try:
        for _ in range(8):
            proc = applier(target, *channel)
            before = stored_position(target)
            deadline = time.monotonic() + 60
            while "replicating from" not in proc.log() and proc.alive and time.monotonic() < deadline:
                time.sleep(0.05)  # killed while applying, not while Python starts
            while kills == 0 and proc.alive and (stored_position(target) or ("", 0)) < setup:
                assert time.monotonic() < deadline, proc.log()[-3000:]
                time.sleep(0.05)
            time.sleep(rng.uniform(0.2, 0.8))
            assert proc.alive, proc.log()[-3000:]
            proc.kill9()
            kills += 1
            moved += stored_position(target) != before
            if downstream is not None:
                status = downstream.slave_status()
                assert status["Last_SQL_Errno"] == 0 and status["Last_IO_Errno"] == 0, status
    finally:
        stop.set()
        writer.join(30)
    assert written[0] > 200  # the load really ran
    want = primary.master_status()
    proc = applier(target, *channel)
    replica.wait_slave_pos(*want, timeout=120)
    wait_applied(target, proc, want, timeout=120)
    if downstream is not None:
        downstream.wait_slave_pos(*target.master_status(), timeout=120)
        assert downstream.table_checksums(["d1"]) == replica.table_checksums(["d1"])
    assert kills == 8 and moved >= 4, moved  # most kills hit an applier that was applying
    expected = replica.table_checksums(["d1"])
    assert target.table_checksums(["d1"]) == expected == primary.table_checksums(["d1"])
    assert target.query("SELECT k, n FROM d1.c ORDER BY k") == primary.query("SELECT k, n FROM d1.c ORDER BY k")
    assert "Traceback" not in proc.log()
    logs = "".join(p.read_text() for p in proc.log_path.parent.glob("applier-*.log"))
    assert ("parallel apply on 4 target sessions" in logs) == (parallel == 4)
    status = dict(target.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_begin', 'Com_commit', "
                               "'Com_binlog')"))
    begun = int(status["Com_begin"])
    chained = int(status["Com_commit"]) - begun  # COMMIT AND CHAIN: a COMMIT without BEGIN
    assert (chained > written[0] // 2) == (rows == "sql"), status  # most groups came in batches
    if binlog and parallel == 1:  # most groups as one BINLOG statement each (the parallel path keeps BEGIN)
        assert begun < written[0] // 2, status
    if rows == "binlog":  # grouped: far fewer BINLOG statements than source transactions (2 per loop, 3 every 7th)
        assert (int(status["Com_binlog"]) < written[0] // 2) == (not binlog), status


def test_ddl_applied_before_its_position_row_is_not_applied_again(mariadb: Any, applier: Any) -> None:
    """The DDL window (applier/position.py): a DDL commits with its GTID on its own, and its position row follows.
    A crash between the two is recreated by setting the stored row back to the position before the DDL; on restart
    the applier finds the DDL's GTID in the target's binlog, stores its position without applying it again (a
    strict-mode target would refuse it with 1950, any target with 1060 for the column), and goes on."""
    primary = mariadb("primary", 1, *STRICT)
    target = mariadb("target", 3, *STRICT)
    primary.execute("CREATE DATABASE d1; CREATE TABLE d1.t (id INT PRIMARY KEY) ENGINE=InnoDB")
    channel = f"--channel==mysql://root@127.0.0.1:{primary.port}"
    proc = applier(target, channel)
    wait_applied(target, proc, primary.master_status())
    before = target.query("SELECT log_file, log_pos, gtid_pos FROM binlogd_apply.channel_position")[0]
    primary.execute("ALTER TABLE d1.t ADD COLUMN c INT")
    wait_applied(target, proc, primary.master_status())
    proc.stop()
    with target.connect(autocommit=True) as conn, conn.cursor() as cur:  # the crash: the DDL is in, its row is not
        cur.execute("SET sql_log_bin=0")
        cur.execute("UPDATE binlogd_apply.channel_position SET log_file=%s, log_pos=%s, gtid_pos=%s", before)
    primary.execute("INSERT INTO d1.t VALUES (1, 5)")
    proc = applier(target, channel)
    wait_applied(target, proc, primary.master_status())
    assert "is already in the target's binlog" in proc.log(), proc.log()[-3000:]
    assert target.query("SELECT id, c FROM d1.t") == [(1, 5)]
    assert target.table_checksums(["d1"]) == primary.table_checksums(["d1"])
    assert str(target.query("SELECT @@gtid_binlog_pos")[0][0]).split(",")[0] == str(
        primary.query("SELECT @@gtid_binlog_pos")[0][0])


def _event_end(primary: MariaDB, start: int, end: int, kind: str) -> int:
    """End_log_pos of the first `kind` event between two positions of mysql-bin.000001."""
    for row in primary.query("SHOW BINLOG EVENTS IN 'mysql-bin.000001'"):
        if start <= int(row[1]) < end and row[2] == kind:
            return int(row[4])
    raise AssertionError(f"no {kind} event between {start} and {end}")


def _wait_error(proc: Any, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(r"ERROR binlogd\.apply: channel '': replication stopped at (\S+): (.*)", proc.log())
        if m:
            return f"{m.group(1)}: {m.group(2)}"
        time.sleep(0.05)
    raise AssertionError("no apply error logged:\n" + proc.log()[-3000:])


@pytest.mark.parametrize("parallel", [1, 4], ids=["serial", "parallel4"])
def test_error_in_the_middle_of_a_batch(mariadb: Any, applier: Any, parallel: int) -> None:
    """A duplicate key, then a missing row, in the middle of a backlog: the channel stops exactly at that group
    with MariaDB's texts, also when the groups run on four target sessions (the serial path takes over)."""
    primary = mariadb.primary()
    target = mariadb("target", 3)
    ddl = "CREATE DATABASE IF NOT EXISTS d1; CREATE TABLE IF NOT EXISTS d1.t (id INT PRIMARY KEY, v INT)"
    primary.execute(ddl)
    target.execute(ddl)  # before the applier starts: its row 150 is there from the first group on
    after: dict[int, int] = {0: primary.master_status()[1]}
    for i in range(1, 301):
        primary.query(f"INSERT INTO d1.t VALUES ({i}, 0)")
        after[i] = primary.master_status()[1]
    target.query("INSERT INTO d1.t VALUES (150, -1)")  # group 150 will hit a duplicate key
    admin_port = free_port()
    channel = (f"--channel==mysql://root@127.0.0.1:{primary.port}?gtid=no", f"--parallel-apply={parallel}",
               "--parallel-min-bytes=0", f"--admin-port={admin_port}")
    proc = applier(target, *channel)
    got = _wait_error(proc)
    with pymysql.connect(host="127.0.0.1", port=admin_port, user="root", ssl_disabled=True,
                         cursorclass=pymysql.cursors.DictCursor) as admin, admin.cursor() as cur:
        cur.execute("SHOW SLAVE STATUS")
        assert cur.fetchone()["Parallel_Mode"] == ("optimistic" if parallel > 1 else "none")
    write_end = _event_end(primary, after[149], after[150], "Write_rows_v1")
    assert got == (f"mysql-bin.000001:{after[149]}: Could not execute Write_rows_v1 event on table d1.t; Duplicate "
                   f"entry '150' for key 'PRIMARY', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the "
                   f"event's master log mysql-bin.000001, end_log_pos {write_end} (1062)")
    assert target.query("SELECT log_pos FROM binlogd_apply.channel_position") == [(after[149],)]
    assert target.query("SELECT COUNT(*), MAX(id) FROM d1.t WHERE id <> 150") == [(149, 149)]
    assert ("parallel apply on 4 target sessions" in proc.log()) == (parallel == 4)
    proc.stop()

    # the same for a row-count check (an UPDATE that finds no row) in the middle of a batch of updates
    target.query("DELETE FROM d1.t WHERE id IN (60, 150)")  # group 150 applies now; update 60 finds nothing
    for i in range(1, 101):
        primary.query(f"UPDATE d1.t SET v = {i} WHERE id = {i}")
        after[300 + i] = primary.master_status()[1]
    proc = applier(target, *channel)
    got = _wait_error(proc)
    update_end = _event_end(primary, after[359], after[360], "Update_rows_v1")
    assert got == (f"mysql-bin.000001:{after[359]}: Could not execute Update_rows_v1 event on table d1.t; Can't find "
                   f"record in 't', Error_code: 1032; handler error HA_ERR_KEY_NOT_FOUND; the event's master log "
                   f"mysql-bin.000001, end_log_pos {update_end} (1032)")
    assert target.query("SELECT COUNT(*), SUM(v > 0), MAX(v) FROM d1.t") == [(299, 59, 59)]
    assert target.query("SELECT log_pos FROM binlogd_apply.channel_position") == [(after[359],)]
