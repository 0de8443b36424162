"""Replication filters (seed WL#7361) as pure rules: startup options with channels, CHANGE REPLICATION FILTER,
RESET SLAVE ALL, the P_S rows, and the evaluation order of MariaDB 10.11's rpl_filter.cc.

The WL#7361 / MySQL 8.0 manual ("Replication Channel Based Filters") examples are reproduced with the outputs
the manual states; the evaluation-order cases are the manual's "How Servers Evaluate Replication Filtering
Rules" examples, with MariaDB's behaviour where the two differ (documented in applier/filters.py).
"""

from __future__ import annotations

import logging

import pytest
from binlogd.applier.admin import AdminError, parse_change_filter
from binlogd.applier.filters import (
    ConfiguredBy,
    FilterError,
    FilterRegistry,
    FilterSet,
    FilterType,
    UnknownChannel,
    split_channel,
    updated_tables,
    wild_regex,
)
from hypothesis import given
from hypothesis import strategies as st

T = FilterType
SO, SOC = ConfiguredBy.STARTUP_OPTIONS.value, ConfiguredBy.STARTUP_OPTIONS_FOR_CHANNEL.value
CRF, CRFC = ConfiguredBy.CHANGE_REPLICATION_FILTER.value, ConfiguredBy.CHANGE_REPLICATION_FILTER_FOR_CHANNEL.value


def rows(reg: FilterRegistry) -> list[tuple]:
    """P_S replication_applier_filters without the timestamp."""
    return [(c, n, r, by, cnt) for c, n, r, by, _since, cnt in reg.applier_filters_rows()]


def global_rows(reg: FilterRegistry) -> list[tuple]:
    return [(n, r, by) for n, r, by, _since in reg.global_filters_rows()]


def one(rules: dict[FilterType, list[str]]) -> FilterSet:
    reg = FilterRegistry.from_options([(t, v) for t, vs in rules.items() for v in vs], ["c"])
    return reg.for_channel("c")


# --- WL#7361: startup options --------------------------------------------------------------------------


def test_startup_options_global_and_per_channel(caplog):
    """Manual: a global filter is added to the global filters of its type; `channel:` adds to that channel;
    each channel copies the global filters of every type it has none of (CONFIGURED_BY STARTUP_OPTIONS)."""
    opts = [
        (T.DO_DB, "db1"),
        (T.DO_DB, "channel_1:db2"),
        (T.DO_DB, "db3"),
        (T.IGNORE_DB, "db4"),
        (T.IGNORE_DB, "channel_2:db5"),
        (T.WILD_DO_TABLE, "channel_1:db6.t1%"),
    ]
    reg = FilterRegistry.from_options(opts, ["channel_1", "channel_2"])
    assert global_rows(reg) == [
        ("REPLICATE_DO_DB", "db1,db3", SO),
        ("REPLICATE_IGNORE_DB", "db4", SO),
    ]
    assert rows(reg) == [
        ("channel_1", "REPLICATE_DO_DB", "db2", SOC, 0),
        ("channel_1", "REPLICATE_IGNORE_DB", "db4", SO, 0),
        ("channel_1", "REPLICATE_WILD_DO_TABLE", "db6.t1%", SOC, 0),
        ("channel_2", "REPLICATE_DO_DB", "db1,db3", SO, 0),
        ("channel_2", "REPLICATE_IGNORE_DB", "db5", SOC, 0),
    ]


def test_unknown_channel_is_warned_and_discarded(caplog):
    with caplog.at_level(logging.WARNING):
        reg = FilterRegistry.from_options([(T.DO_DB, "nochan:db1"), (T.DO_DB, "c:db2")], ["c"])
    assert "channel 'nochan' which does not exist" in caplog.text
    assert rows(reg) == [("c", "REPLICATE_DO_DB", "db2", SOC, 0)]
    assert global_rows(reg) == []


