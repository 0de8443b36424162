"""The standalone primary's schema catalogue against a real MariaDB 10.11 whose tables are BLACKHOLE.

The same statements go to binlogd and to a real 10.11 (default engine BLACKHOLE, default strict sql_mode,
utf8mb4 like binlogd's @@collation_server): every answer (OK, or error number and text) and every SHOW /
DESCRIBE / information_schema result must be the same, a refused statement writes nothing to binlogd's binlog, and
a real replica of binlogd applies everything binlogd accepted without stopping (the issue: an INSERT that leaves a
NOT NULL column without a default used to be logged and stopped every replica with 1364).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import QUERY_EVENT
from binlogd.protocol.events import parse_event

ENGINE_ARGS = ("--default-storage-engine=BLACKHOLE", "--plugin-load-add=ha_blackhole",
               "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci")


def connect(server: Any, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True, **kw)


def answer(conn: Any, sql: str) -> tuple[Any, ...]:
    """('ok', column names, rows, warnings) or ('error', code, message)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            names = [d[0] for d in cur.description] if cur.description else None
            rows = list(cur.fetchall())
            cur.execute("SHOW WARNINGS")
            notes = [tuple(r) for r in cur.fetchall()]
        return "ok", names, rows, notes
    except pymysql.MySQLError as e:
        return "error", int(e.args[0]), str(e.args[1])


def logged_queries(datadir: Path) -> list[str]:
    out = []
    for f in sorted(datadir.glob("mysql-bin.[0-9]*")):
        data = f.read_bytes()
        for ev in scan(data).events:
            if ev.type_code == QUERY_EVENT:
                out.append(parse_event(data[ev.pos : ev.end], 1).body.query.decode())
    return out


def same(a: Any, b: Any, sql: str) -> tuple[Any, ...]:
    """binlogd's answer, once it is the real server's (else the first differing row in the failure)."""
    mine, theirs = answer(a, sql), answer(b, sql)
    if mine != theirs:
        rows = [(x, y) for x, y in zip(mine[2], theirs[2], strict=False) if x != y] if mine[0] == theirs[0] == "ok" \
            else []
        raise AssertionError(f"{sql}\n binlogd: {mine if not rows else rows[0][0]}\n mariadb: "
                             f"{theirs if not rows else rows[0][1]}")
    return mine


SCHEMA = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(10))",
    "CREATE TABLE shop.k (id INT NOT NULL AUTO_INCREMENT, a VARCHAR(20) NOT NULL DEFAULT 'x', b INT UNSIGNED, "
    "c DECIMAL(10,2) DEFAULT 1.5, d DATETIME, e TEXT, f BIGINT NOT NULL, g CHAR(3), h TINYINT(1) DEFAULT 0, "
    "i DOUBLE, j ENUM('a','b') DEFAULT 'a', k TIMESTAMP NULL, PRIMARY KEY (id), UNIQUE KEY (f), KEY idx (a, b), "
    "KEY (g))",
    "CREATE DATABASE other COLLATE latin1_bin",
    "CREATE TABLE other.c (a VARCHAR(5), b VARCHAR(5) CHARACTER SET latin1, c TEXT COLLATE utf8mb4_bin, "
    "d CHAR(2) CHARACTER SET utf8mb4) DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE other.d (a VARCHAR(5))",
]

