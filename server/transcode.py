"""Checksum transcoding per replica (issue 18): a stage between a dump stream and its socket.

MariaDB never changes checksums: a client that is not checksum-aware (never set @master_binlog_checksum) served a
CRC32 binlog gets 1236, and a NONE binlog is sent without CRCs whatever the client asked. With `--compat binlogd`
binlogd transcodes instead: a non-aware client gets CRC32 files without their CRCs, and a client that set
`@master_binlog_checksum='CRC32'` and `@binlogd_add_checksums=1` gets NONE files with CRCs added. Every event of
such a file is 4 bytes shorter or longer (the FDE keeps its length: it always has a CRC slot; its algorithm byte
says the client's algorithm and its CRC is recomputed).

Positions: the client sees the positions of the transcoded stream, as if the file had been written with its
algorithm: an event's log_pos is its file end +/- 4 per non-FDE event up to it, so each event ends where the
next begins and old clients that add event lengths agree with the log_pos they read. A start position the client
sends is in the same coordinates and mapped back (it must be an event boundary of the transcoded stream). The fake
ROTATE names the start in stream coordinates (4 stays 4), heartbeats and fake GTID_LISTs carry the stream position
of the file position they stand for. Error texts keep MariaDB's file positions. Files whose algorithm is already
the client's pass unchanged.

The dump itself works in file positions throughout (decisions, ledger, frame cache); this stage rewrites the
framed packets it writes, so the ledger and the audit describe the file and the `conn` record says `transcode`.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections import deque
from collections.abc import Callable
from typing import Protocol

from binlogd.protocol.checksum import crc_ok, set_crc
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    CRC_LEN,
    EVENT_LEN_OFFSET,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_POS_OFFSET,
    MAX_PACKET_PAYLOAD,
    ROTATE_EVENT,
)
from binlogd.protocol.packets import frame

STRIP = "strip_crc"  # the ledger's `transcode`: CRC32 files sent without CRCs
ADD = "add_crc"  # NONE files sent with CRCs added
ADD_VAR = "binlogd_add_checksums"

_HDR = struct.Struct("<I")
_LEN_POS = struct.Struct("<9xII")  # event_length, log_pos (reading)
_LEN_AND_POS = struct.Struct("<II")  # the same, written at EVENT_LEN_OFFSET
_U32 = struct.Struct("<I")
_PKT_EVENT_HEAD = struct.Struct("<IB9sII")  # packet header, OK byte, the event up to event_length, length, log_pos
_AFTER_POS = LOG_POS_OFFSET + 4  # flags and the rest of the event follow log_pos
_SPECIAL = frozenset({FORMAT_DESCRIPTION_EVENT, ROTATE_EVENT, HEARTBEAT_LOG_EVENT})  # the general path's
_TYPE_LEN_POS_FLAGS = struct.Struct("<4xB4xIIH")


class TranscodeRefused(Exception):
    """The session's variables ask for a transcoding binlogd cannot give (the dump answers 1236 with this text)."""


def first_rotate_crc(checksum_aware: bool, value: object) -> bool:
    """Whether the first fake ROTATE carries a CRC (MariaDB's get_binlog_checksum_value_at_connect): the value of
    @master_binlog_checksum read with the NONE/CRC32 names, whole and case-insensitive; a value that names no
    algorithm (NULL, '', 'FOO', 1) is not OFF there either, so it gets a CRC like CRC32 (checked against 10.11)."""
    if not checksum_aware:
        return False
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return not (isinstance(text, str) and text.upper() == "NONE")


def target_algorithm(checksum_aware: bool, client_crc32: bool, add_checksums: object, mariadb_compat: bool
                     ) -> int | None:
    """The checksum algorithm this client is to get every file in, or None: files as stored (MariaDB's rule).

    `client_crc32`: @master_binlog_checksum says CRC32; `add_checksums`: @binlogd_add_checksums (None: not set)."""
    if mariadb_compat:
        return None  # MariaDB knows no @binlogd_add_checksums and refuses non-aware clients
    add = _flag(add_checksums)
    if add and not client_crc32:
        raise TranscodeRefused(f"@{ADD_VAR}=1 needs @master_binlog_checksum='CRC32' in the same session")
    if not checksum_aware:
        return BINLOG_CHECKSUM_ALG_OFF
    return BINLOG_CHECKSUM_ALG_CRC32 if add else None


