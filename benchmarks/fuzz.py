"""``python -m benchmarks.fuzz --packets 1000000``: bad input at scale against a binlogd it starts (issue 19).

Seeded, bounded in packets and in seconds, loopback only. Each connection plays one scenario: random bytes
instead of the handshake response, a mutated handshake response, or a logged-in session sending mutated
COM_QUERY / COM_STMT_* / COM_REGISTER_SLAVE / COM_BINLOG_DUMP packets, random command bytes, wrong sequence ids,
huge length headers and abrupt closes. After every command of a session a `SELECT <nonce>` resynchronises the
stream, so each answer is awaited with a deadline: a server that neither answers nor closes within it is a hang.

Afterwards: the server's log is searched for tracebacks, its RSS compared with the start, and a normal
`mariadb-binlog --raw` dump compared byte for byte with the binlog files. `run_storm` is what
tests/test_fuzz_server.py runs for a few thousand packets.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from binlogd.protocol.commands import build_binlog_dump, build_register_slave

HOST = "127.0.0.1"
ANSWER_TIMEOUT = 10.0  # seconds an answer may take before it counts as a hang
CAPS = 0x00000001 | 0x00000004 | 0x00000200 | 0x00008000 | 0x00080000 | 0x00020000
CLIENT_SSL = 0x00000800
SEED_QUERIES = [
    "SELECT 1", "SELECT @@version", "SHOW BINARY LOGS", "SHOW MASTER STATUS", "SELECT @@gtid_binlog_pos",
    "SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=4",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' LIMIT 3", "SELECT BINLOG_GTID_POS('mysql-bin.000001', 4)",
    "SELECT BINLOG_GTID_POS('mysql-bin.000001', 18446744073709551615)", "SHOW VARIABLES LIKE 'server_id'",
    "SELECT CONNECTION_ID(), USER(), DATABASE()", "SHOW SLAVE HOSTS", "SELECT ((((1))))", "SET NAMES utf8mb4",
    "SELECT 'a\\'b', \"c\", `d`", "SHOW WARNINGS", "SELECT 1 /* comment */ + 2", "USE mysql",
]
FDE_FLAGS_OFFSET = 4 + 17  # low byte of the first event's flags in a binlog file
COM_QUIT, COM_BINLOG_DUMP = 0x01, 0x12


def after_command(command: bytes, kind: str, answer: Callable[[], bytes]) -> str:
    """What the session does after a command whose payload starts with `command` (its command byte, whatever
    scenario built it: a mutated dump may have become a COM_STMT_SEND_LONG_DATA, a random packet a dump).

    COM_BINLOG_DUMP: its first answer is read and the session ends (MariaDB ends it after a dump, and a blocking
    dump would never answer the resynchronising SELECT); COM_QUIT ends it. Anything else is followed by the
    SELECT, which also consumes the answer, if any: commands MariaDB does not answer (COM_STMT_SEND_LONG_DATA,
    COM_STMT_CLOSE) must not be waited for, or the fuzzer reports a hang the server is right about."""
    if command == bytes((COM_BINLOG_DUMP,)):
        with contextlib.suppress(Closed):
            answer()
        return "dump"  # (MariaDB's fake COM_QUIT): a new connection follows
    if command == bytes((COM_QUIT,)):
        return "quit"
    return kind


@dataclass
class Stats:
    packets: int = 0
    connections: int = 0
    hangs: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    hang_cases: list[str] = field(default_factory=list)

    def merge(self, other: Stats) -> None:
        self.packets += other.packets
        self.connections += other.connections
        self.hangs += other.hangs
        self.answers.update(other.answers)
        self.hang_cases.extend(other.hang_cases[:5])


class Hang(Exception):
    """The server neither answered nor closed in time."""


class Closed(Exception):
    """The server closed the connection."""


def _packet(payload: bytes, seq: int = 0) -> bytes:
    return struct.pack("<I", len(payload) | (seq << 24)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except TimeoutError as e:
            raise Hang() from e
        except OSError as e:
            raise Closed() from e
        if not chunk:
            raise Closed()
        buf += chunk
    return bytes(buf)


def _read(sock: socket.socket) -> tuple[int, bytes]:
    hdr = _recv_exact(sock, 4)
    (w,) = struct.unpack("<I", hdr)
    n = w & 0xFFFFFF
    return w >> 24, _recv_exact(sock, n) if n else b""


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:
            b[rng.randint(0, len(b)):rng.randint(0, len(b))] = rng.randbytes(rng.randint(1, 8))
        elif op == 2 and b:
            del b[rng.randint(0, len(b) - 1):]
        elif op == 3:
            b += rng.choice([b"\xfe" + b"\xff" * 8, b"\xfc\xff\xff", b"\0", b"(" * rng.randint(1, 300)])
        elif op == 4 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


class Fuzzer:
    def __init__(self, host: str, port: int, seed: int, stats: Stats) -> None:
        self.host, self.port, self.rng, self.stats = host, port, random.Random(seed), stats
        self.sent: list[bytes] = []

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=ANSWER_TIMEOUT)
        self.stats.connections += 1
        return sock

    def _send(self, sock: socket.socket, data: bytes) -> None:
        self.stats.packets += 1
        self.sent = [*self.sent[-1:], data]  # the last two packets, to name a hang's cause
        try:
            sock.sendall(data)
        except OSError as e:
            raise Closed() from e

    def _answer(self, sock: socket.socket) -> bytes:
        _, body = _read(sock)
        kind = {0xFF: "err", 0x00: "ok", 0xFE: "eof"}.get(body[0] if body else -1, "data")
        if kind == "err" and len(body) > 2:
            kind = f"err {struct.unpack_from('<H', body, 1)[0]}"
        self.stats.answers[kind] += 1
        return body

    def run_connection(self) -> None:
        scenario = self.rng.choices(["pre", "handshake", "session"], weights=[1, 2, 7])[0]
        self.sent = []
        sock = self._connect()
        label = scenario
        try:
            _read(sock)  # the greeting
            if scenario == "pre":
                self._send(sock, self.rng.randbytes(self.rng.randint(0, 64)))
            elif scenario == "handshake":
                body = _mutate(self.rng, self._handshake_response(self.rng.choice([33, 45, 8, 63, 0, 254, 255])))
                if len(body) >= 4:  # a client asking for TLS would wait for its own TLS hello: not a hang
                    body = struct.pack("<I", struct.unpack_from("<I", body)[0] & ~CLIENT_SSL) + body[4:]
                self._send(sock, _packet(body, self.rng.choice([1, 1, 1, 0, 5])))
                self._finish_login(sock)
            else:
                self._login(sock)
                for _ in range(self.rng.randint(1, 12)):
                    label = self._command(sock)
                    if label in ("quit", "dump", "abrupt"):
                        break
                    self._sync(sock, label)
        except Closed:
            pass
        except Hang:
            self.stats.hangs += 1
            self.stats.hang_cases.append(f"{label} at {time.strftime('%H:%M:%S')} after "
                                         + " then ".join(p[:80].hex() for p in self.sent))
        finally:
            sock.close()

    def replay(self, sock: socket.socket, payload: bytes) -> str:
        """One command's payload sent and followed as the storm does it (tests replay a storm's hang case with it):
        the label `after_command` gives; a Hang if the server neither answers the resynchronising SELECT nor
        closes."""
        self._send(sock, _packet(payload))
        label = after_command(payload[:1], "replay", lambda: self._answer(sock))
        if label not in ("dump", "quit"):
            self._sync(sock, label)
        return label

    def login(self, sock: socket.socket) -> None:
        """Read the greeting and log in as root (empty password), as a storm's session does."""
        _read(sock)
        self._login(sock)

    def _handshake_response(self, charset: int) -> bytes:
        return (struct.pack("<IIB", CAPS, 1 << 24, charset) + bytes(23) + b"root\0" + b"\0"
                + b"mysql_native_password\0")

    def _finish_login(self, sock: socket.socket) -> None:
        seq, body = _read(sock)
        if body[:1] == b"\xfe":  # auth switch: an empty password's answer is empty
            self._send(sock, _packet(b"", seq + 1))
            _read(sock)

    def _login(self, sock: socket.socket) -> None:
        self._send(sock, _packet(self._handshake_response(33), 1))
        self._finish_login(sock)

    def _sync(self, sock: socket.socket, label: str) -> None:
        """`SELECT <nonce>` and read up to its row and EOF: whatever the command left is consumed on the way."""
        nonce = str(self.rng.randrange(10**8, 10**9)).encode()
        self._send(sock, _packet(b"\x03SELECT " + nonce))
        while True:
            _, body = _read(sock)
            if body == bytes((len(nonce),)) + nonce:
                _read(sock)  # EOF
                return
            if body[:1] == b"\xff" and nonce in body:  # a server that refuses SELECT <n> names it in its ERR
                return

    def _command(self, sock: socket.socket) -> str:
        """One fuzzed command; what is awaited next follows the command byte actually sent (`after_command`)."""
        kind = self._fuzzed_command(sock)
        if kind in ("seq", "huge", "abrupt"):
            return kind
        return after_command(self.sent[-1][4:5], kind, lambda: self._answer(sock))

    def _fuzzed_command(self, sock: socket.socket) -> str:
        rng = self.rng
        kind = rng.choices(["query", "prepare", "stmt", "register", "dump", "random", "seq", "huge", "abrupt",
                            "quit"], weights=[30, 10, 25, 5, 4, 12, 3, 2, 3, 1])[0]
        if kind == "query":
            sql = rng.choice(SEED_QUERIES).encode()
            self._send(sock, _packet(b"\x03" + (_mutate(rng, sql) if rng.random() < 0.7 else sql)))
        elif kind == "prepare":
            sql = rng.choice(["SELECT ?", "SELECT ?, ?", "SELECT 1", "SELECT @@version", "SHOW BINARY LOGS"])
            self._send(sock, _packet(b"\x16" + _mutate(rng, sql.encode()) if rng.random() < 0.3 else
                                     b"\x16" + sql.encode()))
        elif kind == "stmt":
            cmd = rng.choice([0x17, 0x18, 0x19, 0x1A, 0x1C])
            body = struct.pack("<I", rng.choice([0, 1, 2, 3, 0xFFFFFFFF]))
            if cmd == 0x17:
                body += struct.pack("<BI", rng.choice([0, 1, 8]), 1) + rng.randbytes(rng.randint(0, 24))
            else:
                body += rng.randbytes(rng.randint(0, 12))
            self._send(sock, _packet(bytes((cmd,)) + _mutate(rng, body) if rng.random() < 0.3 else
                                     bytes((cmd,)) + body))
        elif kind == "register":
            self._send(sock, _packet(_mutate(rng, build_register_slave(rng.randrange(1, 100), "r", "u", "p", 3306))))
        elif kind == "dump":
            name = rng.choice(["mysql-bin.000001", "../etc/passwd", "/etc/passwd", "x" * rng.randint(500, 700), "",
                               "mysql-bin.999999"])
            self._send(sock, _packet(_mutate(rng, build_binlog_dump(rng.randrange(0, 5000), 1,
                                                                    rng.randrange(0, 1 << 32), name))))
        elif kind == "random":
            self._send(sock, _packet(bytes((rng.randrange(256),)) + rng.randbytes(rng.randint(0, 40))))
        elif kind == "seq":
            self._send(sock, _packet(b"\x0e", rng.randint(1, 255)))
            self._answer(sock)  # ERR 1156, then the server closes
            raise Closed()
        elif kind == "huge":
            self._send(sock, struct.pack("<I", rng.randint(1 << 16, 0xFFFFFF)) + b"\x03SELECT ")
            return "abrupt"
        elif kind == "abrupt":
            self._send(sock, _packet(b"\x03SELECT 1")[: rng.randint(1, 8)])
            return "abrupt"
        else:
            self._send(sock, _packet(b"\x01"))
        return kind