def test_first_colon_separates_and_empty_channel_is_default():
    assert split_channel("db1") == (None, "db1")
    assert split_channel(":db1") == ("", "db1")
    assert split_channel("c1:db:x") == ("c1", "db:x")
    reg = FilterRegistry.from_options([(T.DO_DB, ":db1"), (T.REWRITE_DB, "c1:a->b")], ["", "c1"])
    assert rows(reg) == [
        ("", "REPLICATE_DO_DB", "db1", SOC, 0),
        ("c1", "REPLICATE_REWRITE_DB", "(a,b)", SOC, 0),
    ]


@pytest.mark.parametrize(
    ("ftype", "value"),
    [(T.DO_TABLE, "nodot"), (T.WILD_IGNORE_TABLE, "c:nodot"), (T.REWRITE_DB, "a-b"), (T.REWRITE_DB, "->b")],
)
def test_malformed_rules_are_errors(ftype, value):
    with pytest.raises(FilterError):
        FilterRegistry.from_options([(ftype, value)], ["c"])


# --- WL#7361: CHANGE REPLICATION FILTER, RESET SLAVE ALL -------------------------------------------------


def test_change_for_channel_replaces_only_the_listed_types():
    reg = FilterRegistry.from_options([(T.DO_DB, "db1"), (T.IGNORE_TABLE, "c1:db1.t1")], ["c1", "c2"])
    reg.change("c1", {T.DO_DB: ["db2", "db3"]})
    assert rows(reg) == [
        ("c1", "REPLICATE_DO_DB", "db2,db3", CRFC, 0),
        ("c1", "REPLICATE_IGNORE_TABLE", "db1.t1", SOC, 0),
        ("c2", "REPLICATE_DO_DB", "db1", SO, 0),
    ]
    assert global_rows(reg) == [("REPLICATE_DO_DB", "db1", SO)]
    reg.change("c1", {T.DO_DB: []})  # REPLICATE_DO_DB = () removes that type only
    assert rows(reg)[0] == ("c1", "REPLICATE_IGNORE_TABLE", "db1.t1", SOC, 0)
    with pytest.raises(UnknownChannel):
        reg.change("nope", {T.DO_DB: ["x"]})


def test_global_change_applies_to_every_channel_and_the_global_filters():
    reg = FilterRegistry.from_options([(T.DO_DB, "c1:db1")], ["c1", "c2"])
    reg.change(None, {T.IGNORE_DB: ["mysql"], T.REWRITE_DB: ["a->b", "c->d"]})
    assert global_rows(reg) == [
        ("REPLICATE_IGNORE_DB", "mysql", CRF),
        ("REPLICATE_REWRITE_DB", "(a,b),(c,d)", CRF),
    ]
    assert rows(reg) == [
        ("c1", "REPLICATE_DO_DB", "db1", SOC, 0),
        ("c1", "REPLICATE_IGNORE_DB", "mysql", CRF, 0),
        ("c1", "REPLICATE_REWRITE_DB", "(a,b),(c,d)", CRF, 0),
        ("c2", "REPLICATE_IGNORE_DB", "mysql", CRF, 0),
        ("c2", "REPLICATE_REWRITE_DB", "(a,b),(c,d)", CRF, 0),
    ]
    assert reg.for_channel("c2").status_columns()["Replicate_Rewrite_DB"] == "a->b,c->d"


def test_invalid_change_changes_nothing():
    reg = FilterRegistry.from_options([(T.DO_DB, "db1")], ["c"])
    with pytest.raises(FilterError):
        reg.change(None, {T.DO_DB: ["x"], T.DO_TABLE: ["nodot"]})
    assert global_rows(reg) == [("REPLICATE_DO_DB", "db1", SO)]


def test_reset_slave_all_drops_channel_filters_and_a_new_channel_copies_global():
    reg = FilterRegistry.from_options([(T.DO_DB, "db1"), (T.DO_DB, "c1:db9")], ["c1"])
    reg.change(None, {T.IGNORE_TABLE: ["db1.t1"]})
    reg.remove_channel("c1")  # RESET SLAVE ALL FOR CHANNEL 'c1'
    assert rows(reg) == []
    assert global_rows(reg) == [("REPLICATE_DO_DB", "db1", SO), ("REPLICATE_IGNORE_TABLE", "db1.t1", CRF)]
    reg.add_channel("c1")  # CHANGE MASTER again: the channel's own db9 is gone, the global filters are copied
    assert rows(reg) == [
        ("c1", "REPLICATE_DO_DB", "db1", SO, 0),
        ("c1", "REPLICATE_IGNORE_TABLE", "db1.t1", CRF, 0),
    ]
    with pytest.raises(UnknownChannel):
        reg.remove_channel("c9")


