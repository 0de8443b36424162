"""Rows applied per second: binlogd-apply vs real MariaDB 10.11 replicas applying the same ROW binlog.

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.apply_rows [--sizes 1:10000,100:50000,1000:50000] [--repeat 3] [--profile] [--keep]

For every `B:N` of `--sizes` (B rows per source transaction, N rows inserted):

1. A real MariaDB primary (ROW format) writes a binlog: N rows inserted in transactions of B rows (B=1: a
   `FOR` loop of autocommit INSERTs, else `INSERT ... SELECT FROM seq`), then N/10 rows updated and N/20
   deleted, also B rows per transaction (every changed row is one row image: "rows" = N + N/10 + N/20).
2. Each repetition starts four fresh servers one after the other and times each:
   * `replica p0`: a real replica (`slave_parallel_threads=0`), CHANGE MASTER ... MASTER_USE_GTID=slave_pos; the
     clock runs from START SLAVE until SHOW SLAVE STATUS says everything is read and executed;
   * `replica p4`: the same with `slave_parallel_threads=4, slave_parallel_mode=optimistic`;
   * `binlogd-apply`: a fresh target and `binlogd-apply --channel =<primary> --no-start --admin-port P`; as for
     the replicas the clock runs from START SLAVE (sent to the admin port once it answers: Python start-up is not
     timed, as mariadbd's is not) until binlogd_apply.channel_position holds the primary's end position;
   * `binlogd-apply p4`: the same with `--parallel-apply=4` (four target sessions, commits in order).
   Every copy's tables must equal the first replica's (CHECKSUM TABLE), else the benchmark exits 1.
3. Medians of the repetitions: rows/s and the ratio binlogd-apply / replica; the binlogd-apply process's CPU
   (user+sys from START SLAVE to the end) per row change, the figure least disturbed by other work on the machine,
   and the same for the replica's / the target's mariadbd (`mariadbd µs/row`: the server's share of the work);
   `uptime`'s load averages before and after each size (the machine is shared); JSON in
   benchmarks/results/apply_rows-<timestamp>.json.

`--profile` runs one more binlogd-apply per size under cProfile (not timed) and prints its top functions.
Every process started here is stopped by PID, also on errors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pymysql
from rich.console import Console
from rich.table import Table

from benchmarks import REPO_ROOT
from binlogd.testing import HarnessError, MariaDB, free_port

console = Console()
KINDS = ("replica p0", "replica p4", "binlogd-apply", "binlogd-apply p4")
APPLIERS = {"binlogd-apply": (), "binlogd-apply p4": ("--parallel-apply=4",)}
REPLICA_ARGS = {"replica p0": ("--slave-parallel-threads=0",),
                "replica p4": ("--slave-parallel-threads=4", "--slave-parallel-mode=optimistic")}


def _workload(primary: MariaDB, rows: int, batch: int) -> int:
    primary.execute("CREATE DATABASE bench; USE bench; CREATE TABLE bench.t (id INT PRIMARY KEY, a INT,"
                    " b VARCHAR(64), c DOUBLE, d DATETIME(6), e DECIMAL(12,2)) ENGINE=InnoDB")
    values = "seq, seq % 1000, CONCAT('row ', seq), seq / 7, '2024-01-01 00:00:00' + INTERVAL seq SECOND, seq / 100"
    updates, deletes = rows // 10, rows // 20
    if batch == 1:  # one autocommit transaction per row, written by the server itself (no client round trips)
        primary.execute(f"USE bench; FOR seq IN 1..{rows} DO INSERT INTO t VALUES ({values}); END FOR")
        primary.execute(f"USE bench; FOR i IN 1..{updates} DO UPDATE t SET a = a + 1, b = CONCAT(b, ' u') "
                        f"WHERE id = i; END FOR")
        primary.execute(f"USE bench; FOR i IN {rows - deletes + 1}..{rows} DO DELETE FROM t WHERE id = i; END FOR")
        return rows + updates + deletes
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        primary.execute(f"USE bench; INSERT INTO t SELECT {values} FROM seq_{start + 1}_to_{start + n}")
    for start in range(0, updates, batch):
        primary.execute(f"UPDATE bench.t SET a = a + 1, b = CONCAT(b, ' u') WHERE id > {start} AND id <= "
                        f"{min(start + batch, updates)}")
    for start in range(0, deletes, batch):
        lo = rows - deletes + start
        primary.execute(f"DELETE FROM bench.t WHERE id > {lo} AND id <= {min(lo + batch, rows)}")
    return rows + updates + deletes


def _cpu_seconds(pid: int) -> float:
    """user+sys CPU seconds of a live process (/proc/PID/stat): less sensitive to the machine's load than walls."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


