"""The sender thread (server/dump/sender.py, _sender.c): concurrent dumps' big writes copied into their sockets off
the event loop. Against a real binlog (a MariaDB 10.11's rows, skip_replication flags): readers fast and slow get
the bytes a lone dump (written on the loop) gets, with and without the thread; dumps KILLed while they stream and
peers that vanish mid-stream (a reset) end only their own connections, with no internal error; and the server goes
on serving; on uvloop and on asyncio's own loop. With `--no-send-thread` every write stays on the loop."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import struct
from pathlib import Path

import pymysql
import pytest

from binlogd.testing.mariadb import wait_until
from tests.test_fanout import (
    SETTINGS,
    Stream,
    _alone,
    _dump_cmd,
    _open_sessions,
    _stream,
    fanout_binlogs,  # noqa: F401  (the fixture, shared)
)


async def _slow(conn: pymysql.Connection, cmd: bytes) -> Stream:
    """A reader with a small receive buffer that pauses after every 64 KiB it reads: the dump's sends are often
    partial, and its stream lasts about a second."""
    conn._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)  # type: ignore[attr-defined]
    return await _stream(conn, cmd, pace=0.01)


async def _vanish(conn: pymysql.Connection, cmd: bytes, after: int) -> None:
    """Read `after` bytes of the dump (slowly), then reset the connection (SO_LINGER 0) while the server is still
    sending."""
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, cmd)
    got = 0
    while got < after:
        data = await loop.sock_recv(sock, 65536)
        if not data:
            break
        got += len(data)
        await asyncio.sleep(0.01)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    os.close(sock.detach())  # now: sock.close() would wait for pymysql's file object on it to be collected


@pytest.mark.parametrize(("thread", "loop"), [(True, "auto"), (False, "auto"), (True, "asyncio")],
                         ids=["sender-thread", "loop-only", "sender-thread-asyncio-loop"])
def test_streams_kills_and_vanishing_peers(binlogd, fanout_binlogs: Path, thread: bool, loop: str) -> None:  # noqa: F811
    server = binlogd(["--binlog-dir", str(fanout_binlogs), "--server-id", "1", "--max-connections", "1000",
                      "--event-loop", loop, *([] if thread else ["--no-send-thread"])])  # (the thread is the default)
    alone = asyncio.run(_alone(server.host, server.port))  # one dump at a time: every write on the loop
    flags = SETTINGS[0][1]

    async def run() -> tuple[list[Stream], list[Stream], list[Stream], list[int]]:
        conns = await _open_sessions(server.host, server.port, [0] * 16)
        fast, slow, killed, gone = conns[:6], conns[6:10], conns[10:13], conns[13:]
        ids = [c.thread_id() for c in killed]
        tasks = [asyncio.create_task(_stream(c, _dump_cmd(flags, 100 + i))) for i, c in enumerate(fast)]
        tasks += [asyncio.create_task(_slow(c, _dump_cmd(flags, 200 + i))) for i, c in enumerate(slow)]
        doomed = [asyncio.create_task(_slow(c, _dump_cmd(flags, 300 + i))) for i, c in enumerate(killed)]
        vanishing = [asyncio.create_task(_vanish(c, _dump_cmd(flags, 400 + i), 65536 * (i + 1)))
                     for i, c in enumerate(gone)]
        await asyncio.sleep(0.3)
        admin = await asyncio.to_thread(pymysql.connect, host=server.host, port=server.port, user="root",
                                        password="", autocommit=True)
        try:
            for i in ids:
                await asyncio.to_thread(admin.query, f"KILL {i}")
        finally:
            admin.close()
        await asyncio.gather(*vanishing)
        done = await asyncio.gather(*tasks)
        ends = await asyncio.gather(*doomed)
        after = await _alone(server.host, server.port)
        return list(done), list(ends), after, ids

    done, ends, after, ids = asyncio.run(run())
    for s in done:
        assert (s.end, s.size, s.digest) == (alone[0].end, alone[0].size, alone[0].digest)
    for s in ends:  # KILL: the dump ends (ERR 1927 or a close), never with the whole stream
        assert s.end in ("ERR", "closed", "reset") and s.size < alone[0].size, s
    assert [a.digest for a in after] == [a.digest for a in alone]  # the server goes on serving
    # the peers that reset mid-stream: seen by a failed write ("connection lost") or, when the dump was waiting
    # for the socket to drain, by the connection's watch on the peer ("replica disconnected")
    gone_ends = re.compile(r"dump ended \((replica disconnected|connection lost)")
    wait_until(lambda: len(gone_ends.findall(server.log_text())) >= 3, 20, 0.1,
               lambda: "the resets were not all seen")
    log = server.log_text()
    assert "Traceback" not in log and "internal error" not in log
    assert all(f"connection {i} killed" in log for i in ids)
    assert ("writes by the sender thread" in log) == thread
