"""A dump frames several shared blocks per loop turn while few dumps run (server/dump/stream.py `_chunk`, SPAN):
the bytes, counts and ledger records must be exactly those of the one-block path (BLOCK per turn), with the C loop
and with the Python loop.

The file is the oracle's events repeated (flagged ones, holes, dummies, BEGINs) between padding events placed so
that event headers and bodies cross block and span ends, with events longer than a block and than a span, and a
torn event at the end of a rotated file (ERR 1236 with MariaDB's coordinates).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from binlogd.protocol.decision import Compat
from binlogd.server.binlog.store import BLOCK, BinlogStore, BlockCache
from binlogd.server.dump import DumpParams, DumpStream, framing, stream
from binlogd.server.dump.framing import Blocks
from binlogd.server.ledger import Ledger

from tests.dumpclient import MemorySink
from tests.oracle_data import oracle_dir


def _event(typ: int, pos: int, body: bytes, flags: int = 0) -> bytes:
    length = 19 + len(body) + 4
    ev = struct.pack("<IBIIIH", 0, typ, 1, length, pos + length, flags) + body
    return ev + struct.pack("<I", zlib.crc32(ev))


def _relocated(ev: bytes, pos: int) -> bytes:
    """`ev` (with its CRC32) moved to `pos`: its log_pos and CRC fixed up."""
    body = bytearray(ev[:-4])
    struct.pack_into("<I", body, 13, pos + len(ev))
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def _write_files(directory: Path, torn: bool) -> int:
    """mysql-bin.000001 of several spans (ends with a torn event when `torn`), mysql-bin.000002 the oracle's."""
    src = (oracle_dir() / "mysql-bin.000001").read_bytes()
    fde_end = 4 + struct.unpack_from("<I", src, 4 + 9)[0]
    evs = []  # the oracle's events after its FDE
    p = fde_end
    while p + 19 <= len(src):
        n = struct.unpack_from("<I", src, p + 9)[0]
        evs.append(src[p:p + n])
        p += n
    head, body = evs[:2], evs[2:]  # GTID_LIST and BINLOG_CHECKPOINT stay first
    data = bytearray(src[:fde_end])
    for ev in head:
        data += _relocated(ev, len(data))
    rng = random.Random(12)
    sizes = [BLOCK - 7, 3 * BLOCK + 11, 9 * BLOCK, stream.SPAN + 5, 2 * stream.SPAN + BLOCK]
    while len(data) < 3 * stream.SPAN + 3 * BLOCK:
        for ev in body:
            data += _relocated(ev, len(data))
        gap = BLOCK - len(data) % BLOCK
        # a padding event that ends 0-40 bytes before a block end: the next header crosses it
        if gap > 80:
            data += _event(29, len(data), b"p" * (gap - 23 - rng.randrange(0, 41)))
        if rng.random() < 0.3:
            data += _event(29, len(data), b"L" * sizes[rng.randrange(len(sizes))], flags=rng.choice((0, 0x8000)))
    if torn:
        data += _event(29, len(data), b"t" * 5000)[:3000]
    (directory / "mysql-bin.000001").write_bytes(bytes(data))
    (directory / "mysql-bin.000002").write_bytes((oracle_dir() / "mysql-bin.000002").read_bytes())
    (directory / "mysql-bin.index").write_text("./mysql-bin.000001\n./mysql-bin.000002\n")
    return len(data)


def _params(cap: int, skip: bool, flags: int, compat: Compat) -> DumpParams:
    return DumpParams(file="mysql-bin.000001", pos=4, flags=flags, replica_server_id=0, capability=cap,
                      skip_replication=skip, checksum_aware=True, first_rotate_crc=True, compat=compat)


class _Spans(DumpStream):
    """A DumpStream that notes the longest chunk it framed (which path `_chunk` took)."""

    longest = 0
    in_blocks = 0  # chunks the C loop framed where they lie in the shared blocks (framing.Blocks)
    chunks = 0  # `_chunk` calls (reads of the file)

    async def _chunk(self, fd: int, ino: int, pos: int, end: int) -> bytes | memoryview | Blocks:
        _Spans.chunks += 1
        data = await super()._chunk(fd, ino, pos, end)
        _Spans.longest = max(_Spans.longest, len(data))
        return data

    async def _process_blocks(self, blocks: Blocks, base: int) -> int:
        _Spans.in_blocks += 1
        return await super()._process_blocks(blocks, base)


async def _dump(directory: Path, params: DumpParams, fast: bool, ledger_dir: Path | None,
                store: BinlogStore | None = None) -> tuple[bytes, tuple[int, ...], list[dict[str, object]]]:
    """The stream, its counts and its ledger records (timestamps left out; none without `ledger_dir`), on a store of
    its own or on `store`."""
    sink = MemorySink()
    ledger = None
    if ledger_dir is not None:
        shutil.rmtree(ledger_dir, ignore_errors=True)
        ledger_dir.mkdir()
        ledger = Ledger.open(ledger_dir)
        ledger.start()
    d = _Spans(store or BinlogStore(directory), sink, 1, params, ledger=ledger)
    d.fast_loop = fast
    await d.run()
    recs: list[dict[str, object]] = []
    if ledger is not None and ledger_dir is not None:
        await asyncio.to_thread(ledger.close)
        recs = [json.loads(line) for f in sorted(ledger_dir.glob("ledger.*.jsonl"))
                for line in f.read_text().splitlines()]
    for r in recs:
        r.pop("ts_us", None)
    st = d.stats
    return bytes(sink.data), (st.events_sent, st.events_read, st.holes, st.dummies, st.begins, d.sent_upto), recs