def test_counters_count_the_deciding_rule():
    reg = FilterRegistry.from_options([(T.DO_DB, "db1"), (T.IGNORE_TABLE, "db1.secret"), (T.REWRITE_DB, "x->db1")],
                                      ["c"])
    fs = reg.for_channel("c")
    assert fs.apply_row_event("db1", "t")  # db1 listed, then no table rule matched: nothing decided, no count
    assert not fs.apply_row_event("db2", "t")  # do_db decided (not listed)
    assert not fs.apply_row_event("db1", "secret")  # ignore_table decided
    assert fs.apply_row_event("x", "t")  # rewritten to db1
    counts = {n: cnt for _c, n, _r, _by, cnt in rows(reg)}
    assert counts == {"REPLICATE_DO_DB": 1, "REPLICATE_IGNORE_TABLE": 1, "REPLICATE_REWRITE_DB": 1}
    assert fs.rewrite_db("x") == "db1" and counts["REPLICATE_REWRITE_DB"] == 1  # rewrite_db() does not count


# --- evaluation order (MySQL manual examples; MariaDB rpl_filter.cc) --------------------------------------


def test_statement_based_do_db_looks_at_the_default_database_only():
    fs = one({T.DO_DB: ["sales"]})
    # USE prices; UPDATE sales.january ...: not replicated with statement-based events
    assert not fs.apply_statement("prices", [("sales", "january")])
    assert fs.apply_statement("sales", [("prices", "march")])
    # the same change as a row event is judged by the table's database
    assert fs.apply_row_event("sales", "january")
    assert not fs.apply_row_event("prices", "march")
    assert fs.apply_statement(None, [("prices", "x")])  # no default database: MariaDB replicates


def test_do_db_makes_ignore_db_irrelevant():
    fs = one({T.DO_DB: ["a"], T.IGNORE_DB: ["a", "b"]})
    assert fs.apply_row_event("a", "t")
    assert not fs.apply_row_event("b", "t")
    assert not fs.apply_row_event("c", "t")
    fs = one({T.IGNORE_DB: ["b"]})
    assert fs.apply_row_event("c", "t") and not fs.apply_row_event("b", "t")


def test_table_rules_in_order_do_ignore_wilddo_wildignore():
    fs = one({T.DO_TABLE: ["db.t1"], T.IGNORE_TABLE: ["db.t1", "db.t2"], T.WILD_DO_TABLE: ["db.t%"],
              T.WILD_IGNORE_TABLE: ["db.t3"]})
    assert fs.apply_row_event("db", "t1")  # do-table wins over ignore-table
    assert not fs.apply_row_event("db", "t2")  # ignore-table before wild-do
    assert fs.apply_row_event("db", "t3")  # wild-do before wild-ignore
    assert not fs.apply_row_event("db", "x")  # a do list exists and nothing matched
    fs = one({T.IGNORE_TABLE: ["db.t2"]})
    assert fs.apply_row_event("db", "x")  # only ignore rules: everything else goes


def test_multi_table_statement_is_decided_by_the_first_table_that_matches():
    fs = one({T.IGNORE_TABLE: ["db.b"], T.WILD_DO_TABLE: ["db.%"]})
    assert fs.apply_statement("db", [(None, "a"), (None, "b")])  # a matches wild-do first
    assert not fs.apply_statement("db", [(None, "b"), (None, "a")])
    assert fs.apply_statement("db", [])  # no table: table rules are not consulted


