"""The command loop's per-packet reads and OK answers, without mysql-mimic's generic layers.

Why: on the standalone write load every statement costs one packet in and one OK out, and the generic path (an
`asyncio.timeout` per read, mimic's packet buffer and `drain` per write, an OK packet rebuilt each time) was about
as much server CPU as the write itself (benchmarks/README.md, `standalone_writes`). Here a packet already in the
StreamReader's buffer is taken without an await or a timer, the OK's bytes are built once per connection state,
and a write awaits `drain` only when the transport holds data it could not send yet. Anything unusual (a partial
or 16 MiB+ packet, a wrong sequence id, an oversized packet) goes through `SafeStream.read`, which answers it.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class _Seq(Protocol):
    value: int

    def __next__(self) -> int: ...


class _Inner(Protocol):
    """What is used of mimic's MysqlStream: its StreamReader/Writer, sequence ids and write buffer."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    seq: _Seq
    _buffer: bytearray


class _Stream(Protocol):
    """What is used of SafeStream (protocol/sqlserver.py): mimic's stream it wraps, its size limit and I/O."""

    _inner: _Inner
    max_payload: int

    async def read(self) -> bytes: ...

    async def write(self, data: bytes) -> None: ...


def take_buffered_packet(stream: _Stream) -> bytes | None:
    """The next packet's payload if the whole packet is already buffered with the expected sequence id, else None
    (the caller then reads through `stream.read`, which waits, times out and answers bad framing)."""
    inner = stream._inner  # SafeStream forwards attributes to it, one lookup at a time
    reader = inner.reader
    buf: bytearray = reader._buffer  # type: ignore[attr-defined]
    n = len(buf)
    if n < 4:
        return None
    word = int.from_bytes(buf[:4], "little")
    length = word & 0xFFFFFF
    seq = inner.seq
    if length == 0xFFFFFF or n < 4 + length or word >> 24 != seq.value or length > stream.max_payload:
        return None
    data = bytes(buf[4 : 4 + length])
    del buf[: 4 + length]
    next(seq)
    reader._maybe_resume_transport()  # type: ignore[attr-defined]  # as StreamReader.read does after consuming
    return data


async def read_packet(stream: _Stream) -> bytes:
    """One packet: from the buffer when it is all there, else through the stream's bounded, timed read."""
    data = take_buffered_packet(stream)
    return data if data is not None else await stream.read()


async def write_packet(stream: _Stream, payload: bytes) -> None:
    """One framed packet (payload below 16 MiB) straight to the transport; waits only under back-pressure."""
    inner = stream._inner
    if inner._buffer:  # mimic's own write buffer holds packets: keep their order
        await stream.write(payload)
        return
    writer = inner.writer
    writer.write((len(payload) | next(inner.seq) << 24).to_bytes(4, "little") + payload)
    transport = writer.transport
    if transport.get_write_buffer_size() or transport.is_closing():
        await writer.drain()  # back-pressure, or the error of a connection that is gone
