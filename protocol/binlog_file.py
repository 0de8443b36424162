"""Binlog file layout: magic, FDE, then events back to back; scanning with torn-tail detection.

Pure functions over buffers: callers (the store, tools, tests) do the file I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from . import errors, events
from .checksum import crc_ok
from .constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_MAGIC,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    MAX_EVENT_SIZE,
)

EVENT_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_length, log_pos, flags


class BinlogFormatError(ValueError):
    """Bytes that cannot be a binlog (bad magic, impossible event length, missing FDE)."""


@dataclass(frozen=True, slots=True)
class EventRef:
    pos: int  # start offset in the file
    type_code: int
    server_id: int
    length: int
    log_pos: int
    flags: int
    timestamp: int

    @property
    def end(self) -> int:
        return self.pos + self.length


@dataclass(frozen=True, slots=True)
class ScanResult:
    events: list[EventRef]
    end: int  # offset after the last whole event
    torn: bool  # bytes after `end` that do not make a whole event


def basename_problem(basename: str) -> str | None:
    """Why ``basename`` cannot name binlog files (``NAME.000001`` and ``NAME.index`` in one directory), or None."""
    if not basename or "/" in basename or "\0" in basename or basename in (".", ".."):
        return f"{basename!r} is not a file name (NAME of NAME.000001)"
    return None


def fde_checksum_alg(fde: bytes | bytearray | memoryview) -> int:
    """Checksum algorithm of a MariaDB/MySQL 5.6+ FDE (the byte before its CRC), refusing unknown ones."""
    try:
        alg = events.fde_checksum_alg(fde)
    except events.EventDecodeError as e:
        raise BinlogFormatError(str(e)) from e
    if alg not in (BINLOG_CHECKSUM_ALG_OFF, BINLOG_CHECKSUM_ALG_CRC32):
        raise BinlogFormatError(f"unknown checksum algorithm {alg} in format description event")
    return alg


def check_event_length(length: int) -> str | None:
    """MariaDB's read-error text for an impossible event length, or None when it is plausible."""
    if length < HEADER_LEN:
        return errors.READ_BOGUS
    if length > MAX_EVENT_SIZE:
        return errors.READ_TOO_LARGE
    return None


def scan(buf: bytes | bytearray | memoryview, start: int = BIN_LOG_HEADER_SIZE) -> ScanResult:
    """Walk whole events from `start`; stop at the first incomplete one (torn tail) or a bogus length."""
    events: list[EventRef] = []
    p = start
    n = len(buf)
    while n - p >= HEADER_LEN:
        ts, typ, sid, length, log_pos, flags = EVENT_HEADER.unpack_from(buf, p)
        if check_event_length(length) is not None:
            raise BinlogFormatError(f"bogus event length {length} at {p}")
        if p + length > n:
            break
        events.append(EventRef(p, typ, sid, length, log_pos, flags, ts))
        p += length
    return ScanResult(events, p, p != n)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    events: int
    end: int
    torn_bytes: int
    crc_failures: list[int]
    checksum_alg: int


def verify(buf: bytes | bytearray | memoryview) -> VerifyReport:
    """Full check of a file image: magic, FDE first, every event's CRC when the file has CRC32."""
    if bytes(buf[:4]) != BINLOG_MAGIC:
        raise BinlogFormatError("not a binlog file (bad magic)")
    res = scan(buf)
    if not res.events or res.events[0].type_code != FORMAT_DESCRIPTION_EVENT:
        raise BinlogFormatError("Failed to find format descriptor event in start of binlog")
    first = res.events[0]
    alg = fde_checksum_alg(buf[first.pos : first.end])
    bad = [
        r.pos
        for r in res.events
        if (alg == BINLOG_CHECKSUM_ALG_CRC32 or r.type_code == FORMAT_DESCRIPTION_EVENT)
        and not crc_ok(buf[r.pos : r.end])
    ]
    return VerifyReport(len(res.events), res.end, len(buf) - res.end, bad, alg)
