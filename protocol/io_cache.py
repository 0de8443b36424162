"""Where a MariaDB 10.11 dump thread stands in a binlog file when reading an event fails: the "last byte read"
position of its 1236 texts.

MariaDB reports `my_b_tell()` of the dump's IO_CACHE (mysys/mf_iocache.c: a READ_CACHE of
binlog_file_cache_size, 16 KiB, opened by `open_binlog`), and that depends on how the cache's buffer happened to
be filled: a body read that fails at the end of the file leaves the position right after the header when the
buffer already reached the end, but at the buffer's end (a 4 KiB boundary) when a refill came up short; a torn
header leaves it at the event's start.

This module replays the reads the dump thread makes on a file (magic, FDE, the event after it, the seek to the
start position, then header and body of every event) over the file's sizes alone, so the position comes out
as MariaDB's for any file and start.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from .constants import BIN_LOG_HEADER_SIZE, HEADER_LEN, MAX_EVENT_SIZE

IO_SIZE = 4096
CACHE_SIZE = 16384  # open_binlog: init_io_cache(..., binlog_file_cache_size (16 KiB by default), READ_CACHE, ...)
_NO_END = (1 << 64) - 1  # end_of_file before send_events sets it (MY_DONT_CHECK_FILESIZE)
_LEN = struct.Struct("<I")

ReadAt = Callable[[int, int], bytes]  # (position, size) -> the bytes the file holds there


@dataclass
class ReadCache:
    """The positions of an IO_CACHE in READ_CACHE mode (absolute file offsets instead of buffer pointers)."""

    size: int  # what the file holds: reads past it come up short
    end_of_file: int = _NO_END
    pos_in_file: int = 0  # where the buffer was read from
    read_pos: int = 0  # my_b_tell()
    read_end: int = 0  # the end of the buffered bytes

    def seek(self, pos: int) -> None:
        """my_b_seek: inside the buffer only the read position moves, else the buffer is dropped."""
        if self.pos_in_file <= pos < self.read_end:
            self.read_pos = pos
            return
        self.pos_in_file = self.read_pos = self.read_end = pos

    def read(self, count: int) -> bool:
        """my_b_read of `count` bytes (_my_b_read / _my_b_cache_read); False when the file ends first."""
        if self.read_pos + count <= self.read_end:
            self.read_pos += count
            return True
        count -= self.read_end - self.read_pos  # the buffered rest is copied, read_pos stays until success
        pif = self.read_end
        diff = pif % IO_SIZE
        if count >= IO_SIZE + (IO_SIZE - diff):  # a direct read of whole blocks first
            if self.end_of_file <= pif:
                return False
            direct = count // IO_SIZE * IO_SIZE - diff
            if min(direct, self.size - pif) != direct:
                return False
            count -= direct
            pif += direct
            diff = 0
        max_length = CACHE_SIZE - diff
        if self.end_of_file >= pif:
            max_length = min(max_length, self.end_of_file - pif)
        if max_length == 0:
            if count:
                return False
            length = 0
        else:
            length = max(0, min(max_length, self.size - pif))
            if length < count:  # a short refill: the buffer is left empty at pif
                self.pos_in_file = self.read_pos = self.read_end = pif
                return False
        self.pos_in_file, self.read_pos, self.read_end = pif, pif + count, pif + length
        return True


def _event_length(read_at: ReadAt, pos: int) -> int | None:
    hdr = read_at(pos, HEADER_LEN)
    if len(hdr) < HEADER_LEN:
        return None
    (n,) = _LEN.unpack_from(hdr, 9)
    return n if HEADER_LEN <= n <= MAX_EVENT_SIZE else None


def _read_event(cache: ReadCache, read_at: ReadAt, pos: int) -> int | None:
    """Log_event::read_log_event: the header, then the body; the event's length, or None when it failed."""
    if not cache.read(HEADER_LEN):
        return None
    n = _event_length(read_at, pos)
    if n is None or not cache.read(n - HEADER_LEN):
        return None
    return n


def last_byte_read(read_at: ReadAt, size: int, start: int, failed_at: int) -> int:
    """my_b_tell() after reading the event at `failed_at` failed, for a dump that started this file at `start`
    (4 for every file after the first) and read every event from there; `size` is the file's length."""
    cache = ReadCache(size)
    cache.read(BIN_LOG_HEADER_SIZE)  # open_binlog checks the magic
    fde_len = _event_length(read_at, BIN_LOG_HEADER_SIZE)
    if fde_len is None or _read_event(cache, read_at, BIN_LOG_HEADER_SIZE) is None:
        return cache.read_pos
    after_fde = BIN_LOG_HEADER_SIZE + fde_len
    _read_event(cache, read_at, after_fde)  # send_format_descriptor_event looks for START_ENCRYPTION
    pos = after_fde
    if start == BIN_LOG_HEADER_SIZE:
        cache.seek(after_fde)
    cache.end_of_file = size  # send_events: log->end_of_file= end_pos (a closed file: its length)
    if start != BIN_LOG_HEADER_SIZE:
        cache.seek(start)
        pos = start
    while pos < failed_at:
        n = _read_event(cache, read_at, pos)
        if n is None:  # the failure came earlier than the caller thought: that is where MariaDB stopped
            return cache.read_pos
        pos += n
    _read_event(cache, read_at, failed_at)
    return cache.read_pos
