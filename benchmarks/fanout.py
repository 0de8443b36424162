"""Fan-out memory (issue 12): N concurrent dumps of mixed settings, binlogd beside a real MariaDB 10.11.

One command: ``.venv/bin/python -m benchmarks.fanout [--dumps 200] [--stall 30] [--binlogd-tree DIR]``.

A real MariaDB (``--binlog-format=ROW --binlog-annotate-row-events=ON``) writes about 6 MB of binlog (4 KB rows,
every fourth transaction flagged skip_replication) and serves it; binlogd (``--compat mariadb``) serves copies of
the same files; with ``--binlogd-tree`` a binlogd running another source tree (e.g. ``git archive`` of the commit
before a change) is measured in the same run. For each server: VmRSS before, the streams each setting gets alone,
then N dumps at once (settings: capability 4; 4 + skip_replication; 0 + skip; 2 with annotate) with VmRSS/RssAnon
sampled every 20 ms; growth per connection = (peak - before) / N; the server's CPU seconds (user + system)
during them (less disturbed by the shared machine's load than wall). Then one reader that reads nothing for
``--stall`` seconds while waves of 20 dumps stream: the waves' wall beside it against alone, RSS growth, and
whether the stalled reader then got its whole stream. Every stream is compared with what the same settings got
alone and with MariaDB's. Load averages (``uptime``) are printed beside each figure: the machine is shared.

The N dumps are read by ``--reader-procs`` processes (default 4), each with its share of the sessions opened before
the clock starts and a lean reader (big receives, the whole chunk hashed, packet headers walked for the end): the
wall measures the server, not one Python process reading 200 sockets (``--reader-procs 0``: the old single-process
asyncio reader of tests/test_fanout.py, for comparison).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import pymysql

from binlogd.testing import Binlogd
from binlogd.testing.mariadb import MariaDB
from tests.test_fanout import ROW_BYTES, ROWS, SETTINGS, Stream, _dump_cmd, _open_sessions, _PeakRss, _stream

REPO_ROOT = Path(__file__).resolve().parent.parent
WAVE = 20
RECV = 256 << 10  # bytes per receive of the lean reader


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _stat_cpu(stat: Path) -> float:
    """User + system CPU seconds of a /proc `stat` file (a process's or one of its threads')."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time (a figure the shared machine's load disturbs less than wall)."""
    return _stat_cpu(Path(f"/proc/{pid}/stat"))


