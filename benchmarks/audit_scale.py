"""Audit scale: `binlogd-audit` over N binlog events (default 10 million) and their real ledger, 1 vs 2 cores.

1. Writes a binlog directory of N events: the MariaDB 10.11 oracle's transactions (ROW + annotate, DDL, user
   variables, groups under skip_replication) repeated with fresh GTIDs, positions and CRCs, files of ~100 MB.
2. Serves it with binlogd (`--ledger`) and drains three replicas' non-blocking dumps through it (capability 4;
   capability 4 + skip_replication; capability 4 asking for ANNOTATE_ROWS, MariaDB 10.11's default replica), so
   the ledger is binlogd's own.
3. Runs `binlogd-audit` (a fresh JVM each) with `--master local[1]` and `local[2]`: wall time, events/s, speed-up,
   beside `mariadb-binlog --base64-output=decode-rows -v` decoding the same files to text (the ratio); the machine's
   load average is printed beside each figure (the project machine is shared).
The audit's CPU seconds (its whole process tree: driver, JVM, Python workers, sampled from /proc) are printed beside
its wall time: on a shared machine the CPU figure is the one that compares across runs.
`--decode-only`: the binlog data source's decoder alone on one core (events/s), no Spark, no ledger.
`--tree DIR`: audit with another checkout's spark_analytics/ too (e.g. `git archive main`), each master run with
this tree and then that one, on the same inputs: before/after side by side on a shared machine.
`--reuse`: keep the binlogs and ledger of an earlier `--keep` run in `--work` (same `--events`), skip steps 1-2.

    .venv/bin/python -m benchmarks.audit_scale [--events 10000000] [--work DIR] [--keep] [--reuse] [--tree DIR]
                                               [--decode-only]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pymysql

REPO = Path(__file__).resolve().parents[1]
ORACLE = Path(os.environ.get("BINLOGD_ORACLE_DIR") or REPO / "tests" / "data" / "oracle" / "dump")
_HDR = struct.Struct("<IBIIIH")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
FILE_EVENTS = 1_800_000


def _events(data: bytes, start: int, stop: int) -> list[bytes]:
    out, p = [], start
    while p < stop:
        length = _HDR.unpack_from(data, p)[3]
        out.append(data[p : p + length])
        p += length
    return out


def write_binlogs(out: Path, n_events: int) -> tuple[list[str], int]:
    """N events in files of ~FILE_EVENTS, patched copies of the oracle's first file (header + transactions)."""
    src = (ORACLE / "mysql-bin.000001").read_bytes()
    header = _events(src, 4, 328)  # FDE, GTID_LIST, BINLOG_CHECKPOINT
    cycle = _events(src, 328, 3246)  # 12 transactions, 4 of them under skip_replication
    rotate_tpl = _events(src, 3246, len(src))[0]
    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    seq = 0
    written = 0
    fileno = 0
    while written < n_events:
        fileno += 1
        name = f"mysql-bin.{fileno:06d}"
        names.append(name)
        buf = bytearray(b"\xfebin")
        for ev in header:
            buf += ev
        in_file = len(header)
        written += len(header)
        last_file = False
        while in_file < FILE_EVENTS and written < n_events - 1:
            for ev in cycle:
                pos = len(buf)
                buf += ev
                _U32.pack_into(buf, pos + 13, pos + len(ev))
                if ev[4] == 162:  # GTID: a fresh seq_no
                    seq += 1
                    _U64.pack_into(buf, pos + 19, seq)
                buf[-4:] = _U32.pack(zlib.crc32(memoryview(buf)[pos : len(buf) - 4]))
            in_file += len(cycle)
            written += len(cycle)
        if written >= n_events - 1:
            last_file = True
        if not last_file:
            nxt = f"mysql-bin.{fileno + 1:06d}".encode()
            body = _U64.pack(4) + nxt
            pos = len(buf)
            ev = bytearray(rotate_tpl[:19]) + body + b"\0\0\0\0"
            _U32.pack_into(ev, 9, len(ev))
            _U32.pack_into(ev, 13, pos + len(ev))
            ev[-4:] = _U32.pack(zlib.crc32(ev[:-4]))
            buf += ev
            written += 1
        (out / name).write_bytes(buf)
        if last_file:
            break
    (out / "mysql-bin.index").write_text("".join(f"./{n}\n" for n in names))
    return names, written


