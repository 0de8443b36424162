"""The text `binlogd show` prints: what mariadb-binlog 10.11 prints for each event, so that it replays into the
mariadb client.

The layout follows MariaDB's client printers (sql/log_event_client.cc, client/mysqlbinlog.cc): a `# at POS` line per
event, a header comment per event, the session state a statement needs (SET TIMESTAMP, pseudo_thread_id, flags2,
sql_mode, charsets, ...) printed only when it changes, BINLOG base64 blocks for the FDE and for row events (the
Table_map and the rows events of one statement in one block), ANNOTATE_ROWS as `#Q>` comments printed with the first
Table_map of its statement. `Printer` keeps that state in one place (MariaDB's PRINT_EVENT_INFO).

One deliberate difference: the WL#234 skip flag (`/*!50521 SET skip_replication=N*/`) is tracked across files.
mariadb-binlog starts every file with a fresh state (flag 0), so a file that starts with unflagged events after one
that ended flagged is replayed with the flag still set; `binlogd show` prints `=0` there.
"""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    APPEND_BLOCK_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    DECIMAL_RESULT,
    DELETE_FILE_EVENT,
    EXECUTE_LOAD_QUERY_EVENT,
    FL_ALLOW_PARALLEL,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_DDL,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FL_TRANSACTIONAL,
    FL_WAITED,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    INCIDENT_EVENT,
    INT_RESULT,
    INTVAR_EVENT,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    OPTION_AUTO_IS_NULL,
    OPTION_IF_EXISTS,
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
    Q_XID,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    REAL_RESULT,
    ROTATE_EVENT,
    ROWS_QUERY_LOG_EVENT,
    STMT_END_F,
    STOP_EVENT,
    STRING_RESULT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    USER_VAR_UNSIGNED_F,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from binlogd.protocol.describe import collation_name, format_decimal
from binlogd.protocol.events import (
    AnnotateRowsBody,
    AutoIncrement,
    BinlogCheckpointBody,
    Event,
    EventDecodeError,
    FormatDescriptionBody,
    GtidBody,
    GtidListBody,
    IntvarBody,
    QueryBody,
    QueryCharset,
    RandBody,
    RotateBody,
    RowsBody,
    TableMapBody,
    UnknownBody,
    UserVarBody,
    XaId,
    XaPrepareBody,
    XidBody,
)
from binlogd.protocol.tables_info import TABLES_INFO_EVENT, format_tables, parse_tables_info

from .rowtext import ROWS_NAMES, TableDef, is_compressed, uncompressed_rows_event, verbose_rows

DELIMITER: Final = b"/*!*/;"
PROLOGUE: Final = (
    b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n"
    b"/*!40019 SET @@session.max_delayed_threads=0*/;\n"
    b"/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
)
EPILOGUE: Final = (
    b"# End of log file\n"
    b"ROLLBACK /* added by mysqlbinlog */;\n"
    b"/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
    b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n"
)
GTID_EPILOGUE: Final = (
    b"/*!100001 SET @@SESSION.SERVER_ID=@@GLOBAL.SERVER_ID */;\n"
    b"/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;\n"
)
# MariaDB 10.11 sql_priv.h bits of Query flags2 that are not in protocol.constants (checked on a real 10.11:
# SET autocommit=0 / explicit_defaults_for_timestamp / system_versioning_insert_history and the logged flags2).
_OPTION_NOT_AUTOCOMMIT: Final = 1 << 19
_OPTION_EXPLICIT_DEF_TIMESTAMP: Final = 1 << 24
_OPTION_INSERT_HISTORY: Final = 1 << 30
# (bit, name, printed value is "bit set" (True) or "bit clear" (False)), in print_query_header()'s order.
_FLAGS2_OPTIONS: Final = (
    (OPTION_NO_FOREIGN_KEY_CHECKS, b"@@session.foreign_key_checks", False),
    (OPTION_AUTO_IS_NULL, b"@@session.sql_auto_is_null", True),
    (OPTION_RELAXED_UNIQUE_CHECKS, b"@@session.unique_checks", False),
    (_OPTION_NOT_AUTOCOMMIT, b"@@session.autocommit", False),
    (OPTION_NO_CHECK_CONSTRAINT_CHECKS, b"@@session.check_constraint_checks", False),
    (OPTION_IF_EXISTS, b"@@session.sql_if_exists", True),
    (_OPTION_EXPLICIT_DEF_TIMESTAMP, b"@@session.explicit_defaults_for_timestamp", True),
    (_OPTION_INSERT_HISTORY, b"@@session.system_versioning_insert_history", True),
)
_TM_BIT_HAS_TRIGGERS_F: Final = 1 << 14  # TM_BIT_LEN_EXACT_F is bit 0


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


