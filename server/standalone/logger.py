"""Statement + session -> event bodies, in the shapes a MariaDB 10.11 primary writes in STATEMENT format.

Pure code (no I/O). `server/demo.py` builds its demo binlog with the same encoders, and tests compare both with
a real 10.11 primary. What 10.11 writes (observed with binlog_format=STATEMENT, InnoDB tables):

* No ``BEGIN`` Query: the GTID event (header flag SUPPRESS_USE) opens the group. DDL: GTID flags2
  STANDALONE|ALLOW_PARALLEL|DDL and the one Query. DML (autocommit or BEGIN..COMMIT): flags2
  TRANSACTIONAL|ALLOW_PARALLEL, the statements, then an XID whose value is the query id of the transaction's
  first statement. binlogd stores no tables, so it cannot know a table's engine: it writes every transaction as
  InnoDB's (XID), the default engine a replica creates tables with.
* Before a statement's Query, in this order: INTVAR LAST_INSERT_ID (the statement calls LAST_INSERT_ID()),
  INTVAR INSERT_ID (never written by binlogd: the auto-increment value needs the table), RAND (the statement
  calls RAND() without a seed), USER_VAR for each user variable it reads (first reference first).
* Query status variables, in this order: Q_FLAGS2, Q_SQL_MODE, Q_CATALOG_NZ 'std', Q_AUTO_INCREMENT (only when
  increment or offset is not 1), Q_CHARSET (client, connection, server collation ids), Q_TIME_ZONE and Q_HRNOW
  (statements that read the clock), Q_XID for table DDL (the statement's query id; not for TRUNCATE nor
  CREATE/ALTER DATABASE).
* CREATE/ALTER/DROP DATABASE: the database itself is the Query's db, header flag SUPPRESS_USE (DROP also
  THREAD_SPECIFIC and Q_XID). Other statements carry the session's default database.
* Under ``SET skip_replication=1`` every event the session writes gets 0x8000.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from binlogd.protocol.constants import (
    FL_ALLOW_PARALLEL,
    FL_DDL,
    FL_STANDALONE,
    FL_TRANSACTIONAL,
    GTID_EVENT,
    HEADER_LEN,
    INTVAR_EVENT,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    Q_AUTO_INCREMENT,
    Q_CATALOG_NZ_CODE,
    Q_CHARSET_CODE,
    Q_FLAGS2_CODE,
    Q_HRNOW,
    Q_SQL_MODE_CODE,
    Q_TIME_ZONE_CODE,
    Q_XID,
    QUERY_EVENT,
    RAND_EVENT,
    USER_VAR_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import (
    AutoIncrement,
    GtidBody,
    IntvarBody,
    QueryBody,
    QueryCharset,
    RandBody,
    StatusVarValue,
    UserVarBody,
    XidBody,
    encode_gtid,
    encode_intvar,
    encode_query,
    encode_rand,
    encode_user_var,
    encode_xid,
)

from ..sql_surface import DecimalText

# Q_FLAGS2: the OPTION_* bits MariaDB writes (OPTIONS_WRITTEN_TO_BIN_LOG). A 10.11 default session has only
# explicit_defaults_for_timestamp; autocommit=0 is not written (observed).
OPTION_AUTO_IS_NULL: Final = 1 << 14
OPTION_EXPLICIT_DEF_TIMESTAMP: Final = 1 << 24
OPTION_NO_FOREIGN_KEY_CHECKS: Final = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS: Final = 1 << 27
FLAGS2: Final = OPTION_EXPLICIT_DEF_TIMESTAMP
# Q_SQL_MODE of 10.11's default STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,
# NO_ENGINE_SUBSTITUTION (MariaDB bit numbers 21, 26, 28, 30).
SQL_MODE: Final = (1 << 21) | (1 << 26) | (1 << 28) | (1 << 30)
GTID_DDL_FLAGS: Final = FL_STANDALONE | FL_ALLOW_PARALLEL | FL_DDL
GTID_TRX_FLAGS: Final = FL_TRANSACTIONAL | FL_ALLOW_PARALLEL
LOG_EVENT_THREAD_SPECIFIC_F: Final = 0x0004

# USER_VAR value types (Item_result) and the charset MariaDB writes for numbers (my_charset_numeric = latin1)
STRING_RESULT: Final = 0
REAL_RESULT: Final = 1
INT_RESULT: Final = 2
DECIMAL_RESULT: Final = 4
NUMERIC_CHARSET: Final = 8
BINARY_COLLATION: Final = 63
UNSIGNED_F: Final = 1

Ev: TypeAlias = tuple[int, bytes, int, int]
"""One event to write: (type code, body, header flags without the skip flag, timestamp)."""

TablesInfoHook: TypeAlias = Callable[[str, str | None], tuple[int, bytes] | None]
"""`--binlog-with-tables-info` (issue 3 part B): (statement, default db) -> (type code, body) of the ignorable
informational event to write before the statement's events (its INTVAR/RAND/USER_VAR and Query), or None for no
event. The logger adds LOG_EVENT_IGNORABLE_F to its flags."""


@dataclass(frozen=True, slots=True)
class QueryContext:
    """What a Query event's post-header and status variables depend on (the session, at the statement)."""

    thread_id: int
    charset: QueryCharset
    db: str = ""
    flags2: int = FLAGS2
    sql_mode: int = SQL_MODE
    auto_increment: AutoIncrement | None = None
    time_zone: str | None = None
    hrnow: int | None = None  # microseconds of the statement's start, for statements that read the clock


