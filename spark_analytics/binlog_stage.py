"""A large binlog directory's events staged as Parquet, for Spark's native (vectorised, JVM) Parquet reader.

Above the driver-decode threshold the Python data source hands every event to the JVM through a Python worker's
Arrow stream, and the audit cached the result: at 1 M events ~94 % of the binlog step was that hand-over, the
cache and the per-file counts, the decoding 1.6 s of it. Here the same splits as the data source's
(`binlog_source.plan_splits`: ranges starting at group starts, so the rows do not depend on the split) are decoded
and written as one Parquet file each (by the caller, or by worker processes in parallel for a large directory),
while the driver's JVM starts (the CLI's input thread); the per-file counts and event types come from the same
pass, so the audit needs no Spark job for those either. The rows are exactly the data source's with
`statements=false`, in the columns the checks read (`STAGED`): tests/test_audit.py, `test_staged_events_...`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .binlog_decode import RangeStart
from .binlog_source import COLUMNS, SPLIT_BYTES, Split, iter_split_batches, plan_splits, upstream_files
from .session import usable_cores

# the columns staged: those the checks read of the binlog's events. Not the statements, the relay-log columns
# (`group_end`, `relay_own`, `source_*`: read of relay logs only, through the data source) nor the header fields no
# check reads: 13 of the data source's 23 columns took a split's Parquet write from 0.27 to 0.16 CPU s (620 k events)
_AUDITED = ("file", "file_index", "start", "end", "ordinal", "type", "type_name", "flags", "length", "log_pos",
            "crc_ok", "gtid_standalone", "trx")
STAGED = tuple(c for c in COLUMNS if c[0] in _AUDITED)
STAGED_NAMES = [n for n, _, _ in STAGED]
STAGED_DDL = ", ".join(f"`{n}` {t}" for n, t, _ in STAGED)
# bytes of binlog per staging process: a process costs ~1 CPU s of imports (numpy, pyarrow) and decodes ~40 MB
# per CPU-second, so 1 M events (54 MB) stage faster in the caller than in two processes
BYTES_PER_PROCESS = 128 << 20
# rows per Parquet row group at most (each decoder batch of 65 536 events is one): Spark's file splits cut at row
# groups, so a split's file can feed several tasks
ROW_GROUP_ROWS = 1 << 17


@dataclass
class Staged:
    """The staged directory and what the splits' workers counted (no Spark job needed for these)."""

    path: Path
    stats: dict[str, dict[str, int]]  # file -> {"events", "end", "bytes"}
    types: frozenset[int]
    parts: dict[str, list[Path]] = dataclasses.field(default_factory=dict)  # binlog file -> its Parquet files, in order
    crc_bad: int = 0  # stored events whose CRC32 fails (`crc_ok` false): check 1's CRC scan is needed only then


def _staged_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(n, getattr(pa, t)()) for n, _, t in STAGED])


def probe_columns_path(part: Path) -> Path:
    """The Arrow IPC file beside a staged Parquet part with its events' `record_probes.EVENT_COLUMNS`: a hidden
    name, which Spark's Parquet reader skips."""
    return part.with_name(f".{part.stem}.arrow")