def drain_dump(host: str, port: int, statements: list[str], server_id: int, file: str, flags: int = 1
               ) -> tuple[int, int]:
    """A COM_BINLOG_DUMP read to its EOF packet (`flags` 1: non-blocking; | 2: send ANNOTATE_ROWS), bytes
    discarded: (events, bytes)."""
    conn = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
        sock: socket.socket = conn._sock  # type: ignore[attr-defined]
        payload = struct.pack("<BIHI", 0x12, 4, flags, server_id) + file.encode()
        sock.sendall(struct.pack("<I", len(payload)) + payload)
        buf = bytearray()
        events = total = 0
        p = 0
        while True:
            chunk = sock.recv(4 << 20)
            if not chunk:
                raise ConnectionError("binlogd closed the dump before its EOF")
            buf += chunk
            total += len(chunk)
            n = len(buf)
            while n - p >= 4:
                w = int.from_bytes(buf[p : p + 3], "little")
                if n - p - 4 < w:
                    break
                first = buf[p + 4]
                if first == 0xFF:
                    raise RuntimeError(f"dump error: {bytes(buf[p + 4 : p + 4 + w])!r}")
                if first == 0xFE and w < 9:
                    return events, total
                events += 1
                p += 4 + w
            del buf[:p]
            p = 0
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def make_ledger(binlogs: Path, ledger: Path, first: str) -> dict[str, float]:
    from binlogd.testing import Binlogd

    log = ledger.parent / "binlogd.log"
    srv = Binlogd.start(["--binlog-dir", str(binlogs), "--server-id", "100", "--ledger", str(ledger)], None,
                        log_path=log)
    out: dict[str, float] = {}
    try:
        for sid, stmts, flags in ((21, ["SET @mariadb_slave_capability=4"], 1),
                                  (22, ["SET @mariadb_slave_capability=4", "SET skip_replication=1"], 1),
                                  (23, ["SET @mariadb_slave_capability=4"], 1 | 2)):
            t = time.monotonic()
            ev, by = drain_dump(srv.host, srv.port, ["SET @master_binlog_checksum=@@global.binlog_checksum", *stmts],
                                sid, first, flags)
            out[f"dump server_id {sid}"] = round(time.monotonic() - t, 1)
            print(f"  dump server_id {sid}: {ev:,} events, {by / 1e6:.0f} MB in {out[f'dump server_id {sid}']} s",
                  flush=True)
    finally:
        srv.stop()
    return out