# (context, db override) -> the QUERY body up to its query text: a session's statements share everything before
# the text (thread id, db, status variables) unless they read the clock (Q_HRNOW) or carry a Q_XID
_PREFIXES: dict[tuple[QueryContext, str | None], bytes] = {}
_PREFIXES_MAX = 4096


def query_body(sql: str | bytes, ctx: QueryContext, *, db: str | None = None, xid: int | None = None) -> bytes:
    """A QUERY body with MariaDB 10.11's status variables in its order; `db` overrides ctx.db.

    The query text is the body's last field, so the bytes before it are encoded once per (context, db) and
    reused (`encode_query` of the same fields with an empty text is exactly that prefix)."""
    text = sql.encode() if isinstance(sql, str) else sql
    if ctx.hrnow is None and xid is None:
        key = (ctx, db)
        prefix = _PREFIXES.get(key)
        if prefix is None:
            if len(_PREFIXES) >= _PREFIXES_MAX:
                _PREFIXES.clear()
            prefix = _PREFIXES[key] = _query_body(b"", ctx, db, xid)
        return prefix + text
    return _query_body(text, ctx, db, xid)


def _query_body(text: bytes, ctx: QueryContext, db: str | None, xid: int | None) -> bytes:
    status: dict[int, StatusVarValue] = {Q_FLAGS2_CODE: ctx.flags2, Q_SQL_MODE_CODE: ctx.sql_mode,
                                         Q_CATALOG_NZ_CODE: b"std"}
    if ctx.auto_increment is not None and ctx.auto_increment != (1, 1):
        status[Q_AUTO_INCREMENT] = ctx.auto_increment
    status[Q_CHARSET_CODE] = ctx.charset
    if ctx.time_zone is not None:
        status[Q_TIME_ZONE_CODE] = ctx.time_zone.encode()
    if ctx.hrnow is not None:
        status[Q_HRNOW] = ctx.hrnow
    if xid is not None:
        status[Q_XID] = xid
    return encode_query(QueryBody(thread_id=ctx.thread_id, exec_time=0, error_code=0,
                                  db=(ctx.db if db is None else db).encode(), query=text, status_vars=status))


