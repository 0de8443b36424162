"""The standalone write path's fast path against its full path: same events, same refusals.

The fast path is what a statement whose shape was seen before takes: the classifier's shape cache (no sqlglot
parse), the catalogue's cache of accepted DML shapes, the session's cached QueryContext and the Query event's
cached prefix. Two standalone sources get the same random statements: `full` with every cache emptied before each
statement (each statement parsed and checked from scratch, as a cold server does), `fast` with the caches warm.
Each example is two statements of one random shape with different literals, so the second one goes through
`fast`'s caches: both sources must answer it alike (the same MariaDB error, or OK) and append the same bytes to
their binlogs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.server.primary import Primary
from binlogd.server.sql_surface import SessionState, SqlError
from binlogd.server.standalone import classify as classify_mod
from binlogd.server.standalone import logger as logger_mod
from binlogd.server.standalone import source as source_mod
from binlogd.server.standalone.session import WriteSession
from binlogd.server.standalone.source import StandaloneConfig, StandaloneSource
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETUP = [
    "CREATE DATABASE bench",
    "CREATE TABLE bench.t (id INT NOT NULL, w INT NOT NULL, a INT DEFAULT 5, b VARCHAR(64) NOT NULL)",
    "CREATE TABLE bench.u (k INT, v TEXT)",
]
COLUMNS = {"t": ["id", "w", "a", "b"], "u": ["k", "v"]}


@dataclass
class Side:
    source: StandaloneSource
    st: SessionState
    ws: WriteSession
    path: Path


def _clock() -> float:
    return 1_700_000_000.0


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[asyncio.AbstractEventLoop, Side, Side]]:
    loop = asyncio.new_event_loop()

    async def open_side(name: str) -> Side:
        d = tmp_path_factory.mktemp(name)
        src = StandaloneSource(StandaloneConfig(datadir=d, server_id=1, server_version="10.11.19-MariaDB-log"))
        src.files.clock = _clock
        store = await src.open()
        primary = Primary(store, 1)
        primary.standalone, src.server = src, primary
        st = SessionState(connection_id=7)
        st.session_sysvars["timestamp"] = 1_700_000_000.25  # fixed statement time: both sides log the same bytes
        ws = src.session(7)
        for sql in SETUP:
            await src.execute(sql, st, ws)
        src.use_database(st, "bench")
        return Side(src, st, ws, d / "mysql-bin.000001")

    full, fast = loop.run_until_complete(open_side("full")), loop.run_until_complete(open_side("fast"))
    yield loop, full, fast
    for side in (full, fast):
        loop.run_until_complete(side.source.close())
    loop.close()


def _cold(side: Side) -> None:
    """Every cache of the write path emptied: the statement is parsed and checked from scratch."""
    classify_mod._SHAPES.clear()
    side.source._checked.clear()
    side.ws.context_cache = None
    side.ws.ready.clear()
    logger_mod._PREFIXES.clear()


async def _run(side: Side, sql: str) -> tuple[int, str] | None:
    try:
        await side.source.execute(sql, side.st, side.ws)
    except SqlError as e:
        return e.code, e.message
    return None


def _events_from(path: Path, start: int) -> list[bytes]:
    """The events at or after `start`, whole (headers included): both files are alike up to `start`."""
    data = path.read_bytes()
    return [data[e.pos : e.end] for e in scan(data).events if e.pos >= start]


# --- random statement shapes: a template with literal slots, filled twice with literals of the same kinds ----

def _int(draw: st.DrawFn) -> str:
    return str(draw(st.integers(min_value=0, max_value=2**40)))


def _string(draw: st.DrawFn) -> str:
    body = draw(st.text(alphabet=st.sampled_from("ab ?'\"\\%_é;,()0x1-#*/"), max_size=12))
    escaped = body.replace("\\", "\\\\").replace("'", draw(st.sampled_from(["''", "\\'"])))
    return f"'{escaped}'"


def _dq_string(draw: st.DrawFn) -> str:
    return '"' + draw(st.text(alphabet="abc 12", max_size=6)) + '"'


def _decimal(draw: st.DrawFn) -> str:
    return f"{draw(st.integers(0, 999))}.{draw(st.integers(0, 99))}"


def _hex(draw: st.DrawFn) -> str:
    return "0x" + draw(st.text(alphabet="0123456789abcdef", min_size=1, max_size=6))


LITERALS = {"int": _int, "str": _string, "dq": _dq_string, "dec": _decimal, "hex": _hex}
# values that are part of a statement's shape (not literals)
FIXED = ["NULL", "DEFAULT", "@x", "@y", "NOW()", "LAST_INSERT_ID()", "-1", "a + 1", "CONCAT(b, 'x')"]


@st.composite
def shapes(draw: st.DrawFn) -> tuple[str, str]:
    """Two statements of one random shape (same template, literals drawn twice)."""
    parts: list[str | tuple[str]] = []  # text, or (literal kind,)

    def value() -> None:
        if draw(st.integers(0, 4)) == 0:
            parts.append(draw(st.sampled_from(FIXED)))
        else:
            parts.append((draw(st.sampled_from(sorted(LITERALS))),))

    table = draw(st.sampled_from(["t", "u", "bench.t", "`t`", "nosuch"]))
    cols = COLUMNS.get(table.strip("`").removeprefix("bench."), ["id"])
    verb = draw(st.sampled_from(["INSERT", "INSERT INTO", "REPLACE INTO", "INSERT IGNORE INTO", "UPDATE", "DELETE"]))
    if verb == "UPDATE":
        parts.append(f"UPDATE {table} SET ")
        for i, c in enumerate(draw(st.lists(st.sampled_from([*cols, "zz"]), min_size=1, max_size=3))):
            parts.append((", " if i else "") + f"{c} = ")
            value()
    elif verb == "DELETE":
        parts.append(f"DELETE FROM {table}")
    else:
        listed = draw(st.lists(st.sampled_from([*cols, "zz"]), max_size=len(cols) + 1))
        parts.append(f"{verb} {table} " + (f"({', '.join(listed)}) " if listed else "") + "VALUES ")
        width = len(listed) if listed else len(cols)
        width += draw(st.sampled_from([0, 0, 0, 1, -1]))
        for r in range(draw(st.integers(1, 3))):
            parts.append(("," if r else "") + "(")
            for i in range(max(width, 0)):
                if i:
                    parts.append(", ")
                value()
            parts.append(")")
    if verb in ("UPDATE", "DELETE") and draw(st.booleans()):
        parts.append(f" WHERE {draw(st.sampled_from([*cols, 'zz']))} {draw(st.sampled_from(['=', '<', '<>']))} ")
        value()
        if draw(st.booleans()):
            parts.append(" LIMIT ")
            parts.append(("int",))
    mutation = draw(st.sampled_from(["", "", "", ";", "  ", " garbage", ",", " WHERE", "/* c */ "]))

    def fill() -> str:
        text = "".join(p if isinstance(p, str) else LITERALS[p[0]](draw) for p in parts)
        return text + mutation if mutation != "/* c */ " else mutation + text

    return fill(), fill()


# session changes that reach the logged events (status variables, USER_VAR): the cached QueryContext must follow
SESSION_SETS = ["", "", "SET @x = 5", "SET @y = 'é'", "SET time_zone = '+01:00'", "SET time_zone = DEFAULT",
                "SET sql_mode = ''", "SET sql_mode = DEFAULT", "SET auto_increment_increment = 2",
                "SET auto_increment_increment = 1", "SET foreign_key_checks = 0", "SET foreign_key_checks = 1",
                "SET NAMES latin1", "SET NAMES utf8mb4", "SET sql_auto_is_null = 1", "SET sql_auto_is_null = 0"]
# what decides whether an autocommit statement takes the session's ready Query prefix (`StandaloneSource._ready_dml`):
# (change, undo), the change before the pair or between its two statements, the undo after it
TOGGLES = [("", ""), ("SET skip_replication = 1", "SET skip_replication = 0"),
           ("SET sql_log_bin = 0", "SET sql_log_bin = 1"), ("SET insert_id = 7", "INSERT INTO bench.u VALUES (1, 'x')"),
           ("SET autocommit = 0", "SET autocommit = 1"), ("BEGIN", "COMMIT"), ("BEGIN", "ROLLBACK"),
           ("USE mysql", "USE bench"), ("SET timestamp = 1700000001", "SET timestamp = 1700000000.25"),
           ("ALTER TABLE bench.t ADD COLUMN zz INT", "ALTER TABLE bench.t DROP COLUMN zz"),
           ("ALTER TABLE bench.t DROP COLUMN a", "ALTER TABLE bench.t ADD COLUMN a INT DEFAULT 5 AFTER w")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=shapes(), session_set=st.sampled_from(SESSION_SETS), toggle=st.sampled_from(TOGGLES),
       between=st.booleans())
def test_fast_path_logs_and_refuses_like_the_full_path(
        sides: tuple[asyncio.AbstractEventLoop, Side, Side], pair: tuple[str, str], session_set: str,
        toggle: tuple[str, str], between: bool) -> None:
    loop, full, fast = sides
    start_full, start_fast = full.path.stat().st_size, fast.path.stat().st_size
    assert start_full == start_fast

    def both(sql: str) -> None:
        if sql:
            assert loop.run_until_complete(_run(full, sql)) == loop.run_until_complete(_run(fast, sql)), sql

    both(session_set)
    both("" if between else toggle[0])
    for i, sql in enumerate(pair):
        if i == 1 and between:
            both(toggle[0])
        _cold(full)
        want = loop.run_until_complete(_run(full, sql))
        with mock.patch.object(classify_mod, "_parse", wraps=classify_mod._parse) as parse:
            got = loop.run_until_complete(_run(fast, sql))
        assert got == want, sql
        shaped = not any(c in sql for c in ("--", "#", "/*"))  # the classifier shapes no text with a comment mark
        if i == 1 and want is None and shaped:
            assert parse.call_count == 0, f"the second statement of a shape was parsed again: {sql}"
    both(toggle[1])
    assert _events_from(fast.path, start_fast) == _events_from(full.path, start_full), pair


def test_query_prefix_is_encode_query_of_the_same_fields() -> None:
    """The cached prefix + text equals the event encoder's own body (the rule the prefix cache rests on)."""
    from binlogd.protocol.events import QueryCharset

    ctx = logger_mod.QueryContext(thread_id=9, charset=QueryCharset(33, 33, 8), db="bench")
    for sql in ["INSERT INTO t VALUES (1)", "x" * 300, "UPDATE t SET b = 'é'"]:
        logger_mod._PREFIXES.clear()
        cold = logger_mod._query_body(sql.encode(), ctx, None, None)
        assert logger_mod.query_body(sql, ctx) == cold
        assert logger_mod.query_body(sql, ctx) == cold  # from the cache


