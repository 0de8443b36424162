"""Standalone writes: statements logged per second from concurrent pymysql writers, binlogd's standalone primary
vs a real MariaDB 10.11 primary that logs the same statements (BLACKHOLE table, binlog on, STATEMENT format).

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.standalone_writes [--writers 1,8] [--statements 2000] [--targets mariadb,binlogd,...]
                                           [--sync-binlog 0,1] [--classes mix,insert,...] [--keep]

`--writers`, `--sync-binlog` and `--classes` take comma-separated lists: one command measures every combination
(servers restarted per sync_binlog value) and prints one table, each binlogd row beside MariaDB's for the same
writers / sync_binlog / statement class.

1. Servers, all started before the first measurement, each with an empty binlog:
   * `mariadb`: mariadbd with `--log-bin --binlog-format=STATEMENT --plugin-load-add=ha_blackhole`, the table
     ENGINE=BLACKHOLE: MariaDB parses, logs and commits every statement but stores no rows, which is what
     binlogd's standalone mode does.
   * `binlogd`: `binlogd serve --datadir DIR` (standalone mode);
     `binlogd-tables-info`: the same with `--binlog-with-tables-info` (one more event per statement).
   Both get the same `--sync-binlog` (default 0: the OS decides when to write back, MariaDB's default).
2. The same setup (CREATE DATABASE, CREATE TABLE ... ENGINE=BLACKHOLE) runs on each, then W writer threads
   (default 8), each with its own pymysql connection opened beforehand, wait at a barrier and send S
   autocommit statements each (default 2000): a mix of single-row INSERTs (60 %), multi-row INSERTs (10 %),
   UPDATEs (20 %) and DELETEs (10 %) with literal values, identical for every server. Wall clock: barrier to
   the last writer's last OK. One run per server (the issue asks for one run), servers one after the other.
3. Verification (not timed): the server's binlog files are read back with protocol.binlog_file.scan and the
   QUERY events holding the workload's statements are counted; every statement must be there exactly once
   (binlogd-tables-info: also one Tables_info event per statement). A mismatch makes the benchmark exit 1.
4. Output: a table (statements/s, server CPU seconds, server CPU µs per statement, the client's CPU µs per
   statement (this process: the writer threads share one GIL, so the client caps the rate at about 1e6 / that
   figure statements/s for every server alike), binlog bytes, the CPU other processes used meanwhile) and the
   binlogd/MariaDB ratio; JSON in
   benchmarks/results/standalone_writes-<timestamp>.json.

Every process started here is stopped by PID, also on errors and Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import pstats
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pymysql
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import QUERY_EVENT
from binlogd.protocol.events import parse_event
from binlogd.protocol.tables_info import TABLES_INFO_EVENT
from rich.console import Console
from rich.table import Table

from benchmarks import REPO_ROOT
from benchmarks.dump_throughput import (
    LAUNCHER,
    RESULTS_DIR,
    _dir,
    _git_commit,
    _on_sigterm,
    _progress,
    _short,
    _Terminated,
    cpu_seconds,
    machine_busy_seconds,
)
from binlogd.testing import Binlogd, MariaDB, find_binary

TARGETS = ("mariadb", "binlogd", "binlogd-tables-info", "binlogd-asyncio", "binlogd-alt")
DEFAULT_TARGETS = TARGETS[:3]
TARGET_LABELS = {
    "mariadb": "MariaDB 10.11 (BLACKHOLE, STATEMENT)",
    "binlogd": "binlogd standalone",
    "binlogd-tables-info": "binlogd --binlog-with-tables-info",
    "binlogd-asyncio": "binlogd --event-loop asyncio",
    "binlogd-alt": "binlogd from --binlogd-tree",
}
SETUP = [
    "CREATE DATABASE bench",
    "CREATE TABLE bench.t (id INT NOT NULL, w INT NOT NULL, a INT NOT NULL, b VARCHAR(64) NOT NULL) "
    "ENGINE=BLACKHOLE",
]
WORKLOAD_PREFIXES = (b"INSERT INTO t ", b"UPDATE t ", b"DELETE FROM t ")


CLASSES = ("mix", "insert", "insert3", "update", "delete", "set")
_CLASS_SLOT = {"insert": 0, "insert3": 6, "update": 7, "delete": 9}


def statements(writer: int, n: int, klass: str = "mix") -> list[str]:
    """Writer `writer`'s statements: literal values only, so every server logs exactly the same text.

    `mix`: 60 % single-row INSERT, 10 % three-row INSERT, 20 % UPDATE, 10 % DELETE; the other classes are one kind
    alone (`set`: SET @v = n, which no server logs), for the server CPU each statement class costs."""
    if klass == "set":
        return [f"SET @v{writer} = {i}" for i in range(n)]
    out = []
    for i in range(n):
        k = i % 10 if klass == "mix" else _CLASS_SLOT[klass]
        if k < 6:
            out.append(f"INSERT INTO t (id, w, a, b) VALUES ({i}, {writer}, {i * 7 % 1000}, 'writer {writer} row {i}')")
        elif k == 6:
            out.append(f"INSERT INTO t (id, w, a, b) VALUES ({i}, {writer}, 1, 'x'), ({i}, {writer}, 2, 'y'), "
                       f"({i}, {writer}, 3, 'z')")
        elif k < 9:
            out.append(f"UPDATE t SET a = a + 1, b = 'updated' WHERE id = {i - 1} AND w = {writer}")
        else:
            out.append(f"DELETE FROM t WHERE id = {i - 2} AND w = {writer}")
    return out


@dataclass
class Server:
    key: str
    label: str
    host: str
    port: int
    pid: int
    binlog_dir: Path
    version: str = ""


@dataclass
class RunResult:
    key: str
    label: str
    writers: int
    statements: int
    wall_s: float
    server_cpu_s: float
    machine_busy_cpu_s: float
    sync_binlog: int = 0
    klass: str = "mix"
    binlog_bytes: int = 0
    logged_statements: int = 0
    tables_info_events: int = 0
    client_cpu_s: float = 0.0  # this process (the writer threads, one GIL) meanwhile
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.statements / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_us_per_statement(self) -> float:
        return self.server_cpu_s / self.statements * 1e6 if self.statements else 0.0

    @property
    def client_cpu_us_per_statement(self) -> float:
        return self.client_cpu_s / self.statements * 1e6 if self.statements else 0.0

    @property
    def other_cpu_s(self) -> float:
        """CPU used meanwhile by everything but the server (includes this benchmark's writer threads)."""
        return max(0.0, self.machine_busy_cpu_s - self.server_cpu_s)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "statements_per_second": round(self.per_second, 1),
                "server_cpu_us_per_statement": round(self.cpu_us_per_statement, 1),
                "client_cpu_us_per_statement": round(self.client_cpu_us_per_statement, 1)}


