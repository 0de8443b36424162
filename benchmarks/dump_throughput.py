"""Dump throughput: `mariadb-binlog --read-from-remote-server --raw --to-last-log` against a real MariaDB 10.11
primary and against binlogd, serving the SAME binlog files, with 1 and 8 concurrent clients.

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.dump_throughput [--events N] [--clients 1,8] [--repeat R] [--keep]
                                         [--profile [cprofile|py-spy|both]] [--binlogd-tree DIR]

1. A binlog of at least N events (default one million) is generated once by a real MariaDB (ROW format,
   annotate events, autocommit INSERTs from a stored procedure, multi-statement transactions, bulk
   INSERT ... SELECT / DELETE with full 8 KiB row events, a STATEMENT-format UPDATE and a DDL per round; one
   round in four under SET skip_replication=1) and cached under --cache-dir, keyed by N, the workload version
   and --max-binlog-size. Events are counted with protocol.binlog_file.scan.
2. The files are served by a MariaDB primary (binlogd.testing.make_primary_from_binlogs: copies of the files plus
   the one small file mariadbd opens at startup, which --to-last-log reads too and which is counted and
   verified like the others), by binlogd (default policy), by binlogd --compat mariadb and, with
   --binlogd-tree, by binlogd running another source tree (before/after comparisons of a patch).
3. For each client count every client dumps everything into its own directory (tmpfs when available); the
   wall clock runs from the first client's start to the last client's exit. Every output file is compared byte
   for byte with the file it came from (the only allowed difference: the FDE's LOG_EVENT_BINLOG_IN_USE_F bit,
   byte 4+17, which a primary clears on the wire; the FDE's CRC does not cover it). Any mismatch or failed
   client makes the benchmark exit with status 1. Each measurement is repeated --repeat times, interleaved
   across servers, and the best (shortest wall) is reported.
4. Results: a table with events/s and MB/s (10^6 bytes) aggregate and per client, the server's CPU seconds and
   CPU microseconds per event sent, the CPU other processes used meanwhile (noise on a shared machine) and the
   binlogd/MariaDB ratios; JSON in benchmarks/results/dump_throughput-<timestamp>.json.
5. --profile: one more 1-client dump from a binlogd under cProfile (event-loop thread, enabled only during the
   dump) and/or py-spy (all threads, line-level samples); top entries printed and stored in the JSON.
   Profiled runs are never part of the timed numbers.

Every process started here (mariadbd, binlogd, mariadb-binlog, py-spy) is stopped by PID, also on errors
and Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import linecache
import os
import platform
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import BIN_LOG_HEADER_SIZE, FLAGS_OFFSET, LOG_EVENT_BINLOG_IN_USE_F
from pymysql.constants import CLIENT
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from benchmarks import REPO_ROOT
from binlogd.testing import Binlogd, MariaDB, find_binary, make_primary_from_binlogs

DEFAULT_EVENTS = 1_000_000
DEFAULT_MAX_BINLOG_SIZE = 64 << 20
WORKLOAD_VERSION = 1  # bump whenever the generated workload changes: it is part of the cache key
BASENAME = "mysql-bin"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "binlogd-bench-cache"
MB = 1_000_000
FDE_FLAGS_BYTE = BIN_LOG_HEADER_SIZE + FLAGS_OFFSET  # file offset of the FDE's low flags byte
COMPARE_CHUNK = 4 << 20
NOISY_SHARE = 0.1  # warn when other processes used more than this share of the machine during a reported run

TARGETS = ("mariadb", "binlogd", "binlogd-compat", "binlogd-ledger", "binlogd-alt")
DEFAULT_TARGETS = TARGETS[:4]  # + binlogd-alt when --binlogd-tree is given
TARGET_LABELS = {
    "mariadb": "MariaDB 10.11",
    "binlogd": "binlogd",
    "binlogd-compat": "binlogd --compat mariadb",
    "binlogd-ledger": "binlogd --ledger DIR",
    "binlogd-alt": "binlogd from --binlogd-tree",
}
SHORT_LABELS = {"mariadb": "MariaDB", "binlogd": "binlogd", "binlogd-compat": "compat",
                "binlogd-ledger": "ledger on", "binlogd-alt": "alt tree"}
LAUNCHER = "benchmarks._binlogd_launcher"

# ---- workload ------------------------------------------------------------------------------------------

SETUP_SQL = """
CREATE DATABASE bench;
USE bench;
CREATE TABLE t_small (id BIGINT AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40) NOT NULL) ENGINE=InnoDB;
CREATE TABLE t_bulk (id INT PRIMARY KEY, pad VARCHAR(255) NOT NULL) ENGINE=InnoDB;
CREATE PROCEDURE autocommit_inserts(n INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    INSERT INTO t_small (a, b) VALUES (i, 'autocommit insert');
    SET i = i + 1;
  END WHILE;
END;
CREATE PROCEDURE transactions(n INT, k INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE j INT;
  WHILE i < n DO
    START TRANSACTION;
    SET j = 0;
    WHILE j < k DO
      INSERT INTO t_small (a, b) VALUES (j, 'multi-statement transaction');
      SET j = j + 1;
    END WHILE;
    UPDATE t_small SET a = a + 1 WHERE id = LAST_INSERT_ID();
    COMMIT;
    SET i = i + 1;
  END WHILE;
END;
"""

# `--workload rows2k`: transactions of 4 single-row INSERTs of 2000-byte rows (a ~2 KB WRITE_ROWS event per row)
ROWS2K_SQL = """
CREATE DATABASE bench;
USE bench;
CREATE TABLE t_rows (id BIGINT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(2000) NOT NULL) ENGINE=InnoDB;
CREATE PROCEDURE rows2k(n INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    START TRANSACTION;
    INSERT INTO t_rows (pad) VALUES (REPEAT(CHAR(65 + i % 26), 2000));
    INSERT INTO t_rows (pad) VALUES (REPEAT(CHAR(66 + i % 25), 2000));
    INSERT INTO t_rows (pad) VALUES (REPEAT(CHAR(67 + i % 24), 2000));
    INSERT INTO t_rows (pad) VALUES (REPEAT(CHAR(68 + i % 23), 2000));
    COMMIT;
    SET i = i + 1;
  END WHILE;
END;
"""
WORKLOADS = ("mixed", "rows2k")
DEFAULT_EVENTS_BY_WORKLOAD = {"mixed": DEFAULT_EVENTS, "rows2k": 300_000}  # rows2k: ~190 MB


@dataclass(frozen=True)
class Workload:
    """One generation round; ~38.5k events and ~6.6 MB at scale 1 (a round ends with a DDL)."""

    autocommit_inserts: int = 4000  # 5 events each: GTID, ANNOTATE_ROWS, TABLE_MAP, WRITE_ROWS, XID
    transactions: int = 600  # GTID + k x (ANNOTATE, TABLE_MAP, WRITE_ROWS) + UPDATE (3) + XID
    transaction_size: int = 8
    bulk_rows: int = 10_000  # INSERT ... SELECT then DELETE: ~2 x 260 full 8 KiB row events
    skip_every: int = 4  # every 4th round runs under SET skip_replication=1 (flag 0x8000 on its events)
    kind: str = "mixed"  # or "rows2k": `transactions` transactions of 4 rows of 2 KB per round (14 events each)

    def scaled(self, n_events: int) -> Workload:
        """Smaller rounds for small N, so that a quick run does not generate far more than asked."""
        f = max(0.02, min(1.0, n_events / 400_000))
        return Workload(max(1, int(self.autocommit_inserts * f)), max(1, int(self.transactions * f)),
                        self.transaction_size, max(10, int(self.bulk_rows * f)), self.skip_every, self.kind)

    @property
    def setup_sql(self) -> str:
        return ROWS2K_SQL if self.kind == "rows2k" else SETUP_SQL

    def round_sql(self, r: int) -> list[str]:
        if self.kind == "rows2k":
            return [f"SET skip_replication={int(r % self.skip_every == self.skip_every - 1)}",
                    f"CALL rows2k({self.transactions})"]
        return [
            f"SET skip_replication={int(r % self.skip_every == self.skip_every - 1)}",
            f"CALL autocommit_inserts({self.autocommit_inserts})",
            f"CALL transactions({self.transactions}, {self.transaction_size})",
            f"INSERT INTO t_bulk (id, pad) SELECT seq, REPEAT(CHAR(65 + seq % 26), 200) FROM seq_1_to_{self.bulk_rows}",
            "DELETE FROM t_bulk",
            "SET SESSION binlog_format=STATEMENT",
            "UPDATE t_small SET a = a + 1 WHERE id = 1",
            "SET SESSION binlog_format=ROW",
            f"ALTER TABLE t_bulk COMMENT 'round {r}'",
        ]


@dataclass
class BinlogFile:
    name: str
    size: int
    events: int


@dataclass
class BinlogSet:
    directory: Path  # NAME.NNNNNN files and NAME.index
    files: list[BinlogFile]
    generated_seconds: float
    max_binlog_size: int
    workload: dict[str, Any]
    cached: bool = False

    @property
    def events(self) -> int:
        return sum(f.events for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def paths(self) -> list[Path]:
        return [self.directory / f.name for f in self.files]

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "files": [asdict(f) for f in self.files],
            "events": self.events,
            "bytes": self.bytes,
            "generated_seconds": round(self.generated_seconds, 2),
            "max_binlog_size": self.max_binlog_size,
            "workload": self.workload,
            "cached": self.cached,
        }


def count_events(path: Path) -> tuple[int, int]:
    """(whole events, bytes they cover) of a binlog file, with the project's own scanner."""
    data = path.read_bytes()
    res = scan(data)
    return len(res.events), res.end


class GrowthCounter:
    """Counts events in a growing binlog directory incrementally (only the bytes added since last time)."""

    def __init__(self, datadir: Path) -> None:
        self.datadir = datadir
        self.offsets: dict[str, int] = {}
        self.total = 0
        self.bytes = 0

    def update(self) -> int:
        index = self.datadir / f"{BASENAME}.index"
        for line in index.read_text().split():
            name = os.path.basename(line)
            start = self.offsets.get(name, BIN_LOG_HEADER_SIZE)
            with open(self.datadir / name, "rb") as f:
                f.seek(start)
                data = f.read()
            res = scan(data, 0)
            self.total += len(res.events)
            self.bytes += res.end
            self.offsets[name] = start + res.end
        return self.total


def build_binlogs(n_events: int, max_size: int, cache_root: Path, rebuild: bool, console: Console,
                  kind: str = "mixed") -> BinlogSet:
    """The cached binlog for (N, workload, max size), generated by a real MariaDB when absent."""
    workload = (Workload(transactions=2000, kind=kind) if kind == "rows2k" else Workload()).scaled(n_events)
    key = f"n{n_events}-w{WORKLOAD_VERSION}-m{max_size}" + ("" if kind == "mixed" else f"-{kind}")
    final = cache_root / key
    meta_path = final / "meta.json"
    if meta_path.exists() and not rebuild:
        cached = json.loads(meta_path.read_text())
        cached_files = [BinlogFile(**f) for f in cached["files"]]
        directory = final / "binlogs"
        if all((directory / f.name).is_file() and (directory / f.name).stat().st_size == f.size for f in cached_files):
            n, size = sum(f.events for f in cached_files), sum(f.size for f in cached_files)
            console.print(f"[green]binlog cache hit[/]: {directory} ({len(cached_files)} files, {n:,} events, "
                          f"{size / MB:.1f} MB)")
            return BinlogSet(directory, cached_files, cached["generated_seconds"], max_size, cached["workload"],
                             cached=True)
        console.print(f"[yellow]binlog cache {final} is incomplete: regenerating[/]")
    shutil.rmtree(final, ignore_errors=True)
    cache_root.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f"{key}.build-", dir=cache_root))
    t0 = time.monotonic()
    gen: MariaDB | None = None
    r = 0  # rounds run
    try:
        with _progress(console) as progress:
            task = progress.add_task("starting a MariaDB to generate the binlog", total=n_events)
            gen = MariaDB.start(
                build, "gen", 1,
                f"--log-bin={BASENAME}", "--binlog-format=ROW", "--binlog-annotate-row-events=ON",
                f"--max-binlog-size={max_size}", "--sync-binlog=0", "--innodb-buffer-pool-size=256M",
            )
            gen.execute(workload.setup_sql)
            counter = GrowthCounter(gen.datadir)
            conn = gen.connect(database="bench", client_flag=CLIENT.MULTI_STATEMENTS)
            try:
                progress.update(task, description="generating binlog events")
                with conn.cursor() as cur:
                    while counter.update() < n_events:
                        for sql in workload.round_sql(r):
                            cur.execute(sql)
                        r += 1
                        progress.update(task, completed=min(counter.total, n_events),
                                        description=f"generating binlog events (round {r}, "
                                        f"{counter.bytes / MB:.0f} MB)")
            finally:
                conn.close()
            progress.update(task, description="stopping the generator")
            gen.stop()
            gen = None
        directory = build / "binlogs"
        directory.mkdir()
        datadir = build / "gen" / "data"
        names = [os.path.basename(line) for line in (datadir / f"{BASENAME}.index").read_text().split()]
        files: list[BinlogFile] = []
        with _progress(console) as progress:
            task = progress.add_task("counting events (protocol.binlog_file.scan)", total=len(names))
            for name in names:
                os.rename(datadir / name, directory / name)
                events, end = count_events(directory / name)
                size = (directory / name).stat().st_size
                if end != size:
                    raise RuntimeError(f"{name}: {size - end} bytes after the last whole event")
                files.append(BinlogFile(name, size, events))
                progress.advance(task)
        (directory / f"{BASENAME}.index").write_text("".join(f"./{n}\n" for n in names))
        total = sum(f.events for f in files)
        if total < n_events:
            raise RuntimeError(f"generated only {total} events, wanted {n_events}")
        seconds = time.monotonic() - t0
        shutil.rmtree(build / "gen")
        meta: dict[str, Any] = {"files": [asdict(f) for f in files], "generated_seconds": seconds, "rounds": r,
                                "workload": {**asdict(workload), "version": WORKLOAD_VERSION}}
        (build / "meta.json").write_text(json.dumps(meta, indent=2))
        try:
            os.rename(build, final)
        except OSError:  # a concurrent run of the same key finished first: use its copy
            if not meta_path.exists():
                raise
            shutil.rmtree(build, ignore_errors=True)
            return build_binlogs(n_events, max_size, cache_root, False, console, kind)
    except BaseException:
        if gen is not None:
            gen.stop()
        shutil.rmtree(build, ignore_errors=True)
        raise
    bs = BinlogSet(final / "binlogs", files, seconds, max_size, meta["workload"])
    console.print(f"generated {bs.events:,} events, {bs.bytes / MB:.1f} MB in {len(files)} files in {seconds:.1f} s "
                  f"→ {bs.directory}")
    return bs


# ---- targets and runs ----------------------------------------------------------------------------------


@dataclass
class Target:
    key: str
    port: int
    pid: int
    first_file: str
    expected: dict[str, Path]  # output file name -> the file it must equal
    known: dict[str, BinlogFile]  # counts of the cached files (others are scanned when needed)

    @property
    def label(self) -> str:
        return TARGET_LABELS[self.key]

    def volume(self) -> tuple[int, int]:
        """(events, bytes) one client receives: every event of every file it dumps."""
        events = size = 0
        for name, path in self.expected.items():
            if name in self.known:
                events += self.known[name].events
                size += self.known[name].size
            else:
                n, _ = count_events(path)
                events += n
                size += path.stat().st_size
        return events, size


@dataclass
class RunResult:
    target: str
    clients: int
    repetition: int
    wall_s: float
    client_s: list[float]
    events_per_client: int
    bytes_per_client: int
    server_cpu_s: float
    clients_cpu_s: float
    machine_busy_cpu_s: float  # all CPUs, all processes, during the run (/proc/stat)
    loadavg_before: float
    mismatches: list[str] = field(default_factory=list)
    reader: str = "mariadb-binlog"  # or "c": benchmarks/c/binlog_reader.c (counts packets, writes nothing)

    @property
    def other_cpu_s(self) -> float:
        """CPU used during the run by processes other than the server and the clients: noise (other people's
        jobs on a shared machine; this benchmark's own process is included, it mostly sleeps)."""
        return max(0.0, self.machine_busy_cpu_s - self.server_cpu_s - self.clients_cpu_s)

    @property
    def server_us_per_event(self) -> float:
        return 1e6 * self.server_cpu_s / (self.clients * self.events_per_client)

    @property
    def agg_events_per_s(self) -> float:
        return self.clients * self.events_per_client / self.wall_s

    @property
    def agg_mb_per_s(self) -> float:
        return self.clients * self.bytes_per_client / self.wall_s / MB

    @property
    def client_events_per_s(self) -> list[float]:
        return [self.events_per_client / s for s in self.client_s]

    @property
    def client_mb_per_s(self) -> list[float]:
        return [self.bytes_per_client / s / MB for s in self.client_s]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        ce, cm = self.client_events_per_s, self.client_mb_per_s
        d.update(
            agg_events_per_s=round(self.agg_events_per_s),
            agg_mb_per_s=round(self.agg_mb_per_s, 2),
            client_events_per_s_mean=round(sum(ce) / len(ce)),
            client_events_per_s_min=round(min(ce)),
            client_mb_per_s_mean=round(sum(cm) / len(cm), 2),
            client_mb_per_s_min=round(min(cm), 2),
            server_us_per_event=round(self.server_us_per_event, 3),
            other_cpu_s=round(self.other_cpu_s, 2),
        )
        return d


def _progress(console: Console, transient: bool = False) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=transient,
        refresh_per_second=4,
    )


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a whole process (all threads) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def machine_busy_seconds() -> float:
    """CPU seconds spent not idle, summed over all CPUs, since boot (first line of /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / _CLK_TCK


def client_command(binary: str, port: int, out_dir: Path, first_file: str) -> list[str]:
    return [
        binary, "--no-defaults", "--read-from-remote-server", "--host=127.0.0.1", f"--port={port}", "--user=root",
        "--raw", "--to-last-log", f"--result-file={out_dir}/", first_file,
    ]


def compare_file(out: Path, src: Path) -> str | None:
    """None when `out` equals `src` with the FDE's in-use flag cleared, else where they differ."""
    with open(out, "rb") as a, open(src, "rb") as b:
        offset = 0
        while True:
            x = a.read(COMPARE_CHUNK)
            y: bytes | bytearray = b.read(COMPARE_CHUNK)
            if offset == 0 and len(y) > FDE_FLAGS_BYTE:
                y = bytearray(y)
                y[FDE_FLAGS_BYTE] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
            if x != y:
                n = min(len(x), len(y))
                i = next((k for k in range(n) if x[k] != y[k]), n)
                return (f"{out.name}: differs from {src} at offset {offset + i} "
                        f"(output {out.stat().st_size} bytes, source {src.stat().st_size} bytes)")
            if not x:
                return None
            offset += len(x)


