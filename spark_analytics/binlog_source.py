"""`spark.read.format("binlog").load(DIR)`: one row per event of MariaDB/MySQL binlog or relay-log files.

A PySpark 4 Python data source (`pyspark.sql.datasource`). A file is one input partition, or several when it is
larger than `split_bytes` (ranges starting at GTID events, planned by a header walk on the driver), so files and
large files' parts are decoded in parallel; each partition yields Arrow record batches from the vectorised decoder
of `binlog_decode` (numpy over the 19-byte headers; Python per event only for the walk, the group state and the
CRC). Reading with any split gives exactly the rows of a whole-file read.

Relay logs (MariaDB `*-relay-bin.NNNNNN`) hold the upstream's events with the relay's own FDE and ROTATE events
around them. Rows then carry `relay_own` (the event was written by the replica itself: flag LOG_EVENT_RELAY_LOG_F
0x40, or the server_id of the relay's own FDE)
and `source_file`/`source_start`/`source_end`: where the event sits in the upstream's binlog (the file named by the
upstream's last ROTATE, the end from the header's log_pos). For primary binlogs `source_*` equal `file/start/end`.
"""

from __future__ import annotations

import contextlib
import mmap
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from binlogd.protocol.binlog_file import BinlogFormatError, fde_checksum_alg
from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_MAGIC,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    LOG_EVENT_RELAY_LOG_F,
    ROTATE_EVENT,
)

from .binlog_decode import HEADER_DTYPE, RangeStart, WalkEnd, decode_range, fde_crc_len, gather, text, walk

_HEADER = struct.Struct("<IBIIIH")
_NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<num>\d{6,})$")

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


SPLIT_BYTES = 32 << 20  # a file larger than this is read by several partitions (option `split_bytes`)


@dataclass
class Split:
    """One partition's work: a range of one file (see binlog_decode.RangeStart) and its first event's ordinal."""

    path: str
    file_index: int
    rs: RangeStart
    first_ordinal: int


def plan_splits(path: Path, file_index: int, source_file: str | None, split_bytes: int = SPLIT_BYTES
                ) -> list[Split]:
    """The ranges of one file: the whole file when it is at most `split_bytes`, else ranges of about
    `split_bytes` each starting at a GTID event (a group start), found by a header walk on the driver (one length
    read per event; types, FDEs and upstream ROTATEs gathered by numpy). Rows do not depend on the split."""
    name = path.name
    size = path.stat().st_size
    whole = Split(str(path), file_index, RangeStart(4, None, 0, source_file or name, None), 0)
    if size <= split_bytes or size < 4 + HEADER_LEN:
        return [whole]
    with path.open("rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        if buf[:4] != BINLOG_MAGIC:
            return [whole]
        starts = walk(buf, 4, size, WalkEnd())
        arr = np.frombuffer(buf, dtype=np.uint8)
        h = gather(arr, starts, HEADER_LEN).view(HEADER_DTYPE).reshape(-1)
        types, flags, lengths = h["type"], h["flags"], h["len"].astype(np.int64)
        gtids = starts[types == GTID_EVENT]
        fdes = np.flatnonzero(types == FORMAT_DESCRIPTION_EVENT)
        relay_sid = None
        if len(fdes) and flags[fdes[0]] & LOG_EVENT_RELAY_LOG_F:
            relay_sid = int(h["sid"][fdes[0]])
        own = (flags & LOG_EVENT_RELAY_LOG_F) != 0
        if relay_sid is not None:
            own |= h["sid"] == relay_sid
        rotates = np.flatnonzero((types == ROTATE_EVENT) & ~own)
        cuts = sorted({int(gtids[k]) for k in np.searchsorted(gtids, np.arange(split_bytes, size, split_bytes))
                       if k < len(gtids)} - {4})
        out: list[Split] = []
        bounds = [4, *cuts]
        for i, b in enumerate(bounds):
            first = int(np.searchsorted(starts, b))
            crc_len, src = 0, source_file or name
            before = fdes[fdes < first]
            if len(before):
                k = int(before[-1])
                crc_len = fde_crc_len(buf, int(starts[k]), int(starts[k] + lengths[k]))
            rb = rotates[rotates < first]
            if len(rb):
                k = int(rb[-1])
                cl = crc_len  # the ROTATE's checksum length: that of the FDE before it
                fb = fdes[fdes < k]
                if len(fb):
                    j = int(fb[-1])
                    cl = fde_crc_len(buf, int(starts[j]), int(starts[j] + lengths[j]))
                if lengths[k] >= HEADER_LEN + 8 + cl:
                    src = buf[int(starts[k]) + HEADER_LEN + 8 : int(starts[k] + lengths[k]) - cl].decode(
                        "utf-8", "replace")
            stop = bounds[i + 1] if i + 1 < len(bounds) else None
            out.append(Split(str(path), file_index, RangeStart(b, stop, crc_len if b > 4 else 0, src,
                                                               relay_sid if b > 4 else None), first))
        del arr, h, types, flags  # numpy views of the mmap: released before it is closed
        return out
    finally:
        buf.close()


def iter_split_batches(split: Split, statements: bool = True, scan: WalkEnd | None = None,
                       columns: Sequence[str] | None = None) -> Iterator[Any]:
    """Arrow RecordBatches of one split (the data source's unit of work); `scan` gets where the walk stopped;
    `columns`: only these of `COLUMNS`, in that order; None: all."""
    scan = scan if scan is not None else WalkEnd()
    path = Path(split.path)
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        if size < 4:
            scan.error = "shorter than the binlog magic"
            return
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        if buf[:4] != BINLOG_MAGIC:
            scan.error = "not a binlog file (bad magic)"
            return
        yield from decode_range(buf, path.name, split.file_index, split.rs, statements, split.first_ordinal, scan,
                                columns)
    finally:
        with contextlib.suppress(BufferError):  # a consumer that stopped early holds a view: closed when collected
            buf.close()


def iter_file_batches(path: Path, file_index: int = 0, statements: bool = True, source_file: str | None = None
                      ) -> Iterator[Any]:
    """Arrow RecordBatches of a whole file in one pass (what every split plan must reproduce)."""
    yield from iter_split_batches(Split(str(path), file_index, RangeStart(4, None, 0, source_file or path.name,
                                                                         None), 0), statements)


def upstream_files(files: Sequence[Path]) -> list[str | None]:
    """For relay logs: the upstream binlog file current at the start of each relay file (None: not a relay log).

    A relay file does not repeat the upstream's file name, so it is carried over from the upstream ROTATE events of
    the files before it (a header-only walk, done once on the driver).
    """
    out: list[str | None] = []
    current: str | None = None
    if files:  # a primary binlog is told by its first FDE alone: its files (100 MB each) are not read here
        with files[0].open("rb") as fh:
            head = fh.read(4 + HEADER_LEN)
        if not (len(head) >= 4 + HEADER_LEN and head[4 + 4] == FORMAT_DESCRIPTION_EVENT
                and int.from_bytes(head[4 + 17 : 4 + 19], "little") & LOG_EVENT_RELAY_LOG_F):
            return [None] * len(files)
    for f in files:
        with f.open("rb") as fh:
            data = fh.read()
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
                current = text(data[p + HEADER_LEN + 8 : p + length - crc_len])
            p += length
    return out


def arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(n, getattr(pa, t)()) for n, _, t in COLUMNS])