def _connect(server: Server, database: str | None = None) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(host=server.host, port=server.port, user="root", password="", database=database,
                           autocommit=True, connect_timeout=10, read_timeout=120, write_timeout=120)


def _setup(server: Server) -> None:
    conn = _connect(server)
    try:
        with conn.cursor() as cur:
            for sql in SETUP:
                cur.execute(sql)
            cur.execute("SELECT VERSION()")
            row = cur.fetchone()
            server.version = str(row[0]) if row else ""
    finally:
        conn.close()


def run_writers(server: Server, writers: int, per_writer: int, progress: Any, klass: str = "mix",
                sync_binlog: int = 0) -> RunResult:
    """W threads, one connection each, released together; the wall clock ends at the last writer's last OK."""
    scripts = [statements(w, per_writer, klass) for w in range(writers)]
    conns = [_connect(server, "bench") for _ in range(writers)]
    barrier = threading.Barrier(writers + 1)
    done = [0] * writers
    errors: list[str] = []
    ends = [0.0] * writers

    def work(w: int) -> None:
        try:
            with conns[w].cursor() as cur:
                barrier.wait()
                for sql in scripts[w]:
                    cur.execute(sql)
                    done[w] += 1
        except Exception as e:  # reported, and fails the benchmark
            errors.append(f"writer {w}: {type(e).__name__}: {e}")
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.abort()
        finally:
            ends[w] = time.perf_counter()

    threads = [threading.Thread(target=work, args=(w,), name=f"writer-{w}") for w in range(writers)]
    task = progress.add_task(f"{server.label}: {writers} writers, {klass}, sync_binlog={sync_binlog}",
                             total=writers * per_writer)
    try:
        for t in threads:
            t.start()
        cpu0, busy0, own0 = cpu_seconds(server.pid), machine_busy_seconds(), time.process_time()
        barrier.wait()
        t0 = time.perf_counter()
        while any(t.is_alive() for t in threads):
            progress.update(task, completed=sum(done))
            for t in threads:
                t.join(0.2)
        wall = max(ends) - t0
        cpu, busy = cpu_seconds(server.pid) - cpu0, machine_busy_seconds() - busy0
        own = time.process_time() - own0
    except threading.BrokenBarrierError:
        wall, cpu, busy, own = 0.0, 0.0, 0.0, 0.0
    finally:
        for t in threads:
            t.join()
        for c in conns:
            with contextlib.suppress(Exception):
                c.close()
    progress.update(task, completed=sum(done))
    return RunResult(server.key, server.label, writers, sum(done), wall, cpu, busy, sync_binlog, klass,
                     client_cpu_s=own, errors=errors)


