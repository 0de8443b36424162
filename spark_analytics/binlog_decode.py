"""Decoding a byte range of a binlog/relay-log file into Arrow columns (one row per event), vectorised.

The only per-event Python is the walk (an event's start is the previous one's end: a loop that reads one length per
event), the group state machine (over integer arrays) and zlib's CRC32 per event; every header field, the GTID fields
and the upstream positions are gathered from the mmap by numpy over the fixed 19-byte headers. QUERY / ANNOTATE_ROWS
bodies are parsed in Python only when statements are asked for (and only for those events).

A range always starts at a file's first event or at a GTID event (a group start: see `plan_splits`), so its rows do
not depend on where the file was split: the state a range needs from before it (checksum length, the upstream file
of a relay log, the relay's own server_id) is found by the planner's walk and handed over in `RangeStart`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from binlogd.protocol import native
from binlogd.protocol.binlog_file import BinlogFormatError, fde_checksum_alg
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_RELAY_LOG_F,
    QUERY_EVENT,
    ROTATE_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from binlogd.protocol.dump_runs import crcs_ok
from binlogd.protocol.groups import PART_OF_GROUP

from .binlog_groups import (
    CODE_BAD_GTID,
    CODE_BEGIN,
    CODE_END,
    CODE_GTID,
    CODE_GTID_STANDALONE,
    CODE_OTHER,
    vector_groups,
)

_LEN = struct.Struct("<I")
HEADER_DTYPE = np.dtype([("ts", "<u4"), ("type", "u1"), ("sid", "<u4"), ("len", "<u4"), ("log_pos", "<u4"),
                          ("flags", "<u2")])
GTID_BODY_DTYPE = np.dtype([("seq", "<u8"), ("domain", "<u4"), ("flags2", "u1")])
_TYPE_NAMES = [EVENT_TYPE_NAMES.get(t, "Unknown") for t in range(256)]
_PART_OF_GROUP = np.zeros(256, dtype=bool)
_PART_OF_GROUP[list(PART_OF_GROUP)] = True
CHUNK_EVENTS = 65536  # events per Arrow batch


@dataclass(frozen=True)
class RangeStart:
    """Where a range of a file begins and the state the events before it leave."""

    start: int  # offset of the range's first event (4, or a GTID event)
    stop: int | None  # offset the range ends at (an event start), None: the file's end
    crc_len: int  # 4 when the last FDE before `start` announced CRC32 (0 before any FDE)
    source_file: str  # relay logs: the upstream file current at `start`; primary binlogs: the file itself
    relay_sid: int | None  # server_id of the relay's own FDE (flag 0x40), None for a primary binlog


@dataclass
class WalkEnd:
    """Where a walk stopped: `end` (after the last whole event) and why, when it is not the range's end."""

    end: int = 0
    error: str | None = None


def walk(buf: Any, start: int, stop: int, out: WalkEnd) -> np.ndarray:
    """Starts of the whole events in buf[start:stop): the one sequential step (a length read per event). In C when
    protocol/_dumpscan.c is built (`event_starts`: 0.72 -> 0.04 CPU s for a 97 MB file of 1.8 M events), else
    here: the length at offset q is read from one of four 32-bit views of the buffer (the one aligned with q), an
    index, not a struct call, per event."""
    scan = getattr(native.dumpscan, "event_starts", None)
    if scan is not None and 0 <= start <= stop <= len(buf):
        found, out.end, bad = scan(buf, start, stop)
        if bad >= 0:
            out.error = f"bogus event length {bad} at {out.end}"
        return np.frombuffer(found, dtype=np.int64)
    return walk_py(buf, start, stop, out)


