"""Record the MariaDB 10.11 oracle anew: .venv/bin/python -m tests.data.oracle.regenerate [--out DIR] [--only NAME]

Starts a private MariaDB 10.11 primary (server_id 1, ROW, annotate ON, CRC32, general log), runs workload.sql,
waits until file 1's Binlog_checkpoint is in file 2, copies mysql-bin.000001/2 and SHOW BINLOG EVENTS, records
every variant's COM_BINLOG_DUMP stream (variants.py) with the tests' own dump client, then rotates to file 3 with
binlog_checksum=NONE, waits for its checkpoint, runs workload_nocrc.sql, records the file3_* variants and copies
file 3. Default DIR: tests/data/oracle/dump; a recording is published there only once it is complete.

A re-run differs from the stored captures only in run-dependent bytes (timestamps, CRCs, xids/query ids,
exec_time: shape.py) and in the number of heartbeats cap4_block_hb1s catches; tests/test_oracle_regenerate.py
checks that for a subset. ANALYSIS.txt is not rewritten.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymysql
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from binlogd.testing.mariadb import HarnessError, MariaDB
from tests.dumpclient import raw_dump

from .records import capture_document, write_capture
from .sqlscript import statements
from .variants import FILE1, FILE2, FILE3, Variant, unknown_names, variants

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "dump"
WORKLOAD = HERE / "workload.sql"
WORKLOAD_NOCRC = HERE / "workload_nocrc.sql"
SERVER_ID = 1
# relative to the datadir, so the same arguments work for the harness fixture and for this script
GENERAL_LOG = "general.log"
PRIMARY_ARGS: tuple[str, ...] = (
    "--log-bin=mysql-bin",
    "--binlog-format=ROW",
    "--binlog-annotate-row-events=ON",
    "--general-log=1",
    f"--general-log-file={GENERAL_LOG}",
)
CHECKPOINT_TIMEOUT = 10.0
WORKLOAD_CHARSET = "utf8"  # pymysql's name for utf8mb3 (utf8mb3_general_ci, 33)
# the event order of the stored files 2 and 3 (check_layout)
_GROUP = ["Gtid", "Annotate_rows", "Table_map", "Write_rows_v1", "Xid"]
LAYOUT: dict[str, list[str]] = {
    FILE2: ["Format_desc", "Gtid_list", "Binlog_checkpoint", *_GROUP, "Binlog_checkpoint"],
    FILE3: ["Format_desc", "Gtid_list", "Binlog_checkpoint", "Binlog_checkpoint", *_GROUP],
}
# setup, workload, checkpoint wait + copies; file 3 workload + checkpoint; final copies
FIXED_STEPS = 5
GENERAL_LOG_LINES = re.compile(r"Register Slave|Binlog Dump|Query\s+SET|Connect")

Report = Callable[[str], None]


def run_script(primary: MariaDB, path: Path) -> None:
    """Each statement of ``path`` on its own, in one session (SET skip_replication must reach later ones).

    utf8mb3 like the mariadb client that ran the stored workload: the connection's character set is
    in every QUERY event's status variables and in USER_VAR events.
    """
    conn = primary.connect(charset=WORKLOAD_CHARSET)
    try:
        with conn.cursor() as cur:
            for stmt in statements(path.read_text()):
                cur.execute(stmt)
    finally:
        conn.close()


def wait_checkpoint(primary: MariaDB, file: str) -> float:
    """Wait for the file's second Binlog_checkpoint; return the seconds waited.

    InnoDB makes the previous file's transactions durable in the background and only then is the checkpoint
    naming the new file written into it; every capture must see the same binlog, so none starts before.
    """
    t0 = time.monotonic()

    def done() -> bool:
        return event_types(primary, file).count("Binlog_checkpoint") >= 2

    primary.wait_until(done, CHECKPOINT_TIMEOUT, 0.05, f"the second Binlog_checkpoint in {file}")
    return time.monotonic() - t0


def event_types(primary: MariaDB, file: str) -> list[str]:
    return [str(r[2]) for r in primary.query(f"SHOW BINLOG EVENTS IN '{file}'")]


def check_layout(primary: MariaDB, file: str) -> None:
    """The file's events are in the stored oracle's order, or the recording stops here.

    Where the asynchronous Binlog_checkpoint lands is timing: in file 2 it follows the INSERT that comes
    right after FLUSH BINARY LOGS because InnoDB makes file 1 durable only at its next log flush (about a
    second later, innodb_flush_log_at_trx_commit=2). A machine that stalls longer than that puts it first.
    """
    got = event_types(primary, file)
    if got != LAYOUT[file]:
        raise HarnessError(f"{file} has the events {got}, the oracle's has {list(LAYOUT[file])} (the "
                           "Binlog_checkpoint was written at another moment: a loaded machine; run again)")


def _batch_field(value: Any) -> str:
    """A value as the mariadb client prints it in batch mode (tab-separated, escaped)."""
    if value is None:
        return "NULL"
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\0", "\\0")


def show_binlog_events(primary: MariaDB, files: Sequence[str]) -> str:
    """SHOW BINLOG EVENTS of each file, with a header line each, as `mariadb -e` prints them."""
    out = []
    for f in files:
        out.append("Log_name\tPos\tEvent_type\tServer_id\tEnd_log_pos\tInfo")
        out += ["\t".join(_batch_field(v) for v in row) for row in primary.query(f"SHOW BINLOG EVENTS IN '{f}'")]
    return "\n".join(out) + "\n"


def multi_row_position(primary: MariaDB) -> int:
    """Where the GTID event of the 'multi-row' group starts in file 1 (the row before its Annotate_rows)."""
    rows = primary.query(f"SHOW BINLOG EVENTS IN '{FILE1}'")
    for prev, row in itertools.pairwise(rows):
        if "multi-row" in str(row[5]):
            return int(prev[1])
    raise HarnessError(f"no 'multi-row' statement in {FILE1}: is workload.sql the oracle's?")


def session_check(primary: MariaDB, stmts: list[str]) -> dict[str, Any]:
    """What the session SETs leave, read back in a session of their own (the dump session ends with the dump)."""
    names = ["@master_binlog_checksum", "@mariadb_slave_capability", "@@skip_replication",
             "@@global.binlog_checksum", "@@version", "@@server_id"]
    conn = primary.connect()
    try:
        with conn.cursor() as cur:
            for s in stmts:
                cur.execute(s)
            cur.execute("SELECT " + ", ".join(names))
            row = cur.fetchone()
    finally:
        conn.close()
    if row is None:
        raise HarnessError("SELECT of the session variables returned no row")
    return {n: v.decode() if isinstance(v, bytes) else v for n, v in zip(names, row, strict=True)}


def capture(primary: MariaDB, v: Variant) -> tuple[dict[str, Any], bytes]:
    """One variant's stream from the primary, as (.json object, .raw bytes)."""
    stmts = v.session_statements()
    check = session_check(primary, stmts)
    t0 = time.monotonic()
    cap = raw_dump(primary.host, primary.port, stmts, v.dump_command(), v.register_command(),
                   idle_timeout=v.idle_timeout, max_seconds=v.max_seconds or None)
    doc = capture_document(v.settings(primary.host, primary.port), stmts, check, v.register_command(),
                           v.dump_command(), cap, time.monotonic() - t0)
    return doc, cap.raw


