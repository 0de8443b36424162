"""A raw COM_BINLOG_DUMP client for tests: session SETs through pymysql, then the replication commands
written on pymysql's socket, and every byte the primary sends back recorded as is.

Works identically against a real MariaDB primary and binlogd, which is what makes oracle comparisons
meaningful.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field

import pymysql


@dataclass
class Packet:
    seq: int
    payload: bytes


@dataclass
class DumpCapture:
    raw: bytes
    packets: list[Packet]
    end: str  # "EOF" | "ERR" | "idle" | "max_seconds" | "closed"
    register_reply: bytes | None = None
    times: list[float] = field(default_factory=list)

    @property
    def events(self) -> list[bytes]:
        return [p.payload[1:] for p in self.packets if p.payload[:1] == b"\x00"]

    @property
    def error(self) -> tuple[int, str] | None:
        last = self.packets[-1].payload if self.packets else b""
        if last[:1] == b"\xff":
            (code,) = struct.unpack_from("<H", last, 1)
            return code, last[9:].decode()
        return None


def split_packets(raw: bytes) -> list[Packet]:
    out, p = [], 0
    while p + 4 <= len(raw):
        (w,) = struct.unpack_from("<I", raw, p)
        n, seq = w & 0xFFFFFF, w >> 24
        out.append(Packet(seq, raw[p + 4 : p + 4 + n]))
        p += 4 + n
    return out


def _send(sock: socket.socket, payload: bytes, seq: int = 0) -> None:
    sock.sendall(struct.pack("<I", len(payload) | (seq << 24)) + payload)


def raw_dump(host: str, port: int, statements: list[str], dump_cmd: bytes, register_cmd: bytes | None = None,
             user: str = "root", password: str = "", idle_timeout: float = 3.0,
             max_seconds: float | None = None) -> DumpCapture:
    conn = pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
        sock: socket.socket = conn._sock  # type: ignore[attr-defined]
        reply = None
        if register_cmd is not None:
            _send(sock, register_cmd)
            sock.settimeout(10)
            hdr = _recv_exact(sock, 4)
            (w,) = struct.unpack("<I", hdr)
            reply = _recv_exact(sock, w & 0xFFFFFF)
        _send(sock, dump_cmd)
        raw = bytearray()
        times: list[float] = []
        t0 = time.monotonic()
        end = "closed"
        sock.settimeout(idle_timeout)
        pos = 0
        while True:
            if max_seconds is not None and time.monotonic() - t0 > max_seconds:
                end = "max_seconds"
                break
            try:
                if max_seconds is not None:
                    sock.settimeout(max(0.05, min(idle_timeout, max_seconds - (time.monotonic() - t0))))
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                end = "max_seconds" if max_seconds is not None and time.monotonic() - t0 >= max_seconds else "idle"
                break
            if not chunk:
                break
            raw += chunk
            done = False
            while pos + 4 <= len(raw):
                (w,) = struct.unpack_from("<I", raw, pos)
                n = w & 0xFFFFFF
                if pos + 4 + n > len(raw):
                    break
                first = raw[pos + 4 : pos + 5]
                times.append(time.monotonic() - t0)
                if first == b"\xff" or (first == b"\xfe" and n < 9):
                    end = "ERR" if first == b"\xff" else "EOF"
                    done = True
                pos += 4 + n
            if done:
                break
        return DumpCapture(bytes(raw), split_packets(bytes(raw)), end, reply, times)
    finally:
        with contextlib.suppress(Exception):  # the server ends the session after a dump
            conn.close()


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return bytes(buf)


class MemorySink:
    """A dump's writer that keeps every byte in memory (unit tests that run a DumpStream without a socket)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes | bytearray) -> None:
        self.data += data

    async def drain(self) -> None:
        return None
