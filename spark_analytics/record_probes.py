"""Each ledger record's place among the binlog's events, found with numpy while the JVM starts.

The checks read, for every `sent`/filtered ev record, the events at its two ends (`checks.BOUNDS`: the ordinal,
type and flags of the event starting at its start, the ordinal of the one ending at its end) and, per event class
of the connections' rules, how many events of the class lie in its range and their bytes. In Spark that was a probe
of the events by both ends and a sort of every event of the classes among the records' ends (`checks.class_counts`):
at 10 M events half of the audit's time. Here, for a binlog decoded in the driver or staged as Parquet
(`binlog_stage`) and a ledger pyarrow parses strictly (`ledger.stage_ledger`), each binlog file's events are read
once as arrays and every record end is found by binary search: the staged ledger gets BOUNDS and, per rule key
present in the binlog (`key = type * 4 + flagged * 2 + standalone`, `checks._rule_key`), the events of that key
in its range and their bytes, and for a policy run the events of that key before its start. A class's count is then
a sum over its keys, in Spark, per record: no join, no sort. The classes are not known yet (they depend on the
connections' policies), the keys are. The same prefix counts at the timeline's slice boundaries (`bounds`) let a
run cut at those boundaries be counted per piece.

"Before p" is "starts before p", as the sorted pass counts: a record [start, end) holds the events starting in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

# the ev records that get probes: those `checks.records` reads
PROBED_ACTIONS = ("sent", "hole", "dummy", "begin", "renamed")
# the BOUNDS columns with their Arrow and Spark types (the events' `ordinal`, `type`, `flags`)
BOUND_TYPES = (("s_ord", "int64", "BIGINT"), ("e_type", "int32", "INT"), ("e_flags", "int32", "INT"),
               ("e_ord", "int64", "BIGINT"))
# the column of every record's binlog file as its index among the directory's files (null: none, or not one of
# them), which `checks.records` otherwise looks up in a map literal of the file names per row: a lookup that Spark's
# optimizer copies into every condition reading it (check 2's filter compared each record's file name with every
# file name a dozen times: 3.8 CPU s of 740 800 records at 10 M events)
FILE_INDEX = "fi"
# the events' columns the probes read
EVENT_COLUMNS = ["start", "end", "ordinal", "type", "flags", "length", "gtid_standalone"]


def c0(key: int) -> str:
    """Column: the events of rule key `key` starting before the record's start (in its file); policy runs only
    (null on the other records): a run cut at the timeline's slices is counted from it."""
    return f"k{key}_c0"


def nn(key: int) -> str:
    """Column: the events of rule key `key` in the record's range."""
    return f"k{key}_n"


def nb(key: int) -> str:
    """Column: the bytes of the events of rule key `key` in the record's range."""
    return f"k{key}_b"


@dataclass
class Probes:
    """What `probe_ledger` added: the rule keys present in the binlog (each with its three columns on the staged
    ledger) and, at each timeline slice boundary inside a file ("file:pos"), the events per key starting before it
    (the keys' order)."""

    keys: list[int]
    bounds: dict[str, list[int]] = field(default_factory=dict)

    def ddl(self) -> str:
        """The added columns as Spark DDL (after the ledger's own)."""
        cols = [f"{FILE_INDEX} INT", *(f"{n} {t}" for n, _, t in BOUND_TYPES)]
        cols += [f"{c} BIGINT" for c in self.key_columns()]
        return ", ".join(cols)

    def columns(self) -> list[str]:
        """Every added column (the file index, BOUNDS and the per-key ones)."""
        return [FILE_INDEX, *(n for n, _, _ in BOUND_TYPES), *self.key_columns()]

    def key_columns(self) -> list[str]:
        return [f(k) for k in self.keys for f in (c0, nn, nb)]

    def count_columns(self) -> list[str]:
        return [nn(k) for k in self.keys]

    def small_columns(self) -> list[str]:
        """The columns of few distinct values (counts and bytes within a record): dictionary-encoded in the
        Parquet, mostly zeros read as runs instead of 8 bytes each."""
        return [f(k) for k in self.keys for f in (nn, nb)]


