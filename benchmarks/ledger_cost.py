"""The audit ledger's cost on filtering dumps: binlogd with and without `--ledger`, same binlog, same clients.

`dump_throughput` measures the ledger with `mariadb-binlog` clients (capability 4 with ANNOTATE_ROWS wanted: every
event sent as stored, the ledger's cheapest case: one record per ~1 MiB). Replicas that filter make the ledger write
one record per run of events withheld or rewritten for skip_replication and per run of sends between them (holes,
dummies and BEGINs of a type rule stay inside the runs of sends, counted in `policy`), so this benchmark runs raw
COM_BINLOG_DUMP clients that set what such replicas set:

* `cap4_skip`: capability 4 + `SET skip_replication=1` (a FILTER_ON_MASTER MariaDB replica): holes for the 22 % of
  events flagged 0x8000 and for ANNOTATE_ROWS (dump flag 2 not set), the rest sent;
* `cap0_skip`: capability unset + `SET skip_replication=1` (a MySQL or old MariaDB replica under binlogd's default
  policy): dummies for flagged events and ANNOTATE_ROWS, a BEGIN for every GTID.

Run from the repository root::

    python -m benchmarks.ledger_cost [--events N] [--clients 1,8] [--repeat R] [--scenarios cap4_skip,cap0_skip]

The binlog is dump_throughput's (same generator and cache). Clients are threads of this process that receive the
stream into a reused buffer and count its bytes (the stream with and without the ledger must be the same length);
each (scenario, clients) pair runs `--repeat` times alternating ledger off/on, and the best wall of each is kept.
Reported: aggregate events/s (events read from the binlog per second, all clients), server CPU µs per event, and
the on/off ratios. JSON in benchmarks/results/ledger_cost-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import struct
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymysql
from rich.console import Console
from rich.table import Table

from benchmarks.dump_throughput import (
    DEFAULT_CACHE_DIR,
    DEFAULT_EVENTS,
    DEFAULT_MAX_BINLOG_SIZE,
    RESULTS_DIR,
    BinlogSet,
    _progress,
    build_binlogs,
    cpu_seconds,
    start_binlogd,
)

SCENARIOS: dict[str, list[str]] = {
    "cap4_skip": ["SET @master_binlog_checksum= @@global.binlog_checksum", "SET skip_replication=1",
                  "SET @mariadb_slave_capability=4"],
    "cap0_skip": ["SET @master_binlog_checksum= @@global.binlog_checksum", "SET skip_replication=1"],
}


def client(port: int, statements: list[str], first_file: str) -> int:
    """One non-blocking dump (server_id 0) from the first file to the end; returns the bytes received."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
        sock = conn._sock  # type: ignore[attr-defined]
        payload = b"\x12" + struct.pack("<IHI", 4, 1, 0) + first_file.encode()
        sock.sendall(struct.pack("<I", len(payload)) + payload)
        buf = bytearray(1 << 20)
        n = 0
        while True:  # binlogd ends the session after the dump's EOF packet
            k = sock.recv_into(buf)
            if not k:
                return n
            n += k
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def run_once(port: int, pid: int, statements: list[str], clients: int, first_file: str) -> dict[str, Any]:
    cpu0 = cpu_seconds(pid)
    t0 = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        sizes = list(pool.map(lambda _: client(port, statements, first_file), range(clients)))
    wall = time.monotonic() - t0
    return {"wall_s": wall, "server_cpu_s": cpu_seconds(pid) - cpu0, "bytes": sizes}