def binlog_files(directory: Path) -> list[Path]:
    """The binlog files of a server's directory, in index order (the one *.index file there)."""
    indexes = sorted(directory.glob("*.index"))
    indexes = [p for p in indexes if not p.name.startswith("relay")]
    if len(indexes) != 1:
        raise RuntimeError(f"expected one binlog index in {directory}, found {[p.name for p in indexes]}")
    return [directory / os.path.basename(line) for line in indexes[0].read_text().split()]


def verify(server: Server, result: RunResult, expected: int, with_tables_info: bool) -> None:
    """Count the workload's QUERY events (and Tables_info events) in the server's binlog files."""
    logged = infos = size = 0
    for path in binlog_files(server.binlog_dir):
        data = path.read_bytes()
        res = scan(data)
        size += res.end
        for ev in res.events:
            if ev.type_code == TABLES_INFO_EVENT:
                infos += 1
            elif ev.type_code == QUERY_EVENT:
                body = parse_event(data[ev.pos : ev.pos + ev.length], 1).body
                if getattr(body, "query", b"").startswith(WORKLOAD_PREFIXES):
                    logged += 1
    result.binlog_bytes, result.logged_statements, result.tables_info_events = size, logged, infos
    if logged != expected:
        result.errors.append(f"{logged} workload statements in the binlog, {expected} sent")
    if with_tables_info and infos < expected:
        result.errors.append(f"{infos} Tables_info events for {expected} statements")
    if not with_tables_info and infos:
        result.errors.append(f"{infos} Tables_info events without --binlog-with-tables-info")


def start_servers(keys: Sequence[str], work: Path, sync_binlog: int, stack: contextlib.ExitStack,
                  console: Console, tree: Path | None = None) -> list[Server]:
    servers = []
    for key in keys:
        if key == "mariadb":
            m = MariaDB.start(work, "mariadb", 1, "--log-bin=mysql-bin", "--binlog-format=STATEMENT",
                              "--plugin-load-add=ha_blackhole", f"--sync-binlog={sync_binlog}",
                              "--max-connections=200")
            stack.callback(m.stop)
            servers.append(Server(key, TARGET_LABELS[key], m.host, m.port, m.pid, m.datadir))
        else:
            datadir = work / key
            if key == "binlogd-alt":  # another source tree (before/after a patch), through the launcher
                if tree is None:
                    raise ValueError("binlogd-alt needs --binlogd-tree")
                b = Binlogd.start(_binlogd_args(key, datadir, sync_binlog), log_path=work / f"{key}.log",
                                  env={"BINLOGD_BENCH_TREE": str(tree)}, module=LAUNCHER, cwd=REPO_ROOT)
            else:
                b = Binlogd.start(_binlogd_args(key, datadir, sync_binlog), log_path=work / f"{key}.log")
            stack.callback(b.stop)
            servers.append(Server(key, TARGET_LABELS[key], b.host, b.port, b.pid, datadir))
        console.print(f"started {TARGET_LABELS[key]} on port {servers[-1].port} (pid {servers[-1].pid})")
    return servers


