"""The standalone schema survives restart, kill -9 and PURGE BINARY LOGS; read-only modes answer writes with 1290;
a real replica of binlogd applies everything binlogd accepted (no more 1364 stops).

binlogd keeps `<basename>.schema` (the catalogue at the start of a binlog file, rewritten at each new file) and
replays the DDL logged after it at start (server/standalone/schema.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql

from tests.harness import free_port
from tests.test_standalone_schema import ENGINE_ARGS, answer, connect

READ_ONLY = (1290, "The MariaDB server is running with the --read-only option so it cannot execute this statement")


def schema_of(conn: Any) -> list[tuple[Any, ...]]:
    """Every table's SHOW CREATE TABLE, database by database."""
    out: list[tuple[Any, ...]] = []
    with conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        for (db,) in cur.fetchall():
            if db == "information_schema":
                continue
            cur.execute(f"SHOW TABLES FROM `{db}`")
            for (t,) in cur.fetchall():
                cur.execute(f"SHOW CREATE TABLE `{db}`.`{t}`")
                out.append((db, *cur.fetchone()))
    return out


def run(conn: Any, *statements: str) -> None:
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def test_schema_survives_restart_kill9_and_purge(binlogd: Any, harness_dir: Path) -> None:
    datadir = harness_dir / "data"
    port = free_port()
    args = ["--datadir", str(datadir), "--no-ledger", "--max-binlog-size", "4096"]
    first = binlogd(args, port=port)
    c = connect(first)
    run(c, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(10) NOT NULL DEFAULT 'x')",
        "CREATE TABLE shop.gone (a INT)", "CREATE DATABASE other", "CREATE TABLE other.u (a INT NOT NULL)")
    for i in range(40):  # several rotations by size: snapshots at each new file
        run(c, f"INSERT INTO shop.t VALUES ({i}, '{'y' * 9}')")
    run(c, "ALTER TABLE shop.t ADD COLUMN n INT NOT NULL", "DROP TABLE shop.gone", "RENAME TABLE other.u TO shop.u")
    before = schema_of(c)
    assert [r[:2] for r in before] == [("shop", "t"), ("shop", "u")]
    c.close()
    first.stop()

    second = binlogd(args, port=port)  # a clean restart
    c = connect(second)
    assert schema_of(c) == before
    assert answer(c, "INSERT INTO shop.t (id) VALUES (100)") == ("error", 1364, "Field 'n' doesn't have a default "
                                                                            "value")
    run(c, "FLUSH BINARY LOGS")
    with c.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
    run(c, f"PURGE BINARY LOGS TO '{names[-1]}'")  # every file with the DDL is gone
    run(c, "CREATE TABLE shop.after (a INT PRIMARY KEY)")  # in the active file only
    before = schema_of(c)
    c.close()
    second.kill9()

    third = binlogd(args, port=port)
    c = connect(third)
    assert schema_of(c) == before
    assert answer(c, "INSERT INTO shop.after VALUES (1, 2)") == (
        "error", 1136, "Column count doesn't match value count at row 1")
    assert answer(c, "CREATE TABLE shop.after (a INT)") == ("error", 1050, "Table 'after' already exists")
    assert answer(c, "INSERT INTO shop.gone VALUES (1)") == ("error", 1146, "Table 'shop.gone' doesn't exist")
    assert answer(c, "USE other")[0] == "ok"
    assert answer(c, "SHOW TABLES") == ("ok", ["Tables_in_other"], [], [])


def test_read_only_modes_answer_1290_as_mariadb(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    """`--binlog-dir` and relay mode: writes get 1290 (checked against a 10.11 with read_only=1 and a user without
    READ ONLY ADMIN); a syntax error is still 1064 and a table without a database 1046, as there."""
    upstream = mariadb("upstream", 1, "--log-bin=mysql-bin", *ENGINE_ARGS)
    with upstream.connect() as root:
        run(root, "CREATE USER ro@'%'", "GRANT ALL ON *.* TO ro@'%'",
            "REVOKE SUPER, READ_ONLY ADMIN ON *.* FROM ro@'%'", "CREATE DATABASE shop", "CREATE TABLE shop.t (a INT)",
            "SET GLOBAL read_only=1")
    real = pymysql.connect(host=upstream.host, port=upstream.port, user="ro", autocommit=True)
    relay = binlogd(["--upstream", f"mysql://root:@{upstream.host}:{upstream.port}", "--datadir",
                     str(harness_dir / "relay"), "--server-id", "100", "--no-ledger"])
    directory = binlogd(["--binlog-dir", str(upstream.datadir), "--basename", "mysql-bin"])
    statements = ["INSERT INTO shop.t VALUES (1)", "INSERT INTO shop.nope VALUES (1)", "CREATE DATABASE x",
                  "CREATE TABLE shop.z (a INT)", "DROP TABLE shop.t", "UPDATE shop.t SET a=1", "DELETE FROM shop.t",
                  "TRUNCATE shop.t", "RENAME TABLE shop.t TO shop.t3", "ALTER TABLE shop.t ADD q INT",
                  "CREATE VIEW shop.v AS SELECT 1", "CREATE USER u2@localhost", "INSERT INTO t VALUES (1)",
                  "INSERT INTO shop.t VALUES ("]
    for server in (relay, directory):
        c = connect(server)
        for sql in statements:
            mine, theirs = answer(c, sql), answer(real, sql)
            assert mine == theirs, (server, sql, mine, theirs)
        assert answer(c, "INSERT INTO shop.t VALUES (1)")[1:] == READ_ONLY


def test_real_replica_applies_what_binlogd_accepted(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    """The issue's workload: the INSERT without the primary key is refused, so the replica never stops."""
    ours = binlogd(["--datadir", str(harness_dir / "data"), "--no-ledger"])
    replica = mariadb("replica", 20)
    replica.change_master(ours.host, ours.port)
    replica.start_slave()
    c = connect(ours)
    run(c, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO shop.t VALUES (1, 'one')")
    assert answer(c, "INSERT INTO shop.t (v) VALUES ('auto')") == (
        "error", 1364, "Field 'id' doesn't have a default value")
    run(c, "INSERT INTO shop.t VALUES (2, 'two')")
    with c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    replica.wait_slave_pos(file, pos)
    status = replica.slave_status()
    assert status["Slave_SQL_Running"] == "Yes" and status["Last_SQL_Errno"] == 0
    assert replica.query("SELECT id, v FROM shop.t ORDER BY id") == [(1, "one"), (2, "two")]
