"""What clients see when the server shuts down (SIGTERM), compared with a real MariaDB 10.11 primary.

Recorded from 10.11.19: an idle client and a client in a blocking COM_BINLOG_DUMP both see the socket close with no
packet at all (the replica gets 2013 and reconnects). binlogd used to send KILL's 1927 "Connection was killed", and
to a dump with sequence id 0 in the middle of the dump's numbering: a packet out of order for the client.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pymysql

from tests.dumpclient import DumpCapture, raw_dump

DUMP_SETTINGS = ["SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=4"]


def _blocking_dump(server_id: int) -> bytes:
    return b"\x12" + struct.pack("<IHI", 4, 0, server_id) + b"mysql-bin.000001"


def _what_clients_see(port: int, stop: Callable[[], Any]) -> tuple[bytes, DumpCapture]:
    """An idle logged-in client and a blocking dump at the end of the binlog, then `stop`: the bytes the idle
    client got and the dump's capture."""
    idle = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
    idle.query("SELECT 1")
    sock = idle._sock  # type: ignore[attr-defined]
    held: dict[str, DumpCapture] = {}
    t = threading.Thread(target=lambda: held.setdefault(
        "dump", raw_dump("127.0.0.1", port, DUMP_SETTINGS, _blocking_dump(7), idle_timeout=15)))
    t.start()
    time.sleep(1.5)  # the dump has sent the binlog and waits for more
    stop()
    sock.settimeout(15)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    t.join(20)
    return got, held["dump"]


def test_shutdown_closes_idle_and_dumping_clients_without_a_packet(mariadb: Any, binlogd: Any) -> None:
    real = mariadb("shut-primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW")
    real.execute("CREATE DATABASE d; CREATE TABLE d.t (a INT); INSERT INTO d.t VALUES (1), (2)")
    server = binlogd(["--binlog-dir", str(real.datadir), "--server-id", "1"])
    for name, port, stop in (("mariadb", real.port, real.stop), ("binlogd", server.port, server.stop)):
        idle_got, cap = _what_clients_see(port, stop)
        assert idle_got == b"", (name, idle_got)
        assert cap.end == "closed" and cap.error is None, (name, cap.end, cap.packets[-1:])
        assert cap.packets and all(p.payload[:1] == b"\x00" for p in cap.packets), name
        assert [p.seq for p in cap.packets] == list(range(1, len(cap.packets) + 1)), name
    assert "connection" in server.log_text() and "closed: server shutdown" in server.log_text()


def test_shutdown_closes_a_standalone_writer_without_a_packet(binlogd: Any, harness_dir: Any) -> None:
    """A writing client of the standalone primary (served by the fast command path after its first INSERT) is
    closed the same way."""
    server = binlogd(["--datadir", str(harness_dir / "d"), "--server-id", "1"])
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", autocommit=True)
    conn.query("CREATE DATABASE s")
    conn.query("CREATE TABLE s.t (id INT PRIMARY KEY)")
    conn.query("INSERT INTO s.t VALUES (1)")
    sock = conn._sock  # type: ignore[attr-defined]
    server.stop()
    sock.settimeout(15)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    assert got == b""
    assert "closed: server shutdown" in server.log_text()