def _binlogd_args(key: str, datadir: Path, sync_binlog: int) -> list[str]:
    args = ["--datadir", str(datadir), "--sync-binlog", str(sync_binlog)]
    if key == "binlogd-tables-info":
        args.append("--binlog-with-tables-info")
    if key == "binlogd-asyncio":  # the standard loop (default: uvloop when installed), for the comparison
        args += ["--event-loop", "asyncio"]
    return args


def profile(key: str, args: argparse.Namespace, work: Path, stack: contextlib.ExitStack,
            console: Console) -> dict[str, Any]:
    """One more (untimed) run against a binlogd whose event-loop thread is under cProfile during the writes."""
    stats_path = work / f"{key}.cprofile"
    b = Binlogd.start(_binlogd_args(key, work / f"{key}-profiled", args.sync_binlog[0]),
                      log_path=work / f"{key}-prof.log",
                      module=LAUNCHER, cwd=REPO_ROOT,
                      env={"BINLOGD_BENCH_PROFILE": str(stats_path),
                           **({"BINLOGD_BENCH_PROFILE_CPU": "1"} if args.profile_clock == "cpu" else {})})
    stack.callback(b.stop)
    server = Server(key, TARGET_LABELS[key] + " (profiled)", b.host, b.port, b.pid, work / f"{key}-profiled")
    _setup(server)
    os.kill(b.pid, signal.SIGUSR1)
    with _progress(console, transient=True) as progress:
        run = run_writers(server, args.writers[-1], args.statements, progress, args.classes[0], args.sync_binlog[0])
    os.kill(b.pid, signal.SIGUSR2)
    deadline = time.monotonic() + 30
    while not stats_path.exists() and time.monotonic() < deadline and b.is_running:
        time.sleep(0.05)
    b.stop()
    if not stats_path.exists():
        raise RuntimeError(f"binlogd did not write {stats_path}; log: {b.log_tail()}")
    stats = pstats.Stats(str(stats_path))
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    rows = [{"function": f"{_short(f, REPO_ROOT)}:{line}({name})" if line else name, "ncalls": nc,
             "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)}
            for (f, line, name), (_cc, nc, tt, ct, _callers) in raw.items()]
    out: dict[str, Any] = {"run": run.to_json()}
    for title, field_ in (("cumulative", "cumtime_s"), ("own", "tottime_s")):
        ranking = sorted(rows, key=lambda r: -r[field_])[: args.profile_top]
        out[f"by_{title}"] = ranking
        t = Table(title=f"{server.label}: event-loop thread, top {args.profile_top} by {title} time "
                  f"(wall {run.wall_s:.1f} s under the profiler)")
        for col in ("function", "ncalls", "own s", "cumulative s"):
            t.add_column(col, justify="left" if col == "function" else "right")
        for r in ranking:
            t.add_row(r["function"], f"{r['ncalls']:,}", f"{r['tottime_s']:.2f}", f"{r['cumtime_s']:.2f}")
        console.print(t)
    return out


def _case(r: RunResult) -> str:
    return f"{r.klass}, {r.writers} writer{'s' if r.writers > 1 else ''}, sync_binlog={r.sync_binlog}"


def print_table(results: list[RunResult], console: Console, repeat: int) -> dict[str, Any]:
    """One row per server and case (class, writers, sync_binlog); each ratio against MariaDB's row of its case."""
    title = "statements logged per second (autocommit, concurrent pymysql writers)"
    table = Table(title=title + (f", best of {repeat} runs" if repeat > 1 else ", one run"))
    for col in ("case", "server", "statements", "wall s", "statements/s", "server CPU s", "server µs/stmt",
                "client µs/stmt", "binlog MB", "other CPU s", "÷ MariaDB"):
        table.add_column(col, justify="left" if col in ("case", "server") else "right")
    ratios: dict[str, float] = {}
    for r in results:
        base = next((b for b in results if b.key == "mariadb" and _case(b) == _case(r) and not b.errors), None)
        ratio = r.per_second / base.per_second if base and base.per_second else 0.0
        if base is not None and r.key != "mariadb":
            ratios[f"{r.key}: {_case(r)}"] = round(ratio, 3)
        table.add_row(_case(r), r.label, f"{r.statements:,}", f"{r.wall_s:.2f}", f"{r.per_second:,.0f}",
                      f"{r.server_cpu_s:.2f}", f"{r.cpu_us_per_statement:.0f}",
                      f"{r.client_cpu_us_per_statement:.0f}", f"{r.binlog_bytes / 1e6:.1f}",
                      f"{r.other_cpu_s:.2f}", f"[bold]{ratio:.2f}[/]" if base else "-")
    console.print(table)
    for key, ratio in ratios.items():
        console.print(f"{key}: {ratio:.2f}x MariaDB's statements per second")
    return ratios


def _expected(klass: str, writers: int, per_writer: int) -> int:
    """Workload statements the binlog must hold for one run (SET is not logged)."""
    return 0 if klass == "set" else writers * per_writer


def _best_runs(servers: list[Server], runs: list[RunResult], args: argparse.Namespace,
               console: Console) -> list[RunResult]:
    """Verify each server's binlog (every run's statements exactly once) and keep each case's shortest run."""
    best: list[RunResult] = []
    for s in servers:
        own = [r for r in runs if r.key == s.key]
        expected = sum(_expected(r.klass, r.writers, args.statements) for r in own)
        verify(s, own[-1], expected, s.key == "binlogd-tables-info")
        total_bytes = own[-1].binlog_bytes
        for r in own:  # each run's share of the binlog, by its statements
            share = _expected(r.klass, r.writers, args.statements) / expected if expected else 0.0
            r.binlog_bytes = int(total_bytes * share)
            r.logged_statements = _expected(r.klass, r.writers, args.statements) if not own[-1].errors else 0
        for e in [e for r in own for e in r.errors][:5]:
            console.print(f"[red]{s.label}: {e}[/]")
        for case in dict.fromkeys(_case(r) for r in own):
            ok = [r for r in own if _case(r) == case and not r.errors and r.wall_s > 0]
            best.append(min(ok, key=lambda r: r.wall_s) if ok else [r for r in own if _case(r) == case][-1])
    return best


def _targets(text: str) -> list[str]:
    keys = [x.strip() for x in text.split(",") if x.strip()]
    bad = [k for k in keys if k not in TARGETS]
    if bad or not keys:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(TARGETS)}")
    return keys


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of integers") from None
    if not values:
        raise argparse.ArgumentTypeError("a comma-separated list of integers")
    return values