class _FileEvents:
    """One binlog file's events as sorted arrays, and per rule key the starts and the running bytes of its events."""

    def __init__(self, t: Any) -> None:
        import numpy as np

        start = t.column("start").to_numpy()
        if len(start) > 1 and not bool(np.all(start[1:] > start[:-1])):
            t = t.sort_by("start")
        self.start, self.end, self.ordinal = (t.column(n).to_numpy() for n in ("start", "end", "ordinal"))
        self.type, self.flags = t.column("type").to_numpy(), t.column("flags").to_numpy()
        length = t.column("length").to_numpy()
        standalone = t.column("gtid_standalone").fill_null(False).to_numpy(zero_copy_only=False)
        # `checks._rule_key`, over arrays, in 16 bits (a type is one byte: a key is at most 255 * 4 + 3)
        key = ((self.type.astype(np.int16) << 2) | (((self.flags & 0x8000) != 0).astype(np.int16) << 1)
               | standalone.astype(np.int16))
        self.by_key: dict[int, tuple[Any, Any]] = {}
        # the events grouped by key in one stable sort (of 16-bit keys: a radix sort), each key's run still in
        # start order; a mask per key cost a pass over every event per key
        order = np.argsort(key, kind="stable")
        sk = key[order]
        cuts = [0, *(np.flatnonzero(sk[1:] != sk[:-1]) + 1).tolist(), len(sk)]
        for a, b in pairwise(cuts):
            if a < b:
                run = order[a:b]
                self.by_key[int(sk[a])] = (self.start[run],
                                           np.concatenate(([0], np.cumsum(length[run], dtype=np.int64))))


def _count_before(fe: _FileEvents, key: int, pos: Any) -> tuple[Any, Any]:
    """(events of `key` (one of the file's) starting before each of `pos`, their running bytes there)."""
    import numpy as np

    starts, cum = fe.by_key[key]
    n = np.searchsorted(starts, pos, side="left")
    return n, cum[n]  # n as searchsorted gives it: the callers store it into int64 columns


def _probe_file(fe: _FileEvents, s: Any, e: Any) -> dict[str, Any]:
    """BOUNDS and the per-key columns (the file's keys) of records [s, e) of one file (numpy arrays; BOUNDS masked
    where the start or the end is not an event boundary)."""
    import numpy as np
    import numpy.ma as ma

    out: dict[str, Any] = {}
    if not len(fe.start):
        for n, _, _ in BOUND_TYPES:
            out[n] = ma.masked_all(len(s), np.int64)
    else:
        i = np.minimum(np.searchsorted(fe.start, s), len(fe.start) - 1)
        miss = fe.start[i] != s
        out["s_ord"] = ma.array(fe.ordinal[i], mask=miss)
        out["e_type"] = ma.array(fe.type[i], mask=miss)
        out["e_flags"] = ma.array(fe.flags[i], mask=miss)
        j = np.minimum(np.searchsorted(fe.end, e), len(fe.end) - 1)
        out["e_ord"] = ma.array(fe.ordinal[j], mask=fe.end[j] != e)
    for k in fe.by_key:
        n0, b0 = _count_before(fe, k, s)
        n1, b1 = _count_before(fe, k, e)
        out[c0(k)], out[nn(k)], out[nb(k)] = n0, n1 - n0, b1 - b0
    return out


def event_tables_of_staged(parts: dict[str, list[Path]]) -> Any:
    """An iterator of (file name, its events as an Arrow table) over `binlog_stage`'s Parquet parts (file order):
    the EVENT_COLUMNS written beside each part (`binlog_stage.probe_columns_path`), memory-mapped."""
    import pyarrow as pa

    from .binlog_stage import probe_columns_path

    for name, paths in parts.items():
        yield name, pa.concat_tables([pa.ipc.open_file(pa.memory_map(str(probe_columns_path(p)))).read_all()
                                      for p in paths])


def event_tables_of(events: Any) -> Any:
    """An iterator of (file name, its events) over a driver-decoded Arrow table of every file's events."""
    import pyarrow.compute as pc

    for name in pc.unique(events.column("file")).to_pylist():
        yield name, events.filter(pc.equal(events.column("file"), name)).select(EVENT_COLUMNS)


def span(files: Sequence[str], stats: dict[str, dict[str, int]]) -> tuple[dict[str, int], int]:
    """The binlog files laid end to end in file order (the timeline's span): each file's offset in it, and its
    total bytes (at least 1)."""
    base, acc = {}, 0
    for f in files:
        base[f] = acc
        acc += stats.get(f, {}).get("end", 4)
    return base, max(acc, 1)


