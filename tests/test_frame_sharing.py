"""Dumps in the same state share one framing of each chunk (FrameCache); the bytes must not change."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from binlogd.protocol.decision import Compat
from binlogd.protocol.packets import frame
from binlogd.server.binlog.store import BinlogStore
from binlogd.server.dump import DumpParams, DumpStream, FrameCache, FramedChunk, frames_of
from binlogd.server.dump.framing import reseq

from tests.dumpclient import MemorySink
from tests.oracle_data import oracle_dir


def _params(capability: int, skip: bool, seq_file: str = "mysql-bin.000001") -> DumpParams:
    return DumpParams(file=seq_file, pos=4, flags=1, replica_server_id=9, capability=capability,
                      skip_replication=skip, checksum_aware=True, first_rotate_crc=True, compat=Compat.BINLOGD)


async def _dump(store: BinlogStore, params: DumpParams, seq: int = 1) -> bytes:
    sink = MemorySink()
    await DumpStream(store, sink, 1, params, seq=seq).run()
    return bytes(sink.data)


def test_same_state_shares_framing_and_bytes(tmp_path: Path) -> None:
    for n in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copy(oracle_dir() / n, tmp_path / n)
    shared = BinlogStore(tmp_path)

    async def run() -> None:
        for cap, skip in ((4, False), (4, True), (0, True), (2, False)):
            fresh = await _dump(BinlogStore(tmp_path), _params(cap, skip))  # a store of its own: no sharing
            hits = frames_of(shared).hits
            first = await _dump(shared, _params(cap, skip))
            second = await _dump(shared, _params(cap, skip))
            assert first == second == fresh
            assert frames_of(shared).hits > hits  # the second dump reused the first one's packets
        # another sequence id or policy is another key: no wrong reuse; a small chunk framed at another sequence
        # id is renumbered (these files' chunks are small), and the bytes are a fresh dump's at that sequence id
        misses, renumbered = frames_of(shared).misses, frames_of(shared).renumbered
        other_seq = await _dump(shared, _params(4, False), seq=2)
        assert frames_of(shared).misses > misses
        assert frames_of(shared).renumbered > renumbered
        assert other_seq != await _dump(shared, _params(4, False))
        assert other_seq == await _dump(BinlogStore(tmp_path), _params(4, False), seq=2)
        for seq in (255, 0, 77):  # around the wrap of the one-byte sequence id, and a renumbered chunk renumbered
            assert await _dump(shared, _params(4, False), seq=seq) == await _dump(BinlogStore(tmp_path),
                                                                                  _params(4, False), seq=seq)

    asyncio.run(run())


def test_reseq_renumbers_every_packet() -> None:
    """The packets of a chunk renumbered from another sequence id equal the chunk framed from that one (across the
    one-byte wrap, with a packet over 64 KiB: all three bytes of its length read)."""
    events = [bytes([i]) * n for i, n in enumerate((19, 300, 70_000, 40))]

    def framed(seq: int) -> FramedChunk:
        out = bytearray()
        for ev in events:
            seq = frame(b"\0" + ev, seq, out)
        return FramedChunk(framed=out, consumed=0, seq_after=seq, sent=len(events), read=len(events), holes=0,
                           dummies=0, begins=0, sent_end=-1, need=0)

    for a, b in ((1, 2), (250, 3), (3, 254), (0, 255)):
        got = reseq(framed(a), a, b)
        assert got is not None and got.framed == framed(b).framed and got.seq_after == framed(b).seq_after
    torn = framed(1)
    assert reseq(FramedChunk(**{**{f: getattr(torn, f) for f in torn.__slots__}, "framed": torn.framed[:-1]}),
                 1, 2) is None


def test_frame_cache_grows_while_few_dumps_want_what_it_evicted(tmp_path: Path) -> None:
    """While few dumps run, the frame cache may grow (by FRAMES_PER_DUMP per dump) as far as chunks it evicted are
    wanted again (dumps further apart than it holds each framed them again); more than FEW_DUMPS keep the fixed
    FRAME_CACHE (a connection's share of RSS stays bounded with 200); a smaller limit shrinks it at once."""
    from binlogd.server.dump import stream
    from binlogd.server.dump.stream import FEW_DUMPS, FRAME_CACHE, frame_cache_limit

    assert frame_cache_limit(0) == frame_cache_limit(1) == FRAME_CACHE
    assert frame_cache_limit(FEW_DUMPS) == FEW_DUMPS * stream.FRAMES_PER_DUMP > FRAME_CACHE
    assert frame_cache_limit(FEW_DUMPS + 1) == frame_cache_limit(200) == FRAME_CACHE

    def chunk() -> FramedChunk:
        return FramedChunk(bytearray(40), 40, 2, 1, 1, 0, 0, 0, 40, 0)

    cache = FrameCache(max_bytes=100)
    cache.GROW = 40
    for i in range(3):
        cache.put((0, 0, i, 40, 1), chunk())
    assert cache.get((0, 0, 0, 40, 1)) is None and cache.max_bytes == 100  # evicted; no room to grow (limit)
    cache.resize(1000)
    for i in range(3, 6):
        cache.put((0, 0, i, 40, 1), chunk())  # evicts 1, 2, 3 (remembered now)
    assert cache.get((0, 0, 9, 40, 1)) is None and cache.max_bytes == 100  # never framed: no growth
    assert cache.get((0, 0, 2, 40, 1)) is None and cache.max_bytes == 140  # framed, evicted, wanted again
    cache.put((0, 0, 2, 40, 1), chunk())
    assert all(cache.get((0, 0, i, 40, 1)) is not None for i in (2, 4, 5))
    cache.resize(80)  # many dumps now: down at once, never below its first bound
    assert cache.max_bytes == 100 and cache.get((0, 0, 2, 40, 1)) is None  # (the least recently used)
    assert cache.get((0, 0, 4, 40, 1)) is not None and cache.get((0, 0, 5, 40, 1)) is not None

    for n in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copy(oracle_dir() / n, tmp_path / n)
    store = BinlogStore(tmp_path)
    seen: list[int] = []

    class Watching(MemorySink):
        def write(self, data: bytes) -> None:
            seen.append(frames_of(store).limit)
            super().write(data)

    async def run() -> None:
        async def one() -> None:
            await DumpStream(store, Watching(), 1, _params(4, False)).run()
        await asyncio.gather(one(), one(), one())

    asyncio.run(run())
    assert max(seen) == frame_cache_limit(3)  # while three ran
    assert frames_of(store).limit == FRAME_CACHE  # after
