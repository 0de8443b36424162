"""`binlogd-audit`: prove from binlogd's ledger what every replica was sent (exit 0 consistent, 1 findings, 2 error)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

DESCRIPTION = """\
Audit what binlogd sent to each replica connection against the binlog files it served.

Reads the binlog directory (one Spark task per file), the ledger binlogd wrote (--ledger DIR of `binlogd serve`,
JSON Lines) and optionally the relay logs of real replicas, then runs ten checks per connection:
  1 coverage             every event between a connection's start and its last position accounted for once
  2 hole legality        holes only where the connection's capability allows them
  3 dummy integrity      dummies/BEGINs have the original's length and log_pos and a valid CRC
  4 filter correctness   nothing flagged 0x8000 sent to a skip_replication connection, no type sent raw
                         to a capability that cannot take it
  5 transaction atomicity  groups sent whole or filtered whole
  6 position continuity  no holes for replicas that cannot tolerate them (capability < 2)
  7 convergence          how far behind the binlog's end each connection ended
  8 relay reconciliation relay log (--relay-logs) == what the ledger says was sent, event by event
  9 divergence           transactions (GTIDs) and bytes withheld per connection
 10 ledger integrity     no gaps or duplicates in the record numbers, torn tail reported

Writes OUT/summary.json, OUT/report.html (one self-contained page: tables and zoomable plotly charts, no network)
and OUT/findings.parquet.
Exit status: 0 consistent, 1 findings (errors), 2 the audit could not run.
"""

EPILOG = """\
examples:
  binlogd-audit --binlog-dir /var/lib/binlogd/binlogs --ledger /var/lib/binlogd/ledger --out audit/
  binlogd-audit --binlog-dir B --ledger L --relay-logs 2=/var/lib/mysql-replica --out audit/
  binlogd-audit ... --master spark://spark-master:7077     (a cluster: see docs/audit.md)