# statement -> both servers must answer the same (OK or the same error number and text)
STATEMENTS = [
    "INSERT INTO shop.t (v) VALUES ('auto')",  # the issue: id has no default (1364)
    "INSERT INTO shop.t (v) VALUES ('auto'),('b')",
    "INSERT INTO shop.t VALUES (1)",  # 1136
    "INSERT INTO shop.t VALUES (1,'a'),(2)",  # 1136 at row 2
    "INSERT INTO shop.t (v) VALUES ('a'),('b','c')",
    "INSERT INTO shop.t (id, x) VALUES (1,2)",  # 1054 in 'INSERT INTO'
    "REPLACE INTO shop.t (id, x) VALUES (1,2)",
    "INSERT INTO shop.t (id, id) VALUES (1,2)",  # 1110
    "INSERT INTO shop.t VALUES (NULL,'a')",  # 1048
    "INSERT INTO shop.t VALUES (DEFAULT,'a')",
    "INSERT INTO shop.t VALUES ()",
    "INSERT INTO shop.t SET v='x'",
    "INSERT INTO shop.nope VALUES (1)",  # 1146
    "INSERT INTO nodb.nope VALUES (1)",
    "INSERT INTO shop.t SELECT 1",
    "INSERT INTO shop.t (id) SELECT 1, 2",
    "UPDATE shop.t SET w=1",  # 1054 in 'SET'
    "UPDATE shop.t SET v=zz",
    "UPDATE shop.t SET v=1 WHERE z=2",  # 1054 in 'WHERE'
    "UPDATE shop.t SET v=1 ORDER BY z",
    "UPDATE shop.t AS a SET a.v=1 WHERE b.id=2",
    "DELETE FROM shop.t WHERE z=1",
    "DELETE FROM shop.t ORDER BY z",
    "DELETE FROM shop.nope",
    "CREATE TABLE shop.t (a INT)",  # 1050
    "CREATE TABLE IF NOT EXISTS shop.t (a INT)",  # OK with Note 1050 (and logged)
    "CREATE TABLE nodb.t (a INT)",  # 1049
    "CREATE TABLE shop.u (a INT, A INT)",  # 1060
    "CREATE DATABASE shop",  # 1007
    "CREATE DATABASE IF NOT EXISTS shop",
    "DROP TABLE shop.x",  # 1051
    "DROP TABLE shop.x, shop.y",
    "DROP TABLE IF EXISTS shop.x",
    "DROP DATABASE nope",  # 1008
    "DROP DATABASE IF EXISTS nope",
    "ALTER TABLE shop.t DROP COLUMN zz",  # 1091
    "ALTER TABLE shop.t ADD COLUMN v INT",  # 1060
    "ALTER TABLE shop.t MODIFY zz INT",  # 1054 in 't'
    "ALTER TABLE shop.t CHANGE zz yy INT",
    "ALTER TABLE shop.nope ADD c INT",
    "RENAME TABLE shop.nope TO shop.n2",
    "RENAME TABLE shop.t TO nodb.t",
    "TRUNCATE shop.nope",
    "USE nodb",
    # accepted ones
    "INSERT INTO shop.t VALUES (1,'a'),(2,'b')",
    "INSERT INTO shop.t (id, v) VALUES (3, DEFAULT)",
    "INSERT INTO shop.k (f) VALUES (1)",
    "UPDATE shop.t SET v='x' WHERE id=1 ORDER BY v",
    "DELETE FROM shop.t WHERE id=2",
    "ALTER TABLE shop.t ADD COLUMN n INT NOT NULL AFTER id",
    "INSERT INTO shop.t (id, v) VALUES (4, 'a')",  # now n has no default
    "INSERT INTO shop.t (id, n) VALUES (4, 1)",
    "ALTER TABLE shop.t CHANGE n m BIGINT NOT NULL DEFAULT 7",
    "INSERT INTO shop.t (id) VALUES (5)",
    "CREATE TABLE shop.l LIKE shop.t",
    "INSERT INTO shop.l (v) VALUES ('x')",
    "RENAME TABLE shop.l TO shop.l2",
    "INSERT INTO shop.l VALUES (1, 2, 'x')",
    "INSERT INTO shop.l2 VALUES (1, 2, 'x')",
    "TRUNCATE shop.l2",
    "DROP TABLE shop.l2",
    "INSERT INTO shop.l2 VALUES (1, 2, 'x')",
    "USE shop",
    "INSERT INTO t (v) VALUES ('auto')",
    "INSERT INTO t VALUES (6, 1, 'y')",
]