def verify_output(out_dir: Path, target: Target) -> list[str]:
    problems = []
    got = {p.name for p in out_dir.iterdir()} if out_dir.is_dir() else set()
    for name in sorted(got - set(target.expected)):
        problems.append(f"{out_dir}: unexpected file {name}")
    for name, src in target.expected.items():
        if name not in got:
            problems.append(f"{out_dir}: missing {name}")
            continue
        diff = compare_file(out_dir / name, src)
        if diff:
            problems.append(f"{out_dir}: {diff}")
    return problems


C_READER_SOURCE = Path(__file__).resolve().parent / "c" / "binlog_reader.c"


def build_c_reader(work: Path, console: Console) -> Path | None:
    """Compile the minimal C reader with gcc (None, with a note, when gcc is missing or fails)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        console.print("[yellow]gcc not found: the C reader is skipped[/]")
        return None
    out = work / "binlog_reader"
    res = subprocess.run([gcc, "-O2", "-o", str(out), str(C_READER_SOURCE)], capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        console.print(f"[yellow]the C reader did not compile: the C reader is skipped[/]\n{res.stderr[-2000:]}")
        return None
    return out


def verify_c_reader(log: Path, target: Target) -> list[str]:
    """The C reader's counts against the files: every stored event, once (fakes are counted apart)."""
    text = log.read_text(errors="replace")
    m = re.search(r"events=(\d+) bytes=(\d+)", text)
    if m is None:
        return [f"C reader: no counts in its output: {text[-300:]}"]
    events, size = target.volume()
    want = (events, size - BIN_LOG_HEADER_SIZE * len(target.expected))
    got = (int(m[1]), int(m[2]))
    return [] if got == want else [f"C reader: got {got[0]} events / {got[1]} bytes, the files hold {want}"]


