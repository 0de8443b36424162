"""Binlog event CRC32 (dump-protocol.md section 2): the one place for the checksum rules.

zlib's CRC-32 over every byte of the event except the last 4; a FORMAT_DESCRIPTION event is summed as if
its LOG_EVENT_BINLOG_IN_USE_F (0x01) flag were clear, so the stored CRC stays valid when the flag is cleared
at file close or before sending.
"""

from __future__ import annotations

import zlib

from .constants import CRC_LEN, FLAGS_OFFSET, FORMAT_DESCRIPTION_EVENT, HEADER_LEN, LOG_EVENT_BINLOG_IN_USE_F

Buffer = bytes | bytearray | memoryview


def event_crc(data: Buffer) -> int:
    """CRC32 of an event's bytes without its CRC (FDE in-use rule applied)."""
    mv = memoryview(data)
    if len(mv) > FLAGS_OFFSET and mv[4] == FORMAT_DESCRIPTION_EVENT and mv[FLAGS_OFFSET] & LOG_EVENT_BINLOG_IN_USE_F:
        crc = zlib.crc32(mv[:FLAGS_OFFSET])
        crc = zlib.crc32(bytes((mv[FLAGS_OFFSET] & ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF,)), crc)
        return zlib.crc32(mv[FLAGS_OFFSET + 1 :], crc) & 0xFFFFFFFF
    return zlib.crc32(mv) & 0xFFFFFFFF


def crc_ok(event: Buffer) -> bool:
    """True when the last 4 bytes are the CRC32 of the rest."""
    if len(event) < HEADER_LEN + CRC_LEN:
        return False
    mv = memoryview(event)
    return event_crc(mv[:-CRC_LEN]) == int.from_bytes(mv[-CRC_LEN:], "little")


def set_crc(event: bytearray) -> None:
    """Store the CRC32 of `event` (all but its last 4 bytes) in its last 4 bytes, in place."""
    event[-CRC_LEN:] = event_crc(memoryview(event)[:-CRC_LEN]).to_bytes(CRC_LEN, "little")


def with_crc(event: Buffer) -> bytes:
    """Copy of `event` with its trailing CRC recomputed (for rewritten events)."""
    if len(event) < HEADER_LEN + CRC_LEN:
        raise ValueError("event too short to carry a CRC")
    out = bytearray(event)
    set_crc(out)
    return bytes(out)
