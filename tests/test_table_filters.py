"""Per-replica table filters on the server (issue 18): the oracle is a real MariaDB 10.11 replica that applies the
same replicate-* options itself.

A real primary runs a workload in STATEMENT and in ROW format (cross-database statements, partly and wholly
filtered transactions, DDL, auto-increment INTVARs, renames); binlogd relays it; replica A replicates the primary
with `--replicate-OPTION` on its own command line, replica B replicates binlogd with the same rule bound to its
server_id (`--replica-filter`). B must end with exactly A's tables and GTID position, and B's positions must stay
valid when it is moved back to the real primary (CHANGE MASTER with its GTID position, START SLAVE: it converges
with nothing to re-apply).
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from tests.harness import Binlogd, MariaDB

DATABASES = ["CREATE DATABASE IF NOT EXISTS db1", "CREATE DATABASE IF NOT EXISTS db2",
             "CREATE DATABASE IF NOT EXISTS source_db", "CREATE DATABASE IF NOT EXISTS dst"]
SETUP = [
    *DATABASES,
    "USE db1", "CREATE TABLE t1 (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
    "CREATE TABLE t2 (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
    "CREATE TABLE x3 (id INT PRIMARY KEY, v VARCHAR(40))",
    "USE db2", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))",
    "USE source_db", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))",
]


def _phase(fmt: str, base: int) -> list[str]:
    """One round of the workload in binlog format `fmt` (ids from `base`)."""
    b = base
    out = [f"SET SESSION binlog_format={fmt}",
           "USE db1", "INSERT INTO t1 (v) VALUES ('a'), ('b')", "INSERT INTO t2 (v) VALUES ('c')",
           "INSERT INTO t1 (v) VALUES ('after t2')",  # an INTVAR after a filtered statement's INTVAR
           f"INSERT INTO x3 VALUES ({b + 1}, 'x')",
           "USE db2", f"INSERT INTO db1.x3 VALUES ({b + 2}, 'cross from db2')",  # SBR: decided by db2
           f"INSERT INTO t1 VALUES ({b + 1}, 'db2')",
           "BEGIN", "USE db1", "INSERT INTO t1 (v) VALUES ('trx')", "INSERT INTO t2 (v) VALUES ('trx')",
           f"INSERT INTO x3 VALUES ({b + 3}, 'trx')", "USE db2", f"INSERT INTO t1 VALUES ({b + 2}, 'trx')", "COMMIT",
           "USE db1", "UPDATE t1 SET v = CONCAT(v, '+') WHERE id % 2 = 0", "DELETE FROM t2 WHERE id = 1",
           "USE source_db", f"INSERT INTO t1 VALUES ({b + 1}, 'renamed'), ({b + 2}, 'renamed')",
           f"UPDATE t1 SET v = 'renamed+' WHERE id = {b + 1}", f"DELETE FROM t1 WHERE id = {b + 2}"]
    if fmt == "ROW":  # the other direction breaks a self-filtering replica in SBR (MariaDB's documented caveat)
        out += ["USE db1", f"INSERT INTO db2.t1 VALUES ({b + 3}, 'cross from db1')"]
    return out


TAIL = ["USE db2", "CREATE TABLE late (id INT PRIMARY KEY)",  # the last groups: rejected by most rules
        "INSERT INTO t1 VALUES (999, 'last')"]
WORKLOAD = SETUP + _phase("STATEMENT", 100) + _phase("ROW", 200) + TAIL

OPTIONS = {
    "do-table": ["replicate-do-table=db1.t1"],
    "ignore-table": ["replicate-ignore-table=db1.t2"],
    "wild-do-table": ["replicate-wild-do-table=db1.t%"],
    "wild-ignore-table": ["replicate-wild-ignore-table=db2.%"],
    "do-db": ["replicate-do-db=db1"],
    "ignore-db": ["replicate-ignore-db=db2"],
    "rewrite-db": ["replicate-rewrite-db=source_db->dst"],
    "rewrite-and-wild": ["replicate-rewrite-db=source_db->dst", "replicate-wild-do-table=dst.%",
                         "replicate-wild-do-table=db1.%", "replicate-ignore-table=db1.x3"],
}


def tables(server: MariaDB) -> dict[str, list[tuple[Any, ...]]]:
    """Every user table's rows, by `db.table`."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for (db,) in server.query("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN "
                              "('mysql', 'information_schema', 'performance_schema', 'sys', 'test')"):
        for (t,) in server.query(f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}'"):
            out[f"{db}.{t}"] = [tuple(r) for r in server.query(f"SELECT * FROM `{db}`.`{t}` ORDER BY 1")]
    return out


def run(server: MariaDB, statements: list[str]) -> None:
    conn = server.connect(autocommit=True)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
    finally:
        conn.close()