def run_clients(target: Target, clients: int, repetition: int, out_root: Path, binary: str, keep: bool,
                progress: Progress, c_reader: Path | None = None) -> RunResult:
    """Start `clients` mariadb-binlog processes (or C readers) at once, wait for all, verify their output."""
    run_dir = out_root / f"{target.key}-{clients}{'C' if c_reader else 'c'}-r{repetition}"
    dirs = [run_dir / f"client{i}" for i in range(clients)]
    for d in dirs:
        d.mkdir(parents=True)
    logs = [run_dir / f"client{i}.log" for i in range(clients)]
    procs: list[subprocess.Popen[bytes]] = []
    ends: list[float] = [0.0] * clients
    starts: list[float] = [0.0] * clients
    task = progress.add_task(f"{target.label}: {clients} client(s)", total=clients)
    load = os.getloadavg()[0]
    cpu0 = cpu_seconds(target.pid)
    children0 = os.times()
    busy0 = machine_busy_seconds()
    threads: list[threading.Thread] = []
    try:
        t0 = time.perf_counter()
        for i in range(clients):
            with open(logs[i], "wb") as log:
                starts[i] = time.perf_counter()
                cmd = (client_command(binary, target.port, dirs[i], target.first_file) if c_reader is None else
                       [str(c_reader), "127.0.0.1", str(target.port), target.first_file])
                procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))

            def waiter(i: int = i) -> None:
                procs[i].wait()
                ends[i] = time.perf_counter()

            th = threading.Thread(target=waiter, daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            while th.is_alive():
                th.join(0.25)
            progress.advance(task)
        wall = max(ends) - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        progress.remove_task(task)
    busy1 = machine_busy_seconds()
    children1 = os.times()
    cpu1 = cpu_seconds(target.pid)
    problems: list[str] = []
    for i, p in enumerate(procs):
        if p.returncode != 0:
            problems.append(f"client {i} exited with {p.returncode}: {logs[i].read_text(errors='replace')[-500:]}")
    vtask = progress.add_task(f"verifying {clients} output(s) byte by byte", total=clients)
    for i, d in enumerate(dirs):
        problems.extend(verify_output(d, target) if c_reader is None else verify_c_reader(logs[i], target))
        progress.advance(vtask)
    progress.remove_task(vtask)
    events, size = target.volume()
    if not keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return RunResult(
        target=target.key,
        clients=clients,
        repetition=repetition,
        wall_s=wall,
        client_s=[ends[i] - starts[i] for i in range(clients)],
        events_per_client=events,
        bytes_per_client=size,
        server_cpu_s=round(cpu1 - cpu0, 3),
        clients_cpu_s=round((children1.children_user + children1.children_system)
                            - (children0.children_user + children0.children_system), 3),
        machine_busy_cpu_s=round(busy1 - busy0, 2),
        loadavg_before=load,
        mismatches=problems,
        reader="mariadb-binlog" if c_reader is None else "c",
    )


# ---- profiling -----------------------------------------------------------------------------------------


def _short(path: str, root: Path = REPO_ROOT) -> str:
    """A path relative to the source tree that ran (or to site-packages / the stdlib)."""
    for r in {str(root), str(REPO_ROOT)}:
        if path.startswith(r + "/"):
            return path[len(r) + 1 :]
    m = re.search(r"(?:site-packages|lib/python3\.\d+)/(.*)$", path)
    return m.group(1) if m else path


def _warm_up(target: Target, out_root: Path, binary: str, keep: bool, console: Console) -> None:
    """One unprofiled dump first: thread pool, imports and caches are then as in a long-running server."""
    with _progress(console, transient=True) as progress:
        run = run_clients(target, 1, 0, out_root / "warm-up", binary, keep, progress)
    if run.mismatches:
        raise RuntimeError(f"warm-up dump failed: {run.mismatches[:3]}")


def profile_cprofile(args: argparse.Namespace, bs: BinlogSet, work: Path, out_root: Path, binary: str,
                     console: Console, stack: contextlib.ExitStack) -> dict[str, Any]:
    """One 1-client dump from a binlogd whose event-loop thread is profiled only while the dump runs."""
    stats_path = work / "binlogd.cprofile"
    root = args.binlogd_tree if args.profile_alt else REPO_ROOT
    server = start_binlogd(bs, "binlogd-alt" if args.profile_alt else "binlogd", args.binlogd_tree,
                           work / "binlogd-cprofile.log", profile_out=stats_path)
    stack.callback(server.stop)
    target = _binlogd_target("binlogd", server, bs)
    try:
        _warm_up(target, out_root, binary, args.keep, console)
        os.kill(server.pid, signal.SIGUSR1)  # start profiling
        time.sleep(0.2)
        with _progress(console, transient=True) as progress:
            run = run_clients(target, 1, 0, out_root / "profile", binary, args.keep, progress)
        os.kill(server.pid, signal.SIGUSR2)  # stop and write the stats
        deadline = time.monotonic() + 30
        while not stats_path.exists() and time.monotonic() < deadline and server.is_running:
            time.sleep(0.05)
    finally:
        server.stop()
    if not stats_path.exists():
        raise RuntimeError(f"binlogd did not write {stats_path}; log: {server.log_tail()}")
    st = pstats.Stats(str(stats_path))
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = st.stats  # type: ignore[attr-defined]
    rows: list[dict[str, Any]] = []
    for (file, line, name), (cc, nc, tt, ct, _callers) in raw.items():
        where = f"{_short(file, root)}:{line}({name})" if line else name
        rows.append({"function": where, "ncalls": nc, "primitive_calls": cc, "tottime_s": round(tt, 4),
                     "cumtime_s": round(ct, 4)})
    top = args.profile_top
    by_cum = sorted(rows, key=lambda r: -r["cumtime_s"])[:top]
    by_own = sorted(rows, key=lambda r: -r["tottime_s"])[:top]
    for title, ranking in (("cumulative time", by_cum), ("own time", by_own)):
        t = Table(title=f"binlogd under cProfile, 1 client (wall {run.wall_s:.2f} s, profiled): top {top} by {title}")
        for col in ("function", "ncalls", "own s", "cumulative s"):
            t.add_column(col, justify="left" if col == "function" else "right")
        for r in ranking:
            t.add_row(escape(r["function"]), f"{r['ncalls']:,}", f"{r['tottime_s']:.3f}", f"{r['cumtime_s']:.3f}")
        console.print(t)
    if run.mismatches:
        console.print(f"[red]profiled run had {len(run.mismatches)} mismatches[/]")
    return {"tool": "cProfile", "run": run.to_json(), "stats_file": str(stats_path) if args.keep else None,
            "by_cumulative": by_cum, "by_own": by_own}


def profile_pyspy(args: argparse.Namespace, bs: BinlogSet, work: Path, out_root: Path, binary: str,
                  console: Console, stack: contextlib.ExitStack) -> dict[str, Any]:
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(pyspy).exists():
        raise RuntimeError("py-spy is not installed (pip install py-spy)")
    server = start_binlogd(bs, "binlogd-alt" if args.profile_alt else "binlogd", args.binlogd_tree,
                           work / "binlogd-pyspy.log")
    stack.callback(server.stop)
    _warm_up(_binlogd_target("binlogd", server, bs), out_root, binary, args.keep, console)
    raw_path = work / "binlogd.pyspy.txt"
    root = args.binlogd_tree if args.profile_alt else REPO_ROOT
    with open(work / "py-spy.log", "wb") as spy_log:
        spy = subprocess.Popen([pyspy, "record", "--pid", str(server.pid), "--rate", str(args.pyspy_rate),
                                "--format", "raw", "--output", str(raw_path)],
                               stdin=subprocess.DEVNULL, stdout=spy_log, stderr=subprocess.STDOUT)
    stack.callback(_kill, spy)
    time.sleep(1.0)  # py-spy attaches
    target = _binlogd_target("binlogd", server, bs)
    try:
        with _progress(console, transient=True) as progress:
            run = run_clients(target, 1, 0, out_root / "profile", binary, args.keep, progress)
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()
        server.stop()
    if not raw_path.exists():
        raise RuntimeError(f"py-spy wrote no output: {(work / 'py-spy.log').read_text(errors='replace')[-2000:]}")
    idle = 0
    own_lines: Counter[str] = Counter()
    own_funcs: Counter[str] = Counter()
    incl_funcs: Counter[str] = Counter()
    total = 0
    frame_re = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
    for line in raw_path.read_text().splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = []
        for fr in stack_text.split(";"):
            m = frame_re.match(fr)
            if m:
                frames.append((m["func"], _short(m["file"], root), m["line"] or "?"))
        if not frames:
            continue
        func, file, lineno = frames[-1]
        if (func, file) in _WAITING:  # py-spy's idle detection misses these blocking calls
            idle += count
            continue
        own_lines[f"{file}:{lineno} {func}"] += count
        own_funcs[f"{file} {func}"] += count
        for f in {f"{fl} {fn}" for fn, fl, _ in frames if (fn, fl) not in _PLUMBING}:
            incl_funcs[f] += count
    top = args.profile_top

    active = total - idle

    def pct(n: int) -> float:
        return 100.0 * n / active if active else 0.0

    result: dict[str, Any] = {"tool": "py-spy", "samples": total, "waiting_samples": idle, "rate_hz": args.pyspy_rate,
                              "run": run.to_json()}
    for key, title, counter in (("by_inclusive", "inclusive (function on the stack)", incl_funcs),
                                ("by_own_function", "own time per function", own_funcs),
                                ("by_own_line", "own time per source line", own_lines)):
        t = Table(title=f"binlogd under py-spy ({args.pyspy_rate} Hz), 1 client (wall {run.wall_s:.2f} s, sampled), "
                  f"{active} busy samples ({idle} more were waiting in epoll/queue.get): top {top} {title}")
        t.add_column("where")
        t.add_column("samples", justify="right")
        t.add_column("%", justify="right")
        if key == "by_own_line":
            t.add_column("source")
        entries = counter.most_common(top)
        for where, n in entries:
            cells = [escape(where), str(n), f"{pct(n):.1f}"]
            if key == "by_own_line":
                cells.append(escape(_source_line(where, root)))
            t.add_row(*cells)
        console.print(t)
        result[key] = [{"where": w, "samples": n, "percent": round(pct(n), 2),
                        **({"source": _source_line(w, root)} if key == "by_own_line" else {})} for w, n in entries]
    return result


# Leaf frames that are a thread blocked in a system call (epoll_wait, a lock), i.e. waiting, not working.
_WAITING = {
    ("EpollSelector.select", "selectors.py"),
    ("_worker", "concurrent/futures/thread.py"),
}


# Frames that are on every stack of the event-loop thread or a worker thread: left out of the inclusive ranking.
_PLUMBING = {
    ("<module>", "<frozen runpy>"),
    ("_run_module_as_main", "<frozen runpy>"),
    ("_run_code", "<frozen runpy>"),
    ("<module>", "server/cli.py"),
    ("main", "server/cli.py"),
    ("run", "asyncio/runners.py"),
    ("Runner.run", "asyncio/runners.py"),
    ("BaseEventLoop.run_until_complete", "asyncio/base_events.py"),
    ("BaseEventLoop.run_forever", "asyncio/base_events.py"),
    ("BaseEventLoop._run_once", "asyncio/base_events.py"),
    ("Handle._run", "asyncio/events.py"),
    ("Thread._bootstrap", "threading.py"),
    ("Thread._bootstrap_inner", "threading.py"),
    ("Thread.run", "threading.py"),
    ("<module>", "benchmarks/_binlogd_launcher.py"),
    ("run", "benchmarks/_binlogd_launcher.py"),
}


def _source_line(where: str, root: Path) -> str:
    """The source text of a `file:line func` entry from the tree that ran (best effort)."""
    m = re.match(r"^(\S+):(\d+) ", where)
    if not m or not (root / m[1]).is_file():
        return ""
    return linecache.getline(str(root / m[1]), int(m[2])).strip()[:70]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


# ---- orchestration -------------------------------------------------------------------------------------


def start_binlogd(bs: BinlogSet, key: str, tree: Path | None, log_path: Path, profile_out: Path | None = None
                  ) -> Binlogd:
    """binlogd serving the binlog read-only, through the launcher (alternative source tree, cProfile hooks)."""
    args = ["--binlog-dir", str(bs.directory), "--server-id", "2", "--basename", BASENAME]
    if key == "binlogd-compat":
        args += ["--compat", "mariadb"]
    if key == "binlogd-ledger":  # the audit ledger's cost: same server, ledger written next to its log
        args += ["--ledger", str(log_path.parent / "ledger")]
    env = {}
    if key == "binlogd-alt":
        if tree is None:
            raise ValueError("binlogd-alt needs --binlogd-tree")
        env["BINLOGD_BENCH_TREE"] = str(tree)
    if profile_out is not None:
        env["BINLOGD_BENCH_PROFILE"] = str(profile_out)
    return Binlogd.start(args, log_path=log_path, env=env, module=LAUNCHER, cwd=REPO_ROOT)


def _binlogd_target(key: str, server: Binlogd, bs: BinlogSet) -> Target:
    """What a client of binlogd must get: exactly the cached files."""
    return Target(key, server.port, server.pid, bs.files[0].name, dict(zip([f.name for f in bs.files], bs.paths(),
                  strict=True)), {f.name: f for f in bs.files})


def start_targets(keys: Sequence[str], bs: BinlogSet, work: Path, tree: Path | None, stack: contextlib.ExitStack,
                  console: Console) -> list[Target]:
    targets = []
    with _progress(console, transient=True) as progress:
        task = progress.add_task("starting servers", total=len(keys))
        for key in keys:
            if key == "mariadb":
                primary = make_primary_from_binlogs(work, "primary", 100, bs.paths(), BASENAME)
                stack.callback(primary.stop)
                names = [n for n, _ in primary.binary_logs()]
                known = {f.name: f for f in bs.files}
                expected = {n: (bs.directory / n if n in known else primary.datadir / n) for n in names}
                targets.append(Target(key, primary.port, primary.pid, bs.files[0].name, expected, known))
            else:
                server = start_binlogd(bs, key, tree, work / f"{key}.log")
                stack.callback(server.stop)
                targets.append(_binlogd_target(key, server, bs))
            progress.advance(task)
        # make_primary_from_binlogs just copied the binlogs: write the dirty pages back now, not during a run
        progress.update(task, description="sync")
        os.sync()
    return targets


def c_label(clients: int) -> str:
    """The summary's key for the C readers' runs ("1 C", "2 C", ...)."""
    return f"{clients} C"


def summarize(results: list[RunResult], keys: Sequence[str], client_counts: Sequence[int],
              c_counts: Sequence[int] = ()) -> dict[str, Any]:
    """Best repetition (shortest wall) per (clients, target) plus ratios to MariaDB; the C readers' runs under
    `c_label(n)`."""
    summary: dict[str, Any] = {}
    groups = [(str(c), c, "mariadb-binlog") for c in client_counts]
    groups += [(c_label(c), c, "c") for c in c_counts if any(r.reader == "c" and r.clients == c for r in results)]
    for label, c, reader in groups:
        best: dict[str, RunResult] = {}
        for k in keys:
            runs = [r for r in results if r.clients == c and r.target == k and r.reader == reader]
            if runs:
                best[k] = min(runs, key=lambda r: r.wall_s)
        entry: dict[str, Any] = {k: r.to_json() for k, r in best.items()}
        if "mariadb" in best:
            m = best["mariadb"]
            entry["ratios_vs_mariadb"] = {
                k: {
                    "agg_events_per_s": round(r.agg_events_per_s / m.agg_events_per_s, 3),
                    "agg_mb_per_s": round(r.agg_mb_per_s / m.agg_mb_per_s, 3),
                    "wall_s": round(r.wall_s / m.wall_s, 3),
                    "server_cpu_s": round(r.server_cpu_s / m.server_cpu_s, 3) if m.server_cpu_s else None,
                }
                for k, r in best.items()
                if k != "mariadb"
            }
        if "binlogd" in best and "binlogd-ledger" in best:  # the audit ledger's cost (budget: at most 10 %)
            on, off = best["binlogd-ledger"], best["binlogd"]
            entry["ledger_on_vs_off"] = {
                "agg_events_per_s": round(on.agg_events_per_s / off.agg_events_per_s, 3),
                "server_us_per_event": round(on.server_us_per_event / off.server_us_per_event, 3)
                if off.server_us_per_event else None,
            }
        summary[label] = entry
    return summary


def print_table(summary: dict[str, Any], keys: Sequence[str], console: Console, repeat: int) -> None:
    title = "dump throughput: mariadb-binlog --read-from-remote-server --raw --to-last-log (N C: N C readers)"
    if repeat > 1:
        title += f" (best of {repeat})"
    caption = ("events/s, MB/s (10^6 B): all clients together (clients x volume / wall); per client: mean of each "
               "client's own rate; server CPU: user+sys of the server process during the run; other CPU: everything "
               "else that ran on the machine meanwhile except the clients (noise); ÷ MariaDB: ratio of the aggregate "
               "events/s")
    t = Table(title=title, caption=caption)
    for col in ("clients", "server", "wall s", "events/s", "MB/s", "events/s/client", "MB/s/client", "server CPU s",
                "server µs/event", "other CPU s", "output", "÷ MariaDB"):
        t.add_column(col, justify="left" if col in ("server", "output") else "right", no_wrap=True)
    for c, entry in summary.items():
        ratios = entry.get("ratios_vs_mariadb", {})
        for k in keys:
            r = entry.get(k)
            if r is None:
                continue
            ratio = "1.00" if k == "mariadb" else (f"{ratios[k]['agg_events_per_s']:.2f}" if k in ratios else "-")
            ok = "[green]identical[/]" if not r["mismatches"] else f"[red]{len(r['mismatches'])} MISMATCH[/]"
            t.add_row(c, SHORT_LABELS[k], f"{r['wall_s']:.2f}", f"{r['agg_events_per_s']:,}",
                      f"{r['agg_mb_per_s']:.1f}", f"{r['client_events_per_s_mean']:,}",
                      f"{r['client_mb_per_s_mean']:.1f}", f"{r['server_cpu_s']:.2f}", f"{r['server_us_per_event']:.2f}",
                      f"{r['other_cpu_s']:.1f}", ok, ratio)
        t.add_section()
    console.print(t)


def _git_commit() -> dict[str, Any]:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              env=env, check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "server", "protocol"], cwd=REPO_ROOT,
                               env=env, check=False).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": head, "server_or_protocol_modified": dirty}


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError("a size like 67108864, 64M or 1G")
    n = int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2]]
    if not 4096 <= n <= 1 << 30 or n % 4096:
        raise argparse.ArgumentTypeError("max_binlog_size must be a multiple of 4096 between 4K and 1G")
    return n


