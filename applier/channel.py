"""One replication channel: read a source's binlog like a 10.11 IO thread, cut it into groups, apply them in order.

The IO side is an asyncio task on `protocol.connection.ReplicationClient` (capability 4, CRC32-aware,
heartbeats, GTID `slave_pos` or file/pos, reconnect every `retry` seconds from the end of the last whole group
it queued). It decides per event, on the event loop and cheaply:

* skip mode (seed WL234/MDEV-225): events flagged 0x8000 (`LOG_EVENT_SKIP_REPLICATION_F`) are dropped in
  FILTER_ON_SLAVE, and in FILTER_ON_MASTER too when the source ignored `SET skip_replication=1` (a source
  answering 1193); in REPLICATE the group is applied with `skip_replication=1` on the target session. A group
  whose events were all dropped still moves the stored position, and does not use up `sql_slave_skip_counter`;
* ignorable events (WL#4033): a type the applier does not handle, flagged 0x80, is skipped (the position moves);
  without the flag the channel stops with "Unknown event code" once everything before it is applied.

The SQL side is a task that takes whole groups from a bounded queue (back-pressure on the source socket) and
applies them in the channel's one worker thread (`applier/apply.py`), up to GROUPS_PER_TRIP at a time (sent
together, each its own transaction or runs of row transactions as one: `TargetSession.apply_many`, applier/
grouping.py). The hot event types are read in place (applier/raw_events.py). An apply error stops the SQL side with
MariaDB's texts in `status()` while the reader reads on (Slave_IO_Running: Yes, as on a 10.11 replica; what it
reads is not kept, START SLAVE re-reads it); STOP waits for the group being applied, so nothing is ever
half-applied. The counters of SHOW ALL SLAVES STATUS are applier/counters.py's.

Names used by `applier/runner.py` and part B (`applier/admin.py`, `applier/status.py`): `Channel` with `name`,
`config`, `running`, `start()`, `stop()`, `status() -> dict` (SHOW SLAVE STATUS fields), `exec_pos`, `read_pos`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, Protocol

from binlogd.protocol.connection import (
    ClientConfig,
    ReplicationClient,
    ReplicationError,
)
from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    APPEND_BLOCK_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    CREATE_FILE_EVENT,
    DELETE_FILE_EVENT,
    EXEC_LOAD_EVENT,
    EXECUTE_LOAD_QUERY_EVENT,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    INCIDENT_EVENT,
    INTVAR_EVENT,
    LOAD_EVENT,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    NEW_LOAD_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    ROWS_EVENT_TYPES,
    START_ENCRYPTION_EVENT,
    STMT_END_F,
    STOP_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import (
    Event,
    EventDecodeError,
    Gtid,
    GtidBody,
    IncidentBody,
    QueryBody,
    RotateBody,
    fde_checksum_alg,
    parse_event,
    parse_header,
)
from binlogd.protocol.tables_info import TABLES_INFO_EVENT
from binlogd.protocol.tls_options import ssl_status_columns

from .apply import ApplyError, Group, TargetSession
from .counters import Counters, group_kind, heartbeat_period
from .native import native_fde
from .parallel import ParallelApply
from .position import Position
from .raw_events import gtid_fields, native_event

if TYPE_CHECKING:
    from .config import ApplierConfig, ChannelConfig
    from .filters import FilterSet

_SKIP_HIGH: Final = LOG_EVENT_SKIP_REPLICATION_F >> 8  # in the header's flags' high byte
_XID_LEN: Final = HEADER_LEN + 8 + CRC_LEN  # the shortest event the in-place path takes (an XID with its CRC)
log = logging.getLogger("binlogd.apply")

QUEUE_GROUPS: Final = 256  # groups read ahead of the applier (bounded: back-pressure on the source)
GROUPS_PER_TRIP: Final = 192  # queued groups handed to the worker at once (each still its own transaction;
# 192 rather than 64: fewer round trips and GIL hand-overs, measured 8 % less CPU per 1-row group, issue 20)
TABLE_MAPS_KEPT: Final = 4096  # decoded TABLE_MAP bodies kept by their bytes (the cache is emptied when full)
ER_UNKNOWN_EVENT: Final = 1594  # ER_SLAVE_RELAY_LOG_READ_FAILURE, what MariaDB's SQL thread reports
ER_SLAVE_INCIDENT: Final = 1590
ER_NOT_SUPPORTED_YET: Final = 1235
UNSUPPORTED: Final = {
    LOAD_EVENT: "LOAD DATA (pre-5.0 Load)", CREATE_FILE_EVENT: "LOAD DATA (Create_file)", NEW_LOAD_EVENT: "LOAD DATA",
    APPEND_BLOCK_EVENT: "LOAD DATA (Append_block)", EXEC_LOAD_EVENT: "LOAD DATA (Exec_load)",
    DELETE_FILE_EVENT: "LOAD DATA (Delete_file)", BEGIN_LOAD_QUERY_EVENT: "LOAD DATA (Begin_load_query)",
    EXECUTE_LOAD_QUERY_EVENT: "LOAD DATA (Execute_load_query)", XA_PREPARE_LOG_EVENT: "XA PREPARE",
    START_ENCRYPTION_EVENT: "encrypted binlogs",
}
PREAMBLE: Final = frozenset({USER_VAR_EVENT, INTVAR_EVENT, RAND_EVENT, TABLE_MAP_EVENT, TABLES_INFO_EVENT})


class ChannelHost(Protocol):
    """What a channel uses of the process that owns it (`applier.runner.Applier`). A protocol here, so that
    runner.py imports channel.py and never the other way round."""

    config: ApplierConfig
    skip_mode: str
    skip_counter: int  # sql_slave_skip_counter: shared by the channels, decremented by the one that skips

    def filters_for(self, name: str) -> FilterSet | None: ...


class Channel:
    def __init__(self, config: ChannelConfig, applier: ChannelHost) -> None:
        self.name = config.name
        self.config = config
        self.applier = applier
        t = applier.config.target
        self.session = TargetSession(t.host, t.port, t.user, t.password, config.name)
        if t.tls is not None:  # --target URL's ?ssl-ca=...&ssl-verify=1
            self.session.params.update(ssl=t.tls.context(), ssl_disabled=False)
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"apply-{config.name or 'default'}")
        sessions, executors = [self.session], [self.executor]
        for i in range(1, max(1, applier.config.parallel_apply)):  # --parallel-apply N: N target sessions
            extra = TargetSession(t.host, t.port, t.user, t.password, config.name)
            extra.params = dict(self.session.params)
            sessions.append(extra)
            executors.append(ThreadPoolExecutor(1, thread_name_prefix=f"apply-{config.name or 'default'}-{i}"))
        for s in sessions:
            s.native_rows = applier.config.row_apply == "binlog"
        self.parallel = ParallelApply(sessions, executors, applier.config.parallel_min_bytes)
        self.read_pos = Position()
        self.exec_pos = Position()
        self.io_state = ""
        self.io_running = "No"
        self.sql_running = False
        self.last_io: tuple[int, str] = (0, "")
        self.last_sql: tuple[int, str] = (0, "")
        self.master_server_id = 0
        self.last_event_ts = 0
        self.skipped_ignorable = 0
        self.skipped_flagged = 0
        self.counters = Counters()
        self._task: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._applying_ts: int | None = None  # timestamp of the group in the worker (Seconds_Behind_Master)
        self._discard = False  # the SQL side stopped: the reader keeps reading (IO thread) but queues nothing
        self._table_maps: dict[bytes, Any] = {}  # TABLE_MAP body bytes -> its decoded body (see _parse)

    # ---- control --------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Either side runs (MariaDB: a channel with its IO or its SQL thread running)."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """START SLAVE: starts what is stopped. Without a relay log a stopped SQL side restarts the whole channel
        from the executed position (the reader re-reads what it read after the stop)."""
        if self.running and self.sql_running and self._reader is not None and not self._reader.done():
            return
        await self.stop()
        self.last_io = self.last_sql = (0, "")
        self._task = asyncio.create_task(self._run(), name=f"channel-{self.name}")

    async def stop(self) -> None:
        """STOP SLAVE: ends the reader at once and the applier after the group it is applying."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise
        self._task = None

    async def reset(self) -> None:
        """RESET SLAVE: forget the position (stored and in memory); the channel must be stopped."""
        await self._thread(self.session.delete_position)
        self.read_pos = Position()
        self.exec_pos = Position()
        self.last_io = self.last_sql = (0, "")

    async def close(self) -> None:
        await self.stop()
        for s, ex in zip(self.parallel.sessions, self.parallel.executors, strict=True):
            await asyncio.get_running_loop().run_in_executor(ex, s.close)
            await asyncio.to_thread(ex.shutdown, True)  # joining the worker must not block the loop

    async def _thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    # ---- the two halves -------------------------------------------------------------------------------------

    async def _run(self) -> None:
        """The channel: the SQL side in this task, the reader (IO side) beside it. Each side stops on its own
        errors only, as a 10.11 replica's threads do: after an apply error the reader keeps reading (its
        groups are dropped: there is no relay log), after a fatal source error the SQL side waits for more."""
        self.sql_running = True
        self.io_running = "Connecting"
        self._discard = False
        self._applying_ts = None
        reader: asyncio.Task[None] | None = None
        try:
            for s in self.parallel.sessions:
                s.filters = self.applier.filters_for(self.name)
                s.replicate_flagged = self.applier.skip_mode == "REPLICATE"
            try:
                stored = await self._thread(self.session.load_position)
                await self._thread(self.session.read_binlog_gtids)
            except ApplyError as e:
                self.io_running = "No"
                self._sql_error(e)
                return
            self.exec_pos = stored or Position()
            self.read_pos = self.exec_pos.copy()
            q: asyncio.Queue[Any] = asyncio.Queue(QUEUE_GROUPS)
            self._queue = q
            reader = self._reader = asyncio.create_task(self._io_loop(q), name=f"reader-{self.name}")
            await self._sql_loop(q, first=True)
            self._discard = True
            while not q.empty():  # frees a reader blocked on the full queue
                q.get_nowait()
            await reader
        except Exception as e:  # a bug, not a replication error: keep it visible in the status and the log
            log.exception("channel %r: internal error", self.name)
            self.last_sql = (1105, f"binlogd-apply internal error: {e!r}")
        finally:
            if reader is not None and not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            self.io_running = "No"
            self.sql_running = False
            self.io_state = ""

    async def _sql_loop(self, q: asyncio.Queue[Any], first: bool = False) -> None:
        """Applies queued groups until an apply error; when the reader ends it waits, like the SQL thread.
        `first`: the first group may be a DDL applied just before a crash, before its position row (then only its
        position is stored: MariaDB's replica would apply it again and stop with 1950 in strict mode)."""
        loop = asyncio.get_running_loop()
        while True:
            item = await q.get()
            if isinstance(item, ApplyError):
                self._sql_error(item)
                return
            g: Group = item
            if first:
                g, first = self._unless_applied(g)
            if g.events and self.applier.skip_counter > 0:
                self.applier.skip_counter -= 1
                # sql_slave_skip_counter: skipped (not counted as a group), position still stored
                g = Group(end=g.end, events_read=g.events_read)
            batch = [g]
            after: ApplyError | None = None  # the reader's error queued behind the batch
            while len(batch) < GROUPS_PER_TRIP and not q.empty() and self.applier.skip_counter == 0:
                nxt = q.get_nowait()
                if isinstance(nxt, ApplyError):
                    after = nxt
                    break
                if first:
                    nxt, first = self._unless_applied(nxt)
                batch.append(nxt)
            self._applying_ts = next((b.events[-1].header.timestamp for b in batch if b.events), None)
            fut: asyncio.Future[tuple[int, ApplyError | None]] = (
                loop.run_in_executor(self.executor, self.session.apply_many, batch)
                if len(self.parallel.sessions) == 1 else asyncio.ensure_future(self.parallel.apply(batch)))
            try:
                n, error = await asyncio.shield(fut)
            except asyncio.CancelledError:
                # STOP SLAVE waits for the groups in flight: each commits whole or rolls back whole
                n, _ = await fut
                for done in batch[:n]:
                    self._applied(done)
                raise
            for done in batch[:n]:
                self._applied(done)
            if error is not None or after is not None:
                self._sql_error(error or after)  # type: ignore[arg-type]
                return

    def _unless_applied(self, g: Group) -> tuple[Group, bool]:
        """The first group with events after a start: a DDL the target's binlog already holds (applied just before
        a crash, before its position row) becomes a group that only stores its position. Returns the group to
        apply and whether the next one is still to be checked (empty groups before it only move the position)."""
        if not g.events:
            return g, True
        if self.session.already_applied_ddl(g):
            assert g.gtid is not None
            log.warning("channel %r: DDL %d-%d-%d is already in the target's binlog (applied before a crash, its "
                        "position not yet stored): storing its position, not applying it again", self.name,
                        g.gtid.domain_id, g.gtid.server_id, g.gtid.seq_no)
            return Group(end=g.end, events_read=g.events_read, kind=g.kind), False
        return g, False

    def _applied(self, g: Group) -> None:
        self._applying_ts = None
        self.exec_pos = g.end
        self.counters.applied(g)
        if g.events:
            self.last_event_ts = g.events[-1].header.timestamp

    def _sql_error(self, e: ApplyError) -> None:
        self._applying_ts = None
        self.sql_running = False  # before the error is visible: a status never shows an error with Running Yes
        self.last_sql = (e.code, e.message)
        log.error("channel %r: replication stopped at %s:%d: %s (%d)", self.name, self.exec_pos.file,
                  self.exec_pos.pos, e.message, e.code)

    async def _io_loop(self, q: asyncio.Queue[Any]) -> None:
        cfg = self.config
        src = cfg.source
        try:
            while True:
                pos = self.read_pos
                ccfg = ClientConfig(
                    src.host, src.port, cfg.server_id or self.applier.config.server_id, src.user, src.password,
                    heartbeat_s=cfg.heartbeat_s, skip_replication=self.applier.skip_mode == "FILTER_ON_MASTER",
                    gtid=pos.gtid_text() if cfg.gtid else None, tls=src.tls,
                )
                self.io_running = "Connecting"
                self.io_state = "Connecting to master"
                try:
                    client = await ReplicationClient.connect(ccfg)
                    try:
                        await client.start_dump("" if cfg.gtid else pos.file, 4 if cfg.gtid else pos.pos)
                        self.io_running = "Yes"
                        self.io_state = "Waiting for master to send event"
                        self.last_io = (0, "")
                        log.info("channel %r: replicating from %s at %s", self.name, src, pos.describe(cfg.gtid))
                        await self._consume(client, q)
                    finally:
                        await client.close()
                    raise ReplicationError(2013, "the source ended the binlog dump")
                except ReplicationError as e:
                    self.last_io = (e.code, e.io_error_text())
                    log.warning("channel %r: source error %d: %s%s", self.name, e.code, e.message,
                                "" if e.fatal else f"; reconnecting in {cfg.retry_s:g} s")
                    if e.fatal:
                        break
                self.io_state = "Waiting to reconnect after a failed read"
                await asyncio.sleep(cfg.retry_s)
        except Exception as e:  # a bug: the IO side stops with it visible, the SQL side applies what it has
            log.exception("channel %r: reader internal error", self.name)
            self.last_io = (1105, f"binlogd-apply internal error: {e!r}")
        finally:
            self.io_running = "No"
            self.io_state = ""

    async def _consume(self, client: ReplicationClient, q: asyncio.Queue[Any]) -> None:
        """Group the event stream; each whole group is queued with the position just after it. An event the
        channel cannot go past is queued as the SQL side's error; the reader then reads on without queueing."""
        alg = client.checksum_alg_before_fd  # the fake ROTATE comes before the FDE
        cur = self.read_pos.copy()
        g: Group | None = None
        mode = self.applier.skip_mode
        drop_flagged = mode in ("FILTER_ON_SLAVE", "FILTER_ON_MASTER")
        pending = 0  # events read since the last queued item (FDE, ROTATE... included): counted with the next
        fde: bytes | None = None  # the source's FDE when its row events can go to the target as BINLOG statements
        crc_len = CRC_LEN if alg == BINLOG_CHECKSUM_ALG_CRC32 else 0

        async def emit(group: Group) -> None:
            nonlocal pending
            group.end = cur.copy()
            group.events_read = pending
            pending = 0
            if not self._discard:
                await q.put(group)
            self.read_pos = group.end

        async def fail(error: ApplyError) -> None:
            if not self._discard:
                await q.put(error)
                self._discard = True

        async for raw in client.events():
            typ = raw[4]
            if typ == HEARTBEAT_LOG_EVENT:
                self.counters.received_heartbeats += 1
                continue
            pending += 1
            if typ == FORMAT_DESCRIPTION_EVENT:
                alg = fde_checksum_alg(raw)
                crc_len = CRC_LEN if alg == BINLOG_CHECKSUM_ALG_CRC32 else 0
                fde = native_fde(bytes(raw))
                self.master_server_id = int.from_bytes(raw[5:9], "little")
                continue
            if typ in (XID_EVENT, ANNOTATE_ROWS_EVENT) and len(raw) >= _XID_LEN:
                # no body needed (a third of the reader's parsing in 1-row transactions): header fields in place
                if h_pos := int.from_bytes(raw[13:17], "little"):
                    cur.pos = h_pos
                if raw[18] & _SKIP_HIGH and drop_flagged:
                    self.skipped_flagged += 1
                if typ == XID_EVENT:
                    await emit(g or Group())
                    g = None
                continue
            if typ == GTID_EVENT and (gt := gtid_fields(raw, crc_len)) is not None:
                # the hot types read in place (struct), as parse_event would decode them (issue 20: parse_event
                # and its objects were a third of the reader's time per 1-row transaction)
                server_id, log_pos, hflags, seq_no, domain_id, flags2 = gt
                if log_pos:
                    cur.pos = log_pos
                flagged = bool(hflags & LOG_EVENT_SKIP_REPLICATION_F)
                drop = flagged and drop_flagged
                if drop:
                    self.skipped_flagged += 1
                if g is not None:
                    log.warning("channel %r: group before %s:%d has no end; discarded", self.name, cur.file, cur.pos)
                gtid = Gtid(domain_id, server_id, seq_no)
                cur.gtids[domain_id] = gtid
                g = Group(gtid=gtid, transactional=not flags2 & FL_STANDALONE, flagged=flagged,
                          kind=None if drop else group_kind(flags2))
                continue
            if fde is not None and (typ == TABLE_MAP_EVENT or typ in ROWS_EVENT_TYPES) and \
                    (ev := native_event(raw, typ, crc_len, self._table_maps)) is not None:
                h = ev.header
                if h.log_pos:
                    cur.pos = h.log_pos
                flagged = bool(h.flags & LOG_EVENT_SKIP_REPLICATION_F)
                if g is None:
                    g = Group(flagged=flagged)
                if flagged and drop_flagged:
                    self.skipped_flagged += 1
                else:
                    g.events.append(ev)
                    g.raws.append(bytes(raw))
                    g.fde = fde
                    g.flagged |= flagged
                if typ != TABLE_MAP_EVENT and not g.transactional and ev.body.flags & STMT_END_F:  # type: ignore[union-attr]
                    await emit(g)
                    g = None
                continue
            try:
                ev = self._parse(raw, alg)
            except EventDecodeError as e:
                await fail(ApplyError(ER_UNKNOWN_EVENT, f"Relay log read failure: could not parse the event after "
                                                        f"{cur.file}:{cur.pos}: {e}"))
                if h_pos := int.from_bytes(raw[13:17], "little"):
                    cur.pos = h_pos
                continue
            h = ev.header
            if typ == ROTATE_EVENT:
                assert isinstance(ev.body, RotateBody)
                cur.file = ev.body.next_file.decode("utf-8", "replace")
                cur.pos = ev.body.position
                if g is None:
                    self.read_pos = cur.copy()
                continue
            if h.log_pos:
                cur.pos = h.log_pos
            flagged = bool(h.flags & LOG_EVENT_SKIP_REPLICATION_F)
            drop = flagged and drop_flagged
            if drop:
                self.skipped_flagged += 1
            if typ == GTID_EVENT:
                assert isinstance(ev.body, GtidBody)
                if g is not None:
                    log.warning("channel %r: group before %s:%d has no end; discarded", self.name, cur.file, cur.pos)
                gtid = Gtid(ev.body.domain_id, h.server_id, ev.body.seq_no)
                cur.gtids[gtid.domain_id] = gtid
                g = Group(gtid=gtid, transactional=not ev.body.flags2 & FL_STANDALONE, flagged=flagged,
                          kind=None if drop else group_kind(ev.body.flags2))
                continue
            if typ in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
                assert isinstance(ev.body, QueryBody)
                word = ev.body.query.strip().upper()
                if g is None:
                    g = Group(transactional=word == b"BEGIN", flagged=flagged)
                    if word == b"BEGIN":
                        continue
                if word == b"BEGIN":
                    continue
                if word in (b"COMMIT", b"ROLLBACK"):
                    g.rollback = word == b"ROLLBACK"
                    await emit(g)
                    g = None
                    continue
                if not drop:
                    g.events.append(ev)
                    g.raws.append(b"")
                    g.flagged |= flagged
                if not g.transactional:
                    await emit(g)
                    g = None
                continue
            if typ == XID_EVENT:
                await emit(g or Group())
                g = None
                continue
            if typ in PREAMBLE or typ in ROWS_EVENT_TYPES:
                if g is None:
                    g = Group(flagged=flagged)
                if not drop:
                    g.events.append(ev)
                    g.raws.append(bytes(raw) if fde is not None and (typ in ROWS_EVENT_TYPES
                                                                     or typ == TABLE_MAP_EVENT) else b"")
                    g.fde = fde
                    g.flagged |= flagged
                if typ in ROWS_EVENT_TYPES and not g.transactional and _stmt_end(ev):
                    await emit(g)
                    g = None
                continue
            if typ == ANNOTATE_ROWS_EVENT:
                continue
            if typ in (GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT, STOP_EVENT):
                if g is None and (cur.file, cur.pos) != (self.read_pos.file, self.read_pos.pos):
                    await emit(Group())  # position only (FILTER_ON_MASTER: binlogd's fake GTID_LIST at the end)
                continue
            if typ == INCIDENT_EVENT:
                assert isinstance(ev.body, IncidentBody)
                text = ev.body.message.decode(errors="replace")
                await fail(ApplyError(ER_SLAVE_INCIDENT, f"The incident LOST_EVENTS occurred on the master. "
                                                         f"Message: {text}"))
                continue
            if typ in UNSUPPORTED:
                await fail(ApplyError(ER_NOT_SUPPORTED_YET, f"{UNSUPPORTED[typ]} events are not supported by "
                                                            f"binlogd-apply (at {cur.file} end_log_pos {h.log_pos})"))
                continue
            if h.flags & LOG_EVENT_IGNORABLE_F:
                self.skipped_ignorable += 1
                log.info("channel %r: skipped ignorable event of unknown type %d at %s end_log_pos %d", self.name,
                         typ, cur.file, h.log_pos)
                if g is None and (cur.file, cur.pos) != (self.read_pos.file, self.read_pos.pos):
                    await emit(Group())
                continue
            await fail(ApplyError(ER_UNKNOWN_EVENT, f"Unknown event code {typ} (not ignorable) in {cur.file} at "
                                                    f"end_log_pos {h.log_pos}: the applier cannot apply it and "
                                                    f"stopped before it"))

    def _parse(self, raw: bytes, alg: int) -> Event:
        """`parse_event`, except that a TABLE_MAP whose body was seen before reuses that decoded body: every group
        of a table repeats the same TABLE_MAP body, whose decoding was the reader's largest cost per group (the
        header, which differs, is always parsed; a same-bytes body decodes to the same value)."""
        typ = raw[4]
        if typ != TABLE_MAP_EVENT:
            return parse_event(raw, alg)
        crc = alg == BINLOG_CHECKSUM_ALG_CRC32
        key = bytes(raw[HEADER_LEN:len(raw) - CRC_LEN if crc else len(raw)])
        body = self._table_maps.get(key)
        header = parse_header(raw)
        if body is None or header.event_length != len(raw):
            ev = parse_event(raw, alg)
            if len(self._table_maps) >= TABLE_MAPS_KEPT:
                self._table_maps.clear()
            self._table_maps[key] = ev.body
            return ev
        return Event(header, body, int.from_bytes(raw[-CRC_LEN:], "little") if crc else None)

    # ---- status ---------------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The MariaDB 10.11 SHOW SLAVE STATUS fields for this channel (Replicate_* from its filters)."""
        src = self.config.source
        io_errno, io_error = self.last_io
        sql_errno, sql_error = self.last_sql
        running = self.running
        io_running = self.io_running if running else "No"
        sql_running = running and self.sql_running
        behind: int | None = None
        if sql_running and io_running == "Yes":
            q = self._queue
            if self._applying_ts is not None:  # the group being applied (a long one: its age grows)
                behind = max(0, int(time.time()) - self._applying_ts)
            else:  # caught up: 0; else the age of the last applied event, as MariaDB's last_master_timestamp
                behind = max(0, int(time.time()) - self.last_event_ts) if q is not None and q.qsize() else 0
        st: dict[str, Any] = {
            "Connection_name": self.name,
            "Slave_IO_State": self.io_state if running else "",
            "Master_Host": src.host,
            "Master_User": src.user,
            "Master_Port": src.port,
            "Connect_Retry": int(self.config.retry_s),
            "Master_Log_File": self.read_pos.file,
            "Read_Master_Log_Pos": self.read_pos.pos,
            "Relay_Master_Log_File": self.exec_pos.file,
            "Slave_IO_Running": io_running,
            "Slave_SQL_Running": "Yes" if sql_running else "No",
            "Last_Errno": sql_errno,
            "Last_Error": sql_error,
            "Skip_Counter": self.applier.skip_counter,
            "Exec_Master_Log_Pos": self.exec_pos.pos,
            "Seconds_Behind_Master": behind,
            "Last_IO_Errno": io_errno,
            "Last_IO_Error": io_error,
            "Last_SQL_Errno": sql_errno,
            "Last_SQL_Error": sql_error,
            "Master_Server_Id": self.master_server_id,
            "Using_Gtid": "Slave_Pos" if self.config.gtid else "No",
            "Gtid_IO_Pos": self.read_pos.gtid_text(),
            "Gtid_Slave_Pos": self.exec_pos.gtid_text(),
            "Slave_SQL_Running_State": self.session.current or ("Slave has read all relay log; waiting for more "
                                                                "updates" if sql_running else ""),
            "Retried_transactions": sum(s.retried for s in self.parallel.sessions),
            # --parallel-apply N: transactions run side by side and commit in the source's order, a conflict
            # rolls back and is retried serially: what MariaDB calls optimistic
            "Parallel_Mode": "optimistic" if len(self.parallel.sessions) > 1 else "none",
            "Slave_heartbeat_period": heartbeat_period(self.config.heartbeat_s),
            **ssl_status_columns(src.tls),
            **self.counters.columns(),
            "Replicate_Events_Marked_For_Skip": self.applier.skip_mode,
            "Events_Skipped_Flagged": self.skipped_flagged,
            "Events_Skipped_Ignorable": self.skipped_ignorable,
            "Rows_Applied": sum(s.rows_applied for s in self.parallel.sessions),
            "Groups_Applied": sum(s.groups_applied for s in self.parallel.sessions),
        }
        fs = self.applier.filters_for(self.name)
        if fs is not None:
            st.update(fs.status_columns())
        return st




def _stmt_end(ev: Event) -> bool:
    return bool(getattr(ev.body, "flags", 0) & STMT_END_F)
