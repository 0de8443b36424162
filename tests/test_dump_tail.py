"""Dumps parked at the end of the active file are served from one place (server/dump/tail.py, issue 12).

A relay stores a real MariaDB 10.11 binlog a transaction at a time while blocking dumps of mixed settings follow it
over real sockets. What each client gets must be what its own turns would have sent: the events of a non-blocking
dump of the same settings over the finished file (position syncs and heartbeats aside), also for a client that
stops reading (its socket takes a few KiB; the others go on), and parked dumps keep their heartbeat period.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from binlogd.protocol.constants import GTID_EVENT, GTID_LIST_EVENT, HEARTBEAT_LOG_EVENT, ROTATE_EVENT
from binlogd.protocol.decision import Compat
from binlogd.protocol.events import build_event, checksummed_event, iter_binlog
from binlogd.server.binlog.store import BinlogStore
from binlogd.server.binlog.writer import BinlogWriter
from binlogd.server.dump import DumpParams, DumpStream
from binlogd.server.dump import tail as tail_mod
from binlogd.server.relay.status import RelayStatus
from binlogd.server.relay.storage import RelayStorage

from tests.dumpclient import MemorySink, split_packets

SOURCE = Path(__file__).parent / "data" / "oracle" / "dump" / "mysql-bin.000001"
NAME = SOURCE.name
_HEADER = struct.Struct("<IBIIIH")
SETTINGS = [(4, False), (4, True), (0, True), (2, False)]  # (capability, skip_replication)


def _params(cap: int, skip: bool, blocking: bool, heartbeat_ns: int = 0) -> DumpParams:
    return DumpParams(file=NAME, pos=4, flags=0 if blocking else 1, replica_server_id=9, capability=cap,
                      skip_replication=skip, checksum_aware=True, first_rotate_crc=True, compat=Compat.BINLOGD,
                      heartbeat_ns=heartbeat_ns)


def _fake_rotate(pos: int) -> bytes:
    body = pos.to_bytes(8, "little") + NAME.encode()
    return build_event(type_code=ROTATE_EVENT, body=body, server_id=1, log_pos=0, flags=0x20, checksum=True)


def _groups(copies: int = 40) -> tuple[list[bytes], list[list[bytes]]]:
    """The source's head (FDE, GTID_LIST, ...) and its event groups, each from a GTID event, `copies` times over
    (GTID seq_no and end positions renumbered, CRCs made again; the closing ROTATE left out: the file stays active)."""
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())][:-1]
    first = next(i for i, e in enumerate(events) if e[4] == GTID_EVENT)
    groups: list[list[bytes]] = []
    for e in events[first:]:
        if e[4] == GTID_EVENT or not groups:
            groups.append([])
        groups[-1].append(e)
    pos = sum(len(e) for e in events[:first]) + 4
    seq = 1000
    out = []
    for _ in range(copies):
        for g in groups:
            renumbered = []
            for e in g:
                ts, typ, sid, _, _, flags = _HEADER.unpack_from(e)
                body = bytearray(e[19:-4])
                if typ == GTID_EVENT:
                    body[:8] = seq.to_bytes(8, "little")
                    seq += 1
                pos += len(e)
                renumbered.append(checksummed_event(typ, bytes(body), ts, sid, pos, flags))
            out.append(renumbered)
    return events[:first], out


def _relay(tmp: Path) -> tuple[RelayStorage, BinlogStore]:
    w = BinlogWriter(tmp / "relay", "mysql-bin")
    w.recover()
    st = RelayStorage(w, RelayStatus("h", 1, "u", 1, 1.0))
    st.begin(1)
    return st, w.store


def _events(raw: bytes) -> list[bytes]:
    """The events of a stream, without heartbeats and the fake GTID_LISTs of position syncs (a blocking dump's own)."""
    out = []
    for p in split_packets(raw):
        if p.payload[:1] != b"\0":
            continue
        ev = p.payload[1:]
        (flags,) = struct.unpack_from("<H", ev, 17)
        if ev[4] == HEARTBEAT_LOG_EVENT or (ev[4] == GTID_LIST_EVENT and flags & 0x20):
            continue
        out.append(ev)
    return out


class Client:
    """A blocking dump over a socketpair: the server's end to a DumpStream, the client's end read into `data`."""

    def __init__(self, store: BinlogStore, params: DumpParams, sndbuf: int = 0) -> None:
        self.store, self.params, self.sndbuf = store, params, sndbuf
        self.data = bytearray()
        self.reading = asyncio.Event()
        self.reading.set()

    async def start(self) -> None:
        server, self.sock = socket.socketpair()
        if self.sndbuf:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.sndbuf)
        server.setblocking(False)
        self.sock.setblocking(False)
        _, writer = await asyncio.open_connection(sock=server)
        self.writer = writer
        self.dump = DumpStream(self.store, writer, 1, self.params)
        self.task = asyncio.create_task(self.dump.run())
        self.read_task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.reading.wait()
            chunk = await loop.sock_recv(self.sock, 1 << 16)
            if not chunk:
                return
            self.data += chunk

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.writer.close()
        self.reading.set()
        await asyncio.wait_for(self.read_task, 10)
        self.sock.close()


