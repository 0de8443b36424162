"""Relay mode: added latency (upstream commit -> a downstream reader of binlogd receives the event) with 1 and 20
downstream readers, and relay throughput vs the upstream's own dump rate, in one run.

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.relay_latency [--events N] [--readers 1,20] [--txns K] [--interval-ms MS] [--keep]

1. Throughput. The cached binlog of `benchmarks.dump_throughput` (N events, default 300 000, generated once by a
   real MariaDB) is served by a real MariaDB 10.11 primary (copies of the files). Its own dump rate: one
   `mariadb-binlog --raw --to-last-log` client (C, output on tmpfs) reads everything, once before and once after
   the relay's run (the mean is compared; the upstream's CPU meanwhile is its dump's cost). The relay rate: a
   `binlogd serve --upstream` with an empty datadir (on tmpfs too) replicates everything: from the moment its
   log says "requesting binlog dump" to the moment its copy of the upstream's last file has the upstream's size
   (watched from outside, so the relay spends nothing on being watched; its SHOW MASTER STATUS must then equal
   the upstream's). Every stored file is then compared with the upstream's (only the FDE in-use flag may differ).
2. Latency. With that relay caught up and still connected, R readers (replica dumps: capability 4, file/pos at
   binlogd's end; `--reader`) follow binlogd, and one more reader follows the upstream directly
   (the baseline: what the upstream's own dump costs). K single-row transactions are committed on the upstream,
   one every --interval-ms. Each reader notes the monotonic time it receives each transaction's XID event.
   Reported per reader count: p50/p99 of commit-returned -> received via binlogd, of the same directly from the
   upstream, and of the difference per transaction and reader (the latency binlogd adds).

Every reader is a process of its own (CLOCK_MONOTONIC is system-wide), so no reader waits for another: the added
latency is the server's (and the machine's: record the load average beside it). `--reader c` (the default when gcc
is there) runs benchmarks/c/binlog_reader.c in its tail mode, a blocking replica dump at a replica IO thread's
cost (C, one read per wake-up); `--reader python` runs `protocol.connection.ReplicationClient` in an asyncio loop,
~100-200 µs of Python per transaction and reader: with 21 of them on 2 cores the readers themselves compete with
the servers for the CPU, and their queueing shows up in both p99s.
Results: a table, and JSON in benchmarks/results/relay_latency-<timestamp>.json, with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from binlogd.protocol.connection import ClientConfig, ReplicationClient
from binlogd.protocol.constants import GTID_EVENT, LOG_EVENT_BINLOG_IN_USE_F, XID_EVENT
from binlogd.protocol.gtid import peek_gtid
from rich.console import Console
from rich.table import Table

from binlogd.testing import Binlogd, MariaDB, find_binary, make_primary_from_binlogs

from . import REPO_ROOT
from .dump_throughput import (
    DEFAULT_CACHE_DIR,
    DEFAULT_MAX_BINLOG_SIZE,
    FDE_FLAGS_BYTE,
    LAUNCHER,
    MB,
    RESULTS_DIR,
    _progress,
    build_binlogs,
    build_c_reader,
    client_command,
    cpu_seconds,
)

DEFAULT_EVENTS = 300_000


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def relay_status(server: Binlogd, conn: Any = None) -> dict[str, Any]:
    """SHOW SLAVE STATUS as a dict; on `conn` when given (polling: no connection per call)."""
    c = conn or server.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone()
            return {} if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))
    finally:
        if conn is None:
            c.close()


def master_status(server: Binlogd, conn: Any = None) -> tuple[str, int] | None:
    c = conn or server.connect()
    try:
        with c.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            return None if row is None else (str(row[0]), int(row[1]))
    finally:
        if conn is None:
            c.close()


def _log_time(log: str, marker: str) -> float:
    """Epoch seconds of the first log line containing `marker` (binlogd's `%(asctime)s` format, local time)."""
    for line in log.splitlines():
        if marker in line:
            stamp = line[:23]
            return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
    raise RuntimeError(f"no {marker!r} in binlogd's log")


def same_file(mine: Path, theirs: Path) -> str | None:
    """None when the relay's copy equals the upstream's file, the FDE in-use flag of both ignored."""
    a, b = bytearray(mine.read_bytes()), bytearray(theirs.read_bytes())
    for buf in (a, b):
        if len(buf) > FDE_FLAGS_BYTE:
            buf[FDE_FLAGS_BYTE] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
    if a == b:
        return None
    at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return f"{mine.name}: differs from the upstream's at offset {at} ({len(a)} vs {len(b)} bytes)"


# ---- throughput -----------------------------------------------------------------------------------------


def upstream_dump_rate(upstream: MariaDB, binary: str, out: Path) -> tuple[float, float]:
    """Seconds one mariadb-binlog client needs to read the upstream's whole binlog, and the upstream's CPU seconds
    meanwhile (its dump thread's cost: the figure the relay's CPU per event compares with, steadier under load)."""
    out.mkdir()
    first = upstream.binary_logs()[0][0]
    cpu0 = cpu_seconds(upstream.pid)
    t0 = time.monotonic()
    subprocess.run(client_command(binary, upstream.port, out, first), check=True, capture_output=True)
    return time.monotonic() - t0, cpu_seconds(upstream.pid) - cpu0


def received_bytes(upstream: MariaDB, st: dict[str, Any]) -> int:
    """Bytes of the upstream's binlog the relay has received (files before Master_Log_File, plus its position)."""
    done = 0
    for name, size in upstream.binary_logs():
        if name == st.get("Master_Log_File"):
            return done + int(st.get("Read_Master_Log_Pos") or 0)
        done += size
    return 0


def relay_catch_up(upstream: MariaDB, datadir: Path, log_path: Path, console: Console,
                   tree: Path | None = None) -> tuple[Binlogd, float, float]:
    """Start a relay on an empty datadir; seconds from its dump request to having stored everything, and the
    relay process's CPU seconds per byte stored, measured from its first poll after start-up (so the interpreter's
    start-up is not counted; bytes received before that poll are left out of the division too).

    The end is seen from outside: the size of the upstream's last file in the relay's datadir (tmpfs), polled every
    5 ms, so the relay spends no CPU on being watched (SHOW SLAVE STATUS once a second, for errors and progress;
    SHOW MASTER STATUS once at the end, which must then equal the upstream's). `tree`: binlogd from another source
    tree (the launcher maps it; before/after comparisons of a patch in one command)."""
    args = ["--upstream", f"mysql://root:@127.0.0.1:{upstream.port}", "--datadir", str(datadir), "--server-id", "100",
            "--upstream-heartbeat", "5"]
    if tree is None:
        relay = Binlogd.start(args, log_path=log_path)
    else:
        relay = Binlogd.start(args, log_path=log_path, env={"BINLOGD_BENCH_TREE": str(tree.resolve())},
                              module=LAUNCHER, cwd=REPO_ROOT)
    target = upstream.master_status()
    last = datadir / target[0]
    conn = relay.connect()
    try:
        cpu0 = cpu_seconds(relay.pid)
        bytes0 = received_bytes(upstream, relay_status(relay, conn))
        with _progress(console) as progress:
            task = progress.add_task("relay catching up", total=None)
            checked = time.monotonic()
            while True:
                with contextlib.suppress(FileNotFoundError):
                    if last.stat().st_size >= target[1]:
                        break
                if time.monotonic() - checked > 1.0:
                    checked = time.monotonic()
                    st = relay_status(relay, conn)
                    if st.get("Slave_IO_Running") == "No":
                        raise RuntimeError(f"relay stopped: {st.get('Last_IO_Error')}")
                    progress.update(task, description=f"relay catching up: {st.get('Master_Log_File')}:"
                                    f"{st.get('Read_Master_Log_Pos')}")
                time.sleep(0.005)
        done = time.time()
        cpu = cpu_seconds(relay.pid) - cpu0
        deadline = time.monotonic() + 30
        while master_status(relay, conn) != target:  # written; published by the same commit right after
            if time.monotonic() > deadline:
                raise RuntimeError(f"relay's SHOW MASTER STATUS is not the upstream's {target}")
            time.sleep(0.01)
    finally:
        conn.close()
    total = sum(size for _, size in upstream.binary_logs())
    return relay, done - _log_time(relay.log_text(), "requesting binlog dump"), cpu / max(1, total - bytes0)


# ---- latency --------------------------------------------------------------------------------------------


class Reader:
    """One replication client noting when each transaction's XID arrives, keyed by its GTID seq_no."""

    def __init__(self, host: str, port: int, server_id: int, file: str, pos: int) -> None:
        self.cfg = ClientConfig(host=host, port=port, server_id=server_id, heartbeat_s=5.0)
        self.file, self.pos = file, pos
        self.seen: dict[int, float] = {}
        self.ready = asyncio.Event()

    async def run(self) -> None:
        client = await ReplicationClient.connect(self.cfg)
        await client.start_dump(self.file, self.pos)
        seq = -1
        async for ev in client.events():
            self.ready.set()  # at the first event (a fake ROTATE): the dump runs, its start-up is not measured
            if ev[4] == GTID_EVENT:
                seq = peek_gtid(ev)[2]
            elif ev[4] == XID_EVENT:
                self.seen[seq] = time.monotonic()


def reader_process(args: tuple[str, int, int, str, int], ready: Any, stop: Any, results: Any) -> None:
    """A reader in its own process (and its own asyncio loop): readers never wait for each other or for the
    benchmark, so the figures are the server's. CLOCK_MONOTONIC is system-wide: its times compare across processes.
    Puts (server_id, {seq: time}) on `results` once `stop` is set."""

    async def main() -> dict[int, float]:
        reader = Reader(*args)
        task = asyncio.create_task(reader.run())
        await asyncio.wait_for(reader.ready.wait(), 60)
        ready.release()
        while not stop.is_set() and not task.done():
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return reader.seen

    results.put((args[2], asyncio.run(main())))


class PyReaders:
    """The readers as Python processes (`reader_process`, spawned): started, waited for, stopped, read."""

    def __init__(self, specs: list[tuple[str, int, int, str, int]]) -> None:
        ctx = mp.get_context("spawn")
        self.ready, self.stop, self.queue = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
        self.procs = [ctx.Process(target=reader_process, args=(spec, self.ready, self.stop, self.queue), daemon=True)
                      for spec in specs]
        for pr in self.procs:
            pr.start()

    def wait_ready(self, timeout: float) -> None:
        for _ in self.procs:
            if not self.ready.acquire(timeout=timeout):
                raise RuntimeError(f"a reader process did not start its dump within {timeout:g} s")

    def results(self) -> dict[int, dict[int, float]]:
        self.stop.set()
        return dict(self.queue.get(timeout=60) for _ in self.procs)

    def kill(self) -> None:
        self.stop.set()
        for pr in self.procs:
            pr.join(10)
            if pr.is_alive():
                pr.kill()


class CReaders:
    """The readers as C processes (benchmarks/c/binlog_reader.c, tail mode): started, waited for, stopped, read."""

    def __init__(self, binary: Path, specs: list[tuple[str, int, int, str, int]]) -> None:
        self.specs = specs
        self.procs = [subprocess.Popen([str(binary), host, str(port), file, str(pos), str(sid)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                      for host, port, sid, file, pos in specs]

    def wait_ready(self, timeout: float) -> None:
        for pr in self.procs:  # each prints "ready" at its dump's first event
            line = _readline(pr, timeout)
            if line.strip() != "ready":
                raise RuntimeError(f"a C reader did not start its dump: {line!r} {pr.stderr.read()[-500:]}")

    def results(self) -> dict[int, dict[int, float]]:
        seen: dict[int, dict[int, float]] = {}
        for pr, spec in zip(self.procs, self.specs, strict=True):
            pr.terminate()
            out, err = pr.communicate(timeout=60)
            if pr.returncode != 0:
                raise RuntimeError(f"a C reader failed ({pr.returncode}): {err[-500:]}")
            seen[spec[2]] = {int(a): float(b) for a, b in (ln.split() for ln in out.splitlines() if ln)}
        return seen

    def kill(self) -> None:
        for pr in self.procs:
            if pr.poll() is None:
                pr.kill()
                pr.wait(10)


def _readline(pr: subprocess.Popen[str], timeout: float) -> str:
    """One line of a child's stdout, or '' after `timeout` seconds (a reader that hangs fails the run)."""
    import selectors

    assert pr.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(pr.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return ""
    return pr.stdout.readline()


def measure_latency(upstream: MariaDB, relay: Binlogd, readers: int, txns: int, interval: float,
                    c_reader: Path | None = None) -> dict[str, Any]:
    """K paced commits on the upstream; per transaction and reader: commit -> received (binlogd, direct).

    Every reader is its own process: the direct one (server id 900) and R via binlogd (1000 + i); C processes when
    `c_reader` is given, else Python ones."""
    up_file, up_pos = upstream.master_status()
    rl_file, rl_pos = master_status(relay) or ("", 4)
    specs = [(upstream.host, upstream.port, 900, up_file, up_pos),
             *((relay.host, relay.port, 1000 + i, rl_file, rl_pos) for i in range(readers))]
    procs: CReaders | PyReaders = CReaders(c_reader, specs) if c_reader is not None else PyReaders(specs)
    commits: dict[int, float] = {}
    try:
        procs.wait_ready(120)
        conn = upstream.connect()
        cpu0 = cpu_seconds(relay.pid)
        try:
            with conn.cursor() as cur:
                for i in range(txns):
                    cur.execute("INSERT INTO lat.t (v) VALUES (%s)", (i,))
                    committed = time.monotonic()
                    cur.execute("SELECT @@last_gtid")
                    commits[int(str(cur.fetchone()[0]).rsplit("-", 1)[1])] = committed
                    time.sleep(interval)
        finally:
            conn.close()
        time.sleep(1.0)  # the last commits' way to every reader
        relay_cpu = cpu_seconds(relay.pid) - cpu0  # storing each transaction and sending it to every reader
        seen = procs.results()
    finally:
        procs.kill()
    direct = seen.get(900, {})
    via = [seen.get(1000 + i, {}) for i in range(readers)]
    missing = sum(len(set(commits) - set(r)) for r in [direct, *via])
    d_lat = [(direct[s] - c) * 1e3 for s, c in commits.items() if s in direct]
    v_lat = [(r[s] - c) * 1e3 for r in via for s, c in commits.items() if s in r]
    added = [(r[s] - direct[s]) * 1e3 for r in via for s in commits if s in r and s in direct]
    return {
        "readers": readers, "transactions": txns, "missing": missing,
        "via_binlogd_ms": {"p50": _pct(v_lat, 0.5), "p99": _pct(v_lat, 0.99), "mean": statistics.fmean(v_lat)},
        "direct_ms": {"p50": _pct(d_lat, 0.5), "p99": _pct(d_lat, 0.99), "mean": statistics.fmean(d_lat)},
        "added_ms": {"p50": _pct(added, 0.5), "p99": _pct(added, 0.99), "mean": statistics.fmean(added)},
        "relay_cpu_us_per_txn": round(relay_cpu / txns * 1e6, 1),
    }


# ---- main -----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.relay_latency", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, help=f"binlog size in events (default "
                   f"{DEFAULT_EVENTS}; cached like dump_throughput's)")
    p.add_argument("--readers", default="1,20", help="downstream reader counts (default 1,20)")
    p.add_argument("--txns", type=int, default=300, help="transactions per latency run (default 300)")
    p.add_argument("--interval-ms", type=float, default=5.0, help="pause between commits (default 5 ms)")
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="binlog cache (shared with "
                   "dump_throughput)")
    p.add_argument("--binlogd-tree", type=Path, help="run the relay from this source tree (a copy of the repository "
                   "with its built extensions: before/after comparisons)")
    p.add_argument("--reader", choices=("c", "python"), default="c", help="the readers' implementation (default c: "
                   "benchmarks/c/binlog_reader.c's tail mode, as light as a replica's IO thread; python: "
                   "ReplicationClient in asyncio, whose own CPU competes with the servers on a small machine)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        counts = [int(x) for x in args.readers.split(",") if x]
    except ValueError:
        console.print("[red]--readers: comma-separated integers[/]")
        return 2
    binary = find_binary("mariadb-binlog")
    if binary is None or find_binary("mariadbd") is None or args.events < 1 or args.txns < 1 or not counts:
        console.print("[red]needs the MariaDB binaries (make mariadb) and positive --events/--txns/--readers[/]")
        return 2
    bs = build_binlogs(args.events, DEFAULT_MAX_BINLOG_SIZE, args.cache_dir, False, console)
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="binlogd-relay-bench-"))
    fast = Path(tempfile.mkdtemp(prefix="binlogd-relay-bench-", dir=shm))
    started = dt.datetime.now()
    upstream: MariaDB | None = None
    relay: Binlogd | None = None
    try:
        console.print("starting the upstream (a real MariaDB serving copies of the binlog)")
        upstream = make_primary_from_binlogs(work, "upstream", 1, bs.paths())
        upstream.execute("CREATE DATABASE lat; CREATE TABLE lat.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT) "
                         "ENGINE=InnoDB")
        total = sum(size for _, size in upstream.binary_logs())
        load = {"start": os.getloadavg()}
        # the upstream's rate before and after the relay's run (the machine's load moves; the mean is compared)
        up_s1, up_cpu1 = upstream_dump_rate(upstream, binary, fast / "mariadb-binlog")
        relay, relay_s, cpu_per_byte = relay_catch_up(upstream, fast / "relay", work / "binlogd.log", console,
                                                      args.binlogd_tree)
        shutil.rmtree(fast / "mariadb-binlog")
        up_s2, up_cpu2 = upstream_dump_rate(upstream, binary, fast / "mariadb-binlog")
        up_s = (up_s1 + up_s2) / 2
        up_cpu_us_per_event = (up_cpu1 + up_cpu2) / 2 / bs.events * 1e6
        cpu_us_per_event = cpu_per_byte * total / bs.events * 1e6
        mismatches = [d for n, _ in upstream.binary_logs() if (d := same_file(fast / "relay" / n,
                                                                            upstream.datadir / n))]
        throughput = {"bytes": total, "events_approx": bs.events, "upstream_dump_s": round(up_s, 3),
                      "upstream_dump_s_before_after": [round(up_s1, 3), round(up_s2, 3)],
                      "upstream_cpu_us_per_event": round(up_cpu_us_per_event, 3),
                      "relay_s": round(relay_s, 3), "upstream_MBps": total / up_s / MB,
                      "relay_MBps": total / relay_s / MB, "ratio": up_s / relay_s,
                      "relay_cpu_us_per_event": round(cpu_us_per_event, 3),
                      "relay_events_per_cpu_s": round(1e6 / cpu_us_per_event), "mismatches": mismatches}
        load["throughput_done"] = os.getloadavg()
        c_reader = build_c_reader(work, console) if args.reader == "c" else None
        reader = "c" if c_reader is not None else "python"
        latency = []
        for n in counts:
            console.print(f"latency: {args.txns} transactions, {n} downstream reader(s)")
            latency.append(measure_latency(upstream, relay, n, args.txns, args.interval_ms / 1e3, c_reader))
            load[f"latency_{n}_done"] = os.getloadavg()
    finally:
        if relay is not None:
            relay.stop()
        if upstream is not None:
            upstream.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(fast, ignore_errors=True)

    t = Table(title="relay throughput (whole binlog, one reader of the upstream)")
    for c in ("MB", "upstream dump s (before/after)", "upstream MB/s", "relay s", "relay MB/s", "relay ÷ upstream",
              "upstream CPU µs/event", "relay CPU µs/event"):
        t.add_column(c, justify="right")
    t.add_row(f"{total / MB:.1f}", f"{up_s:.2f} ({up_s1:.2f}/{up_s2:.2f})", f"{throughput['upstream_MBps']:.1f}",
              f"{relay_s:.2f}", f"{throughput['relay_MBps']:.1f}", f"{throughput['ratio']:.2f}x",
              f"{up_cpu_us_per_event:.2f}", f"{cpu_us_per_event:.2f}")
    console.print(t)
    t = Table(title=f"latency: upstream commit -> event received ({args.txns} commits, {args.interval_ms:g} ms apart, "
                    f"{reader} readers)")
    for c in ("readers", "via binlogd p50/p99 ms", "direct p50/p99 ms", "added p50/p99 ms", "relay CPU µs/txn",
              "missing"):
        t.add_column(c, justify="right")
    for r in latency:
        t.add_row(str(r["readers"]), f"{r['via_binlogd_ms']['p50']:.2f} / {r['via_binlogd_ms']['p99']:.2f}",
                  f"{r['direct_ms']['p50']:.2f} / {r['direct_ms']['p99']:.2f}",
                  f"{r['added_ms']['p50']:.2f} / {r['added_ms']['p99']:.2f}", f"{r['relay_cpu_us_per_txn']:.0f}",
                  str(r["missing"]))
    console.print(t)
    console.print("load average (1/5/15 min): " + "; ".join(f"{k} {' '.join(f'{x:.2f}' for x in v)}"
                                                             for k, v in load.items()))
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"relay_latency-{started:%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps({"benchmark": "relay_latency", "started": started.isoformat(timespec="seconds"),
                               "binlog": bs.to_json(), "throughput": throughput, "latency": latency, "reader": reader,
                               "loadavg": load},
                              indent=2))
    console.print(f"results: {out}")
    bad = mismatches or any(r["missing"] for r in latency)
    if bad:
        console.print(f"[red]stored files differ or events missing: {mismatches}[/]")
    return 1 if bad else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