try:  # the data source classes need PySpark; the row decoder above does not
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - pyspark is an optional dependency of the server
    DataSource = object  # type: ignore[assignment,misc]
    DataSourceReader = object  # type: ignore[assignment,misc]
    InputPartition = object  # type: ignore[assignment,misc]


class _SplitPartition(InputPartition):  # type: ignore[misc,valid-type]
    def __init__(self, split: Split) -> None:
        self.split = split


class BinlogReader(DataSourceReader):  # type: ignore[misc,valid-type]
    def __init__(self, files: Sequence[Path], statements: bool, split_bytes: int = SPLIT_BYTES) -> None:
        self.splits = [sp for i, (f, src) in enumerate(zip(files, upstream_files(files), strict=True))
                       for sp in plan_splits(f, i, src, split_bytes)]
        self.statements = statements

    def partitions(self) -> list[_SplitPartition]:
        return [_SplitPartition(sp) for sp in self.splits]

    def read(self, partition: _SplitPartition) -> Iterator[Any]:
        yield from iter_split_batches(partition.split, self.statements)


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
        try:
            split_bytes = int(self.options.get("split_bytes", SPLIT_BYTES))
        except ValueError as e:
            raise BinlogSourceError(f"binlog data source: split_bytes must be a number of bytes: {e}") from e
        if split_bytes < 1:
            raise BinlogSourceError("binlog data source: split_bytes must be at least 1")
        return BinlogReader(list_files(path), statements, split_bytes)


def register(spark: Any) -> None:
    """Make `spark.read.format("binlog")` available in this session (once: the registration pickles the class and
    costs ~2 s in a fresh JVM, which a small audit decoded in the driver never needs)."""
    if getattr(spark, "_binlogd_source", False):
        return
    spark.dataSource.register(BinlogDataSource)
    spark._binlogd_source = True


def decode_in_driver(path: str | Path, statements: bool = True) -> Any:
    """The rows `spark.read.format("binlog").load(path)` gives, decoded in this process (the same reader) as one
    Arrow table. Needs no Spark: the CLI runs it while the JVM starts."""
    import pyarrow as pa

    reader = BinlogReader(list_files(path), statements)
    return pa.Table.from_batches([b for part in reader.partitions() for b in reader.read(part)], schema=arrow_schema())


def arrow_file_stats(table: Any) -> dict[str, dict[str, int]]:
    """Per file of a decoded table: events, end of its last event, bytes of its events (what the audit otherwise
    asks Spark for with a group-by job)."""
    g = table.group_by("file").aggregate([("file", "count"), ("end", "max"), ("length", "sum")])
    return {f: {"events": int(n), "end": int(e), "bytes": int(b)} for f, n, e, b in zip(
        g["file"].to_pylist(), g["file_count"].to_pylist(), g["end_max"].to_pylist(), g["length_sum"].to_pylist(),
        strict=True)}


def arrow_event_types(table: Any) -> frozenset[int]:
    """The event types a decoded table holds."""
    import pyarrow.compute as pc

    return frozenset(t for t in pc.unique(table["type"]).to_pylist() if t is not None)


def load_in_driver(spark: Any, path: str | Path, statements: bool = True, table: Any = None) -> Any:
    """The rows `spark.read.format("binlog").load(path)` gives, decoded in this process (`decode_in_driver`, or its
    `table` given) and handed to Spark as one Arrow table: for a small input, where the data source's planner
    processes and its read job's Python worker cost more than the decoding (a 20 000-event directory decodes in
    milliseconds)."""
    files = list_files(path)
    if table is None:
        table = decode_in_driver(path, statements)
    ddl = ", ".join(f"`{n}` {t}" for n, t, _ in COLUMNS if n in table.column_names)  # columns a caller dropped
    # one partition per file, as the data source reads a small file (not the session's default parallelism)
    return spark.createDataFrame(table, ddl).coalesce(max(1, len(files)))
