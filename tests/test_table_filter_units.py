"""Table filters without servers: the decision rule for rejected events, the per-event verdicts, renames, the
bindings' parsing and their error messages (the behaviour against real MariaDB replicas: test_table_filters.py)."""

from __future__ import annotations

import pytest
from binlogd.protocol.accounts import UsersFileError, parse_line
from binlogd.protocol.constants import GTID_EVENT, QUERY_EVENT, TABLE_MAP_EVENT, WRITE_ROWS_EVENT_V1, XID_EVENT
from binlogd.protocol.decision import Action, Compat, DecisionTable, ReplicaPolicy, decide, explain
from binlogd.protocol.events import parse_event
from binlogd.protocol.repl_filters import ConfiguredBy, FilterError, FilterType
from binlogd.protocol.table_filter import KEEP, TableFilterStream, build_filter_set, rename_db
from binlogd.protocol.tables_info import tables_info_event
from binlogd.server.replica_filters import filters_for, parse_cli, session_assignments

from binlogd.testing.builder import BinlogBuilder


@pytest.mark.parametrize("cap", range(5))
@pytest.mark.parametrize("standalone", [False, True])
def test_rejected_event_follows_the_capability_rule(cap: int, standalone: bool) -> None:
    pol = ReplicaPolicy(cap, False, False, Compat.BINLOGD, table_filters=True)
    a, why = explain(QUERY_EVENT, 0, standalone, pol, "replicate-do-table")
    want = Action.DUMMY if cap < 2 or (cap == 4 and standalone) else Action.HOLE
    assert (a, why) == (want, "replicate-do-table")
    # skip_replication wins over a table rule; a kept event is the type rule's answer
    skip = ReplicaPolicy(cap, True, False, Compat.MARIADB, table_filters=True)
    assert explain(QUERY_EVENT, 0x8000, standalone, skip, "replicate-do-table")[1] == "skip_replication"
    assert explain(QUERY_EVENT, 0, standalone, pol, None) == (Action.SEND, None)


@pytest.mark.parametrize("cap", range(5))
def test_decision_table_sends_watched_types_to_the_filter(cap: int) -> None:
    pol = ReplicaPolicy(cap, True, False, table_filters=True)
    t = DecisionTable(pol)
    for typ in (QUERY_EVENT, TABLE_MAP_EVENT, WRITE_ROWS_EVENT_V1, GTID_EVENT, XID_EVENT):
        assert t.normal[typ] is Action.PEEK_TABLES
        assert t.flagged[typ] is not Action.PEEK_TABLES  # the skip rule decides flagged events alone
        for st in (False, True):  # lookup(): the answer without a verdict, as decide() gives it
            assert t.lookup(typ, 0, st) == decide(typ, 0, st, pol)
    assert DecisionTable(ReplicaPolicy(cap, False, False)).normal[QUERY_EVENT] is Action.SEND


def _events(b: BinlogBuilder) -> list[bytes]:
    raw = (b.directory / b.files[-1]).read_bytes()
    out, p = [], 4
    while p < len(raw):
        n = int.from_bytes(raw[p + 9:p + 13], "little")
        out.append(raw[p:p + n])
        p += n
    return out[1:]  # after the FDE


def test_stream_verdicts_rows_statements_and_renames(tmp_path) -> None:  # type: ignore[no-untyped-def]
    b = BinlogBuilder(tmp_path)
    with b.transaction() as t:
        t.query("INSERT INTO t1 VALUES (1)", db="db1").query("INSERT INTO t2 VALUES (1)", db="db1")
    with b.transaction() as t:
        t.insert("db1", "t1", ["id INT"], [(1,)]).insert("db1", "t2", ["id INT"], [(2,)])
    b.close()
    # the rules see the rewritten name: db1.t1 is other_db.t1 for them
    fs = build_filter_set({FilterType.DO_TABLE: ("d.t1",), FilterType.REWRITE_DB: ("db1->d",)},
                          ConfiguredBy.STARTUP_OPTIONS)
    assert fs is not None
    stream = TableFilterStream(fs)
    crc = b.crc
    verdicts = [(ev[4], stream.decide(memoryview(ev), crc)) for ev in _events(b)]
    kinds = [(t, v.rule, v.new_db) for t, v in verdicts if t in (QUERY_EVENT, TABLE_MAP_EVENT, WRITE_ROWS_EVENT_V1)]
    assert (QUERY_EVENT, None, b"d") in kinds  # INSERT INTO t1, kept and renamed
    assert (QUERY_EVENT, "replicate-do-table", None) in kinds  # INSERT INTO t2
    assert (TABLE_MAP_EVENT, None, b"d") in kinds and (TABLE_MAP_EVENT, "replicate-do-table", None) in kinds
    assert [v for t, v in verdicts if t in (GTID_EVENT, XID_EVENT)] == [KEEP] * 4  # a transaction's frame stays
    # a renamed event is a valid event: new length, the same log_pos, a valid CRC, the new database
    for ev in _events(b):
        if ev[4] in (QUERY_EVENT, TABLE_MAP_EVENT) and b"db1" in ev:
            new = rename_db(memoryview(ev), b"d", crc)
            assert len(new) == len(ev) - 2 and new[13:17] == ev[13:17]
            parsed = parse_event(new, 1 if crc else 0, verify_crc=True)
            assert parsed.body.db == b"d"  # type: ignore[union-attr]


