"""`spark.read.format("binlog").load(DIR)`: one row per event of MariaDB/MySQL binlog or relay-log files.

A PySpark 4 Python data source (`pyspark.sql.datasource`). One input partition per file, so files are decoded
in parallel; each partition yields Arrow record batches (columnar lists built in a tight loop over an mmap,
header fields by `struct`, GTID/QUERY bodies by the peek helpers of `protocol/`: no construct objects per event).

Relay logs (MariaDB `*-relay-bin.NNNNNN`) hold the upstream's events with the relay's own FDE and ROTATE events
around them. Rows then carry `relay_own` (the event was written by the replica itself: flag LOG_EVENT_RELAY_LOG_F
0x40, or the server_id of the relay's own FDE)
and `source_file`/`source_start`/`source_end`: where the event sits in the upstream's binlog (the file named by the
upstream's last ROTATE, the end from the header's log_pos). For primary binlogs `source_*` equal `file/start/end`.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlogd.protocol.binlog_file import BinlogFormatError, fde_checksum_alg
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_MAGIC,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    LOG_EVENT_RELAY_LOG_F,
    QUERY_EVENT,
    ROTATE_EVENT,
)
from binlogd.protocol.groups import GroupTracker
from binlogd.protocol.gtid import peek_gtid

_HEADER = struct.Struct("<IBIIIH")
_NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<num>\d{6,})$")
BATCH_ROWS = 65536

# (name, Spark DDL type, Arrow type name): the one description of a row, used for the schema and the batches
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("file", "STRING", "string"),
    ("file_index", "INT", "int32"),  # position of the file in the directory's index order
    ("start", "BIGINT", "int64"),
    ("end", "BIGINT", "int64"),
    ("ordinal", "BIGINT", "int64"),  # n-th event of the file (0 = the FDE)
    ("type", "INT", "int32"),
    ("type_name", "STRING", "string"),
    ("flags", "INT", "int32"),
    ("server_id", "BIGINT", "int64"),
    ("timestamp", "BIGINT", "int64"),
    ("length", "INT", "int32"),
    ("log_pos", "BIGINT", "int64"),
    ("crc_ok", "BOOLEAN", "bool_"),  # null when the file has no checksums
    ("gtid_domain", "BIGINT", "int64"),
    ("gtid_server", "BIGINT", "int64"),
    ("gtid_seq", "BIGINT", "int64"),
    ("gtid_standalone", "BOOLEAN", "bool_"),  # GTID events only: FL_STANDALONE
    ("trx", "STRING", "string"),  # GTID "d-s-n" of the group, else "file#group-ordinal"
    ("group_end", "BOOLEAN", "bool_"),  # the event ends its group (protocol/groups.py)
    ("db", "STRING", "string"),
    ("statement", "STRING", "string"),
    ("relay_own", "BOOLEAN", "bool_"),
    ("source_file", "STRING", "string"),
    ("source_start", "BIGINT", "int64"),
    ("source_end", "BIGINT", "int64"),
)
SCHEMA_DDL = ", ".join(f"`{n}` {t}" for n, t, _ in COLUMNS)


class BinlogSourceError(ValueError):
    """A path that is not a binlog directory/file, or a file that is not a binlog."""


def list_files(path: str | Path) -> list[Path]:
    """Binlog files of `path` in order: the one file given, the `*.index` order, else the numbered files."""
    p = Path(path)
    if p.is_file() and p.suffix == ".index":
        return _from_index(p)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise BinlogSourceError(f"{p}: no such file or directory")
    indexes = sorted(p.glob("*.index"))
    if len(indexes) == 1:
        return _from_index(indexes[0])
    found = sorted((m["base"], int(m["num"]), q) for q in p.iterdir() if (m := _NUMBERED.match(q.name)) and q.is_file())
    if not found:
        raise BinlogSourceError(f"{p}: no binlog files (NAME.000001 ...)")
    bases = sorted({b for b, _, _ in found})
    if len(bases) > 1:
        raise BinlogSourceError(f"{p}: several series of numbered files ({', '.join(bases)}): give NAME.index "
                                "instead of the directory")
    return [q for _, _, q in found]


def _from_index(index: Path) -> list[Path]:
    names = [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
    missing = [n for n in names if not (index.parent / n).is_file()]
    if missing or not names:
        raise BinlogSourceError(f"{index}: lists missing files {', '.join(missing)}" if missing else
                                f"{index}: empty index")
    return [index.parent / n for n in names]


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _query_db_and_text(buf: Any, pos: int, end: int, crc_len: int) -> tuple[str | None, str | None]:
    body = pos + HEADER_LEN
    if end - crc_len - body < 13:
        return None, None
    db_len = buf[body + 8]
    status_len = buf[body + 11] | (buf[body + 12] << 8)
    db_at = body + 13 + status_len
    text_at = db_at + db_len + 1
    stop = end - crc_len
    if text_at > stop:
        return None, None
    return _text(buf[db_at : db_at + db_len]), _text(buf[text_at:stop])


@dataclass
class FileScan:
    """What a scan of one file found besides its events (torn tail, bad magic)."""

    end: int = 0
    size: int = 0
    error: str | None = None


def iter_file_rows(path: Path, file_index: int = 0, *, statements: bool = True,
                   scan: FileScan | None = None, source_file: str | None = None) -> Iterator[list[Any]]:
    """Rows of one file as column lists (see COLUMNS), in chunks of at most BATCH_ROWS events.

    Stops at a torn tail or an impossible length (recorded in `scan`): the audit reports those itself.
    """
    scan = scan if scan is not None else FileScan()
    name = path.name
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        scan.size = size
        if size < 4:
            scan.error = "shorter than the binlog magic"
            return
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        if buf[:4] != BINLOG_MAGIC:
            scan.error = "not a binlog file (bad magic)"
            return
        yield from _scan(buf, name, file_index, statements, scan, source_file or name)
    finally:
        buf.close()


def _scan(buf: mmap.mmap, name: str, file_index: int, statements: bool, scan: FileScan, src_file: str
          ) -> Iterator[list[Any]]:
    unpack = _HEADER.unpack_from
    n = len(buf)
    p = 4
    ordinal = 0
    crc_len = 0
    relay_sid: int | None = None  # server_id of the replica that wrote this relay log
    tracker = GroupTracker()
    group_no = 0
    trx: str | None = None
    cols: list[list[Any]] = [[] for _ in COLUMNS]
    (c_file, c_fidx, c_start, c_end, c_ord, c_type, c_tname, c_flags, c_sid, c_ts, c_len, c_logpos, c_crc, c_gd,
     c_gs, c_gq, c_gst, c_trx, c_gend, c_db, c_stmt, c_own, c_sfile, c_sstart, c_send) = cols
    names = EVENT_TYPE_NAMES
    while n - p >= HEADER_LEN:
        ts, typ, sid, length, log_pos, flags = unpack(buf, p)
        if length < HEADER_LEN:
            scan.error = f"bogus event length {length} at {p}"
            break
        end = p + length
        if end > n:
            break
        gd = gs = gq = gst = None
        db = stmt = None
        if typ == FORMAT_DESCRIPTION_EVENT:
            try:
                crc_len = 4 if fde_checksum_alg(buf[p:end]) == BINLOG_CHECKSUM_ALG_CRC32 else 0
            except BinlogFormatError:
                crc_len = 0
            if relay_sid is None and flags & LOG_EVENT_RELAY_LOG_F:
                relay_sid = sid
        elif typ == GTID_EVENT:
            try:
                gd, gs, gq, f2 = peek_gtid(buf, p)
                gst = bool(f2 & 1)
            except ValueError:
                pass
        elif statements and typ == QUERY_EVENT:
            db, stmt = _query_db_and_text(buf, p, end, crc_len)
        elif statements and typ == ANNOTATE_ROWS_EVENT:
            stmt = _text(buf[p + HEADER_LEN : end - crc_len])
        own = bool(flags & LOG_EVENT_RELAY_LOG_F) or (relay_sid is not None and sid == relay_sid)
        if gd is not None:
            trx = f"{gd}-{gs}-{gq}"
        elif not tracker.inside:
            group_no += 1
            trx = f"{name}#{group_no}"
        try:
            ends = tracker.feed(buf, p, end, crc_len)
        except ValueError:
            ends = True
        c_file.append(name)
        c_fidx.append(file_index)
        c_start.append(p)
        c_end.append(end)
        c_ord.append(ordinal)
        c_type.append(typ)
        c_tname.append(names.get(typ, "Unknown"))
        c_flags.append(flags)
        c_sid.append(sid)
        c_ts.append(ts)
        c_len.append(length)
        c_logpos.append(log_pos)
        c_crc.append(crc_ok(buf[p:end]) if crc_len or typ == FORMAT_DESCRIPTION_EVENT else None)
        c_gd.append(gd)
        c_gs.append(gs)
        c_gq.append(gq)
        c_gst.append(gst)
        c_trx.append(trx)
        c_gend.append(ends)
        c_db.append(db)
        c_stmt.append(stmt)
        c_own.append(own)
        c_sfile.append(src_file)
        if log_pos:
            c_sstart.append(log_pos - length)
            c_send.append(log_pos)
        elif typ == FORMAT_DESCRIPTION_EVENT:  # sent with log_pos zeroed: FDEs live at 4
            c_sstart.append(4)
            c_send.append(4 + length)
        else:
            c_sstart.append(None)
            c_send.append(None)
        if ends:
            trx = None
        if typ == ROTATE_EVENT and not own and length >= HEADER_LEN + 8 + crc_len:  # the upstream's next file
            src_file = _text(buf[p + HEADER_LEN + 8 : end - crc_len])
        ordinal += 1
        p = end
        if len(c_start) >= BATCH_ROWS:
            yield cols
            cols = [[] for _ in COLUMNS]
            (c_file, c_fidx, c_start, c_end, c_ord, c_type, c_tname, c_flags, c_sid, c_ts, c_len, c_logpos, c_crc,
             c_gd, c_gs, c_gq, c_gst, c_trx, c_gend, c_db, c_stmt, c_own, c_sfile, c_sstart, c_send) = cols
    scan.end = p
    if c_start:
        yield cols


def upstream_files(files: Sequence[Path]) -> list[str | None]:
    """For relay logs: the upstream binlog file current at the start of each relay file (None: not a relay log).

    A relay file does not repeat the upstream's file name, so it is carried over from the upstream ROTATE events of
    the files before it (a header-only walk, done once on the driver).
    """
    out: list[str | None] = []
    current: str | None = None
    for i, f in enumerate(files):
        with f.open("rb") as fh:
            data = fh.read()
        if i == 0 and not (len(data) >= 4 + HEADER_LEN and data[4 + 4] == FORMAT_DESCRIPTION_EVENT
                           and int.from_bytes(data[4 + 17 : 4 + 19], "little") & LOG_EVENT_RELAY_LOG_F):
            return [None] * len(files)
        out.append(current)
        p, n, crc_len = 4, len(data), 0
        while n - p >= HEADER_LEN:
            _, typ, _, length, _, flags = _HEADER.unpack_from(data, p)
            if length < HEADER_LEN or p + length > n:
                break
            if typ == FORMAT_DESCRIPTION_EVENT:
                try:
                    crc_len = 4 if fde_checksum_alg(data[p : p + length]) == BINLOG_CHECKSUM_ALG_CRC32 else 0
                except BinlogFormatError:
                    crc_len = 0
            elif typ == ROTATE_EVENT and not flags & LOG_EVENT_RELAY_LOG_F:
                current = _text(data[p + HEADER_LEN + 8 : p + length - crc_len])
            p += length
    return out


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(n, getattr(pa, t)()) for n, _, t in COLUMNS])


def iter_file_batches(path: Path, file_index: int, statements: bool = True, source_file: str | None = None
                      ) -> Iterator[Any]:
    """Arrow RecordBatches of one file (the data source's unit of work)."""
    import pyarrow as pa

    schema = _arrow_schema()
    for cols in iter_file_rows(path, file_index, statements=statements, source_file=source_file):
        yield pa.RecordBatch.from_arrays([pa.array(c, type=schema.field(i).type) for i, c in enumerate(cols)],
                                         schema=schema)


try:  # the data source classes need PySpark; the row decoder above does not
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - pyspark is an optional dependency of the server
    DataSource = object  # type: ignore[assignment,misc]
    DataSourceReader = object  # type: ignore[assignment,misc]
    InputPartition = object  # type: ignore[assignment,misc]


class _FilePartition(InputPartition):  # type: ignore[misc,valid-type]
    def __init__(self, path: str, file_index: int, source_file: str | None) -> None:
        self.path = path
        self.file_index = file_index
        self.source_file = source_file


class BinlogReader(DataSourceReader):  # type: ignore[misc,valid-type]
    def __init__(self, files: Sequence[Path], statements: bool) -> None:
        self.files = [str(f) for f in files]
        self.sources = upstream_files(files)
        self.statements = statements

    def partitions(self) -> list[_FilePartition]:
        return [_FilePartition(f, i, src) for i, (f, src) in enumerate(zip(self.files, self.sources, strict=True))]

    def read(self, partition: _FilePartition) -> Iterator[Any]:
        yield from iter_file_batches(Path(partition.path), partition.file_index, self.statements,
                                     partition.source_file)


class BinlogDataSource(DataSource):  # type: ignore[misc,valid-type]
    """Options: `path` (a directory or one file), `statements` ("false" leaves db/statement null: faster)."""

    @classmethod
    def name(cls) -> str:
        return "binlog"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: Any) -> BinlogReader:
        path = self.options.get("path")
        if not path:
            raise BinlogSourceError("binlog data source: give a directory or file: .load(DIR)")
        statements = str(self.options.get("statements", "true")).lower() != "false"
        return BinlogReader(list_files(path), statements)


def register(spark: Any) -> None:
    """Make `spark.read.format("binlog")` available in this session."""
    spark.dataSource.register(BinlogDataSource)
