"""Tables-info (seed WL#40 + WL#4033), the pure parts: which tables a statement touches, the event codec,
its FDE declaration, SHOW BINLOG EVENTS text and the per-connection decision for it.

The live parts (real replica, mariadb-binlog, raw dumps, the mariadb CLI) are in test_tables_info_live.py.
"""

from __future__ import annotations

import itertools

import pytest
from binlogd.protocol.checksum import event_crc
from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    CRC_LEN,
    HEADER_LEN,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_TYPES,
    QUERY_EVENT,
    USER_VAR_EVENT,
)
from binlogd.protocol.decision import Action, Compat, DecisionTable, ReplicaPolicy, decide
from binlogd.protocol.describe import describe
from binlogd.protocol.events import (
    MARIADB_10_11_POST_HEADER_LENGTHS,
    EventDecodeError,
    FormatDescriptionBody,
    UnknownBody,
    build_event,
    encode_format_description,
    parse_event,
    parse_format_description,
    parse_header,
)
from binlogd.protocol.rewrite import dummy_event
from binlogd.protocol.tables_info import (
    _TABLES_INFO,
    TABLES_INFO_EVENT,
    TABLES_INFO_HEADER_LEN,
    TablesInfoBody,
    TablesInfoError,
    _fast_simple_dml,
    declare_in_fde,
    encode_tables_info,
    parse_tables_info,
    tables_info_event,
    tables_info_hook,
    tables_of_statement,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# --- tables_of_statement: the seed's examples and the DML forms -------------------------------------------

CASES: list[tuple[str, str | None, list[tuple[str | None, str]]]] = [
    # RENAME chains: the temporary name renamed away again is not listed (the seed's example)
    ("RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2", "db", [("db", "t1"), ("db", "t2")]),
    ("RENAME TABLE t1 TO t2", "db", [("db", "t1"), ("db", "t2")]),
    ("RENAME TABLE a TO b, b TO c", "db", [("db", "a"), ("db", "c")]),
    ("rename tables IF EXISTS x.a WAIT 2 TO y.b, `c d` NOWAIT TO e", "db",
     [("x", "a"), ("db", "c d"), ("y", "b"), ("db", "e")]),
    # CREATE TABLE ... LIKE / ... SELECT: target and sources
    ("CREATE TABLE t2 LIKE t1", "db", [("db", "t2"), ("db", "t1")]),
    ("CREATE TABLE IF NOT EXISTS o.t2 LIKE i.t1", "db", [("o", "t2"), ("i", "t1")]),
    ("CREATE TABLE t3 SELECT a.x FROM t1 AS a JOIN other.t2 b ON a.x = b.x", "db",
     [("db", "t3"), ("db", "t1"), ("other", "t2")]),
    ("CREATE TABLE t3 (x INT) ENGINE=InnoDB SELECT x FROM t1", "db", [("db", "t3"), ("db", "t1")]),
    ("CREATE TABLE t1 (a INT PRIMARY KEY, b VARCHAR(10))", "db", [("db", "t1")]),
    ("CREATE TEMPORARY TABLE tt (a INT)", "db", [("db", "tt")]),
    # DML with joins and subqueries, multi-table UPDATE / DELETE
    ("INSERT INTO t1 (a) SELECT a FROM t2 WHERE a > (SELECT MAX(a) FROM d3.t3)", "db",
     [("db", "t1"), ("db", "t2"), ("d3", "t3")]),
    ("INSERT INTO t1 VALUES (1, RAND(), @v) ON DUPLICATE KEY UPDATE b = b + 1", "db", [("db", "t1")]),
    ("INSERT INTO t1 SET a = 1", None, [(None, "t1")]),
    ("REPLACE INTO t1 SELECT * FROM t2", "db", [("db", "t1"), ("db", "t2")]),
    ("REPLACE t1 VALUES (1)", "db", [("db", "t1")]),
    ("REPLACE LOW_PRIORITY INTO t1 SELECT * FROM t2", "db", [("db", "t1"), ("db", "t2")]),
    ("INSERT HIGH_PRIORITY IGNORE t1 (a) VALUES (1)", "db", [("db", "t1")]),
    ("UPDATE LOW_PRIORITY IGNORE o.t SET a = 1 ORDER BY id LIMIT 3", "db", [("o", "t")]),
    ("DELETE QUICK IGNORE FROM t1 WHERE a = 1", "db", [("db", "t1")]),
    ("UPDATE t1 JOIN t2 ON t1.a = t2.a SET t1.b = t2.b WHERE t2.c IN (SELECT c FROM t3)", "db",
     [("db", "t1"), ("db", "t2"), ("db", "t3")]),
    ("UPDATE t2, o.t1 SET t1.b = t2.b", "db", [("db", "t2"), ("o", "t1")]),
    ("UPDATE t1 SET a = (SELECT b FROM t2 WHERE t2.id = t1.id)", "db", [("db", "t1"), ("db", "t2")]),
    ("DELETE t1, t2 FROM t1 JOIN t2 ON t1.a = t2.a", "db", [("db", "t1"), ("db", "t2")]),
    ("DELETE a FROM t1 AS a JOIN t2 AS b ON a.x = b.x", "db", [("db", "t1"), ("db", "t2")]),
    ("DELETE FROM t1 USING t1, t2 WHERE t1.a = t2.a", "db", [("db", "t1"), ("db", "t2")]),
    ("DELETE FROM t1 WHERE a IN (SELECT a FROM t9) ORDER BY a LIMIT 2", "db", [("db", "t1"), ("db", "t9")]),
    ("WITH c AS (SELECT * FROM t2) INSERT INTO t1 SELECT * FROM c", "db", [("db", "t2"), ("db", "t1")]),
    # DROP TABLE lists, ALTER ... RENAME, TRUNCATE, indexes, views
    ("DROP TABLE IF EXISTS t1, o.t2, t3", "db", [("db", "t1"), ("o", "t2"), ("db", "t3")]),
    ("DROP TEMPORARY TABLE tt", "db", [("db", "tt")]),
    ("ALTER TABLE t1 RENAME TO o.t9", "db", [("db", "t1"), ("o", "t9")]),
    ("ALTER TABLE t1 ADD COLUMN c INT, RENAME t9", "db", [("db", "t1"), ("db", "t9")]),
    ("ALTER TABLE o.t1 ADD INDEX (a)", "db", [("o", "t1")]),
    ("TRUNCATE TABLE t1", "db", [("db", "t1")]),
    ("CREATE INDEX i ON t1 (a)", "db", [("db", "t1")]),
    ("DROP INDEX i ON o.t1", "db", [("o", "t1")]),
    ("CREATE VIEW v AS SELECT * FROM t1", "db", [("db", "v"), ("db", "t1")]),
    ("CREATE TABLE c (id INT, p INT, FOREIGN KEY (p) REFERENCES parent (id))", "db", [("db", "c")]),
    ("ALTER TABLE c ADD FOREIGN KEY (p) REFERENCES o.parent (id)", "db", [("db", "c")]),
    # quoting, duplicates, no tables
    ("INSERT INTO `my db`.`t``x` VALUES (1)", "db", [("my db", "t`x")]),
    ("INSERT INTO t1 SELECT * FROM t1 JOIN db.t1 x", "db", [("db", "t1")]),
    ("CREATE DATABASE d2", "db", []),
    ("DROP DATABASE IF EXISTS d2", "db", []),
    ("BEGIN", "db", []),
    ("SET @a = 1", "db", []),
]


@pytest.mark.parametrize(("sql", "default_db", "want"), CASES, ids=[c[0][:60] for c in CASES])
def test_tables_of_statement(sql: str, default_db: str | None, want: list[tuple[str | None, str]]) -> None:
    assert tables_of_statement(sql, default_db) == want


@pytest.mark.parametrize("sql", ["", "   ;", "INSERT INTO", "SELECT 1; SELECT 2", "RENAME TABLE a",
                                 "RENAME TABLE a TO", "RENAME USER a TO b", "RENAME TABLE a.b.c TO d",
                                 "RENAME TABLE a TO b c TO d"])
def test_unparseable_statements_raise(sql: str) -> None:
    with pytest.raises(TablesInfoError):
        tables_of_statement(sql, "db")


# --- the codec ----------------------------------------------------------------------------------------------

names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda s: len(s.encode()) <= 255)
table_lists = st.lists(st.tuples(st.one_of(st.none(), names), names), max_size=12)