def _thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds per thread of `pid` (threads gone since are missing: their time is in the process's total)."""
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = _stat_cpu(task / "stat")
        except OSError:
            continue
    return out


def _syscw(pid: int) -> int:
    """Write syscalls of the whole process so far (every thread's, the dead ones' too)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    return 0


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


@dataclass
class Result:
    server: str
    per_conn_kib: float
    anon_per_conn_kib: float
    wall: float
    cpu: float
    same_as_alone: bool
    peak_cores: float  # the most CPU the server used in any 100 ms window, in cores (> 1: both cores at once)
    top_thread: float  # the busiest thread's share of the server's CPU (1.0: everything on one thread)
    digests: list[str]
    load: str
    # write()/writev() syscalls during the N dumps (/proc/PID/io syscw: the kernel does not count send()/sendmsg(),
    # which MariaDB and binlogd's sender thread use, so the column is the loop's writes; "-" for MariaDB)
    writes: int = 0
    bytes: int = 0  # what the N dumps were sent (their streams' sizes)
    stall_free: float = 0.0
    stall_busy: float = 0.0
    stall_growth_kib: int = 0
    stall_ok: bool = False
    stall_end: str = ""
    stall_load: str = ""


def _write_binlog(primary: MariaDB, rows: int) -> None:
    conn = pymysql.connect(host=primary.host, port=primary.port, user="root", password="", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE f")
            cur.execute("CREATE TABLE f.t (id INT PRIMARY KEY, b BLOB)")
            for i in range(rows):
                if i % 4 == 0:
                    cur.execute("SET skip_replication=1")
                cur.execute("INSERT INTO f.t VALUES (%s, %s)", (i, "x" * ROW_BYTES))
                if i % 4 == 0:
                    cur.execute("SET skip_replication=0")
            cur.execute("FLUSH BINARY LOGS")
            # MariaDB writes the new file's BINLOG_CHECKPOINT a moment later: copies taken before it miss the
            # event MariaDB then sends (the streams would differ by it)
            cur.execute("SHOW MASTER STATUS")
            active = cur.fetchone()[0]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                cur.execute(f"SHOW BINLOG EVENTS IN '{active}'")
                if any(r[2] == "Binlog_checkpoint" and active in r[5] for r in cur.fetchall()):
                    break
                time.sleep(0.1)
            else:
                raise SystemExit(f"no Binlog_checkpoint in {active} after 30 s")
    finally:
        conn.close()


async def _alone(host: str, port: int) -> list[Stream]:
    out = []
    for i, (stmts, flags) in enumerate(SETTINGS):
        conn = await asyncio.to_thread(pymysql.connect, host=host, port=port, user="root", password="",
                                       autocommit=True)
        with conn.cursor() as cur:
            for s in stmts:
                await asyncio.to_thread(cur.execute, s)
        out.append(await _stream(conn, _dump_cmd(flags, 500 + i)))
    return out


async def _lean_stream(conn: pymysql.Connection, cmd: bytes) -> tuple[str, str]:
    """(digest, end) of a dump at a fraction of tests/test_fanout.py's `_stream` CPU: every received chunk is
    checksummed whole (CRC-32 and the size: 3.7 GB/s here, where SHA-256 does 1.6 and 200 readers of 12 MB spent
    more of the two cores on it than either server spent serving) and only the packet headers are walked, to see
    the EOF/ERR that ends it. Compared with the same digest of each setting's stream read alone (`_lean_alone`)."""
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, cmd)
    crc, size = 0, 0
    buf = bytearray(RECV)
    mv = memoryview(buf)
    skip = 0  # payload bytes of the current packet still to come
    carry = b""  # the start of a packet whose first 5 bytes did not all arrive yet
    try:
        while True:
            n = await loop.sock_recv_into(sock, buf)
            if n == 0:
                return f"{crc:08x}/{size}", "closed"
            crc = zlib.crc32(mv[:n], crc)
            size += n
            k = min(skip, n)
            skip -= k
            data: bytes | memoryview = mv[k:n] if not carry else carry + bytes(mv[k:n])
            carry = b""
            i, m = 0, len(data)
            while m - i >= 5:
                w = data[i] | data[i + 1] << 8 | data[i + 2] << 16
                first = data[i + 4]
                if first == 0xFF or (first == 0xFE and w < 9):
                    return f"{crc:08x}/{size}", "ERR" if first == 0xFF else "EOF"
                i += 4 + w
            if i > m:
                skip = i - m
            elif i < m:
                carry = bytes(data[i:m])
    except ConnectionResetError:
        return f"{crc:08x}/{size}", "reset"
    finally:
        sock.close()


async def _lean_alone(host: str, port: int) -> list[tuple[str, str]]:
    """`_lean_stream`'s (digest, end) of each setting's dump, one at a time."""
    out = []
    for k, (_, flags) in enumerate(SETTINGS):
        (conn,) = await _open_sessions(host, port, [k])
        out.append(await _lean_stream(conn, _dump_cmd(flags, 600 + k)))
    return out


def _reader_proc(host: str, port: int, jobs: list[tuple[int, int]], pipe: Connection) -> None:
    """One reader process: open the sessions of `jobs` (setting index, server_id), say ready, stream on "go"."""
    async def run() -> None:
        conns = await _open_sessions(host, port, [k for k, _ in jobs])
        pipe.send("ready")
        await asyncio.to_thread(pipe.recv)
        got = await asyncio.gather(*(_lean_stream(c, _dump_cmd(SETTINGS[k][1], sid))
                                     for c, (k, sid) in zip(conns, jobs, strict=True)))
        pipe.send(got)

    asyncio.run(run())


async def _dumps_in_processes(host: str, port: int, kinds: list[int], procs: int,
                              started: asyncio.Event) -> list[tuple[str, str]]:
    """The dumps read by `procs` processes (sessions opened before `started` is set), in the order of `kinds`."""
    ctx = multiprocessing.get_context("spawn")
    shares = [[(kinds[i], 1000 + i) for i in range(j, len(kinds), procs)] for j in range(procs)]
    pipes, workers = [], []
    for share in shares:
        mine, theirs = ctx.Pipe()
        w = ctx.Process(target=_reader_proc, args=(host, port, share, theirs), daemon=True)
        w.start()
        pipes.append(mine)
        workers.append(w)
    try:
        for p in pipes:
            if await asyncio.to_thread(p.recv) != "ready":
                raise SystemExit("a reader process failed to open its sessions")
        started.set()
        for p in pipes:
            p.send("go")
        results = [await asyncio.to_thread(p.recv) for p in pipes]
    finally:
        for w in workers:
            w.join(5)
            if w.is_alive():
                w.kill()
    got: list[tuple[str, str]] = [("", "")] * len(kinds)
    for j, res in enumerate(results):
        for n, g in enumerate(res):
            got[j + n * procs] = g
    return got