def test_tables_info_decides_the_next_statement() -> None:
    """The statement's text alone cannot be parsed here; the tables-info event before it names its table."""
    fs = build_filter_set({FilterType.IGNORE_TABLE: ("db1.secret",)}, ConfiguredBy.STARTUP_OPTIONS)
    assert fs is not None
    stream = TableFilterStream(fs)
    info = tables_info_event([(None, "secret")], "db1", checksum=False, server_id=1)
    assert stream.decide(memoryview(info), False).rule is None
    body = b"\0" * 8 + bytes([3]) + b"\0\0" + b"\0\0" + b"db1\0" + b"INSERT INTO secret VALUES ((("
    header = bytearray(19)
    header[4] = QUERY_EVENT
    header[9:13] = (19 + len(body)).to_bytes(4, "little")
    assert stream.decide(memoryview(bytes(header) + body), False).rule == "replicate-ignore-table"


def test_bindings_parse_and_refuse_bad_values() -> None:
    got = parse_cli(["3:replicate-do-table=db.t1,db.t2", "3:replicate-do-table=db.t3", "4:replicate_ignore_db=x"])
    assert got == {3: {FilterType.DO_TABLE: ("db.t1", "db.t2", "db.t3")}, 4: {FilterType.IGNORE_DB: ("x",)}}
    for bad, text in [("x:replicate-do-table=a.b", "SERVER_ID"), ("3:replicate-do-table=nodot", "db_name.table_name"),
                      ("3:replicate-bogus=a", "unknown filter"), ("3:replicate-rewrite-db=a", "missing '->'"),
                      ("0:replicate-do-db=a", "1..4294967295"),
                      ("3:replicate-rewrite-db=a->bb", "may not be longer")]:
        with pytest.raises(FilterError, match=text):
            parse_cli([bad])
    entry = parse_line("cdc:'' GRANT REPLICATION SLAVE replicate-wild-do-table=db.% REQUIRE SSL", "users:1")
    assert entry is not None and entry.require_ssl and dict(entry.filters) == {FilterType.WILD_DO_TABLE: ("db.%",)}
    with pytest.raises(UsersFileError, match=r"users:2: .*db_name\.table_name"):
        parse_line("cdc:'' replicate-do-table=nodot", "users:2")
    # precedence: the server_id's binding, then the user's, then the session's
    session = {"binlogd_replicate_do_db": "s"}
    assert filters_for(3, got, {FilterType.DO_DB: ("u",)}, session)[1] == "server_id"
    assert filters_for(9, got, {FilterType.DO_DB: ("u",)}, session)[1] == "user"
    fs, src = filters_for(9, got, {}, session)
    assert src == "session" and fs is not None and fs.values(FilterType.DO_DB) == ["s"]
    assert filters_for(9, got, {}, {}) == (None, None)
    assert session_assignments({"binlogd_replicate_ignore_table": b"a.b, c.d", "other": 1}) == {
        FilterType.IGNORE_TABLE: ("a.b", "c.d")}


@pytest.mark.parametrize("sql", ["SET @binlogd_replicate_do_table = 'nodot'",
                                 "SET @binlogd_replicate_wild_do_table = 'db.t', @binlogd_replicate_rewrite_db = 'a'",
                                 "SELECT @binlogd_replicate_ignore_table := 'x'",
                                 "SELECT 'x' INTO @binlogd_replicate_do_table"])
def test_every_way_to_set_a_rule_variable_checks_it(sql: str) -> None:
    """SET, := and SELECT ... INTO: a bad rule is MariaDB's 1210 when it is set (never at dump time); the session keeps
    its previous value (a multi-assignment SET changes nothing)."""
    from binlogd.server.sql_surface import SessionState, SqlError, execute

    from tests.test_sql_surface import FakeServer

    session = SessionState()
    execute("SET @binlogd_replicate_do_table = 'db.t1,db.%'", session, FakeServer())
    with pytest.raises(SqlError) as e:
        execute(sql, session, FakeServer())
    assert (e.value.code, e.value.message) == (1210, "Incorrect arguments to SET")
    assert session_assignments(session.user_vars) == {FilterType.DO_TABLE: ("db.t1", "db.%")}