def _counts(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError("a comma-separated list of client counts, e.g. 1,8") from e
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("client counts must be >= 1")
    return values


def _targets(text: str) -> list[str]:
    keys = [x.strip() for x in text.split(",") if x.strip()]
    bad = [k for k in keys if k not in TARGETS]
    if bad or not keys:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(TARGETS)}")
    return keys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dump_throughput", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, help="minimum events in the binlog (default 1M; rows2k: 300k)")
    p.add_argument("--workload", choices=WORKLOADS, default="mixed",
                   help="mixed: small events (mean 175 B, the default); rows2k: rows of 2 KB (one ~2 KB event each)")
    p.add_argument("--clients", type=_counts, default=[1, 8], help="concurrent client counts (default 1,8)")
    p.add_argument("--targets", type=_targets,
                   help=f"servers to measure, from {','.join(TARGETS)} (default {','.join(DEFAULT_TARGETS)}, plus "
                   "binlogd-alt with --binlogd-tree)")
    p.add_argument("--binlogd-tree", type=Path,
                   help="a directory with another server/ and protocol/ (e.g. a patched copy of the repository): "
                   "measured as target binlogd-alt next to the others, for before/after comparisons")
    p.add_argument("--repeat", type=int, default=2,
                   help="repetitions per measurement, interleaved; the best (shortest wall) is reported (default 2)")
    p.add_argument("--max-binlog-size", type=_size, default=DEFAULT_MAX_BINLOG_SIZE,
                   help="rotation size of the generated binlog (default 64M)")
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR,
                   help=f"binlog cache (default {DEFAULT_CACHE_DIR})")
    p.add_argument("--rebuild", action="store_true", help="regenerate the binlog even if cached")
    p.add_argument("--work-dir", type=Path, help="servers' directories (default: a new directory under /tmp)")
    p.add_argument("--out-dir", type=Path,
                   help="clients' output directories (default: a new directory under /dev/shm, else under --work-dir)")
    p.add_argument("--keep", action="store_true", help="keep server directories, logs and client outputs")
    p.add_argument("--profile", nargs="?", const="cprofile", choices=["cprofile", "py-spy", "both"],
                   help="after the timed runs, profile binlogd for one 1-client dump (default tool: cprofile)")
    p.add_argument("--profile-alt", action="store_true", help="profile the --binlogd-tree code instead")
    p.add_argument("--profile-top", type=int, default=25, help="entries shown per profile ranking (default 25)")
    p.add_argument("--pyspy-rate", type=int, default=500, help="py-spy samples per second (default 500)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    p.add_argument("--no-c-reader", dest="c_reader", action="store_false",
                   help="skip the minimal C reader (benchmarks/c/binlog_reader.c, compiled with gcc)")
    p.add_argument("--c-clients", type=_counts, default=[1],
                   help="C readers at once, comma-separated (default 1; e.g. 1,2,4: where one core of the server "
                        "is not enough, MariaDB's thread per dump uses both)"),
    return p


