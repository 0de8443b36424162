"""The relay's per-read walk in C (protocol/_dumpscan.c) gives exactly what the Python/numpy walk gives.

Through the real client (`ReplicationClient.event_runs`, reads cut at random places so that packets are torn across
reads, through a StreamReader and through the dump's DumpReceiver) over the dump streams a real MariaDB 10.11 primary
sent (the oracle's .raw captures: every event kind of its workloads, holes, dummies, heartbeats, GTID starts,
errors), over the oracle's binlog files streamed whole with events around the 16 MiB packet boundary, heartbeats, an
ignorable event and an FDE in the middle, with a corrupted CRC and with a stream torn mid-packet: the same runs, the
same ends, the same error. Then RelayStorage fed those runs stores the same files and state with both walks, and
the C walks refuse bad arguments instead of reading past them.
"""

from __future__ import annotations

import asyncio
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from binlogd.protocol import native
from binlogd.protocol.connection import DUMP_READ, ClientConfig, ReplicationClient, ReplicationError
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    FLAGS_OFFSET,
    FORMAT_DESCRIPTION_EVENT,
    HEARTBEAT_LOG_EVENT,
    ROTATE_EVENT,
)
from binlogd.protocol.dump_receiver import DumpReceiver
from binlogd.protocol.dump_runs import EventRun, scan_packets, scan_packets_py
from binlogd.protocol.events import build_event, iter_binlog
from binlogd.protocol.groups import GroupTracker
from binlogd.protocol.packets import frame
from binlogd.server.relay.storage import RelayError, RelayStorage

from tests.oracle_data import oracle_dir
from tests.test_relay_runs import _storage

BIG = (1 << 24) - 1  # a packet of this payload is followed by another part


def test_c_walk_is_built() -> None:
    assert native.dumpscan is not None, "protocol/_dumpscan.c is not built: pip install -e . (make deps)"


needs_c = pytest.mark.skipif(native.dumpscan is None, reason="the C walk is not built (test_c_walk_is_built fails)")


class _NoWriter:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return True

    async def wait_closed(self) -> None:
        pass


class _Transport:
    """What DumpReceiver asks of a transport."""

    def __init__(self) -> None:
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


async def _pump(rx: DumpReceiver, stream: bytes, cuts: list[int]) -> None:
    """The transport's side: each read's bytes into the receiver's buffer, as far as it takes them."""
    transport = rx.transport
    assert isinstance(transport, _Transport)
    at = 0
    for cut in [*cuts, len(stream)]:
        while at < cut:
            if not transport.reading:
                await asyncio.sleep(0)
                continue
            free = rx.get_buffer(-1)
            k = min(len(free), cut - at)
            free[:k] = stream[at : at + k]
            rx.buffer_updated(k)
            at += k
        await asyncio.sleep(0)
    rx.eof_received()


def _receive(stream: bytes, alg: int, cuts: list[int],
             buffer: int | None = None) -> tuple[list[tuple[bytes, list[int], bool]], Any]:
    """What `event_runs()` yields for `stream` arriving in reads ending at `cuts`, and how it ended: through a
    StreamReader, or with `buffer` through a DumpReceiver of that size (what a dump without TLS uses)."""

    async def run() -> tuple[list[tuple[bytes, list[int], bool]], Any]:
        reader = asyncio.StreamReader(limit=1 << 20)
        client = ReplicationClient(ClientConfig(host="127.0.0.1", port=1, server_id=9), reader,
                                   _NoWriter())  # type: ignore[arg-type]
        client._dumping = True
        client._packets.expected_seq = 1
        client._packets.max_payload = 1 << 30
        client.checksum_alg_before_fd = alg
        pump = None
        if buffer is None:
            at = 0
            for cut in [*cuts, len(stream)]:
                reader.feed_data(stream[at:cut])
                at = cut
            reader.feed_eof()
        else:
            rx = client._receiver = DumpReceiver(asyncio.Protocol(), buffer)
            rx.transport = _Transport()  # type: ignore[assignment]
            pump = asyncio.create_task(_pump(rx, stream, cuts))
        got: list[tuple[bytes, list[int], bool]] = []
        end: Any = None
        try:
            async for r, ack in client.event_runs():
                got.append((r.data, r.ends.tolist(), ack))
        except ReplicationError as e:
            end = (e.code, str(e))
        if pump is not None:
            pump.cancel()
        return got, end

    return asyncio.run(run())