@settings(max_examples=300, deadline=None, database=None)
@given(tables=table_lists, default_db=st.one_of(st.none(), names), checksum=st.booleans(),
       flags=st.sampled_from([0, 0x8000]))
def test_codec_round_trip(tables: list[tuple[str | None, str]], default_db: str | None, checksum: bool,
                          flags: int) -> None:
    ev = tables_info_event(tables, default_db, checksum=checksum, server_id=7, timestamp=5, log_pos=999,
                           flags=flags)
    h = parse_header(ev)
    assert (h.type_code, h.server_id, h.timestamp, h.log_pos, h.event_length) == (
        TABLES_INFO_EVENT, 7, 5, 999, len(ev))
    assert h.flags == flags | LOG_EVENT_IGNORABLE_F
    body = ev[HEADER_LEN : len(ev) - (CRC_LEN if checksum else 0)]
    if checksum:
        assert int.from_bytes(ev[-CRC_LEN:], "little") == event_crc(ev[:-CRC_LEN])
    got = parse_tables_info(body)
    assert got.default_db == default_db
    assert got.tables == tuple((db if db is not None else default_db, t) for db, t in tables)
    assert got.relative == tuple((None if db is None or db == default_db else db, t) for db, t in tables)
    # parse_event does not know the type: it reports it as an unknown ignorable body, untouched
    parsed = parse_event(ev, BINLOG_CHECKSUM_ALG_CRC32 if checksum else BINLOG_CHECKSUM_ALG_OFF, verify_crc=True)
    assert parsed.body == UnknownBody(TABLES_INFO_EVENT, body, True)
    # every event can become a same-length dummy for capability < 2 (25 data bytes at least)
    assert len(body) + HEADER_LEN >= 25
    dummy = dummy_event(ev, checksum)
    assert len(dummy) == len(ev) and dummy[4] in (QUERY_EVENT, USER_VAR_EVENT)