@settings(max_examples=200, deadline=None)
@given(ddl=st.booleans(), skip=st.booleans(), xid=st.one_of(st.none(), st.integers(0, 2**64 - 1)),
       events=st.lists(st.tuples(st.sampled_from([2, 5, 13, 14]), st.binary(max_size=300), st.sampled_from([0, 4, 8]),
                                 st.integers(0, 2**32 - 1)), max_size=4),
       ts=st.integers(0, 2**32 - 1), seq_no=st.integers(1, 2**64 - 1), domain=st.integers(0, 2**32 - 1),
       start=st.integers(4, 2**30))
def test_encode_group_is_the_generic_event_encoders(ddl: bool, skip: bool, xid: int | None,
                                                     events: list[tuple[int, bytes, int, int]], ts: int,
                                                     seq_no: int, domain: int, start: int) -> None:
    """The group encoder's packed GTID / XID events and chained CRCs equal the protocol's generic encoders."""
    from binlogd.protocol.constants import GTID_EVENT, LOG_EVENT_SUPPRESS_USE_F, XID_EVENT
    from binlogd.protocol.events import checksummed_event

    g = logger_mod.Group(ddl=ddl, events=events, timestamp=ts, skip=skip, xid=xid)
    flag = 0x8000 if skip else 0
    specs = [(GTID_EVENT, logger_mod.gtid_body(seq_no, domain, ddl), LOG_EVENT_SUPPRESS_USE_F, ts), *events]
    if xid is not None:
        specs.append((XID_EVENT, logger_mod.xid_body(xid), 0, ts))
    want, pos = b"", start
    for type_code, body, flags, ets in specs:
        pos += 19 + len(body) + 4
        want += checksummed_event(type_code, body, ets, 3, pos, flags | flag)
    assert logger_mod.encode_group(g, server_id=3, domain_id=domain, seq_no=seq_no, start=start) == want