def test_table_rules_are_case_insensitive_db_rules_are_not():
    fs = one({T.DO_TABLE: ["Db.T1"]})
    assert fs.apply_row_event("Db", "t1") and fs.apply_row_event("DB", "T1")
    assert not fs.apply_row_event("Db", "t2")
    fs = one({T.IGNORE_DB: ["Skip"]})
    assert not fs.apply_row_event("Skip", "t1")
    assert fs.apply_row_event("skip", "t1")  # MariaDB's db_ok compares with strcmp


def test_create_drop_database_checks_the_named_db_and_wild_rules():
    fs = one({T.WILD_IGNORE_TABLE: ["db1.%"]})
    assert not fs.apply_statement("db1", [], is_ddl_db=True)  # 'db1.%' means everything touching db1
    assert fs.apply_statement("db2", [], is_ddl_db=True)
    assert fs.apply_statement("db1", [])  # an ordinary table-less statement is not affected
    fs = one({T.WILD_DO_TABLE: ["db1.t%"]})
    assert not fs.apply_statement("db1", [], is_ddl_db=True)  # 'db1.' does not match 'db1.t%'
    fs = one({T.REWRITE_DB: ["a->b"], T.DO_DB: ["b"]})
    assert fs.apply_statement("a", [(None, "t")])  # USE a is rewritten to b, then do-db passes
    assert not fs.apply_statement("a", [], is_ddl_db=True)  # CREATE DATABASE a: the named 'a' is not in do-db


def test_rewrite_then_filter_row_events():
    fs = one({T.REWRITE_DB: ["src->dst", "src->other"], T.DO_TABLE: ["dst.t"]})
    assert fs.rewrite_db("src") == "dst"  # first pair wins
    assert fs.rewrite_db(None) is None and fs.rewrite_db("zz") == "zz"
    assert fs.apply_row_event("src", "t")
    assert not fs.apply_row_event("dst", "u")
    # statement events: unqualified tables resolve to the rewritten database, qualified ones stay
    assert fs.apply_statement("src", [(None, "t")])
    assert not fs.apply_statement("src", [("src", "t")])


def test_updated_tables_lists_targets_only():
    assert updated_tables("CREATE TABLE t2 LIKE db1.t1") == [(None, "t2")]
    assert updated_tables("INSERT INTO a.x SELECT * FROM y JOIN z") == [("a", "x")]
    assert updated_tables("UPDATE t SET a = 1") == [(None, "t")]
    assert updated_tables("DROP TABLE a, b.c") == [(None, "a"), ("b", "c")]
    assert updated_tables("CREATE DATABASE x") == []
    # multi-table UPDATE/DELETE: the tables assigned to / deleted from, through aliases
    assert updated_tables("UPDATE a.t1 AS x JOIN b.t2 y ON x.id = y.id SET x.v = y.v") == [("a", "t1")]
    assert updated_tables("UPDATE t1, db.t2 SET t1.a = t2.b, db.t2.c = 1") == [(None, "t1"), ("db", "t2")]
    assert updated_tables("DELETE x FROM a.t1 x JOIN b.t2 ON 1") == [("a", "t1")]
    assert updated_tables("DELETE FROM t1 USING t1 JOIN t2 ON 1") == [(None, "t1")]
    # an unqualified SET column needs the schema to resolve: all tables, as before
    assert updated_tables("UPDATE t1 JOIN t2 ON 1 SET a = 1") == [(None, "t1"), (None, "t2")]


def test_updated_tables_narrows_a_tables_info_list():
    """A tables-info event lists read-only tables too (the seed's rule); the filters must only see the changed ones,
    with default-database entries left unresolved (None) so a rewritten default database applies."""
    from binlogd.protocol.tables_info import encode_tables_info, parse_tables_info, tables_of_statement

    sql = "INSERT INTO t1 SELECT * FROM db2.t2"
    info = parse_tables_info(encode_tables_info(tables_of_statement(sql, "db1"), "db1"))
    assert set(info.relative) == {(None, "t1"), ("db2", "t2")}
    assert updated_tables(sql, list(info.relative)) == [(None, "t1")]
    fs = one({FilterType.IGNORE_TABLE: ["db2.t2"]})
    assert fs.apply_statement("db1", updated_tables(sql, list(info.relative))), "only reads db2.t2: applied"
    fs = one({FilterType.IGNORE_TABLE: ["db1.t1"]})
    assert not fs.apply_statement("db1", updated_tables(sql, list(info.relative)))


