"""Carries out a `Fault` (server/faults.py) on one dump stream: a wrapper around the dump's socket writer.

Only dumps that matched a fault get it, so the dump's own loop is unchanged for every other connection. The dump
writes whole MySQL packets (`write()` then `drain()`); the wrapper counts the event packets (payload starting with
0x00, a > 16 MiB event's continuation packets belonging to it) and acts at event-packet boundaries: it flips the
last byte of event K (its CRC32 when the stream has checksums), stalls, sends ERR 1236 or closes after N events,
cuts after N bytes, and paces the bytes it hands on. Every action is logged and reported through `record` (the
dump's audit ledger); an action that ends the stream raises `FaultStop`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Callable
from typing import Any, Protocol

from binlogd.protocol.constants import ER_MASTER_FATAL_ERROR_READING_BINLOG, ROTATE_EVENT
from binlogd.protocol.packets import err_packet, frame

from .faults import Match

log = logging.getLogger("binlogd.faults")

_MAX = 0xFFFFFF  # a packet of this payload length is continued by the next one
RecordFn = Callable[[dict[str, Any]], None]


class _Inner(Protocol):
    def write(self, data: bytes | bytearray) -> None: ...
    async def drain(self) -> None: ...


class FaultStop(ConnectionError):
    """A fault ended the dump: `err` is the ERR packet sent (None: the connection was just closed). A
    ConnectionError, so that paths which expect a vanished peer (the ERR after a failed dump) treat it as one."""

    def __init__(self, action: str, err: tuple[int, str] | None, written: int) -> None:
        super().__init__(action if err is None else f"{action} {err[0]}: {err[1]}")
        self.action = action
        self.err = err
        self.written = written  # bytes that reached the socket


class FaultWriter:
    """The dump's writer for a connection that matched a fault (`match`); `seq`: the next packet's sequence id."""

    def __init__(self, inner: _Inner, match: Match, seq: int, label: str = "", client_heartbeat_ns: int = 0) -> None:
        self.inner = inner
        self.match = match
        f = self.fault = match.fault
        self.label = label
        self._client_hb = client_heartbeat_ns
        self.record: RecordFn = lambda body: None  # the dump binds its ledger here
        self.events = 0  # event packets handed on
        self.written = 0  # bytes handed on
        self._buf = bytearray()
        self._seq = seq
        self._cont = False  # the next packet continues the current event
        self._file: str | None = None  # from the last ROTATE handed on
        self._pos = 0  # log_pos of the last event handed on
        self._type: int | None = None
        self._at: dict[int, list[str]] = {}  # event count -> actions due once that many events were handed on
        for n, action, on in ((f.stall_after_events, "stall", f.stall_seconds is not None),
                              (f.error_after_events, "error_1236", f.error_1236 is not None),
                              (f.close_after_events or 0, "close_after_events", f.close_after_events is not None),
                              (f.internal_error_after_events or 0, "internal_error",
                               f.internal_error_after_events is not None)):
            if on:
                self._at.setdefault(n, []).append(action)
        self._corrupt = f.corrupt_crc_of_event
        self._cut = f.close_after_bytes
        self._rate = f.throttle_bytes_per_s
        self.wire_seq: int | None = None  # set when the internal error fires: the wire is between packets there
        self._t0: float | None = None
        self._paced = 0

    # --- the dump's side -----------------------------------------------------------------------------------
    def armed(self) -> None:
        """The `match` record (right after the dump's `conn` record)."""
        m = self.match
        log.warning("%s fault %d (dump %d by %s) armed: %s", self.label, m.index, m.dump, m.by, m.fault.to_dict())
        self.record({"action": "match", "fault": m.index, "dump": m.dump, "by": m.by, "spec": m.fault.to_dict()})
        if m.fault.heartbeat_s is not None:
            self._act("heartbeat", {"heartbeat_s": m.fault.heartbeat_s, "client_heartbeat_s": self._client_hb / 1e9})

    def write(self, data: bytes | bytearray) -> None:
        self._buf += data

    async def drain(self) -> None:
        data, self._buf = self._buf, bytearray()
        if not (self._at or self._corrupt is not None or self._cut is not None):
            await self._send(data)  # nothing left that depends on packets: pass on (paced if throttled)
            return
        await self._fire()
        sent = p = 0
        n = len(data)
        while p + 4 <= n:
            length = data[p] | data[p + 1] << 8 | data[p + 2] << 16
            end = p + 4 + length
            if self._cut is not None and self.written + end - sent > self._cut:
                await self._send(data[sent:sent + self._cut - self.written])
                self._act("close_after_bytes", {})
                raise FaultStop("close_after_bytes", None, self.written)
            if end > n:
                break
            self._seq = (data[p + 3] + 1) & 0xFF
            if not self._cont:  # a packet that begins something
                if length == 0 or data[p + 4] != 0:
                    p = end  # EOF / ERR: not an event
                    continue
                self._peek(data, p + 5, end)
            self._cont = length == _MAX  # a > 16 MiB event continues in the next packet
            if self._cont:
                p = end
                continue
            self.events += 1  # the event ends with this packet
            if self.events == self._corrupt:
                i = end - 1 if length else p - 1
                data[i] ^= 0xFF
                self._corrupt = None
                self._act("corrupt_crc_of_event", {"event": self.events, "event_type": self._type},
                          self.written + end - sent)
            p = end
            if self.events in self._at:
                await self._send(data[sent:end])
                sent = end
                await self._fire()
        await self._send(data[sent:])

    # --- helpers -----------------------------------------------------------------------------------------
    def _peek(self, data: bytearray, h: int, end: int) -> None:
        """Note the event header at data[h] (type, log_pos; the file a ROTATE names)."""
        if end - h < 19:
            return
        self._type = data[h + 4]
        self._pos = int.from_bytes(data[h + 13:h + 17], "little")
        if self._type == ROTATE_EVENT and end - h >= 27:
            body = bytes(data[h + 27:end])
            ev = bytes(data[h:end])
            if len(ev) > 31 and zlib.crc32(ev[:-4]) == int.from_bytes(ev[-4:], "little"):
                body = body[:-4]
            self._file = body.decode("utf-8", "replace")
            self._pos = int.from_bytes(data[h + 19:h + 27], "little")

    def _act(self, action: str, extra: dict[str, Any], at: int | None = None) -> None:
        """Log and record `action`, done after `self.events` event packets and `at` bytes of the stream (default:
        what was handed on); file/pos: the last event's (its log_pos; a ROTATE's announced position)."""
        at = self.written if at is None else at
        body = {"action": action, "fault": self.match.index, "events": self.events, "bytes": at,
                "file": self._file, "pos": self._pos, **extra}
        log.warning("%s fault %d: %s after %d event packets, %d bytes (%s:%d)%s", self.label, self.match.index,
                    action, self.events, at, self._file, self._pos,
                    "".join(f" {k}={v!r}" for k, v in extra.items()))
        self.record(body)

    async def _fire(self) -> None:
        """The actions due at the current event count (each once)."""
        for action in self._at.pop(self.events, ()):
            f = self.fault
            if action == "stall":
                assert f.stall_seconds is not None
                self._act("stall", {"seconds": f.stall_seconds})
                await self.inner.drain()
                await asyncio.sleep(f.stall_seconds)
            elif action == "error_1236":
                assert f.error_1236 is not None
                out = bytearray()
                self._seq = frame(err_packet(ER_MASTER_FATAL_ERROR_READING_BINLOG, f.error_1236), self._seq, out)
                await self._send(out)
                self._act("error_1236", {"code": ER_MASTER_FATAL_ERROR_READING_BINLOG, "message": f.error_1236})
                raise FaultStop("error_1236", (ER_MASTER_FATAL_ERROR_READING_BINLOG, f.error_1236), self.written)
            elif action == "internal_error":  # not a FaultStop: the dump must take it as a bug of its own
                self._act(action, {})
                self.wire_seq = self._seq
                raise RuntimeError(f"fault: internal error after {self.events} event packets")
            else:
                self._act(action, {})
                raise FaultStop(action, None, self.written)

    async def _send(self, data: bytes | bytearray) -> None:
        if not data:
            return
        if self._rate is None:
            self.inner.write(bytes(data))
            self.written += len(data)
            await self.inner.drain()
            return
        if self._t0 is None:
            self._t0 = time.monotonic()
            self._act("throttle", {"bytes_per_s": self._rate})
        step = max(1, min(1 << 16, self._rate // 20))
        for i in range(0, len(data), step):
            piece = bytes(data[i:i + step])
            self.inner.write(piece)
            self.written += len(piece)
            self._paced += len(piece)
            await self.inner.drain()
            delay = self._t0 + self._paced / self._rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