def test_layout_and_default_db_as_length_zero() -> None:
    body = encode_tables_info([("db", "t1"), ("other", "t2"), (None, "t3")], "db")
    assert body == (
        bytes([1, 0]) + (3).to_bytes(4, "little")  # version, flags, count
        + b"\x02db"  # the default database
        + b"\x00\x02t1" + b"\x05other\x02t2" + b"\x00\x02t3"  # db_len 0 = the default database
    )
    assert parse_tables_info(body) == TablesInfoBody("db", (("db", "t1"), ("other", "t2"), ("db", "t3")),
                                                     relative=((None, "t1"), ("other", "t2"), (None, "t3")))
    assert len(bytes([1, 0]) + (3).to_bytes(4, "little")) == TABLES_INFO_HEADER_LEN


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=80))
def test_parse_garbage_raises_only_decode_error(data: bytes) -> None:
    try:
        got = parse_tables_info(data)
    except EventDecodeError:
        return
    assert len(got.tables) == int.from_bytes(data[2:6], "little")


@pytest.mark.parametrize("bad", [b"", b"\x01\x00\x01\x00\x00\x00\x00", b"\x02\x00\x00\x00\x00\x00\x00",
                                 b"\x01\x00\x00\x00\x00\x00\x00extra", b"\x01\x00\x01\x00\x00\x00\x00\x00\x02\xff\xfe"])
def test_parse_rejects(bad: bytes) -> None:
    with pytest.raises(EventDecodeError):
        parse_tables_info(bad)


def test_encode_rejects_bad_names() -> None:
    for tables in ([("db", "")], [("", "t")], [("db", "x" * 256)]):
        with pytest.raises(ValueError):
            encode_tables_info(tables, "db")