def gtid_body(seq_no: int, domain_id: int, ddl: bool) -> bytes:
    return encode_gtid(GtidBody(seq_no=seq_no, domain_id=domain_id, flags2=GTID_DDL_FLAGS if ddl else GTID_TRX_FLAGS))


def xid_body(xid: int) -> bytes:
    return encode_xid(XidBody(xid))


def rand_body(seed1: int, seed2: int) -> bytes:
    return encode_rand(RandBody(seed1, seed2))


def last_insert_id_body(value: int) -> bytes:
    return encode_intvar(IntvarBody(INTVAR_LAST_INSERT_ID, value))


def user_var_body(name: str, value: object, collation: int) -> bytes:
    """USER_VAR as MariaDB writes it for a value the session holds (`collation`: collation_connection's id).

    Strings carry the connection collation, bytes the binary one; INT (8 bytes, plus the UNSIGNED flag byte)
    and REAL (a double) and DECIMAL (precision, scale, MariaDB's binary decimal) carry the numeric charset.
    """
    n = name.encode()
    if value is None:
        return encode_user_var(UserVarBody(name=n, is_null=True))
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        unsigned = value > 0x7FFFFFFFFFFFFFFF
        raw = value.to_bytes(8, "little", signed=not unsigned)
        return encode_user_var(UserVarBody(name=n, is_null=False, type=INT_RESULT, charset=NUMERIC_CHARSET,
                                           value=raw, flags=UNSIGNED_F if unsigned else 0))
    if isinstance(value, float):
        return encode_user_var(UserVarBody(name=n, is_null=False, type=REAL_RESULT, charset=NUMERIC_CHARSET,
                                           value=struct.pack("<d", value)))
    if isinstance(value, DecimalText):
        return encode_user_var(UserVarBody(name=n, is_null=False, type=DECIMAL_RESULT, charset=NUMERIC_CHARSET,
                                           value=decimal_value(str(value))))
    if isinstance(value, bytes | bytearray):
        return encode_user_var(UserVarBody(name=n, is_null=False, type=STRING_RESULT, charset=BINARY_COLLATION,
                                           value=bytes(value)))
    return encode_user_var(UserVarBody(name=n, is_null=False, type=STRING_RESULT, charset=collation,
                                       value=str(value).encode("utf-8", "surrogateescape")))


