"""Reading binlogd's audit ledger (docs/ledger.md): JSON Lines with an explicit schema, torn tail detection.

Spark parses the records (PERMISSIVE mode: an unparsable line becomes a `_corrupt_record`); which of those is a
torn *last* record (a crash while writing: tolerated and reported) and which is damage in the middle is decided
from the files themselves, which is cheap: only each file's last bytes are read.

A ledger that pyarrow parses strictly (`stage_ledger`: every line one object of the schema's types, nothing torn)
is staged as Parquet while the JVM starts, and Spark reads that: its JSON scan was the first job of a cold JVM
(the 1 M-event audit's connection step). Anything pyarrow refuses goes to Spark's JSON reader as before, so the
rows, and what is reported unparsable, do not change. The lines binlogd writes are parsed by a C scanner
(`_ledgerscan.c`, optional) into the table pyarrow would give, ten times faster; pyarrow parses whatever it refuses.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # optional C extension (pyproject.toml): without it pyarrow parses every file
    from . import _ledgerscan
except ImportError:
    _ledgerscan = None

_LEDGER_FILE = re.compile(r"^ledger\.(\d{6,})\.jsonl$")

# The schema of every record kind in one struct (a key a record does not have is null).
SCHEMA_DDL = ", ".join([
    "r STRING", "seq BIGINT", "conn BIGINT", "ts_us BIGINT",
    # conn
    "thread_id BIGINT", "peer STRING", "user STRING", "server_id BIGINT", "capability INT",
    "capability_set BOOLEAN", "skip_replication BOOLEAN", "dump_flags INT", "checksum BOOLEAN",
    "start_file STRING", "start_pos BIGINT", "req_file STRING", "req_pos BIGINT", "start_gtid STRING",
    "heartbeat_ms BIGINT", "compat STRING", "source_server_id BIGINT", "binlog_dir STRING",
    "send_tables_info BOOLEAN", "transcode STRING", "table_filters STRING",
    # ev
    "file STRING", "start BIGINT", "end BIGINT", "count BIGINT", "length BIGINT", "action STRING",
    "why STRING", "type INT", "flags INT", "gtid STRING", "sent_length BIGINT", "policy BIGINT", "code INT",
    "message STRING",
    # close
    "pos BIGINT", "reason STRING", "error_code INT", "error STRING", "events BIGINT", "heartbeats BIGINT",
    "bytes BIGINT",
    "_corrupt_record STRING",
])


class LedgerError(ValueError):
    """No ledger to read (missing directory, no ledger files)."""


@dataclass
class LedgerFiles:
    directory: Path
    files: list[Path]
    torn: list[tuple[str, int, int]] = field(default_factory=list)  # (file, offset, bytes) of a torn last line


def ledger_files(directory: str | Path) -> LedgerFiles:
    """The ledger files in numeric order and, per file, a torn last line (no trailing newline)."""
    d = Path(directory)
    if not d.is_dir():
        raise LedgerError(f"ledger directory {d} does not exist")
    found = sorted((int(m.group(1)), p) for p in d.iterdir() if (m := _LEDGER_FILE.match(p.name)) and p.is_file())
    if not found:
        raise LedgerError(f"no ledger files (ledger.000001.jsonl ...) in {d}")
    out = LedgerFiles(d, [p for _, p in found])
    for p in out.files:
        size = p.stat().st_size
        if size == 0:
            continue
        with p.open("rb") as fh:
            back = min(size, 1 << 16)
            fh.seek(size - back)
            tail = fh.read(back)
        if not tail.endswith(b"\n"):
            nl = tail.rfind(b"\n")
            offset = size - back + nl + 1 if nl >= 0 else size - back
            out.torn.append((p.name, offset, size - offset))
    return out


# a staged ledger file is cut into up to PARTS_PER_FILE Parquet files of at least PART_ROWS records
PARTS_PER_FILE, PART_ROWS = 4, 16384
_ARROW_TYPES = {"STRING": "string", "BIGINT": "int64", "INT": "int32", "BOOLEAN": "bool_"}


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(n, getattr(pa, _ARROW_TYPES[t])()) for n, t in (c.split(" ") for c in SCHEMA_DDL.split(", "))
                      if n != "_corrupt_record"])


def _strict_table(path: Path) -> Any:
    """The file's records as Spark's JSON reader gives them, or None where it could differ (`_table_of`)."""
    return _table_of(path.read_bytes())


def _table_of(raw: bytes) -> Any:
    """The records of a ledger file's bytes as Spark's JSON reader gives them, or None where it could differ: pyarrow
    refuses any value not of the schema's type (Spark would turn a number or an object in a STRING field into its
    text, or mark the line corrupt), a repeated key; a line count differing from the rows (blank lines, two objects
    on one line) or a key named like the corrupt-record column also gives None. The C scanner (`_native_table`)
    parses the lines binlogd writes, the same table; pyarrow parses whatever it refuses."""
    import pyarrow as pa
    import pyarrow.json as pj

    if b'"_corrupt_record"' in raw:
        return None
    # blocks of 8 MB are parsed in parallel (a 64 MB ledger file in one block took 1.65 s on one core, in 8 MB
    # blocks 0.59 s: the same table); a pyarrow that refuses a line longer than a block gives None: Spark reads it
    block = max(1 << 20, min(len(raw) + 1, 8 << 20))
    newlines = raw.count(b"\n")
    table = _native_table(raw, block // 2)
    if table is None:
        # a line that is not an object (`null`, a number, an array): pyarrow makes `null` a row of nulls where
        # Spark's reader marks the line corrupt, and pyarrow 26 crashes the process (SIGSEGV) on a file whose first
        # line is `null`. Such a file is Spark's to read
        if _not_objects(raw, newlines):
            return None
        try:
            table = pj.read_json(pa.BufferReader(raw), read_options=pj.ReadOptions(block_size=block),
                                 parse_options=pj.ParseOptions(explicit_schema=_arrow_schema(),
                                                               unexpected_field_behavior="ignore"))
        except Exception:  # pyarrow.ArrowInvalid and its kind: Spark decides, line by line
            return None
    return table if table.num_rows == newlines else None


# a line whose first character after blanks does not open an object
_NOT_AN_OBJECT = re.compile(rb"(?:\A|\n)[ \t\r]*[^{ \t\r\n]")


def _not_objects(raw: bytes, newlines: int) -> bool:
    """Whether a line of `raw` (`newlines` of them end with one) is not empty and does not start (after blanks) with
    "{". Lines that start with "{" are counted first (a byte count: 0.08 s for 64 MB); only when some do not is the
    regex run (1.4 s)."""
    lines = newlines + (0 if raw.endswith(b"\n") else 1)
    if not raw or raw.startswith(b"{") + raw.count(b"\n{") == lines:
        return False
    return _NOT_AN_OBJECT.search(raw) is not None


def _native_table(raw: bytes, max_line: int) -> Any:
    """`raw`'s table from the C scanner (spark_analytics/_ledgerscan.c: the 10 M-event ledger's 176 MB in 0.4 s
    of CPU, pyarrow.json took 3.5-5 s), or None: not built, BINLOGD_NO_NATIVE set (to compare the two), or a line
    outside the subset it takes (what binlogd writes; `max_line`: the longest, shorter than pyarrow's smallest block
    here). Its columns are the Arrow buffers it filled, not copied; a column with no value is all nulls."""
    if _ledgerscan is None or os.environ.get("BINLOGD_NO_NATIVE"):
        return None
    import pyarrow as pa

    schema = _arrow_schema()
    got = _ledgerscan.scan(raw, [(f.name, str(f.type)) for f in schema], max_line)
    if got is None:
        return None
    rows, columns = got
    arrays = [pa.nulls(rows, f.type) if col is None else
              pa.Array.from_buffers(f.type, rows, [None if b is None else pa.py_buffer(b) for b in col[1:]], col[0])
              for f, col in zip(schema, columns, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def strict_tables(files: LedgerFiles) -> list[Any] | None:
    """Every ledger file's records as pyarrow parsed them strictly (`_strict_table`; `_corrupt_record` and
    `ledger_file` added), or None: a torn file, or a file pyarrow does not parse strictly, and Spark reads the JSON."""
    import pyarrow as pa

    if files.torn or not files.files:
        return None
    tables = []
    for p in files.files:
        t = _strict_table(p)
        if t is None:
            return None
        n = t.num_rows
        tables.append(t.append_column("_corrupt_record", pa.nulls(n, pa.string()))
                      .append_column("ledger_file", pa.array([p.name] * n, pa.string())))
    return tables


def stage_ledger(files: LedgerFiles, out_dir: Path | None = None, tables: list[Any] | None = None,
                 dictionary: list[str] | None = None) -> Path | None:
    """The ledger as Parquet (one file per ledger file: `strict_tables`, or `tables` made from them, e.g. with
    `record_probes` columns, `dictionary` of them dictionary-encoded) in `out_dir` (default: a new temporary
    directory; the caller removes it), or None where `strict_tables` gives None: Spark reads the JSON."""
    import pyarrow.parquet as pq

    if tables is None:
        tables = strict_tables(files)
    if tables is None:
        return None
    out = out_dir or Path(tempfile.mkdtemp(prefix="binlogd-audit-ledger-"))
    out.mkdir(parents=True, exist_ok=True)
    # several parts per file: Spark reads a small Parquet file as one task, the JSON file as 4 (local[2])
    parts = [t.slice(lo, step) for t in tables
             for step in [max(PART_ROWS, -(-t.num_rows // PARTS_PER_FILE))]
             for lo in range(0, max(t.num_rows, 1), step)]

    def write(k: int) -> None:
        pq.write_table(parts[k], out / f"part-{k:05d}.parquet", compression="lz4", write_statistics=False,
                       use_dictionary=["r", "ledger_file", "file", "action", "why", *(dictionary or [])])

    # two at a time: pyarrow encodes without the GIL (the 10 M-event ledger with its probe columns: 1.0-1.4 s in
    # one thread, the last step before the audit can start)
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="ledger-parquet") as pool:
            list(pool.map(write, range(len(parts))))
    except BaseException:
        if out_dir is None:  # its own directory: not left behind (the caller gets no path to remove)
            shutil.rmtree(out, ignore_errors=True)
        raise
    return out


@dataclass(frozen=True)
class SeqStats:
    """The records' seqs (`seq_stats`): what check 10's seq test (`checks.ledger_seqs`) aggregates."""

    lo: int | None  # the least seq (None: no record has one)
    hi: int | None
    n: int  # records with a seq
    distinct: int  # distinct seqs
    nulls: int  # records without one

    @property
    def all_distinct(self) -> bool:
        """Every record has its own seq (no null, no two the same): then no line is repeated byte for byte, and
        `checks.drop_repeated_records` has nothing to drop."""
        return self.nulls == 0 and self.distinct == self.n


def seq_stats(columns: list[Any]) -> SeqStats:
    """`SeqStats` of the `seq` columns (pyarrow) of the ledger's tables as written."""
    import numpy as np
    import pyarrow as pa

    seq = pa.chunked_array([c for col in columns for c in col.chunks], pa.int64())
    values = seq.drop_null().to_numpy()
    if not len(values):
        return SeqStats(None, None, 0, 0, seq.null_count)
    # sorted and compared with the neighbour: np.unique (a hash table in numpy 2) took 0.6-0.9 s for the 740 800
    # seqs of the 10 M-event ledger, a sort 15 ms (seqs are written in order)
    s = np.sort(values)
    distinct = 1 + int(np.count_nonzero(s[1:] != s[:-1]))
    return SeqStats(int(s[0]), int(s[-1]), len(s), distinct, seq.null_count)


def read_ledger(spark: Any, files: LedgerFiles, staged: Path | None = None, extra_ddl: str = "") -> Any:
    """All records as one DataFrame (schema above + `ledger_file`), cached: Spark needs that to query
    `_corrupt_record` on its own. `staged`: `stage_ledger`'s directory of the same files, read instead and not
    cached (its few readers scan the Parquet columns they need; the checks read the deduplicated copy, cached by
    `checks.drop_repeated_records`: building a cache of every column twice cost the connection step's job);
    `extra_ddl`: the columns `record_probes` added to it."""
    from pyspark.sql import functions as F

    if staged is not None:
        return spark.read.schema(f"{SCHEMA_DDL}, ledger_file STRING{', ' + extra_ddl if extra_ddl else ''}").parquet(
            str(staged))
    df = (spark.read.schema(SCHEMA_DDL)
          .option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", "_corrupt_record")
          .json([str(p) for p in files.files])
          .withColumn("ledger_file", F.element_at(F.split(F.input_file_name(), "/"), -1)))
    return df.cache()