async def _measure(name: str, host: str, port: int, pid: int, dumps: int, stall: float, procs: int,
                   profile: tuple[str, Path] | None = None) -> Result:
    base, base_anon = _status_kib(pid, "VmRSS"), _status_kib(pid, "RssAnon")
    alone = await _alone(host, port)
    expect = await _lean_alone(host, port) if procs > 0 else [(a.digest, a.end) for a in alone]
    kinds = [i % len(SETTINGS) for i in range(dumps)]
    started = asyncio.Event()
    if procs > 0:
        task = asyncio.ensure_future(_dumps_in_processes(host, port, kinds, procs, started))
        await started.wait()
    else:
        conns = await _open_sessions(host, port, kinds)
    load = _load()
    t0, cpu0, threads0, syscw0 = time.monotonic(), _cpu_seconds(pid), _thread_cpu(pid), _syscw(pid)
    peak_anon = base_anon
    window: list[tuple[float, float]] = [(t0, cpu0)]  # (time, CPU s) samples of the last 100 ms
    peak_cores = 0.0
    perf = _profile_start(*profile, name, pid) if profile is not None and name != "mariadb" else None
    with _PeakRss(pid) as rss:
        if procs <= 0:
            task = asyncio.gather(*(_stream(c, _dump_cmd(SETTINGS[k][1], 1000 + n))
                                    for n, (c, k) in enumerate(zip(conns, kinds, strict=True))))
        while not task.done():
            peak_anon = max(peak_anon, _status_kib(pid, "RssAnon"))
            window.append((time.monotonic(), _cpu_seconds(pid)))
            while len(window) > 2 and window[-1][0] - window[1][0] >= 0.1:  # window[0]: newest >= 100 ms back
                window.pop(0)
            if window[-1][0] - window[0][0] >= 0.1:
                peak_cores = max(peak_cores, (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]))
            await asyncio.sleep(0.02)
        got = [(g.digest, g.end) if isinstance(g, Stream) else g for g in await task]
    wall, cpu = time.monotonic() - t0, _cpu_seconds(pid) - cpu0
    threads1, writes = _thread_cpu(pid), _syscw(pid) - syscw0
    top = max((t - threads0.get(tid, 0.0) for tid, t in threads1.items()), default=0.0)
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    # (the lean digests of the settings alone end as their full reads did, with the same size: "crc/size")
    same = all(g == expect[k] for g, k in zip(got, kinds, strict=True)) and (
        procs <= 0 or all(e[0].endswith(f"/{a.size}") and e[1] == a.end for e, a in zip(expect, alone, strict=True)))
    res = Result(name, (rss.peak - base) / dumps, (peak_anon - base_anon) / dumps, wall, cpu, same,
                 peak_cores, top / cpu if cpu > 0 else 0.0, [a.digest for a in alone], load, writes,
                 sum(alone[k].size for k in kinds))
    if stall > 0:
        await _stall(res, host, port, pid, stall, alone[0])
    return res