_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_value(text: str) -> bytes:
    """USER_VAR's DECIMAL value: precision, scale, then decimal2bin (9-digit groups big-endian in 4 bytes, partial
    groups in fewer, every byte inverted for negatives, then the first byte's top bit flipped)."""
    neg = text.startswith("-")
    int_part, _, frac = text.lstrip("+-").partition(".")
    int_part = int_part.lstrip("0") or "0"
    intg, scale = len(int_part), len(frac)
    out = bytearray()
    head = intg % 9
    if head:
        out += int(int_part[:head]).to_bytes(_DIG2BYTES[head], "big")
    for i in range(head, intg, 9):
        out += int(int_part[i : i + 9]).to_bytes(4, "big")
    full = scale - scale % 9
    for i in range(0, full, 9):
        out += int(frac[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac[full:]).to_bytes(_DIG2BYTES[scale % 9], "big")
    if neg:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes((intg + scale, scale)) + bytes(out)


@dataclass(slots=True)
class Group:
    """One event group to commit: a standalone DDL or a transaction. The GTID (and seq_no) is added at write
    time, in commit order; `xid` adds the closing XID event."""

    ddl: bool
    events: list[Ev]
    timestamp: int
    skip: bool = False
    xid: int | None = None
    info: list[str] = field(default_factory=list)  # statements, for logs
    schema_change: tuple[str, str | None] | None = None  # DDL: (statement, default db) for the writer's catalogue


# a GTID event without the optional parts (what binlogd writes): header, seq_no, domain_id, flags2, zero padding
# to the 19-byte body (`gtid_body`), in one pack; an XID event likewise (tests/test_standalone_fast_path.py checks
# both against the generic encoders)
_GTID_EVENT: Final = struct.Struct("<IBIIIHQIB6x")
_GTID_EVENT_LEN: Final = _GTID_EVENT.size + 4
_XID_EVENT: Final = struct.Struct("<IBIIIHQ")
_XID_EVENT_LEN: Final = _XID_EVENT.size + 4
_EVENT_HEADER: Final = struct.Struct("<IBIIIH")
_crc32: Final = zlib.crc32


def encode_group(g: Group, *, server_id: int, domain_id: int, seq_no: int, start: int) -> bytes:
    """The group's bytes at file offset `start` (log_pos of each event = its end), CRC32 on every event.

    One pack per header (the GTID and XID events whole) and the CRC chained over header and body, so no event is
    copied before the final join: this runs once per commit on the event loop."""
    skip = LOG_EVENT_SKIP_REPLICATION_F if g.skip else 0
    ts = g.timestamp
    pos = start + _GTID_EVENT_LEN
    gtid = _GTID_EVENT.pack(ts, GTID_EVENT, server_id, _GTID_EVENT_LEN, pos, LOG_EVENT_SUPPRESS_USE_F | skip, seq_no,
                            domain_id, GTID_DDL_FLAGS if g.ddl else GTID_TRX_FLAGS)
    parts = [gtid, _crc32(gtid).to_bytes(4, "little")]
    for type_code, body, flags, ets in g.events:
        length = HEADER_LEN + len(body) + 4
        pos += length
        head = _EVENT_HEADER.pack(ets, type_code, server_id, length, pos, flags | skip)
        parts += (head, body, _crc32(body, _crc32(head)).to_bytes(4, "little"))
    if g.xid is not None:
        pos += _XID_EVENT_LEN
        xid = _XID_EVENT.pack(ts, XID_EVENT, server_id, _XID_EVENT_LEN, pos, skip, g.xid)
        parts += (xid, _crc32(xid).to_bytes(4, "little"))
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class StatementEvents:
    """What one logged statement contributes: the events before its Query and the Query itself."""

    sql: str
    ctx: QueryContext
    timestamp: int
    last_insert_id: int | None = None  # INTVAR LAST_INSERT_ID value
    insert_id: int | None = None  # INTVAR INSERT_ID: only when the client gave it (SET insert_id=n)
    rand: tuple[int, int] | None = None
    user_vars: tuple[tuple[str, object], ...] = ()
    collation: int = 45
    db: str | None = None  # database-level DDL: the database, with SUPPRESS_USE
    query_flags: int = 0
    xid: int | None = None  # Q_XID of table DDL

    def events(self, tables_info: TablesInfoHook | None = None) -> list[Ev]:
        ts = self.timestamp
        out: list[Ev] = []
        if tables_info is not None:  # first: between INTVAR/RAND/USER_VAR and the Query, the dummy a capability < 2
            # replica gets for it would be executed as a statement and reset what they set (LAST_INSERT_ID)
            info = tables_info(self.sql, (self.ctx.db if self.db is None else self.db) or None)  # the Query's db
            if info is not None:
                out.append((info[0], info[1], LOG_EVENT_IGNORABLE_F, ts))
        if self.last_insert_id is not None:
            out.append((INTVAR_EVENT, last_insert_id_body(self.last_insert_id), 0, ts))
        if self.insert_id is not None:
            out.append((INTVAR_EVENT, encode_intvar(IntvarBody(INTVAR_INSERT_ID, self.insert_id)), 0, ts))
        if self.rand is not None:
            out.append((RAND_EVENT, rand_body(*self.rand), 0, ts))
        for name, value in self.user_vars:
            out.append((USER_VAR_EVENT, user_var_body(name, value, self.collation), 0, ts))
        out.append((QUERY_EVENT, query_body(self.sql, self.ctx, db=self.db, xid=self.xid), self.query_flags, ts))
        return out
