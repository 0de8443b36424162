"""One audit run: load the binlog directory, the ledger and the relay logs, run the ten checks, build the summary."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import checks
from .binlog_source import (
    BinlogSourceError,
    arrow_event_types,
    arrow_file_stats,
    decode_in_driver,
    list_files,
    load_in_driver,
    register,
)
from .binlog_stage import STAGED_NAMES, Staged, crc_failures, read_staged, stage_events, stage_processes
from .ledger import (
    LedgerError,
    LedgerFiles,
    SeqStats,
    ledger_files,
    read_ledger,
    seq_stats,
    stage_ledger,
    strict_tables,
)
from .record_probes import Probes, event_tables_of, event_tables_of_staged, probe_ledger
from .session import SMALL_INPUT_BYTES, start_python_workers

# actions as summary.json counts them: `skipped` = holes of a GTID connect (groups the replica already has)
ACTIONS = ("sent", "hole", "skipped", "dummy", "begin", "renamed", "fake")
# in the order they end (the binlog's events are loaded beside the ledger and connection steps); "findings": the
# end of the two Spark actions that collect checks 1-5's findings (the steps before it mostly plan them)
STEPS = ("ledger", "connections", "binlog", "policy runs", *(f"check {i}" for i in range(1, 10)), "findings",
         "check 10")


class AuditError(Exception):
    """The audit could not run (exit 2): missing directories, no ledger, unreadable input."""


@dataclass
class AuditResult:
    summary: dict[str, Any]
    findings: list[tuple]
    timeline: dict[int, list[dict[str, int]]] = field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        return bool(self.summary["consistent"])


@dataclass
class Inputs:
    """What an audit reads before Spark is needed: the file lists and, for a small binlog directory, its events
    decoded in the driver (an Arrow table) with their per-file stats. `prepare_inputs` needs no JVM, so the CLI
    runs it while the JVM starts."""

    binlog_dir: Path
    files: list[Path]
    ledger: LedgerFiles
    relays: dict[str, Path]
    events: Any = None  # pyarrow.Table of the binlog's events (`binlog_stage.STAGED`); None: the data source reads them
    stats: dict[str, dict[str, int]] | None = None  # file -> {"events", "end", "bytes"} of `events`
    types: frozenset[int] | None = None  # the event types of `events`
    crc_bad: int = 0  # events of `events` whose stored CRC32 fails (`binlog_stage.crc_failures`)
    staged: Staged | None = None  # a larger directory's events staged as Parquet (`binlog_stage`); None: neither
    staged_ledger: Path | None = None  # the ledger staged as Parquet (`ledger.stage_ledger`); None: Spark's JSON
    ledger_rows: int | None = None  # the staged ledger's records (pyarrow's parse); None: counted by Spark
    ledger_seq_stats: SeqStats | None = None  # the staged records' seqs (`ledger.seq_stats`); None: Spark counts
    probes: Probes | None = None  # the staged ledger's `record_probes` columns; None: Spark finds them

    def remove_staged(self) -> None:
        """Remove the staged Parquet directories (the audit's end, or a master whose executors cannot read them)."""
        if self.staged is not None:
            shutil.rmtree(self.staged.path, ignore_errors=True)
            self.staged = None
        if self.staged_ledger is not None:
            shutil.rmtree(self.staged_ledger, ignore_errors=True)
            self.staged_ledger = None
            self.probes = None


def prepare_inputs(binlog_dir: Path, ledger_dir: Path, relay_dirs: dict[str, Path] | None = None,
                   stage: bool = True, driver_bytes: int = SMALL_INPUT_BYTES, cores: int | None = None) -> Inputs:
    """A binlog directory of at most `driver_bytes` is decoded in the driver; a larger one (`stage`) by worker
    processes into a temporary Parquet directory (`binlog_stage`, removed by `run_audit`), which Spark's executors
    must be able to read: local masters. `stage` False: the data source reads it (a cluster). With `stage`, the
    ledger too when pyarrow parses it strictly (`ledger.stage_ledger`), with each record's place among the events
    (`record_probes`) when the events were decoded or staged here. `cores`: at most this many staging processes and
    probe threads (`session.master_cores` of the audit's master; None: the usable cores)."""
    binlog_dir = Path(binlog_dir).resolve()
    try:
        files = list_files(binlog_dir)
        lf = ledger_files(ledger_dir)
    except (BinlogSourceError, LedgerError) as e:
        raise AuditError(str(e)) from e
    for name, d in (relay_dirs or {}).items():
        try:
            list_files(d)
        except BinlogSourceError as e:
            raise AuditError(f"relay logs of replica {name}: {e}") from e
    inputs = Inputs(binlog_dir, files, lf, dict(relay_dirs or {}))
    # a failure leaves no staged directory behind (the caller gets no Inputs to remove them from)
    try:
        # the ledger is parsed (pyarrow: mostly without the GIL) while the events are decoded or staged
        with ThreadPoolExecutor(1, thread_name_prefix="audit-ledger") as pool:
            parsing = pool.submit(strict_tables, lf) if stage else None
            if sum(f.stat().st_size for f in files) <= driver_bytes:
                # the staged columns (`binlog_stage.STAGED`): the checks see the same columns on either path
                inputs.events = decode_in_driver(binlog_dir, statements=False).select(STAGED_NAMES)
                inputs.stats = arrow_file_stats(inputs.events)
                inputs.types = arrow_event_types(inputs.events)
                inputs.crc_bad = crc_failures(inputs.events)
            elif stage and files:
                out = Path(tempfile.mkdtemp(prefix="binlogd-audit-events-"))
                inputs.staged = Staged(out, {}, frozenset())  # removed with the rest if staging fails
                inputs.staged = stage_events(files, out, processes=stage_processes(files, cores))
            tables = parsing.result() if parsing is not None else None
        if tables is not None:
            events = (event_tables_of(inputs.events) if inputs.events is not None else
                      event_tables_of_staged(inputs.staged.parts) if inputs.staged is not None else None)
            if events is not None:
                stats = inputs.stats if inputs.stats is not None else inputs.staged.stats  # type: ignore[union-attr]
                tables, inputs.probes = probe_ledger(tables, [f.name for f in files], events, stats,
                                                     checks.TIMELINE_SLICES, threads=cores or 2)
            inputs.staged_ledger = stage_ledger(lf, tables=tables, dictionary=inputs.probes.small_columns()
                                                if inputs.probes is not None else None)
            inputs.ledger_rows = sum(t.num_rows for t in tables)
            inputs.ledger_seq_stats = seq_stats([t.column("seq") for t in tables])
    except BaseException:
        inputs.remove_staged()
        raise
    return inputs


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the caller's thread: `_audit`'s second thread for a larger binlog."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # re-raised by the caller's result(), as a thread's would be
            f.set_exception(e)
        return f


def run_audit(spark: Any, binlog_dir: Path, ledger_dir: Path, relay_dirs: dict[str, Path] | None = None,
              progress: Callable[[str], None] = lambda step: None, inputs: Inputs | None = None) -> AuditResult:
    """One audit; `inputs`: `prepare_inputs` of the same directories, when the caller already ran it. Staged
    events and ledger (`Inputs.staged`, `Inputs.staged_ledger`) are removed at its end, also when it fails."""
    t0 = time.monotonic()
    if inputs is None:
        inputs = prepare_inputs(binlog_dir, ledger_dir, relay_dirs)
    try:
        return _audit(spark, ledger_dir, progress, inputs, t0)
    finally:
        inputs.remove_staged()


def _audit(spark: Any, ledger_dir: Path, progress: Callable[[str], None], inputs: Inputs, t0: float) -> AuditResult:
    from pyspark.sql import functions as F

    step_seconds: dict[str, float] = {}
    last = [t0]
    report_step = progress

    def progress(step: str) -> None:
        now = time.monotonic()
        step_seconds[step] = round(now - last[0], 2)
        last[0] = now
        report_step(step)

    binlog_dir, files, lf = inputs.binlog_dir, inputs.files, inputs.ledger
    relays: dict[str, Any] = {}
    if not spark.sparkContext.master.startswith("local"):
        inputs.remove_staged()  # a cluster's executors cannot read the driver's files
    if inputs.relays or (inputs.events is None and inputs.staged is None):
        register(spark)
    for name, d in inputs.relays.items():
        relays[name] = spark.read.format("binlog").load(str(d)).cache()

    def load_events() -> tuple[Any, dict[str, dict[str, int]], frozenset[int] | None, int | None]:
        """The events DataFrame E, per-file stats, the event types and the events whose CRC32 fails (None: not
        counted, the data source reads them)."""
        if inputs.events is not None:
            return (load_in_driver(spark, binlog_dir, table=inputs.events).cache(), inputs.stats or {}, inputs.types,
                    inputs.crc_bad)
        if inputs.staged is not None:
            # not cached: Spark's Parquet reader scans only the columns each plan reads, faster than a cache is
            # built
            return read_staged(spark, inputs.staged), inputs.staged.stats, inputs.staged.types, inputs.staged.crc_bad
        E = spark.read.format("binlog").option("statements", "false").load(str(binlog_dir)).drop(
            "db", "statement").cache()
        rows = E.groupBy("file").agg(F.count("*").alias("n"), F.max("end").alias("end"),
                                     F.sum("length").alias("b"), F.collect_set("type").alias("types")).collect()
        stats = {r.file: {"events": int(r.n), "end": int(r.end), "bytes": int(r.b)} for r in rows}
        return E, stats, frozenset(t for r in rows for t in r.types), None

    # A small audit's steps are mostly the driver planning on one core, the other idle: what does not need the
    # step before it runs beside it in a second driver thread (its own JVM thread, pinned: PySpark's default).
    # Only what reads nothing a step before it changes in `data`: the events are handed to Spark (a small binlog's
    # Arrow table: ~0.6 s of a cold JVM) beside the ledger's read and the connection step's job, which do not read
    # them; check 7 and check 10's seq test read the events, the connections and the ledger as written, not the
    # policy runs' counts; the totals, the timeline and the findings of the policy runs and check 1 read the records
    # and the runs' counts (`run_counts`, made in the policy-run step, before) but none of the checks' lazy tables
    # (`withheld_events`: checks 2-5 make and fill it in this thread).
    names = [f.name for f in files]
    # a small audit's unions: one task per shuffle partition (2), not one per partition of every branch
    small = inputs.events is not None
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions")) if small else None
    # A larger binlog (staged, or read by the data source) keeps one thread: its jobs fill both task slots, and at
    # 1 M events the second thread's gave no gain (same-run pairs at load 3-6: 56.4 s against 44.4, 81.8 against
    # 76.8; the second thread's jobs took slots from the main thread's)
    with ThreadPoolExecutor(1, thread_name_prefix="audit-beside") if small else InlineExecutor() as beside:
        loading = beside.submit(load_events)
        probes = inputs.probes  # set with the staged ledger, cleared with it (`remove_staged`)
        L = read_ledger(spark, lf, inputs.staged_ledger, probes.ddl() if probes is not None else "")
        progress("ledger")
        data = checks.AuditData(spark=spark, events=None, ledger=L, files=names, file_stats={},
                                binlog_dir=binlog_dir, torn=lf.torn, relays=relays,
                                strict_ledger=inputs.staged_ledger is not None,
                                seq_stats=inputs.ledger_seq_stats if inputs.staged_ledger is not None else None,
                                probes=probes)
        checks.drop_repeated_records(data)
        conn_findings = checks.load_connections(data)  # reads the ledger only
        progress("connections")
        E, stats, data.event_types, data.crc_bad = loading.result()
        data.events, data.file_stats = E, stats
        findings: list[tuple] = []
        for n in names:
            size = (binlog_dir / n).stat().st_size
            if n in stats and size > stats[n]["end"]:
                findings.append(checks.finding(1, "warning", None, n, stats[n]["end"],
                                               f"binlog file ends with {size - stats[n]['end']} bytes that are not a "
                                               "whole event (torn tail, or being written)"))
        findings += conn_findings
        progress("binlog")
        early = beside.submit(lambda: (checks.convergence(data), checks.ledger_seqs(data)))
        # checks 1-5 give their findings as DataFrames, collected at the end in one union; a small binlog's in two:
        # the policy runs' and check 1's beside checks 2-5's planning. Not a larger one's: the two unions no longer
        # share their common exchanges (the records' bounds), and at 1 M events the first one's job ran beside check
        # 2's jobs for ~6 s against the ~1.5 s it took off the findings' step.
        pending: list[Any] = checks.verify_policy_runs(data)
        progress("policy runs")
        totals_job = beside.submit(checks.ledger_totals, data)  # what checks 6, 9 and 10 sum: one job
        # checks 1-5 mostly plan: the Python worker daemon starts meanwhile, holding no task slot that a job of the
        # connection or policy-run steps needs
        start_python_workers(spark)
        pending += checks.check_binlog_crc(data)
        pending += checks.check_coverage(data)
        first_part = None
        if small:
            first_part = beside.submit(checks.collect_findings, pending, partitions)
            pending = []
        progress("check 1")
        pending += checks.check_rules(data)  # checks 2 and 4
        progress("check 2")
        pending += checks.check_dummies(data)
        progress("check 3")
        progress("check 4")
        atom, divergence, skipped = checks.check_atomicity(data)
        pending += atom
        progress("check 5")
        totals = totals_job.result()
        findings += checks.check_continuity(data, totals)
        progress("check 6")
        behind, (seq_findings, lost) = early.result()
        progress("check 7")
        relay_findings, relay_info = checks.check_relay(data)
        findings += relay_findings
        progress("check 8")
        by_action = checks.action_totals(totals)
        progress("check 9")
        timeline = beside.submit(checks.timeline, data)  # beside the second union's job
        last_part = checks.collect_findings(pending, partitions)
        findings += (first_part.result() if first_part is not None else []) + last_part
        progress("findings")
        # close.events is not compared for a connection whose records checks 1-4 already found wrong (they name
        # them)
        explained = frozenset(f[2] for f in findings if f[0] <= 4 and f[1] == "error" and f[2] is not None)
        findings += seq_findings + checks.check_close_events(data, totals, lost | explained)
        progress("check 10")
        tl = timeline.result()

    by_replica = {name: info for name, info in relay_info.items()}
    conns = []
    for c in data.connections:
        t = by_action.get(c.conn, {"actions": {}, "bytes": {}, "sent_bytes": {}})
        conns.append({
            "connection_id": c.conn, "server_id": c.server_id, "capability": c.capability,
            "capability_set": c.capability_set, "skip_replication": c.skip_replication, "dump_flags": c.dump_flags,
            "compat": c.compat, "transcode": c.transcode, "peer": c.peer, "user": c.user,
            "start": {"file": c.start_file, "pos": c.start_pos, "gtid": c.start_gtid},
            "end": {"file": c.end_file, "pos": c.end_pos, "reason": c.reason},
            "actions": {a: t["actions"].get(a, 0) for a in (*ACTIONS, "error")},
            "bytes": {a: t["bytes"].get(a, 0) for a in ACTIONS},
            "sent_bytes": sum(t["sent_bytes"].values()),
            "behind": behind.get(c.conn),
            "withheld": divergence.get(c.conn, dict(checks.EMPTY_GTIDS)),
            "skipped_at_connect": skipped.get(c.conn, dict(checks.EMPTY_GTIDS)),
            "findings": sum(1 for f in findings if f[2] == c.conn),
            "timeline": tl.get(c.conn, []),
        })
    findings.sort(key=lambda f: (f[0], f[2] if f[2] is not None else -1, f[3] or "", f[4] if f[4] is not None else -1))
    errors = [f for f in findings if f[1] == "error"]
    summary = {
        "consistent": not errors,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "binlog_dir": str(binlog_dir),
        "ledger_dir": str(Path(ledger_dir).resolve()),
        "binlog": {"files": [{"file": n, **stats.get(n, {"events": 0, "end": 0, "bytes": 0})} for n in names],
                   "events": sum(s["events"] for s in stats.values())},
        "ledger": {"files": [p.name for p in lf.files], "records": inputs.ledger_rows if inputs.ledger_rows
                   is not None else L.count(),
                   "torn": [{"file": f, "offset": o, "bytes": b} for f, o, b in lf.torn]},
        "relay": by_replica,
        "checks": [{"check": i, "name": checks.CHECK_NAMES[i],
                    "errors": sum(1 for f in findings if f[0] == i and f[1] == "error"),
                    "warnings": sum(1 for f in findings if f[0] == i and f[1] == "warning")} for i in range(1, 11)],
        "connections": conns,
        "findings": [dict(zip(("check", "severity", "connection_id", "file", "pos", "message"), f, strict=True))
                     for f in findings[:1000]],
        "findings_total": len(findings),
        "seconds": round(time.monotonic() - t0, 2),
        "step_seconds": step_seconds,
    }
    E.unpersist()
    L.unpersist()
    for df in data.cached:
        df.unpersist()
    for df in relays.values():
        df.unpersist()
    return AuditResult(summary, findings, tl)