# --- properties ----------------------------------------------------------------------------------------

names = st.text(alphabet="abcdeAB_1", min_size=1, max_size=6)


@given(db=names, table=names)
def test_no_rules_apply_everything(db, table):
    fs = FilterSet()
    assert fs.apply_row_event(db, table) and fs.apply_statement(db, [(None, table)], is_ddl_db=True)


@given(dos=st.lists(names, min_size=1, max_size=4), db=names, table=names)
def test_do_db_alone_is_membership(dos, db, table):
    fs = one({T.DO_DB: dos})
    assert fs.apply_row_event(db, table) == (db in dos)
    assert fs.apply_statement(db, [("other", table)]) == (db in dos)


@given(literal=st.text(alphabet="abc.XY", min_size=1, max_size=8), key=st.text(alphabet="abc.xy", max_size=8))
def test_wild_pattern_without_wildcards_is_case_insensitive_equality(literal, key):
    assert bool(wild_regex(literal).fullmatch(key)) == (literal.casefold() == key.casefold())


@given(db=names, table=names, ignored=st.lists(st.tuples(names, names), max_size=4))
def test_ignore_table_alone_skips_exactly_the_listed_tables(db, table, ignored):
    fs = one({T.IGNORE_TABLE: [f"{d}.{t}" for d, t in ignored]} if ignored else {})
    listed = any(d.casefold() == db.casefold() and t.casefold() == table.casefold() for d, t in ignored)
    assert fs.apply_row_event(db, table) == (not listed)


idents = st.text(alphabet="abcXYZ_019$", min_size=1, max_size=8)


@given(dbs=st.lists(idents, max_size=4), tables=st.lists(st.tuples(idents, idents), max_size=3),
       wild=st.lists(st.tuples(idents, idents), max_size=3), pairs=st.lists(st.tuples(idents, idents), max_size=3),
       channel=st.none() | idents)
def test_change_replication_filter_text_round_trips(dbs, tables, wild, pairs, channel):
    """CHANGE REPLICATION FILTER as MySQL's grammar writes it (backquoted names, quoted wild patterns)."""
    parts = [
        "REPLICATE_DO_DB = (" + ", ".join(f"`{d}`" for d in dbs) + ")",
        "REPLICATE_IGNORE_TABLE = (" + ", ".join(f"{d}.`{t}`" for d, t in tables) + ")",
        "replicate_wild_do_table = (" + ", ".join(f"'{d}.{t}%'" for d, t in wild) + ")",
        "REPLICATE_REWRITE_DB = (" + ", ".join(f"({a}, {b})" for a, b in pairs) + ")",
    ]
    text = ", ".join(parts) + (f" FOR CHANNEL '{channel}'" if channel is not None else "")
    changes, chan = parse_change_filter(text)
    assert chan == channel
    assert changes == {
        T.DO_DB: dbs,
        T.IGNORE_TABLE: [f"{d}.{t}" for d, t in tables],
        T.WILD_DO_TABLE: [f"{d}.{t}%" for d, t in wild],
        T.REWRITE_DB: [f"{a}->{b}" for a, b in pairs],
    }


@pytest.mark.parametrize("text", ["", "REPLICATE_DO_DB", "REPLICATE_DO_DB = db1", "REPLICATE_DO_DB = (db1",
                                  "REPLICATE_NOPE = (x)", "DO_DB = (x)", "REPLICATE_DO_DB = (x) FOR CHANNEL",
                                  "REPLICATE_REWRITE_DB = (a, b)", "REPLICATE_DO_DB = (x) trailing"])
def test_change_replication_filter_syntax_errors(text):
    with pytest.raises(AdminError) as e:
        parse_change_filter(text)
    assert e.value.code == 1064
