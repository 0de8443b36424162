"""The dump phase's socket reads, straight into one preallocated buffer (an asyncio.BufferedProtocol).

Through a StreamReader every byte of a dump was copied three times before it was looked at (the transport's bytes
object, the reader's buffer, the bytes `read()` returns) and each read was capped at the transport's 256 KiB. Here
the transport receives into the free end of `buf` (up to DUMP_READ at a time), the consumer scans `view()` where it
lies and `consume()`s the whole packets it took; the torn packet at the end moves to the front. Reading pauses
while the buffer is full, so the upstream socket gets back-pressure exactly as before. A packet larger than the
buffer (a 16 MiB part) grows it for as long as it is needed.

The StreamReaderProtocol the connection started with keeps the connection's end (connection_lost) and the write
flow control, so the StreamWriter's close() and wait_closed() work as before.
"""

from __future__ import annotations

import asyncio


class DumpReceiver(asyncio.BufferedProtocol):
    """Installed on a connection's transport with `DumpReceiver.install` once COM_BINLOG_DUMP is sent."""

    def __init__(self, previous: asyncio.BaseProtocol, size: int) -> None:
        self.size = size
        self.buf = bytearray(size)
        self.filled = 0
        self.previous = previous
        self.transport: asyncio.Transport | None = None
        self.paused = False
        self.closed = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    @classmethod
    def install(cls, transport: asyncio.Transport, size: int) -> DumpReceiver:
        rx = cls(transport.get_protocol(), size)
        rx.transport = transport
        transport.set_protocol(rx)
        return rx

    # ---- the transport's side -------------------------------------------------------------------------
    def get_buffer(self, sizehint: int) -> memoryview:
        if self.filled == len(self.buf):  # reading is paused when full; a call before that takes effect grows it
            self._resize(2 * len(self.buf))
        return memoryview(self.buf)[self.filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self.filled += nbytes
        if self.filled == len(self.buf) and self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()
        self.previous.connection_lost(exc)  # the StreamWriter's wait_closed() ends with it

    def pause_writing(self) -> None:
        self.previous.pause_writing()

    def resume_writing(self) -> None:
        self.previous.resume_writing()

    # ---- the consumer's side --------------------------------------------------------------------------
    async def fill(self, need: int) -> None:
        """Wait until at least `need` bytes are buffered, or the connection has ended (check `filled`)."""
        if need > len(self.buf):
            self._resize(need)
        while self.filled < need and not self.closed:
            self._resume()
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def view(self) -> memoryview:
        """The bytes received and not consumed (valid until the next `consume()` or `fill()`)."""
        return memoryview(self.buf)[: self.filled]

    def consume(self, used: int) -> None:
        """Drop the first `used` bytes; what follows moves to the front (a buffer grown for a large packet goes
        back to its size once the rest fits)."""
        rest = self.filled - used
        if len(self.buf) > self.size and rest <= self.size:
            buf = bytearray(self.size)
            buf[:rest] = self.buf[used : self.filled]
            self.buf = buf
        elif rest and used:
            self.buf[:rest] = self.buf[used : self.filled]
        self.filled = rest
        self._resume()

    # ---- helpers --------------------------------------------------------------------------------------
    def _resize(self, size: int) -> None:
        buf = bytearray(size)
        buf[: self.filled] = self.buf[: self.filled]
        self.buf = buf

    def _resume(self) -> None:
        if self.paused and self.filled < len(self.buf) and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
