"""The C loop for runs of sends (server/dump/_cframe.c) frames exactly what the Python loop frames.

Every policy the decision table knows (capabilities 0-4, skip_replication, the annotate flag, both compat policies)
over the oracle's binlogs (flagged events, holes, dummies, BEGINs, rotations) and over a file of events around the
16 MiB packet boundary: the same bytes and the same counts with the C loop on and off.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from binlogd.protocol.decision import Compat
from binlogd.server.binlog.store import BinlogStore
from binlogd.server.dump import DumpParams, DumpStream, framing

from tests.dumpclient import MemorySink
from tests.oracle_data import oracle_dir


def _params(cap: int, skip: bool, flags: int, compat: Compat) -> DumpParams:
    return DumpParams(file="mysql-bin.000001", pos=4, flags=flags, replica_server_id=0, capability=cap,
                      skip_replication=skip, checksum_aware=True, first_rotate_crc=True, compat=compat)


async def _dump(directory: Path, params: DumpParams, fast: bool) -> tuple[bytes, tuple[int, ...]]:
    sink = MemorySink()
    d = DumpStream(BinlogStore(directory), sink, 1, params)
    d.fast_loop = fast
    await d.run()
    st = d.stats
    return bytes(sink.data), (st.events_sent, st.events_read, st.holes, st.dummies, st.begins, d.sent_upto)


def test_c_loop_is_built() -> None:
    assert framing.frame_sends is not None, "server/dump/_cframe.c is not built: pip install -e . (make deps)"


@pytest.mark.skipif(framing.frame_sends is None, reason="the C loop is not built (test_c_loop_is_built fails)")
def test_c_loop_frames_what_the_python_loop_frames(tmp_path: Path) -> None:
    for n in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copy(oracle_dir() / n, tmp_path / n)

    async def run() -> None:
        for compat in (Compat.BINLOGD, Compat.MARIADB):
            for cap in range(5):
                for skip in (False, True):
                    for flags in (1, 3):
                        p = _params(cap, skip, flags, compat)
                        fast, slow = await _dump(tmp_path, p, True), await _dump(tmp_path, p, False)
                        assert fast == slow, (compat, cap, skip, flags)
                        assert fast[1][0] > 2  # events were sent (not an empty or refused dump)

    asyncio.run(run())


def _event(typ: int, pos: int, body: bytes, flags: int = 0) -> bytes:
    """An event with its CRC32 (the oracle's binlogs are CRC32)."""
    length = 19 + len(body) + 4
    ev = struct.pack("<IBIIIH", 0, typ, 1, length, pos + length, flags) + body
    return ev + struct.pack("<I", zlib.crc32(ev))


def test_c_loop_around_the_packet_boundary(tmp_path: Path) -> None:
    """Events just below, at and above 16 MiB - 1 (several packets: the Python path), between small ones."""
    if framing.frame_sends is None:
        pytest.fail("server/dump/_cframe.c is not built: pip install -e . (make deps)")
    src = oracle_dir() / "mysql-bin.000001"
    head = src.read_bytes()
    fde_len = struct.unpack_from("<I", head, 4 + 9)[0]
    data = bytearray(head[:4 + fde_len])
    for size in (100, (1 << 24) - 1 - 23 - 1, 50, (1 << 24) - 1 - 23, 60, (1 << 24) - 23, 70):
        data += _event(29, len(data), b"x" * size)  # ROWS_QUERY-like ignorable events, sent as stored
    (tmp_path / "mysql-bin.000001").write_bytes(bytes(data))
    (tmp_path / "mysql-bin.index").write_text("./mysql-bin.000001\n")

    async def run() -> None:
        p = DumpParams(file="mysql-bin.000001", pos=4, flags=1, replica_server_id=0, capability=4,
                       skip_replication=False, checksum_aware=True, first_rotate_crc=True)
        fast, slow = await _dump(tmp_path, p, True), await _dump(tmp_path, p, False)
        assert fast == slow
        assert fast[1][0] == 1 + 7 + 1  # fake ROTATE, FDE, the 7 events
        assert len(fast[0]) > 3 * (1 << 24)

    asyncio.run(run())


def test_c_loop_over_parts_frames_what_it_frames_over_one_buffer() -> None:
    """`frame_sends` over a tuple of buffers (a span left in the shared blocks) frames what it frames over their
    concatenation, whatever the cuts (inside headers, inside events, empty parts) and from any start; the actions
    (sends, holes, others), sequence ids and an incomplete last event as in one buffer."""
    if framing.frame_sends is None:
        pytest.fail("server/dump/_cframe.c is not built: pip install -e . (make deps)")
    import random

    rng = random.Random(12)
    data = bytearray()
    starts = []
    while len(data) < 300_000:
        starts.append(len(data))
        data += _event(rng.choice((2, 15, 16, 19, 29, 33, 160, 162)), len(data),
                       rng.randbytes(rng.choice((0, 7, 15, 19, 21, 300, 4000))), flags=rng.choice((0, 0x8000)))
    data += _event(29, len(data), b"t" * 500)[:200]  # incomplete
    data = bytes(data)
    framed = rewritten = 0
    for trial in range(60):
        acts = bytearray(rng.choice((0, 0, 0, 1, 2)) if trial % 3 else 0 for _ in range(512))
        holes = bool(trial % 2)
        # rewrites (dummies, BEGINs, a GTID's answer by its bits) in half the trials, across the cuts too
        rw: tuple[bytes, bool] | tuple[()] = ()
        if trial % 4 >= 2:
            rw = (bytes(rng.choice((0, 1, 2, 3)) for _ in range(4)), True)
            acts[160] = acts[160 | 0x100] = 2
            acts[162] = acts[162 | 0x100] = rng.choice((3, 4))
        cuts = sorted(rng.sample(range(1, len(data)), rng.randrange(1, 40)))
        if trial % 5 == 0:
            cuts += [cuts[-1]]  # an empty part
        parts = tuple(memoryview(data)[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True))
        start = rng.choice(starts)
        one, many = bytearray(b"x"), bytearray(b"x")
        r1 = framing.frame_sends(data, start, bytes(acts), trial & 0xFF, one, holes, *rw)
        r2 = framing.frame_sends(parts, start, bytes(acts), trial & 0xFF, many, holes, *rw)
        assert r1 == r2 and one == many, trial
        framed += r1[2]
        rewritten += r1[5] + r1[6]
    assert framed > 2000  # (runs were framed, not only stopped at)
    assert rewritten > 30  # (and rewrites made, across the cuts too)


def _framed(ev: bytes, seq: int) -> bytes:
    n = len(ev) + 1
    return bytes((n & 0xFF, n >> 8 & 0xFF, n >> 16, seq, 0)) + ev


@pytest.mark.parametrize("crc", [True, False])
def test_c_loop_rewrites_as_protocol_rewrite_does(crc: bool) -> None:
    """The C loop's same-length rewrites are protocol/rewrite.py's bytes: dummies of every small length (USER_VAR
    below 34 bytes of data, a comment QUERY above) and BEGINs (data 38 or 40 bytes), with and without CRC32; a GTID's
    answer is read by its flag 0x8000 and FL_STANDALONE bit; an event the rewrite refuses stops the loop before it
    (the Python path raises MariaDB's error)."""
    if framing.frame_sends is None:
        pytest.fail("server/dump/_cframe.c is not built: pip install -e . (make deps)")
    import random

    from binlogd.protocol.rewrite import RewriteError, begin_event, dummy_event

    rng = random.Random(7)
    tail = 4 if crc else 0

    def event(typ: int, body: bytes, flags: int) -> bytes:
        length = 19 + len(body) + tail
        ev = struct.pack("<IBIIIH", rng.randrange(1 << 32), typ, 1, length, 1000 + length, flags) + body
        return ev + (struct.pack("<I", zlib.crc32(ev)) if crc else b"")

    acts = bytearray(512)
    for t in (160, 161):  # ANNOTATE_ROWS, BINLOG_CHECKPOINT: dummies, flagged or not
        acts[t] = acts[t | 0x100] = 2
    acts[162] = acts[162 | 0x100] = 4  # GTID: by its FL_STANDALONE bit
    gtid = bytes((3, 2, 1, 0))  # (flagged << 1 | standalone): BEGIN, DUMMY, HOLE, SEND
    checked = 0
    for typ in (160, 161, 162):
        for size in range(0, 140):
            flags = rng.choice((0, 0x8000, 0x0004, 0x8004))
            body = bytearray(rng.randbytes(size))
            if typ == 162 and size > 12:
                body[12] = rng.choice((0, 1, 3))
            ev = event(typ, bytes(body), flags)
            a = acts[typ | (0x100 if flags & 0x8000 else 0)]
            if a == 4:  # (the Python path refuses a GTID event shorter than header + post-header)
                a = gtid[(2 if flags & 0x8000 else 0) | (ev[19 + 12] & 1)] if len(ev) >= 19 + 19 else -1
            try:
                if a == 3:
                    want = _framed(begin_event(ev, crc), 9)
                elif a == 2:
                    want = _framed(dummy_event(ev, crc), 9)
                elif a == 1:
                    want = b""
                elif a == 0:
                    want = _framed(ev, 9)
                else:
                    want = None  # a GTID too short to look at: the Python path refuses it
            except RewriteError:
                want = None
            out = bytearray()
            end, seq, sent, holes, sent_end, dummies, begins = framing.frame_sends(ev, 0, bytes(acts), 9, out, True,
                                                                                   gtid, crc)
            if want is None:
                assert (end, out) == (0, bytearray()), (typ, size)
                continue
            assert bytes(out) == want, (typ, size, a)
            assert end == len(ev) and (sent, holes, dummies, begins) == (
                int(a == 0), int(a == 1), int(a == 2), int(a == 3)), (typ, size, a)
            assert seq == (9 if a == 1 else 10) and sent_end == (-1 if a == 1 else len(ev))
            checked += 1
    assert checked > 300
    # without `gtid` the loop makes no rewrite: it stops at the first dummy
    ev = event(160, b"x" * 60, 0)
    assert framing.frame_sends(ev, 0, bytes(acts), 1, bytearray(), True)[0] == 0
