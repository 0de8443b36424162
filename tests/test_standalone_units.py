"""Pure parts of the standalone primary: statement classification and the event bodies (bytes a real 10.11 wrote).

The end-to-end comparison with a real primary is tests/test_standalone_replicas.py.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from binlogd.protocol.constants import USER_VAR_EVENT
from binlogd.protocol.describe import describe
from binlogd.protocol.events import build_event, parse_user_var
from binlogd.server.sql_surface import DecimalText, SqlError
from binlogd.server.standalone import classify as classify_mod
from binlogd.server.standalone.classify import Kind, classify
from binlogd.server.standalone.logger import decimal_value, user_var_body
from hypothesis import given, settings
from hypothesis import strategies as st

KINDS = [
    ("INSERT INTO d.t VALUES (1)", Kind.DML),
    ("REPLACE d.t SET a=1", Kind.DML),
    ("INSERT LOW_PRIORITY IGNORE INTO d.t VALUES (1)", Kind.DML),
    ("UPDATE d.t SET a=@x", Kind.DML),
    ("DELETE t1 FROM d.t1 t1 JOIN d.t2 t2 ON t1.a=t2.a", Kind.DML),
    ("CREATE TABLE d.t (a INT) ENGINE=InnoDB", Kind.DDL),
    ("CREATE TABLE d.t2 LIKE d.t", Kind.DDL),
    ("ALTER TABLE d.t ADD COLUMN b INT", Kind.DDL),
    ("RENAME TABLE d.a TO d.b, d.c TO d.a", Kind.DDL),
    ("TRUNCATE d.t", Kind.DDL),
    ("DROP INDEX i ON d.t", Kind.DDL),
    ("CREATE DATABASE IF NOT EXISTS `my db`", Kind.DB_DDL),
    ("DROP SCHEMA d", Kind.DB_DDL),
    ("FLUSH BINARY LOGS", Kind.FLUSH_LOGS),
    ("FLUSH LOGS", Kind.FLUSH_LOGS),
    ("PURGE BINARY LOGS TO 'mysql-bin.000002'", Kind.PURGE),
    ("PURGE MASTER LOGS BEFORE '2026-01-01 00:00:00'", Kind.PURGE),
    ("  /* c */ BEGIN", Kind.BEGIN),
    ("START TRANSACTION", Kind.BEGIN),
    ("COMMIT", Kind.COMMIT),
    ("ROLLBACK", Kind.ROLLBACK),
    ("USE `d`", Kind.USE),
    ("SELECT 1", Kind.OTHER),
    ("SET @a=1", Kind.OTHER),
    ("GRANT ALL ON *.* TO x", Kind.OTHER),  # the SQL surface refuses it (1235)
]


@pytest.mark.parametrize(("sql", "kind"), KINDS)
def test_kinds(sql: str, kind: Kind) -> None:
    assert classify(sql, None).kind is kind


REFUSED = [
    ("INSERT INTO t VALUES (1)", None, 1046),
    ("DROP INDEX i ON t", None, 1046),
    ("RENAME TABLE a TO b", None, 1046),
    ("CREATE TEMPORARY TABLE d.t (a INT)", "d", 1235),
    ("DROP TEMPORARY TABLE d.t", "d", 1235),
    ("INSERT INTO d.t VALUES (", None, 1064),
    ("INSERT INTO d.t VALUES (1) garbage", None, 1064),
    ("UPDATE d.t SET", None, 1064),
    ("DELETE d.t", None, 1064),
    ("INSERT INTO d.t SELECT", None, 1064),
    ("FLUSH BINARY LOGS now", None, 1064),
    ("PURGE BINARY LOGS BEFORE NOW()", None, 1235),
]


@pytest.mark.parametrize(("sql", "db", "code"), REFUSED)
def test_refused(sql: str, db: str | None, code: int) -> None:
    with pytest.raises(SqlError) as e:
        classify(sql, db)
    assert e.value.code == code


def test_what_a_statement_reads() -> None:
    s = classify("INSERT INTO t VALUES (@B, '@not_a_var', CONCAT(@a, @b), RAND(), RAND(7), LAST_INSERT_ID(), NOW())",
                 "d")
    assert s.user_vars == ("b", "a") and s.uses_rand and s.uses_last_insert_id and s.uses_clock
    plain = classify("INSERT INTO t VALUES (RAND(7), LAST_INSERT_ID(5), 'NOW()')", "d")
    assert not (plain.uses_rand or plain.uses_last_insert_id or plain.uses_clock or plain.user_vars)
    # same shape, other literals: the cached classification, with the statement's own text
    again = classify("INSERT INTO t VALUES (@B, 'x', CONCAT(@a, @b), RAND(), RAND(8), LAST_INSERT_ID(), NOW())", "d")
    assert again.user_vars == ("b", "a") and again.sql.endswith("NOW())") and "'x'" in again.sql


def test_user_var_bodies_as_mariadb_writes_them() -> None:
    # bytes from a MariaDB 10.11 binlog (binlog_format=STATEMENT): SET @i=42, @u=18446744073709551615, @neg=-7,
    # @f=1.5e0, @d=12.345, @n=NULL, @s='str' (utf8mb4 client)
    assert parse_user_var(user_var_body("i", 42, 45)).value == (42).to_bytes(8, "little")
    assert parse_user_var(user_var_body("i", 42, 45)).charset == 8
    assert parse_user_var(user_var_body("u", 2**64 - 1, 45)).flags == 1
    neg = parse_user_var(user_var_body("neg", -7, 45))
    assert (neg.type, neg.value, neg.flags) == (2, b"\xf9" + b"\xff" * 7, 0)
    f = parse_user_var(user_var_body("f", 1.5, 45))
    assert (f.type, f.charset, f.value, f.flags) == (1, 8, b"\x00\x00\x00\x00\x00\x00\xf8?", None)
    d = parse_user_var(user_var_body("d", DecimalText("12.345"), 45))
    assert (d.type, d.charset, d.value) == (4, 8, b"\x05\x03\x8c\x01Y")
    assert decimal_value("0.5") == b"\x02\x01\x80\x05"
    assert parse_user_var(user_var_body("n", None, 45)).is_null
    s = parse_user_var(user_var_body("s", "str", 45))
    assert (s.type, s.charset, s.value) == (0, 45, b"str")


@given(st.integers(-(10**30), 10**30), st.integers(0, 25))
def test_decimal_user_vars_read_back(digits: int, scale: int) -> None:
    """mariadb-binlog's decoding (protocol/describe.py follows it) reads back every decimal binlogd writes."""
    text = format(Decimal(digits).scaleb(-scale), "f")
    ev = build_event(type_code=USER_VAR_EVENT, body=user_var_body("x", DecimalText(text), 45), checksum=True)
    _, info = describe(ev, 1)
    assert info.startswith("@`x`=")
    assert Decimal(info.removeprefix("@`x`=")) == Decimal(text)