def walk_py(buf: Any, start: int, stop: int, out: WalkEnd) -> np.ndarray:
    """`walk` in Python (no C extension, or a range outside the buffer: the same IndexError as before)."""
    mv = memoryview(buf)
    size = len(mv)
    views = [mv[a : a + (size - a) // 4 * 4].cast("I") for a in range(4)]
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - a big-endian machine
        views = []
    starts: list[int] = []
    add = starts.append
    unpack = _LEN.unpack_from
    p = start
    last = stop - HEADER_LEN
    try:
        while p <= last:
            q = p + 9
            length = views[q & 3][q >> 2] if views else unpack(buf, q)[0]
            if length < HEADER_LEN:
                out.error = f"bogus event length {length} at {p}"
                break
            if p + length > stop:
                break
            add(p)
            p += length
    finally:
        for v in views:
            v.release()
        mv.release()
    out.end = p
    return np.fromiter(starts, dtype=np.int64, count=len(starts))


def gather(arr: np.ndarray, offs: np.ndarray, width: int) -> np.ndarray:
    """The `width` bytes at each offset, one row each (contiguous); an offset whose bytes pass the buffer's end
    reads them clipped to its last byte. Rows of a sliding window view: no index matrix is built."""
    from numpy.lib.stride_tricks import sliding_window_view

    last = len(arr) - width
    if last < 0:
        return arr[np.clip(offs[:, None] + np.arange(width, dtype=np.int64), 0, max(len(arr) - 1, 0))]
    out = sliding_window_view(arr, width)[np.clip(offs, 0, last)]
    far = np.flatnonzero((offs > last) | (offs < 0))
    if len(far):
        out[far] = arr[np.clip(offs[far, None] + np.arange(width, dtype=np.int64), 0, len(arr) - 1)]
    return out


def fde_crc_len(buf: Any, p: int, end: int) -> int:
    try:
        return 4 if fde_checksum_alg(buf[p:end]) == BINLOG_CHECKSUM_ALG_CRC32 else 0
    except BinlogFormatError:
        return 0


def text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _query_db_and_text(buf: Any, pos: int, end: int, crc_len: int) -> tuple[str | None, str | None]:
    body = pos + HEADER_LEN
    if end - crc_len - body < 13:
        return None, None
    db_len = buf[body + 8]
    status_len = buf[body + 11] | (buf[body + 12] << 8)
    db_at = body + 13 + status_len
    text_at = db_at + db_len + 1
    stop = end - crc_len
    if text_at > stop:
        return None, None
    return text(buf[db_at : db_at + db_len]), text(buf[text_at:stop])


class RangeDecoder:
    """Decodes one range chunk by chunk; carries the group/relay state from chunk to chunk."""

    def __init__(self, buf: Any, name: str, file_index: int, rs: RangeStart, statements: bool,
                 columns: Sequence[str]) -> None:
        self.buf = buf
        self.columns = columns
        self.arr = np.frombuffer(buf, dtype=np.uint8)
        self.name = name
        self.file_index = file_index
        self.crc_len = rs.crc_len
        self.src_file = rs.source_file
        self.relay_sid = rs.relay_sid
        self.statements = statements
        self.state = 0  # 0 outside a group, 1 standalone group, 2 transaction (protocol/groups.py)
        self.trx_carried: str | None = None  # trx of the group still open at the previous chunk's end

    def _headers(self, starts: np.ndarray) -> np.ndarray:
        return gather(self.arr, starts, HEADER_LEN).view(HEADER_DTYPE).reshape(-1)

    def _u32_at(self, offs: np.ndarray) -> np.ndarray:
        return gather(self.arr, offs, 4).view("<u4").reshape(-1)

    def _crcs(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """CRC32 valid, per event (events with checksums, ascending): each stretch of events back to back is checked
        whole with protocol/dump_runs.py's two zlib calls (CRC32's linearity); only a stretch that fails is checked
        event by event, to name its bad events."""
        ok = np.ones(len(starts), dtype=bool)
        mv = memoryview(self.buf)
        cuts = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # an FDE or an event without checksum between them
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(starts)], strict=True):
            base = int(starts[a])
            if crcs_ok(mv[base : int(ends[b - 1])], ends[a:b] - base):
                continue
            crc32 = zlib.crc32
            computed = np.array([crc32(mv[s:e]) for s, e in zip(starts[a:b].tolist(), (ends[a:b] - 4).tolist(),
                                                                strict=True)], dtype=np.uint32)
            ok[a:b] = computed == self._u32_at(ends[a:b] - 4)
        return ok

    def decode(self, starts: np.ndarray) -> dict[str, Any]:
        """The columns (`self.columns`, in that order) of one batch for the events at `starts` (consecutive whole
        events); the `ordinal` column is left None for the caller."""
        import pyarrow as pa
        import pyarrow.compute as pc

        buf, arr, n = self.buf, self.arr, len(starts)
        h = self._headers(starts)
        types = h["type"].astype(np.int32)
        flags = h["flags"].astype(np.int32)
        sids = h["sid"].astype(np.int64)
        lengths = h["len"].astype(np.int64)
        log_pos = h["log_pos"].astype(np.int64)
        ends = starts + lengths
        is_fde = types == FORMAT_DESCRIPTION_EVENT
        # checksum length per event: a step function over the FDEs of the chunk
        crc_len = np.full(n, self.crc_len, dtype=np.int64)
        fde_idx = np.flatnonzero(is_fde).tolist()
        for i in fde_idx:
            self.crc_len = fde_crc_len(buf, int(starts[i]), int(ends[i]))
            crc_len[i:] = self.crc_len
            if self.relay_sid is None and flags[i] & LOG_EVENT_RELAY_LOG_F:
                self.relay_sid = int(sids[i])
        # CRC: zlib per event over the mmap (no copies), FDEs through the one checksum rule (in-use flag)
        crc = np.zeros(n, dtype=bool)
        has_crc = (crc_len > 0) | is_fde
        sel = np.flatnonzero((crc_len > 0) & ~is_fde)
        if len(sel):
            crc[sel] = self._crcs(starts[sel], ends[sel])
        for i in fde_idx:
            crc[i] = crc_ok(buf[int(starts[i]) : int(ends[i])])
        # GTID fields, gathered from the bodies
        is_gtid = (types == GTID_EVENT) & (lengths >= HEADER_LEN + 13)
        g_idx = np.flatnonzero(is_gtid)
        g = gather(arr, starts[g_idx] + HEADER_LEN, 13).view(GTID_BODY_DTYPE).reshape(-1)
        gd = np.zeros(n, dtype=np.int64)
        gq = np.zeros(n, dtype=np.int64)
        gst = np.zeros(n, dtype=bool)
        gd[g_idx] = g["domain"]
        gq[g_idx] = g["seq"].astype(np.int64)
        gst[g_idx] = (g["flags2"] & 1).astype(bool)
        not_gtid = ~is_gtid
        # statements (only QUERY / ANNOTATE_ROWS, only when asked)
        is_query = types == QUERY_EVENT
        db: list[str | None] = [None] * n
        stmt: list[str | None] = [None] * n
        if self.statements:
            st_l, en_l, cl_l = starts.tolist(), ends.tolist(), crc_len.tolist()
            for i in np.flatnonzero(is_query).tolist():
                db[i], stmt[i] = _query_db_and_text(buf, st_l[i], en_l[i], cl_l[i])
            for i in np.flatnonzero(types == ANNOTATE_ROWS_EVENT).tolist():
                stmt[i] = text(buf[st_l[i] + HEADER_LEN : en_l[i] - cl_l[i]])
        # groups: trx per event (GTID `d-s-n` of its group, else `file#pos` of the group's first event)
        gid, group_end = self._groups(types, flags, starts, ends, crc_len, is_query, is_gtid, gst)
        # the key is built once per group, at its first event, and taken for every event of the group
        heads = np.flatnonzero(gid == np.arange(n))
        h_gtid = pa.array(is_gtid[heads])
        gtid_key = pc.binary_join_element_wise(pa.array(gd[heads]).cast(pa.string()),
                                               pa.array(sids[heads]).cast(pa.string()),
                                               pa.array(gq[heads]).cast(pa.string()), "-")
        pos_key = pc.binary_join_element_wise(pa.scalar(self.name), pa.array(starts[heads]).cast(pa.string()), "#")
        keys = pa.concat_arrays([pc.if_else(h_gtid, gtid_key, pos_key),
                                 pa.array([self.trx_carried, None], pa.string())])
        m = len(heads)
        trx = pc.take(keys, pa.array(np.where(gid == -1, m, np.where(gid == -2, m + 1,
                                                                     np.searchsorted(heads, gid)))))
        last = int(gid[-1]) if n else -1
        self.trx_carried = (None if last == -2 or group_end[-1] else
                            self.trx_carried if last == -1 else trx[n - 1].as_py())
        # relay logs: own events, and the upstream file (changed by the upstream's ROTATE events)
        own = (flags & LOG_EVENT_RELAY_LOG_F) != 0
        if self.relay_sid is not None:
            own |= sids == self.relay_sid
        rot = np.flatnonzero((types == ROTATE_EVENT) & ~own & (lengths >= HEADER_LEN + 8 + crc_len)).tolist()
        names = [self.src_file]
        src_idx = np.zeros(n, dtype=np.int32)
        for i in rot:  # the events after it are in the upstream's next file
            self.src_file = text(buf[int(starts[i]) + HEADER_LEN + 8 : int(ends[i] - crc_len[i])])
            names.append(self.src_file)
            src_idx[i + 1 :] = len(names) - 1
        s_start = np.where(log_pos != 0, log_pos - lengths, np.where(is_fde, 4, 0))
        s_end = np.where(log_pos != 0, log_pos, np.where(is_fde, 4 + lengths, 0))
        no_src = (log_pos == 0) & ~is_fde
        # each column built only when asked for (`columns`): a staged split's unread columns cost ~12 ms per batch
        make: dict[str, Callable[[], Any]] = {
            "file": lambda: _repeat(self.name, n),
            "file_index": lambda: pa.array(np.full(n, self.file_index, dtype=np.int32)),
            "start": lambda: pa.array(starts), "end": lambda: pa.array(ends),
            "ordinal": lambda: None,  # filled by the caller (it knows the file's event count so far)
            "type": lambda: pa.array(types),
            "type_name": lambda: pa.DictionaryArray.from_arrays(pa.array(types), pa.array(_TYPE_NAMES)
                                                                ).cast(pa.string()),
            "flags": lambda: pa.array(flags), "server_id": lambda: pa.array(sids),
            "timestamp": lambda: pa.array(h["ts"].astype(np.int64)),
            "length": lambda: pa.array(lengths.astype(np.int32)), "log_pos": lambda: pa.array(log_pos),
            "crc_ok": lambda: pa.array(crc, mask=~has_crc),
            "gtid_domain": lambda: pa.array(gd, mask=not_gtid), "gtid_server": lambda: pa.array(sids, mask=not_gtid),
            "gtid_seq": lambda: pa.array(gq, mask=not_gtid), "gtid_standalone": lambda: pa.array(gst, mask=not_gtid),
            "trx": lambda: trx, "group_end": lambda: pa.array(group_end),
            "db": lambda: pa.array(db, pa.string()), "statement": lambda: pa.array(stmt, pa.string()),
            "relay_own": lambda: pa.array(own),
            "source_file": lambda: pa.DictionaryArray.from_arrays(pa.array(src_idx), pa.array(names, pa.string())
                                                                  ).cast(pa.string()),
            "source_start": lambda: pa.array(s_start, mask=no_src), "source_end": lambda: pa.array(s_end, mask=no_src),
        }
        return {c: make[c]() for c in self.columns}

    def _query_words(self, starts: np.ndarray, ends: np.ndarray, crc_len: np.ndarray, q: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """For the QUERY events `q` (indexes): is the statement `BEGIN`, does it end a transaction (`COMMIT`,
        `ROLLBACK`, `XA COMMIT...`, `XA ROLLBACK...`): protocol/groups.py's words, compared on gathered bytes."""
        arr = self.arr
        body = starts[q] + HEADER_LEN
        stop = ends[q] - crc_len[q]
        ok = stop - body >= 13
        body_c = np.where(ok, body, 0)
        db_len = arr[body_c + 8].astype(np.int64)
        status_len = arr[body_c + 11].astype(np.int64) | (arr[body_c + 12].astype(np.int64) << 8)
        at = body_c + 13 + status_len + db_len + 1
        n_txt = stop - at
        ok &= n_txt >= 0
        w = 11
        head = gather(arr, at, w)
        valid = np.arange(w)[None, :] < n_txt[:, None]
        head = np.where(valid, head, 0)

        def word(wd: bytes, exact: bool) -> np.ndarray:
            m = (head[:, : len(wd)] == np.frombuffer(wd, dtype=np.uint8)).all(axis=1) & (n_txt >= len(wd))
            return ok & m & (n_txt == len(wd) if exact else True)

        begin = word(b"BEGIN", True)
        end = word(b"COMMIT", True) | word(b"ROLLBACK", True) | word(b"XA COMMIT", False) | word(b"XA ROLLBACK",
                                                                                                 False)
        return begin, end

    def _groups(self, types: np.ndarray, flags: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                crc_len: np.ndarray, is_query: np.ndarray, is_gtid: np.ndarray, standalone: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """protocol/groups.py's state machine over the chunk, on integer codes: per event the index of its group's
        first event (-1: a group carried from the previous chunk, -2: none) and `group_end`."""
        n = len(types)
        code = np.full(n, CODE_OTHER, dtype=np.int8)
        q = np.flatnonzero(is_query)
        begin, end = self._query_words(starts, ends, crc_len, q)
        code[np.isin(types, (XID_EVENT, XA_PREPARE_LOG_EVENT))] = CODE_END
        code[q[end]] = CODE_END  # ends a transaction
        code[q[begin]] = CODE_BEGIN
        code[(types == GTID_EVENT) & ~is_gtid] = CODE_BAD_GTID  # too short: groups.py raises, it ends its group
        code[is_gtid & ~standalone] = CODE_GTID
        code[is_gtid & standalone] = CODE_GTID_STANDALONE
        cont = _PART_OF_GROUP[types] | ((flags & LOG_EVENT_IGNORABLE_F) != 0)  # stays in a standalone group
        gid, gend, self.state = vector_groups(code, cont, self.state, self.trx_carried is not None)
        return gid, gend


def _repeat(value: str, n: int) -> Any:
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())


def decode_range(buf: Any, name: str, file_index: int, rs: RangeStart, statements: bool, first_ordinal: int,
                 out: WalkEnd, columns: Sequence[str] | None = None) -> Iterator[Any]:
    """Arrow RecordBatches of the whole events of buf[rs.start:rs.stop), ordinals from `first_ordinal`;
    `columns`: those of the data source's (`binlog_source.COLUMNS`), in that order; None: all of them."""
    import pyarrow as pa

    from .binlog_source import COLUMNS

    types = {n: getattr(pa, t)() for n, _, t in COLUMNS}
    names = [n for n, _, _ in COLUMNS] if columns is None else list(columns)
    schema = pa.schema([(n, types[n]) for n in names])
    stop = len(buf) if rs.stop is None else rs.stop
    starts = walk(buf, rs.start, stop, out)
    dec = RangeDecoder(buf, name, file_index, rs, statements, names)
    for k in range(0, len(starts), CHUNK_EVENTS):
        chunk = starts[k : k + CHUNK_EVENTS]
        cols = dec.decode(chunk)
        if "ordinal" in cols:
            cols["ordinal"] = pa.array(np.arange(first_ordinal + k, first_ordinal + k + len(chunk), dtype=np.int64))
        yield pa.RecordBatch.from_arrays(list(cols.values()), schema=schema)
    dec.arr = np.empty(0, dtype=np.uint8)  # the view of the mmap released: the caller closes it
