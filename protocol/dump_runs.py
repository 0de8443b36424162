"""Whole runs of dump packets checked at once: the relay's hot path without per-event Python beyond one walk.

A socket read of a dump stream holds hundreds to thousands of packets. `scan_packets` walks their length headers in
one tight loop (the only per-packet Python), then checks every packet's framing with numpy over the whole read
(sequence ids, the 0x00 marker, the event header's length equal to the packet's, no FDE, no 16 MiB part), strips
the 5-byte packet headers with one compaction, and verifies every event's CRC32 with two `zlib.crc32` calls over
the whole run instead of one call per event (zlib releases the GIL for them):

CRC32 is affine over GF(2): after an event followed by its own CRC32 the register holds a constant whatever the
event's bytes (the "residue"), so the CRC32 of a run of valid events depends only on their lengths. It therefore
equals the CRC32 of a synthetic run of the same lengths whose events are zero bytes followed by their CRC32. Any
single corrupted event changes the run's CRC32; only several corruptions that cancel out (probability 2^-32, the
same as CRC32's own per-event miss rate) could hide. On a mismatch the events are checked one by one to find the
first bad one, which the caller's per-event path then reports with its own error.

The same walk in C (`_dumpscan.c`, an optional extension built from pyproject.toml): framing, checks, one
`crc32()` per event and the header stripping in one pass without the GIL and without a minimum of packets.
`scan_packets` uses it when it is built (protocol/native.py); `scan_packets_py` is the fallback,
and tests/test_dumpscan_native.py holds the two equal on real streams.

Pure: bytes in, offsets and bytes out (no sockets, no asyncio).
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from . import native
from .constants import CRC_LEN, FORMAT_DESCRIPTION_EVENT, HEADER_LEN, MAX_PACKET_PAYLOAD

MIN_PACKETS = 32  # fewer packets in a read: the per-event path is cheaper than numpy's per-call overhead
_U32 = struct.Struct("<I")
_CRC32_RESIDUE = 0x2144DF1C  # zlib.crc32(data + crc32(data) as 4 little-endian bytes), whatever the data
_ZERO_CRCS: dict[int, int] = {}  # event length -> zlib.crc32 of (length - 4) zero bytes
_ZERO_CRCS_MAX = 4096
_HEADER = np.arange(5, dtype=np.int64)  # a packet's 3-byte length, sequence id and the 0x00 OK marker

Ints = npt.NDArray[np.int64]


class EventRun(NamedTuple):
    """Whole events back to back and where each ends in `data` (ascending; the last is len(data))."""

    data: bytes
    ends: Ints


class PacketScan(NamedTuple):
    """`scan_packets`' answer: the events of the first `packets` packets (None when the read was left to the
    per-event path) and the offset in the read where they end."""

    run: EventRun | None
    packets: int
    used: int


def _zero_crc(length: int) -> int:
    crc = _ZERO_CRCS.get(length)
    if crc is None:
        if len(_ZERO_CRCS) >= _ZERO_CRCS_MAX:
            _ZERO_CRCS.clear()
        crc = _ZERO_CRCS[length] = zlib.crc32(bytes(length - CRC_LEN))
    return crc


def _u32_at(d: npt.NDArray[np.uint8], at: Ints) -> Ints:
    return (d[at].astype(np.int64) | (d[at + 1].astype(np.int64) << 8) | (d[at + 2].astype(np.int64) << 16)
            | (d[at + 3].astype(np.int64) << 24))


def u32_at(data: bytes | bytearray, at: Ints) -> Ints:
    """The little-endian 32-bit integers at offsets `at` of `data` (each offset + 4 <= len(data))."""
    return _u32_at(np.frombuffer(data, np.uint8), at)


def crcs_ok(data: bytes, ends: Ints) -> bool:
    """Does every event of the run (`ends` as in EventRun) end with its own CRC32? Two zlib calls, see above."""
    lengths = np.diff(ends, prepend=0)
    uniq, which = np.unique(lengths, return_inverse=True)
    crc = np.array([_zero_crc(n) for n in uniq.tolist()], dtype=np.int64)[which]
    model = np.zeros(len(data), dtype=np.uint8)
    for k in range(4):
        model[ends - 4 + k] = (crc >> (8 * k)) & 0xFF
    return zlib.crc32(data) == zlib.crc32(model)


def first_bad_crc(data: bytes, ends: Ints) -> int:
    """Index of the first event of the run whose CRC32 does not match (len(ends) when all do)."""
    mv = memoryview(data)
    start = 0
    for i, end in enumerate(ends.tolist()):
        if zlib.crc32(mv[start:end]) != _CRC32_RESIDUE:
            return i
        start = end
    return len(ends)


def scan_packets(data: bytes, seq: int, crc: bool, start: int = 0) -> PacketScan:
    """`scan_packets_py`'s answer, from the C walk when it is built (which takes runs of any length)."""
    if native.dumpscan is None:
        return scan_packets_py(data, seq, crc, start)
    run, ends, packets, used = native.dumpscan.scan_packets(data, seq, crc, start)
    if not packets:
        return PacketScan(None, 0, 0)
    return PacketScan(EventRun(run, np.frombuffer(ends, np.int64)), packets, used)


def scan_packets_py(data: bytes, seq: int, crc: bool, start: int = 0) -> PacketScan:
    """The dump packets of `data` from `start` (a packet boundary, where sequence id `seq` is expected) that
    hold one ordinary event each (not an FDE, ERR, EOF or a 16 MiB part), their framing checked and, with `crc`,
    their CRC32s: their events back to back. Everything from the first packet that is not such a packet (or a
    torn one at the end) is left for the caller's per-event path, which reports what is wrong with it. `used`:
    the offset in `data` after the packets taken."""
    n = len(data)
    offs: list[int] = []
    append, unpack = offs.append, _U32.unpack_from
    p, last = start, n - 4
    while p <= last:  # the only per-packet Python
        append(p)
        p += 4 + (unpack(data, p)[0] & 0xFFFFFF)
    if p > n:
        offs.pop()  # torn: the rest arrives with the next read
    if len(offs) < MIN_PACKETS:
        return PacketScan(None, 0, 0)
    d = np.frombuffer(data, np.uint8)
    o = np.array(offs, dtype=np.int64)
    length = d[o].astype(np.int64) | (d[o + 1].astype(np.int64) << 8) | (d[o + 2].astype(np.int64) << 16)
    s = o + 5  # the event
    # a packet too short for a header would make the gathers below read past it: clamp, it is refused anyway
    short = length < 1 + HEADER_LEN + (CRC_LEN if crc else 0)
    sc = np.where(short, 0, s)
    ok = ((d[o + 3] == ((seq + np.arange(len(o))) & 0xFF)) & ~short & (length < MAX_PACKET_PAYLOAD)
          & (d[o + 4] == 0) & (d[sc + 4] != FORMAT_DESCRIPTION_EVENT) & (_u32_at(d, sc + 9) == length - 1))
    k = len(o) if ok.all() else int(np.argmin(ok))
    while k:
        o, s, length = o[:k], s[:k], length[:k]
        used = int(o[-1] + 4 + length[-1])
        keep = np.ones(used - start, dtype=bool)
        keep[(o[:, None] + (_HEADER - start)).ravel()] = False
        run = d[start:used][keep].tobytes()
        ends = np.cumsum(length - 1)
        if not crc or crcs_ok(run, ends):
            return PacketScan(EventRun(run, ends), k, used)
        k = first_bad_crc(run, ends)  # the events before it are good; the bad one goes the per-event way
    return PacketScan(None, 0, 0)