def backtick(name: bytes) -> bytes:
    """`%\\`s`: an identifier in backticks, inner backticks doubled."""
    return b"`" + name.replace(b"`", b"``") + b"`"


def _b64(raw: bytes) -> bytes:
    """my_base64_encode: 76-character lines; the caller's "%s\\n" ends the last one."""
    return base64.encodebytes(raw)


def _timestamp(ts: int) -> bytes:
    """Log_event::print_timestamp: local time as YYMMDD HH:MM:SS with a space-padded hour."""
    t = time.localtime(ts)
    return b"%02d%02d%02d %2d:%02d:%02d" % (t.tm_year % 100, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def is_trans_keyword(query: bytes, xa: bool) -> bool:
    """Query_log_event::is_trans_keyword(): BEGIN/COMMIT (prefixes too, as strncmp with the query's length)."""
    n = len(query)
    up = query.upper()
    return (
        (n > 0 and (b"BEGIN"[:n] == query or b"COMMIT"[:n] == query))
        or up.startswith(b"SAVEPOINT")
        or up.startswith(b"ROLLBACK")
        or (xa and up.startswith(b"XA "))
    )


def serialize_xid(xa: XaId) -> bytes:
    """XID::serialize(): X'gtrid',X'bqual',formatID."""
    return b"X'%s',X'%s',%d" % (xa.gtrid.hex().encode(), xa.bqual.hex().encode(), xa.format_id)


@dataclass
class PrintState:
    """PRINT_EVENT_INFO: the session state already printed. Fresh per file (as mariadb-binlog), except `skip`."""

    db: bytes = b""
    flags2: int | None = None
    sql_mode: int | None = None
    auto_increment: tuple[int, int] = (0, 0)
    charset: QueryCharset | None = None
    time_zone: bytes = b""
    lc_time_names: int = -1
    charset_database: int = -1
    thread_id: int | None = None
    server_id: int | None = None
    domain_id: int | None = None
    allow_parallel: bool | None = None
    gtid_flags2: int = 0
    printed_fde: bool = False
    tables: dict[int, TableDef] = field(default_factory=dict)


class Printer:
    """Prints events as mariadb-binlog does; `write` gets bytes (queries are bytes in the client's charset)."""

    def __init__(self, out: Sink, *, verbose: int = 0, skip_annotate: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.skip_annotate = skip_annotate
        self.state = PrintState()
        self.skip = False  # the skip_replication value the replaying session has (WL#234), across files
        self.checksum_alg = BINLOG_CHECKSUM_ALG_CRC32
        self._head: list[bytes] = []
        self._body: list[bytes] = []
        self._tail: list[bytes] = []
        self._annotate: tuple[Event, AnnotateRowsBody] | None = None
        self._rows = 0
        self._dispatch: dict[int, Callable[[Event], None]] = {
            FORMAT_DESCRIPTION_EVENT: self._fde,
            QUERY_EVENT: self._query,
            QUERY_COMPRESSED_EVENT: self._query,
            GTID_EVENT: self._gtid,
            XID_EVENT: self._xid,
            INTVAR_EVENT: self._intvar,
            RAND_EVENT: self._rand,
            USER_VAR_EVENT: self._user_var,
            ROTATE_EVENT: self._rotate,
            BINLOG_CHECKPOINT_EVENT: self._checkpoint,
            GTID_LIST_EVENT: self._gtid_list,
            ANNOTATE_ROWS_EVENT: self._keep_annotate,
            TABLE_MAP_EVENT: self._table_map,
            XA_PREPARE_LOG_EVENT: self._xa_prepare,
            STOP_EVENT: self._stop,
            INCIDENT_EVENT: self._incident,
            APPEND_BLOCK_EVENT: self._append_block,
            BEGIN_LOAD_QUERY_EVENT: self._append_block,
            DELETE_FILE_EVENT: self._delete_file,
            EXECUTE_LOAD_QUERY_EVENT: self._query,
        }
        self._raw = b""
        self.missing_dbs: set[bytes] = set()  # default databases not to `use` (left out by the table filters)

    # ---- file framing ---------------------------------------------------------------------------------

    def prologue(self) -> None:
        self.out.write(PROLOGUE)

    def begin_file(self) -> None:
        self.state = PrintState()
        self.out.write(b"DELIMITER " + DELIMITER + b"\n")

    def end_file(self) -> None:
        """A statement cut by the end of the range or file is dropped unprinted, as mariadb-binlog drops it."""
        self._head.clear()
        self._body.clear()
        self._tail.clear()
        self._annotate = None
        self._rows = 0
        self.out.write(b"DELIMITER ;\n")

    def epilogue(self, gtid_ranges: bool = False) -> None:
        """The closing statements; with GTID ranges mariadb-binlog also gives the session back its own server_id
        and gtid_domain_id."""
        self.out.write(EPILOGUE + (GTID_EPILOGUE if gtid_ranges else b""))

    # ---- one event ------------------------------------------------------------------------------------

    def event(self, pos: int, raw: bytes, ev: Event) -> None:
        """Print one event read at `pos`; `raw` is its bytes as stored (the BINLOG blocks carry them)."""
        self.out.write(b"# at %d\n" % pos)
        self._raw = raw
        if ev.header.type_code == FORMAT_DESCRIPTION_EVENT and isinstance(ev.body, FormatDescriptionBody):
            self.checksum_alg = ev.body.checksum_alg
        if isinstance(ev.body, RowsBody):
            self._rows_event(ev, ev.body)
            return
        handler = self._dispatch.get(ev.header.type_code)
        if handler is not None and not isinstance(ev.body, UnknownBody):
            handler(ev)
        elif ev.header.type_code == TABLES_INFO_EVENT:
            self._tables_info(ev)
        elif ev.header.type_code == ROWS_QUERY_LOG_EVENT and isinstance(ev.body, UnknownBody):
            self._rows_query(ev, ev.body)
        else:
            self._unknown(ev)

    def skip_state(self, flagged: bool) -> None:
        """print_skip_replication_statement: the SET only when the flag differs from the session's."""
        if flagged != self.skip:
            self.out.write(b"/*!50521 SET skip_replication=%d*/%s\n" % (int(flagged), DELIMITER))
            self.skip = flagged

    def _skip_of(self, ev: Event) -> None:
        self.skip_state(bool(ev.header.flags & LOG_EVENT_SKIP_REPLICATION_F))

    def _header(self, ev: Event) -> bytes:
        h = ev.header
        text = b"#" + _timestamp(h.timestamp) + b" server id %d  end_log_pos %d " % (h.server_id, h.log_pos)
        if self.checksum_alg == BINLOG_CHECKSUM_ALG_CRC32 and ev.crc is not None:
            text += b"CRC32 0x%08x " % ev.crc
        return text

    # ---- events printed directly ----------------------------------------------------------------------

    def _fde(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, FormatDescriptionBody)
        out = [self._header(ev), b"\tStart: binlog v %d, server v %s created " % (
            body.binlog_version, body.server_version.encode()), _timestamp(ev.header.timestamp)]
        if body.create_timestamp:
            out.append(b" at startup")
        out.append(b"\n")
        if ev.header.flags & LOG_EVENT_BINLOG_IN_USE_F:
            out.append(b"# Warning: this binlog is either in use or was not closed properly.\n")
        if not ev.header.flags & LOG_EVENT_ARTIFICIAL_F and body.create_timestamp:
            out.append(b"ROLLBACK" + DELIMITER + b"\n")
        out += [b"BINLOG '\n", _b64(self._raw), b"'" + DELIMITER + b"\n"]
        self.state.printed_fde = True
        self.out.write(b"".join(out))

    def _query(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, QueryBody)
        st = self.state
        xa = bool(st.gtid_flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA))
        flags = ev.header.flags
        if is_trans_keyword(body.query, xa):
            flags |= LOG_EVENT_SUPPRESS_USE_F
        self._skip_of(ev)
        sv = body.status_vars
        xid = sv.get(Q_XID, 0)
        name = b"Query_compressed" if ev.header.type_code == QUERY_COMPRESSED_EVENT else b"Query"
        out = [self._header(ev), b"\t" + name + b"\tthread_id=%d\texec_time=%d\terror_code=%d\txid=%d\n" % (
            body.thread_id, body.exec_time, body.error_code, xid if isinstance(xid, int) else 0)]
        if flags & LOG_EVENT_SUPPRESS_USE_F:
            if not is_trans_keyword(body.query, xa):
                st.db = b""
        elif body.db in self.missing_dbs:
            st.db = b""  # a replica runs it without that database: no `use`, and the next `use` is printed
        elif body.db != st.db:
            st.db = body.db
            if body.db:
                out.append(b"use " + backtick(body.db) + DELIMITER + b"\n")
        usec = sv.get(Q_HRNOW)
        ts = b"SET TIMESTAMP=%d" % ev.header.timestamp
        if isinstance(usec, int) and 0 < usec <= 999999:
            ts += b".%06d" % usec
        out.append(ts + DELIMITER + b"\n")
        if st.thread_id is None or (flags & LOG_EVENT_THREAD_SPECIFIC_F and body.thread_id != st.thread_id):
            out.append(b"SET @@session.pseudo_thread_id=%d%s\n" % (body.thread_id, DELIMITER))
            st.thread_id = body.thread_id
        flags2 = sv.get(Q_FLAGS2_CODE)
        if isinstance(flags2, int):
            changed = 0xFFFFFFFF if st.flags2 is None else st.flags2 ^ flags2
            if changed:
                parts = [b"%s=%d" % (name, int(bool(flags2 & bit)) if when_set else int(not flags2 & bit))
                         for bit, name, when_set in _FLAGS2_OPTIONS if changed & bit]
                out.append(b"SET " + b", ".join(parts) + DELIMITER + b"\n")
                st.flags2 = flags2
        sql_mode = sv.get(Q_SQL_MODE_CODE)
        if isinstance(sql_mode, int) and sql_mode != st.sql_mode:
            out.append(b"SET @@session.sql_mode=%d%s\n" % (sql_mode, DELIMITER))
            st.sql_mode = sql_mode
        auto = sv.get(Q_AUTO_INCREMENT)
        auto_pair = (auto.increment, auto.offset) if isinstance(auto, AutoIncrement) else (1, 1)
        if auto_pair != st.auto_increment:
            out.append(b"SET @@session.auto_increment_increment=%d, @@session.auto_increment_offset=%d%s\n" % (
                *auto_pair, DELIMITER))
            st.auto_increment = auto_pair
        charset = sv.get(Q_CHARSET_CODE)
        if isinstance(charset, QueryCharset) and charset != st.charset:
            names = collation_name(charset.client)
            cs = names[0].encode() if names else b"Unknown"
            out.append(b"/*!\\C %s */%s\n" % (cs, DELIMITER) if names else b"# Ignored (Unknown charset) ")
            out.append(b"SET @@session.character_set_client=%s,@@session.collation_connection=%d,"
                       b"@@session.collation_server=%d%s\n" % (cs, charset.connection, charset.server, DELIMITER))
            st.charset = charset
        tz = sv.get(Q_TIME_ZONE_CODE)
        if isinstance(tz, bytes) and tz and tz != st.time_zone:
            out.append(b"SET @@session.time_zone='%s'%s\n" % (tz, DELIMITER))
            st.time_zone = tz
        lc = sv.get(Q_LC_TIME_NAMES_CODE, 0)
        if lc != st.lc_time_names and isinstance(lc, int):
            out.append(b"SET @@session.lc_time_names=%d%s\n" % (lc, DELIMITER))
            st.lc_time_names = lc
        cdb = sv.get(Q_CHARSET_DATABASE_CODE, 0)
        if cdb != st.charset_database and isinstance(cdb, int):
            out.append(b"SET @@session.collation_database=%s%s\n" % (b"%d" % cdb if cdb else b"DEFAULT", DELIMITER))
            st.charset_database = cdb
        out.append(body.query + b"\n" + DELIMITER + b"\n")
        if ev.header.type_code == EXECUTE_LOAD_QUERY_EVENT and body.load_query is not None:
            out.append(b"# file_id: %d \n" % body.load_query.file_id)
        self.out.write(b"".join(out))

    def _gtid(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, GtidBody)
        self._skip_of(ev)
        st = self.state
        h = ev.header
        line = self._header(ev) + b"\tGTID %d-%d-%d" % (body.domain_id, h.server_id, body.seq_no)
        f = body.flags2
        if f & FL_GROUP_COMMIT_ID and body.commit_id is not None:
            line += b" cid=%d" % body.commit_id
        line += b" ddl" if f & FL_DDL else b""
        line += b" trans" if f & FL_TRANSACTIONAL else b""
        line += b" waited" if f & FL_WAITED else b""
        fx = body.flags_extra
        line += b" START ALTER" if fx & FL_START_ALTER_E1 else b""
        if fx & FL_COMMIT_ALTER_E1:
            line += b" COMMIT ALTER id= %d" % (body.sa_seq_no or 0)
        if fx & FL_ROLLBACK_ALTER_E1:
            line += b" ROLLBACK ALTER id= %d" % (body.sa_seq_no or 0)
        out = [line + b"\n"]
        allow = bool(f & FL_ALLOW_PARALLEL)
        if st.allow_parallel is None or st.allow_parallel != allow:
            out.append(b"/*M!100101 SET @@session.skip_parallel_replication=%d*/%s\n" % (int(not allow), DELIMITER))
            st.allow_parallel = allow
        if st.domain_id != body.domain_id:
            out.append(b"/*M!100001 SET @@session.gtid_domain_id=%d*/%s\n" % (body.domain_id, DELIMITER))
            st.domain_id = body.domain_id
        if st.server_id != h.server_id:
            out.append(b"/*M!100001 SET @@session.server_id=%d*/%s\n" % (h.server_id, DELIMITER))
            st.server_id = h.server_id
        out.append(b"/*M!100001 SET @@session.gtid_seq_no=%d*/%s\n" % (body.seq_no, DELIMITER))
        if f & FL_PREPARED_XA and body.xa is not None:
            out.append(b"XA START " + serialize_xid(body.xa) + DELIMITER + b"\n")
        elif not f & FL_STANDALONE:
            out.append(b"START TRANSACTION\n" + DELIMITER + b"\n")
        st.gtid_flags2 = f
        self.out.write(b"".join(out))

    def _xid(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, XidBody)
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tXid = %d\n" % body.xid + b"COMMIT" + DELIMITER + b"\n")

    def _xa_prepare(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, XaPrepareBody)
        self._skip_of(ev)
        xid = serialize_xid(body.xid)
        self.out.write(self._header(ev) + b"\tXID = " + xid + b"\nXA PREPARE " + xid + b"\n" + DELIMITER + b"\n")

    def _intvar(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, IntvarBody)
        self._skip_of(ev)
        name = {INTVAR_LAST_INSERT_ID: b"LAST_INSERT_ID", INTVAR_INSERT_ID: b"INSERT_ID"}.get(body.type, b"INVALID_INT")
        value = body.value - (1 << 64) if body.value >= 1 << 63 else body.value  # llstr: signed
        self.out.write(self._header(ev) + b"\tIntvar\nSET %s=%d%s\n" % (name, value, DELIMITER))

    def _rand(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, RandBody)
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tRand\nSET @@RAND_SEED1=%d, @@RAND_SEED2=%d%s\n" % (
            body.seed1, body.seed2, DELIMITER))

    def _user_var(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, UserVarBody)
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tUser_var\nSET @" + backtick(body.name) + user_var_value(body)
                       + DELIMITER + b"\n")

    def _rotate(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, RotateBody)
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tRotate to " + body.next_file + b"  pos: %d\n" % body.position)

    def _checkpoint(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, BinlogCheckpointBody)
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tBinlog checkpoint " + body.file_name + b"\n")

    def _gtid_list(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, GtidListBody)
        self._skip_of(ev)
        gtids = sorted(body.gtids)
        text = b",\n# ".join(b"%d-%d-%d" % g for g in gtids)
        self.out.write(self._header(ev) + b"\tGtid list [" + text + b"]\n")

    def _stop(self, ev: Event) -> None:
        self._skip_of(ev)
        self.out.write(self._header(ev) + b"\tStop\n")

    def _incident(self, ev: Event) -> None:
        self.out.write(self._header(ev) + b"\n# Incident: LOST_EVENTS\n"
                       b"RELOAD DATABASE; # Shall generate syntax error\n")

    def _append_block(self, ev: Event) -> None:
        name = b"Begin_load_query" if ev.header.type_code == BEGIN_LOAD_QUERY_EVENT else b"Append_block"
        file_id = getattr(ev.body, "file_id", 0)
        block = getattr(ev.body, "block", b"")
        self.out.write(self._header(ev) + b"\n#%s: file_id: %d  block_len: %d\n" % (name, file_id, len(block)))

    def _delete_file(self, ev: Event) -> None:
        self.out.write(self._header(ev) + b"\n#Delete_file: file_id=%d\n" % getattr(ev.body, "file_id", 0))

    def _tables_info(self, ev: Event) -> None:
        """binlogd's Tables_info event (type 159, ignorable): mariadb-binlog's Ignorable text plus the tables."""
        tables = b""
        try:
            body = ev.body.raw if isinstance(ev.body, UnknownBody) else b""
            tables = format_tables(parse_tables_info(body)).encode()
        except ValueError:
            tables = b"(undecodable)"
        self.out.write(self._header(ev) + b"\tIgnorable\n# Ignorable event type %d (Tables_info)\n"
                       b"# Tables_info: %s\n" % (ev.header.type_code, tables))

    def _rows_query(self, ev: Event, body: UnknownBody) -> None:
        """MySQL's Rows_query (type 29, ignorable): the statement of the rows events after it, each line a comment
        (MySQL mysqlbinlog's text; MariaDB writes Annotate_rows instead)."""
        lines = [line for line in body.raw[1:].split(b"\n") if line]
        self.out.write(self._header(ev) + b"\tRows_query\n" + b"".join(b"# " + line + b"\n" for line in lines))

    def _unknown(self, ev: Event) -> None:
        """An unknown type: ignorable ones as mariadb-binlog's Ignorable_log_event, others (--force-read) as
        Unknown_log_event."""
        if isinstance(ev.body, UnknownBody) and ev.body.ignorable:
            self.out.write(self._header(ev) + b"\tIgnorable\n# Ignorable event type %d (Unknown)\n"
                           % ev.header.type_code)
        else:
            self.out.write(self._header(ev) + b"\n# Unknown event\n")

    # ---- row-based statements (head / body / tail caches) ---------------------------------------------

    def _keep_annotate(self, ev: Event) -> None:
        if not self.skip_annotate and isinstance(ev.body, AnnotateRowsBody):
            self._annotate = (ev, ev.body)

    def _print_annotate(self) -> None:
        if self._annotate is None:
            return
        ev, body = self._annotate
        self._annotate = None
        lines = [self._header(ev) + b"\tAnnotate_rows:\n"]
        for line in body.query.replace(b"\r", b"\n").split(b"\n"):
            if line:
                lines.append(b"#Q> " + line + b"\n")
        self._head.append(b"".join(lines))

    def _table_map(self, ev: Event) -> None:
        body = ev.body
        assert isinstance(body, TableMapBody)
        self._print_annotate()
        triggers = b" (has triggers)" if body.flags & _TM_BIT_HAS_TRIGGERS_F else b""
        self._head.append(self._header(ev) + b"\tTable_map: " + backtick(body.db) + b"." + backtick(body.table)
                          + b" mapped to number %d%s\n" % (body.table_id, triggers))
        self.state.tables[body.table_id] = TableDef.of(body)
        self._body.append(_b64(self._raw))
        self.out.write(b"".join(self._head))
        self._head.clear()

    def _rows_event(self, ev: Event, body: RowsBody) -> None:
        end = bool(body.flags & STMT_END_F)
        name = ROWS_NAMES.get(ev.header.type_code, b"Rows")
        self._head.append(self._header(ev) + b"\t%s: table id %d%s\n" % (
            name, body.table_id, b" flags: STMT_END_F" if end else b""))
        raw = self._raw
        if is_compressed(ev.header.type_code):
            try:
                raw = uncompressed_rows_event(raw, body, ev.header.type_code,
                                              self.checksum_alg == BINLOG_CHECKSUM_ALG_CRC32)
            except (EventDecodeError, IndexError, ValueError) as e:
                self._head.append(b"ERROR: uncompress rows failed: %s\n" % str(e).encode())
        self._body.append(_b64(raw))
        table = self.state.tables.get(body.table_id)
        try:
            text, count = verbose_rows(ev.header.type_code, body, table, self.verbose)
        except (EventDecodeError, IndexError, ValueError, struct.error) as e:  # the BINLOG block is still right
            text, count = b"### Row event not decodable: %s\n" % str(e).encode(), 0
        self._rows += count
        if self.verbose:
            self._tail.append(text)
        if end:
            self._flush_statement()

    def end_statement(self) -> None:
        """The statement's last rows event was filtered out: close what was printed of it (other tables)."""
        if self._head or self._body:
            self._flush_statement()
        self._annotate = None

    def _flush_statement(self) -> None:
        """End of a row-based statement: head, the BINLOG block, the -v text, the row count."""
        self._annotate = None
        if not (self._head or self._body or self._tail):
            return
        out = self._head + ([b"\nBINLOG '\n", *self._body, b"'" + DELIMITER + b"\n"] if self._body else [])
        out += self._tail
        out.append(b"# Number of rows: %d\n" % self._rows)
        self.out.write(b"".join(out))
        self._head.clear()
        self._body.clear()
        self._tail.clear()
        self._rows = 0


def user_var_value(body: UserVarBody) -> bytes:
    """User_var_log_event::print()'s ':=value' (strings as _charset X'hex' COLLATE `collation`)."""
    if body.is_null:
        return b":=NULL"
    v = body.value
    if body.type == REAL_RESULT and len(v) >= 8:
        return b":=%s" % (b"%.14g" % struct.unpack("<d", v[:8])[0])
    if body.type == INT_RESULT and len(v) >= 8:
        n = int.from_bytes(v[:8], "little")
        if not (body.flags or 0) & USER_VAR_UNSIGNED_F and n >= 1 << 63:
            n -= 1 << 64
        return b":=%d" % n
    if body.type == DECIMAL_RESULT and len(v) >= 2:
        return b":=" + format_decimal(v[0], v[1], v[2:]).encode()
    if body.type == STRING_RESULT:
        names = collation_name(body.charset or 0)
        if names is None:
            return b":=???"
        return b":=_%s X'%s' COLLATE `%s`" % (names[0].encode(), v.hex().upper().encode(), names[1].encode())
    return b":=???"