async def _caught_up(clients: list[Client], end: int) -> None:
    for _ in range(1000):
        if all(c.dump.pos == end and not c.writer.transport.get_write_buffer_size() for c in clients):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"dumps did not reach {end}: {[c.dump.pos for c in clients]}")


async def _alone(store: BinlogStore, cap: int, skip: bool) -> list[bytes]:
    sink = MemorySink()
    await DumpStream(store, sink, 1, _params(cap, skip, blocking=False)).run()
    return _events(bytes(sink.data))


@pytest.fixture
def no_io_uring() -> Iterator[None]:
    from binlogd.server.dump import _fanout

    _fanout.set_io_uring(False)
    try:
        yield
    finally:
        _fanout.set_io_uring(True)


@pytest.mark.parametrize("send_many", ["io_uring", "send loop", "transport"])
def test_parked_dumps_get_what_their_own_turns_send(tmp_path: Path, send_many: str,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    request: pytest.FixtureRequest) -> None:
    assert tail_mod.send_many is not None, "the C fan-out helper (server/dump/_fanout.c) is not built"
    if send_many == "transport":
        monkeypatch.setattr(tail_mod, "send_many", None)
    elif send_many == "send loop":
        request.getfixturevalue("no_io_uring")
    head, groups = _groups()
    assert len(groups) > 400 and sum(len(e) for g in groups for e in g) > 100_000

    async def run() -> None:
        st, store = _relay(tmp_path)
        store.bind_loop(asyncio.get_running_loop())
        st.feed([_fake_rotate(4) + b"".join(head)])
        # three dumps of each setting, and one per setting whose client stops reading (a 4 KiB socket buffer)
        clients = [Client(store, _params(c, s, True)) for c, s in SETTINGS for _ in range(3)]
        slow = [Client(store, _params(c, s, True), sndbuf=4096) for c, s in SETTINGS]
        for c in clients + slow:
            await c.start()
        await _caught_up(clients + slow, store.end_of(NAME))
        for c in slow:
            c.reading.clear()
        for g in groups:  # a transaction at a time, as a relay following its upstream stores them
            st.feed([b"".join(g)])
            await asyncio.sleep(0.002)
        end = store.end_of(NAME)
        await _caught_up(clients, end)
        assert all(c.dump.pos < end for c in slow)  # they wait for their readers; the others did not wait for them
        for c in slow:
            c.reading.set()
        await _caught_up(slow, end)
        for c in clients + slow:
            await c.stop()
        fanned = sum(c.dump.stats.fan_ins for c in clients)
        assert fanned > len(groups) * len(SETTINGS), fanned  # most turns of the followers were the fan-out's
        for cap, skip in SETTINGS:
            want = await _alone(store, cap, skip)
            for c in clients + slow:
                if (c.params.capability, c.params.skip_replication) == (cap, skip):
                    assert _events(bytes(c.data)) == want

    asyncio.run(run())


