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
             "CREATE DATABASE IF NOT EXISTS src", "CREATE DATABASE IF NOT EXISTS dst"]
SETUP = [
    *DATABASES,
    "USE db1", "CREATE TABLE t1 (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
    "CREATE TABLE t2 (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
    "CREATE TABLE x3 (id INT PRIMARY KEY, v VARCHAR(40))",
    "USE db2", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))",
    "USE src", "CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(40))",
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
           "USE src", f"INSERT INTO t1 VALUES ({b + 1}, 'renamed'), ({b + 2}, 'renamed')",
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
    "rewrite-db": ["replicate-rewrite-db=src->dst"],
    "rewrite-and-wild": ["replicate-rewrite-db=src->dst", "replicate-wild-do-table=dst.%",
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


def oracle(mariadb: Any, binlogd: Any, rules: list[str], fmt_args: tuple[str, ...] = ()) -> None:
    primary = mariadb.primary("p", 1, *fmt_args)
    relay = binlogd.relay(primary, [a for r in rules for a in ("--replica-filter", f"3:{r}")])
    a = mariadb.replica("a", 2, *(f"--{r}" for r in rules))
    b = mariadb.replica("b", 3)
    for r in (a, b):  # a wild rule like db1.t% also rejects CREATE DATABASE db1 (MariaDB: "everything touching")
        run(r, DATABASES)
    a.change_master_to(primary)
    b.change_master_to(relay)
    run(primary, WORKLOAD)
    wait_relayed(relay, primary)
    a.wait_caught_up(primary, timeout=60)
    b.wait_caught_up(relay, timeout=60)
    want = tables(a)
    assert tables(primary) != want, "the rule filtered nothing: this test would prove nothing"
    assert tables(b) == want
    assert b.gtid_slave_pos() == a.gtid_slave_pos() == primary.query("SELECT @@gtid_binlog_pos")[0][0]
    # moved back to the real primary with its GTID position: nothing to re-apply, nothing missing
    b.change_master_to(primary)
    b.wait_caught_up(primary, timeout=60)
    st = b.slave_status()
    assert (st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_Errno"]) == ("Yes", "Yes", 0)
    assert tables(b) == want
    # the ledger names each table-filter decision's rule
    whys = {r.why for c in relay.connections() if c.server_id == 3 for r in c.runs}  # type: ignore[attr-defined]
    assert whys & {r.split("=")[0] for r in rules}, whys

@pytest.mark.parametrize("option", list(OPTIONS))
def test_filter_option_matches_a_self_filtering_replica(mariadb: Any, binlogd: Any, option: str) -> None:
    oracle(mariadb, binlogd, OPTIONS[option])
