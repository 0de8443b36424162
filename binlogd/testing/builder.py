"""Build MariaDB 10.11 binlog files from Python, for tests of replicas and CDC clients.

    b = BinlogBuilder(tmp_path, server_id=1, checksum="CRC32")
    b.statement("CREATE TABLE shop.t (id INT PRIMARY KEY, name VARCHAR(20))", db="shop")
    with b.transaction(domain=0) as t:
        t.insert("shop", "t", ["id INT PRIMARY KEY", "name VARCHAR(20)"], [(1, "a"), (2, None)])
    with b.transaction(skip_replication=True) as t:
        t.query("DELETE FROM shop.t WHERE id = 2", db="shop")
    b.rotate()
    b.close()   # then: binlogd serve --binlog-dir tmp_path

Every call writes whole event groups, in the shapes a MariaDB 10.11 primary writes (a GTID event with its flags2,
the statement or the TABLE_MAP + rows events v1, XID or a COMMIT query), with log_pos, CRC32 (or none) and the
file header (FORMAT_DESCRIPTION, GTID_LIST, BINLOG_CHECKPOINT) right. A call is validated and encoded completely
before the first byte is written, so a ValueError (an impossible value, a GTID going backwards, an event over
4 GiB) leaves the files as they were. Files, the index and the in-use flag are written by binlogd's own writer
(server/binlog/writer.py), so a builder may append to a directory that `binlogd serve --binlog-dir` is serving:
waiting dumps pick new groups up within the server's 0.5 s directory poll.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from binlogd.protocol.binlog_file import basename_problem
from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    CRC_LEN,
    DELETE_ROWS_EVENT_V1,
    EVENT_TYPE_NAMES,
    FL_ALLOW_PARALLEL,
    FL_DDL,
    FL_STANDALONE,
    FL_TRANSACTIONAL,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_TYPES,
    QUERY_EVENT,
    ROTATE_EVENT,
    TABLE_MAP_EVENT,
    UPDATE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT_V1,
    XID_EVENT,
)
from binlogd.protocol.events import (
    AnnotateRowsBody,
    BinlogCheckpointBody,
    FormatDescriptionBody,
    Gtid,
    GtidBody,
    GtidListBody,
    QueryCharset,
    RotateBody,
    RowsBody,
    XidBody,
    build_event,
    encode_annotate_rows,
    encode_binlog_checkpoint,
    encode_format_description,
    encode_gtid,
    encode_gtid_list,
    encode_rotate,
    encode_rows,
    encode_table_map,
    encode_xid,
)
from binlogd.protocol.gtid import BinlogState, parse_gtid_list
from binlogd.protocol.gtid import Gtid as StateGtid
from binlogd.protocol.row_encode import STMT_END_F, ColumnDef, rows_data, table_map_body
from binlogd.server.binlog.writer import BinlogWriter

from .columns import columns as parse_columns

Buffer = bytes | bytearray | memoryview
ColumnSpecs = Sequence[str | ColumnDef]

SERVER_VERSION: Final = "10.11.19-MariaDB-log"
MAX_U32: Final = 0xFFFFFFFF
TABLES_INFO_EVENT: Final = 159  # protocol/tables_info.py (imported lazily: it loads sqlglot)
_BASENAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_NUMBERED: Final = re.compile(r"^(?P<base>.+)\.(?P<num>\d{6,})$")
# GTID flags2 as MariaDB 10.11 writes them (observed): DDL; a transactional engine's group (ends in XID);
# a non-transactional engine's group (ends in a COMMIT query)
GTID_DDL: Final = FL_STANDALONE | FL_ALLOW_PARALLEL | FL_DDL
GTID_XID: Final = FL_TRANSACTIONAL | FL_ALLOW_PARALLEL
GTID_NON_TRANSACTIONAL: Final = FL_ALLOW_PARALLEL


@dataclass(frozen=True, slots=True)
class WrittenEvent:
    """What the builder wrote: for assertions about what a reader must see (positions are end-exclusive)."""

    file: str
    start: int
    end: int
    type_code: int
    flags: int
    gtid: str | None  # the group's GTID ("domain-server-seq"), None outside groups


@dataclass(slots=True)
class _Ev:
    type_code: int
    body: Buffer
    flags: int = 0

    @property
    def length(self) -> int:
        return HEADER_LEN + len(self.body)


def _check_u32(value: int, what: str) -> int:
    if not 0 <= value <= MAX_U32:
        raise ValueError(f"{what}={value} does not fit 32 bits")
    return value


@dataclass
class Transaction:
    """The events of one group, collected until the `with` block ends; see `BinlogBuilder.transaction`."""

    builder: BinlogBuilder
    events: list[_Ev] = field(default_factory=list)

    def query(self, sql: str | bytes, db: str = "") -> Transaction:
        """A statement-format QUERY event (the statement runs with `db` as its default database)."""
        self.events.append(_Ev(QUERY_EVENT, self.builder._query_body(sql, db)))
        return self

    def insert(self, db: str, table: str, columns: ColumnSpecs, rows: Sequence[Sequence[object]], *,
               annotate: str | None = None) -> Transaction:
        """TABLE_MAP + WRITE_ROWS v1 (STMT_END_F) for `rows`; `annotate` adds ANNOTATE_ROWS with that text first."""
        return self._rows(WRITE_ROWS_EVENT_V1, db, table, columns, rows, annotate)

    def update(self, db: str, table: str, columns: ColumnSpecs,
               rows: Sequence[tuple[Sequence[object], Sequence[object]]], *, annotate: str | None = None
               ) -> Transaction:
        """TABLE_MAP + UPDATE_ROWS v1; `rows` are (before, after) pairs of full row images."""
        images: list[Sequence[object]] = []
        for pair in rows:
            if len(pair) != 2:
                raise ValueError(f"update rows are (before, after) pairs, got {pair!r}")
            images += [pair[0], pair[1]]
        return self._rows(UPDATE_ROWS_EVENT_V1, db, table, columns, images, annotate)

    def delete(self, db: str, table: str, columns: ColumnSpecs, rows: Sequence[Sequence[object]], *,
               annotate: str | None = None) -> Transaction:
        """TABLE_MAP + DELETE_ROWS v1 for `rows` (full before images)."""
        return self._rows(DELETE_ROWS_EVENT_V1, db, table, columns, rows, annotate)

    def _rows(self, type_code: int, db: str, table: str, columns: ColumnSpecs, images: Sequence[Sequence[object]],
              annotate: str | None) -> Transaction:
        cols = parse_columns(columns)
        if not images:
            raise ValueError(f"rows for {db}.{table}: at least one row")
        tm = table_map_body(self.builder._table_id(db, table, cols), db, table, cols, self.builder.row_metadata)
        data = rows_data(cols, images, update=type_code == UPDATE_ROWS_EVENT_V1)
        if annotate is not None:
            self.events.append(_Ev(ANNOTATE_ROWS_EVENT, encode_annotate_rows(AnnotateRowsBody(annotate.encode()))))
        self.events.append(_Ev(TABLE_MAP_EVENT, encode_table_map(tm)))
        self.events.append(_Ev(type_code, encode_rows(RowsBody(tm.table_id, STMT_END_F, data))))
        return self

    def tables_info(self, tables: Sequence[tuple[str | None, str]], default_db: str | None = None) -> Transaction:
        """binlogd's ignorable tables-info event (type 159) naming `tables`; needs BinlogBuilder(tables_info=True)."""
        self.events.append(self.builder._tables_info_ev(tables, default_db))
        return self

    def ignorable(self, type_code: int, payload: Buffer) -> Transaction:
        """An event of a type MariaDB 10.11 does not know, flagged LOG_EVENT_IGNORABLE_F (readers skip it)."""
        self.events.append(_ignorable_ev(type_code, payload))
        return self

    def event(self, type_code: int, body: Buffer, flags: int = 0) -> Transaction:
        """Any event, body as given (header, log_pos and CRC are added): for what the other calls do not make."""
        if not 0 <= type_code <= 255 or type_code in (FORMAT_DESCRIPTION_EVENT, ROTATE_EVENT):
            raise ValueError(f"type_code={type_code}: not an event a group may hold")
        if not 0 <= flags <= 0xFFFF:
            raise ValueError(f"flags={flags:#x}: header flags are 16 bits")
        self.events.append(_Ev(type_code, body, flags))
        return self


