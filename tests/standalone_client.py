"""A standalone binlogd and the raw clients its command-path tests use: pymysql for whole statements, and
packets written on a plain socket for pipelined bursts and bad framing."""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Any

import pymysql

TIMEOUT = 20


def start(binlogd: Any, datadir: Path, *extra: str) -> Any:
    return binlogd(["--datadir", str(datadir), "--no-ledger", *extra])


def connect(server: Any, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True,
                           read_timeout=TIMEOUT, **kw)


def with_table(server: Any, columns: str = "a INT") -> pymysql.connections.Connection:  # type: ignore[type-arg]
    """A client of `server` that has created database d and table d.t (`columns`), the tests' common start."""
    conn = connect(server)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE d")
        cur.execute(f"CREATE TABLE d.t ({columns})")
    return conn


def packet(payload: bytes, seq: int = 0) -> bytes:
    return struct.pack("<I", len(payload) | seq << 24) + payload


def read_packet(sock: socket.socket) -> tuple[int, bytes]:
    """(sequence id, payload) of the next packet the server sends."""
    head = exactly(sock, 4)
    word = int.from_bytes(head, "little")
    return word >> 24, exactly(sock, word & 0xFFFFFF)


def exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return out
