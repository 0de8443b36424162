"""A dump's socket holds little unsent while few dumps run (server/dump/pacing.py, issue 12): TCP_NOTSENT_LOWAT is
set on the sockets of up to PACED_DUMPS dumps and taken off when more run, over real TCP sockets on both loops binlogd
serves with; every client still gets what a lone dump sends."""

from __future__ import annotations

import asyncio
import socket

import pytest
from binlogd.server.dump import DumpStream, pacing

from tests.test_dump_tail import NAME, DumpServer, _groups, run_on, stop_and_compare


def _lowat(writer: asyncio.StreamWriter) -> int:
    sock = writer.transport.get_extra_info("socket")
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT)


def test_pace_sets_and_clears_the_limit_and_declines_what_is_not_tcp() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        client = socket.create_connection(srv.getsockname())
        conn, _ = srv.accept()
        with client, conn:
            assert pacing.pace(conn, True)
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT) == pacing.NOTSENT_LOWAT
            assert pacing.pace(conn, False)
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT) == 0
    a, b = socket.socketpair()  # a Unix socket: no TCP options
    with a, b:
        assert not pacing.pace(a, True)
    a.close()
    assert not pacing.pace(a, True)  # closed


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_few_dumps_are_paced_many_are_not(tmp_path, loop: str) -> None:
    head, groups = _groups(copies=6)
    many = pacing.PACED_DUMPS + 2

    async def run() -> None:
        ds = DumpServer(tmp_path, head)
        st, store, dumps, writers = ds.st, ds.store, ds.dumps, ds.writers
        server = await asyncio.start_server(ds.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        received = [bytearray() for _ in range(many)]

        async def read(i: int) -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                while chunk := await reader.read(1 << 16):
                    received[i] += chunk
            except ConnectionError:
                pass
            finally:
                writer.close()

        async def caught_up(n: int) -> None:
            end = store.end_of(NAME)
            for _ in range(1000):
                if len(dumps) == n and all(d.pos == end and not w.transport.get_write_buffer_size()
                                           for d, w in zip(dumps, writers, strict=True)):
                    return
                await asyncio.sleep(0.01)
            raise AssertionError(f"dumps did not reach {end}: {[d.pos for d in dumps]}")

        readers = [asyncio.create_task(read(0))]
        await caught_up(1)
        assert _lowat(writers[0]) == pacing.NOTSENT_LOWAT  # alone: paced
        st.feed([b"".join(groups[0])])
        readers += [asyncio.create_task(read(i)) for i in range(1, many)]
        await caught_up(many)
        for g in groups[1:]:  # every dump writes again, now with `many` running
            st.feed([b"".join(g)])
            await asyncio.sleep(0.002)
        await caught_up(many)
        assert [_lowat(w) for w in writers] == [0] * many
        await stop_and_compare(ds, readers, server, store, received)
        assert DumpStream.running == 0

    run_on(loop, run)
