"""Unit tests of the standalone schema catalogue (server/standalone/schema.py): what it must not refuse (a false
refusal is worse than a replica error), the snapshot round trip, and the replay that rebuilds it at start.

Error codes and texts are compared with a real MariaDB 10.11 in tests/test_standalone_schema.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from binlogd.server.sql_surface import SqlError
from binlogd.server.standalone.classify import classify
from binlogd.server.standalone.schema import Catalogue, SchemaStore, apply_statement, replay

DDL = ["CREATE DATABASE d",
       "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10), ts TIMESTAMP NOT NULL, n INT NOT NULL DEFAULT 0)",
       "CREATE TABLE d.s (id SERIAL, g INT AS (id + 1), a INT NOT NULL AUTO_INCREMENT UNIQUE)",
       "CREATE TABLE d.sel AS SELECT 1 AS a"]


def catalogue() -> Catalogue:
    cat = Catalogue()
    for sql in DDL:
        apply_statement(cat, classify(sql, None), None)
    return cat


def check(cat: Catalogue, sql: str, db: str | None = "d") -> None:
    stmt = classify(sql, db)
    if stmt.plan is not None:
        cat.check_dml(stmt.plan, db, True)


ACCEPTED = [
    "UPDATE t SET v=DEFAULT", 'UPDATE t SET v="str" WHERE v="x"', "UPDATE t SET v=CURRENT_TIMESTAMP",
    "UPDATE t SET n=n+1 WHERE id IN (SELECT id FROM d.t)", "DELETE FROM t WHERE v IS NULL AND id BETWEEN 1 AND 3",
    "UPDATE t SET v=CONCAT(v,'x') WHERE `id`=1", "UPDATE d.t SET d.t.v=1", "UPDATE t SET t.v=1",
    "DELETE t FROM t WHERE id=1", "DELETE a FROM t AS a WHERE a.id=1", "UPDATE t SET v=1 LIMIT 1",
    "INSERT INTO t (id) VALUES (1)",  # a NOT NULL TIMESTAMP: not checked (its implicit defaults vary)
    "INSERT INTO t (id,ts) VALUES (1,NOW()) ON DUPLICATE KEY UPDATE v=VALUES(v)",
    "INSERT INTO t (id,ts) SELECT id, ts FROM d.t", "INSERT INTO t SELECT * FROM d.t",
    "UPDATE t SET v = IF(n > 0, 'a', 'b')", "DELETE FROM t WHERE ts < NOW() - INTERVAL 1 DAY",
    "WITH x AS (SELECT 1) UPDATE t SET v=1", "INSERT t (id,ts) VALUES (1,2)", "INSERT INTO t (id, ts) VALUE (1, 2)",
    "INSERT INTO s () VALUES ()", "INSERT INTO s (id) VALUES (NULL)",  # SERIAL / AUTO_INCREMENT take NULL
    "INSERT INTO sel VALUES (1, 2, 3)", "UPDATE sel SET nothing_known=1",  # CREATE ... SELECT: columns unknown
    "INSERT INTO mysql.anything VALUES (1)",  # system databases are not modelled
    "REPLACE INTO t (id, ts) VALUES (1, 2)",
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_not_refused(sql: str) -> None:
    check(catalogue(), sql)


@pytest.mark.parametrize(("sql", "code"), [
    ("INSERT INTO t (v) VALUES ('a')", 1364), ("INSERT INTO s (g, id, a) VALUES (1, 2)", 1136),
    ("UPDATE t SET v=`DEFAULT`", 1054), ("INSERT INTO nope VALUES (1)", 1146),
    ("DELETE a FROM nope AS a", 1146), ("INSERT INTO t SELECT * FROM d.nope", 1146),
])
def test_refused(sql: str, code: int) -> None:
    with pytest.raises(SqlError) as e:
        check(catalogue(), sql)
    assert e.value.code == code


def test_refused_ddl_changes_nothing() -> None:
    cat = catalogue()
    before = cat.to_json()
    for sql in ["ALTER TABLE d.t ADD COLUMN z INT, DROP COLUMN nope", "RENAME TABLE d.t TO d.t2, d.nope TO d.x",
                "DROP TABLE d.t, d.nope", "ALTER TABLE d.t ADD COLUMN z INT, ADD COLUMN Z INT"]:
        with pytest.raises(SqlError):
            apply_statement(cat, classify(sql, None), None)
        assert cat.to_json() == before, sql


def test_snapshot_round_trip_and_replay(tmp_path: Path) -> None:
    cat = catalogue()
    store = SchemaStore(tmp_path, "mysql-bin")
    assert store.load()[0] is None
    store.save("mysql-bin.000002", cat)
    name, loaded = store.load()
    assert name == "mysql-bin.000002" and loaded.to_json() == cat.to_json()
    rebuilt = Catalogue()
    n = replay(rebuilt, [(sql, None) for sql in DDL] + [("INSERT INTO t VALUES (1)", "d"),
                                                         ("CREATE TABLE t (a INT)", "d")])  # 1050: skipped
    assert n == len(DDL) + 1
    assert rebuilt.to_json() == cat.to_json()
    (tmp_path / "mysql-bin.schema").write_text("{not json")
    assert store.load()[0] is None  # unreadable: rebuilt from the binlog