class Bench:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.template = base / "_template"
        self.servers: list[MariaDB] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.cpu: list[float] = []  # user+sys seconds of each binlogd-apply process from START SLAVE to the end
        self.kind = ""
        self.count = 0
        self.cpu_by_kind: dict[str, list[float]] = {}
        self.server_cpu: dict[str, list[float]] = {}  # the replica's / target's mariadbd CPU seconds per run

    def start(self, name: str, sid: int, *extra: str) -> MariaDB:
        self.count += 1
        for attempt in range(3):  # mariadb-install-db of the template can trip over other runs' /tmp files
            try:
                s = MariaDB.start(self.base, f"{name}{self.count}", sid, *extra, template_dir=self.template)
                break
            except HarnessError:
                if attempt == 2:
                    raise
        self.servers.append(s)
        return s

    def drop(self, s: MariaDB) -> None:
        s.stop()
        self.servers.remove(s)
        shutil.rmtree(s.dir, ignore_errors=True)

    def replica(self, kind: str, primary: MariaDB, end: tuple[str, int]) -> tuple[float, dict[str, int | None]]:
        replica = self.start("replica", 2, *REPLICA_ARGS[kind])
        try:
            replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
            server0 = _cpu_seconds(replica.pid)
            t0 = time.monotonic()
            replica.start_slave()
            replica.wait_slave_pos(*end, timeout=3600)
            seconds = time.monotonic() - t0
            self.server_cpu.setdefault(kind, []).append(_cpu_seconds(replica.pid) - server0)
            return seconds, replica.table_checksums(["bench"])
        finally:
            self.drop(replica)

    def applier(self, primary: MariaDB, end: tuple[str, int], profile: Path | None = None,
                extra: tuple[str, ...] = ()) -> tuple[float, dict[str, int | None]]:
        target = self.start("target", 3)
        log_path = self.base / "applier.log"
        prefix = [sys.executable, "-m", "benchmarks.apply_rows", "--profiled-applier", str(profile)] if profile \
            else [sys.executable, "-m", "binlogd.applier.cli"]
        admin = free_port()
        try:
            with open(log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [*prefix, f"--target=mysql://root@127.0.0.1:{target.port}",
                     f"--channel==mysql://root@127.0.0.1:{primary.port}", "--log-level=WARNING", "--no-start",
                     f"--admin-port={admin}", *extra],
                    cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
            conn = None
            while conn is None:
                try:
                    conn = pymysql.connect(host="127.0.0.1", port=admin, user="root")
                except pymysql.MySQLError:
                    if self.proc.poll() is not None:
                        raise RuntimeError("binlogd-apply exited: " + log_path.read_text()[-2000:]) from None
                    time.sleep(0.05)
            log_start = log_path.stat().st_size
            cpu0 = _cpu_seconds(self.proc.pid)
            server0 = _cpu_seconds(target.pid)
            t0 = time.monotonic()
            with conn.cursor() as cur:
                cur.execute("START SLAVE")
            conn.close()
            while True:
                try:  # the applier creates its schema on its first connection: database first, then table
                    rows = target.query("SELECT log_file, log_pos FROM binlogd_apply.channel_position "
                                        "WHERE channel=''")
                except pymysql.MySQLError:
                    rows = []
                if rows and (str(rows[0][0]), int(rows[0][1])) == end:
                    break
                if self.proc.poll() is not None:
                    raise RuntimeError("binlogd-apply exited: " + log_path.read_text()[-2000:])
                with open(log_path, "rb") as f:  # a channel that stopped never reaches the end: say why
                    f.seek(log_start)
                    new = f.read().decode(errors="replace")
                if "replication stopped" in new or "internal error" in new:
                    raise RuntimeError("binlogd-apply stopped: " + new[-2000:])
                time.sleep(0.02)
            seconds = time.monotonic() - t0
            self.cpu.append(_cpu_seconds(self.proc.pid) - cpu0)
            self.cpu_by_kind.setdefault(self.kind, []).append(self.cpu[-1])
            self.server_cpu.setdefault(self.kind, []).append(_cpu_seconds(target.pid) - server0)
            self.stop_applier()
            return seconds, target.table_checksums(["bench"])
        finally:
            self.stop_applier()
            self.drop(target)

    def stop_applier(self) -> None:
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)  # cProfile writes its file on a clean exit
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self) -> None:
        self.stop_applier()
        for s in reversed(self.servers):
            s.stop()


def _profiled_applier(out: str, argv: list[str]) -> int:
    """binlogd-apply under cProfile: the event loop's thread in `out`.loop, the channel's apply worker (its own
    thread, which `python -m cProfile` would not see) in `out`.worker."""
    import cProfile

    from binlogd.applier import apply, cli

    worker = cProfile.Profile()
    original = apply.TargetSession.apply_many

    def profiled(self: apply.TargetSession, groups: list[apply.Group]) -> tuple[int, apply.ApplyError | None]:
        worker.enable()
        try:
            return original(self, groups)
        finally:
            worker.disable()

    apply.TargetSession.apply_many = profiled  # type: ignore[method-assign]
    loop = cProfile.Profile()
    loop.enable()
    try:
        return cli.main(argv)
    finally:
        loop.disable()
        loop.dump_stats(out + ".loop")
        worker.dump_stats(out + ".worker")