@pytest.mark.parametrize("ledger", [True, False])
@pytest.mark.parametrize("torn", [False, True])
def test_spans_frame_what_blocks_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torn: bool,
                                       ledger: bool) -> None:
    """Without the ledger the C loop frames a span where it lies in the shared blocks (`framing.Blocks`): the same
    bytes and counts as the joined span, the one-block path and the Python loop."""
    size = _write_files(tmp_path, torn)
    ledger_dir = tmp_path / "ledger" if ledger else None
    assert size > 3 * stream.SPAN

    async def run() -> None:
        for compat, cap, skip, flags in ((Compat.BINLOGD, 4, False, 1), (Compat.BINLOGD, 4, True, 3),
                                         (Compat.MARIADB, 0, True, 1), (Compat.BINLOGD, 2, False, 3),
                                         (Compat.MARIADB, 1, False, 1)):
            p = _params(cap, skip, flags, compat)
            first = None
            for fast in (True, False):
                _Spans.longest = _Spans.in_blocks = 0
                monkeypatch.setattr(stream, "FEW_DUMPS", 1 << 30)
                spans = await _dump(tmp_path, p, fast, ledger_dir)
                assert _Spans.longest > 2 * BLOCK  # several blocks per turn
                # (the C loop framed the blocks where they lie; without the extension, never)
                assert (_Spans.in_blocks > 0) == (fast and not ledger and framing.frame_sends is not None)
                _Spans.longest = _Spans.in_blocks = 0
                with monkeypatch.context() as m:
                    m.setattr(stream, "SPAN", BLOCK)  # the one-block path: a block per turn
                    blocks = await _dump(tmp_path, p, fast, ledger_dir)
                assert _Spans.in_blocks == 0
                assert _Spans.longest <= 2 * stream.SPAN + BLOCK + 23  # (a long event alone)
                assert spans == blocks, (compat, cap, skip, flags, fast)
                _Spans.longest = 0
                with monkeypatch.context() as m:
                    m.setattr(stream, "FEW_DUMPS", -1)  # as with many dumps: MANY_SPAN per turn
                    blocks = await _dump(tmp_path, p, fast, ledger_dir)
                assert _Spans.longest <= max(stream.MANY_SPAN, 2 * stream.SPAN + BLOCK + 23)
                assert spans == blocks, (compat, cap, skip, flags, fast)
                assert spans[1][0] > 100
                assert len(spans[2]) >= 5 or not ledger  # conn, rotate, FDE, the run(s), close
                if torn:
                    assert spans[0].rfind(b"\xff\xd4\x04") > len(spans[0]) - 400  # ERR 1236 at the end
                first = first or spans
                assert spans == first  # the C loop and the Python loop
    asyncio.run(run())