def test_a_repeated_autocommit_shape_skips_classification(sides: tuple[asyncio.AbstractEventLoop, Side, Side]) -> None:
    """The second autocommit statement of a shape comes from the session's ready Query prefix (no classify, no
    check), and logs what the full path logs for it; a DDL in between (the catalogue's epoch) sends it back through
    the catalogue check once."""
    loop, full, fast = sides
    start_full, start_fast = full.path.stat().st_size, fast.path.stat().st_size
    sqls = ["INSERT INTO t (id, w, a, b) VALUES (1, 2, 3, 'x')", "INSERT INTO t (id, w, a, b) VALUES (4, 5, 6, 'y')",
            "UPDATE t SET a = a + 1 WHERE id = 7", "UPDATE t SET a = a + 1 WHERE id = 8"]
    for sql in sqls:
        _cold(full)
        assert loop.run_until_complete(_run(full, sql)) is None
    classify_mod._SHAPES.clear()
    with mock.patch.object(source_mod, "classify", wraps=source_mod.classify) as classify:
        for sql in sqls:
            assert loop.run_until_complete(_run(fast, sql)) is None
    assert [c.args[0] for c in classify.call_args_list] == [sqls[0], sqls[2]]
    assert _events_from(fast.path, start_fast) == _events_from(full.path, start_full)
    for side in (full, fast):
        assert loop.run_until_complete(_run(side, "CREATE TABLE bench.v (k INT)")) is None
    with mock.patch.object(fast.source, "_check_dml", wraps=fast.source._check_dml) as check:
        assert loop.run_until_complete(_run(fast, sqls[1])) is None
        assert loop.run_until_complete(_run(fast, sqls[1])) is None
    assert check.call_count == 1
    for _ in range(2):  # (the two binlogs stay alike for the module's other tests)
        _cold(full)
        assert loop.run_until_complete(_run(full, sqls[1])) is None
    assert _events_from(fast.path, start_fast) == _events_from(full.path, start_full)