def _print_profile(path: Path) -> None:
    import pstats

    for part in ("loop", "worker"):
        f = Path(f"{path}.{part}")
        if f.exists() and f.stat().st_size:
            console.print(f"[bold]profile: {part} thread[/bold]")
            pstats.Stats(str(f)).sort_stats("tottime").print_stats(14)


def main() -> int:
    if sys.argv[1:2] == ["--profiled-applier"]:
        return _profiled_applier(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1:10000,100:50000,1000:50000",
                    help="B:N pairs: rows per source transaction : rows inserted")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per applier and size (median reported)")
    ap.add_argument("--only", choices=KINDS, action="append", help="time only these appliers (repeatable)")
    ap.add_argument("--profile", action="store_true", help="one extra cProfile'd binlogd-apply run per size")
    ap.add_argument("--keep", action="store_true", help="keep the servers' directory")
    args = ap.parse_args()
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    kinds = args.only or list(KINDS)
    bench = Bench(Path(tempfile.mkdtemp(prefix="binlogd-bench-apply-", dir="/tmp")))
    results: list[dict[str, object]] = []
    same = True
    try:
        for batch, n in sizes:
            load_before = _load()
            with console.status(f"primary: writing the binlog ({batch} rows per transaction)"):
                primary = bench.start("primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", "--sync-binlog=0")
                total = _workload(primary, n, batch)
                end = primary.master_status()
            runs: dict[str, list[float]] = {k: [] for k in kinds}
            bench.cpu = []
            bench.cpu_by_kind = {}
            bench.server_cpu = {}
            reference: dict[str, int | None] | None = None
            for rep in range(args.repeat):
                for kind in kinds:
                    with console.status(f"batch {batch}: {kind}, run {rep + 1}/{args.repeat}"):
                        if kind in APPLIERS:
                            bench.kind = kind
                            secs, sums = bench.applier(primary, end, extra=APPLIERS[kind])
                        else:
                            secs, sums = bench.replica(kind, primary, end)
                    reference = reference or sums
                    if sums != reference:
                        console.print(f"[red]{kind} differs from the first copy[/red]")
                        same = False
                    runs[kind].append(secs)
                    console.print(f"batch {batch} {kind} run {rep + 1}: {secs:.2f} s, {total / secs:,.0f} rows/s")
            if args.profile:
                prof = bench.base / f"applier-{batch}.prof"
                bench.applier(primary, end, profile=prof)
                _print_profile(prof)
            bench.drop(primary)
            median = {k: statistics.median(v) for k, v in runs.items()}
            results.append({"batch": batch, "rows": total, "runs_seconds": runs,
                            "median_rows_per_s": {k: total / s for k, s in median.items()},
                            "applier_cpu_seconds": bench.cpu,
                            "applier_cpu_us_per_row": {k: statistics.median(v) / total * 1e6
                                                       for k, v in bench.cpu_by_kind.items()},
                            "server_cpu_us_per_row": {k: statistics.median(v) / total * 1e6
                                                      for k, v in bench.server_cpu.items()},
                            "load_before": load_before, "load_after": _load()})

        table = Table(title=f"row changes applied per second (median of {args.repeat})")
        appliers = [k for k in kinds if k in APPLIERS]
        ratio_cols = [(a, k) for a in appliers for k in ("replica p0", "replica p4") if k in kinds]
        for col in ("rows/txn", "row changes", *kinds, *(f"{a.replace('binlogd-', '')} ÷ {k.replace('replica ', '')}"
                                                         for a, k in ratio_cols),
                    *(f"{a.replace('binlogd-', '')} CPU µs/row" for a in appliers),
                    *(f"{k.replace('binlogd-apply', 'target')} mariadbd µs/row" for k in kinds), "load before→after"):
            table.add_column(col, justify="right")
        for r in results:
            rps: dict[str, float] = r["median_rows_per_s"]  # type: ignore[assignment]
            cpu: dict[str, float] = r["applier_cpu_us_per_row"]  # type: ignore[assignment]
            server: dict[str, float] = r["server_cpu_us_per_row"]  # type: ignore[assignment]
            table.add_row(str(r["batch"]), f"{r['rows']:,}", *(f"{rps[k]:,.0f}" for k in kinds),
                          *(f"{rps[a] / rps[k]:.2f}x" for a, k in ratio_cols),
                          *(f"{cpu[a]:.0f}" if a in cpu else "-" for a in appliers),
                          *(f"{server[k]:.0f}" if k in server else "-" for k in kinds),
                          f"{r['load_before']}→{r['load_after']}")
        console.print(table)
        console.print(f"identical tables everywhere: {same}")
        out = REPO_ROOT / "benchmarks" / "results" / f"apply_rows-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"results": results, "identical": same, "repeat": args.repeat,
                                   "machine": platform.platform(), "cpus": os.cpu_count()}, indent=2))
        console.print(f"results: {out.relative_to(REPO_ROOT)}")
        return 0 if same else 1
    finally:
        bench.close()
        if not args.keep:
            shutil.rmtree(bench.base, ignore_errors=True)
        else:
            console.print(f"kept {bench.base}")


if __name__ == "__main__":
    sys.exit(main())