def test_fde_declares_the_type() -> None:
    """The type is inside the FDE's array (MariaDB rejects types beyond it) and has its post-header length."""
    assert TABLES_INFO_EVENT <= LOG_EVENT_TYPES
    assert MARIADB_10_11_POST_HEADER_LENGTHS[TABLES_INFO_EVENT - 1] == 0  # MariaDB leaves the slot empty
    fde = FormatDescriptionBody.mariadb_10_11("10.11.99-binlogd-log")
    declared = declare_in_fde(fde)
    lengths = declared.post_header_lengths
    assert len(lengths) == len(fde.post_header_lengths)
    assert lengths[TABLES_INFO_EVENT - 1] == TABLES_INFO_HEADER_LEN
    assert [i for i in range(len(lengths)) if lengths[i] != fde.post_header_lengths[i]] == [TABLES_INFO_EVENT - 1]
    ev = build_event(type_code=15, body=encode_format_description(declared), checksum=True)
    back = parse_format_description(ev[HEADER_LEN:-CRC_LEN])
    assert back.post_header_lengths[TABLES_INFO_EVENT - 1] == TABLES_INFO_HEADER_LEN
    # a short (MySQL-sized) array is extended up to the type
    short = FormatDescriptionBody(4, "8.0.0", 0, 19, bytes(40), 1)
    assert len(declare_in_fde(short).post_header_lengths) == TABLES_INFO_EVENT


def test_describe_lists_the_tables() -> None:
    ev = tables_info_event([("db", "t1"), ("db", "t2")], "db", checksum=True, server_id=1, log_pos=400)
    assert describe(ev, BINLOG_CHECKSUM_ALG_CRC32) == ("Tables_info", "`db`.`t1`, `db`.`t2`")
    ev = tables_info_event([(None, "t`1")], None, checksum=False, server_id=1)
    assert describe(ev, BINLOG_CHECKSUM_ALG_OFF) == ("Tables_info", "`t``1`")
    ev = tables_info_event([], "db", checksum=True, server_id=1)
    assert describe(ev, BINLOG_CHECKSUM_ALG_CRC32) == ("Tables_info", "")
    # without the ignorable flag the type is nothing MariaDB knows: an invalid event, as MariaDB says
    raw = bytearray(tables_info_event([("db", "t1")], "db", checksum=False, server_id=1))
    raw[17] &= ~LOG_EVENT_IGNORABLE_F & 0xFF
    with pytest.raises(EventDecodeError):
        describe(bytes(raw), BINLOG_CHECKSUM_ALG_OFF)


# --- the decision -----------------------------------------------------------------------------------------------

S, H, D = Action.SEND, Action.HOLE, Action.DUMMY
# capability 0..4: (not asked, asked)
MATRIX = {
    False: [D, D, H, H, H],
    True: [S, S, S, S, S],
}


@pytest.mark.parametrize(("asked", "compat", "annot"),
                         list(itertools.product((False, True), (Compat.BINLOGD, Compat.MARIADB), (False, True))))
def test_decision_matrix(asked: bool, compat: Compat, annot: bool) -> None:
    for cap in range(5):
        pol = ReplicaPolicy(cap, False, annot, compat, send_tables_info=asked)
        assert decide(TABLES_INFO_EVENT, LOG_EVENT_IGNORABLE_F, False, pol) == MATRIX[asked][cap], cap
        # skip_replication comes first: a flagged statement's tables-info is filtered with it
        flagged = ReplicaPolicy(cap, True, annot, compat, send_tables_info=asked)
        want = D if cap < 2 and compat is Compat.BINLOGD else H
        assert decide(TABLES_INFO_EVENT, 0x8080, False, flagged) == want
        # ... and a session without skip_replication gets the flagged event by the normal rule
        assert decide(TABLES_INFO_EVENT, 0x8080, False, pol) == MATRIX[asked][cap]
        # the table the dump loop uses agrees
        table = DecisionTable(pol)
        assert table.by_type_and_skip_flag[TABLES_INFO_EVENT] == MATRIX[asked][cap]
        assert DecisionTable(flagged).by_type_and_skip_flag[TABLES_INFO_EVENT | 0x100] == want
        # other types are untouched by asking
        plain = ReplicaPolicy(cap, False, annot, compat)
        for typ in (2, 15, 16, 160, 161, 163):
            assert decide(typ, 0, False, pol) == decide(typ, 0, False, plain)


# --- the hook's fast path for single-table DML ---------------------------------------------------------------