def _copy_binlog(primary: MariaDB, name: str, out: Path) -> None:
    shutil.copyfile(primary.datadir / name, out / name)


def record(primary: MariaDB, out: Path, only: Sequence[str] | None = None, report: Report | None = None) -> list[str]:
    """Run the whole recording on a fresh primary started with PRIMARY_ARGS; return the names recorded.

    The binlog files, SHOW BINLOG EVENTS and the general log tail are always written; ``only`` limits the
    captures. Raises HarnessError for a name that is no variant.
    """
    say: Report = report or (lambda _text: None)
    out.mkdir(parents=True, exist_ok=True)
    run_script(primary, WORKLOAD)
    say("workload")
    waited = wait_checkpoint(primary, FILE2)
    check_layout(primary, FILE2)
    (out / "show_binlog_events.txt").write_text(show_binlog_events(primary, [FILE1, FILE2]))
    for f in (FILE1, FILE2):  # file 2 while it is still the active file (its FDE keeps the in-use flag)
        _copy_binlog(primary, f, out)
    say(f"checkpoint in {FILE2} after {waited:.1f} s; {FILE1}, {FILE2} copied")
    chosen = variants(multi_row_position(primary))
    if only is not None:
        missing = sorted(set(only) - {v.name for v in chosen})
        if missing:
            raise HarnessError(f"no such variant: {', '.join(missing)}")
        chosen = [v for v in chosen if v.name in only]
    for v in (v for v in chosen if not v.on_file3):
        write_capture(out, v.name, *capture(primary, v))
        say(v.name)
    primary.query("SET GLOBAL binlog_checksum=NONE")  # rotates to file 3
    waited = wait_checkpoint(primary, FILE3)
    run_script(primary, WORKLOAD_NOCRC)
    check_layout(primary, FILE3)
    say(f"{FILE3} without checksums, checkpoint after {waited:.1f} s")
    for v in (v for v in chosen if v.on_file3):
        write_capture(out, v.name, *capture(primary, v))
        say(v.name)
    primary.query("SET GLOBAL binlog_checksum=CRC32")  # rotates: file 3 gets its closing ROTATE
    _copy_binlog(primary, FILE3, out)
    log = [line for line in (primary.datadir / GENERAL_LOG).read_text(errors="replace").splitlines()
           if GENERAL_LOG_LINES.search(line)]
    (out / "general_log_tail.txt").write_text("".join(f"{line}\n" for line in log[-20:]))
    say(f"{FILE3} and the general log tail copied")
    return [v.name for v in chosen]