def _flag(value: object) -> bool:
    if value is None:
        return False
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if isinstance(value, bool) or text.strip() not in ("0", "1"):
        raise TranscodeRefused(f"Variable '{ADD_VAR}' can't be set to the value of '{text}' (0 or 1)")
    return text.strip() == "1"


def kind(target: int | None) -> str | None:
    """The ledger's name of a transcoding."""
    if target is None:
        return None
    return STRIP if target == BINLOG_CHECKSUM_ALG_OFF else ADD


def map_start(path: os.PathLike[str] | str, stream_pos: int, target: int, file_end: int) -> tuple[int, int] | None:
    """The file position of `stream_pos` (a position of the transcoded stream of file `path`) and the number of
    non-FDE events before it; None when it is no event boundary there or lies past the file's end (`file_end`).
    Positions up to the FDE's end are the same in both. Blocking (a header walk): call it in a thread. An unreadable
    file maps to itself: the dump's own open then reports it as MariaDB would."""
    try:
        return _map_start(path, stream_pos, target, file_end)
    except OSError:
        return stream_pos, 0


def _map_start(path: os.PathLike[str] | str, stream_pos: int, target: int, file_end: int) -> tuple[int, int] | None:
    with open(path, "rb") as f:
        head = f.read(BIN_LOG_HEADER_SIZE + HEADER_LEN)
        if len(head) < BIN_LOG_HEADER_SIZE + HEADER_LEN or head[BIN_LOG_HEADER_SIZE + 4] != FORMAT_DESCRIPTION_EVENT:
            return stream_pos, 0  # the dump reports the file as it would
        (fde_len, _) = _LEN_POS.unpack_from(head, BIN_LOG_HEADER_SIZE)
        fde = f.read(max(0, fde_len - HEADER_LEN))
        fde_end = BIN_LOG_HEADER_SIZE + fde_len
        if stream_pos <= fde_end or len(fde) < CRC_LEN + 1:
            return stream_pos, 0
        delta = _delta(fde[-CRC_LEN - 1], target)
        if delta == 0:
            return stream_pos, 0
        fpos, spos, k = fde_end, fde_end, 0
        f.seek(fpos)
        buf, off = b"", 0
        while spos < stream_pos and fpos < file_end:
            if len(buf) - off < HEADER_LEN:
                buf = buf[off:] + f.read(1 << 16)
                off = 0
                if len(buf) < HEADER_LEN:
                    return None
            (length, _) = _LEN_POS.unpack_from(buf, off)
            if length < HEADER_LEN:
                return None
            skip = length - (len(buf) - off)
            if skip > 0:
                f.seek(skip, os.SEEK_CUR)
                buf, off = b"", 0
            else:
                off += length
            fpos += length
            spos += length + delta
            k += 1
        if spos != stream_pos or fpos > file_end:
            return None
        return fpos, k


def _delta(src_alg: int, target: int) -> int:
    src = src_alg == BINLOG_CHECKSUM_ALG_CRC32
    dst = target == BINLOG_CHECKSUM_ALG_CRC32
    return (int(dst) - int(src)) * CRC_LEN


class _Positions:
    """File -> stream positions of one file: ends of the events the dump read (and the count of non-FDE events up
    to each), fed a chunk at a time before the chunk's packets are written, so it holds about one chunk."""

    __slots__ = ("anchor", "ends", "k_before", "last_end", "stream_anchor")

    def __init__(self, anchor: int, k: int, stream_anchor: int) -> None:
        self.anchor = anchor
        self.stream_anchor = stream_anchor
        self.ends: deque[tuple[int, int]] = deque([(anchor, k)])
        self.k_before = k
        self.last_end = anchor

    def feed(self, data: bytes | memoryview, base: int) -> None:
        ends = self.ends
        while len(ends) > 1:  # the packets of earlier chunks are written: only the last end is still looked up
            self.k_before = ends.popleft()[1]
        k = ends[-1][1] if ends else self.k_before
        mv = memoryview(data)
        n = len(mv)
        p = max(0, self.last_end - base)
        while n - p >= HEADER_LEN:
            (length, _) = _LEN_POS.unpack_from(mv, p)
            if length < HEADER_LEN or p + length > n:
                break
            p += length
            k += 1
            ends.append((base + p, k))
        self.last_end = max(self.last_end, base + p)

    def count(self, pos: int) -> int:
        """Non-FDE events ending at or before `pos` (exact at the ends fed; else those before the ends left)."""
        ends = self.ends
        while len(ends) > 1 and ends[1][0] <= pos:
            self.k_before = ends.popleft()[1]
        first = ends[0] if ends else None
        if first is not None and first[0] <= pos:
            return first[1]
        return self.k_before


