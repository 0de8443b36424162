"""Event groups: where a binlog can be cut without splitting a transaction.

A group is what a replica applies as one unit: a GTID event and its transaction up to XID / COMMIT / ROLLBACK /
XA PREPARE, a standalone GTID (FL_STANDALONE: DDL) and its one statement with the INTVAR/RAND/USER_VAR/TABLE_MAP/
ANNOTATE_ROWS and ignorable events before it, a pre-GTID `BEGIN ... COMMIT`, or any other event on its own
(FDE, ROTATE, GTID_LIST, BINLOG_CHECKPOINT, a statement without GTID). Writers publish, and crash recovery truncates,
at group ends only, so a replica never sees half of a transaction. Pure code over buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import native
from .constants import (
    ANNOTATE_ROWS_EVENT,
    BIN_LOG_HEADER_SIZE,
    GTID_EVENT,
    HEADER_LEN,
    INTVAR_EVENT,
    LOG_EVENT_IGNORABLE_F,
    QUERY_EVENT,
    RAND_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)

# events that precede the one statement of a standalone group (and stay inside it)
PART_OF_GROUP = frozenset({GTID_EVENT, INTVAR_EVENT, RAND_EVENT, USER_VAR_EVENT, TABLE_MAP_EVENT, ANNOTATE_ROWS_EVENT})

# the only events that can change the state inside a transaction: a run's other events are looked at only outside one
TRANSACTION_EDGES = frozenset({GTID_EVENT, QUERY_EVENT, XID_EVENT, XA_PREPARE_LOG_EVENT})

if TYPE_CHECKING:
    import numpy.typing as npt

_OUTSIDE, _STANDALONE, _TRANSACTION = 0, 1, 2  # also _dumpscan.c's walk_groups
_QUERY_POST_HEADER = 13  # thread_id 4, exec_time 4, db_len 1, error_code 2, status_vars_len 2
_BEGIN = (b"BEGIN",)
_ENDS_TRANSACTION = (b"COMMIT", b"ROLLBACK")
_ENDS_XA = (b"XA COMMIT", b"XA ROLLBACK")


def _statement_head(ev: bytes | bytearray | memoryview, pos: int, end: int, crc_len: int, n: int) -> bytes | None:
    """The first `n` bytes of an uncompressed QUERY event's statement (whole when shorter), without copying the
    rest of a long statement (None when the body is too short)."""
    body = pos + HEADER_LEN
    if end - crc_len - body < _QUERY_POST_HEADER:
        return None
    db_len = ev[body + 8]
    status_len = ev[body + 11] | (ev[body + 12] << 8)
    start = body + _QUERY_POST_HEADER + status_len + db_len + 1
    stop = end - crc_len
    return bytes(ev[start : min(stop, start + n)]) if start <= stop else None


def _statement_is(ev: bytes | bytearray | memoryview, pos: int, end: int, crc_len: int, words: tuple[bytes, ...],
                  prefixes: tuple[bytes, ...] = ()) -> bool:
    """Is the statement exactly one of `words`, or does it start with one of `prefixes`?"""
    longest = max(len(w) for w in (*words, *prefixes))
    head = _statement_head(ev, pos, end, crc_len, longest + 1)  # one byte more: "COMMIT" is not "COMMITX"
    if head is None:
        return False
    return head in words or head.startswith(prefixes)


class GroupTracker:
    """Follows group boundaries event by event: `feed()` says whether the stream is at a group end after the event."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = _OUTSIDE

    @property
    def inside(self) -> bool:
        return self.state != _OUTSIDE

    def reset(self) -> None:
        self.state = _OUTSIDE

    def feed(self, ev: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None, crc_len: int = 4) -> bool:
        """Account for the event at ev[pos:end]; True when it ends a group (or is a group of its own)."""
        if end is None:
            end = len(ev)
        typ = ev[pos + 4]
        if typ == GTID_EVENT:
            if end - pos < HEADER_LEN + 13:
                raise ValueError("GTID event too short")
            self.state = _STANDALONE if ev[pos + HEADER_LEN + 12] & 1 else _TRANSACTION
            return False
        state = self.state
        if state == _OUTSIDE:
            if typ == QUERY_EVENT and _statement_is(ev, pos, end, crc_len, _BEGIN):
                self.state = _TRANSACTION
                return False
            return True
        if state == _STANDALONE:
            flags = ev[pos + 17] | (ev[pos + 18] << 8)
            if typ in PART_OF_GROUP or flags & LOG_EVENT_IGNORABLE_F:
                return False
            self.state = _OUTSIDE
            return True
        if typ in (XID_EVENT, XA_PREPARE_LOG_EVENT):
            self.state = _OUTSIDE
            return True
        if typ == QUERY_EVENT and _statement_is(ev, pos, end, crc_len, _ENDS_TRANSACTION, _ENDS_XA):
            self.state = _OUTSIDE
            return True
        return False

    def feed_run(self, ev: bytes | bytearray | memoryview, ends: list[int], edges: list[int],
                 crc_len: int = 4) -> tuple[int, int]:
        """`feed()` every event of a run (`ends[i]`: where event i ends in `ev`; the first starts at 0), given the
        indexes of its TRANSACTION_EDGES events in order: the events between two edges are fed only when the
        stream is not inside a transaction, where they cannot matter. Returns (index of the last event that ends a
        group or -1, how many events end one)."""
        last, groups, i = -1, 0, 0
        feed = self.feed
        for edge in (*edges, len(ends)):
            if i < edge and self.state != _TRANSACTION:
                for j in range(i, edge):
                    if feed(ev, ends[j - 1] if j else 0, ends[j], crc_len):
                        last = j
                        groups += 1
            if edge == len(ends):
                break
            start = ends[edge - 1] if edge else 0
            typ = ev[start + 4]
            # the two edges of nearly every transaction, as feed() has them (the others: feed() itself)
            if typ == XID_EVENT and self.state == _TRANSACTION:
                self.state = _OUTSIDE
                last = edge
                groups += 1
            elif typ == GTID_EVENT and ends[edge] - start >= HEADER_LEN + 13:
                self.state = _STANDALONE if ev[start + HEADER_LEN + 12] & 1 else _TRANSACTION
            elif feed(ev, start, ends[edge], crc_len):
                last = edge
                groups += 1
            i = edge + 1
        return last, groups

    def feed_ends(self, ev: bytes, ends: npt.NDArray[np.int64], i: int, j: int, crc_len: int = 4,
                  edges: list[int] | None = None) -> tuple[int, int]:
        """`feed_run` over events i..j-1 of a run (`ends`: where each event of `ev` ends, the first starting at 0,
        contiguous int64), with the indexes returned relative to i. The common transitions (GTID, XID, XA_PREPARE,
        events inside a transaction) in C when it is built (`_dumpscan.walk_groups`, without the GIL), every other
        event through `feed()`; else `feed_run` with `edges` (the run's TRANSACTION_EDGES events, relative to i)."""
        if native.dumpscan is None:
            base = int(ends[i - 1]) if i else 0
            mv = memoryview(ev)[base : int(ends[j - 1])]
            return self.feed_run(mv, (ends[i:j] - base).tolist(), edges or [], crc_len)
        walk = native.dumpscan.walk_groups
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        last, groups, k = -1, 0, i
        while k < j:
            k, self.state, done, n = walk(ev, ends, k, j, self.state)
            if done >= 0:
                last = done
            groups += n
            if k < j:
                if self.feed(ev, int(ends[k - 1]) if k else 0, int(ends[k]), crc_len):
                    last = k
                    groups += 1
                k += 1
        return (last - i if last >= 0 else -1), groups


def last_group_end(buf: bytes | bytearray | memoryview, start: int = BIN_LOG_HEADER_SIZE, crc_len: int = 4) -> int:
    """Offset just after the last whole group in `buf` (whole events from `start`); `start` when there is none.

    Bytes after it are a torn event or a group a crash interrupted: what recovery truncates.
    """
    tracker = GroupTracker()
    p, n, good = start, len(buf), start
    while n - p >= HEADER_LEN:
        length = int.from_bytes(buf[p + 9 : p + 13], "little")
        if length < HEADER_LEN or p + length > n:
            break
        if tracker.feed(buf, p, p + length, crc_len):
            good = p + length
        p += length
    return good