_TCK = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds of the process itself) from /proc (not its reaped children: the tree walk counts
    them while they live; reuse keeps the Python workers alive)."""
    out: dict[int, tuple[int, float]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            f = st[st.rfind(")") + 2 :].split()
            out[int(d)] = (int(f[1]), sum(int(x) for x in f[11:13]) / _TCK)
    return out


def _tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record the CPU seconds of `root` and its descendants (the JVM, Python workers) as last seen."""
    table = _proc_table()
    todo = [root]
    while todo:
        p = todo.pop()
        if p in table:
            seen[p] = max(seen.get(p, 0.0), table[p][1])
            todo += [q for q, (pp, _) in table.items() if pp == p]


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that makes `binlogd.*` import from another checkout `tree` (its binlogd/ package is given
    links to the tree's folders, as the editable install maps them for this one)."""
    pkg = tree / "binlogd"
    for d in ("protocol", "server", "applier", "spark_analytics"):
        if not (pkg / d).exists():
            (pkg / d).symlink_to(Path("..") / d)
    return {**os.environ, "PYTHONPATH": str(tree)}


def run_audit(binlogs: Path, ledger: Path, out: Path, master: str, tree: Path | None = None, pin: bool = False
              ) -> tuple[float, float, int, dict]:
    """(wall s, CPU s of the whole process tree: the figure that survives a loaded machine, exit code, summary);
    `tree`: another checkout's audit code; `pin`: a `local[N]` audit runs on N cores only (`taskset`)."""
    cmd = [sys.executable, "-m", "binlogd.spark_analytics.cli", "--binlog-dir", str(binlogs), "--ledger", str(ledger),
           "--out", str(out), "--master", master, "--quiet", "--driver-memory", "6g"]
    if pin:
        from binlogd.spark_analytics.session import master_cores

        cmd = ["taskset", "-c", f"0-{master_cores(master) - 1}", *cmd]
    t = time.monotonic()
    seen: dict[int, float] = {}
    with subprocess.Popen(cmd, cwd=tree or REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=tree_env(tree) if tree else None) as p:
        pid = p.pid
        while p.poll() is None:
            _tree_cpu(pid, seen)
            time.sleep(0.5)
        output = p.stdout.read().decode(errors="replace") if p.stdout else ""
    wall = time.monotonic() - t
    if p.returncode == 2:
        raise SystemExit(f"audit failed:\n{output[-6000:]}")
    return wall, sum(seen.values()), p.returncode, json.loads((out / "summary.json").read_text())


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def mariadb_binlog(binlogs: Path, names: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of `mariadb-binlog --base64-output=decode-rows -v` over the files, output discarded."""
    import resource

    t = time.monotonic()
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["mariadb-binlog", "--base64-output=decode-rows", "-v", *(str(binlogs / n) for n in names)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    c2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic() - t, c2.ru_utime + c2.ru_stime - c.ru_utime - c.ru_stime


def decode_only(binlogs: Path, names: list[str]) -> None:
    """The data source's decoder over every file in this process (one core): events/s."""
    from binlogd.spark_analytics.binlog_source import iter_file_batches

    t, c = time.monotonic(), time.process_time()
    n = 0
    for i, name in enumerate(names):
        for b in iter_file_batches(binlogs / name, i, statements=False):
            n += b.num_rows
    wall, cpu = time.monotonic() - t, time.process_time() - c
    print(f"decoder: {n:,} events in {wall:.1f} s wall, {cpu:.1f} s CPU = {n / cpu / 1e6:.2f} M events per "
          f"CPU-second ({load()})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000, help="binlog events to generate (default 10 million)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/binlogd-audit-bench"), help="scratch directory")
    ap.add_argument("--masters", default="local[1],local[2]", help="Spark masters to compare")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--reuse", action="store_true", help="audit the binlogs and ledger a --keep run left in --work")
    ap.add_argument("--tree", type=Path, default=None, help="another checkout: its audit beside this one's")
    ap.add_argument("--pin", action="store_true",
                    help="run each local[N] audit on N cores only (taskset): local[1] of a 2-core machine otherwise "
                    "has the second core for the JIT compiler, GC and driver, and the speed-up measures less than "
                    "what a second core gives")
    ap.add_argument("--decode-only", action="store_true", help="only time the data source's decoder (no Spark)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    binlogs, ledger = args.work / "binlogs", args.work / "ledger"
    if args.reuse:
        from binlogd.spark_analytics.binlog_source import list_files

        names, n = [p.name for p in list_files(binlogs)], 0  # events: counted by the audit (summary)
    else:
        shutil.rmtree(args.work, ignore_errors=True)
        names, n = write_binlogs(binlogs, args.events)
    size = sum((binlogs / f).stat().st_size for f in names)
    counted = f"{n:,} events" if not args.reuse else "reused (events: each audit's summary counts them)"
    print(f"binlogs: {counted}, {len(names)} files, {size / 1e6:.0f} MB", flush=True)
    if args.decode_only:
        decode_only(binlogs, names)
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
        return 0
    mb, mb_cpu = mariadb_binlog(binlogs, names)
    print(f"mariadb-binlog --base64-output=decode-rows -v: {mb:.1f} s wall, {mb_cpu:.1f} s CPU ({load()})",
          flush=True)
    if not args.reuse:
        make_ledger(binlogs, ledger, names[0])
    lsize = sum(p.stat().st_size for p in ledger.glob("*.jsonl"))
    print(f"ledger: {lsize / 1e6:.0f} MB", flush=True)
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.tree:
        trees.append((str(args.tree), args.tree.resolve()))
    results: dict[tuple[str, str], tuple[float, float]] = {}
    for master in args.masters.split(","):
        for label, tree in trees:
            out = args.work / f"out-{master}-{len(results)}"
            wall, cpu, rc, summary = run_audit(binlogs, ledger, out, master, tree, args.pin)
            n = summary["binlog"]["events"]
            results[(label, master)] = (wall, cpu)
            pinned = " pinned" if args.pin else ""
            print(f"{label} {master}{pinned}: {wall:.1f} s wall, {cpu:.1f} s CPU, {n / wall:,.0f} binlog events/s, "
                  f"exit {rc}, "
                  f"{summary['ledger']['records']:,} ledger records, consistent={summary['consistent']}, "
                  f"{wall / mb:.1f}x mariadb-binlog's wall time, {cpu / max(mb_cpu, 0.01):.1f}x its CPU time "
                  f"({load()})", flush=True)
            print(f"  steps: {summary['step_seconds']}", flush=True)
    masters = args.masters.split(",")
    for label, _ in trees:
        if len(masters) == 2 and all((label, m) in results for m in masters):
            (a, ac), (b, bc) = results[(label, masters[0])], results[(label, masters[1])]
            print(f"{label}: speed-up {masters[0]} -> {masters[1]}: {a / b:.2f}x wall (CPU {ac:.0f} -> {bc:.0f} s)")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