def ledger_stats(directory: Path) -> dict[str, int]:
    """Files, bytes and records (the last record's seq: the ledger numbers its records 1, 2, 3 ...)."""
    files = sorted(directory.glob("ledger.*.jsonl"))
    with open(files[-1], "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
        last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files), "records": json.loads(last)["seq"]}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ledger_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="minimum events in the binlog (default 1M)")
    p.add_argument("--clients", default="1,8", help="concurrent client counts (default 1,8)")
    p.add_argument("--repeat", type=int, default=2, help="repetitions per measurement (default 2, best kept)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"from {','.join(SCENARIOS)}")
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="binlog cache (as dump_throughput)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        counts = [int(x) for x in args.clients.split(",") if x.strip()]
        scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
        if not counts or min(counts) < 1 or args.repeat < 1 or any(s not in SCENARIOS for s in scenarios):
            raise ValueError
    except ValueError:
        console.print(f"[red]--clients must be positive integers, --repeat >= 1, --scenarios from "
                      f"{','.join(SCENARIOS)}[/]")
        return 2
    started = dt.datetime.now()
    bs: BinlogSet = build_binlogs(args.events, DEFAULT_MAX_BINLOG_SIZE, args.cache_dir, False, console)
    work = Path(tempfile.mkdtemp(prefix="binlogd-ledger-bench-"))
    servers = {}
    results: list[dict[str, Any]] = []
    try:
        for key in ("binlogd", "binlogd-ledger"):
            servers[key] = start_binlogd(bs, key, None, work / f"{key}.log")
        first = bs.files[0].name
        total = len(scenarios) * len(counts) * args.repeat * 2
        with _progress(console) as progress:
            task = progress.add_task("measuring", total=total)
            for sc in scenarios:
                for c in counts:
                    for rep in range(args.repeat):
                        order = ("binlogd", "binlogd-ledger") if rep % 2 == 0 else ("binlogd-ledger", "binlogd")
                        for key in order:
                            s = servers[key]
                            r = run_once(s.port, s.pid, SCENARIOS[sc], c, first)
                            results.append({"scenario": sc, "clients": c, "server": key, "rep": rep, **r})
                            progress.advance(task)
        ledger = ledger_stats(work / "ledger")
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(work, ignore_errors=True)

    summary: dict[str, Any] = {}
    table = Table(title=f"ledger cost: {bs.events:,} events, {bs.bytes / 1e6:.1f} MB, best of {args.repeat}")
    for col in ("scenario", "clients", "ledger", "wall s", "events/s", "server CPU s", "server µs/event",
                "stream MB/client", "on ÷ off events/s"):
        table.add_column(col, justify="left" if col in ("scenario", "ledger") else "right")
    bad = []
    for sc in scenarios:
        for c in counts:
            best = {}
            for key in ("binlogd", "binlogd-ledger"):
                runs = [r for r in results if (r["scenario"], r["clients"], r["server"]) == (sc, c, key)]
                best[key] = min(runs, key=lambda r: r["wall_s"])
            sizes = {n for r in results if (r["scenario"], r["clients"]) == (sc, c) for n in r["bytes"]}
            if len(sizes) != 1:
                bad.append(f"{sc}/{c}: stream sizes differ between runs: {sorted(sizes)}")
            entry = {}
            for key, r in best.items():
                entry[key] = {"wall_s": round(r["wall_s"], 3),
                              "events_per_s": round(bs.events * c / r["wall_s"]),
                              "server_cpu_s": round(r["server_cpu_s"], 2),
                              "server_us_per_event": round(r["server_cpu_s"] * 1e6 / (bs.events * c), 3)}
            off, on = entry["binlogd"], entry["binlogd-ledger"]
            entry["on_vs_off"] = {"events_per_s": round(on["events_per_s"] / off["events_per_s"], 3),
                                  "server_us_per_event": round(on["server_us_per_event"] / off["server_us_per_event"],
                                                               3)}
            summary[f"{sc}/{c}"] = entry
            for key in ("binlogd", "binlogd-ledger"):
                e = entry[key]
                table.add_row(sc, str(c), "on" if key == "binlogd-ledger" else "off", f"{e['wall_s']:.2f}",
                              f"{e['events_per_s']:,}", f"{e['server_cpu_s']:.2f}", f"{e['server_us_per_event']:.2f}",
                              f"{max(sizes) / 1e6:.1f}",
                              f"{entry['on_vs_off']['events_per_s']:.3f}" if key == "binlogd-ledger" else "")
            table.add_section()
    console.print(table)
    console.print(f"ledger written: {ledger['records']:,} records, {ledger['bytes'] / 1e6:.1f} MB in "
                  f"{ledger['files']} file(s)")
    doc = {"benchmark": "ledger_cost", "started": started.isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count()}, "binlog": bs.to_json(), "args": vars(args) | {
               "cache_dir": str(args.cache_dir), "results_dir": str(args.results_dir)},
           "summary": summary, "ledger": ledger, "runs": results, "problems": bad}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"ledger_cost-{started.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(doc, indent=2))
    console.print(f"results: {out}")
    for b in bad:
        console.print(f"[red]{b}[/]")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
