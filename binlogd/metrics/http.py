"""A minimal asyncio HTTP/1.x endpoint serving Prometheus text on `/metrics`, on the caller's event loop.

Why not prometheus_client's own server: it runs a thread that would read binlogd's live state (dicts the event
loop mutates) concurrently. Here the scrape runs on the loop between two events, so collectors read a consistent
state without locks; a collection only reads memory (and a few file sizes), well under a millisecond per replica.

One request per connection (`Connection: close`), bounded: the request head is at most MAX_HEAD bytes and must
arrive within HEAD_TIMEOUT seconds, and at most MAX_CLIENTS scrapes are served at once. `GET|HEAD /metrics`
(any query string) is 200; another path 404; another method 405; a request line that is not
`METHOD TARGET HTTP/1.x` 400; a head too long 431. Nothing a client sends raises out of the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from collections.abc import Sequence

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from binlogd.listening import bind_listening

log = logging.getLogger("binlogd.metrics")

MAX_HEAD = 8192  # request line + headers
HEAD_TIMEOUT = 5.0
MAX_CLIENTS = 16
LINGER = 10.0  # most seconds spent sending an answer and reading what the client sends after its head
PATH = "/metrics"
_REQUEST_LINE = re.compile(rb"([A-Z]{1,16}) (/[\x21-\x7e]*|\*) HTTP/1\.[01]\r?\n")
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


class _BadRequest(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def response(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8", head_only: bool = False
             ) -> bytes:
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    return head if head_only else head + body


def route(method: bytes, target: bytes) -> int:
    """The status of a well-formed request (the rule for paths and methods, in one place)."""
    if target.split(b"?", 1)[0] != PATH.encode():
        return 404
    if method not in (b"GET", b"HEAD"):
        return 405
    return 200


async def read_head(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(method, target) of the request line, after reading the whole head; _BadRequest when malformed."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise _BadRequest(431) from None
    m = _REQUEST_LINE.fullmatch(line)
    if m is None:
        raise _BadRequest(400)
    size = len(line)
    while True:
        try:
            h = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise _BadRequest(431) from None
        size += len(h)
        if size > MAX_HEAD:
            raise _BadRequest(431)
        if h in (b"\r\n", b"\n"):
            return m.group(1), m.group(2)


class MetricsServer:
    """Serves `registry` on already bound and listening sockets (bind first so a port in use refuses the start
    before anything else happens: binlogd.server.startup.listen, or `bind()` here)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._servers: list[asyncio.Server] = []
        self._clients = 0
        self.scrapes = 0

    @staticmethod
    def bind(host: str, port: int) -> list[socket.socket]:
        """Bound, listening sockets for `host`:`port` (OSError when the port is taken)."""
        return bind_listening(host, port, 64)

    async def serve_sockets(self, socks: Sequence[socket.socket]) -> None:
        for s in socks:
            self._servers.append(await asyncio.start_server(self._handle, sock=s, limit=MAX_HEAD))

    def close(self) -> None:
        for s in self._servers:
            s.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self._clients >= MAX_CLIENTS:
                writer.write(response(503, b"too many concurrent scrapes\n"))
            else:
                self._clients += 1
                try:
                    writer.write(await self._answer(reader))
                finally:
                    self._clients -= 1
            await asyncio.wait_for(self._linger(reader, writer), LINGER)
        except (ConnectionError, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("metrics request failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send the answer, end our side, and read (and drop) what the client still sends, so that closing with
        unread input does not reset the connection before the client has read the answer (bounded by LINGER)."""
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        while await reader.read(65536):
            pass

    async def _answer(self, reader: asyncio.StreamReader) -> bytes:
        try:
            method, target = await asyncio.wait_for(read_head(reader), HEAD_TIMEOUT)
        except _BadRequest as e:
            return response(e.status, f"{_REASONS[e.status]}\n".encode())
        except TimeoutError:
            return response(408, b"Request Timeout\n")
        status = route(method, target)
        if status != 200:
            return response(status, f"{_REASONS[status]}: only GET {PATH} is served\n".encode())
        try:
            body = generate_latest(self.registry)
        except Exception:
            log.exception("metrics collection failed")
            return response(500, b"Internal Server Error: collection failed (see the server log)\n")
        self.scrapes += 1
        return response(200, body, CONTENT_TYPE_LATEST, head_only=method == b"HEAD")
