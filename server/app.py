"""Assembles the network server: mysql-mimic's listener with binlogd's connection class."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mysql_mimic.errors import MysqlError
from mysql_mimic.server import MysqlServer
from mysql_mimic.stream import ConnectionClosed, MysqlStream

from protocol.constants import ER_UNKNOWN_ERROR
from protocol.packets import err_packet

from .auth import BinlogdIdentityProvider
from .connection import ReplicationConnection, ReplicationSession
from .decision import Compat
from .primary import Primary
from .store import BinlogStore, DirectoryWatcher

log = logging.getLogger("binlogd")


@dataclass
class ServeConfig:
    binlog_dir: Path
    port: int
    server_id: int
    bind_address: str = "127.0.0.1"
    users_file: Path | None = None
    compat: Compat = Compat.BINLOGD
    basename: str | None = None
    gtid_domain_id: int = 0
    max_connections: int = 1000


class SafeStream:
    """mimic's stream (a compiled class, so wrapped rather than subclassed) with a safer `read`: the 4-byte
    header is read with readexactly (mimic's read(4) may return part of a header split across TCP segments)
    and a packet's size is bounded like MariaDB's max_allowed_packet (16 MiB by default), so a client cannot
    make the server buffer gigabytes."""

    max_payload = 16 << 20

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._inner = MysqlStream(reader, writer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def read(self) -> bytes:
        reader, seqs = self._inner.reader, self._inner.seq
        data = bytearray()
        while True:
            try:
                header = await reader.readexactly(4)
            except asyncio.IncompleteReadError as e:
                raise ConnectionClosed() from e
            word = int.from_bytes(header, "little")
            length, seq = word & 0xFFFFFF, word >> 24
            expected = next(seqs)
            if seq != expected:
                raise MysqlError("Got packets out of order", 1156)  # type: ignore[arg-type]
            if len(data) + length > self.max_payload:
                raise MysqlError("Got a packet bigger than 'max_allowed_packet' bytes", 1153)  # type: ignore[arg-type]
            try:
                data += await reader.readexactly(length)
            except asyncio.IncompleteReadError as e:
                raise ConnectionClosed() from e
            if length < 0xFFFFFF:
                return bytes(data)


class BinlogdServer(MysqlServer):
    """mysql-mimic's server, creating `ReplicationConnection`s bound to one `Primary`."""

    def __init__(self, primary: Primary, identity_provider: BinlogdIdentityProvider, max_connections: int) -> None:
        super().__init__(session_factory=lambda: ReplicationSession(primary), identity_provider=identity_provider)
        self.primary = primary
        self.max_connections = max_connections
        self._next_id = 0
        self.connections: dict[int, ReplicationConnection] = {}
        primary.connections = lambda: len(self.connections)

    async def _client_connected_cb(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = SafeStream(reader, writer)
        if len(self.connections) >= self.max_connections:
            await stream.write(err_packet(1040, "Too many connections"))
            writer.close()
            return
        self._next_id += 1
        cid = self._next_id
        conn = ReplicationConnection(
            stream=stream,  # type: ignore[arg-type]
            session=ReplicationSession(self.primary),
            control=self.control,
            identity_provider=self.identity_provider,
            server_capabilities=self.capabilities,
        )
        conn.primary = self.primary
        conn.connection_id = cid
        self.connections[cid] = conn
        try:
            await conn.start()
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            log.info("connection %d closed: %s", cid, e)
        except Exception:
            log.exception("connection %d failed", cid)
            with contextlib.suppress(Exception):
                await stream.write(err_packet(ER_UNKNOWN_ERROR, "Internal error"))
        finally:
            self.connections.pop(cid, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def serve(cfg: ServeConfig, ready: asyncio.Event | None = None) -> None:
    store = BinlogStore(cfg.binlog_dir, cfg.basename)
    primary = Primary(store, cfg.server_id, cfg.compat, cfg.gtid_domain_id)
    idp = BinlogdIdentityProvider.from_file(cfg.users_file) if cfg.users_file else BinlogdIdentityProvider.default()
    server = BinlogdServer(primary, idp, cfg.max_connections)
    watcher = DirectoryWatcher(store)
    await server.start_server(host=cfg.bind_address, port=cfg.port, reuse_address=True)
    watcher.start()
    files = store.files()
    log.info("binlogd %s serving %d binlog file(s) %s..%s from %s on %s:%d as server_id %d (%s policy)",
             primary.version, len(files), files[0], files[-1], cfg.binlog_dir, cfg.bind_address, cfg.port,
             cfg.server_id, cfg.compat.name.lower())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        server.close()
        for conn in list(server.connections.values()):
            conn.kill()
        await watcher.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