def test_parked_dumps_keep_their_heartbeat_period(tmp_path: Path) -> None:
    """Heartbeats go to a parked dump `period` after its last event (a fan-in counts), not while events flow."""
    head, groups = _groups()

    async def run() -> None:
        st, store = _relay(tmp_path)
        store.bind_loop(asyncio.get_running_loop())
        st.feed([_fake_rotate(4) + b"".join(head)])
        period = 0.2
        # (twelve: a group's leadership passes on at each transaction, and a dump that leads gets a new timer; a
        # dump led for longer than the period shows that a fan-in puts its heartbeat off)
        clients = [Client(store, _params(4, False, True, heartbeat_ns=int(period * 1e9))) for _ in range(12)]
        for c in clients:
            await c.start()
        await _caught_up(clients, store.end_of(NAME))
        for g in groups[:60]:  # events every 20 ms: no heartbeat due
            st.feed([b"".join(g)])
            await asyncio.sleep(0.02)
        await _caught_up(clients, store.end_of(NAME))
        during = [c.dump.stats.heartbeats for c in clients]
        await asyncio.sleep(1.1)  # idle: five periods
        after = [c.dump.stats.heartbeats - d for c, d in zip(clients, during, strict=True)]
        for c in clients:
            await c.stop()
        assert sum(c.dump.stats.fan_ins for c in clients) > 0
        assert during == [0] * len(clients)
        assert all(3 <= n <= 6 for n in after), after

    asyncio.run(run())


def test_gtid_state_at_goes_on_from_its_last_scan(tmp_path: Path) -> None:
    """`gtid_state_at` keeps the state at the furthest boundary it reached (dumps that start together at the end
    of a big file scan it once): every answer equals a fresh store's, in any order of positions, boundary or not."""
    head, groups = _groups(copies=3)
    st, store = _relay(tmp_path)
    st.feed([_fake_rotate(4) + b"".join(head)])
    ends = []
    for g in groups:
        st.feed([b"".join(g)])
        ends.append(store.end_of(NAME))
    positions = [ends[5], ends[9], ends[9], ends[2], ends[-1], ends[9] + 1, ends[-1] - 1, 4, ends[20], ends[-1]]
    for pos in positions:
        fresh = BinlogStore(store.directory).gtid_state_at(NAME, pos)
        got = store.gtid_state_at(NAME, pos)
        assert (got is None) == (fresh is None), pos
        if got is not None and fresh is not None:
            assert got.as_list() == fresh.as_list(), pos
    assert store.gtid_state_at(NAME, ends[3]).as_list() != store.gtid_state_at(NAME, ends[-1]).as_list()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_parked_tls_dumps_are_written_through_their_transports(tmp_path: Path, loop: str) -> None:
    """Through TLS the fan-out must not write to the socket itself (the transport encrypts): parked TLS dumps get
    the same events, and the fan-out still serves them (on both loops binlogd serves with)."""
    import ssl

    from tests.tlsca import make_certs

    certs = make_certs(tmp_path / "certs")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs.cert, certs.key)
    client_ctx = ssl.create_default_context(cafile=str(certs.ca))
    head, groups = _groups(copies=4)

    async def run() -> None:
        ds = DumpServer(tmp_path, head)
        st, store, dumps, writers = ds.st, ds.store, ds.dumps, ds.writers
        server = await asyncio.start_server(ds.serve, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        received = [bytearray() for _ in range(3)]

        async def read(i: int) -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx,
                                                           server_hostname="127.0.0.1")
            try:
                while chunk := await reader.read(1 << 16):
                    received[i] += chunk
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                writer.close()

        readers = [asyncio.create_task(read(i)) for i in range(3)]
        for _ in range(500):
            if len(dumps) == 3 and all(d.pos == store.end_of(NAME) for d in dumps):
                break
            await asyncio.sleep(0.01)
        for g in groups:
            st.feed([b"".join(g)])
            await asyncio.sleep(0.002)
        end = store.end_of(NAME)
        for _ in range(500):
            if all(d.pos == end and not w.transport.get_write_buffer_size() for d, w in zip(dumps, writers,
                                                                                              strict=True)):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert sum(d.stats.fan_ins for d in dumps) > len(groups)
        assert all(d._raw_fd() == -1 for d in dumps)
        await stop_and_compare(ds, readers, server, store, received)

    run_on(loop, run)