def _both(stream: bytes, alg: int, cuts: list[int], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`_receive` with the C walk and with the Python walk, through a StreamReader and through DumpReceivers (a
    small one that must grow for large packets, and the dump's own size): all must agree; the answer."""
    fast = _receive(stream, alg, cuts)
    with monkeypatch.context() as m:
        m.setattr(native, "dumpscan", None)
        slow = _receive(stream, alg, cuts)
    assert fast == slow
    for size in (1 << 12, DUMP_READ):  # other reads, so other runs: the same events, ends, acks and end
        assert _flat(_receive(stream, alg, cuts, size)) == _flat(fast), size
    return fast


def _flat(received: tuple[list[tuple[bytes, list[int], bool]], Any]) -> tuple[bytes, list[int], list[int], Any]:
    """`_receive`'s answer without the cuts between runs: the events, their ends, where acks are asked, the end."""
    runs, end = received
    ends: list[int] = []
    acks: list[int] = []
    size = 0
    for data, run_ends, ack in runs:
        ends += [size + e for e in run_ends]
        size += len(data)
        if ack:
            acks.append(size)
    return b"".join(d for d, _, _ in runs), ends, acks, end


def _cuts(n: int, seed: int, k: int = 40) -> list[int]:
    rnd = random.Random(seed)
    return sorted(rnd.sample(range(1, n), min(k, n - 1))) if n > 1 else []


def _event(typ: int, pos: int, body: bytes, flags: int = 0) -> bytes:
    length = 19 + len(body) + 4
    ev = struct.pack("<IBIIIH", 0, typ, 1, length, pos + length, flags) + body
    return ev + struct.pack("<I", zlib.crc32(ev))


def _packets(evs: list[bytes], seq: int = 1) -> bytes:
    out = bytearray()
    for ev in evs:
        seq = frame(b"\0" + ev, seq, out)
    return bytes(out)


def _fake_rotate(name: str, pos: int = 4) -> bytes:
    return build_event(type_code=ROTATE_EVENT, body=pos.to_bytes(8, "little") + name.encode(), server_id=1,
                       log_pos=0, flags=0x20, checksum=True)


def _heartbeat(name: str) -> bytes:
    return build_event(type_code=HEARTBEAT_LOG_EVENT, body=name.encode(), server_id=1, log_pos=0, flags=0x20,
                       checksum=True)


@pytest.fixture(scope="module")
def crc_file_events() -> list[bytes]:
    """mysql-bin.000001 of the oracle (a real 10.11 primary's file with CRC32), its events."""
    return [bytes(e) for _, e in iter_binlog((oracle_dir() / "mysql-bin.000001").read_bytes())]


def _raw_streams() -> list[Path]:
    root = oracle_dir()
    return sorted([*root.glob("*.raw"), *root.parent.glob("multidomain/dump/*.raw")])


@needs_c
@pytest.mark.parametrize("raw", _raw_streams(), ids=lambda p: p.stem)
def test_real_streams_read_alike(raw: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every captured MariaDB dump stream, with either checksum algorithm before the FDE, in whole and cut reads."""
    stream = raw.read_bytes()
    for alg in (BINLOG_CHECKSUM_ALG_CRC32, BINLOG_CHECKSUM_ALG_OFF):
        for cuts in ([], _cuts(len(stream), 1), _cuts(len(stream), 2, 400)):
            _both(stream, alg, cuts, monkeypatch)


def _long_stream(events: list[bytes], big: bool = True) -> tuple[bytes, list[bytes]]:
    """The file streamed from 4 (fake ROTATE, FDE, ...) with, between its events, heartbeats, an ignorable event of
    an unknown type, a second FDE, and (`big`) events just below, at and above the 16 MiB packet boundary."""
    name = "mysql-bin.000001"
    evs = [_fake_rotate(name), *events[:-1]]
    mid = len(evs) // 2
    pos = struct.unpack_from("<I", evs[mid], 13)[0]
    extra = [_heartbeat(name), _event(200, pos, b"i" * 40, flags=0x80), events[0]]
    for size in (BIG - 1 - 23 - 1, 50, BIG - 1 - 23, 60, BIG - 23, 70) if big else (50, 60):
        extra.append(_event(29, pos, b"x" * size))
    evs = [*evs[:mid], *extra, *evs[mid:], _heartbeat(name)]
    return _packets(evs), evs


@needs_c
def test_a_long_stream_with_big_and_odd_events(crc_file_events: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    stream, evs = _long_stream(crc_file_events)
    for cuts in ([], _cuts(len(stream), 3, 400)):
        got, end = _both(stream, BINLOG_CHECKSUM_ALG_CRC32, cuts, monkeypatch)
        assert end is not None and end[0] == 2013  # closed by the peer after the last packet
        assert b"".join(d for d, _, _ in got) == b"".join(evs)


@needs_c
def test_a_bad_crc_and_a_torn_end(crc_file_events: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """A flipped byte in an event after a long run, and a stream that stops inside a packet."""
    stream, evs = _long_stream(crc_file_events, big=False)
    good = len(_packets(evs[:60]))
    bad = bytearray(stream)
    bad[good + 5 + 30] ^= 0x10
    for cuts in ([], _cuts(len(bad), 5)):
        got, end = _both(bytes(bad), BINLOG_CHECKSUM_ALG_CRC32, cuts, monkeypatch)
        assert end[0] == 1743 and b"".join(d for d, _, _ in got) == b"".join(evs[:60])
    torn = stream[: good + 20]
    got, end = _both(torn, BINLOG_CHECKSUM_ALG_CRC32, _cuts(len(torn), 6), monkeypatch)
    assert end[0] == 2013 and b"".join(d for d, _, _ in got) == b"".join(evs[:60])


@needs_c
def test_scan_stops_where_the_python_scan_stops(crc_file_events: list[bytes]) -> None:
    """scan_packets directly, for each thing that ends a scan: the same run and offsets as the numpy walk."""
    plain = [e for e in crc_file_events if e[4] != FORMAT_DESCRIPTION_EVENT][:80]
    base = _packets(plain)
    at = len(_packets(plain[:50]))  # the 51st packet gets spoiled
    spoils: list[tuple[str, bytes]] = [("none", base), ("seq", base[: at + 3] + b"\x07" + base[at + 4 :]),
                                       ("marker", base[: at + 4] + b"\x01" + base[at + 5 :]),
                                       ("fde", base[: at + 9] + bytes((FORMAT_DESCRIPTION_EVENT,)) + base[at + 10 :]),
                                       ("length", base[: at + 14] + b"\x01" + base[at + 15 :]),
                                       ("crc", base[: at + 40] + bytes((base[at + 40] ^ 1,)) + base[at + 41 :]),
                                       ("short", base[:at] + _packets([b"\x00" * 10], 51) + base[at:]),
                                       ("torn", base[: at + 30])]
    for why, data in spoils:
        for crc in (True, False):
            for start, seq in ((0, 1), (len(_packets(plain[:3])), 4)):
                c, py = scan_packets(data, seq, crc, start), scan_packets_py(data, seq, crc, start)
                assert c.run is not None and py.run is not None, why
                assert (c.run.data, c.run.ends.tolist(), c.packets, c.used) == (
                    py.run.data, py.run.ends.tolist(), py.packets, py.used), (why, crc, start)
    assert scan_packets(base[:at], 1, True).packets == 50
    assert scan_packets(base, 2, True).run is None  # the first packet is out of sequence


def _summary(st: RelayStorage) -> tuple[object, ...]:
    s = st.status
    return (st.w.committed, st.w.end, st.end, st.complete, len(st.buf), s.events_stored, s.groups_stored,
            s.gtid_io_pos, s.stored_pos, st.last_ts, st.tracker.state, list(st._pending_gtids), s.heartbeats)


@needs_c
@pytest.mark.parametrize("multidomain", [False, True])
def test_storage_stores_alike(tmp_path: Path, multidomain: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs the client yields for the oracle's files (cut into batches of varied size) stored with the C walk
    (group edges) and the Python walk: the same files, byte for byte, and the same state after every batch."""
    root = oracle_dir().parent / "multidomain" / "dump" if multidomain else oracle_dir()
    files = sorted(p for p in root.glob("mysql-bin.0*") if p.suffix != ".index")
    evs: list[bytes] = []
    for f in files:
        file_evs = [bytes(e) for _, e in iter_binlog(f.read_bytes())]
        evs += [_fake_rotate(f.name), *file_evs]
    stream = _packets(evs)
    runs, _ = _receive(stream, BINLOG_CHECKSUM_ALG_CRC32, _cuts(len(stream), 7, 60))
    batches = [runs[k : k + n] for k, n in zip(range(0, len(runs), 3), [1, 2, 3] * len(runs), strict=False)]

    def store(sub: str) -> tuple[list[tuple[object, ...]], dict[str, bytes]]:
        st = _storage(tmp_path, sub)
        seen = []
        for batch in batches:
            try:
                st.feed([EventRun(d, np.array(e, dtype=np.int64)) for d, e, _ in batch])
            except RelayError as e:
                seen.append(("refused", e.message))
                st.abort()
            seen.append(_summary(st))
        out = {}
        for f in files:
            p = st.w.directory / f.name
            if p.exists():
                data = bytearray(p.read_bytes())
                data[BIN_LOG_HEADER_SIZE + FLAGS_OFFSET] &= ~1
                out[f.name] = bytes(data)
        return seen, out

    fast = store("c")
    with monkeypatch.context() as m:
        m.setattr(native, "dumpscan", None)
        slow = store("py")
    assert fast == slow
    assert fast[1] and len(fast[0]) == len(batches)
    for name, data in fast[1].items():
        src = bytearray((root / name).read_bytes())
        src[BIN_LOG_HEADER_SIZE + FLAGS_OFFSET] &= ~1
        assert data == src[: len(data)]


@needs_c
def test_feed_ends_equals_feed_per_event(crc_file_events: list[bytes]) -> None:
    """Group edges from the C walk (statement and row transactions, standalone DDL) equal feed() event by event,
    from every starting state and every cut of the run."""
    evs = [e for e in crc_file_events if e[4] != FORMAT_DESCRIPTION_EVENT]
    data = b"".join(evs)
    ends = np.cumsum([len(e) for e in evs], dtype=np.int64)
    for state in (0, 1, 2):
        for i in range(0, len(evs), 7):
            j = min(len(evs), i + 50)
            one, many = GroupTracker(), GroupTracker()
            one.state = many.state = state
            last, groups = -1, 0
            for k in range(i, j):
                if one.feed(data, int(ends[k - 1]) if k else 0, int(ends[k])):
                    last, groups = k - i, groups + 1
            assert many.feed_ends(data, ends, i, j) == (last, groups) and many.state == one.state


@needs_c
def test_the_c_walks_refuse_bad_arguments() -> None:
    """Out-of-range offsets and ends are refused (ValueError), never read."""
    assert native.dumpscan is not None
    scan, walk = native.dumpscan.scan_packets, native.dumpscan.walk_groups
    data = _packets([_event(2, 4, b"q" * 20)])
    with pytest.raises(ValueError):
        scan(data, 1, True, len(data) + 1)
    with pytest.raises(ValueError):
        scan(data, 1, True, -1)
    assert scan(data[:-1], 1, True, 0)[2] == 0  # torn
    assert scan(b"\xff\xff\xff\x01", 1, True, 0)[2] == 0  # a length past the end
    ev = _event(16, 4, b"x" * 8)  # an XID: inside a transaction the walk goes on to the next end
    for ends in ([len(ev) + 1], [10], [len(ev), len(ev) - 1]):
        with pytest.raises(ValueError):
            walk(ev, np.array(ends, dtype=np.int64), 0, len(ends), 2)
    good = np.array([len(ev)], dtype=np.int64)
    for i, j, state in ((0, 2, 2), (-1, 1, 2), (1, 0, 2), (0, 1, 7)):
        with pytest.raises(ValueError):
            walk(ev, good, i, j, state)
    with pytest.raises(ValueError):
        walk(ev, b"\x01\x02\x03", 0, 0, 0)  # not whole int64s


@needs_c
def test_store_gtid_walk_in_c_equals_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BinlogStore._add_gtids through gtid_walk (C) and through its Python walk, over the multi-domain oracle's
    binlog files cut at every event boundary and inside events (torn tails): the same end, the same state in the
    same order; an impossible event length: the same error."""
    from binlogd.protocol.binlog_file import BinlogFormatError, scan
    from binlogd.protocol.gtid import BinlogState
    from binlogd.server.binlog.store import BinlogStore

    src = oracle_dir().parent / "multidomain" / "dump"
    names = sorted(p.name for p in src.glob("mysql-bin.0*"))
    assert names
    for n in names:
        (tmp_path / n).write_bytes((src / n).read_bytes())
    bogus = bytearray((src / names[0]).read_bytes())
    ends = [e.end for e in scan(bytes(bogus)).events]
    struct.pack_into("<I", bogus, ends[len(ends) // 2] + 9, 7)  # an event shorter than its header
    (tmp_path / "mysql-bin.999999").write_bytes(bytes(bogus))
    store = BinlogStore(tmp_path)

    def walk(name: str, start: int, end: int, use_c: bool) -> tuple[Any, ...]:
        with monkeypatch.context() as m:
            if not use_c:
                m.setattr(native, "dumpscan", None)
            state = BinlogState()
            try:
                last = store._add_gtids(name, start, end, state)
            except BinlogFormatError as e:
                return ("error", str(e))
            return last, state.as_list(), [(d, g) for d, g in state._last.items()]

    rnd = random.Random(7)
    gtids = 0
    for n in [*names, "mysql-bin.999999"]:
        data = (tmp_path / n).read_bytes()
        bounds = ends if n == "mysql-bin.999999" else [e.end for e in scan(data).events] or [len(data)]
        cuts = sorted({*bounds, *(rnd.randrange(4, len(data) + 1) for _ in range(40)), len(data)})
        for end in cuts:
            c, py = walk(n, 4, end, True), walk(n, 4, end, False)
            assert c == py, (n, end)
            gtids = max(gtids, len(c[1]) if c[0] != "error" else 0)
        assert walk(n, bounds[0], len(data), True) == walk(n, bounds[0], len(data), False)
    assert gtids > 1  # the files hold GTIDs of several domains
    assert walk("mysql-bin.999999", 4, len(bogus), True)[0] == "error"


@needs_c
def test_audit_header_walk_in_c_equals_python(crc_file_events: list[bytes]) -> None:
    """The audit's header walk (spark_analytics/binlog_decode.walk): the C `event_starts` and `walk_py` find the
    same starts, end and error over a real file cut anywhere, with a bogus length and with a torn last event; a
    range outside the buffer is refused."""
    from binlogd.spark_analytics.binlog_decode import WalkEnd, walk, walk_py

    body = b"".join(crc_file_events)
    bogus = bytearray(body)
    at = len(crc_file_events[0]) + len(crc_file_events[1])  # the third event's length says 7
    struct.pack_into("<I", bogus, at + 9, 7)
    rng = random.Random(13)
    cases = [(b"\xfebin" + body, 4, 4 + len(body)), (b"\xfebin" + bytes(bogus), 4, 4 + len(bogus)),
             (b"\xfebin" + body[:-5], 4, len(body) - 1), (b"", 0, 0), (b"\xfebin", 4, 4)]
    for _ in range(200):
        buf = b"\xfebin" + body
        a = rng.randrange(4, len(buf))
        cases.append((buf, a, rng.randrange(a, len(buf) + 1)))
    for buf, start, stop in cases:
        c, p = WalkEnd(), WalkEnd()
        assert walk(buf, start, stop, c).tolist() == walk_py(buf, start, stop, p).tolist()
        assert (c.end, c.error) == (p.end, p.error)
    c = WalkEnd()
    assert walk(b"\xfebin" + bytes(bogus), 4, 4 + len(bogus), c).tolist() == [4, 4 + len(crc_file_events[0])]
    assert c.error == f"bogus event length 7 at {4 + at}"
    assert native.dumpscan is not None
    for start, stop in ((-1, 10), (10, 5), (0, len(body) + 1)):
        with pytest.raises(ValueError):
            native.dumpscan.event_starts(body, start, stop)