def _profile_start(tool: str, out: Path, name: str, pid: int) -> subprocess.Popen[bytes]:
    """A profiler on the server for the N dumps only (not the sessions' set-up nor the streams alone): `perf record
    -g` (native frames and the kernel: `perf report -i DIR/NAME.perf.data --no-children`) or py-spy (Python lines:
    DIR/NAME.py-spy.txt, raw collapsed stacks)."""
    out.mkdir(parents=True, exist_ok=True)
    if tool == "perf":
        cmd = ["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o", str(out / f"{name}.perf.data")]
    else:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        cmd = [spy, "record", "-r", "250", "-f", "raw", "--nonblocking", "-p", str(pid), "-o",
               str(out / f"{name}.py-spy.txt")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # the profiler attaches
    return proc


async def _wave(host: str, port: int, base_id: int, want: Stream) -> float:
    conns = await _open_sessions(host, port, [0] * WAVE)
    t0 = time.monotonic()
    got = await asyncio.gather(*(_stream(c, _dump_cmd(SETTINGS[0][1], base_id + n)) for n, c in enumerate(conns)))
    if any(g.digest != want.digest for g in got):
        raise SystemExit("a wave's stream differs from the same settings alone")
    return time.monotonic() - t0


async def _stall(res: Result, host: str, port: int, pid: int, stall: float, want: Stream) -> None:
    res.stall_free = await _wave(host, port, 2000, want)
    base = _status_kib(pid, "VmRSS")
    conn = (await _open_sessions(host, port, [0]))[0]
    conn._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # type: ignore[attr-defined]
    started = asyncio.Event()

    async def hold() -> None:
        started.set()
        await asyncio.sleep(stall)

    res.stall_load = _load()
    with _PeakRss(pid) as rss:
        slow = asyncio.create_task(_stream(conn, _dump_cmd(SETTINGS[0][1], 3000), hold))
        await started.wait()
        t0 = time.monotonic()
        waves, i = [], 0
        while not slow.done() and time.monotonic() - t0 < stall:
            waves.append(await _wave(host, port, 3100 + 100 * i, want))
            i += 1
        got = await slow
    res.stall_busy = sum(waves) / max(1, len(waves))
    res.stall_growth_kib = rss.peak - base
    res.stall_ok = (got.digest, got.end) == (want.digest, want.end)
    res.stall_end = got.end


def _table(results: list[Result], dumps: int, stall: float) -> None:
    maria = next((r for r in results if r.server == "mariadb"), None)
    print(f"\n{dumps} concurrent dumps (4 settings mixed), {ROWS} rows of {ROW_BYTES} B:")
    print(f"{'server':<14}{'KiB/conn RSS':>14}{'RssAnon':>10}{'wall s':>8}{'wall ÷ MariaDB':>16}{'CPU s':>7}"
          f"{'peak cores':>11}{'top thread':>11}{'writes':>8}{'KiB/write':>10}{'same as alone':>15}"
          f"{'load 1/5/15':>16}")
    for r in results:
        ratio = f"{maria.wall / r.wall:.2f}x" if maria else "-"
        writes, per_write = ("-", "-") if r is maria else (str(r.writes), f"{r.bytes / max(1, r.writes) / 1024:.0f}")
        print(f"{r.server:<14}{r.per_conn_kib:>14.0f}{r.anon_per_conn_kib:>10.0f}{r.wall:>8.2f}{ratio:>16}"
              f"{r.cpu:>7.2f}{r.peak_cores:>11.2f}{r.top_thread:>11.0%}"
              f"{writes:>8}{per_write:>10}{'yes' if r.same_as_alone else 'NO':>15}{r.load:>16}")
    if maria:
        for r in results:
            if r is not maria:
                print(f"{r.server}: RSS per connection {r.per_conn_kib / max(1.0, maria.per_conn_kib):.1f}x "
                      f"MariaDB's; streams {'identical to' if r.digests == maria.digests else 'DIFFERENT from'} "
                      f"MariaDB's")
    if stall > 0:
        print(f"\none reader stalled {stall:.0f} s while waves of {WAVE} dumps stream:")
        print(f"{'server':<14}{'wave alone s':>13}{'beside it s':>12}{'RSS growth KiB':>16}{'resumed ok':>12}"
              f"{'load 1/5/15':>16}")
        for r in results:
            ok = "yes" if r.stall_ok else f"NO ({r.stall_end})"
            print(f"{r.server:<14}{r.stall_free:>13.2f}{r.stall_busy:>12.2f}{r.stall_growth_kib:>16}{ok:>12}"
                  f"{r.stall_load:>16}")


def _medians(rounds: list[list[Result]]) -> None:
    """Per server over the rounds: the median wall, its ratio to MariaDB's median, the median CPU seconds."""
    print(f"\nmedians over {len(rounds)} rounds:")
    print(f"{'server':<14}{'wall s':>8}{'wall ÷ MariaDB':>16}{'CPU s':>7}{'ratios per round':>40}")
    for i, r0 in enumerate(rounds[0]):
        walls = [rs[i].wall for rs in rounds]
        ratios = " ".join(f"{rs[0].wall / rs[i].wall:.2f}" for rs in rounds)
        print(f"{r0.server:<14}{statistics.median(walls):>8.2f}"
              f"{statistics.median(rs[0].wall for rs in rounds) / statistics.median(walls):>15.2f}x"
              f"{statistics.median(rs[i].cpu for rs in rounds):>7.2f}{ratios:>40}")


def _profile(p: argparse.ArgumentParser, given: list[str] | None) -> tuple[str, Path] | None:
    if given is None:
        return None
    if given[0] not in ("perf", "py-spy"):
        p.error("--profile takes perf or py-spy, then a directory")
    return given[0], Path(given[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fanout", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dumps", type=int, default=200, help="concurrent dumps (default 200)")
    p.add_argument("--rows", type=int, default=ROWS, help=f"rows of {ROW_BYTES} B in the binlog (default {ROWS})")
    p.add_argument("--stall", type=float, default=30.0, help="seconds the stalled reader reads nothing (0: skip)")
    p.add_argument("--binlogd-tree", type=Path, help="also measure binlogd from this source tree (before/after)")
    p.add_argument("--alt-args", default="",
                   help="options for that second binlogd (e.g. '--send-thread'); without --binlogd-tree it runs this "
                        "tree: one option on and off in the same run")
    p.add_argument("--repeat", type=int, default=1,
                   help="measure every server this many times, the order rotated each round (the machine is shared: "
                        "the medians are printed after the rounds)")
    p.add_argument("--profile", nargs=2, metavar=("perf|py-spy", "DIR"),
                   help="profile each binlogd during the N dumps (DIR/NAME.perf.data or DIR/NAME.py-spy.txt)")
    p.add_argument("--reader-procs", type=int, default=4,
                   help="processes reading the N dumps (default 4; 0: one asyncio reader in this process)")
    args = p.parse_args(argv)
    if args.dumps < 1 or args.rows < 1 or args.repeat < 1:
        p.error("--dumps, --rows and --repeat must be >= 1")
    work = Path(tempfile.mkdtemp(prefix="binlogd-fanout-"))
    primary = MariaDB.start(work, "primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW",
                            "--binlog-annotate-row-events=ON", f"--max-connections={args.dumps + 100}")
    servers: list[tuple[str, Binlogd]] = []
    try:
        _write_binlog(primary, args.rows)
        files = work / "binlogs"
        files.mkdir()
        for f in sorted(primary.datadir.glob("mysql-bin.0*")):
            shutil.copy(f, files / f.name)
        (files / "mysql-bin.index").write_text("".join(f"./{f.name}\n" for f in sorted(files.glob("mysql-bin.0*"))))
        cmd = ["--binlog-dir", str(files), "--server-id", "1", "--compat", "mariadb"]
        cap = ["--max-connections", str(args.dumps + 100)]  # MariaDB's default 151 is below the dumps run here
        servers.append(("binlogd", Binlogd.start(cmd + cap, log_path=work / "binlogd.log")))
        if args.binlogd_tree or args.alt_args:
            tree = {"BINLOGD_BENCH_TREE": str(args.binlogd_tree.resolve())} if args.binlogd_tree else {}
            servers.append(("binlogd-alt", Binlogd.start(
                cmd + cap + shlex.split(args.alt_args), log_path=work / "binlogd-alt.log",
                module="benchmarks._binlogd_launcher", cwd=REPO_ROOT, env=tree)))
        size = (files / "mysql-bin.000001").stat().st_size
        print(f"binlog: {size / 1e6:.1f} MB in mysql-bin.000001; load {_load()}")
        print(f"readers: {args.reader_procs or 'one asyncio'} process(es)")
        targets = [("mariadb", primary.host, primary.port, primary.pid)]
        targets += [(name, s.host, s.port, s.pid) for name, s in servers]
        rounds: list[list[Result]] = []
        for k in range(args.repeat):
            order = targets[k % len(targets):] + targets[:k % len(targets)]
            got = {t[0]: asyncio.run(_measure(*t, args.dumps, args.stall, args.reader_procs,
                                               _profile(p, args.profile))) for t in order}
            rounds.append([got[t[0]] for t in targets])
            if args.repeat > 1:
                print(f"\nround {k + 1} of {args.repeat} (order: {', '.join(t[0] for t in order)})")
            _table(rounds[-1], args.dumps, args.stall)
        if args.repeat > 1:
            _medians(rounds)
        # binlogd must keep a stalled reader; MariaDB drops it after net_write_timeout (reported, not a failure)
        return 0 if all(r.same_as_alone and (args.stall <= 0 or r.stall_ok or r.server == "mariadb")
                        for results in rounds for r in results) else 1
    finally:
        for _, s in servers:
            s.stop()
        primary.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