def wait_relayed(relay: Binlogd, primary: MariaDB) -> None:
    def same() -> bool:
        try:
            return relay.master_status() == primary.master_status()  # type: ignore[attr-defined, no-any-return]
        except pymysql.Error:
            return False
    primary.wait_until(same, timeout=60, message="binlogd did not catch up with the primary")


def check_moved_back(b: MariaDB, primary: MariaDB, want: dict[str, list[tuple[Any, ...]]], gtid: bool) -> None:
    """B, moved to the real primary at the position binlogd gave it (GTID or file/pos), converges with nothing to
    re-apply and nothing missing."""
    st = b.slave_status()
    b.stop_slave()
    if gtid:
        b.change_master_to(primary)
    else:
        b.change_master_to(primary, log_file=st["Relay_Master_Log_File"], log_pos=int(st["Exec_Master_Log_Pos"]))
    b.wait_until(lambda: b.slave_status()["Slave_IO_Running"] != "Preparing", timeout=30,
                 message="B's IO thread to connect to the real primary")  # (before: the CHANGE MASTER position)
    b.wait_caught_up(primary, timeout=60)
    st = b.slave_status()
    assert (st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_Errno"]) == ("Yes", "Yes", 0)
    assert tables(b) == want


def oracle(mariadb: Any, binlogd: Any, rules: list[str], gtid: bool = True) -> None:
    primary = mariadb.primary("p", 1)
    relay = binlogd.relay(primary, [a for r in rules for a in ("--replica-filter", f"3:{r}")])
    a = mariadb.replica("a", 2, *(f"--{r}" for r in rules))
    b = mariadb.replica("b", 3)
    for r in (a, b):  # a wild rule like db1.t% also rejects CREATE DATABASE db1 (MariaDB: "everything touching")
        run(r, DATABASES)
    a.change_master_to(primary)
    b.change_master_to(relay, **({} if gtid else {"log_file": "mysql-bin.000001", "log_pos": 4}))
    half = len(SETUP) + len(_phase("STATEMENT", 100))
    run(primary, WORKLOAD[:half])
    wait_relayed(relay, primary)
    b.wait_caught_up(relay, timeout=60)
    b.stop_slave()  # B reconnects in the middle: a GTID (or file/pos) start inside the filtered stream
    b.start_slave()
    run(primary, WORKLOAD[half:])
    wait_relayed(relay, primary)
    a.wait_caught_up(primary, timeout=60)
    b.wait_caught_up(relay, timeout=60)
    want = tables(a)
    assert tables(primary) != want, "the rule filtered nothing: this test would prove nothing"
    assert tables(b) == want
    if gtid:
        assert b.gtid_slave_pos() == a.gtid_slave_pos() == primary.query("SELECT @@gtid_binlog_pos")[0][0]
    # the ledger names each table-filter decision's rule
    whys = {r.why for c in relay.connections() if c.server_id == 3 for r in c.runs}  # type: ignore[attr-defined]
    assert whys & {r.split("=")[0] for r in rules}, whys
    check_moved_back(b, primary, want, gtid)


@pytest.mark.parametrize("option", list(OPTIONS))
def test_filter_option_matches_a_self_filtering_replica(mariadb: Any, binlogd: Any, option: str) -> None:
    oracle(mariadb, binlogd, OPTIONS[option])


@pytest.mark.parametrize("option", ["do-table", "rewrite-and-wild"])
def test_file_pos_replica_positions_stay_the_primarys(mariadb: Any, binlogd: Any, option: str) -> None:
    """A file/pos replica of a filtered (and renamed: events change length) stream keeps the primary's coordinates."""
    oracle(mariadb, binlogd, OPTIONS[option], gtid=False)


# ---- the standalone primary (statements decided by its tables-info events), a user's binding, CDC sessions ---------

STANDALONE = [
    *DATABASES[:2],
    "USE db1", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))", "CREATE TABLE t2 (id INT PRIMARY KEY, v INT)",
    "USE db2", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))",
    "USE db1", "INSERT INTO t1 VALUES (1, 'a'), (2, 'b')", "INSERT INTO t2 VALUES (1, 1)",
    "BEGIN", "INSERT INTO t1 VALUES (3, 'trx')", "INSERT INTO db2.t1 VALUES (3, 'trx')", "INSERT INTO t2 VALUES (3, 3)",
    "COMMIT",
    "USE db2", "INSERT INTO db1.t1 VALUES (4, 'cross')", "UPDATE t1 SET v = 'u' WHERE id = 3",
    "USE db1", "UPDATE t1 SET v = CONCAT(v, '+') WHERE id < 3", "DELETE FROM t2 WHERE id = 1",
    "USE db2", "CREATE TABLE late (id INT PRIMARY KEY)", "INSERT INTO t1 VALUES (9, 'last')",
]
USER_RULES = ["replicate-wild-ignore-table=db2.%", "replicate-ignore-table=db1.t2"]