class Writer(Protocol):
    def write(self, data: bytes | bytearray | memoryview) -> None: ...
    async def drain(self) -> None: ...


class TranscodingWriter:
    """Rewrites the dump's framed packets into the client's algorithm and the stream's positions, then writes them
    to `inner` (re-framed with their own sequence ids: an event may cross the 16 MiB packet limit once longer).

    `corrupt(log_pos, length)` builds the exception for a stored CRC that fails while stripping it (the client
    could no longer tell)."""

    def __init__(self, inner: Writer, target: int, seq: int, corrupt: Callable[[int, int], Exception]) -> None:
        self.inner = inner
        self.target = target
        self.crc_out = target == BINLOG_CHECKSUM_ALG_CRC32
        self.seq = seq
        self.corrupt = corrupt
        self.src_alg = target  # before the first FDE: the first fake ROTATE follows @master_binlog_checksum
        self.delta = 0
        self.written = 0  # bytes handed to `inner` (what the client gets)
        self._pending = bytearray()
        self._parts: list[bytes] = []
        self._files: dict[str, _Positions] = {}
        self._cur: _Positions | None = None

    # --- positions, told by the dump ---------------------------------------------------------------------
    def open_file(self, name: str, anchor: int, k: int = 0, stream_anchor: int = BIN_LOG_HEADER_SIZE) -> None:
        """The dump starts `name` at file position `anchor` (stream position `stream_anchor`: the request), after
        `k` non-FDE events; called before the file's fake ROTATE is framed."""
        self._files = {n: v for n, v in self._files.items() if v is self._cur}
        self._files[name] = _Positions(anchor, k, stream_anchor)

    def feed(self, name: str, data: bytes | memoryview, base: int) -> None:
        """The chunk of `name` at file position `base` about to be framed (its whole events are counted)."""
        m = self._files.get(name)
        if m is not None:
            m.feed(data, base)

    def stream_pos(self, pos: int) -> int:
        """The stream position of file position `pos` of the current file (positions come in file order)."""
        m = self._cur
        if pos < BIN_LOG_HEADER_SIZE or m is None or self.delta == 0:
            return pos
        return pos + self.delta * m.count(pos)

    # --- Writer ------------------------------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._pending:
            self._pending += data
            data = self._pending
        mv = memoryview(data)
        n = len(mv)
        out = bytearray()
        p = 0
        seq = self.seq
        hdr = _HDR.pack
        head_pack = _PKT_EVENT_HEAD.pack
        unpack_w = _HDR.unpack_from
        crc32 = zlib.crc32
        special = _SPECIAL
        stream_pos = self.stream_pos
        try:
            while n - p >= 4:
                (w,) = unpack_w(mv, p)
                length = w & 0xFFFFFF
                q = p + 4
                if n - q < length:
                    break
                end = q + length
                # the common case, inline: an event in one packet that stays in one, not an FDE/ROTATE/heartbeat
                if (length + CRC_LEN < MAX_PACKET_PAYLOAD and length > HEADER_LEN + CRC_LEN and mv[q] == 0
                        and mv[q + 5] not in special and not self._parts):
                    src_crc = self.src_alg == BINLOG_CHECKSUM_ALG_CRC32
                    if src_crc == self.crc_out:
                        out += hdr(length | (seq << 24))
                        out += mv[q:end]
                    elif src_crc:  # strip
                        (log_pos,) = _U32.unpack_from(mv, q + 1 + LOG_POS_OFFSET)
                        if crc32(mv[q + 1 : end - CRC_LEN]) != int.from_bytes(mv[end - CRC_LEN : end], "little"):
                            raise self.corrupt(log_pos, length - 1)
                        out += head_pack((length - CRC_LEN) | (seq << 24), 0, bytes(mv[q + 1 : q + 10]),
                                         length - 1 - CRC_LEN, stream_pos(log_pos))
                        out += mv[q + 1 + _AFTER_POS : end - CRC_LEN]
                    else:  # add
                        (log_pos,) = _U32.unpack_from(mv, q + 1 + LOG_POS_OFFSET)
                        head = head_pack((length + CRC_LEN) | (seq << 24), 0, bytes(mv[q + 1 : q + 10]),
                                         length - 1 + CRC_LEN, stream_pos(log_pos))
                        body = mv[q + 1 + _AFTER_POS : end]
                        out += head
                        out += body
                        out += (crc32(body, crc32(memoryview(head)[5:])) & 0xFFFFFFFF).to_bytes(CRC_LEN, "little")
                    seq = (seq + 1) & 0xFF
                    p = end
                    continue
                part = bytes(mv[q:end])
                p = end
                if length == MAX_PACKET_PAYLOAD or self._parts:
                    self._parts.append(part)
                    if length == MAX_PACKET_PAYLOAD:
                        continue
                    part = b"".join(self._parts)
                    self._parts = []
                seq = frame(self._packet(part), seq, out)
        except Exception:
            mv.release()
            self._pending = bytearray()  # the stream ends here: what came before the bad event is still written
            self._parts = []
            self.seq = seq
            if out:
                self.written += len(out)
                self.inner.write(out)
            raise
        if data is self._pending:  # (an event arriving in many slices is not copied again for each one)
            mv.release()
            del self._pending[:p]
        else:
            self._pending = bytearray(mv[p:])
            mv.release()
        self.seq = seq
        if out:
            self.written += len(out)
            self.inner.write(out)

    async def drain(self) -> None:
        await self.inner.drain()

    # --- events ------------------------------------------------------------------------------------------
    def _packet(self, payload: bytes) -> bytes:
        if len(payload) < 1 + HEADER_LEN or payload[0] != 0:
            return payload  # ERR, EOF
        ev = self._event(payload[1:])
        return b"\0" + ev

    def _event(self, ev: bytes) -> bytes:
        typ, length, log_pos, flags = _TYPE_LEN_POS_FLAGS.unpack_from(ev)
        if typ == FORMAT_DESCRIPTION_EVENT and len(ev) > HEADER_LEN + CRC_LEN:
            self.src_alg = ev[-CRC_LEN - 1]
            self.delta = _delta(self.src_alg, self.target)
            if self.src_alg == self.target:
                return ev
            out = bytearray(ev)
            out[-CRC_LEN - 1] = self.target
            set_crc(out)  # an FDE always carries a CRC (MariaDB writes it whatever the algorithm)
            return bytes(out)
        src_crc = self.src_alg == BINLOG_CHECKSUM_ALG_CRC32
        start: int | None = None  # a fake ROTATE's start position in the stream (the request, or 4)
        if typ == ROTATE_EVENT and flags & LOG_EVENT_ARTIFICIAL_F and log_pos == 0:
            self._cur = self._files.get(self._rotate_name(ev))
            if self._cur is not None and len(ev) >= HEADER_LEN + 8:
                (pos,) = struct.unpack_from("<Q", ev, HEADER_LEN)
                if pos == self._cur.anchor and self._cur.stream_anchor != pos:
                    start = self._cur.stream_anchor
        if src_crc == self.crc_out and start is None:
            return ev
        if src_crc:
            if not crc_ok(ev):
                raise self.corrupt(log_pos, length)
            out = bytearray(ev[:-CRC_LEN])
        else:
            out = bytearray(ev)
        if self.crc_out:
            out += b"\0\0\0\0"
        _LEN_AND_POS.pack_into(out, EVENT_LEN_OFFSET, len(out), self.stream_pos(log_pos))
        if start is not None:
            struct.pack_into("<Q", out, HEADER_LEN, start)
        elif typ == HEARTBEAT_LOG_EVENT and log_pos == 0 and len(out) >= HEADER_LEN + 8:
            (pos,) = struct.unpack_from("<Q", out, HEADER_LEN)  # past 4 GiB: the position is in the body
            struct.pack_into("<Q", out, HEADER_LEN, self.stream_pos(pos))
        if self.crc_out:
            set_crc(out)
        return bytes(out)

    def _rotate_name(self, ev: bytes) -> str:
        body_end = len(ev) - (CRC_LEN if self.src_alg == BINLOG_CHECKSUM_ALG_CRC32 else 0)
        return ev[HEADER_LEN + 8 : body_end].decode("utf-8", "replace")