def _stage_split(split: Split, out: str) -> tuple[str, int, int, int, list[int], int]:
    """Decode one split, write it to `out` and its probe columns beside it (`probe_columns_path`); (file, events,
    end of the last event, bytes, event types, events whose CRC32 fails)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .record_probes import EVENT_COLUMNS

    schema = _staged_schema()
    n = end = size = crc_bad = 0
    types: set[int] = set()
    # lz4, dictionaries only for the few-valued strings, no statistics: 0.6 CPU s and 28 MB per 1 M events, where
    # pyarrow's defaults (a dictionary for every column: `trx` has one value per group) took 2 s. The probes'
    # columns also go to an uncompressed Arrow file, which the driver maps instead of decoding the Parquet again
    # (0.9-1.9 CPU s at 10 M events)
    probe_schema = pa.schema([schema.field(c) for c in EVENT_COLUMNS])
    with pq.ParquetWriter(out, schema, compression="lz4", use_dictionary=["file", "type_name"],
                          write_statistics=False) as w, \
            pa.ipc.new_file(str(probe_columns_path(Path(out))), probe_schema) as pw:
        for b in iter_split_batches(split, statements=False, columns=schema.names):
            if not b.num_rows:
                continue
            w.write_batch(b, row_group_size=ROW_GROUP_ROWS)
            pw.write_batch(b.select(EVENT_COLUMNS))
            n += b.num_rows
            end = max(end, int(np.max(b.column("end").to_numpy())))
            size += int(np.sum(b.column("length").to_numpy(), dtype=np.int64))
            types.update(int(t) for t in np.unique(b.column("type").to_numpy()))
            crc_bad += crc_failures(b)
    return Path(split.path).name, n, end, size, sorted(types), crc_bad


def crc_failures(events: Any) -> int:
    """Events of an Arrow table or batch of the data source's columns whose stored CRC32 fails (`crc_ok` false;
    null, a file without checksums, is not a failure)."""
    import pyarrow.compute as pc

    return int(pc.sum(pc.equal(events.column("crc_ok"), False)).as_py() or 0)


def stage_processes(files: Sequence[Path], cores: int | None = None) -> int:
    """Staging processes for `files`: one per BYTES_PER_PROCESS, at most `cores` (None: the usable cores)."""
    limit = usable_cores() if cores is None else cores
    return max(1, min(limit, -(-sum(f.stat().st_size for f in files) // BYTES_PER_PROCESS)))


def stage_events(files: Sequence[Path], out_dir: Path, processes: int | None = None,
                 split_bytes: int = SPLIT_BYTES) -> Staged:
    """Decode `files` (a binlog directory's, in order) into `out_dir` as Parquet, one file per split (the data
    source's `split_bytes`), `processes` splits at a time (default: one per BYTES_PER_PROCESS, at most the usable
    cores)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = [sp for i, (f, src) in enumerate(zip(files, upstream_files(files), strict=True))
              for sp in plan_splits(f, i, src, split_bytes)]
    if processes is None:
        processes = stage_processes(files)
    workers = max(1, min(len(splits), processes))
    jobs = [(sp, str(out_dir / f"part-{k:05d}.parquet")) for k, sp in enumerate(splits)]
    if workers == 1:
        results = [_stage_split(sp, o) for sp, o in jobs]
    else:
        results = _in_processes([jobs[w::workers] for w in range(workers)])
    stats: dict[str, dict[str, int]] = {}
    types: set[int] = set()
    crc_bad = 0
    for name, n, end, size, ts, bad in results:
        crc_bad += bad
        if not n:
            continue
        s = stats.setdefault(name, {"events": 0, "end": 0, "bytes": 0})
        s["events"] += n
        s["end"] = max(s["end"], end)
        s["bytes"] += size
        types.update(ts)
    parts: dict[str, list[Path]] = {}
    for sp, out in jobs:
        parts.setdefault(Path(sp.path).name, []).append(Path(out))
    return Staged(out_dir, stats, frozenset(types), parts, crc_bad)


def _in_processes(shares: list[list[tuple[Split, str]]]) -> list[tuple[str, int, int, int, list[int], int]]:
    """Each share of (split, output) in its own Python process (`python -m` this module, the driver's sys.path):
    not multiprocessing, whose spawn re-imports the caller's main module and whose fork would copy the thread
    that starts the JVM beside this one."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    procs = [subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env) for _ in shares]
    for p, share in zip(procs, shares, strict=True):
        assert p.stdin is not None
        p.stdin.write(json.dumps([[dataclasses.asdict(sp), out] for sp, out in share]).encode())
        p.stdin.close()
    results: list[tuple[str, int, int, int, list[int], int]] = []
    for p in procs:
        assert p.stdout is not None
        text = p.stdout.read()
        if p.wait() != 0:
            raise RuntimeError(f"staging the binlog events as Parquet failed (worker exit status {p.returncode})")
        results += [tuple(r) for r in json.loads(text)]  # type: ignore[misc]
    return results


def _worker() -> None:
    """A staging process: (split, output) pairs as JSON on stdin, their `_stage_split` results on stdout."""
    out = []
    for sp, path in json.load(sys.stdin):
        split = Split(sp["path"], sp["file_index"], RangeStart(**sp["rs"]), sp["first_ordinal"])
        out.append(_stage_split(split, path))
    json.dump(out, sys.stdout)


def read_staged(spark: Any, staged: Staged) -> Any:
    """The staged events as a DataFrame (`STAGED`: the data source's columns that the checks read)."""
    return spark.read.schema(STAGED_DDL).parquet(str(staged.path))


if __name__ == "__main__":
    _worker()