class _Terminated(Exception):
    pass


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated()


@contextlib.contextmanager
def _dir(path: Path | None, prefix: str, parent: str | None, keep: bool, console: Console) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix=prefix, dir=path))
    else:
        made = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield made
    finally:
        if keep:
            console.print(f"kept {made}")
        else:
            shutil.rmtree(made, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # wide enough for the result table when the output is not a terminal (CI logs, files)
    console = Console() if sys.stdout.isatty() else Console(width=200)
    if args.events is None:
        args.events = DEFAULT_EVENTS_BY_WORKLOAD[args.workload]
    if args.events < 1 or args.repeat < 1:
        console.print("[red]--events and --repeat must be >= 1[/]")
        return 2
    if args.binlogd_tree is not None:
        args.binlogd_tree = args.binlogd_tree.resolve()
        if not (args.binlogd_tree / "server" / "cli.py").is_file():
            console.print(f"[red]--binlogd-tree {args.binlogd_tree} has no server/cli.py[/]")
            return 2
    if args.targets is None:
        args.targets = [*DEFAULT_TARGETS, *(["binlogd-alt"] if args.binlogd_tree else [])]
    if ("binlogd-alt" in args.targets or args.profile_alt) and args.binlogd_tree is None:
        console.print("[red]binlogd-alt / --profile-alt need --binlogd-tree[/]")
        return 2
    binary = find_binary("mariadb-binlog")
    missing = [b for b in ("mariadbd", "mariadb-install-db", "mariadb-binlog") if find_binary(b) is None]
    if binary is None or missing:
        console.print(f"[red]missing MariaDB programs: {', '.join(missing)} (make mariadb)[/]")
        return 2
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    started = dt.datetime.now()
    try:
        bs = build_binlogs(args.events, args.max_binlog_size, args.cache_dir, args.rebuild, console, args.workload)
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) and args.out_dir is None else None
        with contextlib.ExitStack() as stack:
            work = stack.enter_context(_dir(args.work_dir, "binlogd-bench-", None, args.keep, console))
            out_root = stack.enter_context(_dir(args.out_dir, "binlogd-bench-out-", shm or str(work), args.keep,
                                                console))
            targets = start_targets(args.targets, bs, work, args.binlogd_tree, stack, console)
            c_reader = build_c_reader(work, console) if args.c_reader else None
            mariadb_version = ""
            with contextlib.suppress(Exception):
                mariadb_version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                                 check=False).stdout.strip()
            results: list[RunResult] = []
            c_counts = args.c_clients if c_reader is not None else []
            total_runs = (len(args.clients) + len(c_counts)) * args.repeat * len(targets)
            with _progress(console) as progress:
                overall = progress.add_task("measuring", total=total_runs)
                for c in args.clients:
                    for rep in range(args.repeat):
                        # every other repetition in reverse order: no server always runs right after another
                        for target in targets if rep % 2 == 0 else targets[::-1]:
                            r = run_clients(target, c, rep, out_root, binary, args.keep, progress)
                            results.append(r)
                            progress.advance(overall)
                            for m in r.mismatches[:5]:
                                progress.console.print(f"[red]{target.label}, {c} clients: {m}[/]")
                for c in c_counts:
                    for rep in range(args.repeat):
                        for target in targets if rep % 2 == 0 else targets[::-1]:
                            r = run_clients(target, c, rep, out_root, binary, args.keep, progress, c_reader)
                            results.append(r)
                            progress.advance(overall)
                            for m in r.mismatches[:5]:
                                progress.console.print(f"[red]{target.label}, {c} C readers: {m}[/]")
            summary = summarize(results, args.targets, args.clients, c_counts)
            print_table(summary, args.targets, console, args.repeat)
            profile: dict[str, Any] = {}
            if args.profile in ("cprofile", "both"):
                profile["cprofile"] = profile_cprofile(args, bs, work, out_root, binary, console, stack)
            if args.profile in ("py-spy", "both"):
                profile["py-spy"] = profile_pyspy(args, bs, work, out_root, binary, console, stack)
        mismatches = sum(len(r.mismatches) for r in results)
        doc = {
            "benchmark": "dump_throughput",
            "started": started.isoformat(timespec="seconds"),
            "seconds": round((dt.datetime.now() - started).total_seconds(), 1),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "mariadb_binlog": mariadb_version},
            "git": _git_commit(),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "binlog": bs.to_json(),
            "client_command": client_command(binary, 0, Path("<dir>"), bs.files[0].name),
            "mismatches": mismatches,
            "summary": summary,
            "runs": [r.to_json() for r in results],
            "profile": profile or None,
        }
        args.results_dir.mkdir(parents=True, exist_ok=True)
        out = args.results_dir / f"dump_throughput-{started.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(doc, indent=2))
        _print_summary(summary, args.clients, console)
        console.print(f"results: {out}")
        if mismatches:
            console.print(f"[red bold]{mismatches} verification problem(s): output differs from the served files[/]")
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


