"""Per-replica table filters on the primary side: which events of a dump the replica's replicate-* rules reject.

The rules themselves are `protocol.repl_filters` (the applier's and `binlogd show`'s, proven equal to a MariaDB
10.11 replica's). This module feeds them from raw events of one dump stream, in order, as a replica applying
those options itself would see them:

* a statement (QUERY) by its default database and the tables it changes: from the TABLES_INFO event right before
  it (binlogd --binlog-with-tables-info) when there is one, else from its parsed SQL; transaction keywords
  (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, XA) are never filtered (a partly filtered transaction keeps its frame);
* a row event by its TABLE_MAP (table id -> verdict, per statement); a rejected row event that ends a statement
  (STMT_END_F) in which another table was kept is still sent, as a self-filtering MariaDB replica still executes
  it (it ends the statement there);
* everything else (GTID, XID, INTVAR/RAND/USER_VAR, ANNOTATE_ROWS, ...) is not a table filter's business: the
  capability rules of `protocol.decision` decide it.

`replicate-rewrite-db` renames instead of rejecting: a kept QUERY's default database or a TABLE_MAP's database is
rewritten in the event (its length changes; its log_pos stays the primary's end position). What a rejected
event becomes (hole or same-length dummy) is `protocol.decision.explain`'s rule, not this module's.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from .constants import (
    CRC_LEN,
    GTID_EVENT,
    HEADER_LEN,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROWS_EVENT_TYPES,
    STMT_END_F,
    TABLE_MAP_EVENT,
    XID_EVENT,
)
from .repl_filters import (
    ConfiguredBy,
    FilterError,
    FilterSet,
    FilterType,
    Rule,
    check_value,
    is_ddl_db,
    updated_tables,
)
from .tables_info import TABLES_INFO_EVENT, TableName, TablesInfoError, parse_tables_info

# the event types a table filter looks at (GTID/XID only to follow the groups)
WATCHED_TYPES = frozenset({QUERY_EVENT, QUERY_COMPRESSED_EVENT, TABLE_MAP_EVENT, TABLES_INFO_EVENT, GTID_EVENT,
                           XID_EVENT, *ROWS_EVENT_TYPES})
SESSION_VAR_PREFIX = "binlogd_"  # @binlogd_replicate_do_table ... one user variable per replicate-* option
_QUERY_POST_HEADER = 13  # thread_id 4, exec_time 4, db_len 1, error_code 2, status_vars_len 2
_LEN = struct.Struct("<I")


def session_var(ftype: FilterType) -> str:
    """The user variable a CDC client sets for `ftype`: `binlogd_replicate_do_table` (lower case, no '@')."""
    return SESSION_VAR_PREFIX + ftype.value.lower()


SESSION_VARS: dict[str, FilterType] = {session_var(t): t for t in FilterType}


def split_values(ftype: FilterType, text: str) -> tuple[str, ...]:
    """A comma-separated list of `ftype` rule values, each checked (FilterError names the bad one).

    A rewrite may not make a database name longer: binlogd renames inside the events it sends, and a MariaDB
    replica's IO thread adds each event's length to Read_Master_Log_Pos, moving it forward to the event's log_pos
    only (slave.cc queue_event: "holes" from master-side filtering); a longer event would leave it ahead of the
    primary's real position (a heartbeat then stops the IO thread with 1595, a file/pos reconnect asks for a
    position inside an event). A shorter or equal name is exact: the replica moves to the event's log_pos."""
    items = [v for v in text.split(",") if v.strip()]
    if not items:
        raise FilterError(f"empty value for {ftype.option}")
    values = tuple(check_value(ftype, v) for v in items)
    if ftype is FilterType.REWRITE_DB:
        for v in values:
            src, _, dst = v.partition("->")
            if len(dst.encode()) > len(src.encode()):
                raise FilterError(f"replicate-rewrite-db {v!r}: the new name may not be longer than the old one "
                                  "(replicas count the events' lengths into their read position)")
    return values


def parse_assignment(text: str) -> tuple[FilterType, tuple[str, ...]]:
    """`replicate-do-table=db.t1,db.t2` -> (DO_TABLE, values); FilterError for an unknown option or bad value."""
    name, sep, value = text.partition("=")
    try:
        ftype = FilterType.from_name(name)
    except ValueError:
        raise FilterError(f"unknown filter {name.strip()!r} (one of: "
                          f"{', '.join(t.option for t in FilterType)})") from None
    if not sep:
        raise FilterError(f"{ftype.option}: expected {ftype.option}=VALUE[,VALUE...]")
    return ftype, split_values(ftype, value)