def run_on(loop: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """`main()` on uvloop or on asyncio's own loop (binlogd serves with either)."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


class DumpServer:
    """A relay that stored `head` (made in the running loop), and `serve` for asyncio.start_server: a blocking dump
    (capability 4) of its store per connection, kept here."""

    def __init__(self, tmp: Path, head: list[bytes]) -> None:
        self.st, self.store = _relay(tmp)
        self.store.bind_loop(asyncio.get_running_loop())
        self.st.feed([_fake_rotate(4) + b"".join(head)])
        self.dumps: list[DumpStream] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def serve(self, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dump = DumpStream(self.store, writer, 1, _params(4, False, True))
        self.dumps.append(dump)
        self.writers.append(writer)
        self.tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        await dump.run()


async def stop_and_compare(ds: DumpServer, readers: list[asyncio.Task[None]], server: asyncio.Server,
                           store: BinlogStore, received: list[bytearray]) -> None:
    """End the dumps of a test server and its readers; each reader got the events a lone dump sends
    (capability 4)."""
    for t in ds.tasks:
        t.cancel()
    await asyncio.gather(*ds.tasks, return_exceptions=True)
    for w in ds.writers:
        w.close()
    await asyncio.gather(*readers, return_exceptions=True)
    server.close()
    want = await _alone(store, 4, False)
    for r in received:
        assert _events(bytes(r)) == want


async def _parked(tmp: Path, head: list[bytes], n: int) -> tuple[RelayStorage, BinlogStore, list[Client]]:
    """A relay storing the source's head, and `n` blocking dumps (capability 4) parked at its end."""
    st, store = _relay(tmp)
    store.bind_loop(asyncio.get_running_loop())
    st.feed([_fake_rotate(4) + b"".join(head)])
    clients = [Client(store, _params(4, False, True)) for _ in range(n)]
    for c in clients:
        await c.start()
    await _caught_up(clients, store.end_of(NAME))
    return st, store, clients


def test_a_leader_cancelled_after_a_change_hands_it_on(tmp_path: Path) -> None:
    """A group's leader whose connection ends right after a change (before its turn) must not leave the change
    unseen: the next member leads at once (no heartbeat, no later change needed)."""
    head, groups = _groups(copies=1)

    async def run() -> None:
        st, store, clients = await _parked(tmp_path, head, 3)
        await asyncio.sleep(0.05)
        leaders = [c for c in clients if c.dump._park_fut is not None and c.dump._park_fut in store._waiters]
        assert len(leaders) == 1, [c.dump._park_fut for c in clients]
        st.feed([b"".join(groups[0])])  # the change's wake-up is queued on the loop ...
        leaders[0].task.cancel()  # ... and the leader's connection ends before its turn
        others = [c for c in clients if c is not leaders[0]]
        await _caught_up(others, store.end_of(NAME))
        for c in clients:
            await c.stop()

    asyncio.run(run())


def test_an_io_uring_without_send_falls_back_to_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel whose io_uring does not know IORING_OP_SEND answers -EINVAL for every send (nothing was sent): the
    fan-out sends those bytes through the transports, turns io_uring off, and the streams stay whole."""
    import errno

    from binlogd.server.dump import _fanout

    calls: list[int] = []

    def unsupported(fds: list[int], bufs: list[bytes]) -> list[int]:
        calls.append(len(fds))
        return [-errno.EINVAL] * len(fds)

    monkeypatch.setattr(tail_mod, "send_many", unsupported)
    head, groups = _groups(copies=2)

    async def run() -> None:
        st, store, clients = await _parked(tmp_path, head, 3)
        for g in groups:
            st.feed([b"".join(g)])
            await asyncio.sleep(0.002)
        await _caught_up(clients, store.end_of(NAME))
        for c in clients:
            await c.stop()
        want = await _alone(store, 4, False)
        assert calls and all(_events(bytes(c.data)) == want for c in clients)

    try:
        asyncio.run(run())
        assert not _fanout.using_io_uring()
    finally:
        _fanout.set_io_uring(True)