# the shape regex as it was before its branches shared a leading character class (server/standalone/classify.py)
_PLAIN_LITERAL = re.compile(r"(`(?:[^`]|``)*`)|'(?:[^'\\]|\\[\s\S]|'')*'|\"(?:[^\"\\]|\\[\s\S]|\"\")*\"|"
                            r"(?<![\w$@.])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
                            r"(?![\w$])")


def _plain_shape(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    return "'?'" if m.group(0)[0] in "'\"" else "0"


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet="`'\"\\0123456789.xXeE+-abc_$@ é\n,()=;#/*", max_size=40))
def test_statement_shapes_equal_the_plain_alternations(text: str) -> None:
    assert classify_mod._LITERAL.sub(classify_mod._shape_of, text) == _PLAIN_LITERAL.sub(_plain_shape, text)
    if "`" not in text:  # the callback-free two passes: the same shape, with their markers for the literals
        two = classify_mod._NUMBER.sub("\x02", classify_mod._STRING.sub("\x01", text))
        assert two.replace("\x01", "'?'").replace("\x02", "0") == _PLAIN_LITERAL.sub(_plain_shape, text)


def test_names_that_look_like_literals_are_not_shaped_alike() -> None:
    """@1, @'a' and t.1e5 are names: statements that differ only there must not share a shape (their user
    variables, columns differ)."""
    pairs = [("INSERT INTO t VALUES (@1)", "INSERT INTO t VALUES (@2)"),
             ("INSERT INTO t VALUES (@'a')", "INSERT INTO t VALUES (@'b')"),
             ("UPDATE t SET t.1e5 = 1", "UPDATE t SET t.2e5 = 1"),
             ("INSERT INTO `t` VALUES (@1)", "INSERT INTO `t` VALUES (@2)")]
    for a, b in pairs:
        key_a, key_b = classify_mod._shape_key(a, "d"), classify_mod._shape_key(b, "d")
        assert key_a is None or key_a != key_b, (a, b)
    assert classify_mod.classify("INSERT INTO t VALUES (@'a')", "d").user_vars == ("a",)
    assert classify_mod.classify("INSERT INTO t VALUES (@'b')", "d").user_vars == ("b",)
    assert classify_mod.classify("INSERT INTO t VALUES (@2)", "d").user_vars == ("2",)