FAST = [
    "INSERT INTO t (id, w, a, b) VALUES (1, 2, 3, 'writer 1 row 2')",
    "INSERT INTO t VALUES (1, 'x'), (2, 'y')",
    "insert ignore into o.t values (1)",
    "INSERT t VALUE (1)",
    "INSERT INTO `my db`.`t``x` SET a = 1",
    "REPLACE INTO t VALUES (1)",
    "REPLACE t SET a = 2",
    "INSERT INTO t VALUES ('a; SELECT * FROM x JOIN y -- #')",
    "INSERT INTO t VALUES ('it''s', \"say \"\"hi\"\"\")",
    "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)",
    "UPDATE t SET a = a + 1, b = 'updated' WHERE id = 5 AND w = 1",
    "UPDATE LOW_PRIORITY IGNORE o.t SET a = 1 ORDER BY id LIMIT 3",
    "DELETE FROM t WHERE id = 3 AND w = 1",
    "DELETE QUICK FROM o.t",
    "DELETE FROM t ORDER BY a LIMIT 1",
]
NOT_FAST = [
    "INSERT INTO t SELECT * FROM u",
    "INSERT INTO t (a) VALUES ((SELECT MAX(a) FROM u))",
    "UPDATE t, u SET t.a = u.a",
    "UPDATE t JOIN u ON t.a = u.a SET t.b = 1",
    "UPDATE t AS x SET a = 1",
    "UPDATE t SET a = (SELECT 1 FROM u)",
    "DELETE FROM t1 USING t1, t2",
    "DELETE t1 FROM t1 JOIN t2",
    "DELETE FROM t WHERE a IN (SELECT a FROM u)",
    "INSERT INTO t VALUES (1) /*! , (SELECT 1 FROM u) */",
    "INSERT INTO t VALUES ('a\\', (SELECT 1 FROM u))",
    "INSERT INTO t PARTITION (p1) VALUES (1)",
    "INSERT INTO values VALUES (1)",
    "WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c",
    "CREATE TABLE t (a INT)",
]


@pytest.mark.parametrize("sql", FAST)
def test_fast_path_agrees_with_the_parser(sql: str) -> None:
    fast = _fast_simple_dml(sql, "db")
    assert fast is not None
    assert fast == tables_of_statement(sql, "db")
    assert tables_info_hook(sql, "db") == (TABLES_INFO_EVENT, encode_tables_info(fast, "db"))


@pytest.mark.parametrize("sql", NOT_FAST)
def test_fast_path_leaves_the_rest_to_the_parser(sql: str) -> None:
    assert _fast_simple_dml(sql, "db") is None


idents = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=8).map(
        lambda s: "`" + s.replace("`", "``") + "`"),
)
literals = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.text(st.sampled_from(list("ab ';\"-#/*()SELECT FROM JOIN,.`")), max_size=20).map(
        lambda s: "'" + s.replace("'", "''") + "'"),
)


@settings(max_examples=400, deadline=None, database=None)
@given(verb=st.sampled_from(["INSERT INTO {t} VALUES ({v}, {v})", "INSERT INTO {t} (a, b) VALUES ({v}, {v})",
                             "REPLACE INTO {t} SET a = {v}", "UPDATE {t} SET a = {v} WHERE b = {v}",
                             "DELETE FROM {t} WHERE a = {v} OR b = {v}", "INSERT INTO {t} VALUES ({v}) ON DUPLICATE "
                             "KEY UPDATE a = {v}", "INSERT INTO {t} SELECT {v} FROM {t}"]),
       db=st.one_of(st.none(), idents), table=idents, v=literals)
def test_fast_path_equals_parser_on_generated_dml(verb: str, db: str | None, table: str, v: str) -> None:
    sql = verb.format(t=table if db is None else f"{db}.{table}", v=v)
    try:
        slow = tables_of_statement(sql, "dflt")
    except TablesInfoError:
        return  # e.g. a keyword as a bare name: not a statement the classifier would accept
    fast = _fast_simple_dml(sql, "dflt")
    assert fast is None or fast == slow, sql


@settings(max_examples=300, deadline=None, database=None)
@given(tables=table_lists, default_db=st.one_of(st.none(), names))
def test_hand_encoder_equals_the_construct_layout(tables: list[tuple[str | None, str]], default_db: str | None) -> None:
    entries = [{"db": "" if db is None or db == default_db else db, "table": t} for db, t in tables]
    want = _TABLES_INFO.build({"version": 1, "flags": 0, "count": len(entries), "default_db": default_db or "",
                               "tables": entries})
    assert encode_tables_info(tables, default_db) == want
