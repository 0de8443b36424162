"""The upstream connection: binlogd's IO thread, reconnecting, feeding `RelayStorage` in one writer thread.

It behaves like a MariaDB 10.11 replica's IO thread (capability 4, checksum-aware, annotate events requested,
heartbeats, file/pos from the stored end) and reports like one in SHOW SLAVE STATUS: connection failures
(refused, access denied, lost) are retried with capped exponential backoff while Slave_IO_Running says
`Connecting`; what a retry cannot fix (1236 from the upstream, a CRC mismatch, an event binlogd refuses to
store, a full disk) stops it (`No`) with Last_IO_Errno/Last_IO_Error set, until START SLAVE.

Received events go through a bounded queue (back-pressure on the upstream socket) to the writer thread in
runs (`ReplicationClient.event_runs()`: the whole events of one socket read, back to back, and where each ends): one
queue item per socket read and one thread hop per batch of runs, no object per event (a small batch that only
appends, a transaction at a time, is stored on the loop instead: `_store`). With semi-sync
(--rpl-semi-sync-slave-enabled) a run ends with each event the upstream wants acknowledged, and the ack is sent once
the writer thread stored it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from binlogd.protocol import errors
from binlogd.protocol.connection import CR_MALFORMED_PACKET, ClientConfig, ReplicationClient, ReplicationError
from binlogd.protocol.constants import BIN_LOG_HEADER_SIZE
from binlogd.protocol.dump_runs import EventRun
from binlogd.protocol.tls_options import TlsOptions
from binlogd.server.passwords import mask_url_password
from binlogd.server.semisync import SemiSyncSlave

from ..expiry import PurgeRequest
from .status import (
    ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE,
    ER_SLAVE_RELAY_LOG_WRITE_FAILURE,
    IO_CONNECTING,
    IO_RECONNECT_WAIT,
    IO_REQUESTING,
    IO_WAITING,
    RelayStatus,
)
from .storage import FilePosNeeded, RelayError, RelayStorage

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger("binlogd.relay")

# received but not yet stored: bounded (runs of at most one 1 MiB socket read, protocol.connection.DUMP_READ, or one
# large event), so a slow disk slows the upstream socket down
QUEUE_RUNS = 16
BATCH_BYTES = 4 << 20  # runs handed to the writer thread at once (one write, one commit)
# a batch up to this size that only appends (`RelayStorage.appends_only`) is stored on the event loop: a following
# relay's transactions one by one, where the thread hop (two wake-ups, GIL hand-offs, a self-pipe write for the
# publication) was most of the latency binlogd added for its replicas
INLINE_BYTES = 64 << 10
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_SLAVE_FATAL_ERROR = 1593


@dataclass
class UpstreamConfig:
    host: str
    port: int
    user: str
    password: str = field(repr=False)  # never in a log line (label, repr)
    server_id: int  # binlogd's own: it registers with it, and the upstream's must differ
    heartbeat_s: float = 30.0  # MariaDB's default: slave_net_timeout / 2
    retry_min_s: float = 0.1
    retry_max_s: float = 30.0
    connect_timeout: float = 10.0
    use_gtid: bool = False  # resume with @slave_connect_state = the stored GTID state (MASTER_USE_GTID=slave_pos)
    tls: TlsOptions | None = None  # --upstream URL's ?ssl-ca=...&ssl-verify=1 (protocol/tls_options.py)
    semi_sync: bool = False  # --rpl-semi-sync-slave-enabled: acknowledge stored groups to a semi-sync upstream

    @property
    def label(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


class UpstreamRelay:
    """The IO "thread": `start()` / `stop()` (START SLAVE / STOP SLAVE), `close()` at shutdown."""

    def __init__(self, cfg: UpstreamConfig, storage: RelayStorage, status: RelayStatus) -> None:
        self.cfg = cfg
        self.storage = storage
        self.status = status
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="relay-writer")
        self._in_thread = 0  # writer-thread jobs in flight: an inline store waits until there are none (one order)
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._filepos_once = False  # the next dump by file/pos although use_gtid (see FilePosNeeded)
        status.using_gtid = "Slave_Pos" if cfg.use_gtid else "No"
        self.semi = SemiSyncSlave(enabled=cfg.semi_sync)  # Rpl_semi_sync_slave_status / _send_ack

    # --- control ---------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> bool:
        """Start the IO loop (False when it already runs); must be called on the event loop."""
        if self.running:
            return False
        self._loop = asyncio.get_running_loop()
        self.status.clear_error()
        self._task = asyncio.create_task(self._io_loop(), name="relay-upstream")
        return True

    async def stop(self) -> bool:
        """Stop the IO loop and drop an incomplete group (False when it was not running)."""
        task, self._task = self._task, None
        was_running = task is not None and not task.done()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.status.io_running = "No"
        self.status.io_state = ""
        return was_running

    def control(self, start: bool, timeout: float = 30.0) -> bool:
        """START/STOP SLAVE from a worker thread (SQL statements run there); returns whether anything changed."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("relay not started")

        async def act() -> bool:
            return self.start() if start else await self.stop()

        return asyncio.run_coroutine_threadsafe(act(), loop).result(timeout)

    async def purge(self, req: PurgeRequest, in_use: set[str]) -> list[str]:
        """PURGE BINARY LOGS or expiry in the writer thread, between two stored batches."""
        return await self._in_writer(self.storage.purge, req, in_use)  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.stop()
        await self._in_writer(self.storage.w.close)
        self._executor.shutdown(wait=True)

    # --- the loop --------------------------------------------------------------------------------------
    async def _in_writer(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn` in the writer thread. The job counts as in flight until the thread has finished it, even when
        the caller is cancelled meanwhile (STOP SLAVE): no inline store may run beside it."""
        loop = asyncio.get_running_loop()
        job = self._executor.submit(fn, *args)
        self._in_thread += 1
        job.add_done_callback(lambda _: self._job_done(loop))
        return await asyncio.wrap_future(job)

    def _job_done(self, loop: asyncio.AbstractEventLoop) -> None:
        """(In the writer thread:) the job is finished; the count goes down on the loop."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing will store inline any more
            loop.call_soon_threadsafe(self._count_down)

    def _count_down(self) -> None:
        self._in_thread -= 1

    async def _store(self, batch: list[EventRun]) -> None:
        """Store a batch: on the loop when it only appends a little with no thread job in flight, else in the
        writer thread (file creation, rotation, fsync, big batches: blocking I/O stays off the loop)."""
        if not self._in_thread and self.storage.appends_only(batch, INLINE_BYTES):
            self.storage.feed(batch)
        else:
            await self._in_writer(self.storage.feed, batch)

    def _delay(self, attempt: int) -> float:
        if attempt < 0:
            return 0.0
        return min(self.cfg.retry_max_s, self.cfg.retry_min_s * (2 ** min(attempt, 30)))

    def _stop_with(self, code: int, message: str) -> None:
        self.status.set_error(code, message)
        self.status.io_running = "No"
        self.status.io_state = ""
        log.error("relay: upstream IO stopped (START SLAVE on binlogd resumes it)")

    async def _io_loop(self) -> None:
        st, cfg = self.status, self.cfg
        attempt = 0
        connected_once = False
        try:
            while True:
                st.io_running, st.io_state = "Connecting", IO_CONNECTING
                try:
                    client = await self._connect()
                except ReplicationError as e:
                    verb = "reconnecting" if connected_once else "connecting"
                    msg = (f"error {verb} to master '{cfg.label}' - retry-time: {self._delay(attempt):g}  "
                           f"maximum-retries: unlimited  message: {e.message}")
                    if e.fatal:
                        self._stop_with(e.code, msg)
                        return
                    st.set_error(e.code, msg, repeat_key=f"{e.code} {e.message}")
                    st.io_state = IO_RECONNECT_WAIT
                    await asyncio.sleep(self._delay(attempt))
                    attempt += 1
                    continue
                connected_once = True
                st.reconnects += 1
                try:
                    await self._dump(client)
                    attempt = 0
                except ReplicationError as e:
                    if e.code == ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE:
                        self._stop_with(e.code, e.io_error_text())
                        return
                    if e.fatal and e.code == CR_MALFORMED_PACKET and st.io_running == "Yes":
                        # an event the client refused (its length, a bad FDE): MariaDB's IO thread fails to queue it
                        self._stop_with(ER_SLAVE_RELAY_LOG_WRITE_FAILURE, "Relay log write failure: could not "
                                        f"queue event from master ({e.message})")
                        return
                    if e.code == ER_MASTER_FATAL_ERROR_READING_BINLOG and e.message == errors.BINLOG_NOT_OPEN:
                        # the upstream has no binlog yet: a binlogd tier that has stored nothing (started together
                        # with this one, or its own upstream is down). MariaDB's IO thread stops here; a tier retries
                        # (with its backoff: Connecting makes the attempt count below grow)
                        st.io_running, st.io_state = "Connecting", IO_RECONNECT_WAIT
                        st.set_error(e.code, e.io_error_text(), repeat_key=f"{e.code} {e.message}")
                    elif e.fatal:
                        self._stop_with(e.code, e.io_error_text())
                        return
                    log.warning("relay: reading from %s failed (%s), reconnecting at %s:%d", cfg.label, e,
                                *self.storage.resume_point())
                    attempt = 0 if st.io_running == "Yes" else attempt + 1
                except FilePosNeeded as e:
                    log.info("relay: %s; resuming by file/pos this time", e.message)
                    self._filepos_once = True
                    attempt = -1  # reconnect at once
                except RelayError as e:
                    self._stop_with(e.code, e.message)
                    return
                except OSError as e:
                    self._stop_with(ER_SLAVE_RELAY_LOG_WRITE_FAILURE,
                                    f"Relay log write failure: could not queue event from master ({e})")
                    return
                finally:
                    await client.close()
                    await self._in_writer(self.storage.abort)
                st.io_running, st.io_state = "Connecting", IO_RECONNECT_WAIT
                await asyncio.sleep(self._delay(attempt))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._in_writer(self.storage.abort))
            raise

    async def _connect(self) -> ReplicationClient:
        cfg = self.cfg
        log.info("relay: connecting to %s", cfg.label)
        gtid = None
        if cfg.use_gtid and not self._filepos_once and self.storage.file is not None:
            gtid = await self._in_writer(self.storage.gtid_pos)  # a fresh datadir starts by file/pos at file 1
        self._filepos_once = False
        client = await ReplicationClient.connect(ClientConfig(
            host=cfg.host, port=cfg.port, server_id=cfg.server_id, user=cfg.user, password=cfg.password,
            heartbeat_s=cfg.heartbeat_s, connect_timeout=cfg.connect_timeout, gtid=gtid, tls=cfg.tls,
            semi_sync=cfg.semi_sync))
        try:
            rows = await client.query("SELECT @@GLOBAL.server_id")
            upstream_id = int(rows[0][0] or 0) if rows else 0
        except BaseException:
            await client.close()
            raise
        if upstream_id == cfg.server_id:
            await client.close()
            raise ReplicationError(ER_SLAVE_FATAL_ERROR, "Fatal error: The slave I/O thread stops because master "
                                   "and slave have equal MariaDB server ids; these ids must be different for "
                                   "replication to work (or the --replicate-same-server-id option must be used on "
                                   "slave but this does not always make sense; please check the manual before "
                                   "using it).", fatal=True)
        self.status.master_server_id = upstream_id
        return client

    async def _dump(self, client: ReplicationClient) -> None:
        st = self.status
        file, pos = await self._in_writer(self.storage.resume_point)
        gtid = client.cfg.gtid
        st.io_state = IO_REQUESTING
        if gtid is not None:
            log.info("relay: requesting binlog dump from %s at GTID %s (stored end %s:%d)", self.cfg.label, gtid,
                     file, pos)
            await client.start_dump("", BIN_LOG_HEADER_SIZE)
        else:
            log.info("relay: requesting binlog dump from %s at %s:%d", self.cfg.label, file or "<first file>", pos)
            await client.start_dump(file, pos)
        await self._in_writer(self.storage.begin, client.checksum_alg_before_fd, gtid is not None)
        self.semi.status = client.semi_sync
        if self.cfg.semi_sync and not client.semi_sync:
            log.warning("relay: %s does not support semi-sync (no rpl_semi_sync_master_enabled), fallback to "
                        "asynchronous replication", self.cfg.label)
        st.clear_error()
        st.io_running, st.io_state = "Yes", IO_WAITING
        queue: asyncio.Queue[_Item] = asyncio.Queue(QUEUE_RUNS)
        pump = asyncio.create_task(self._pump(client, queue), name="relay-pump")
        try:
            while True:
                item = await queue.get()
                batch: list[EventRun] = []
                size = 0
                end: BaseException | bool | None = False
                ack = False
                while True:
                    if isinstance(item, _AckAsked):  # the run before it ends with an event to acknowledge
                        ack = True
                        break
                    if item is None or isinstance(item, BaseException):
                        end = item
                        break
                    batch.append(item)
                    size += len(item.data)
                    if size >= BATCH_BYTES or queue.empty():
                        break
                    item = queue.get_nowait()
                if batch:
                    await self._store(batch)
                if ack:  # stored, committed and (--sync-binlog=1) fsynced: only now may the upstream hear of it
                    self._ack(client)
                if end is None:
                    raise ReplicationError(2013, "the upstream ended the dump")
                if isinstance(end, BaseException):
                    raise end
        finally:
            self.semi.status = False  # until the next dump agrees again (MariaDB: slave_stop)
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump

    def _ack(self, client: ReplicationClient) -> None:
        """Acknowledge the stored end (slave_reply: the position after the event that asked, now committed)."""
        file, pos = self.storage.file, self.storage.w.committed
        if file is None:
            return
        client.send_ack(file, pos)
        self.semi.send_ack += 1

    @staticmethod
    async def _pump(client: ReplicationClient, queue: asyncio.Queue[_Item]) -> None:
        try:
            async for run, ack in client.event_runs():
                await queue.put(run)
                if ack:
                    await queue.put(ACK_ASKED)
        except ReplicationError as e:
            await queue.put(e)
            return
        await queue.put(None)


class _AckAsked:
    """Queue marker: the run before it ends with an event the semi-sync upstream wants acknowledged."""


ACK_ASKED = _AckAsked()


@dataclass(frozen=True)
class UpstreamURL:
    """A parsed --upstream URL; `password` is None when the URL has none (`USER@HOST`, not `USER:@HOST`)."""

    user: str
    password: str | None = field(repr=False)
    host: str
    port: int


def parse_upstream_url(url: str) -> UpstreamURL:
    """mysql://USER[:PASSWORD]@HOST[:PORT] -> UpstreamURL; ValueError with the reason (never the password).

    USER and PASSWORD are URL-decoded (write `%40` for an `@` in a password); the port defaults to 3306.
    """
    shown = mask_url_password(url)
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise ValueError(f"{shown!r} is not a mysql://USER@HOST:PORT URL")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{shown!r}: nothing may follow HOST:PORT")
    try:
        port = parts.port or 3306
    except ValueError as e:
        raise ValueError(f"{shown!r}: bad port ({e})") from None
    if not parts.hostname:
        raise ValueError(f"{shown!r}: no host")
    password = None if parts.password is None else unquote(parts.password)
    return UpstreamURL(unquote(parts.username or "root"), password, parts.hostname, port)


_Item = EventRun | _AckAsked | BaseException | None  # what the pump queues for the storing loop
