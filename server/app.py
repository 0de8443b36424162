"""Assembles the network server: mysql-mimic's listener with binlogd's connection class."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from ssl import SSLContext
from typing import TYPE_CHECKING, Any

from binlogd.protocol.constants import ER_CON_COUNT_ERROR, ER_UNKNOWN_ERROR
from binlogd.protocol.decision import Compat
from binlogd.protocol.packets import early_err_packet, err_packet
from binlogd.protocol.sqlserver import SafeStream, extra_info
from mysql_mimic.server import MysqlServer

from .auth import BinlogdIdentityProvider, UsersFileError
from .binlog.store import BinlogStore, DirectoryWatcher
from .connection import ReplicationConnection, ReplicationSession
from .expiry import start_expiry
from .faults import FaultFile
from .ledger import DEFAULT_MAX_SIZE, Ledger
from .metrics import metrics_state, start_metrics
from .primary import VERSION, Primary
from .processlist import ProcessList
from .relay.upstream import UpstreamConfig, UpstreamRelay
from .replica_filters import Assignments
from .semisync import SemiSyncMaster
from .startup import DirLock, check_writable_dir, is_within, listen
from .tls import TlsFiles, server_context

if TYPE_CHECKING:
    from .standalone.source import StandaloneSource

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
    max_connections: int = 151  # MariaDB's name and default (--max-connections)
    fast_path: bool = True  # --command-path fast: standalone writers' commands through server/fast_commands.py
    ledger_dir: Path | None = None  # the audit ledger (docs/ledger.md); None: off
    ledger_max_size: int = DEFAULT_MAX_SIZE
    upstream: UpstreamConfig | None = None  # relay mode: binlog_dir is the datadir the relay writes
    sync_binlog: int = 0
    standalone: bool = False  # standalone mode: binlog_dir is the datadir binlogd writes client statements into
    max_binlog_size: int = 1 << 30  # standalone: rotate once a file reaches this size
    tables_info: bool = False  # standalone: --binlog-with-tables-info (docs/tables-info.md)
    faults_file: Path | None = None  # --faults (testing tool, server/faults.py)
    binlog_row_metadata: str = "NO_LOG"  # @@binlog_row_metadata reported (directory and relay modes)
    tls: TlsFiles | None = None  # --ssl-cert/--ssl-key/--ssl-ca: CLIENT_SSL offered (server/tls.py)
    require_secure_transport: bool = False  # clear-text logins refused with 1045, as MariaDB does
    metrics_port: int | None = None  # --metrics-port: Prometheus text on http://ADDR:PORT/metrics (server/metrics.py)
    metrics_address: str = "127.0.0.1"
    # semi-sync (server/semisync.py): standalone commits wait for a replica's ack, up to the timeout (ms)
    rpl_semi_sync_master_enabled: bool = False
    rpl_semi_sync_master_timeout: int = 10000
    binlog_expire_logs_seconds: int = 0  # standalone, relay: expiry (server/expiry.py); 0 = never
    ledger_retention_seconds: int = 0  # ledger files older than this removed (server/ledger_retention.py); 0 = never
    replica_filters: dict[int, Assignments] = field(default_factory=dict)  # --replica-filter, by server_id


class BinlogdServer(MysqlServer):
    """mysql-mimic's server, creating `ReplicationConnection`s bound to one `Primary`."""

    def __init__(self, primary: Primary, identity_provider: BinlogdIdentityProvider, max_connections: int,
                 faults: FaultFile | None = None, ssl: SSLContext | None = None,
                 require_secure_transport: bool = False, fast_path: bool = True) -> None:
        super().__init__(session_factory=lambda: ReplicationSession(primary), identity_provider=identity_provider,
                         ssl=ssl)
        self.require_secure_transport = require_secure_transport
        self.fast_path = fast_path  # ServeConfig.fast_path (--command-path)
        self.primary = primary
        self.faults = faults
        self.max_connections = max_connections
        self._next_id = 0
        self.connections: dict[int, ReplicationConnection] = {}
        self._servers: list[asyncio.Server] = []
        primary.connections = lambda: len(self.connections)
        primary.processes = ProcessList(self.connections)  # type: ignore[arg-type]

    @property
    def connections_total(self) -> int:
        """Connections accepted since start (MariaDB `Connections`)."""
        return self._next_id

    async def serve_sockets(self, socks: list[socket.socket]) -> None:
        """Accept on sockets `startup.listen` bound and listened on before anything was written."""
        for s in socks:
            self._servers.append(await asyncio.start_server(self._client_connected_cb, sock=s))

    def close(self) -> None:
        for s in self._servers:
            s.close()

    async def wait_closed(self) -> None:
        for s in self._servers:
            await s.wait_closed()

    async def _client_connected_cb(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = extra_info(writer, "socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = SafeStream(reader, writer)
        if len(self.connections) > self.max_connections:  # MariaDB: before the greeting, no SQLSTATE
            await stream.write(early_err_packet(ER_CON_COUNT_ERROR, "Too many connections"))
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
            ssl=self.ssl,
        )
        conn.require_secure_transport = self.require_secure_transport
        conn.fast_path = self.fast_path
        conn.primary = self.primary
        conn.faults = self.faults
        conn.connection_id = cid
        conn.proc_since = time.monotonic()  # SHOW PROCESSLIST's Time while it logs in
        conn.over_limit = len(self.connections) >= self.max_connections  # MariaDB's one extra, for an admin
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
    """Run binlogd until SIGTERM/SIGINT.

    Start-up is ordered so that a refused start writes nothing (server/startup.py): first every check that
    needs no write (users file, directories, a --binlog-dir's files), then the port, then the lock of each
    directory binlogd writes, and only then the binlog (recovery, a new file) and the ledger.
    A refusal is a `StartupError` (or the users file's / the store's own error) with a one-line message.
    """
    idp, dir_store, tls = await asyncio.to_thread(_preflight, cfg)
    socks = listen(cfg.bind_address, cfg.port)
    metrics_socks: list[socket.socket] = []
    locks: list[DirLock] = []
    try:
        if cfg.metrics_port is not None:
            metrics_socks = listen(cfg.metrics_address, cfg.metrics_port, "--metrics-port")
        locks = await asyncio.to_thread(_lock_dirs, cfg)
        await _serve(cfg, idp, dir_store, socks, ready, tls, metrics_socks)
    finally:
        for s in socks + metrics_socks:
            s.close()
        for lock in locks:
            lock.release()


async def reload_users(idp: BinlogdIdentityProvider, path: Path) -> None:
    """SIGHUP: read the users file again (in a thread); new logins use it, logged-in connections are kept. A file
    that does not parse keeps the accounts in use, and the log says why."""
    try:
        users = await asyncio.to_thread(BinlogdIdentityProvider.read_file, path)
    except UsersFileError as e:
        log.error("SIGHUP: users file not reloaded, the previous accounts stay in use: %s", e)
        return
    idp.replace(users)
    log.info("SIGHUP: users file %s reloaded: %d account(s)", path, len(users))


def _writes_datadir(cfg: ServeConfig) -> bool:
    return cfg.standalone or cfg.upstream is not None


def _preflight(cfg: ServeConfig) -> tuple[BinlogdIdentityProvider, BinlogStore | None, SSLContext | None]:
    """Everything that can be checked without writing: the users, the TLS files, the directories to write, and
    in directory mode the store itself (it only reads)."""
    idp = BinlogdIdentityProvider.from_file(cfg.users_file) if cfg.users_file else BinlogdIdentityProvider.default()
    tls = server_context(cfg.tls) if cfg.tls is not None else None
    if _writes_datadir(cfg):
        check_writable_dir(cfg.binlog_dir, "datadir")
    if cfg.ledger_dir is not None:
        check_writable_dir(cfg.ledger_dir, "ledger directory")
    store = None if _writes_datadir(cfg) else BinlogStore(cfg.binlog_dir, cfg.basename)
    return idp, store, tls


def _lock_dirs(cfg: ServeConfig) -> list[DirLock]:
    """Lock the datadir (standalone, relay) and a ledger directory outside it: one binlogd writes each."""
    locks: list[DirLock] = []
    try:
        if _writes_datadir(cfg):
            locks.append(DirLock.acquire(cfg.binlog_dir, "datadir"))
        if cfg.ledger_dir is not None and not (_writes_datadir(cfg) and is_within(cfg.ledger_dir, cfg.binlog_dir)):
            locks.append(DirLock.acquire(cfg.ledger_dir, "ledger directory"))
    except BaseException:
        for lock in locks:
            lock.release()
        raise
    return locks


def _tables_info_args(on: bool) -> dict[str, Any]:
    """--binlog-with-tables-info: the logger's hook and the FDE table declaring the event type."""
    if not on:
        return {}
    from binlogd.protocol.tables_info import declare_post_header_lengths, tables_info_hook

    return {"tables_info": tables_info_hook, "post_header_lengths": declare_post_header_lengths()}


async def _serve(cfg: ServeConfig, idp: BinlogdIdentityProvider, dir_store: BinlogStore | None,
                 socks: list[socket.socket], ready: asyncio.Event | None, tls: SSLContext | None,
                 metrics_socks: list[socket.socket] | None = None) -> None:
    """Open the binlog source (the first write: recovery, a new file), then the ledger, then serve."""
    relay: UpstreamRelay | None = None
    standalone: StandaloneSource | None = None
    ledger: Ledger | None = None
    try:
        if cfg.upstream is not None:
            from .relay.service import open_relay

            relay = await open_relay(cfg.upstream, cfg.binlog_dir, cfg.basename or "mysql-bin", cfg.sync_binlog)
            store = relay.storage.w.store
        elif cfg.standalone:
            from .standalone.source import StandaloneConfig, StandaloneSource

            standalone = StandaloneSource(StandaloneConfig(
                datadir=cfg.binlog_dir, server_id=cfg.server_id, server_version=VERSION,
                basename=cfg.basename or "mysql-bin", gtid_domain_id=cfg.gtid_domain_id,
                max_binlog_size=cfg.max_binlog_size, sync_binlog=cfg.sync_binlog),
                **_tables_info_args(cfg.tables_info))
            store = await standalone.open()
        else:
            assert dir_store is not None
            store = dir_store
        if cfg.ledger_dir is not None:
            ledger = await asyncio.to_thread(Ledger.open, cfg.ledger_dir, cfg.ledger_max_size)
        await _run(cfg, store, relay, standalone, ledger, idp, socks, ready, tls, metrics_socks or [])
    finally:
        if relay is not None:
            await relay.close()
        if standalone is not None:
            await standalone.close()
        if ledger is not None:
            await asyncio.to_thread(ledger.close)  # after the dumps' close records


async def _run(cfg: ServeConfig, store: BinlogStore, relay: UpstreamRelay | None, standalone: StandaloneSource | None,
               ledger: Ledger | None, idp: BinlogdIdentityProvider, socks: list[socket.socket],
               ready: asyncio.Event | None, tls: SSLContext | None, metrics_socks: list[socket.socket]) -> None:
    primary = Primary(store, cfg.server_id, cfg.compat, cfg.gtid_domain_id)
    primary.replica_filters = cfg.replica_filters
    primary.max_connections = cfg.max_connections  # @@max_connections
    if standalone is not None:
        primary.standalone, standalone.server = standalone, primary
        primary.max_binlog_size = cfg.max_binlog_size  # @@max_binlog_size
        primary.binlog_format = "STATEMENT"
    else:
        primary.binlog_row_metadata = cfg.binlog_row_metadata
    if ledger is not None:
        ledger.start()
        primary.ledger = ledger
    if relay is not None:
        primary.slave_status, primary.slave_control = relay.status.row, relay.control
        primary.semi_sync_slave = relay.semi
    primary.semi_sync = SemiSyncMaster(cfg.rpl_semi_sync_master_enabled, cfg.rpl_semi_sync_master_timeout)
    if standalone is not None and cfg.rpl_semi_sync_master_enabled:
        standalone.enable_semi_sync(primary.semi_sync)
    faults = FaultFile(cfg.faults_file) if cfg.faults_file is not None else None
    if faults is not None:
        log.warning("fault injection on (--faults %s): a testing tool, dump streams may be broken on purpose",
                    cfg.faults_file)
    expirer = start_expiry(primary, relay, standalone, ledger, cfg.binlog_expire_logs_seconds,
                           cfg.ledger_retention_seconds)
    server = BinlogdServer(primary, idp, cfg.max_connections, faults, tls, cfg.require_secure_transport,
                           cfg.fast_path)
    watcher = DirectoryWatcher(store)
    await server.serve_sockets(socks)
    metrics = await start_metrics(metrics_socks, metrics_state(primary, server, ledger, relay, standalone)) \
        if metrics_socks else None
    if relay is None and standalone is None:
        watcher.start()  # binlogd's own writer wakes dumps itself
    files = store.files()
    port = socks[0].getsockname()[1] if socks else cfg.port
    log.info("binlogd %s serving %d binlog file(s) %s..%s from %s on %s:%d as server_id %d (%s policy)%s",
             primary.version, len(files), files[0] if files else "-", files[-1] if files else "-", cfg.binlog_dir,
             cfg.bind_address, port, cfg.server_id, cfg.compat.name.lower(),
             f", relaying {cfg.upstream.label}" if cfg.upstream else "")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    log.info("event loop: %s", type(loop).__module__.split(".")[0])  # uvloop or asyncio (--event-loop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Task[None]] = set()
    if cfg.users_file is not None:
        users_file = cfg.users_file

        def on_sighup() -> None:
            task = loop.create_task(reload_users(idp, users_file))
            reloads.add(task)
            task.add_done_callback(reloads.discard)

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGHUP, on_sighup)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        server.close()
        if metrics is not None:
            metrics.close()
        for conn in list(server.connections.values()):
            conn.shut_down()
        await watcher.stop()
        if expirer is not None:
            await expirer.stop()
        if relay is not None:
            await relay.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
        if ledger is not None:
            await ledger.wait_connections_closed(5)  # the killed dumps' close records