def build_filter_set(assignments: dict[FilterType, tuple[str, ...]], by: ConfiguredBy) -> FilterSet | None:
    """A FilterSet of the given rules (None when there are none)."""
    fs = FilterSet({t: Rule(t, v, by) for t, v in assignments.items() if v})
    return fs if fs.rules else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A table filter's answer for one event: `rule` (the deciding option, e.g. `replicate-do-table`) when it is
    rejected; `new_db` when it is kept with its database renamed (replicate-rewrite-db)."""

    rule: str | None = None
    new_db: bytes | None = None


KEEP = Verdict()


def _is_trans_keyword(query: bytes) -> bool:
    """MariaDB's Query_log_event::is_trans_keyword (prefix compare as strncmp with the query's length)."""
    up = query.strip().upper()
    n = len(up)
    return ((n > 0 and (b"BEGIN"[:n] == up or b"COMMIT"[:n] == up)) or up.startswith(b"SAVEPOINT")
            or up.startswith(b"ROLLBACK") or up.startswith(b"XA "))


@dataclass
class TableFilterStream:
    """One dump's table filter: feed every watched event in stream order with `decide`."""

    filters: FilterSet
    _maps: dict[int, bool] = field(default_factory=dict)  # table id -> kept, for the current statement
    _kept_in_stmt: bool = False
    _tables_info: list[TableName] | None = None
    _map_rule: dict[int, str] = field(default_factory=dict)  # table id -> the rule that rejected its TABLE_MAP
    _counts: dict[FilterType, int] = field(default_factory=dict)  # rule counters before the last apply_*
    _by_table: dict[bytes, Verdict] = field(default_factory=dict)  # TABLE_MAP verdicts by raw db\0table (pure)
    in_standalone_group: bool = False  # after a GTID with FL_STANDALONE, until its statement

    def decide(self, ev: memoryview | bytes, checksum: bool) -> Verdict:
        """The verdict for the whole event `ev` (header included, CRC when `checksum`)."""
        typ = ev[4]
        end = len(ev) - (CRC_LEN if checksum else 0)
        if typ == GTID_EVENT:
            self.in_standalone_group = end > HEADER_LEN + 12 and bool(ev[HEADER_LEN + 12] & 1)
            self._end_statement()
            self._tables_info = None
            return KEEP
        if typ == XID_EVENT:
            self.in_standalone_group = False
            return KEEP
        if typ == TABLES_INFO_EVENT:
            try:
                self._tables_info = list(parse_tables_info(bytes(ev[HEADER_LEN:end])).relative)
            except ValueError:
                self._tables_info = None
            return KEEP
        if typ in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            v = self._statement(ev, typ, end)
            self._tables_info = None
            return v
        if typ == TABLE_MAP_EVENT:
            return self._table_map(ev, end)
        if typ in ROWS_EVENT_TYPES and end >= HEADER_LEN + 8:
            table_id = int.from_bytes(ev[HEADER_LEN:HEADER_LEN + 6], "little")
            kept = self._maps.get(table_id, True)
            stmt_end = bool(int.from_bytes(ev[HEADER_LEN + 6:HEADER_LEN + 8], "little") & STMT_END_F)
            keep_end = stmt_end and self._kept_in_stmt
            v = KEEP if kept or keep_end else Verdict(self._map_rule.get(table_id))
            if stmt_end:
                self._end_statement()
            return v
        return KEEP

    def _end_statement(self) -> None:
        """A statement's table ids are its own (a new group or STMT_END_F ends them)."""
        self._maps.clear()
        self._map_rule.clear()
        self._kept_in_stmt = False

    def _snapshot(self) -> None:
        self._counts = {t: r.counter for t, r in self.filters.rules.items()}

    def _deciding_rule(self) -> str | None:
        """The rule (not rewrite) whose counter moved since `_snapshot`."""
        for t, r in self.filters.rules.items():
            if t is not FilterType.REWRITE_DB and r.counter != self._counts.get(t, 0):
                return t.option
        return None

    def _statement(self, ev: memoryview | bytes, typ: int, end: int) -> Verdict:
        body = HEADER_LEN
        if end - body < _QUERY_POST_HEADER:
            return KEEP
        db_len = ev[body + 8]
        status_len = ev[body + 11] | (ev[body + 12] << 8)
        db_at = body + _QUERY_POST_HEADER + status_len
        q_at = db_at + db_len + 1
        if q_at > end:
            return KEEP
        db = bytes(ev[db_at:db_at + db_len])
        raw = bytes(ev[q_at:end])
        if typ == QUERY_COMPRESSED_EVENT:
            raw = _decompress(raw)
            if raw is None:
                return KEEP
        self.in_standalone_group = False
        if _is_trans_keyword(raw):
            return KEEP
        sql = raw.decode("utf-8", "replace")
        try:
            tables = updated_tables(sql, self._tables_info)
        except (TablesInfoError, ValueError):
            tables = self._tables_info or []
        dbname = db.decode("utf-8", "replace") or None
        self._snapshot()
        keep = self.filters.apply_statement(dbname, tables, is_ddl_db(raw))
        if not keep:
            return Verdict(self._deciding_rule() or "replicate-do-db")
        new = self.filters.rewrite_db(dbname)
        if dbname is not None and new != dbname and not is_ddl_db(raw):
            return Verdict(None, (new or "").encode())
        return KEEP

    def _table_map(self, ev: memoryview | bytes, end: int) -> Verdict:
        b = HEADER_LEN
        if end - b < 10:
            return KEEP
        table_id = int.from_bytes(ev[b:b + 6], "little")
        db_len = ev[b + 8]
        t_at = b + 9 + db_len + 1
        if t_at >= end:
            return KEEP
        t_len = ev[t_at]
        key = bytes(ev[b + 8:t_at + 1 + t_len])
        v = self._by_table.get(key)
        if v is None:
            v = self._decide_table(bytes(ev[b + 9:b + 9 + db_len]).decode("utf-8", "replace"),
                                   bytes(ev[t_at + 1:t_at + 1 + t_len]).decode("utf-8", "replace"))
            if len(self._by_table) >= 4096:  # bounded: a stream over very many tables just decides again
                self._by_table.clear()
            self._by_table[key] = v
        self._maps[table_id] = v.rule is None
        if v.rule is not None:
            self._map_rule[table_id] = v.rule
        else:
            self._kept_in_stmt = True
        return v

    def _decide_table(self, db: str, table: str) -> Verdict:
        """A table's verdict: the rules for row events are a function of the names alone."""
        self._snapshot()
        if not self.filters.apply_row_event(db, table):
            return Verdict(self._deciding_rule() or "replicate-do-db")
        new = self.filters.rewrite_db(db)
        return Verdict(None, new.encode()) if new is not None and new != db else KEEP