def run_storm(host: str, port: int, packets: int, seconds: float, seed: int, workers: int = 2) -> Stats:
    """Fuzz until `packets` are sent or `seconds` pass, from `workers` threads seeded seed, seed+1..."""
    deadline = time.monotonic() + seconds
    per_worker = [Stats() for _ in range(workers)]

    def work(i: int) -> None:
        fz = Fuzzer(host, port, seed + i, per_worker[i])
        while per_worker[i].packets < packets // workers and time.monotonic() < deadline:
            fz.run_connection()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = Stats()
    for s in per_worker:
        total.merge(s)
    return total


def _first_traceback(log: str) -> str | None:
    """The log lines around the first traceback (the storm's log is in a temporary directory)."""
    i = log.find("Traceback")
    if i < 0:
        return None
    start = log.rfind("\n", 0, max(0, log.rfind("\n", 0, i))) + 1
    return log[start:i + 3000]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _as_sent(data: bytes) -> bytes:
    """A binlog file as a primary sends it: the FDE's LOG_EVENT_BINLOG_IN_USE_F (0x01) clear."""
    out = bytearray(data)
    if len(out) > FDE_FLAGS_OFFSET:
        out[FDE_FLAGS_OFFSET] &= 0xFE
    return bytes(out)


def raw_dump_matches(port: int, files: dict[str, Path], out: Path) -> bool:
    """`mariadb-binlog --raw --to-last-log` from the first file: every copy equals the file binlogd serves."""
    out.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("mariadb-binlog") or "mariadb-binlog"
    first = sorted(files)[0]
    res = subprocess.run([exe, "--no-defaults", "--read-from-remote-server", f"--host={HOST}", f"--port={port}",
                          "--user=root", "--raw", "--to-last-log", first], cwd=out, capture_output=True,
                         timeout=60, check=False)
    if res.returncode != 0:
        print(f"mariadb-binlog failed: {res.stderr.decode(errors='replace')}", file=sys.stderr)
        return False
    copies = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()}
    wanted = {n: hashlib.sha256(_as_sent(p.read_bytes())).hexdigest() for n, p in files.items()}
    if copies != wanted:
        print(f"dump differs: copies {sorted(copies)} files {sorted(wanted)}", file=sys.stderr)
    return copies == wanted


