"""The applier's SHOW ALL SLAVES STATUS against a real MariaDB 10.11 replica of the same primary, and the
admin port's health-check SELECTs against a real 10.11 server.

Both replicas apply the same workload; every column the admin port shows is compared with the real replica's,
except where the two cannot agree by definition (each is said at its assertion).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.harness import MariaDB, free_port
from tests.harness.applier import ApplierProc, running_applier

HEARTBEAT = 0.5
ALL = "SHOW ALL SLAVES STATUS"


def admin_rows(port: int, sql: str) -> list[dict[str, Any]]:
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", ssl_disabled=True,
                           cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return [dict(r) for r in cur.fetchall()]
    finally:
        conn.close()


def real_rows(server: MariaDB, sql: str) -> list[dict[str, Any]]:
    conn = server.connect(cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return [dict(r) for r in cur.fetchall()]
    finally:
        conn.close()


def wait_for(what: str, check: Any, timeout: float = 60.0) -> Any:
    """Polls `check()` every 0.05 s until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)
    return got


def when(rows: Callable[[], dict[str, Any]], condition: Callable[[dict[str, Any]], bool]
         ) -> Callable[[], dict[str, Any] | None]:
    """For wait_for: the status row `rows()` returns once `condition` holds for it."""
    def check() -> dict[str, Any] | None:
        st = rows()
        return st if condition(st) else None
    return check