"""

log = logging.getLogger("binlogd.audit")


def parse_relay(values: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for v in values:
        name, sep, d = v.partition("=")
        if not sep or not name or not d:
            raise argparse.ArgumentTypeError(f"--relay-logs {v!r}: expected REPLICA=DIR (REPLICA = the replica's "
                                             "server_id)")
        out[name] = Path(d)
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlogd-audit", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binlog-dir", required=True, type=Path, metavar="DIR",
                   help="the binlog directory binlogd served (NAME.index / NAME.000001 ...)")
    p.add_argument("--ledger", required=True, type=Path, metavar="DIR", help="binlogd's ledger directory")
    p.add_argument("--relay-logs", action="append", default=[], metavar="REPLICA=DIR",
                   help="relay logs of a real replica (REPLICA = its server_id; DIR holds its relay-bin.NNNNNN files, "
                        "or name the relay-bin.index, e.g. in a replica's datadir); repeatable")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where the report is written")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master (default local[*]; spark://host:7077 for a standalone cluster)")
    p.add_argument("--driver-memory", default=None, metavar="SIZE",
                   help="Spark driver memory (default 2g; inputs above 256 MB: 6g, at most a quarter of the "
                        "machine's memory)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def cancel_on_interrupt(spark: Any) -> None:
    """Ctrl-C cancels the running Spark jobs and raises KeyboardInterrupt: the handler PySpark installs only when
    the context is made in the main thread (the CLI makes it in another, `main`)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        try:
            spark.sparkContext.cancelAllJobs()
        finally:
            raise KeyboardInterrupt()

    signal.signal(signal.SIGINT, handler)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines are Spark's plumbing, not the audit's
    try:
        relays = parse_relay(args.relay_logs)
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    for label, d in (("--binlog-dir", args.binlog_dir), ("--ledger", args.ledger)):
        if not d.is_dir():
            print(f"binlogd-audit: {label} {d}: not a directory", file=sys.stderr)
            return 2
    for k, d in relays.items():
        if not d.exists():
            print(f"binlogd-audit: --relay-logs {k}={d}: no such directory or index file", file=sys.stderr)
            return 2
    from binlogd.spark_analytics.report import ReportError, require_report_modules

    try:  # before the audit's minutes, not after them
        require_report_modules()
    except ReportError as e:
        print(f"binlogd-audit: {e}", file=sys.stderr)
        return 2
    from concurrent.futures import ThreadPoolExecutor

    from binlogd.spark_analytics.session import build_session, close_session, input_bytes, master_cores

    conf = {"spark.driver.memory": args.driver_memory} if args.driver_memory else None
    t_start = time.monotonic()
    with ThreadPoolExecutor(1, thread_name_prefix="audit-jvm") as pool:
        # The JVM first: its start (2.5-3 s) is the small audit's largest cost, and the imports this thread does
        # next (the audit's modules, pyarrow, rich: 0.5-1.8 s) delayed it. They and the inputs' preparation (file
        # lists; a small binlog decoded, a larger one staged as Parquet for local masters, whose executors read it)
        # need no JVM: they run here while it starts.
        starting = pool.submit(build_session, args.master, conf=conf, log_file=args.out / "spark.log",
                               input_size=input_bytes(args.binlog_dir, args.ledger, *relays.values()),
                               make_class_archive=True, register_source=False)
        from binlogd.spark_analytics.audit import STEPS, AuditError, Inputs, prepare_inputs, run_audit
        from binlogd.spark_analytics.report import write_outputs
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(), disable=args.quiet,
                      transient=False) as bar:
            task = bar.add_task("starting Spark", total=len(STEPS) + 1)
            inputs: Inputs | Exception
            try:  # its error is reported below, as the audit's, once the session can be closed
                # a local[N] audit keeps its own work beside Spark's (staging, record probes) to N cores as well
                inputs = prepare_inputs(args.binlog_dir, args.ledger, relays,
                                        stage=(args.master or "local").startswith("local"),
                                        cores=master_cores(args.master))
            except Exception as e:
                inputs = e
            try:
                spark = starting.result()
            except Exception as e:  # Java missing, a bad master URL ...: a clear message, exit 2
                if isinstance(inputs, Inputs):
                    inputs.remove_staged()  # run_audit removes them otherwise
                print(f"binlogd-audit: could not start Spark ({args.master or 'local[*]'}): {e}", file=sys.stderr)
                return 2
            cancel_on_interrupt(spark)

            def step(name: str) -> None:
                bar.update(task, advance=1, description=name)

            spark_start = round(time.monotonic() - t_start, 2)
            try:
                if isinstance(inputs, Exception):
                    raise inputs
                result = run_audit(spark, args.binlog_dir, args.ledger, relays, progress=step, inputs=inputs)
                # the phase before the audit's own steps (JVM start, session): the small audit's largest cost
                result.summary["step_seconds"] = {"spark start": spark_start, **result.summary["step_seconds"]}
                paths = write_outputs(args.out, result.summary, result.findings, result.timeline)
                step("report written")
            except AuditError as e:
                print(f"binlogd-audit: {e}", file=sys.stderr)
                return 2
            except Exception as e:  # a Spark/Java failure, unreadable input: "could not run", never "findings"
                log.exception("audit failed")
                first = str(e).splitlines()[0] if str(e) else ""
                print(f"binlogd-audit: the audit could not run: {type(e).__name__}: {first}", file=sys.stderr)
                return 2
            finally:
                close_session(spark)
    s = result.summary
    errors = sum(c["errors"] for c in s["checks"])
    print(f"{'CONSISTENT' if s['consistent'] else 'FINDINGS'}: {len(s['connections'])} connection(s), "
          f"{s['binlog']['events']} binlog events, {s['ledger']['records']} ledger records, {errors} error(s), "
          f"{s['findings_total'] - errors} warning(s)")
    for f in s["findings"][:20]:
        where = f"{f['file']}:{f['pos']}" if f["file"] else ""
        conn = "" if f["connection_id"] is None else f" conn {f['connection_id']}"
        print(f"  [{f['check']}] {f['severity']}{conn} {where} {f['message']}")
    print(f"report: {paths['html']}  summary: {paths['summary']}  findings: {paths['findings']}")
    return 0 if s["consistent"] else 1


if __name__ == "__main__":
    sys.exit(main())