def _print_summary(summary: dict[str, Any], client_counts: Sequence[int], console: Console) -> None:
    cores = os.cpu_count() or 1
    for c, entry in summary.items():
        for k in TARGETS:
            r = entry.get(k)
            if r and r["other_cpu_s"] > NOISY_SHARE * cores * r["wall_s"]:
                console.print(f"[yellow]noisy: while {TARGET_LABELS[k]} served {c} client(s), other processes used "
                              f"{r['other_cpu_s']:.1f} CPU-s in {r['wall_s']:.1f} s (of {cores} cores): compare server "
                              "µs/event rather than rates, or rerun with a higher --repeat[/]")
        for k, ratio in entry.get("ratios_vs_mariadb", {}).items():
            console.print(
                f"{c} client(s): {TARGET_LABELS[k]} / MariaDB = {ratio['agg_events_per_s']:.2f}x events/s "
                f"({entry[k]['agg_events_per_s']:,} vs {entry['mariadb']['agg_events_per_s']:,}), "
                f"{ratio['agg_mb_per_s']:.2f}x MB/s ({entry[k]['agg_mb_per_s']:.1f} vs "
                f"{entry['mariadb']['agg_mb_per_s']:.1f}), server CPU {entry[k]['server_cpu_s']:.2f} s vs "
                f"{entry['mariadb']['server_cpu_s']:.2f} s"
            )
        cost = entry.get("ledger_on_vs_off")
        if cost:
            on, off = entry["binlogd-ledger"]["agg_events_per_s"], entry["binlogd"]["agg_events_per_s"]
            console.print(f"{c} client(s): ledger on / off = {cost['agg_events_per_s']:.3f}x events/s "
                          f"({on:,} vs {off:,}), {cost['server_us_per_event']}x server µs/event")


if __name__ == "__main__":
    sys.exit(main())