def slice_bounds(files: Sequence[str], stats: dict[str, dict[str, int]], slices: int) -> dict[str, list[int]]:
    """Per file, the positions inside it (0 < pos <= its end) where a timeline slice begins, as `checks.run_counts`
    cuts the runs (slice b begins at ceil(b * total / slices) of the `span`)."""
    base, total = span(files, stats)
    out: dict[str, list[int]] = {}
    for f in files:
        end = stats.get(f, {}).get("end", 4)
        cuts = ((b * total + slices - 1) // slices - base[f] for b in range(slices + 1))
        out[f] = sorted({p for p in cuts if 0 < p <= end})
    return out


def probe_ledger(tables: list[Any], files: Sequence[str], event_tables: Any, stats: dict[str, dict[str, int]],
                 slices: int, threads: int = 2) -> tuple[list[Any], Probes]:
    """The ledger's tables (`ledger.strict_tables`) with FILE_INDEX, BOUNDS and the per-key columns added (the last
    two null on records that are not probed ev records), and the Probes: per file of `event_tables` ((name, events)
    pairs, each file once), `threads` files at a time (at most two)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(PROBED_ACTIONS)
    rec = []  # per table: the probed rows' indexes, files, starts and ends
    for t in tables:
        m = pc.and_(pc.equal(t.column("r"), "ev"), pc.is_in(t.column("action"), wanted)).fill_null(False)
        m = pc.and_(m, pc.and_(pc.is_valid(t.column("start")), pc.is_valid(t.column("end"))))
        m = pc.and_(m, pc.is_valid(t.column("file")))
        idx = np.flatnonzero(m.to_numpy(zero_copy_only=False))
        rec.append((idx, t.column("file").take(idx).to_numpy(zero_copy_only=False),
                    t.column("start").take(idx).to_numpy(), t.column("end").take(idx).to_numpy()))
    # one file's events in memory at a time (at 10 M events all of them as arrays took ~0.5 GB); the probes go
    # straight into columns of each table's length (BOUNDS masked where not probed); a key first seen in a later
    # file has no event before it: its columns start as zeros
    cols_all: list[dict[str, Any]] = []
    for t in tables:
        cols_all.append({nm: np.ma.masked_all(t.num_rows, np.int64) for nm, _, _ in BOUND_TYPES})
    keys: set[int] = set()
    cuts = slice_bounds(files, stats, slices)
    bounds_of: dict[str, dict[int, Any]] = {}  # file -> key -> events of the key before each of its cuts

    def one_file(name: str, et: Any) -> tuple[str, list[int], list[tuple[Any, dict[str, Any]]], dict[int, Any]]:
        fe = _FileEvents(et)
        got = []
        for idx, fnames, s, e in rec:
            sel = np.flatnonzero(fnames == name)
            got.append((idx[sel], _probe_file(fe, s[sel], e[sel]) if len(sel) else {}))
        p = np.array(cuts.get(name, []), np.int64)
        return name, sorted(fe.by_key), got, {k: _count_before(fe, k, p)[0] for k in fe.by_key}

    def merge(name: str, file_keys: list[int], got: list[tuple[Any, dict[str, Any]]], at_cuts: dict[int, Any]
              ) -> None:
        for k in file_keys:
            if k not in keys:
                keys.add(k)
                for t, cols in zip(tables, cols_all, strict=True):
                    for nm in (c0(k), nn(k), nb(k)):
                        cols[nm] = np.zeros(t.num_rows, np.int64)
        for (rows, values), cols in zip(got, cols_all, strict=True):
            for nm, v in values.items():
                cols[nm][rows] = v
        bounds_of[name] = at_cuts

    # two files at a time in threads (numpy and pyarrow release the GIL for most of it), at most two in memory
    threads = max(1, min(2, threads))
    with ThreadPoolExecutor(threads, thread_name_prefix="record-probes") as pool:
        pending: list[Future] = []
        for name, et in event_tables:
            pending.append(pool.submit(one_file, name, et))
            if len(pending) >= threads:
                merge(*pending.pop(0).result())
        for f in pending:
            merge(*f.result())
    key_list = sorted(keys)
    out = []
    names = pa.array(list(files), pa.string())
    for t, (idx, _, _, _), cols in zip(tables, rec, cols_all, strict=True):
        t = t.append_column(FILE_INDEX, pc.index_in(t.column("file"), value_set=names).cast(pa.int32()))
        for nm, arrow_t, _ in BOUND_TYPES:
            t = t.append_column(nm, pa.array(cols[nm].filled(0), getattr(pa, arrow_t)(),
                                             mask=np.ma.getmaskarray(cols[nm])))
        mask = np.ones(t.num_rows, bool)
        mask[idx] = False
        # c0 only on policy runs
        run = pc.and_(pc.equal(t.column("action"), "sent"), pc.greater(t.column("policy"), 0)).fill_null(False)
        not_run = mask | ~run.to_numpy(zero_copy_only=False)
        for k in key_list:
            for nm in (c0(k), nn(k), nb(k)):
                t = t.append_column(nm, pa.array(cols[nm], pa.int64(), mask=not_run if nm == c0(k) else mask))
        out.append(t)
    bounds: dict[str, list[int]] = {}
    for f, pos in cuts.items():
        counts = bounds_of.get(f, {})
        for i, q in enumerate(pos):
            bounds[f"{f}:{q}"] = [int(counts[k][i]) if k in counts else 0 for k in key_list]
    return out, Probes(key_list, bounds)