def start_primary(base: Path) -> MariaDB:
    """A fresh primary with PRIMARY_ARGS, its temporary files (and mariadb-install-db's) in ``base``/tmp.

    Both take their tmpdir from TMPDIR. In a shared /tmp, bootstrap servers of other sandboxes can have our
    PID and so the same #sql-temptable-* names: about one install in four failed here ("Unknown table
    'mysql.tmp_...'", or a datadir without a root account), none with a private TMPDIR.
    """
    tmp = base / "tmp"
    tmp.mkdir()
    os.environ["TMPDIR"] = str(tmp)
    return MariaDB.start(base, "oracle", SERVER_ID, *PRIMARY_ARGS)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tests.data.oracle.regenerate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write (default {DEFAULT_OUT})")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="record only this variant (repeatable; needs --out: the binlog files are always new)")
    ap.add_argument("--keep", action="store_true", help="keep the primary's directory (printed at the end)")
    return ap.parse_args(argv)


def _usage_error(args: argparse.Namespace) -> str | None:
    bad = unknown_names(args.only or [])
    if bad:
        return f"no such variant: {', '.join(bad)}"
    if args.only and args.out.resolve() == DEFAULT_OUT.resolve():
        return ("--only needs --out DIR: the binlog files are recorded anew, and the stored captures of the other "
                "variants would no longer match them")
    if args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} exists and is not a directory"
    return None


def publish(new: Path, out: Path, full: bool) -> None:
    """Move a finished recording into ``out``; a full one first removes every old capture (names may change)."""
    out.mkdir(parents=True, exist_ok=True)
    if full:
        for old in [*out.glob("*.json"), *out.glob("*.raw")]:
            old.unlink()
    for f in sorted(new.iterdir()):
        shutil.copyfile(f, out / f.name)


def main(argv: Sequence[str] | None = None) -> int:
    """Record into a scratch directory and publish only a finished recording: a failure leaves --out as it was."""
    args = _parse(argv)
    console = Console(stderr=True, markup=False, highlight=False)  # messages quote lists: no rich markup
    problem = _usage_error(args)
    if problem:
        console.print(f"error: {problem}")
        return 2
    total = FIXED_STEPS + (len(args.only) if args.only else len(variants(0)))
    base = Path(tempfile.mkdtemp(prefix="binlogd-oracle-", dir="/tmp"))
    primary: MariaDB | None = None
    ok = False
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    try:
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("starting a private MariaDB 10.11 primary", total=total)

            def report(text: str) -> None:
                progress.update(task, advance=1, description=text)

            primary = start_primary(base)
            report(f"primary on port {primary.port}")
            names = record(primary, base / "new", args.only, report)
        publish(base / "new", args.out, full=args.only is None)
        ok = True
    except (HarnessError, TimeoutError, OSError, pymysql.Error) as e:
        console.print(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    finally:
        if primary is not None:
            primary.stop()
        if ok and not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            console.print(f"primary's directory kept: {base}")
    console.print(f"{len(names)} captures, the binlog files and SHOW BINLOG EVENTS written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
