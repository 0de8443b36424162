"""Applying event groups to the target through pymysql, one worker thread per channel (never the event loop).

A `Group` is what the channel read between two group boundaries (GTID ... XID/COMMIT, a standalone DDL, a
pre-GTID BEGIN ... COMMIT). `TargetSession.apply(group)` runs it as one target transaction and writes the
channel's position (applier/position.py) inside that same transaction, so a crash anywhere leaves either the
whole group with its position or neither. DDL commits implicitly: its position is written right after.
`apply_many(groups)` does the same for consecutive groups whose statements go out together (applier/pipeline.py),
committing runs of row transactions as one target transaction where the target does not keep the source's GTIDs
(applier/grouping.py).

Statement events are replayed like a MariaDB SQL thread does: the status variables of each Query event
(default database, sql_mode, character set and collations, time_zone, lc_time_names, collation_database,
pseudo_thread_id, TIMESTAMP with microseconds, foreign_key_checks / unique_checks / sql_auto_is_null /
check_constraint_checks from flags2, auto_increment_increment/offset) become `SET @@session...` on the target
session (only the ones that changed), USER_VAR / INTVAR / RAND become `SET @v`, `SET INSERT_ID`,
`SET LAST_INSERT_ID`, `SET @@rand_seed1/2`, and the statement bytes are sent unchanged. Row events are decoded
by applier/rows.py and applied as multi-row INSERT / UPDATE ... LIMIT 1 / DELETE ... LIMIT 1 keyed by the
before image (the primary key when the image holds it, else every column with `<=>`), mapping columns by
position onto the target table like MariaDB does. Errors stop the channel with MariaDB-style texts.

Names: `Group`, `ApplyError`, `TargetSession` (`connect`, `apply`, `apply_many`, `load_position`, `close`), `is_ddl`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Final

import pymysql
from binlogd.protocol.constants import (
    EVENT_TYPE_NAMES as EVENT_NAMES,
)
from binlogd.protocol.constants import (
    INT_RESULT,
    NO_FOREIGN_KEY_CHECKS_F,
    OPTION_AUTO_IS_NULL,
    OPTION_NO_CHECK_CONSTRAINT_CHECKS,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_RELAXED_UNIQUE_CHECKS,
    Q_AUTO_INCREMENT,
    Q_CHARSET_CODE,
    Q_CHARSET_DATABASE_CODE,
    Q_FLAGS2_CODE,
    Q_HRNOW,
    Q_LC_TIME_NAMES_CODE,
    Q_SQL_MODE_CODE,
    Q_TIME_ZONE_CODE,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    REAL_RESULT,
    RELAXED_UNIQUE_CHECKS_F,
    ROWS_EVENT_TYPES,
    STMT_END_F,
    STRING_RESULT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    USER_VAR_UNSIGNED_F,
)
from binlogd.protocol.constants import (
    INTVAR_EVENT as _INTVAR,
)
from binlogd.protocol.events import (
    Event,
    EventDecodeError,
    Gtid,
    QueryBody,
    RowsBody,
    TableMapBody,
    UserVarBody,
    fde_checksum_alg,
)
from pymysql.constants import CLIENT

from .grouping import JOIN_BYTES, Run, joinable
from .native import SESSION as NATIVE_SESSION
from .native import STATEMENT_BYTES, TOUCHED, binlog_sql
from .pipeline import CONNECTION_LOST, RETRYABLE, Pipeline
from .pipeline import error_code as _code
from .pipeline import error_message as _msg
from .position import Position, PositionStore
from .position_events import PositionEvents, fusable_fde
from .rows import INT_SIZES, Reader, TableMap, decode_decimal, decode_rows, decode_table_map, readers

log = logging.getLogger("binlogd.apply")

ER_KEY_NOT_FOUND: Final = 1032
ER_SLAVE_CONVERSION_FAILED: Final = 1677
ER_UNKNOWN_ERROR: Final = 1105
TRANSACTION_RETRIES: Final = 10  # slave_transaction_retries
PIPELINE_BYTES: Final = 1 << 20  # statements sent per round trip (max_allowed_packet is 16 MiB by default)
UTF8MB4_GENERAL_CI: Final = 45
TABLES_INFO_EVENT: Final = 159
# gtid_seq_no=0: the next GTID is allocated, not the source's seq_no that the session still holds
OWN_GTID: Final = {"@@session.gtid_domain_id": "@@global.gtid_domain_id", "@@session.server_id": "@@global.server_id",
                   "@@session.gtid_seq_no": "0"}
BOOKKEEPING_DOMAIN: Final = 4294967295  # the last GTID domain: what the applier writes on its own, never a source's
BOOKKEEPING_GTID: Final = {"@@session.gtid_domain_id": str(BOOKKEEPING_DOMAIN),
                           "@@session.server_id": "@@global.server_id", "@@session.gtid_seq_no": "0"}
_ESCAPES: Final = {0: "\\0", 10: "\\n", 13: "\\r", 26: "\\Z", 39: "\\'", 34: '\\"', 92: "\\\\"}

_CODECS: Final = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252", "ascii": "ascii",
                  "cp1251": "cp1251", "cp1250": "cp1250", "cp1256": "cp1256", "cp1257": "cp1257",
                  "greek": "iso8859-7", "hebrew": "iso8859-8", "latin2": "iso8859-2", "latin5": "iso8859-9",
                  "latin7": "iso8859-13", "koi8r": "koi8-r", "koi8u": "koi8-u", "ucs2": "utf-16-be",
                  "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be", "sjis": "shift_jis",
                  "ujis": "euc-jp", "gbk": "gbk", "big5": "big5", "euckr": "euc-kr", "gb2312": "gb2312"}
_TXN_WORDS: Final = (b"BEGIN", b"COMMIT", b"ROLLBACK")
_DML = re.compile(rb"^\s*(?:/\*.*?\*/\s*)*(?:INSERT|UPDATE|DELETE|REPLACE|SELECT|SAVEPOINT|RELEASE|SET|DO|CALL)\b",
                  re.IGNORECASE | re.DOTALL)
_DDL_DB = re.compile(rb"^\s*(?:/\*.*?\*/\s*)*(?:CREATE|ALTER|DROP)\s+(?:DATABASE|SCHEMA)\b", re.IGNORECASE | re.DOTALL)
_HANDLER_ERRORS: Final = {1062: "HA_ERR_FOUND_DUPP_KEY", 1032: "HA_ERR_KEY_NOT_FOUND", 1452: "HA_ERR_NO_REFERENCED_ROW",
                          1451: "HA_ERR_ROW_IS_REFERENCED"}


def is_ddl(query: bytes) -> bool:
    """Statements after which cached target table definitions may be stale."""
    return not _DML.match(query) and query.strip().upper() not in _TXN_WORDS


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class ApplyError(Exception):
    """The channel must stop: `code` is Last_SQL_Errno, `message` Last_SQL_Error (MariaDB's wording)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class NativeRowsError(ApplyError):
    """The target refused a BINLOG statement: the group is rolled back and run again through the SQL path,
    whose error (if it fails there too) names the rows event and position exactly."""


@dataclass(slots=True)
class Group:
    """One event group as read from the source; `end` is the channel position just after it."""

    events: list[Event] = field(default_factory=list)
    gtid: Gtid | None = None
    transactional: bool = False
    flagged: bool = False  # its events carry 0x8000 (skip_replication on the source session)
    rollback: bool = False  # ends with ROLLBACK: changes undone, position still advances
    end: Position = field(default_factory=Position)
    kind: str | None = None  # GTID_FLAGS2 class of an applied GTID event: "ddl", "trans" or "non_trans"
    events_read: int = 0  # stream events this item stands for (Executed_log_entries), dropped ones included
    raws: list[bytes] = field(default_factory=list)  # per event: its bytes for TABLE_MAP and rows events, else b""
    fde: bytes | None = None  # the source's FORMAT_DESCRIPTION event (BINLOG statements need it first)


@dataclass(slots=True)
class TargetTable:
    qualified: str
    names: list[str]
    codecs: list[str | None]
    unsigned: list[bool]
    generated: list[bool]
    pk: list[int]


class TargetSession:
    """One target connection for one channel. Not thread-safe: the channel's single worker thread owns it."""

    def __init__(self, host: str, port: int, user: str, password: str, channel: str,
                 replicate_flagged: bool = True) -> None:
        self.params: dict[str, Any] = {
            "host": host, "port": port, "user": user, "password": password, "autocommit": True,
            "charset": "utf8mb4", "client_flag": CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS, "connect_timeout": 10,
            "ssl_disabled": True,
        }
        self.channel = channel
        self.replicate_flagged = replicate_flagged  # REPLICATE mode: flagged groups keep the flag downstream
        self.filters: Any = None  # applier.filters.FilterSet, set by the channel
        self.conn: Any = None
        self._state: dict[str, str] = {}
        self._tables: dict[tuple[str, str], TargetTable] = {}
        self._maps: dict[int, tuple[TableMap, bool]] = {}
        self._table_maps: dict[TableMapBody, TableMap] = {}
        self._readers: dict[tuple[int, str, str], list[Reader]] = {}
        self._collations: dict[int, tuple[str, str]] = {}
        self._pending: list[str] = []
        self._pipe = Pipeline()  # statements not sent yet (one round trip when run)
        self._group_rows = 0  # row images queued in the group being queued
        self._batch_done = 0  # groups of the current apply_many whose COMMIT succeeded
        self.binlog_gtids: dict[int, Gtid] = {}  # the target's @@gtid_binlog_pos at start (read_binlog_gtids)
        self._tables_info: list[tuple[str | None, str]] | None = None
        self.preserve_gtids = True  # MariaDB targets: applied groups keep the source's GTID (as a replica does)
        self.native_rows = True  # MariaDB targets: row events go as BINLOG statements (applier/native.py)
        self.native = False  # this connection applies them so (a MariaDB target)
        self._native_now = True  # off while a group the target refused natively runs through the SQL path
        self._fde_sent: bytes | None = None  # the FDE this target session was given with BINLOG
        self.native_statements = 0
        self.fused_groups = 0  # groups sent as BINLOG statements that carry their position row
        self.joined_groups = 0  # of those, groups committed in one target transaction with others (grouping.py)
        self._pos_events: PositionEvents | None = None  # the position row as events (applier/position_events.py)
        self._pos_stored = False  # the channel's position row exists (the events update it; SQL inserts it)
        self._fuse_fde: tuple[bytes | None, int | None] = (None, None)  # an FDE and its checksum alg if fusable
        self.keep_gtids = False
        self.rows_applied = 0
        self.groups_applied = 0
        self.retried = 0  # groups retried after a deadlock, lock wait timeout or lost target (Retried_transactions)
        self.current: str = ""  # what is being applied (Slave_SQL_Running_State)

    # ---- connection ----------------------------------------------------------------------------------------

    def connect(self) -> None:
        if self.conn is not None:
            return
        try:
            self.conn = pymysql.connect(**self.params)
        except pymysql.MySQLError as e:
            raise ApplyError(_code(e), f"cannot connect to the target {self.params['host']}:{self.params['port']}: "
                                       f"{_msg(e)}") from None
        self._state.clear()
        self._fde_sent = None
        self._tables.clear()
        self._readers.clear()
        self.native = self.native_rows and "mariadb" in self.conn.get_server_info().lower()
        with self.conn.cursor() as cur:
            cur.execute("SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS "
                        "WHERE ID IS NOT NULL")
            self._collations = {int(r[0]): (str(r[1]), str(r[2])) for r in cur.fetchall()}
        self.keep_gtids = False
        with self.conn.cursor() as cur:  # no binlog on the target: no GTID to give each group (one SET less each)
            cur.execute("SELECT @@log_bin")
            log_bin = bool(int(cur.fetchone()[0]))
        if self.preserve_gtids and log_bin and "mariadb" in self.conn.get_server_info().lower():
            try:  # the source's GTIDs go to the target's binlog (SET gtid_domain_id/server_id/gtid_seq_no)
                self._set_session(OWN_GTID)
                self._flush()
                self.keep_gtids = True
            except pymysql.MySQLError as e:
                self._state.clear()
                log.warning("channel %r: the target's binlog gets its own GTIDs, not the source's: %s", self.channel,
                            _msg(e))
        if not PositionStore.schema_exists(self.conn):
            if self.keep_gtids:  # bookkeeping: binlogged (the target's replicas need the table), in its own domain
                self._set_session(BOOKKEEPING_GTID)
                self._flush()
            PositionStore.ensure_schema(self.conn)
        self._pos_events = PositionEvents.for_target(self.conn, self.channel) if self.native else None

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):  # closing a broken socket
                self.conn.close()
            self.conn = None

    def load_position(self) -> Position | None:
        self.connect()
        stored = PositionStore.load(self.conn, self.channel)
        self._pos_stored = stored is not None
        return stored

    def read_binlog_gtids(self) -> None:
        """At a channel's start: the target's binlog GTID state (`binlog_gtids`) when the target logs the source's
        GTIDs, so that `already_applied_ddl` can tell a DDL applied just before a crash from one still to apply."""
        self.connect()
        self.binlog_gtids = {}
        if self.keep_gtids:
            with self.conn.cursor() as cur:
                cur.execute("SELECT @@global.gtid_binlog_pos")
                self.binlog_gtids = Position.parse_gtids(str(cur.fetchone()[0] or ""))

    def already_applied_ddl(self, g: Group) -> bool:
        """Is `g` a DDL group the target's binlog already holds (same domain, server and a sequence number at or
        past it)? A DDL commits on its own with its GTID, and the position row follows in a second statement
        (applier/position.py): a crash between the two leaves this group applied but not recorded. Only the first
        group after a start (`read_binlog_gtids`) can be in that window."""
        if g.gtid is None or not self.binlog_gtids:
            return False
        have = self.binlog_gtids.get(g.gtid.domain_id)
        if have is None or have.server_id != g.gtid.server_id or have.seq_no < g.gtid.seq_no:
            return False
        # (by its statement: GTID flags2 do not tell, an InnoDB ALTER carries FL_DDL and FL_TRANSACTIONAL)
        return any(isinstance(ev.body, QueryBody) and is_ddl(ev.body.query) for ev in g.events)

    def delete_position(self) -> None:
        self.connect()
        PositionStore.delete(self.conn, self.channel)
        self._pos_stored = False

    # ---- one group ------------------------------------------------------------------------------------------

    def apply_many(self, groups: list[Group]) -> tuple[int, ApplyError | None]:
        """Apply consecutive groups, each its own transaction with its own position (or runs of row transactions
        as one, applier/grouping.py), sent together (as few round trips as the row-count checks allow). Returns
        how many are applied, and the error that stopped the rest. On any error the groups not yet committed go
        through `apply` one by one, which retries and words the error exactly as for a lone group."""
        done = self._batch_done = 0
        if len(groups) > 1:
            try:
                self.connect()
                self._queue_batch(groups)
                self._flush()
                return len(groups), None
            except (pymysql.MySQLError, ApplyError) as e:
                lost = isinstance(e, pymysql.MySQLError) and (
                    _code(e) in CONNECTION_LOST or isinstance(e, pymysql.err.InterfaceError))
                self._reset()
                done = self._committed_count(groups) if lost else self._batch_done
        for i in range(done, len(groups)):
            try:
                self.apply(groups[i])
            except ApplyError as e:
                return i, e
        return len(groups), None

    def _committed_count(self, groups: list[Group]) -> int:
        """After a lost connection in a batch: the groups up to the stored position are committed."""
        self.close()
        try:
            stored = self.load_position()
        except (ApplyError, pymysql.MySQLError):
            self.close()
            return self._batch_done
        for i in range(len(groups) - 1, self._batch_done - 1, -1):
            e = groups[i].end
            if stored is not None and (stored.file, stored.pos, stored.gtids) == (e.file, e.pos, e.gtids):
                return i + 1
        return self._batch_done

    def apply(self, g: Group) -> None:
        """Apply a group atomically with its position; retries deadlocks and a lost target connection. A group
        whose BINLOG statement the target refused runs again with its rows as SQL (the error texts of that path)."""
        try:
            self._apply_retrying(g)
        except NativeRowsError:
            self._native_now = False
            try:
                self._apply_retrying(g)
            finally:
                self._native_now = True

    def _apply_retrying(self, g: Group) -> None:
        for attempt in range(TRANSACTION_RETRIES + 1):
            try:
                self.connect()
                self._apply_once(g)
                return
            except pymysql.MySQLError as e:
                code = _code(e)
                lost = code in CONNECTION_LOST or isinstance(e, pymysql.err.InterfaceError)
                self._reset()
                if lost:
                    self.close()
                    if self._committed(g):
                        return
                if (lost or code in RETRYABLE) and attempt < TRANSACTION_RETRIES:
                    log.warning("channel %r: %s; retrying the group (attempt %d)", self.channel, _msg(e), attempt + 1)
                    self.retried += 1
                    time.sleep(min(0.1 * 2**attempt, 2.0))
                    continue
                raise ApplyError(code, f"Error '{_msg(e)}' on query. Default database: "
                                       f"'{self._state.get('db', '')}'. Query: '{self.current}', at "
                                       f"{g.end.file}:{g.end.pos}") from None
            except ApplyError:
                self._reset()
                raise
        raise AssertionError("unreachable")

    def committed(self, g: Group) -> bool:
        """After a lost connection: did the COMMIT of `g` reach the target (its position is the stored one)?"""
        self.close()
        return self._committed(g)

    def _committed(self, g: Group) -> bool:
        """After a lost connection: did the COMMIT reach the target before it went away?"""
        try:
            stored = self.load_position()
        except (ApplyError, pymysql.MySQLError):
            self.close()
            return False
        return stored is not None and (stored.file, stored.pos, stored.gtids) == (g.end.file, g.end.pos, g.end.gtids)

    def _reset(self) -> None:
        """After an error: nothing queued survives, session variables are sent again, the group rolls back."""
        self._pipe.clear()
        self._state.clear()
        self._fde_sent = None
        if self.conn is not None:
            try:
                self.conn.rollback()
            except pymysql.MySQLError:
                self.close()

    def flush(self) -> None:
        """Send what is queued (one round trip); raises the first failure."""
        self._pipe.run(self.conn)

    def rollback(self) -> None:
        """Drop what is queued and roll the open transaction back (session variables are sent again)."""
        self._reset()

    def _set_session(self, wanted: dict[str, str]) -> None:
        """Queue a SET of the variables that differ from what the session has (an error clears `_state`)."""
        sets = [f"{k}={v}" for k, v in wanted.items() if self._state.get(k) != v]
        if sets:
            self._pipe.add("SET " + ", ".join(sets))
            self._state.update(wanted)

    def _flush(self) -> None:
        self._pipe.run(self.conn)

    def _queue(self, sql: bytes | str, check: Any = None, fail: Any = None) -> None:
        self._pipe.add(sql, check, fail)
        if self._pipe.size >= PIPELINE_BYTES:
            self._flush()

    def _apply_once(self, g: Group, last: bool = True) -> None:
        """Queue the group as one target transaction ending with its position row and COMMIT; sent now when
        `last`, else left queued for the next group's statements (the caller flushes)."""
        if last:
            self._batch_done = 0
        if self.queue_body(g, fuse=True):
            if last:
                self._flush()
            return
        self.queue_end(g, last)

    def queue_body(self, g: Group, fuse: bool = False, mapped: bool = False) -> bool:
        """Queue the group's transaction up to its position row (applier/parallel.py sends this part first, then
        `queue_end` when the group's turn to commit has come). With `fuse`, a group that is one whole row
        statement is queued whole, position included, as one autocommit BINLOG statement: True then (no
        `queue_end`). `mapped`: its TABLE_MAPs went through `_map_tables` already (their filter verdicts are
        counted once), and not every table is kept as it is."""
        self._group_rows = 0
        pre = {"@@session.skip_replication": "1" if g.flagged and self.replicate_flagged else "0"}
        keep = self.keep_gtids and g.gtid is not None and bool(g.events)
        if keep:
            assert g.gtid is not None
            pre["@@session.gtid_domain_id"] = str(g.gtid.domain_id)
            pre["@@session.server_id"] = str(g.gtid.server_id)
        elif self.keep_gtids:  # a source without GTIDs gets the target's own; position bookkeeping its own domain
            pre.update(OWN_GTID if g.events else BOOKKEEPING_GTID)
        self._set_session(pre)
        if keep:  # a statement of its own: SET checks every variable before assigning any, and strict mode checks
            assert g.gtid is not None  # gtid_seq_no against the session's domain/server_id of that moment
            self._state.pop("@@session.gtid_seq_no", None)  # used up by each logged group: always sent
            self._set_session({"@@session.gtid_seq_no": str(g.gtid.seq_no)})
        if not mapped:
            self._maps.clear()
        self._pending.clear()
        if mapped:
            self._row_fallback(g)
            return False
        if fuse and self._fusable(g):
            return self._fused(g)
        # back-to-back groups with no SET between them (gtid_seq_no and skip_replication cannot change inside a
        # transaction): the previous group's COMMIT AND CHAIN opens this one's transaction
        if not self._pipe.chain():
            self._queue("BEGIN")
        if self.native and self._native_now and g.fde is not None:
            self._native_events(g)
        else:
            for ev in g.events:
                self._event(ev, g)
        if self._pipe.checked:  # a COMMIT must not run before every row count is known to be right
            self._flush()
        if g.rollback:
            self._queue("ROLLBACK")
            self._queue("BEGIN")
        if keep and not g.transactional:  # the DDL took the source's GTID; its position row is bookkeeping
            self._queue("COMMIT")
            self._set_session(BOOKKEEPING_GTID)
            self._queue("BEGIN")
        return False

    def _fusable(self, g: Group) -> bool:
        """Cheap checks before `_fused`: a MariaDB target that takes BINLOG statements, the position row stored,
        a transaction of row events only, with one statement end, small enough for one BINLOG statement."""
        if not (self.native and self._native_now and self._pos_events is not None and self._pos_stored
                and g.fde is not None and g.transactional and not g.rollback and g.events):
            return False
        if self._fuse_alg(g.fde) is None or not all(g.raws):
            return False
        last = g.events[-1]
        return last.header.type_code in ROWS_EVENT_TYPES and bool(last.body.flags & STMT_END_F) \
            and sum(map(len, g.raws)) <= STATEMENT_BYTES  # type: ignore[union-attr]

    def _fused(self, g: Group) -> bool:
        """Queue the group as one autocommit BINLOG statement (its events and the position row's): one
        transaction, the source's GTID set before it. Falls back to BEGIN + the BINLOG statement when the
        filters drop or rename one of its tables or the events are not one statement (returns False: the
        caller queues the position row and COMMIT)."""
        whole = self._map_tables(g)
        assert self._pos_events is not None and self._fuse_fde[1] is not None
        events = self._pos_events.statement(g.raws, g.end, self._fuse_fde[1]) if whole else None
        if events is None:
            self._row_fallback(g, whole)
            return False
        first = next(ev for ev in g.events if ev.header.type_code != TABLE_MAP_EVENT)
        tm, _ = self._maps[first.body.table_id]  # type: ignore[union-attr]
        self._queue_fused(g, events, f"{EVENT_NAMES.get(first.header.type_code, '')} on {tm.db}.{tm.table}")
        return True

    def _queue_fused(self, g: Group, events: list[bytes], what: str) -> None:
        """Queue `events` (the group's and its position row's) as one autocommit BINLOG statement."""
        self._native_prelude(g)
        self.current = what

        def committed() -> None:
            self.groups_applied += 1
            self.fused_groups += 1
            self._batch_done += 1

        self._pipe.add(binlog_sql(events), None, self._native_fail, committed)
        if self._pipe.size >= PIPELINE_BYTES:
            self._flush()
        for k in TOUCHED:
            self._state.pop(k, None)
        self.native_statements += 1
        self.current = ""

    def _map_tables(self, g: Group) -> bool:
        """Take the group's TABLE_MAPs (and the filters' verdicts on their tables, counted here once): True
        when every table is applied as it is (none dropped, no database renamed)."""
        self._maps.clear()
        whole = True
        fs = self.filters
        for ev in g.events:
            if ev.header.type_code == TABLE_MAP_EVENT:
                self._event(ev, g)
                tm, ok = self._maps[ev.body.table_id]  # type: ignore[union-attr]
                whole = whole and ok and (fs is None or fs.rewrite_db(tm.db) == tm.db)
        return whole

    def _row_fallback(self, g: Group, whole: bool = False) -> None:
        """A row statement group whose TABLE_MAPs are mapped, in BEGIN ... (the caller queues the position row
        and COMMIT): its rows as one BINLOG statement when `whole`, else through the SQL path."""
        if not self._pipe.chain():
            self._queue("BEGIN")
        self._row_statement(list(g.raws), [ev for ev in g.events if ev.header.type_code != TABLE_MAP_EVENT],
                            whole, g)
        if self._pipe.checked:
            self._flush()

    def _queue_batch(self, groups: list[Group]) -> None:
        """Queue consecutive groups (applier/grouping.py): runs of row transactions each as ONE target
        transaction where the target does not keep the source's GTIDs, anything else as before."""
        run: Run[Group] = Run()
        join = not self.keep_gtids and self.native and self._native_now and self._pos_events is not None
        for g in groups:
            if not (join and self._pos_stored and joinable(g) and self._fuse_alg(g.fde) is not None):
                self._queue_run(run.take())
                self._apply_once(g, last=False)
                continue
            size = sum(map(len, g.raws))
            if size > JOIN_BYTES or not run.fits(g, size):
                self._queue_run(run.take())
            if size > JOIN_BYTES:
                self._apply_once(g, last=False)
            elif self._map_tables(g):
                run.add(g, size)
            else:  # a table dropped or renamed by the filters: its own transaction (its verdicts counted once)
                self._queue_run(run.take())
                self.queue_body(g, mapped=True)
                self.queue_end(g, last=False)
        self._queue_run(run.take())

    def _queue_run(self, run: list[Group]) -> None:
        """Queue a run of joinable groups (their tables mapped and kept) as one target transaction: BEGIN (or
        the previous COMMIT AND CHAIN), one BINLOG statement with every event and the position row after the
        last group, COMMIT. A run of one is the one-statement autocommit form (`_fused`)."""
        if not run:
            return
        first, last = run[0], run[-1]
        self._set_session({"@@session.skip_replication": "1" if first.flagged and self.replicate_flagged else "0"})
        alg = self._fuse_alg(first.fde)
        assert self._pos_events is not None and alg is not None
        if len(run) == 1:
            events = self._pos_events.statement(first.raws, first.end, alg)
            if events is not None:
                self._queue_fused(first, events, "a row statement")
                return
        self._native_prelude(first)
        if not self._pipe.chain():
            self._queue("BEGIN")
        row = self._pos_events.row_events(last.end, last.raws[-1], alg)
        events = [raw for g in run for raw in g.raws]
        self.current = f"{len(run)} transactions as one"
        self._queue(binlog_sql(events + list(row) if row is not None else events), None, self._native_fail)
        for k in TOUCHED:
            self._state.pop(k, None)
        self.native_statements += 1
        if row is None:  # a file name or GTID position too long for the events: the SQL statement
            self._queue(PositionStore.save_sql(self.conn, self.channel, last.end))
        n = len(run)

        def committed() -> None:
            self.groups_applied += n
            self.fused_groups += n
            self.joined_groups += n
            self._batch_done += n

        self._pipe.add("COMMIT", done=committed)
        if self._pipe.size >= PIPELINE_BYTES:
            self._flush()
        self.current = ""

    def _fuse_alg(self, fde: bytes | None) -> int | None:
        """The checksum algorithm of `fde` when its row events can carry the position row's (`fusable_fde`)."""
        if self._fuse_fde[0] is not fde:
            self._fuse_fde = (fde, fde_checksum_alg(fde) if fde is not None and fusable_fde(fde) else None)
        return self._fuse_fde[1]

    def queue_end(self, g: Group, last: bool = True) -> None:
        """Queue the position row and COMMIT; sent now when `last`."""
        self.current = "saving the channel position"
        self._queue(PositionStore.save_sql(self.conn, self.channel, g.end))
        rows = self._group_rows

        def committed() -> None:
            self.rows_applied += rows
            self.groups_applied += 1
            self._batch_done += 1
            self._pos_stored = True

        self._pipe.add("COMMIT", done=committed)
        if last:
            self._flush()
        self.current = ""

    # ---- events ----------------------------------------------------------------------------------------------

    def _native_events(self, g: Group) -> None:
        """The group's events with each whole row statement (TABLE_MAPs ... STMT_END_F) as one BINLOG statement,
        unless the filters drop or rewrite one of its tables (then its rows events take the SQL path)."""
        stmt: list[bytes] = []
        rows: list[Event] = []
        whole = True
        fs = self.filters
        for ev, raw in zip(g.events, g.raws, strict=True):
            t = ev.header.type_code
            if t == TABLE_MAP_EVENT:
                self._event(ev, g)
                tm, ok = self._maps[ev.body.table_id]  # type: ignore[union-attr]
                whole = whole and ok and (fs is None or fs.rewrite_db(tm.db) == tm.db)
                stmt.append(raw)
            elif t in ROWS_EVENT_TYPES:
                stmt.append(raw)
                rows.append(ev)
                if ev.body.flags & STMT_END_F:  # type: ignore[union-attr]
                    self._row_statement(stmt, rows, whole, g)
                    stmt, rows, whole = [], [], True
            else:
                if rows:
                    self._row_statement(stmt, rows, whole, g)
                    stmt, rows, whole = [], [], True
                self._event(ev, g)
        if rows:
            self._row_statement(stmt, rows, whole, g)

    def _row_statement(self, stmt: list[bytes], rows: list[Event], whole: bool, g: Group) -> None:
        if not whole or not all(stmt) or sum(map(len, stmt)) > STATEMENT_BYTES:
            for ev in rows:
                self._rows(ev, ev.body, g)  # type: ignore[arg-type]
            return

        self._native_prelude(g)
        tm, _ = self._maps[rows[0].body.table_id]  # type: ignore[union-attr]
        self.current = f"{EVENT_NAMES.get(rows[0].header.type_code, '')} on {tm.db}.{tm.table}"
        self._queue(binlog_sql(stmt), None, self._native_fail)
        for k in TOUCHED:
            self._state.pop(k, None)
        self.native_statements += 1

    def _native_fail(self, code: int, msg: str) -> ApplyError:
        """A BINLOG statement the target refused: the group runs again through the SQL path."""
        if code == 1227:  # no SUPER / BINLOG REPLAY: this session keeps the SQL path
            log.warning("channel %r: the target refuses BINLOG statements (%s); rows go as SQL", self.channel, msg)
            self.native = False
        return NativeRowsError(code, msg)

    def _native_prelude(self, g: Group) -> None:
        """What a BINLOG statement of the source's row events needs before it: the source's FDE (once per target
        session) and no ANNOTATE_ROWS in the target's binlog."""
        if self._fde_sent is not g.fde:
            assert g.fde is not None
            self._queue(binlog_sql([g.fde]), None, self._native_fail)
            self._fde_sent = g.fde
        self._set_session(NATIVE_SESSION)

    def _event(self, ev: Event, g: Group) -> None:
        t = ev.header.type_code
        b = ev.body
        if t in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            assert isinstance(b, QueryBody)
            self._flush()
            self._query(ev, b, g)
        elif t == TABLE_MAP_EVENT:
            assert isinstance(b, TableMapBody)
            tm = self._table_maps.get(b)
            if tm is None:  # the reader hands the same body object for the same TABLE_MAP bytes: decode it once
                if len(self._table_maps) >= 4096:
                    self._table_maps.clear()
                tm = self._table_maps[b] = decode_table_map(b)
            ok = self.filters.apply_row_event(tm.db, tm.table) if self.filters is not None else True
            self._maps[tm.table_id] = (tm, ok)
        elif t in ROWS_EVENT_TYPES:
            assert isinstance(b, RowsBody)
            self._rows(ev, b, g)
        elif t == USER_VAR_EVENT:
            assert isinstance(b, UserVarBody)
            self._pending.append(self._user_var_sql(b))
        elif t == _INTVAR:
            name = "LAST_INSERT_ID" if b.type == 1 else "INSERT_ID"  # type: ignore[union-attr]
            self._pending.append(f"SET {name}={b.value}")  # type: ignore[union-attr]
        elif t == TABLES_INFO_EVENT:  # binlogd's tables-info event: the next statement's tables, no parsing
            from binlogd.protocol.tables_info import parse_tables_info

            try:
                # relative: default-database entries stay None, so they resolve to the rewritten database
                self._tables_info = list(parse_tables_info(b.raw).relative)  # type: ignore[union-attr]
            except EventDecodeError:
                self._tables_info = None
        elif t == RAND_EVENT:
            self._pending.append(f"SET @@rand_seed1={b.seed1}, @@rand_seed2={b.seed2}")  # type: ignore[union-attr]

    def _user_var_sql(self, b: UserVarBody) -> str:
        name = quote(b.name.decode("utf-8", "replace"))
        if b.is_null:
            return f"SET @{name} := NULL"
        v = b.value
        if b.type == STRING_RESULT:
            cs, coll = self._collations.get(b.charset or 0, ("binary", "binary"))
            return f"SET @{name} := _{cs} X'{v.hex()}' COLLATE {quote(coll)}"
        if b.type == REAL_RESULT:
            return f"SET @{name} := {struct.unpack('<d', v[:8])[0]!r}"
        if b.type == INT_RESULT:
            unsigned = bool((b.flags or 0) & USER_VAR_UNSIGNED_F)
            return f"SET @{name} := {int.from_bytes(v[:8], 'little', signed=not unsigned)}"
        dec, _ = decode_decimal(v, 2, v[0], v[1])
        return f"SET @{name} := {dec}"

    def _query(self, ev: Event, b: QueryBody, g: Group) -> None:
        q = b.query
        if q.strip().upper() in _TXN_WORDS:
            return
        src_db = b.db.decode("utf-8", "replace") or None
        db = src_db
        fs = self.filters
        if fs is not None and fs.rules:  # no rules: no need to parse the statement
            from .filters import updated_tables

            try:  # the tables it changes (a tables-info event lists the read-only ones too)
                tables = updated_tables(q.decode("utf-8", "replace"), self._tables_info)
            except ValueError:
                tables = self._tables_info or []
            self._tables_info = None
            if not fs.apply_statement(src_db, tables, bool(_DDL_DB.match(q))):
                self._pending.clear()
                return
            db = fs.rewrite_db(src_db)
        self._statement_session(ev, b, db)
        for sql in self._pending:
            self._queue(sql)
        self._pending.clear()
        self._flush()
        self.current = q[:1024].decode("utf-8", "replace")
        try:
            self.conn.query(q)
        except pymysql.MySQLError as e:
            if b.error_code and _code(e) == b.error_code:
                return  # the statement failed the same way on the source (MariaDB accepts that)
            raise
        if b.error_code:
            raise ApplyError(ER_UNKNOWN_ERROR, f"Query caused different errors on master and slave. Error on master: "
                                               f"code={b.error_code}; Error on slave: none. Default database: "
                                               f"'{db or ''}'. Query: '{self.current}'")
        if is_ddl(q):
            self._tables.clear()
            self._readers.clear()

    def _statement_session(self, ev: Event, b: QueryBody, db: str | None) -> None:
        sv = b.status_vars
        w: dict[str, str] = {"@@session.pseudo_thread_id": str(b.thread_id)}
        f2 = sv.get(Q_FLAGS2_CODE)
        if isinstance(f2, int):
            w["@@session.foreign_key_checks"] = "0" if f2 & OPTION_NO_FOREIGN_KEY_CHECKS else "1"
            w["@@session.unique_checks"] = "0" if f2 & OPTION_RELAXED_UNIQUE_CHECKS else "1"
            w["@@session.sql_auto_is_null"] = "1" if f2 & OPTION_AUTO_IS_NULL else "0"
            w["@@session.check_constraint_checks"] = "0" if f2 & OPTION_NO_CHECK_CONSTRAINT_CHECKS else "1"
        mode = sv.get(Q_SQL_MODE_CODE)
        if isinstance(mode, int):
            w["@@session.sql_mode"] = str(mode)
        ai = sv.get(Q_AUTO_INCREMENT)
        if ai is not None:
            w["@@session.auto_increment_increment"] = str(ai.increment)  # type: ignore[union-attr]
            w["@@session.auto_increment_offset"] = str(ai.offset)  # type: ignore[union-attr]
        cs = sv.get(Q_CHARSET_CODE)
        if cs is not None:
            w["@@session.character_set_client"] = str(cs.client)  # type: ignore[union-attr]
            w["@@session.collation_connection"] = str(cs.connection)  # type: ignore[union-attr]
            w["@@session.collation_server"] = str(cs.server)  # type: ignore[union-attr]
        tz = sv.get(Q_TIME_ZONE_CODE)
        w["@@session.time_zone"] = _sql_str(tz.decode()) if isinstance(tz, bytes) else "@@global.time_zone"
        lc = sv.get(Q_LC_TIME_NAMES_CODE)
        w["@@session.lc_time_names"] = str(lc) if isinstance(lc, int) else "0"
        cdb = sv.get(Q_CHARSET_DATABASE_CODE)
        if isinstance(cdb, int) and cdb:
            w["@@session.collation_database"] = str(cdb)
        usec = sv.get(Q_HRNOW)
        w["@@session.timestamp"] = f"{ev.header.timestamp}.{usec:06d}" if isinstance(usec, int) else str(
            ev.header.timestamp)
        self._set_session(w)
        if db is not None and self._state.get("db") != db:
            try:
                self._flush()
                self.conn.select_db(db)
                self._state["db"] = db
            except pymysql.err.OperationalError as e:
                if _code(e) != 1049:
                    raise
                # CREATE/DROP DATABASE are logged with the database they name as default database; a real
                # replica sets a default database without checking that it exists
                self._state.pop("db", None)

    # ---- rows ------------------------------------------------------------------------------------------------

    def _table(self, db: str, table: str) -> TargetTable:
        key = (db, table)
        tt = self._tables.get(key)
        if tt is not None:
            return tt
        self._flush()
        with self.conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLUMN_KEY, IS_GENERATED "
                        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                        "ORDER BY ORDINAL_POSITION", (db, table))
            rows = cur.fetchall()
        if not rows:
            raise ApplyError(1146, f"Table '{db}.{table}' doesn't exist")
        tt = TargetTable(
            f"{quote(db)}.{quote(table)}",
            [quote(str(r[0])) for r in rows],
            [_CODECS.get(str(r[2])) if r[2] else None for r in rows],
            ["unsigned" in str(r[1]).lower() for r in rows],
            [str(r[4]).upper() == "ALWAYS" for r in rows],
            [i for i, r in enumerate(rows) if r[3] == "PRI"],
        )
        self._tables[key] = tt
        return tt

    def _rows(self, ev: Event, b: RowsBody, g: Group) -> None:
        entry = self._maps.get(b.table_id)
        if entry is None:
            raise ApplyError(ER_SLAVE_CONVERSION_FAILED, f"rows event for unknown table id {b.table_id} at "
                                                         f"{g.end.file} end_log_pos {ev.header.log_pos}")
        tm, ok = entry
        if not ok:
            return
        db = self.filters.rewrite_db(tm.db) if self.filters is not None else tm.db
        tt = self._table(db or tm.db, tm.table)
        if len(tm.columns) > len(tt.names):
            raise ApplyError(ER_SLAVE_CONVERSION_FAILED,
                             f"Column count of {db}.{tm.table} is {len(tt.names)} on the target, the event has "
                             f"{len(tm.columns)} columns")
        rkey = (tm.table_id, tm.db, tm.table)
        rd = self._readers.get(rkey)
        if rd is None or len(rd) != len(tm.columns):
            rd = self._readers[rkey] = readers(tm, tt.unsigned)
        try:
            change = decode_rows(tm, ev.header.type_code, b.data, tt.unsigned, rd)
        except EventDecodeError as e:
            raise ApplyError(1594, f"Relay log read failure: {e}") from None
        flags = b.flags
        self._set_session({
            "@@session.character_set_client": str(UTF8MB4_GENERAL_CI),
            "@@session.collation_connection": str(UTF8MB4_GENERAL_CI),
            "@@session.time_zone": "'+00:00'",
            "@@session.sql_mode": "'NO_AUTO_VALUE_ON_ZERO'",
            "@@session.foreign_key_checks": "0" if flags & NO_FOREIGN_KEY_CHECKS_F else "1",
            "@@session.unique_checks": "0" if flags & RELAXED_UNIQUE_CHECKS_F else "1",
        })
        name = EVENT_NAMES.get(ev.header.type_code, str(ev.header.type_code))
        self.current = f"{name} on {db}.{tm.table}"
        def fail(code: int, msg: str) -> ApplyError:
            return ApplyError(code, _row_error(name, db, tm.table, msg, code, g, ev))

        self._group_rows += len(change.rows)
        if change.kind == "write":
            self._queue(self._insert_sql(tt, change.rows), None, fail)
            return
        for before, after in change.rows:
            self._queue(self._keyed_sql(tt, change.kind, before or {}, after), self._found_one(tt, fail), fail)

    @staticmethod
    def _lit(tt: TargetTable, i: int, v: Any) -> str:
        """SQL literal of a row value (backslash escapes: row events run without NO_BACKSLASH_ESCAPES)."""
        t = type(v)
        if t is int:
            return str(v)
        if t is bytes:
            codec = tt.codecs[i]
            if codec is not None:
                try:
                    return "'" + v.decode(codec).translate(_ESCAPES) + "'"
                except UnicodeDecodeError:
                    pass
            return "_binary'" + v.decode("ascii", "surrogateescape").translate(_ESCAPES) + "'"
        if t is str:
            return "'" + v.translate(_ESCAPES) + "'"
        if v is None:
            return "NULL"
        if t is float:
            return repr(v)
        return str(v)  # Decimal

    def _insert_sql(self, tt: TargetTable, rows: list[tuple[Any, Any]]) -> bytes:
        first = rows[0][1]
        cols = [i for i in first if not tt.generated[i]]
        lit = self._lit
        values = ",".join("(" + ",".join([lit(tt, i, after[i]) for i in cols]) + ")" for _, after in rows)
        sql = f"INSERT INTO {tt.qualified} ({','.join(tt.names[i] for i in cols)}) VALUES {values}"
        return sql.encode("utf-8", "surrogateescape")  # _binary'' literals carry raw bytes as surrogates

    def _found_one(self, tt: TargetTable, fail: Any) -> Any:
        """The check of an UPDATE/DELETE ... LIMIT 1: it must find its row, like the SQL thread's
        HA_ERR_KEY_NOT_FOUND check (FOUND_ROWS: an UPDATE that changes nothing still counts its row)."""
        def found(n: int) -> None:
            if n != 1:
                raise fail(ER_KEY_NOT_FOUND, f"Can't find record in '{tt.qualified.split('.')[-1].strip('`')}'")
        return found

    def _keyed_sql(self, tt: TargetTable, kind: str, before: dict[int, Any], after: dict[int, Any] | None) -> str:
        lit = self._lit
        key = tt.pk if tt.pk and all(i in before for i in tt.pk) else [i for i in before if not tt.generated[i]]
        where = " AND ".join(f"{tt.names[i]} <=> {lit(tt, i, before[i])}" for i in key)
        if kind == "update" and after is not None:
            sets = ",".join(f"{tt.names[i]}={lit(tt, i, after[i])}" for i in after if not tt.generated[i])
            return f"UPDATE {tt.qualified} SET {sets} WHERE {where} LIMIT 1"
        return f"DELETE FROM {tt.qualified} WHERE {where} LIMIT 1"


def _row_error(name: str, db: str | None, table: str, msg: str, code: int, g: Group, ev: Event) -> str:
    handler = _HANDLER_ERRORS.get(code, f"error {code}")
    return (f"Could not execute {name} event on table {db}.{table}; {msg}, Error_code: {code}; handler error "
            f"{handler}; the event's master log {g.end.file}, end_log_pos {ev.header.log_pos}")


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["INT_SIZES", "ApplyError", "Group", "TargetSession", "is_ddl"]