def _classes(text: str) -> list[str]:
    keys = [x.strip() for x in text.split(",") if x.strip()]
    if not keys or any(k not in CLASSES for k in keys):
        raise argparse.ArgumentTypeError(f"choose from {', '.join(CLASSES)}")
    return keys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.standalone_writes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--writers", type=_ints, default=[8],
                   help="concurrent pymysql writers, a list measures each (default 8; e.g. 1,8)")
    p.add_argument("--statements", type=int, default=2000, help="statements per writer (default 2000)")
    p.add_argument("--targets", type=_targets, default=list(DEFAULT_TARGETS),
                   help=f"servers to measure, from {','.join(TARGETS)} (default: the first three)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs per server, interleaved; the shortest wall is reported (default 1, as the issue asks; "
                   "more give steadier figures on a shared machine)")
    p.add_argument("--sync-binlog", type=_ints, default=[0],
                   help="sync_binlog for every server, a list measures each (default 0: the OS writes back, "
                   "MariaDB's default; e.g. 0,1)")
    p.add_argument("--classes", type=_classes, default=["mix"],
                   help=f"statement classes, each measured alone, from {','.join(CLASSES)} (default mix)")
    p.add_argument("--binlogd-tree", type=Path,
                   help="a source tree (e.g. `git archive COMMIT | tar -x -C DIR`) that target binlogd-alt runs, "
                   "for before/after figures in one run")
    p.add_argument("--work-dir", type=Path, help="servers' directories (default: a new directory under /tmp)")
    p.add_argument("--keep", action="store_true", help="keep server directories and logs")
    p.add_argument("--profile", choices=TARGETS[1:],
                   help="after the timed runs, one more run against this binlogd target with its event-loop thread "
                   "under cProfile (untimed); top functions printed and stored in the JSON")
    p.add_argument("--profile-top", type=int, default=25, help="entries per profile ranking (default 25)")
    p.add_argument("--profile-clock", choices=("wall", "cpu"), default="wall",
                   help="what the profile counts: wall time (default) or the event-loop thread's CPU time")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=200)
    if min(args.writers) < 1 or args.statements < 1 or args.repeat < 1 or min(args.sync_binlog) < 0:
        console.print("[red]--writers, --statements and --repeat must be >= 1, --sync-binlog >= 0[/]")
        return 2
    if "binlogd-alt" in args.targets and args.binlogd_tree is None:
        console.print("[red]target binlogd-alt needs --binlogd-tree DIR[/]")
        return 2
    missing = [b for b in ("mariadbd", "mariadb-install-db") if find_binary(b) is None]
    if "mariadb" in args.targets and missing:
        console.print(f"[red]missing MariaDB programs: {', '.join(missing)} (make mariadb)[/]")
        return 2
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    started = dt.datetime.now()
    results: list[RunResult] = []
    try:
        best: list[RunResult] = []
        versions: dict[str, str] = {}
        prof = None
        with contextlib.ExitStack() as outer:
            work = outer.enter_context(_dir(args.work_dir, "binlogd-writes-", None, args.keep, console))
            for sync in args.sync_binlog:
                with contextlib.ExitStack() as stack:  # servers restarted per sync_binlog value
                    servers = start_servers(args.targets, work / f"sync{sync}", sync, stack, console,
                                            args.binlogd_tree)
                    for s in servers:
                        _setup(s)
                        versions[s.key] = s.version
                    mine: list[RunResult] = []
                    with _progress(console) as progress:
                        for rep in range(args.repeat):
                            for writers in args.writers:
                                for klass in args.classes:
                                    # every other repetition in reverse order: no server always runs right after
                                    # another
                                    for s in servers if rep % 2 == 0 else servers[::-1]:
                                        mine.append(run_writers(s, writers, args.statements, progress, klass, sync))
                    results.extend(mine)
                    best.extend(_best_runs(servers, mine, args, console))
            ratios = print_table(best, console, args.repeat)
            if args.profile:
                prof = profile(args.profile, args, work, outer, console)
        errors = sum(len(r.errors) for r in results)
        doc = {
            "benchmark": "standalone_writes",
            "started": started.isoformat(timespec="seconds"),
            "seconds": round((dt.datetime.now() - started).total_seconds(), 1),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "git": _git_commit(),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "versions": versions,
            "setup": SETUP,
            "statement_examples": {k: statements(0, 10, k) for k in args.classes},
            "ratios": ratios,
            "best": [r.to_json() for r in best],
            "runs": [r.to_json() for r in results],
            "errors": errors,
            "profile": prof,
        }
        args.results_dir.mkdir(parents=True, exist_ok=True)
        out = args.results_dir / f"standalone_writes-{started.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(doc, indent=2))
        console.print(f"results: {out}")
        if errors:
            console.print(f"[red bold]{errors} problem(s): a writer failed or the binlog does not hold every "
                          "statement exactly once[/]")
            return 1
        return 0
    except _Terminated:
        console.print("[red]terminated[/]")
        return 143
    except KeyboardInterrupt:
        console.print("[red]interrupted[/]")
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    sys.exit(main())