@st.composite
def user_sets(draw: st.DrawFn) -> str:
    """`SET @name = integer` as clients write it, and near misses the fast path must leave to the SQL surface."""
    ws = st.sampled_from(["", " ", "  ", "\t", "\n", " \r\n "])
    name = draw(st.sampled_from(["v", "V0", "_x", "a_b_9", "binlogd_replicate_do_db", "x" * 64, "x" * 65, "1a", "é",
                                 "a.b", "a$"]))
    value = draw(st.one_of(st.integers(-10**18, 10**18).map(str), st.sampled_from(
        ["007", "-0", "999999999999999999", "9223372036854775807", "18446744073709551616", "1e3", "- 5", "--1",
         "1 2", "0x10", "'5'", "NULL", ""])))
    op = draw(st.sampled_from(["=", ":=", " = ", "=="]))
    verb = draw(st.sampled_from(["SET", "set", "Set", "SET@"]))
    gap = draw(st.sampled_from([" ", "  ", "\t"])) if verb != "SET@" else ""
    return (f"{draw(ws)}{verb}{gap}@{name}{draw(ws)}{op}{draw(ws)}{value}{draw(ws)}"
            f"{draw(st.sampled_from(['', ';', ' ;', ';;']))}{draw(ws)}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=user_sets())
def test_set_user_variable_fast_path_is_the_sql_surface(sides: tuple[asyncio.AbstractEventLoop, Side, Side],
                                                        sql: str) -> None:
    """`SET @name = integer` answered by `StandaloneSource.start` stores what the SQL surface's SET stores (or the
    statement goes to the surface), and a DML statement reading the variable logs the same USER_VAR event."""
    loop, full, fast = sides
    start_full, start_fast = full.path.stat().st_size, fast.path.stat().st_size
    assert start_full == start_fast
    with mock.patch.object(source_mod, "SET_USER_INT", mock.Mock(fullmatch=lambda _: None)):
        want = loop.run_until_complete(_run(full, sql))
    got = loop.run_until_complete(_run(fast, sql))
    assert got == want, sql
    assert fast.st.user_vars == full.st.user_vars, sql
    assert {k: type(v) for k, v in fast.st.user_vars.items()} == {k: type(v) for k, v in full.st.user_vars.items()}
    assert fast.st.diagnostics == full.st.diagnostics, sql
    name = next(iter(fast.st.user_vars), None)
    if name is not None and name.isidentifier():
        dml = f"INSERT INTO u VALUES (@{name}, 'x')"
        assert loop.run_until_complete(_run(full, dml)) == loop.run_until_complete(_run(fast, dml))
    assert _events_from(fast.path, start_fast) == _events_from(full.path, start_full), sql
