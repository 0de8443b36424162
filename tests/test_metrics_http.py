"""binlogd.metrics in-process: the HTTP endpoint's time and concurrency bounds, and metrics fed through
binlogd.metrics.registry reaching an endpoint (what the other features' code uses)."""

from __future__ import annotations

import asyncio

import pytest

from binlogd.metrics import http as mhttp
from binlogd.metrics.http import MetricsServer
from binlogd.metrics.registry import counter, endpoint_registry, gauge


async def _serve() -> tuple[MetricsServer, int]:
    server = MetricsServer(endpoint_registry([]))
    socks = MetricsServer.bind("127.0.0.1", 0)
    await server.serve_sockets(socks)
    return server, socks[0].getsockname()[1]


async def _request(port: int, data: bytes, close_write: bool = True) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    if close_write:
        writer.write_eof()
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


async def test_fed_counters_reach_every_endpoint() -> None:
    c = counter("binlogd_test_fed_total", "a test counter", ["why"])
    assert counter("binlogd_test_fed", "same metric", ["why"]) is c  # get-or-create, with or without _total
    c.labels(why="ack").inc(3)
    gauge("binlogd_test_gauge", "a test gauge").set(7)
    with pytest.raises(ValueError):
        gauge("binlogd_test_fed", "a counter's name")
    server, port = await _serve()
    try:
        body = await _request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
    finally:
        server.close()
    assert body.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b'binlogd_test_fed_total{why="ack"} 3.0' in body
    assert b"binlogd_test_gauge 7.0" in body


async def test_a_silent_client_gets_408_after_the_head_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mhttp, "HEAD_TIMEOUT", 0.3)
    server, port = await _serve()
    try:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        answer = await _request(port, b"GET /metrics HTTP/1.1\r\n", close_write=False)  # no end of head
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        assert 0.25 <= loop.time() - t0 < 5
        # the next scrape is served normally
        assert (await _request(port, b"GET /metrics HTTP/1.0\n\n")).startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        server.close()


async def test_concurrent_scrapes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mhttp, "MAX_CLIENTS", 2)
    monkeypatch.setattr(mhttp, "HEAD_TIMEOUT", 2.0)
    server, port = await _serve()
    try:
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await asyncio.sleep(0.1)  # both are being served (waiting for their heads)
        third = await _request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert third.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        for _r, w in idle:
            w.close()
        await asyncio.sleep(0.1)
        assert (await _request(port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        server.close()


async def test_a_client_closing_mid_head_is_just_closed() -> None:
    server, port = await _serve()
    try:
        assert await _request(port, b"GET /metr") == b""
        assert await _request(port, b"") == b""
        assert (await _request(port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200")
    finally:
        server.close()