def test_read_run_shares_reads_and_ends_where_the_file_does(tmp_path: Path) -> None:
    """`BlockCache.read_run`: blocks cached, in flight and missing in one run; concurrent runs over the same blocks
    get the same bytes; a run past the file's end gets blocks cut where the read ended (as `read` does)."""
    data = random.Random(5).randbytes(5 * BLOCK + 100)
    path = tmp_path / "f"
    path.write_bytes(data)
    cache = BlockCache()

    def keys(b0: int, n: int, lengths: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
        return [(b0 + i * BLOCK, lengths[i]) for i in range(n)], lengths

    async def run() -> None:
        with path.open("rb") as f:
            fd = f.fileno()
            one = await cache.read((BLOCK, BLOCK), fd, BLOCK, BLOCK)  # block 1 cached before
            assert one == data[BLOCK:2 * BLOCK]
            cache.start_run(*keys(3 * BLOCK, 1, [BLOCK]), fd, 3 * BLOCK)  # block 3 in flight
            ks, ls = keys(0, 5, [BLOCK] * 5)
            a, b = await asyncio.gather(cache.read_run(ks, ls, fd, 0), cache.read_run(ks, ls, fd, 0))
            assert b"".join(a) == b"".join(b) == data[:5 * BLOCK]
            ks, ls = keys(5 * BLOCK, 2, [BLOCK, BLOCK])  # the file ends 100 bytes into the first
            tail = await cache.read_run(ks, ls, fd, 5 * BLOCK)
            assert [bytes(t) for t in tail] == [data[5 * BLOCK:], b""]

    asyncio.run(run())


def test_heap_settings_apply_on_glibc() -> None:
    """server/dump/heap.py: the settings the dump's big buffers rely on are accepted (this machine runs glibc)."""
    import platform

    from binlogd.server.dump.heap import tune_malloc

    assert tune_malloc() == (platform.libc_ver()[0] == "glibc")


def test_concurrent_span_dumps_share_reads_and_get_their_streams(tmp_path: Path) -> None:
    """Dumps of several settings at once on one store (reads ahead in flight, shared blocks and framings) get what
    each gets alone."""
    _write_files(tmp_path, torn=False)
    settings = [_params(4, False, 1, Compat.BINLOGD), _params(4, False, 1, Compat.BINLOGD),
                _params(0, True, 1, Compat.MARIADB), _params(2, False, 3, Compat.BINLOGD)]

    async def one(store: BinlogStore, p: DumpParams) -> bytes:
        sink = MemorySink()
        await DumpStream(store, sink, 1, p).run()
        return bytes(sink.data)

    async def run() -> None:
        alone = [await one(BinlogStore(tmp_path), p) for p in settings]
        shared = BinlogStore(tmp_path)
        together = await asyncio.gather(*(one(shared, p) for p in settings))
        assert list(together) == alone
        assert alone[0] == alone[1] and len(alone[0]) > 2 * stream.SPAN

    assert stream.FEW_DUMPS >= 4  # (the span path)
    asyncio.run(run())


@pytest.mark.parametrize("ledger", [True, False])
def test_a_span_framed_by_another_dump_is_taken_before_the_read(tmp_path: Path, ledger: bool) -> None:
    """A dump at a position whose span another dump in the same state already framed takes that framing without
    reading the span (`DumpStream._framed_span`, looked up by the span's range before `_chunk`): the same bytes,
    counts and ledger records as the dump that read and framed it, for every setting."""
    _write_files(tmp_path, torn=False)

    async def run() -> None:
        for i, (compat, cap, skip, flags) in enumerate(((Compat.BINLOGD, 4, False, 1), (Compat.MARIADB, 0, True, 1),
                                                        (Compat.BINLOGD, 2, False, 3))):
            p = _params(cap, skip, flags, compat)
            store = BinlogStore(tmp_path)
            _Spans.chunks = 0
            first = await _dump(tmp_path, p, True, tmp_path / f"l{i}a" if ledger else None, store)
            read_first = _Spans.chunks
            _Spans.chunks = 0
            second = await _dump(tmp_path, p, True, tmp_path / f"l{i}b" if ledger else None, store)
            assert second == first, (compat, cap, skip, flags)
            assert _Spans.chunks < read_first / 2, (_Spans.chunks, read_first)  # the spans were not read again
            alone = await _dump(tmp_path, p, True, tmp_path / f"l{i}c" if ledger else None)
            assert alone == first

    asyncio.run(run())


def test_read_now_reads_cached_runs_on_the_loop_or_declines(tmp_path: Path) -> None:
    """`BlockCache.read_now` (a dump running alone reads a span without a thread hand-off): the file's bytes, block by
    block, kept for the next reader; None (then `read_run`) when a block of the run is in flight or the pages are not
    all in the page cache; the same blocks as `read_run` either way."""
    from binlogd.server.binlog import store as store_mod

    data = random.Random(7).randbytes(6 * BLOCK + 100)
    path = tmp_path / "f"
    path.write_bytes(data)

    def run_of(b0: int, n: int) -> tuple[list[tuple[int, int]], list[int]]:
        return [(b0 + i * BLOCK, BLOCK) for i in range(n)], [BLOCK] * n

    async def run() -> None:
        with path.open("rb") as f:
            fd = f.fileno()
            os.pread(fd, len(data), 0)  # in the page cache
            cache = BlockCache()
            first = await cache.read((0, BLOCK), fd, 0, BLOCK)  # block 0 cached before (the last span's end)
            got = cache.read_now(*run_of(0, 4), fd, 0)
            if not store_mod._NOWAIT:  # (this file system cannot tell what is cached: the threads read)
                assert got is None
                return
            assert got is not None and b"".join(got) == data[:4 * BLOCK]
            assert got[0] is first and cache.cached((2 * BLOCK, BLOCK)) is got[2]  # kept for the next reader
            assert cache.read_now(*run_of(0, 4), fd, 0) == got  # all cached now: nothing read
            cache.start_run(*run_of(5 * BLOCK, 1), fd, 5 * BLOCK)  # block 5 in flight: declined
            assert cache.read_now(*run_of(4 * BLOCK, 2), fd, 4 * BLOCK) is None
            assert b"".join(await cache.read_run(*run_of(4 * BLOCK, 2), fd, 4 * BLOCK)) == data[4 * BLOCK:6 * BLOCK]
            other = BlockCache()
            await other.read((BLOCK, BLOCK), fd, BLOCK, BLOCK)  # the blocks to read are not one run: declined
            assert other.read_now(*run_of(0, 3), fd, 0) is None
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # (a hint: the pages may stay)
            got = BlockCache().read_now(*run_of(0, 6), fd, 0)
            assert got is None or b"".join(got) == data[:6 * BLOCK]

    asyncio.run(run())
