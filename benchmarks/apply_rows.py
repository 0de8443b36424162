"""Rows applied per second: binlogd-apply vs a real MariaDB 10.11 replica applying the same ROW binlog.

Run from the repository root (see benchmarks/README.md)::

    python -m benchmarks.apply_rows [--rows N] [--batch B] [--keep]

1. A real MariaDB primary (ROW format) writes a binlog: N rows inserted by `INSERT ... SELECT FROM seq` in
   transactions of B rows, then N/10 rows updated and N/20 deleted, also in transactions of B rows (every
   changed row is one row image, so "rows" = N + N/10 + N/20).
2. A fresh real replica (CHANGE MASTER ... MASTER_USE_GTID=slave_pos) is started; the clock runs from START SLAVE
   until SHOW SLAVE STATUS says everything is read and executed.
3. A fresh target and `binlogd-apply --channel =<primary>`; the clock runs from the process start (Python
   start-up included) until binlogd_apply.channel_position holds the primary's end position.
4. rows/s for both and the ratio binlogd-apply / MariaDB; JSON in benchmarks/results/apply_rows-<timestamp>.json.

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks import REPO_ROOT
from binlogd.testing import HarnessError, MariaDB

console = Console()


def _workload(primary: MariaDB, rows: int, batch: int) -> int:
    primary.execute("CREATE DATABASE bench; USE bench; CREATE TABLE bench.t (id INT PRIMARY KEY, a INT,"
                    " b VARCHAR(64), c DOUBLE, d DATETIME(6), e DECIMAL(12,2)) ENGINE=InnoDB")
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        primary.execute(f"USE bench; INSERT INTO t SELECT seq, seq % 1000, CONCAT('row ', seq), seq / 7,"
                        f" '2024-01-01 00:00:00' + INTERVAL seq SECOND, seq / 100 FROM seq_{start + 1}_to_{start + n}")
    updates, deletes = rows // 10, rows // 20
    for start in range(0, updates, batch):
        primary.execute(f"UPDATE bench.t SET a = a + 1, b = CONCAT(b, ' u') WHERE id > {start} AND id <= "
                        f"{min(start + batch, updates)}")
    for start in range(0, deletes, batch):
        lo = rows - deletes + start
        primary.execute(f"DELETE FROM bench.t WHERE id > {lo} AND id <= {min(lo + batch, rows)}")
    return rows + updates + deletes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000, help="rows inserted (default 200000)")
    ap.add_argument("--batch", type=int, default=1000, help="rows per source transaction (default 1000)")
    ap.add_argument("--keep", action="store_true", help="keep the servers' directory")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="binlogd-bench-apply-", dir="/tmp"))
    template = base / "_template"
    servers: list[MariaDB] = []
    proc: subprocess.Popen[bytes] | None = None

    def start(name: str, sid: int, *extra: str) -> MariaDB:
        for attempt in range(3):  # mariadb-install-db of the template can trip over other runs' /tmp files
            try:
                s = MariaDB.start(base, name, sid, *extra, template_dir=template)
                break
            except HarnessError:
                if attempt == 2:
                    raise
        servers.append(s)
        return s

    try:
        with console.status("primary: writing the binlog"):
            primary = start("primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", "--sync-binlog=0")
            t0 = time.monotonic()
            total_rows = _workload(primary, args.rows, args.batch)
            end = primary.master_status()
            gen_s = time.monotonic() - t0
        console.print(f"binlog: {total_rows} row changes, ends at {end[0]}:{end[1]} ({gen_s:.1f} s to write)")

        with console.status("real MariaDB replica applying"):
            replica = start("replica", 2)
            replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
            t0 = time.monotonic()
            replica.start_slave()
            replica.wait_slave_pos(*end, timeout=3600)
            mariadb_s = time.monotonic() - t0

        with console.status("binlogd-apply applying"):
            target = start("target", 3)
            log = open(base / "applier.log", "ab")  # noqa: SIM115 - closed in finally
            t0 = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, "-m", "binlogd.applier.cli", f"--target=mysql://root@127.0.0.1:{target.port}",
                 f"--channel==mysql://root@127.0.0.1:{primary.port}", "--log-level=WARNING"],
                cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
            while True:
                rows = target.query("SELECT log_file, log_pos FROM binlogd_apply.channel_position WHERE channel=''") \
                    if target.query("SHOW DATABASES LIKE 'binlogd_apply'") else []
                if rows and (str(rows[0][0]), int(rows[0][1])) == end:
                    break
                if proc.poll() is not None:
                    raise RuntimeError("binlogd-apply exited: " + (base / "applier.log").read_text()[-2000:])
                time.sleep(0.05)
            apply_s = time.monotonic() - t0
            log.close()
        same = target.table_checksums(["bench"]) == replica.table_checksums(["bench"])
        if not same:
            console.print("[red]target and replica differ[/red]")

        table = Table(title=f"rows applied per second ({total_rows} row changes, batch {args.batch})")
        for col in ("applier", "seconds", "rows/s"):
            table.add_column(col, justify="right")
        table.add_row("MariaDB 10.11 replica", f"{mariadb_s:.2f}", f"{total_rows / mariadb_s:,.0f}")
        table.add_row("binlogd-apply", f"{apply_s:.2f}", f"{total_rows / apply_s:,.0f}")
        console.print(table)
        ratio = mariadb_s / apply_s
        console.print(f"ratio binlogd-apply / MariaDB: [bold]{ratio:.2f}x[/bold]  (identical tables: {same})")
        out = REPO_ROOT / "benchmarks" / "results" / f"apply_rows-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({
            "rows": total_rows, "batch": args.batch, "binlog_end": end, "mariadb_seconds": mariadb_s,
            "applier_seconds": apply_s, "mariadb_rows_per_s": total_rows / mariadb_s,
            "applier_rows_per_s": total_rows / apply_s, "ratio": ratio, "identical": same,
            "machine": platform.platform(), "cpus": os.cpu_count(),
        }, indent=2))
        console.print(f"results: {out.relative_to(REPO_ROOT)}")
        return 0 if same else 1
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for s in reversed(servers):
            s.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            console.print(f"kept {base}")


if __name__ == "__main__":
    sys.exit(main())