def test_refusals_and_acceptances_match_real_mariadb(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    datadir = harness_dir / "data"
    ours = binlogd(["--datadir", str(datadir), "--no-ledger"])
    real = mariadb("real", 2, *ENGINE_ARGS)
    a, b = connect(ours), connect(real)
    for sql in SCHEMA:
        same(a, b, sql)
    accepted = list(SCHEMA)
    for sql in STATEMENTS:
        mine = same(a, b, sql)
        if mine[0] == "ok" and not sql.startswith("USE"):
            accepted.append(sql)
    # a refused statement wrote nothing; every accepted one is in the binlog, in order
    assert logged_queries(datadir) == accepted


VIEWS = [
    "SHOW TABLES FROM shop",
    "SHOW FULL TABLES FROM shop",
    "SHOW TABLES FROM shop LIKE 'k%'",
    "SHOW TABLES FROM nodb",
    "SHOW TABLES",
    "SHOW CREATE TABLE shop.k",
    "SHOW CREATE TABLE shop.t",
    "SHOW CREATE TABLE shop.nope",
    "DESCRIBE shop.k",
    "DESC shop.t",
    "DESCRIBE shop.nope",
    "SHOW COLUMNS FROM k FROM shop",
    "SHOW COLUMNS FROM shop.k LIKE '%d'",
    "SHOW FIELDS IN t IN shop",
    "SHOW CREATE DATABASE shop",
    "SHOW CREATE DATABASE other",
    "SHOW CREATE TABLE other.c",
    "SHOW CREATE TABLE other.d",
    "SHOW CREATE DATABASE nodb",
    "SELECT * FROM information_schema.SCHEMATA WHERE schema_name = 'shop'",
    "SELECT table_schema, table_name, table_type, engine, table_collation FROM information_schema.TABLES "
    "WHERE table_schema = 'shop' ORDER BY table_name",
    "SELECT table_name, column_name, ordinal_position, column_default, is_nullable, data_type, "
    "character_maximum_length, character_octet_length, numeric_precision, numeric_scale, datetime_precision, "
    "character_set_name, collation_name, column_type, column_key, extra FROM information_schema.COLUMNS "
    "WHERE table_schema IN ('shop', 'other') ORDER BY table_schema, table_name, ordinal_position",
    "SELECT * FROM shop.t",
    "SELECT id, v AS w FROM shop.t WHERE id = 1 ORDER BY w",
    "SELECT t.id FROM shop.t",
    "SELECT x.id FROM shop.t",
    "SELECT x FROM shop.t",
    "SELECT * FROM shop.t WHERE z = 1",
    "SELECT * FROM shop.t ORDER BY q",
    "SELECT * FROM shop.nope",
    # after ALTERs the catalogue models
    "ALTER TABLE shop.t ADD COLUMN n INT NOT NULL DEFAULT 3 AFTER id, ADD COLUMN z DATE FIRST",
    "SHOW CREATE TABLE shop.t",
    "ALTER TABLE shop.t MODIFY v VARCHAR(20) NOT NULL, CHANGE n m BIGINT UNSIGNED",
    "SHOW CREATE TABLE shop.t",
    "DESCRIBE shop.t",
    "ALTER TABLE shop.t DROP COLUMN z, ADD UNIQUE KEY uv (v), ADD KEY (m)",
    "SHOW CREATE TABLE shop.t",
    "ALTER TABLE shop.t DROP PRIMARY KEY",
    "SHOW CREATE TABLE shop.t",
    "ALTER TABLE shop.t ALTER COLUMN m SET DEFAULT 5",
    "DESCRIBE shop.t",
    "RENAME TABLE shop.t TO other.t",
    "SHOW TABLES FROM other",
    "ALTER TABLE other.t RENAME TO shop.t2",
    "SHOW TABLES FROM shop",
    "CREATE TABLE shop.t3 LIKE shop.t2",
    "SHOW CREATE TABLE shop.t3",
]


def test_schema_views_match_real_mariadb(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    ours = binlogd(["--datadir", str(harness_dir / "data"), "--no-ledger"])
    real = mariadb("real", 2, *ENGINE_ARGS)
    a, b = connect(ours), connect(real)
    for sql in SCHEMA:
        same(a, b, sql)
    for sql in VIEWS:
        same(a, b, sql)
    # SHOW DATABASES: the real server also has its system databases, binlogd has none of them
    system = {"mysql", "performance_schema", "sys"}
    mine, theirs = answer(a, "SHOW DATABASES"), answer(b, "SHOW DATABASES")
    assert mine[:2] == theirs[:2]
    assert mine[2] == [r for r in theirs[2] if r[0] not in system] == [("information_schema",), ("other",), ("shop",)]
    with a.cursor() as cur, b.cursor() as cur2:  # an empty result set, with the table's columns
        cur.execute("SELECT * FROM shop.k")
        cur2.execute("SELECT * FROM shop.k")
        assert [d[:2] for d in cur.description] == [d[:2] for d in cur2.description]  # names and type codes
        assert cur.fetchall() == cur2.fetchall() == ()


def test_refusal_inside_a_transaction_as_mariadb(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    """A refused DML statement leaves the open transaction as it was; a refused DDL statement has already
    committed it (MariaDB's implicit commit comes before the statement runs). Checked on a real 10.11 with InnoDB
    tables (rows kept or not) and on binlogd's binlog (what was logged)."""
    datadir = harness_dir / "data"
    ours = binlogd(["--datadir", str(datadir), "--no-ledger"])
    real = mariadb("real", 2, "--default-storage-engine=InnoDB")
    a, b = connect(ours), connect(real)
    script = ["CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(10))",
              "BEGIN", "INSERT INTO shop.t VALUES (1, 'a')", "INSERT INTO shop.t (v) VALUES ('x')",
              "INSERT INTO shop.t VALUES (2, 'b')", "ROLLBACK",
              "BEGIN", "INSERT INTO shop.t VALUES (3, 'c')", "INSERT INTO shop.t (v) VALUES ('x')", "COMMIT",
              "BEGIN", "INSERT INTO shop.t VALUES (4, 'd')", "CREATE TABLE shop.t (a INT)", "ROLLBACK"]
    for sql in script:
        assert answer(a, sql)[:2] == answer(b, sql)[:2], sql
    with b.cursor() as cur:
        cur.execute("SELECT id FROM shop.t ORDER BY id")
        assert cur.fetchall() == ((3,), (4,))  # 4: committed by the failed CREATE TABLE
    assert logged_queries(datadir) == [script[0], script[1], "INSERT INTO shop.t VALUES (3, 'c')",
                                       "INSERT INTO shop.t VALUES (4, 'd')"]
