"""The command phase of a standalone writer's connection, served by a plain `asyncio.Protocol` while it can be.

Why: on the write load every statement is one COM_QUERY in and one OK out, and the stream path (StreamReader,
the connection task waking per packet, a timed read, mimic's session, `drain`) cost about as much server CPU as
logging the statement (benchmarks/README.md, `standalone_writes`). Here the transport's bytes arrive in
`data_received`, whole packets are cut out of one bytearray, the statements that dominate (DML, SET, BEGIN,
COMMIT, ROLLBACK: `StandaloneSource.start`, the same code the full path runs) are answered at once, and the
answers to a burst of pipelined packets leave in one `transport.write`. No await, no task switch per statement.

Everything else is handed back untouched: the packet that is not served here (another command, a statement
`start` leaves to `execute`, a wrong sequence id, an oversized or 16 MiB+ packet, text that is not in the client's
character set) and all bytes after it go back into the connection's StreamReader, its own protocol is put back
on the transport, and `ReplicationConnection.command_phase` carries on as if it had read them itself (errors,
prepared statements, COM_BINLOG_DUMP, result sets). End of file, a lost connection, write back-pressure and
the connection's cancellation (server shutdown) are handed back the same way. A commit that has to wait (the
writer thread, `--sync-binlog`) holds the packets behind it until it is durable: each client still gets its OK
only once its group is committed, in order.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Protocol, cast

from binlogd.protocol.constants import ER_UNKNOWN_ERROR
from binlogd.protocol.packets import err_packet
from binlogd.protocol.sqlserver import SafeStream, extra_info

from .sql_surface import Ok, SessionState, SqlError
from .standalone.session import WriteSession
from .standalone.source import SET_USER_INT, Done, StandaloneSource, note_error

log = logging.getLogger("binlogd.conn")

COM_QUERY = 0x03
_MAX_FRAME = 0xFFFFFF
# the first word of the statements `StandaloneSource.start` may answer (anything else is not even classified here)
_VERBS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE", "SET", "BEGIN", "START", "COMMIT", "ROLLBACK"})


class Host(Protocol):
    """What the fast path needs of its connection (ReplicationConnection)."""

    connection_id: int

    def fast_path_ok(self) -> bytes: ...

    def fast_path_codec(self) -> str: ...

    def _wait_timeout(self) -> float: ...


def _frame(payload: bytes, seq: int) -> bytes:
    return (len(payload) | seq << 24).to_bytes(4, "little") + payload


_VERB = re.compile(r"[ \t\n\r\v\f]*(INSERT|REPLACE|UPDATE|DELETE|SET|BEGIN|START|COMMIT|ROLLBACK)", re.I)


def _verb(sql: str) -> str:
    """The statement's first word, upper case, when it is one of `_VERBS`, else "" (a leading comment gives no word:
    the full path takes it). One regex match: this runs for every packet."""
    m = _VERB.match(sql)
    if m is None:
        return ""
    end = m.end()
    return "" if sql[end : end + 1].isalpha() else m.group(1).upper()


class FastCommands(asyncio.Protocol):
    """One connection's fast path; `serve` runs it until a command it does not serve arrives."""

    def __init__(self, host: Host, stream: SafeStream, source: StandaloneSource, state: SessionState,
                 writes: WriteSession) -> None:
        self._host = host
        self._reader: asyncio.StreamReader = stream._inner.reader
        self._writer: asyncio.StreamWriter = stream._inner.writer
        self._max_payload = stream.max_payload
        self._source = source
        self._state = state
        self._writes = writes
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None
        self._stream_protocol: asyncio.BaseProtocol | None = None
        self._back: asyncio.Future[bool] | None = None  # set while serving: True = go on with the full path
        self._busy = False  # a commit is being waited for: the packets behind it wait too
        self._deferred_pause = False  # pause_writing / eof_received came while busy: handled once it is answered
        self._deferred_eof = False
        self._ok = b""
        self._codec = "utf-8"
        self._last_data = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()  # (made on the connection's loop, in its task)

    @staticmethod
    def usable(stream: object) -> bool:
        """Plain TCP (no TLS) through binlogd's SafeStream, with the stream's protocol not paused for writing."""
        if not isinstance(stream, SafeStream):
            return False
        writer = stream._inner.writer
        if extra_info(writer, "ssl_object") is not None:
            return False
        protocol = writer.transport.get_protocol()
        return isinstance(protocol, asyncio.StreamReaderProtocol) and not getattr(protocol, "_paused", True)

    async def serve(self) -> bool:
        """Serve commands from the transport; True when the full path is to go on (the next command, or the end of
        the connection, is in the StreamReader), False when the connection idled past wait_timeout."""
        reader = self._reader
        if reader.exception() is not None or getattr(reader, "_eof", True) or self._writer.transport.is_closing():
            return True  # (after the end of file no callback comes: the stream path reads what is left, then ends)
        transport = cast(asyncio.Transport, self._writer.transport)  # (uvloop's is not an asyncio.Transport)
        loop = self._loop
        self._transport = transport
        self._stream_protocol = transport.get_protocol()
        self._ok = _frame(self._host.fast_path_ok(), 1)
        self._codec = self._host.fast_path_codec()
        buffered: bytearray = reader._buffer  # type: ignore[attr-defined]
        self._buf += buffered
        buffered.clear()
        if getattr(reader, "_paused", False):  # the StreamReader had paused reading on a full buffer
            reader._paused = False  # type: ignore[attr-defined]
            transport.resume_reading()
        self._deferred_pause = self._deferred_eof = False
        back: asyncio.Future[bool] = loop.create_future()
        self._back = back
        transport.set_protocol(self)
        self._last_data = loop.time()
        self._arm_idle_timer()
        try:
            self._process()
            return await back
        finally:
            self._leave(None)

    # --- asyncio.Protocol ---------------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self._buf += data
        self._last_data = self._loop.time()  # (not asyncio.get_running_loop(): a getpid(2) per call)
        if not self._busy:
            self._process()

    def eof_received(self) -> bool | None:
        if self._busy:  # the waited-for commit's answer goes first (`_committed` hands back then)
            self._deferred_eof = True
            return True
        protocol = self._stream_protocol
        self._leave(True)
        return protocol.eof_received() if isinstance(protocol, asyncio.Protocol) else None

    def connection_lost(self, exc: Exception | None) -> None:
        protocol = self._stream_protocol
        self._leave(True)
        if protocol is not None:
            protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        """The client does not read its answers: the stream path (which waits in `drain`) takes over, once the
        answer of a commit being waited for is written (it must precede anything the stream path answers)."""
        if self._busy:
            self._deferred_pause = True
            return
        log.debug("connection %d: answers not read: the stream path takes over", self._host.connection_id)
        protocol = self._stream_protocol
        self._leave(True)
        if protocol is not None:
            protocol.pause_writing()

    def resume_writing(self) -> None:  # (only while a commit was waited for: the pause needs no hand-back then)
        self._deferred_pause = False

    # --- the packets --------------------------------------------------------------------------------------------
    def _process(self) -> None:
        """Answer every whole packet in the buffer that is served here; hand back at the first that is not."""
        buf = self._buf
        pos = 0
        out: list[bytes] = []
        hand_back = False
        try:
            while not self._busy and self._back is not None:
                have = len(buf) - pos
                if have < 4:
                    break
                length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
                if (length == _MAX_FRAME or buf[pos + 3] != 0 or length > self._max_payload or length == 0
                        or (have >= 5 and buf[pos + 4] != COM_QUERY)):
                    hand_back = True
                    break
                if have < 4 + length:
                    break
                try:
                    sql = buf[pos + 5 : pos + 4 + length].decode(self._codec)
                except (UnicodeDecodeError, LookupError):
                    hand_back = True
                    break
                verb = _verb(sql)
                if verb not in _VERBS:
                    hand_back = True
                    break
                reply = self._statement(sql, out)
                if reply is None:
                    hand_back = True
                    break
                pos += 4 + length
                if reply:
                    out.append(reply)
                if verb == "SET" and SET_USER_INT.fullmatch(sql) is None:  # SET NAMES, SET wait_timeout
                    self._codec = self._host.fast_path_codec()
                    self._arm_idle_timer()
        finally:
            del buf[:pos]
            if out and self._transport is not None:
                self._transport.write(b"".join(out))
        if hand_back:
            self._leave(True)

    def _statement(self, sql: str, out: list[bytes]) -> bytes | None:
        """The framed answer to a statement, None to hand it back untouched, b"" when a commit is waited for (the
        answers so far are then in `out`, which is written before the wait)."""
        try:
            done = self._source.start(sql, self._state, self._writes)
        except SqlError as e:
            log.info("connection %d: error %s: %s", self._host.connection_id, e.code, e.message)
            return _frame(err_packet(e.code, e.message, e.sqlstate.encode()), 1)
        except Exception as e:  # a bug must cost one statement, not the server
            log.exception("connection %d: internal error", self._host.connection_id)
            return _frame(err_packet(ER_UNKNOWN_ERROR, f"Internal error: {e}"), 1)
        if not isinstance(done, Done):
            return None
        if not isinstance(done.result, Ok):  # (`start` answers only statements without a result set)
            log.error("connection %d: the fast path got a result set for %.100r", self._host.connection_id, sql)
            return _frame(err_packet(ER_UNKNOWN_ERROR, "Internal error: a result set on the fast path"), 1)
        commit = done.commit
        if commit is None or isinstance(commit, tuple):
            return self._ok
        self._busy = True
        commit.add_done_callback(self._committed)
        return b""

    def _committed(self, commit: asyncio.Future[tuple[str, int]]) -> None:
        """A waited-for commit ended: its OK (or 1026), then the packets that arrived meanwhile."""
        self._busy = False
        if self._back is None or self._transport is None:
            return  # the connection ended or was handed back meanwhile: nobody is waiting for this answer
        e = None if commit.cancelled() else commit.exception()
        if e is None and not commit.cancelled():
            self._transport.write(self._ok)
        else:
            err = e if isinstance(e, SqlError) else SqlError(ER_UNKNOWN_ERROR, f"Internal error: {e}")
            note_error(self._state, err)
            log.info("connection %d: error %s: %s", self._host.connection_id, err.code, err.message)
            self._transport.write(_frame(err_packet(err.code, err.message, err.sqlstate.encode()), 1))
        pause, eof = self._deferred_pause, self._deferred_eof
        self._deferred_pause = self._deferred_eof = False
        if pause:
            self.pause_writing()
        if eof:
            self.eof_received()  # (after a hand-back above: forwarded to the stream's protocol all the same)
        if not pause and not eof:
            self._process()

    def _arm_idle_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(self._last_data + self._host._wait_timeout(), self._idle_check)

    def _idle_check(self) -> None:
        """wait_timeout: a client idle for longer is dropped silently (as the stream path's timed read does)."""
        if self._back is None:
            return
        loop = self._loop
        timeout = self._host._wait_timeout()
        left = self._last_data + timeout - loop.time()
        if left > 0 or self._busy:
            self._timer = loop.call_later(max(left, 0.05), self._idle_check)
            return
        back = self._back
        self._leave(None)
        if not back.done():
            back.set_result(False)

    def _leave(self, result: bool | None) -> None:
        """Put the stream's protocol back on the transport and the unread bytes back into its StreamReader."""
        back, self._back = self._back, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transport, protocol = self._transport, self._stream_protocol
        if back is None or transport is None or protocol is None:
            return
        if transport.get_protocol() is self:
            transport.set_protocol(protocol)
        if self._buf:
            self._reader.feed_data(bytes(self._buf))
            self._buf.clear()
        if result is not None and not back.done():
            back.set_result(result)