def both_at(primary: MariaDB, replica: MariaDB, admin_port: int, proc: ApplierProc, *, executed: bool = True
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both replicas' SHOW ALL SLAVES STATUS rows once each has read (and, with `executed`, applied) everything."""
    file, pos = primary.master_status()

    def at_end(st: dict[str, Any]) -> bool:
        read = (st["Master_Log_File"], st["Read_Master_Log_Pos"]) == (file, pos)
        done = (st["Relay_Master_Log_File"], st["Exec_Master_Log_Pos"]) == (file, pos)
        return read and (done or not executed)

    def ours() -> dict[str, Any] | None:
        assert proc.alive, proc.log()
        st = admin_rows(admin_port, "SHOW ALL SLAVES STATUS")[0]
        return st if at_end(st) else None

    def real() -> dict[str, Any] | None:
        st = real_rows(replica, "SHOW ALL SLAVES STATUS")[0]
        return st if at_end(st) else None

    return wait_for(f"the applier at {file}:{pos}", ours), wait_for(f"the replica at {file}:{pos}", real)


GROUP_COUNTERS = ("Slave_DDL_Groups", "Slave_Non_Transactional_Groups", "Slave_Transactional_Groups")

WORKLOAD = [
    "CREATE TABLE d1.inno (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",  # DDL
    "CREATE TABLE d1.my (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM",  # DDL
    "INSERT INTO d1.inno VALUES (1, 'a')",  # transactional
    "BEGIN; INSERT INTO d1.inno VALUES (2, 'b'); UPDATE d1.inno SET v = 'c' WHERE id = 1; COMMIT",  # transactional
    "INSERT INTO d1.my VALUES (1, 'x')",  # non-transactional
    # mixed (ROW format): the MyISAM row is logged at once as its own non-transactional group, the InnoDB part
    # follows without FL_TRANSACTIONAL (it touched a non-transactional table): two non-transactional groups
    "BEGIN; INSERT INTO d1.my VALUES (2, 'y'); INSERT INTO d1.inno VALUES (3, 'z'); COMMIT",
    "BEGIN; INSERT INTO d1.my VALUES (3, 'kept'); INSERT INTO d1.inno VALUES (4, 'undone'); ROLLBACK",  # non-trans
    "SET skip_replication=1; INSERT INTO d1.inno VALUES (5, 'flagged')",  # applied in REPLICATE mode: counted
    "ALTER TABLE d1.inno ADD COLUMN w INT",  # DDL
    "DELETE FROM d1.inno WHERE id = 2",  # transactional
    "DROP TABLE d1.my",  # DDL
]


@pytest.fixture
def pair(mariadb: Any, harness_dir: Path) -> Iterator[tuple[MariaDB, MariaDB, MariaDB, int, ApplierProc]]:
    """A primary, a real 10.11 replica of it and an applier on a target, both with 0.5 s heartbeats."""
    primary = mariadb.primary()
    # log_slave_updates: only then does a 10.11 IO thread ask for ANNOTATE_ROWS (the applier always does), so
    # both read the same events
    replica = mariadb("replica", 2, "--log-bin=mysql-bin", "--log-slave-updates")
    replica.change_master(primary.host, primary.port, use_gtid="slave_pos", heartbeat=HEARTBEAT)
    replica.start_slave()
    target = mariadb("target", 3)
    primary.execute("CREATE DATABASE d1")
    port = free_port()
    args = [f"--target=mysql://root@127.0.0.1:{target.port}", f"--admin-port={port}",
            f"--channel==mysql://root@127.0.0.1:{primary.port}?heartbeat={HEARTBEAT}"]
    with running_applier(args, harness_dir / "applier.log") as proc:
        wait_for("the admin port", lambda: "admin port on" in proc.log() or not proc.alive, 30)
        yield primary, replica, target, port, proc


def test_status_columns_match_a_real_replica(pair: Any) -> None:
    """Same workload, same primary: the group counters are equal in total, Executed_log_entries per workload,
    heartbeats at the same period; every other column equal except Parallel_Mode. The columns are 10.11's
    without the four relay-log ones."""
    primary, replica, _target, port, proc = pair
    ours0, real0 = both_at(primary, replica, port, proc)
    assert f"replicating from mysql://root@127.0.0.1:{primary.port} at GTID position '' (from the source's first " \
           "binlog)" in proc.log()
    for sql in WORKLOAD:
        primary.execute(sql)
    ours, real = both_at(primary, replica, port, proc)

    assert list(ours) == [c for c in real if c not in (
        "Relay_Log_File", "Relay_Log_Pos", "Relay_Log_Space", "Max_relay_log_size")]
    # the group counters (Gtid_log_event::do_apply_event): equal in total, both replicas applied every GTID
    assert {c: ours[c] for c in GROUP_COUNTERS} == {c: real[c] for c in GROUP_COUNTERS}
    assert {c: ours[c] - ours0[c] for c in GROUP_COUNTERS} == {
        "Slave_DDL_Groups": 4, "Slave_Non_Transactional_Groups": 4, "Slave_Transactional_Groups": 4}
    # Executed_log_entries: the replica's relay log also holds its own FDE/ROTATE events, so only the count per
    # workload can match: every event of the applied groups, GTID ... XID, ANNOTATE_ROWS included
    assert ours["Executed_log_entries"] - ours0["Executed_log_entries"] == \
        real["Executed_log_entries"] - real0["Executed_log_entries"] == 51
    # what the two cannot share: Parallel_Mode ('optimistic' is the 10.11 default setting, but the applier
    # applies one group at a time: 'none'), heartbeat counts (each connection's own timer), entry totals
    differ = {"Parallel_Mode", "Slave_received_heartbeats", "Executed_log_entries"}
    assert ours["Parallel_Mode"] == "none" and real["Parallel_Mode"] == "optimistic"
    assert {c: v for c, v in ours.items() if c not in differ} == {c: v for c, v in real.items() if c in ours
                                                                   and c not in differ}
    assert ours["Slave_heartbeat_period"] == HEARTBEAT


def test_heartbeats_counted_at_the_same_period(pair: Any) -> None:
    """An idle primary sends each replica a heartbeat every 0.5 s: both counts grow alike."""
    primary, replica, _target, port, proc = pair
    both_at(primary, replica, port, proc)

    def counts() -> tuple[int, int]:
        ours = admin_rows(port, "SHOW ALL SLAVES STATUS")[0]["Slave_received_heartbeats"]
        real = real_rows(replica, "SHOW ALL SLAVES STATUS")[0]["Slave_received_heartbeats"]
        return int(ours), int(real)

    start, t0 = counts(), time.monotonic()
    time.sleep(3)
    end, elapsed = counts(), time.monotonic() - t0
    grown = (end[0] - start[0], end[1] - start[1])
    # timer-driven on the primary: at most one per period (plus the window's edges) on each connection, about as
    # many on both (a loaded machine delays both dump threads' timers alike)
    assert all(2 <= g <= elapsed / HEARTBEAT + 1 for g in grown) and abs(grown[0] - grown[1]) <= 2, (grown, elapsed)


def test_sql_error_keeps_the_io_side_reading(pair: Any) -> None:
    """An apply error stops the SQL side only: Slave_IO_Running stays Yes and the reader follows the primary,
    on the applier as on a real 10.11 replica; START SLAVE resumes at the failed group."""
    primary, replica, target, port, proc = pair
    primary.execute("CREATE TABLE d1.t (id INT PRIMARY KEY) ENGINE=InnoDB")
    both_at(primary, replica, port, proc)
    for server in (replica, target):  # the conflict, made on each replica only
        server.query("SET STATEMENT sql_log_bin=0 FOR INSERT INTO d1.t VALUES (2)")
    primary.execute("INSERT INTO d1.t VALUES (1)")
    before = primary.master_status()
    primary.execute("INSERT INTO d1.t VALUES (2)")
    for i in range(3, 6):  # the IO sides read these after the error
        primary.execute(f"INSERT INTO d1.t VALUES ({i})")
    ours, real = both_at(primary, replica, port, proc, executed=False)

    def sql_stopped(st: dict[str, Any]) -> bool:
        return bool(st["Slave_SQL_Running"] == "No")

    ours = wait_for("the applier's SQL error", when(lambda: admin_rows(port, ALL)[0], sql_stopped))
    real = wait_for("the replica's SQL error", when(lambda: real_rows(replica, ALL)[0], sql_stopped))
    for st in (ours, real):
        assert (st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_SQL_Errno"]) == ("Yes", "No", 1062)
        assert (st["Relay_Master_Log_File"], st["Exec_Master_Log_Pos"]) == before
        assert st["Slave_IO_State"] == "Waiting for master to send event"
    # still reading: a new transaction moves Read_Master_Log_Pos on both
    primary.execute("INSERT INTO d1.t VALUES (6)")
    ours, real = both_at(primary, replica, port, proc, executed=False)
    assert ours["Slave_SQL_Running"] == real["Slave_SQL_Running"] == "No"
    for server in (replica, target):
        server.query("SET STATEMENT sql_log_bin=0 FOR DELETE FROM d1.t WHERE id = 2")
    admin_rows(port, "START SLAVE")
    replica.start_slave()
    ours, real = both_at(primary, replica, port, proc)
    assert (ours["Slave_IO_Running"], ours["Slave_SQL_Running"], ours["Last_SQL_Errno"]) == ("Yes", "Yes", 0)
    assert target.query("SELECT id FROM d1.t ORDER BY id") == replica.query("SELECT id FROM d1.t ORDER BY id")


def test_fatal_source_error_stops_the_io_side_only(mariadb: Any, harness_dir: Path) -> None:
    """A position in a binlog the primary does not have: 1236, the IO side stops and the SQL side keeps running
    (waiting), on the applier as on a real 10.11 replica."""
    primary = mariadb.primary()
    replica = mariadb("replica", 2)
    replica.change_master(primary.host, primary.port, use_gtid="no", log_file="mysql-bin.000099", log_pos=4)
    replica.start_slave()
    target = mariadb("target", 3)
    target.execute("CREATE DATABASE binlogd_apply; CREATE TABLE binlogd_apply.channel_position (channel VARCHAR(64)"
                   " NOT NULL PRIMARY KEY, log_file VARCHAR(512) NOT NULL, log_pos BIGINT UNSIGNED NOT NULL, gtid_pos"
                   " TEXT NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE"
                   " CURRENT_TIMESTAMP(6)) ENGINE=InnoDB;"
                   " INSERT INTO binlogd_apply.channel_position VALUES ('', 'mysql-bin.000099', 4, '', NOW(6))")
    port = free_port()
    args = [f"--target=mysql://root@127.0.0.1:{target.port}", f"--admin-port={port}",
            f"--channel==mysql://root@127.0.0.1:{primary.port}?gtid=no"]
    with running_applier(args, harness_dir / "applier.log") as proc:
        wait_for("the admin port", lambda: "admin port on" in proc.log() or not proc.alive, 30)

        def io_error(st: dict[str, Any]) -> bool:
            return bool(st["Last_IO_Errno"])

        ours = wait_for("the applier's IO error", when(lambda: admin_rows(port, "SHOW SLAVE STATUS")[0], io_error))
        real = wait_for("the replica's IO error", when(lambda: real_rows(replica, "SHOW SLAVE STATUS")[0], io_error))
        columns = ("Slave_IO_Running", "Slave_SQL_Running", "Last_IO_Errno", "Last_IO_Error", "Slave_IO_State")
        assert [ours[c] for c in columns] == [real[c] for c in columns]
        assert (ours["Slave_IO_Running"], ours["Slave_SQL_Running"], ours["Last_IO_Errno"]) == ("No", "Yes", 1236)


def test_tls_channel_shows_its_ssl_settings(mariadb: Any, harness_dir: Path) -> None:
    """A channel asking for verified TLS (`?ssl=1&ssl-verify=1`) from a primary without TLS: Master_SSL_* as a
    real 10.11 replica with MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=1 shows them, and both fail with 2026.

    (Without the verification a 10.11 replica falls back to clear text when the primary has no TLS; the applier
    refuses: issue 15's rule in protocol/connection.py.)"""
    primary = mariadb.primary()
    replica = mariadb("replica", 2)
    replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
    replica.query("CHANGE MASTER TO MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=1")
    replica.start_slave()
    target = mariadb("target", 3)
    port = free_port()
    args = [f"--target=mysql://root@127.0.0.1:{target.port}", f"--admin-port={port}",
            f"--channel==mysql://root@127.0.0.1:{primary.port}?ssl=1&ssl-verify=1"]
    with running_applier(args, harness_dir / "applier.log") as proc:
        wait_for("the admin port", lambda: "admin port on" in proc.log() or not proc.alive, 30)

        def io_error(st: dict[str, Any]) -> bool:
            return bool(st["Last_IO_Errno"])

        ours = wait_for("the applier's IO error", when(lambda: admin_rows(port, "SHOW SLAVE STATUS")[0], io_error))
        real = wait_for("the replica's IO error", when(lambda: real_rows(replica, "SHOW SLAVE STATUS")[0], io_error))
    columns = [c for c in real if c.startswith("Master_SSL")] + ["Last_IO_Errno"]
    assert {c: ours[c] for c in columns} == {c: real[c] for c in columns}
    assert (ours["Master_SSL_Allowed"], ours["Master_SSL_Verify_Server_Cert"], ours["Last_IO_Errno"]) == (
        "Yes", "Yes", 2026)


HEALTH_CHECKS = [
    "SELECT 1",
    "select 1 from dual",
    "/* ping */ SELECT 1",
    "select @@version_comment limit 1",
    "SELECT 'ok' AS status, 2, NULL",
    "SELECT @@GLOBAL.server_id",
    "SELECT @@server_id, @@hostname",
    "SELECT @@nonexistent_variable",
]


def test_health_check_selects_answer_as_mariadb(mariadb: Any, harness_dir: Path) -> None:
    """The usual health checks get MariaDB's column names and value types (values: the applier's own), and an
    unknown variable MariaDB's 1193."""
    real = mariadb("real", 7)
    target = mariadb("target", 3)
    port = free_port()
    args = [f"--target=mysql://root@127.0.0.1:{target.port}", f"--admin-port={port}", "--server-id=7",
            "--channel==mysql://root@127.0.0.1:1?retry=60"]
    with running_applier(args, harness_dir / "applier.log") as proc:
        wait_for("the admin port", lambda: "admin port on" in proc.log() or not proc.alive, 30)
        for sql in HEALTH_CHECKS:
            got, want = _answer(port, sql), _answer(real.port, sql)
            if "version" in sql or "hostname" in sql:  # the applier's own values, MariaDB's shape
                got = {k: type(v) for k, v in got.items()} if isinstance(got, dict) else got
                want = {k: type(v) for k, v in want.items()} if isinstance(want, dict) else want
            assert got == want, sql
        assert _answer(port, "SELECT @@version")["@@version"].startswith("10.11.")


def _answer(port: int, sql: str) -> dict[str, Any] | tuple[int, str]:
    try:
        rows = admin_rows(port, sql)
    except pymysql.MySQLError as e:
        return e.args[0], str(e.args[1])
    assert len(rows) == 1
    return rows[0]