def _wait_port(port: int, alive: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {HOST}:{port}")


def fuzz_applier_admin(packets: int, seconds: float, seed: int, workers: int, work: Path) -> dict[str, object]:
    """The storm against binlogd-apply's admin port (its channel never started, its target unreachable: the port
    answers on its own); afterwards SHOW ALL SLAVES STATUS must still answer."""
    from binlogd.testing.mariadb import free_port
    from tests.harness.applier import running_applier

    port = free_port()
    args = ["--target=mysql://root@127.0.0.1:1", f"--channel==mysql://root@{HOST}:{free_port()}", "--no-start",
            "--admin-port", str(port)]
    with running_applier(args, work / "applier.log") as p:
        assert p.proc is not None
        _wait_port(port, lambda: p.alive)
        before = rss_mib(p.proc.pid)
        t0 = time.monotonic()
        stats = run_storm(HOST, port, packets, seconds, seed, workers)
        elapsed = time.monotonic() - t0
        time.sleep(2.0)
        after = rss_mib(p.proc.pid)
        import pymysql

        with pymysql.connect(host=HOST, port=port, user="root", password="", connect_timeout=10) as c, \
                c.cursor() as cur:
            cur.execute("SHOW ALL SLAVES STATUS")
            still_answers = cur.fetchall() is not None
        log = p.log()
        return {"packets": stats.packets, "connections": stats.connections, "hangs": stats.hangs,
                "hang_cases": stats.hang_cases[:10], "tracebacks": log.count("Traceback"),
                "rss_before_mib": round(before, 1), "rss_after_mib": round(after, 1), "seconds": round(elapsed, 1),
                "dump_identical": still_answers, "running": p.alive, "answers": dict(stats.answers.most_common(12))}


def main(argv: list[str] | None = None) -> int:
    from binlogd.testing import Binlogd
    from tests.oracle_data import ORACLE

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="copy each mode's server log into this directory")
    ap.add_argument("--mode", choices=["directory", "standalone", "applier-admin"], action="append",
                    help="repeatable (default: directory and standalone)")
    args = ap.parse_args(argv)
    results = {}
    for mode in args.mode or ["directory", "standalone"]:
        with tempfile.TemporaryDirectory(prefix="binlogd-fuzz-") as tmp:
            work = Path(tmp)
            binlogs = work / "binlogs"
            binlogs.mkdir()
            if mode == "applier-admin":  # ("dump_identical": the admin port still answers SHOW ALL SLAVES STATUS)
                results[mode] = fuzz_applier_admin(args.packets, args.seconds, args.seed, args.workers, work)
                print(json.dumps({mode: results[mode]}, indent=1), flush=True)
                continue
            if mode == "directory":
                for name in ("mysql-bin.000001", "mysql-bin.000002"):
                    shutil.copyfile(ORACLE / name, binlogs / name)
                cli = ["--binlog-dir", str(binlogs), "--server-id", "1"]
            else:
                cli = ["--datadir", str(binlogs), "--server-id", "1"]
            server = Binlogd.start(cli, log_path=work / "binlogd.log")
            try:
                before = rss_mib(server.pid)
                t0 = time.monotonic()
                stats = run_storm(server.host, server.port, args.packets, args.seconds, args.seed, args.workers)
                elapsed = time.monotonic() - t0
                time.sleep(2.0)
                after = rss_mib(server.pid)
                files = {p.name: p for p in binlogs.rglob("*-bin.[0-9]*")}
                dump_ok = raw_dump_matches(server.port, files, work / "copy")
                log = server.log_text()
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"{mode}-binlogd.log").write_text(log)
                results[mode] = {
                    "packets": stats.packets, "connections": stats.connections, "hangs": stats.hangs,
                    "hang_cases": stats.hang_cases[:10], "tracebacks": log.count("Traceback"),
                    "first_traceback": _first_traceback(log),
                    "rss_before_mib": round(before, 1), "rss_after_mib": round(after, 1),
                    "seconds": round(elapsed, 1), "dump_identical": dump_ok, "running": server.is_running,
                    "answers": dict(stats.answers.most_common(12)),
                    "slow_statements": [ln for ln in log.splitlines() if "a statement took" in ln][:5],
                }
                print(json.dumps({mode: results[mode]}, indent=1), flush=True)
            finally:
                server.stop()
    bad = any(r["hangs"] or r["tracebacks"] or not r["dump_identical"] or not r["running"] for r in results.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