def _decompress(raw: bytes) -> bytes | None:
    """A QUERY_COMPRESSED statement (MariaDB's header byte: 0x80 | length-of-length, the length, zlib)."""
    if not raw or raw[0] & 0x80 == 0:
        return None
    n = raw[0] & 0x07
    try:
        return zlib.decompress(raw[1 + n:])
    except zlib.error:
        return None


def rename_db(ev: memoryview | bytes, new_db: bytes, checksum: bool) -> bytes:
    """The QUERY (default database) or TABLE_MAP (table's database) event `ev` with its database renamed: new
    length in the header, log_pos kept (the primary's position), CRC recomputed when `checksum`."""
    typ = ev[4]
    end = len(ev) - (CRC_LEN if checksum else 0)
    b = HEADER_LEN
    if typ == TABLE_MAP_EVENT:
        db_len_at, db_at = b + 8, b + 9
    else:
        status_len = ev[b + 11] | (ev[b + 12] << 8)
        db_len_at, db_at = b + 8, b + _QUERY_POST_HEADER + status_len
    old_len = ev[db_len_at]
    if len(new_db) > 255:
        raise ValueError(f"database name of {len(new_db)} bytes")
    out = bytearray(ev[:db_at])
    out[db_len_at] = len(new_db)
    out += new_db
    out += ev[db_at + old_len:end]
    if checksum:
        out += b"\0" * CRC_LEN
    _LEN.pack_into(out, 9, len(out))
    if checksum:
        out[-CRC_LEN:] = (zlib.crc32(memoryview(out)[:-CRC_LEN]) & 0xFFFFFFFF).to_bytes(CRC_LEN, "little")
    return bytes(out)


__all__ = ["KEEP", "SESSION_VARS", "WATCHED_TYPES", "FilterError", "TableFilterStream", "Verdict",
           "build_filter_set", "parse_assignment", "rename_db", "session_var", "split_values"]