def test_users_file_binding_on_the_standalone_primary(mariadb: Any, binlogd: Any, harness_dir: Any) -> None:
    """A user's rules from the users file; statements decided by binlogd's tables-info events."""
    users = harness_dir / "users"
    users.write_text("root:''\n" + f"filtered:'' GRANT REPLICATION SLAVE {' '.join(USER_RULES)}\n")
    primary = binlogd.standalone(["--binlog-with-tables-info", "--users", str(users)])
    a = mariadb.replica("a", 2, *(f"--{r}" for r in USER_RULES))
    b = mariadb.replica("b", 3)
    for r in (a, b):
        run(r, DATABASES[:2])
    a.change_master_to(primary)
    b.change_master(primary.host, primary.port, user="filtered")
    b.start_slave()
    run(primary, STANDALONE)  # type: ignore[arg-type]
    a.wait_caught_up(primary, timeout=60)
    b.wait_caught_up(primary, timeout=60)
    want = tables(a)
    assert want["db1.t1"] and "db2.t1" not in want and "db1.t2" not in want
    assert tables(b) == want
    assert b.gtid_slave_pos() == a.gtid_slave_pos()
    (conn,) = [c for c in primary.connections() if c.server_id == 3]
    assert {r.why for r in conn.runs} >= {"replicate-wild-ignore-table", "replicate-ignore-table"}


def _query_texts(events: list[bytes]) -> list[bytes]:
    """The statement text of every QUERY event received (CRC32 stream)."""
    out = []
    for ev in events:
        if ev[4] == 2:
            status_len = int.from_bytes(ev[19 + 11:19 + 13], "little")
            db_len = ev[19 + 8]
            out.append(ev[19 + 13 + status_len + db_len + 1:-4])
    return out


def _positions_continuous(events: list[bytes]) -> bool:
    """Every event after the FDE ends where the one before it ended plus its own length (no hole)."""
    prev = None
    for ev in events[2:]:  # after the fake ROTATE and the FDE
        log_pos, length = int.from_bytes(ev[13:17], "little"), len(ev)
        if prev is not None and log_pos != prev + length:
            return False
        prev = log_pos
    return True


@pytest.mark.parametrize("capability", [0, 2, 4])
def test_cdc_session_filters(binlogd: Any, mariadb: Any, capability: int) -> None:
    """SET @binlogd_replicate_do_table before COM_BINLOG_DUMP: rejected statements are holes (capability >= 2) or
    same-length dummies (below 2, and for a GTID client the statement of a standalone DDL group); transaction
    keywords stay; a bad value is MariaDB's own 1210 at SET time."""
    from tests.dumpclient import raw_dump

    primary = binlogd.standalone(["--binlog-with-tables-info"])
    run(primary, STANDALONE)  # type: ignore[arg-type]
    stmts = ["SET @master_binlog_checksum=@@global.binlog_checksum", f"SET @mariadb_slave_capability={capability}",
             "SET @binlogd_replicate_do_table='db1.t1'"]
    cmd = b"\x12" + (4).to_bytes(4, "little") + (1).to_bytes(2, "little") + (50 + capability).to_bytes(4, "little")
    got = raw_dump(primary.host, primary.port, stmts, cmd + b"mysql-bin.000001")
    assert got.end == "EOF", got.error
    texts = _query_texts(got.events)
    kept = [t for t in texts if b"INSERT" in t or b"UPDATE" in t or b"DELETE" in t or b"CREATE TABLE" in t]
    assert kept == [b"CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))", b"INSERT INTO t1 VALUES (1, 'a'), (2, 'b')",
                    b"INSERT INTO t1 VALUES (3, 'trx')", b"INSERT INTO db1.t1 VALUES (4, 'cross')",
                    b"UPDATE t1 SET v = CONCAT(v, '+') WHERE id < 3"]
    dummies = sum(t.startswith(b"# Dummy event") for t in texts)
    assert texts.count(b"COMMIT") + texts.count(b"BEGIN") > 0 or capability == 4
    assert _positions_continuous(got.events) == (capability < 2)
    if capability < 2:
        assert dummies > 0
    elif capability == 4:  # the DDL groups' statements (CREATE TABLE db1.t2, db2.t1, db2.late): GTID + dummy
        assert dummies == 3
    else:
        assert dummies == 0
    # a bad value: binlogd answers what a real MariaDB answers for the same rule value
    real = mariadb("real", 7)
    with pytest.raises(pymysql.MySQLError) as mine:
        run(primary, ["SET @binlogd_replicate_do_table='nodot'"])  # type: ignore[arg-type]
    with pytest.raises(pymysql.MySQLError) as theirs:
        run(real, ["SET GLOBAL replicate_do_table='nodot'"])
    assert mine.value.args == theirs.value.args == (1210, "Incorrect arguments to SET")