def _ignorable_ev(type_code: int, payload: Buffer) -> _Ev:
    if (type_code in EVENT_TYPE_NAMES or type_code == TABLES_INFO_EVENT or not 0 < type_code <= LOG_EVENT_TYPES):
        raise ValueError(f"type_code={type_code}: an unknown ignorable event needs a type MariaDB 10.11 does not "
                         f"define, at most {LOG_EVENT_TYPES} (readers reject types beyond the FDE's table), "
                         f"e.g. 39..158")
    return _Ev(type_code, payload, LOG_EVENT_IGNORABLE_F)


class BinlogBuilder:
    """Writes binlog files `BASENAME.000001 ...` plus `BASENAME.index` into `directory`.

    `checksum`: "CRC32" (MariaDB's default) or "NONE". `row_metadata`: binlog_row_metadata of the TABLE_MAP events
    ("FULL" by default, so CDC clients get column names and signedness; MariaDB's own default is "NO_LOG").
    `tables_info=True` declares binlogd's tables-info event (type 159) in each file's FDE. `gtid_state`: the
    GTID_LIST the first file starts with ("0-1-100,1-1-7"); sequence numbers continue from it. `timestamp`: the
    events' timestamp (default: the wall clock at each call). A directory that already holds files of
    `basename` is continued (its last file reopened for appending, as binlogd's writer recovers it).
    `written` lists every event written (`WrittenEvent`: file, start, end, type, flags, GTID), for assertions.
    """

    def __init__(self, directory: Path | str, *, server_id: int = 1, checksum: Literal["CRC32", "NONE"] = "CRC32",
                 basename: str = "mysql-bin", server_version: str = SERVER_VERSION, row_metadata: str = "FULL",
                 tables_info: bool = False, gtid_state: str = "", timestamp: int | None = None) -> None:
        problem = basename_problem(basename)
        if problem is None and not _BASENAME.match(basename):
            # MariaDB drops an extension from --log-bin, so its base names have no '.': NAME.000001 is a file
            problem = f"{basename!r} is not a base name MariaDB writes (letters, digits, '_' and '-'" + (
                "; a file name: drop the .NNNNNN)" if _NUMBERED.match(basename) else ")")
        if problem is not None:
            raise ValueError(f"basename={basename!r}: {problem}")
        if checksum not in ("CRC32", "NONE"):
            raise ValueError(f"checksum={checksum!r}: 'CRC32' or 'NONE'")
        if row_metadata not in ("NO_LOG", "MINIMAL", "FULL"):
            raise ValueError(f"row_metadata={row_metadata!r}: 'NO_LOG', 'MINIMAL' or 'FULL'")
        self.server_id = _check_u32(server_id, "server_id")
        self.checksum = checksum
        self.crc = checksum == "CRC32"
        self.basename = basename
        self.server_version = server_version
        self.row_metadata = row_metadata
        self.with_tables_info = tables_info
        self.timestamp = timestamp
        self._closed = False
        self.written: list[WrittenEvent] = []
        self._tables: dict[tuple[str, str, tuple[ColumnDef, ...]], int] = {}
        self._xid = 0
        self._state = BinlogState()
        try:
            initial = parse_gtid_list(gtid_state)
        except ValueError as e:
            raise ValueError(f"gtid_state={gtid_state!r}: {e}") from None
        for g in initial.values():
            self._state.update(StateGtid(g.domain, g.server, g.seq))
        self.directory = Path(directory)
        self._w = BinlogWriter(self.directory, basename)
        report = self._w.recover()
        if report.file is not None:
            alg = BINLOG_CHECKSUM_ALG_CRC32 if self.crc else BINLOG_CHECKSUM_ALG_OFF
            if report.checksum_alg != alg:
                self._w.close()
                raise ValueError(f"checksum={checksum!r}: {report.file} in {self.directory} has algorithm "
                                 f"{report.checksum_alg}; continue it with the same checksum")
            if gtid_state:
                self._w.close()
                raise ValueError("gtid_state: only for a new binlog (the directory already has one)")
            self._state = report.state
        else:
            self._start_file(f"{basename}.000001", first=True)

    # --- properties ------------------------------------------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """The binlog files, oldest first (the last is the active one)."""
        return self._w.files()

    @property
    def file(self) -> str:
        """The active file."""
        active = self._w.active
        assert active is not None
        return active

    @property
    def position(self) -> int:
        """End of the active file: where the next event starts."""
        return self._w.end

    @property
    def gtid_state(self) -> str:
        """@@gtid_binlog_state after what was written ("0-1-5,1-1-2"), the way the next file's GTID_LIST has it."""
        return ",".join(str(g) for g in self._state.as_list())

    def last_gtid(self, domain: int = 0) -> str | None:
        g = self._state.last(domain)
        return None if g is None else str(g)

    # --- groups ----------------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, domain: int = 0, *, server_id: int | None = None, seq_no: int | None = None,
                    skip_replication: bool = False, commit: Literal["xid", "query"] = "xid", xid: int | None = None,
                    timestamp: int | None = None) -> Iterator[Transaction]:
        """One event group: GTID, the events added in the block, then XID (a transactional engine, `commit="xid"`)
        or a COMMIT query (`commit="query"`, a non-transactional engine). Written when the block ends without an
        exception; an exception in the block writes nothing. `skip_replication` flags every event 0x8000."""
        if commit not in ("xid", "query"):
            raise ValueError(f"commit={commit!r}: 'xid' or 'query'")
        t = Transaction(self)
        yield t
        if not t.events:
            raise ValueError("transaction: no events (MariaDB logs nothing for an empty transaction)")
        if commit == "xid":
            self._xid = xid if xid is not None else self._xid + 1
            end = _Ev(XID_EVENT, encode_xid(XidBody(self._xid)))
            flags2 = GTID_XID
        else:
            end = _Ev(QUERY_EVENT, self._query_body("COMMIT", ""), LOG_EVENT_SUPPRESS_USE_F)
            flags2 = GTID_NON_TRANSACTIONAL
        self._group(domain, server_id, seq_no, flags2, [*t.events, end], skip_replication, timestamp)

    def statement(self, sql: str | bytes, db: str = "", *, domain: int = 0, server_id: int | None = None,
                  seq_no: int | None = None, skip_replication: bool = False, timestamp: int | None = None) -> str:
        """A standalone statement (DDL): GTID (flags2 STANDALONE|ALLOW_PARALLEL|DDL) and one QUERY. Returns the
        GTID."""
        return self._group(domain, server_id, seq_no, GTID_DDL, [_Ev(QUERY_EVENT, self._query_body(sql, db))],
                           skip_replication, timestamp)

    def ignorable(self, type_code: int, payload: Buffer, *, skip_replication: bool = False,
                  timestamp: int | None = None) -> None:
        """An unknown event flagged LOG_EVENT_IGNORABLE_F between groups (see `Transaction.ignorable`).

        mariadb-binlog and python-mysql-replication pass over it; a MariaDB 10.11 replica's IO thread does not
        (it refuses any event outside a GTID group and stops with 1595): a fault to test replicas against."""
        self._write([_ignorable_ev(type_code, payload)], skip_replication, timestamp, None)

    def tables_info(self, tables: Sequence[tuple[str | None, str]], default_db: str | None = None, *,
                    skip_replication: bool = False, timestamp: int | None = None) -> None:
        """A tables-info event between groups (binlogd's own writer puts them inside groups:
        `Transaction.tables_info`)."""
        self._write([self._tables_info_ev(tables, default_db)], skip_replication, timestamp, None)

    def rotate(self, next_file: str | None = None, *, timestamp: int | None = None) -> str:
        """Close the active file with a ROTATE and start `next_file` (default: the next number); returns its name."""
        self._check_open()
        current = self.file
        num = _NUMBERED.match(current)
        assert num is not None
        name = next_file if next_file is not None else f"{self.basename}.{int(num['num']) + 1:0{len(num['num'])}d}"
        m = _NUMBERED.match(name)
        if m is None or m["base"] != self.basename or "/" in name or int(m["num"]) <= int(num["num"]):
            raise ValueError(f"next_file={name!r} is not a binlog file name {self.basename}.NNNNNN numbered after "
                             f"{current}")
        ts = self._ts(timestamp)
        rotate = self._encode([_Ev(ROTATE_EVENT, encode_rotate(RotateBody(BIN_LOG_HEADER_SIZE, name.encode())))],
                              0, ts, self.server_id)
        self._w.write(rotate)
        self._record(current, rotate, None)
        self._start_file(name, first=False, timestamp=ts)
        return name

    def close(self) -> None:
        """Clear the active file's in-use flag (a clean shutdown, as MariaDB leaves it). Idempotent."""
        if not self._closed:
            self._closed = True
            self._w.close()

    def __enter__(self) -> BinlogBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals -------------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the builder is closed")

    def _ts(self, timestamp: int | None) -> int:
        ts = timestamp if timestamp is not None else self.timestamp
        return _check_u32(int(time.time()) if ts is None else ts, "timestamp")

    def _query_body(self, sql: str | bytes, db: str) -> bytes:
        # the standalone primary's encoder (MariaDB 10.11's status variables); imported here because
        # server.standalone loads the SQL surface (mysql-mimic), which the builder's other paths never need
        from binlogd.server.standalone.logger import QueryContext, query_body

        if len(db.encode()) > 64:
            raise ValueError(f"db={db!r} is longer than 64 bytes")
        ctx = QueryContext(thread_id=1, charset=QueryCharset(45, 45, 8), db=db)
        return query_body(sql, ctx)

    def _tables_info_ev(self, tables: Sequence[tuple[str | None, str]], default_db: str | None) -> _Ev:
        if not self.with_tables_info:
            raise ValueError("tables_info: create the builder with tables_info=True (the FDE must declare type 159)")
        from binlogd.protocol.tables_info import encode_tables_info

        return _Ev(TABLES_INFO_EVENT, encode_tables_info(list(tables), default_db), LOG_EVENT_IGNORABLE_F)

    def _table_id(self, db: str, table: str, cols: tuple[ColumnDef, ...]) -> int:
        """One id per table definition, like a primary's table cache (a changed definition gets a new id)."""
        return self._tables.setdefault((db, table, cols), len(self._tables) + 1)

    def _next_gtid(self, domain: int, server_id: int | None, seq_no: int | None) -> StateGtid:
        _check_u32(domain, "domain")
        sid = _check_u32(self.server_id if server_id is None else server_id, "server_id")
        last = self._state.last(domain)
        if seq_no is None:
            seq_no = 1 if last is None else last.seq + 1
        if not 0 < seq_no < 1 << 64:
            raise ValueError(f"seq_no={seq_no} is not in 1 .. 2**64-1")
        if last is not None and seq_no <= last.seq:
            raise ValueError(f"seq_no={seq_no} goes backwards in domain {domain}: its last GTID is {last}")
        return StateGtid(domain, sid, seq_no)

    def _group(self, domain: int, server_id: int | None, seq_no: int | None, flags2: int, events: list[_Ev],
               skip: bool, timestamp: int | None) -> str:
        self._check_open()
        g = self._next_gtid(domain, server_id, seq_no)
        gtid = _Ev(GTID_EVENT, encode_gtid(GtidBody(seq_no=g.seq, domain_id=g.domain, flags2=flags2)),
                   LOG_EVENT_SUPPRESS_USE_F)
        self._write([gtid, *events], skip, timestamp, g)
        self._state.update(g)
        return str(g)

    def _encode(self, events: list[_Ev], skip_flag: int, ts: int, server_id: int) -> bytes:
        """All events at the active file's end, or ValueError before anything is built."""
        crc = CRC_LEN if self.crc else 0
        pos = self._w.end
        for ev in events:
            if ev.length + crc > MAX_U32:
                raise ValueError(f"event of type {ev.type_code} would be {ev.length + crc} bytes: over 4 GiB "
                                 f"(event_length is 32 bits)")
            pos += ev.length + crc
        if pos > MAX_U32:
            raise ValueError(f"log_pos {pos} would pass 4 GiB in {self.file}: rotate() first")
        out = bytearray()
        pos = self._w.end
        for ev in events:
            pos += ev.length + crc
            out += build_event(type_code=ev.type_code, body=bytes(ev.body), checksum=self.crc, timestamp=ts,
                               server_id=server_id, log_pos=pos, flags=ev.flags | skip_flag)
        return bytes(out)

    def _write(self, events: list[_Ev], skip: bool, timestamp: int | None, gtid: StateGtid | None) -> None:
        self._check_open()
        data = self._encode(events, LOG_EVENT_SKIP_REPLICATION_F if skip else 0, self._ts(timestamp),
                            self.server_id if gtid is None else gtid.server)
        start = self._w.end
        self._w.write(data)
        self._w.commit()
        self._record(self.file, data, None if gtid is None else str(gtid), start)

    def _record(self, name: str, data: bytes, gtid: str | None, start: int | None = None) -> None:
        pos = self._w.end - len(data) if start is None else start
        off = 0
        while off < len(data):
            length = int.from_bytes(data[off + 9 : off + 13], "little")
            flags = int.from_bytes(data[off + 17 : off + 19], "little")
            self.written.append(WrittenEvent(name, pos + off, pos + off + length, data[off + 4], flags, gtid))
            off += length

    def _start_file(self, name: str, *, first: bool, timestamp: int | None = None) -> None:
        """magic + FORMAT_DESCRIPTION + GTID_LIST + BINLOG_CHECKPOINT, as MariaDB starts every file."""
        ts = self._ts(timestamp)
        fde = FormatDescriptionBody.mariadb_10_11(
            self.server_version, create_timestamp=ts if first else 0,
            checksum_alg=BINLOG_CHECKSUM_ALG_CRC32 if self.crc else BINLOG_CHECKSUM_ALG_OFF)
        if self.with_tables_info:
            from binlogd.protocol.tables_info import declare_in_fde

            fde = declare_in_fde(fde)
        state = tuple(Gtid(g.domain, g.server, g.seq) for g in self._state.as_list())
        specs = [(FORMAT_DESCRIPTION_EVENT, encode_format_description(fde)),
                 (GTID_LIST_EVENT, encode_gtid_list(GtidListBody(state))),
                 (BINLOG_CHECKPOINT_EVENT, encode_binlog_checkpoint(BinlogCheckpointBody(name.encode())))]
        out = bytearray()
        pos = BIN_LOG_HEADER_SIZE
        for type_code, body in specs:
            with_crc = self.crc or type_code == FORMAT_DESCRIPTION_EVENT
            pos += HEADER_LEN + len(body) + (CRC_LEN if with_crc else 0)
            out += build_event(type_code=type_code, body=body, checksum=self.crc, timestamp=ts,
                               server_id=self.server_id, log_pos=pos)
        self._w.start_file(name, bytes(out))
        self._record(name, bytes(out), None, BIN_LOG_HEADER_SIZE)
