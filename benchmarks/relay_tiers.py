"""Tiers (issue 12): a binlogd relay of a binlogd relay, side by side with a MariaDB chain, in one run.

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.relay_tiers [--events N] [--txns K] [--interval-ms MS] [--keep]

1. Storing, per hop. The cached binlog of `benchmarks.dump_throughput` (N events, default 300 000) is served by a
   real MariaDB 10.11 primary (copies of the files). Measured one after the other, each on an empty tmpfs datadir:
   `mariadb-binlog --raw` reading everything from the primary (its own dump rate); a MariaDB 10.11 replica's IO
   thread storing everything in its relay log (START SLAVE IO_THREAD until Read_Master_Log_Pos is the primary's
   end: the MariaDB tier's storing step); binlogd tier 1 (upstream: the primary) and binlogd tier 2 (upstream:
   tier 1, caught up) storing everything (from the "requesting binlog dump" log line to SHOW MASTER STATUS equal
   to the primary's). Both tiers' files must equal the primary's (in-use flag aside).
2. Latency end to end. Two chains from the same primary: primary -> binlogd tier 1 -> binlogd tier 2 -> MariaDB
   leaf, and primary -> MariaDB intermediate replica (log_slave_updates) -> MariaDB leaf. K single-row commits
   on the primary, one every --interval-ms; each leaf is polled (one connection each) until the row is there.
   p50/p99 of commit-returned -> visible on each leaf, and their ratio.

Results: tables, and JSON in benchmarks/results/relay_tiers-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from binlogd.protocol.constants import LOG_EVENT_BINLOG_IN_USE_F
from rich.console import Console
from rich.table import Table

from binlogd.testing import Binlogd, MariaDB, find_binary, make_primary_from_binlogs

from .dump_throughput import (
    DEFAULT_CACHE_DIR,
    DEFAULT_MAX_BINLOG_SIZE,
    FDE_FLAGS_BYTE,
    MB,
    RESULTS_DIR,
    build_binlogs,
    client_command,
)

DEFAULT_EVENTS = 300_000


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def _master_status(conn: Any) -> tuple[str, int] | None:
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def _log_time(log: str, marker: str) -> float:
    """Epoch seconds of the last log line containing `marker` (binlogd's `%(asctime)s` format, local time)."""
    for line in reversed(log.splitlines()):
        if marker in line:
            return dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    raise RuntimeError(f"no {marker!r} in binlogd's log")


def _diff(mine: Path, theirs: Path) -> str | None:
    a, b = bytearray(mine.read_bytes()), bytearray(theirs.read_bytes())
    for buf in (a, b):
        if len(buf) > FDE_FLAGS_BYTE:
            buf[FDE_FLAGS_BYTE] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
    return None if a == b else f"{mine} differs from {theirs}"


def tier_catch_up(upstream_port: int, target: tuple[str, int], datadir: Path, log_path: Path,
                  server_id: int) -> tuple[Binlogd, float]:
    """A binlogd relay of `upstream_port` on an empty datadir: seconds from its dump request to holding `target`."""
    tier = Binlogd.start(["--upstream", f"mysql://root:@127.0.0.1:{upstream_port}", "--datadir", str(datadir),
                          "--server-id", str(server_id), "--upstream-heartbeat", "5"], log_path=log_path)
    conn = tier.connect()
    try:
        while _master_status(conn) != target:
            time.sleep(0.01)
        done = time.time()
    finally:
        conn.close()
    return tier, done - _log_time(tier.log_text(), "requesting binlog dump")


def mariadb_io_catch_up(replica: MariaDB, primary: MariaDB, target: tuple[str, int]) -> float:
    """Seconds a MariaDB replica's IO thread needs to store the primary's whole binlog in its relay log."""
    replica.change_master(primary.host, primary.port, use_gtid="no", log_file=primary.binary_logs()[0][0],
                          log_pos=4)
    t0 = time.monotonic()
    replica.query("START SLAVE IO_THREAD")
    while True:
        st = replica.slave_status()
        if (st["Master_Log_File"], int(st["Read_Master_Log_Pos"])) == target:
            return time.monotonic() - t0
        if st["Last_IO_Errno"]:
            raise RuntimeError(f"MariaDB replica: {st['Last_IO_Error']}")
        time.sleep(0.01)


def measure_latency(primary: MariaDB, leaves: dict[str, MariaDB], txns: int, interval: float) -> dict[str, Any]:
    conns = {name: leaf.connect() for name, leaf in leaves.items()}
    up = primary.connect()
    seen: dict[str, list[float]] = {name: [] for name in leaves}
    missing = 0
    try:
        for i in range(1, txns + 1):
            with up.cursor() as cur:
                cur.execute("INSERT INTO lat.t VALUES (%s)", (i,))
            t0 = time.monotonic()
            left = set(leaves)
            while left and time.monotonic() - t0 < 10:
                for name in list(left):
                    with conns[name].cursor() as cur:
                        cur.execute("SELECT 1 FROM lat.t WHERE id = %s", (i,))
                        if cur.fetchone():
                            seen[name].append((time.monotonic() - t0) * 1e3)
                            left.discard(name)
            missing += len(left)
            time.sleep(interval)
    finally:
        up.close()
        for c in conns.values():
            c.close()
    return {"missing": missing, **{name: {"p50": _pct(v, 0.5), "p99": _pct(v, 0.99), "n": len(v)}
                                   for name, v in seen.items()}}


def _wait(what: str, check: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.relay_tiers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, help=f"binlog size in events (default "
                   f"{DEFAULT_EVENTS}; cached like dump_throughput's)")
    p.add_argument("--txns", type=int, default=200, help="commits in the latency run (default 200)")
    p.add_argument("--interval-ms", type=float, default=5.0, help="pause between commits (default 5 ms)")
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="binlog cache (shared with "
                   "dump_throughput)")
    p.add_argument("--keep", action="store_true", help="keep the work directories")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    binary = find_binary("mariadb-binlog")
    if binary is None or find_binary("mariadbd") is None or args.events < 1 or args.txns < 1:
        console.print("[red]needs the MariaDB binaries (make mariadb) and positive --events/--txns[/]")
        return 2
    bs = build_binlogs(args.events, DEFAULT_MAX_BINLOG_SIZE, args.cache_dir, False, console)
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="binlogd-tiers-bench-"))
    fast = Path(tempfile.mkdtemp(prefix="binlogd-tiers-bench-", dir=shm))
    started = dt.datetime.now()
    load = os.getloadavg()
    mariadbs: list[MariaDB] = []
    tiers: list[Binlogd] = []
    try:
        console.print("starting the primary (a real MariaDB serving copies of the binlog) and two MariaDB replicas")
        primary = make_primary_from_binlogs(work, "primary", 1, bs.paths())
        mariadbs.append(primary)
        middle = MariaDB.start(work, "middle", 2, "--log-bin=mysql-bin", "--log-slave-updates",
                               f"--relay-log={fast}/middle-relay")
        mariadbs.append(middle)
        total = sum(size for _, size in primary.binary_logs())
        target = primary.master_status()
        out = fast / "mariadb-binlog"
        out.mkdir()
        t0 = time.monotonic()
        subprocess.run(client_command(binary, primary.port, out, primary.binary_logs()[0][0]), check=True,
                       capture_output=True)
        dump_s = time.monotonic() - t0
        console.print("storing: the MariaDB replica's IO thread")
        mariadb_s = mariadb_io_catch_up(middle, primary, target)
        console.print("storing: binlogd tier 1 (upstream: the primary)")
        tier1, tier1_s = tier_catch_up(primary.port, target, fast / "tier1", work / "tier1.log", 101)
        tiers.append(tier1)
        console.print("storing: binlogd tier 2 (upstream: tier 1)")
        tier2, tier2_s = tier_catch_up(tier1.port, target, fast / "tier2", work / "tier2.log", 102)
        tiers.append(tier2)
        mismatches = [d for n, _ in primary.binary_logs() for t in ("tier1", "tier2")
                      if (d := _diff(fast / t / n, primary.datadir / n))]

        console.print("latency: positioning the chains at the primary's end")
        middle.stop_slave()
        middle.reset_slave(forget_master=False)
        middle.change_master(primary.host, primary.port, use_gtid="no", log_file=target[0], log_pos=target[1])
        middle.start_slave()
        leaf_b = MariaDB.start(work, "leaf_mariadb", 4)
        leaf_t = MariaDB.start(work, "leaf_binlogd", 3)
        mariadbs += [leaf_b, leaf_t]
        leaf_t.change_master(tier2.host, tier2.port, use_gtid="no", log_file=target[0], log_pos=target[1])
        mid_end = middle.master_status()
        leaf_b.change_master(middle.host, middle.port, use_gtid="no", log_file=mid_end[0], log_pos=mid_end[1])
        for leaf in (leaf_t, leaf_b):
            leaf.start_slave()
        primary.execute("CREATE DATABASE lat; CREATE TABLE lat.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        for leaf in (leaf_t, leaf_b):
            _wait(f"{leaf.name} has lat.t", lambda lf=leaf: bool(lf.query(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='lat'")[0][0]))
        console.print(f"latency: {args.txns} commits, {args.interval_ms:g} ms apart")
        latency = measure_latency(primary, {"binlogd_chain": leaf_t, "mariadb_chain": leaf_b}, args.txns,
                                  args.interval_ms / 1e3)
    finally:
        for t in reversed(tiers):
            t.stop()
        for m in reversed(mariadbs):
            with contextlib.suppress(Exception):
                m.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(fast, ignore_errors=True)

    storing = {"bytes": total, "events_approx": bs.events, "mariadb_binlog_dump_s": round(dump_s, 3),
               "mariadb_io_thread_s": round(mariadb_s, 3), "tier1_s": round(tier1_s, 3),
               "tier2_s": round(tier2_s, 3), "mismatches": mismatches}
    t = Table(title=f"storing the whole binlog ({total / MB:.1f} MB), load average {load[0]:.1f}")
    for c in ("", "s", "MB/s", "÷ mariadb-binlog dump", "÷ MariaDB IO thread"):
        t.add_column(c, justify="right")
    for name, s in (("mariadb-binlog from the primary", dump_s), ("MariaDB replica IO thread", mariadb_s),
                    ("binlogd tier 1 (of MariaDB)", tier1_s), ("binlogd tier 2 (of binlogd)", tier2_s)):
        t.add_row(name, f"{s:.2f}", f"{total / s / MB:.1f}", f"{dump_s / s:.2f}x", f"{mariadb_s / s:.2f}x")
    console.print(t)
    t = Table(title="latency: primary commit -> row visible on the leaf (two hops)")
    for c in ("chain", "p50 ms", "p99 ms"):
        t.add_column(c, justify="right")
    for name in ("binlogd_chain", "mariadb_chain"):
        t.add_row(name, f"{latency[name]['p50']:.2f}", f"{latency[name]['p99']:.2f}")
    console.print(t)
    ratio = latency["mariadb_chain"]["p50"] / latency["binlogd_chain"]["p50"]
    console.print(f"p50: the MariaDB chain takes {ratio:.2f}x the binlogd chain's time; missing: {latency['missing']}")
    RESULTS_DIR.mkdir(exist_ok=True)
    out_json = RESULTS_DIR / f"relay_tiers-{started:%Y%m%d-%H%M%S}.json"
    out_json.write_text(json.dumps({"benchmark": "relay_tiers", "started": started.isoformat(timespec="seconds"),
                                    "loadavg": load, "binlog": bs.to_json(), "storing": storing,
                                    "latency": latency}, indent=2))
    console.print(f"results: {out_json}")
    if mismatches or latency["missing"]:
        console.print(f"[red]stored files differ or rows missing: {mismatches}[/]")
        return 1
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
