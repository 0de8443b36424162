"""One replica's COM_BINLOG_DUMP stream (MariaDB `mysql_binlog_send`, dump-protocol.md sections 4-7).

Per file: fake ROTATE, the FDE (fixed up), then every stored event through the decision table;
at the end of the active file: EOF for non-blocking dumps, else wait for the store to grow, with
heartbeats when idle. The event loop works on memoryviews of large file chunks and writes framed
packets into one output buffer, so a plain SEND costs one header peek, one table lookup and one copy.

Memory per dump is bounded (issue 12): file bytes come from the store's shared blocks (read once for all
dumps), framed blocks from its shared frame cache, and output goes to the socket in slices of WRITE_SLICE with
back-pressure, so a slow reader holds at most about one framed block and the transport's buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from binlogd.protocol import errors
from binlogd.protocol.binlog_file import BinlogFormatError, check_event_length, fde_checksum_alg
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_DUMP_NON_BLOCK,
    CAP_GTID,
    CRC_LEN,
    ER_MASTER_FATAL_ERROR_READING_BINLOG,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    GTID_LIST_FLAG_UNTIL_REACHED,
    HEADER_LEN,
    MAX_EVENT_SIZE,
    MAX_PACKET_PAYLOAD,
    START_ENCRYPTION_EVENT,
)
from binlogd.protocol.decision import WHY_CAPABILITY, Action, Compat, DecisionTable, ReplicaPolicy, explain
from binlogd.protocol.gtid import Gtid, GtidError, parse_gtid_list, peek_gtid, peek_gtid_list
from binlogd.protocol.io_cache import last_byte_read
from binlogd.protocol.packets import eof_packet, err_packet, frame
from binlogd.protocol.repl_filters import FilterSet, FilterType
from binlogd.protocol.rewrite import (
    RewriteError,
    begin_event,
    dummy_event,
    fake_gtid_list,
    fake_rotate,
    fix_fde,
    heartbeat,
)
from binlogd.protocol.semisync import event_prefix
from binlogd.protocol.table_filter import TableFilterStream, rename_db

from .fault_writer import FaultStop, FaultWriter
from .faults import MAX_ERROR_TEXT
from .gtid_start import (
    GtidSkipper,
    GtidStartError,
    check_start_position,
    drop_reached_until,
    file_acceptable,
)
from .ledger import NULL, EvRecord, Ledger, jstr
from .semisync import SemiSyncMaster
from .store import BLOCK, BinlogStore, FramedChunk, StoreError
from .transcode import TranscodeRefused, TranscodingWriter, kind, map_start, target_algorithm

log = logging.getLogger("binlogd.dump")

WRITE_SLICE = 32 << 10  # most handed to the transport at once (it copies what the socket does not take)
_LEN = struct.Struct("<9xI")  # event_length in an event header
_PEEK = struct.Struct("<4xB4xI4xH")  # type, event_length, flags
_PKT = struct.Struct("<IB")  # packet header + the 0x00 OK byte of an event packet
_SEND, _HOLE, _PEEK_GTID = int(Action.SEND), int(Action.HOLE), int(Action.PEEK_GTID)
_PEEK_TABLES, _RENAME = int(Action.PEEK_TABLES), int(Action.RENAME)
_BIG = MAX_PACKET_PAYLOAD - 1  # an event this long needs several MySQL packets (general path)
_ACTION_NAME = {int(Action.SEND): "sent", int(Action.HOLE): "hole", int(Action.DUMMY): "dummy",
                int(Action.BEGIN): "begin", _RENAME: "renamed"}
GTID_POST_HEADER_LEN = 19  # a GTID event's post-header (MariaDB's Gtid_log_event::POST_HEADER_LENGTH)
_NOT_IN_GROUPS = frozenset({3, 4, 15, 161, 163})  # STOP, ROTATE, FDE, BINLOG_CHECKPOINT, GTID_LIST: no `gtid`
_GTID_IDS = struct.Struct("<5xI10xQI")  # server_id, seq_no, domain_id of a GTID event (header + body start)


_RUNS = frozenset({"sent", "hole", "dummy", "begin"})  # record actions that coalesce into runs
ACKS_ASKED = 4096  # semi-sync: ack requests remembered per dump (an ack for an older one is ignored)


def _continues(a: EvRecord, b: EvRecord) -> bool:
    """`b` extends the run `a`: same file, action and why, starting where `a` ends (never an FDE at 4)."""
    return a[0] == b[0] and a[2] == b[1] and a[5] == b[5] and a[6] == b[6] and b[1] != BIN_LOG_HEADER_SIZE


def _join(a: EvRecord, b: EvRecord) -> EvRecord:
    """One record for the runs `a` then `b` (several events: no type, flags or gtid, as docs/ledger.md says)."""
    return (a[0], a[1], b[2], a[3] + b[3], a[4] + b[4], a[5], a[6], NULL, NULL, NULL, a[10] + b[10], a[11] + b[11])


class Writer(Protocol):
    def write(self, data: bytes | bytearray | memoryview) -> None: ...
    async def drain(self) -> None: ...


@dataclass
class DumpParams:
    """Everything the dump needs from the command and the session's user variables."""

    file: str
    pos: int
    flags: int
    replica_server_id: int
    capability: int
    skip_replication: bool
    checksum_aware: bool  # @master_binlog_checksum exists in the session
    first_rotate_crc: bool  # @master_binlog_checksum said CRC32
    heartbeat_ns: int = 0
    connect_state: str | None = None  # @slave_connect_state (GTID mode when not None)
    until_state: str | None = None  # @slave_until_gtid: START SLAVE UNTIL master_gtid_pos (GTID mode only)
    gtid_strict: bool = False
    gtid_ignore_duplicates: bool = False
    compat: Compat = Compat.BINLOGD
    send_tables_info: bool = False  # @binlogd_send_tables_info: this client wants binlogd's Tables_info events
    semi_sync: bool = False  # @rpl_semi_sync_slave: every event packet gets the semi-sync header
    add_checksums: object = None  # @binlogd_add_checksums as set (server/transcode.py checks it)
    table_filters: FilterSet | None = None  # replicate-* rules of this replica (server/replica_filters.py)
    filters_from: str | None = None  # where they come from: "server_id", "user" or "session"

    @property
    def non_blocking(self) -> bool:
        return bool(self.flags & BINLOG_DUMP_NON_BLOCK) or self.replica_server_id == 0


class DumpError(Exception):
    """Ends the dump with an ERR packet. `suffix` adds MariaDB's "; the first event ..." coordinates."""

    def __init__(self, message: str, code: int = ER_MASTER_FATAL_ERROR_READING_BINLOG, suffix: bool = True):
        super().__init__(message)
        self.code = code
        self.message = message
        self.suffix = suffix


@dataclass
class DumpStats:
    events_read: int = 0
    events_sent: int = 0
    bytes_sent: int = 0
    holes: int = 0
    dummies: int = 0
    begins: int = 0
    fakes: int = 0
    heartbeats: int = 0
    end_reason: str = ""
    close_reason: str = ""  # the ledger's close reason: eof, client_gone, killed, error, shutdown
    started_at: float = field(default_factory=time.monotonic)
    last_event_at: float | None = None  # monotonic time of the last write other than a heartbeat (metrics)


class DumpStream:
    """Serves one COM_BINLOG_DUMP; `run()` returns when the dump ends (EOF, error, kill, peer gone)."""

    def __init__(self, store: BinlogStore, writer: Writer, server_id: int, params: DumpParams, seq: int = 1,
                 conn_label: str = "", ledger: Ledger | None = None, ledger_info: dict[str, object] | None = None,
                 fault: FaultWriter | None = None, semi: SemiSyncMaster | None = None) -> None:
        self.store = store
        # a semi-sync replica's dump (params.semi_sync): headers on every event, ack requests asked of `semi`;
        # its packets go through the general path (never the shared frame cache: they differ from other dumps')
        self.semi = semi if params.semi_sync else None
        self.asked: deque[tuple[str, int]] = deque(maxlen=ACKS_ASKED)  # ack requests sent, oldest first
        self.writer: Writer = writer
        self.fault = fault  # --faults (testing): this connection's stream goes through the fault's writer
        if fault is not None:
            self.writer = fault
            fault.record = self._fault_record
        self.server_id = server_id
        self.p = params
        self.seq = seq
        self.label = conn_label
        self.policy = ReplicaPolicy(params.capability, params.skip_replication,
                                    bool(params.flags & 2), params.compat, params.send_tables_info,
                                    params.table_filters is not None)
        self.tfilter = TableFilterStream(params.table_filters) if params.table_filters is not None else None
        self._twhy: str | None = None  # the JSON `why` of the table filter's decision on the current event
        self._new_db = b""  # the database a RENAME action writes
        self._renamed_bytes = 0  # bytes sent minus bytes stored, of the open run of renamed events (its sent_length)
        self.table = DecisionTable(self.policy)
        self.stats = DumpStats()
        self.out = bytearray()
        # coordinates for MariaDB's error suffix and for heartbeats
        self.start_file = params.file
        self.start_pos = params.pos
        self.file = params.file
        self.pos = params.pos  # end of the last event read in `file`
        self.last_event_pos = params.pos
        self.last_byte = params.pos
        self._file_start = params.pos  # where this dump started reading the current file (4 after the first)
        self.alg = 0
        self.sent_upto = 0  # end of the last event the replica got (for the trailing-hole fix)
        self.skipper: GtidSkipper | None = None
        self._need = 0  # length of an event that did not fit in the last chunk read
        self._done = False  # a non-blocking dump reached the end
        self._kill: tuple[int, str] | None = None
        self._task: asyncio.Task[None] | None = None
        self.cancel_reason = "shutdown"  # what a cancellation means (the connection sets client_gone)
        # the sequence id the wire stands at between whole packets; None while a write may have sent part of one
        # (after a bug's exception the replica gets an ERR only where it cannot land inside a packet)
        self._boundary_seq: int | None = seq
        # audit ledger (docs/ledger.md): records of what was framed, handed over when the bytes are written
        self.ledger = ledger
        self.ledger_info = ledger_info or {}
        self.ledger_conn = 0  # numbered when the dump runs (a dump that never runs leaves no trace)
        self._recs: list[EvRecord] = []
        self._tail: EvRecord | None = None  # the last run record handed over is held back (see _hand_over)
        self._conn_logged = False
        self._acc = (jstr(params.file), params.pos)  # end of the last non-fake record handed over (file as JSON)
        self._fj = NULL  # the current file's name as JSON text (records carry it so)
        # the table's `why` as JSON text, by its `reasons` index (type | 0x100 flagged | 0x200 standalone GTID)
        self._whys: list[str] = [jstr(w) for w in self.table.reasons]
        # same index: the action is a type rule's (why "capability"), so the event stays inside the run of sends
        self._pol = [w == WHY_CAPABILITY for w in self.table.reasons]
        self._skip_hole = False  # the last _gtid_start_decide HOLE was a group the replica has
        # the ledger's `gtid` of withheld events: the GTID of the last GTID event not sent as stored, valid while
        # no event has been sent since when this replica may get GTID events as stored (capability 4)
        self._gtid: str | None = None  # as JSON text
        self._chain = False  # the last event processed was not sent as stored
        t = self.table
        self.tc: TranscodingWriter | None = None  # checksum transcoding (server/transcode.py), set by _serve
        self._tc_start = (params.pos, 0, params.pos)  # first file: file position, events before it, stream position
        self._gtid_sent = Action.SEND in (t.lookup(GTID_EVENT, 0, False), t.lookup(GTID_EVENT, 0, True),
                                          t.lookup(GTID_EVENT, 0x8000, False), t.lookup(GTID_EVENT, 0x8000, True))

    # --- control -----------------------------------------------------------------------------------------
    def kill(self, code: int, message: str) -> None:
        """End the dump from outside (a newer dump with the same server_id): the replica gets ERR `code`."""
        self._kill = (code, message)
        if self._task is not None:
            self._task.cancel()

    async def run(self) -> None:
        self._task = asyncio.current_task()
        if self.ledger is not None:
            self.ledger_conn = self.ledger.new_conn()
        st = self.stats
        err: tuple[int, str] | None = None
        try:
            await self._serve()
            st.end_reason = st.close_reason = "eof"
            self._put_packet(eof_packet())
            await self._flush()
        except DumpError as e:
            st.end_reason = f"error {e.code}: {e.message}"
            st.close_reason = "error"
            err = (e.code, self._error_text(e))
            log.warning("%s dump ended with error %d: %s", self.label, e.code, err[1])
            await self._send_error(e)
        except FaultStop as e:  # --faults: the stream was cut as the fault says (the fault's records tell where)
            st.end_reason = f"fault: {e}"
            st.close_reason = "fault"
            st.bytes_sent = e.written
            err = e.err
        except asyncio.CancelledError:
            if self._kill is None:
                st.close_reason = self.cancel_reason
                raise
            code, msg = self._kill
            st.end_reason = f"killed: {msg}"
            st.close_reason = "killed"
            err = (code, msg)
            log.info("%s dump killed: %s", self.label, msg)
            self.out = bytearray()
            self._recs = []  # not sent
            await self._send_error(DumpError(msg, code))
        except (ConnectionError, OSError) as e:
            st.end_reason = f"connection lost: {e}"
            st.close_reason = "client_gone"
            log.info("%s replica went away: %s", self.label, e)
        except Exception as e:  # a bug: logged once with its traceback, the replica told when the wire allows it
            st.end_reason = f"internal error: {type(e).__name__}: {e}"
            st.close_reason = "error"
            log.exception("%s dump failed with an internal error", self.label)
            err = await self._send_internal_error(e)
        finally:
            if self.tc is not None and st.close_reason != "fault":  # (a fault's count is the socket's already)
                st.bytes_sent = self.tc.written
            if self.ledger is not None:
                self._ledger_close(err)

    # --- audit ledger -------------------------------------------------------------------------------------
    def _fault_record(self, body: dict[str, object]) -> None:
        """A `fault` record (docs/ledger.md): what the connection's fault did, in stream order."""
        if self.ledger is not None:
            if self._recs or self._tail is not None:
                self._hand_over(final=True)
            self.ledger.put_dict("fault", self.ledger_conn, body)

    def _ledger_conn_record(self, file: str, pos: int) -> None:
        """The `conn` record, once, before any event (`file`/`pos`: where the dump really starts)."""
        if self.ledger is None or self._conn_logged:
            return
        self._conn_logged = True
        p = self.p
        info = self.ledger_info
        self.ledger.put_dict("conn", self.ledger_conn, {
            "thread_id": info.get("thread_id"), "peer": info.get("peer"), "user": info.get("user"),
            "server_id": p.replica_server_id, "capability": p.capability,
            "capability_set": bool(info.get("capability_set", False)), "skip_replication": p.skip_replication,
            "dump_flags": p.flags, "checksum": p.checksum_aware, "start_file": file, "start_pos": pos,
            "req_file": p.file, "req_pos": p.pos, "start_gtid": p.connect_state,
            "heartbeat_ms": p.heartbeat_ns // 1_000_000, "compat": p.compat.name.lower(),
            "send_tables_info": p.send_tables_info, "transcode": kind(self.tc.target) if self.tc else None,
            "table_filters": ({t.option: list(r.values) for t, r in p.table_filters.rules.items()}
                              if p.table_filters is not None else None), "filters_from": p.filters_from,
            "source_server_id": self.server_id, "binlog_dir": str(self.store.directory.absolute())})
        self._acc = (jstr(file), pos)

    def _hand_over(self, final: bool = False) -> None:
        """Queue the records of the bytes about to be written (called right before the socket write).

        Batches are small (a shared block, an event crossing a block's end), so a run a batch end cut continues in
        the next batch: the last run record is held back and joined with the next batch's first record when that
        one continues it (same file, action and `why`, contiguous), and queued with the next batch or at the
        dump's end (`final`). The records are the ones 1 MiB batches gave, cut less often (docs/ledger.md)."""
        recs, self._recs = self._recs, []
        tail, self._tail = self._tail, None
        if tail is not None:
            if recs and _continues(tail, recs[0]):
                recs[0] = _join(tail, recs[0])
            else:
                recs.insert(0, tail)
        if not final and recs and recs[-1][5] in _RUNS and recs[-1][1] != BIN_LOG_HEADER_SIZE:
            self._tail = recs.pop()  # (a record at 4 is a file's FDE: never part of a run)
        if not recs:
            return
        assert self.ledger is not None
        self.ledger.put_records(self.ledger_conn, recs)
        for r in reversed(recs):
            if r[5] != "fake":
                self._acc = (r[0], r[2])
                break

    def _ledger_close(self, err: tuple[int, str] | None) -> None:
        """The `error` record (if any) and the `close` record; never blocks (a cancelled dump writes it too)."""
        assert self.ledger is not None
        self._ledger_conn_record(self.p.file, self.p.pos)
        if self._tail is not None:
            self._hand_over(final=True)
        file, pos = json.loads(self._acc[0]), self._acc[1]
        st = self.stats
        if err is not None and st.close_reason == "error":
            self.ledger.put_dict("ev", self.ledger_conn, {
                "file": file, "start": pos, "end": pos, "count": 0, "length": 0, "action": "error", "why": None,
                "type": None, "flags": None, "gtid": None, "sent_length": 0, "code": err[0], "message": err[1]})
        self.ledger.put_dict("close", self.ledger_conn, {
            "file": file, "pos": pos, "reason": st.close_reason or "client_gone",
            "error_code": err[0] if err else None, "error": err[1] if err else None,
            "events": st.events_sent - st.heartbeats, "heartbeats": st.heartbeats, "bytes": st.bytes_sent})

    def _close_run(self, mv: memoryview, base: int, run_p: int, p: int, count: int, policy: int = 0,
                   hole_bytes: int = 0) -> None:
        """The `sent` record of the run mv[run_p:p] (nothing when empty): `count` events, `policy` of them not sent
        as stored by a type rule of the connection (why "capability"), `hole_bytes` of those left out."""
        if p <= run_p:
            return
        typ: int | str = NULL
        flags: int | str = NULL
        if count == 1:
            typ, _, flags = _PEEK.unpack_from(mv, run_p)
        self._recs.append((self._fj, base + run_p, base + p, count, p - run_p, "sent", NULL, typ, flags, NULL,
                           p - run_p - hole_bytes, policy))

    def _close_withheld(self, base: int, p: int, end: int, n: int, action: str, why: str, typ: int, flags: int,
                        gtid: str) -> None:
        """The record of a run of `n` consecutive events withheld or rewritten alike (same action and why) in
        [p, end) of the chunk at `base`; type/flags/gtid are the first event's, kept only when it is alone."""
        length = end - p
        sent = 0 if action == "hole" else length
        if action == "renamed":
            sent += self._renamed_bytes
            self._renamed_bytes = 0
        if n == 1:
            self._recs.append((self._fj, base + p, base + end, 1, length, action, why, typ, flags, gtid, sent, 0))
        else:
            self._recs.append((self._fj, base + p, base + end, n, length, action, why, NULL, NULL, NULL, sent, 0))

    def _group_gtid(self, mv: memoryview, p: int, typ: int, contiguous: bool) -> str:
        """The `gtid` (JSON text) of an event at mv[p] not sent as stored; `contiguous`: the event before it was
        not sent as stored either. Events sent as stored are never looked at, so after one of them (which may have
        been a GTID, for capability 4) the group is unknown until the next GTID event that is not sent as is."""
        if typ == GTID_EVENT:
            if mv.nbytes - p >= HEADER_LEN + 12:
                server, seq, domain = _GTID_IDS.unpack_from(mv, p)
                self._gtid = f'"{domain}-{server}-{seq}"'
            else:
                self._gtid = None
        elif self._gtid_sent and not contiguous:
            self._gtid = None
        return NULL if typ in _NOT_IN_GROUPS or self._gtid is None else self._gtid

    async def _send_error(self, e: DumpError) -> None:
        self._put_packet(err_packet(e.code, self._error_text(e)))
        with contextlib.suppress(ConnectionError, OSError):
            try:
                await self._flush()
            except DumpError as first:  # an event framed before `e` fails the checksum stage: it comes first
                log.warning("%s dump: before that, error %d: %s", self.label, first.code, first.message)
                self._put_packet(err_packet(first.code, self._error_text(first)))
                with contextlib.suppress(DumpError):  # (the stage still holds the bad event: the session just ends)
                    await self._flush()

    async def _send_internal_error(self, e: Exception) -> tuple[int, str] | None:
        """ERR 1236 for an unexpected exception, unless a write was cut inside a packet (then the connection just
        closes): the packets framed but not sent are dropped, the ERR takes the first one's sequence id."""
        seq = self._boundary_seq
        if seq is None and self.fault is not None:  # (the fault writer cuts packets itself: it knows where it is)
            seq = self.fault.wire_seq
        if seq is None:
            return None
        self.out = bytearray()
        self._recs = []  # not sent
        self.seq = seq
        text = f"binlogd internal error ({type(e).__name__}: {e}); see the server log"
        err = DumpError(text.encode()[:MAX_ERROR_TEXT].decode(errors="ignore"), suffix=False)
        with contextlib.suppress(Exception):
            await self._send_error(err)
        return err.code, err.message

    def _error_text(self, e: DumpError) -> str:
        if not e.suffix:
            return e.message
        start = self.start_file or "."
        return errors.with_coordinates(e.message, start, self.start_pos, self.file or ".", self.last_event_pos,
                                       self.last_byte)

    # --- output ------------------------------------------------------------------------------------------
    def _put_packet(self, payload: bytes) -> None:
        self.seq = frame(payload, self.seq, self.out)

    def _put_event(self, ev: bytes | bytearray | memoryview, end: int = 0) -> None:
        """Frame one event (`end`: its end position in the current file, 0 for generated events)."""
        if self.semi is not None:
            self.seq = self._frame_semi(ev, end, self.seq, self.out)
        else:
            self.seq = frame(b"\0" + bytes(ev), self.seq, self.out)
        self.stats.events_sent += 1

    def _frame_semi(self, ev: bytes | bytearray | memoryview, end: int, seq: int, out: bytearray) -> int:
        """Frame an event for a semi-sync replica; returns the next sequence id. An event a waiting commit needs
        asks for an ack, and the sequence restarts after it (MariaDB's flush_net: net_clear, then pkt_nr 1)."""
        assert self.semi is not None
        ack = end > 0 and self.semi.needs_ack(self.file, end)
        seq = frame(event_prefix(ack) + bytes(ev), seq, out)
        if ack:
            self.asked.append((self.file, end))
            return 1
        return seq

    def ack_asked(self, file: str, pos: int) -> bool:
        """Was an ack for (file, pos) asked on this dump? Forgets the requests up to it."""
        if (file, pos) not in self.asked:
            return False
        while self.asked and self.asked[0] != (file, pos):
            self.asked.popleft()
        self.asked.popleft()
        return True

    async def _flush(self) -> None:
        if self._recs:
            self._hand_over()
        if self.out:
            data, self.out = self.out, bytearray()
            await self._write(data)
        if self.ledger is not None and self.ledger.full:
            await self.ledger.wait_room()  # back-pressure: the dump waits for the ledger rather than lose records

    async def _write(self, data: bytes | bytearray) -> None:
        """Send `data` in slices, waiting for the transport to drain between them: what a slow reader makes the
        server hold is one slice plus the transport's high-water mark, not a whole framed block copied again.
        Through --faults the data goes whole (the fault writer cuts and counts packets per write)."""
        self.stats.bytes_sent += len(data)
        self.stats.last_event_at = time.monotonic()  # per write, not per event (a heartbeat's is undone in _wait)
        w = self.writer
        if data:
            self._boundary_seq = data[3]  # a write that raises before taking anything leaves the wire here
        if len(data) <= WRITE_SLICE or self.fault is not None:
            w.write(data)
            self._boundary_seq = None
            await w.drain()
        else:
            mv = memoryview(data)
            for i in range(0, len(data), WRITE_SLICE):
                w.write(mv[i:i + WRITE_SLICE])
                self._boundary_seq = None
                await w.drain()
        self._boundary_seq = self.seq

    # --- start --------------------------------------------------------------------------------------------
    def _resolve_start(self) -> tuple[str, int]:
        p = self.p
        try:
            names = self.store.files()
        except StoreError as e:
            raise DumpError(errors.BINLOG_NOT_OPEN, suffix=False) from e
        if not names:  # a relay that has stored nothing yet (its store allows that): no binlog, as documented
            raise DumpError(errors.BINLOG_NOT_OPEN, suffix=False)
        if p.connect_state is not None:
            return self._resolve_gtid_start(names), BIN_LOG_HEADER_SIZE
        name = p.file or names[0]
        if name not in names:
            raise DumpError(errors.FIRST_LOG_NOT_FOUND, suffix=False)
        self.file = name
        end = self.store.end_of(name)
        pos = p.pos
        if self.tc is not None and pos > BIN_LOG_HEADER_SIZE:  # a position of the transcoded stream
            m = map_start(self.store.path(name), pos, self.tc.target, end)
            self._tc_start = (pos, 0, pos) if m is None else (m[0], m[1], pos)
            pos = -1 if m is None else m[0]
        if pos < BIN_LOG_HEADER_SIZE or pos > end:
            self.last_event_pos = self.last_byte = BIN_LOG_HEADER_SIZE
            self.file = p.file  # MariaDB names the file asked for ('.' when none was), not the one it chose
            raise DumpError(errors.IMPOSSIBLE_POSITION)
        return name, pos

    def _resolve_gtid_start(self, names: list[str]) -> str:
        p = self.p
        try:
            requested = parse_gtid_list(p.connect_state or "")
        except GtidError as e:
            raise DumpError(str(e), e.code, suffix=False) from e
        until = None
        if p.until_state is not None:
            try:
                until = parse_gtid_list(p.until_state)
            except GtidError as e:
                raise DumpError(str(e), e.code, suffix=False) from e  # MariaDB's first error wins: 1941
        binlog = self.store.binlog_state()
        try:
            empty = check_start_position(requested, binlog, p.gtid_ignore_duplicates)
        except GtidStartError as e:
            raise DumpError(e.text(), suffix=False) from e
        fallback = None
        for name in reversed(names):
            head = self.store.head(name)
            if not head.complete:
                # the active file's GTID_LIST is not written yet: an earlier file is acceptable whenever it is
                fallback = name
                continue
            if head.gtid_list is None or file_acceptable(requested, head.gtid_list):
                for g in head.gtid_list or []:
                    if requested.get(g.domain) == g:
                        del requested[g.domain]
                    if until is not None:
                        drop_reached_until(until, g)
                self.skipper = GtidSkipper(dict(requested), p.gtid_strict, empty, until=until)
                self.file = name
                return name
        if fallback is not None:  # nothing earlier: a file that has no GTID_LIST so far is accepted, like MariaDB
            self.skipper = GtidSkipper(dict(requested), p.gtid_strict, empty, until=until)
            self.file = fallback
            return fallback
        raise DumpError(errors.GTID_STATE_NOT_FOUND, suffix=False)

    # --- main loop ------------------------------------------------------------------------------------------
    def _start_transcoding(self) -> None:
        """Checksum transcoding for this client (server/transcode.py): a stage that rewrites what the dump writes."""
        p = self.p
        try:
            target = target_algorithm(p.checksum_aware, p.first_rotate_crc, p.add_checksums, p.compat is Compat.MARIADB)
        except TranscodeRefused as e:
            raise DumpError(str(e), suffix=False) from e
        if target is not None and self.semi is not None:  # the stage rewrites plain event packets only
            raise DumpError("binlogd does not transcode checksums for a semi-sync replica: set @master_binlog_checksum "
                            "to the binlog's algorithm, or do not set @rpl_semi_sync_slave", suffix=False)
        if target is not None and p.table_filters is not None and FilterType.REWRITE_DB in p.table_filters.rules:
            raise DumpError("binlogd does not transcode checksums for a replica with replicate-rewrite-db (renamed "
                            "events change length): set @master_binlog_checksum to the binlog's algorithm",
                            suffix=False)
        if target is not None:
            self.tc = TranscodingWriter(self.writer, target, self.seq, self._corrupt)
            self.writer = self.tc

    def _corrupt(self, log_pos: int, length: int) -> DumpError:
        """A stored CRC failed while the transcoding stage stripped it (the client could no longer tell)."""
        self.last_event_pos, self.last_byte = log_pos - length, log_pos
        return DumpError(errors.READ_CHECKSUM_FAILURE)

    async def _serve(self) -> None:
        self._start_transcoding()
        name, pos = await asyncio.to_thread(self._resolve_start)  # reads index, file heads, GTID state
        self._ledger_conn_record(name, pos)
        if self.semi is not None and self.p.connect_state is None:
            self.semi.dump_start(name, pos)  # a checked file/pos start (a GTID start's replica acks later)
        if self.fault is not None:
            self.fault.armed()
        first = True
        rotate_crc = self.p.first_rotate_crc
        while True:
            await self._send_file(name, pos, first, rotate_crc)
            if self._done:
                return
            nxt = self.store.next_file(name)
            if nxt is None:
                raise DumpError(errors.NEXT_LOG_NOT_FOUND)
            rotate_crc = self.alg == BINLOG_CHECKSUM_ALG_CRC32
            name, pos, first = nxt, BIN_LOG_HEADER_SIZE, False

    async def _send_file(self, name: str, pos: int, first: bool, rotate_crc: bool) -> None:
        self.file = name
        if self.tc is not None:
            self.tc.open_file(name, *(self._tc_start if first else (pos, 0, pos)))
        ev = fake_rotate(self.server_id, pos, name, rotate_crc)
        self._put_event(ev)
        self.stats.fakes += 1
        if self.ledger is not None:
            self._fj = jstr(name)
            self._recs.append((self._fj, pos, pos, 1, 0, "fake", '"rotate"', ev[4], 0x20, NULL, len(ev), 0))
            self._gtid, self._chain = None, False  # group tracking is per file
        try:
            f = open(self.store.path(name), "rb")  # noqa: SIM115 - closed in finally; reads go to a thread
        except OSError as e:
            raise DumpError(errors.open_failed(e.strerror)) from e
        try:
            await self._send_fde_and_events(f.fileno(), name, pos, first)
        finally:
            f.close()

    @staticmethod
    async def _read_at(fd: int, pos: int, n: int) -> bytes:
        """Positional read in a worker thread (disk I/O never blocks the event loop)."""
        return await asyncio.to_thread(os.pread, fd, n, pos)

    async def _send_fde_and_events(self, fd: int, name: str, start: int, first: bool) -> None:
        self._file_start = start
        head = await self._read_at(fd, 0, 64 * 1024)
        self.last_event_pos = BIN_LOG_HEADER_SIZE
        if len(head) < BIN_LOG_HEADER_SIZE + HEADER_LEN or head[BIN_LOG_HEADER_SIZE + 4] != FORMAT_DESCRIPTION_EVENT:
            self.last_byte = len(head)
            raise DumpError(errors.NO_FORMAT_DESCRIPTION)
        (fde_len,) = struct.unpack_from("<I", head, BIN_LOG_HEADER_SIZE + 9)
        fde_end = BIN_LOG_HEADER_SIZE + fde_len
        if fde_len < HEADER_LEN or fde_end > len(head):
            self.last_byte = len(head)
            raise DumpError(errors.NO_FORMAT_DESCRIPTION)
        fde = head[BIN_LOG_HEADER_SIZE:fde_end]
        try:
            self.alg = fde_checksum_alg(fde)
        except BinlogFormatError as e:
            raise DumpError(errors.CORRUPT_FORMAT_DESCRIPTION) from e
        self.last_byte = self.pos = fde_end
        if self.alg == BINLOG_CHECKSUM_ALG_CRC32 and not self.p.checksum_aware and self.tc is None:
            raise DumpError(errors.CHECKSUM_NOT_HANDLED)
        zero_pos = first and start > BIN_LOG_HEADER_SIZE
        zero_created = zero_pos or (self.skipper is not None and not self.skipper.reached)
        self._put_event(fix_fde(fde, zero_pos, zero_created, self.alg))
        if self.ledger is not None:
            (fde_flags,) = struct.unpack_from("<H", fde, 17)
            self._recs.append((self._fj, BIN_LOG_HEADER_SIZE, fde_end, 1, fde_len, "sent", NULL,
                               FORMAT_DESCRIPTION_EVENT, fde_flags, NULL, fde_len, 0))
        # START_ENCRYPTION right after the FDE: binlogd cannot decrypt (and must never forward ciphertext)
        if len(head) >= fde_end + HEADER_LEN and head[fde_end + 4] == START_ENCRYPTION_EVENT:
            self.last_event_pos = fde_end
            raise DumpError(errors.DECRYPT_FAILED)
        del head  # not held while the file streams
        # MariaDB seeks to a start position > 4 without checking that it is an event boundary
        await self._stream(fd, name, start if start > BIN_LOG_HEADER_SIZE else fde_end)

    def _wants_position_sync(self) -> bool:
        """binlogd extension: fake GTID_LISTs over trailing holes, for blocking capability-4 replicas."""
        return (self.policy.capability >= CAP_GTID and not self.p.non_blocking
                and self.policy.compat is Compat.BINLOGD)

    async def _stream(self, fd: int, name: str, pos: int) -> None:
        """Send the events of `name` from `pos`; returns at the end of a closed file (or a non-blocking end)."""
        store = self.store
        self.pos = pos
        ino = os.fstat(fd).st_ino
        final = False  # seen rotated: the whole file is readable
        while True:
            version = store.version  # before the read: a change after it must wake the wait below
            cap = None if final else store.published_end(name)  # binlogd's own writer: only what it published
            end = os.fstat(fd).st_size if cap is None else cap
            data = await self._chunk(fd, ino, pos, end) if end > pos else b""
            if self.tc is not None and data:
                self.tc.feed(name, data, pos)  # before its packets are written: the stage maps their positions
            if self.out or self._recs:
                await self._flush()
            consumed, framed = await self._frame_chunk(ino, data, pos) if data else (0, b"")
            del data  # the shared block is not held while the packets are written
            if framed:
                await self._write(framed)  # records of these bytes were handed over with them
            del framed
            pos += consumed
            if self.out or self._recs:
                await self._flush()
            if self._done:  # START SLAVE UNTIL reached
                return
            if consumed:
                continue  # more may follow right away
            if self._tail is not None:  # nothing follows right away: the held-back run is queued now
                self._hand_over(final=True)
            # at the end of what the file holds now (a chunk always holds the whole event at `pos` when it is
            # readable); `tail` bytes of an incomplete event follow
            tail = max(0, end - pos)
            if not store.is_active(name):
                # rotated: the file is final now; look once more in case it grew before the switch
                if not final:
                    final = True
                    if os.fstat(fd).st_size > pos + tail:
                        continue
                if tail:
                    self.last_event_pos = pos
                    self.last_byte = await asyncio.to_thread(self._last_byte_read, fd, pos, end)
                    raise DumpError(errors.READ_TRUNCATED)
                return
            if self.p.non_blocking:
                if tail:
                    log.warning("%s %s has %d bytes of an incomplete event at %d (being written?); not sent",
                                self.label, name, tail, pos)
                self._done = True
                return
            await self._maybe_sync_position()
            await self._wait(version, name, pos + tail)

    def _last_byte_read(self, fd: int, failed_at: int, size: int) -> int:
        """Where MariaDB's dump thread would say it stopped reading this file (its IO_CACHE replayed)."""
        return last_byte_read(lambda p, n: os.pread(fd, n, p), size, self._file_start, failed_at)

    async def _chunk(self, fd: int, ino: int, pos: int, end: int) -> bytes | memoryview:
        """What to frame next from `pos` (< `end`, the readable end): a view of the store's shared block holding
        `pos`, up to the block's end; or, when the event at `pos` crosses that end, this event alone (the one
        copy a dump makes, as big as the event: joined from the shared blocks when it ends in the next one, else
        read for this dump)."""
        b0 = pos - pos % BLOCK
        length = min(BLOCK, end - b0)
        blk = await self._block(fd, ino, b0, length)
        off = pos - b0
        avail = len(blk) - off
        if avail >= HEADER_LEN:
            (evlen,) = _LEN.unpack_from(blk, off)
            if evlen <= avail or evlen < HEADER_LEN or evlen > MAX_EVENT_SIZE:
                return memoryview(blk)[off:]  # (a bogus length is reported by _process)
            return await self._crossing(fd, ino, pos, end, blk, off, evlen)
        if len(blk) < length or b0 + len(blk) >= end:
            return memoryview(blk)[max(0, off):]  # the readable bytes end inside this block
        # the header crosses the block's end
        hdr = (await self._crossing(fd, ino, pos, end, blk, off, HEADER_LEN))[:HEADER_LEN]
        if len(hdr) < HEADER_LEN:
            return hdr
        (evlen,) = _LEN.unpack_from(hdr)
        if evlen < HEADER_LEN or evlen > MAX_EVENT_SIZE:
            return hdr
        return await self._crossing(fd, ino, pos, end, blk, off, evlen)

    async def _block(self, fd: int, ino: int, b0: int, length: int) -> bytes:
        return await self.store.blocks.read((self.store.generation, ino, b0, length), fd, b0, length)

    async def _crossing(self, fd: int, ino: int, pos: int, end: int, blk: bytes, off: int, n: int) -> bytes:
        """The `n` bytes at `pos` (fewer where the readable end comes first), which start in the shared block
        `blk` (at `off`) and run past its end: the rest comes from the next shared block when it holds it (no
        read of this dump's own: 200 dumps crossing each block's end cost no thread hand-off each), else from a
        read for this dump."""
        want = min(n, end - pos)
        b1 = pos - off + len(blk)
        if len(blk) == BLOCK and b1 < end and want - (len(blk) - off) <= min(BLOCK, end - b1):
            nxt = await self._block(fd, ino, b1, min(BLOCK, end - b1))
            return blk[off:] + nxt[:want - (len(blk) - off)]
        return await self._read_at(fd, pos, want)

    async def _frame_chunk(self, ino: int, data: bytes | memoryview, pos: int) -> tuple[int, bytes]:
        """Frame one chunk read at `pos`, or reuse the framing another dump in the same state already made.

        Dumps that read the same bytes at the same offset with the same policy, checksum algorithm and packet
        sequence id produce the same packets (N `mariadb-binlog -R` clients, replicas catching up from the
        same place): the first frames the chunk, the others send its bytes.
        """
        if self.skipper is not None or self.semi is not None or self.tfilter is not None:  # (a filter: its own state)
            return await self._process(data, pos), b""  # (its packets are in self.out)
        gstate = (self._gtid, self._chain)  # the ledger's group tracking
        key = (self.store.generation, ino, pos, len(data), self.seq, self.policy, self.alg, gstate)
        cache = self.store.frames
        hit = cache.get(key)
        st = self.stats
        if hit is not None:
            self.seq = hit.seq_after
            st.events_sent += hit.sent
            st.events_read += hit.read
            st.holes += hit.holes
            st.dummies += hit.dummies
            st.begins += hit.begins
            if hit.sent_end >= 0:
                self.sent_upto = pos + hit.sent_end
            self._need = hit.need
            self.pos = self.last_event_pos = self.last_byte = pos + hit.consumed
            if self.ledger is not None:
                self._gtid, self._chain = hit.gtid_out, hit.chain_out
                if hit.records:
                    self._recs.extend(hit.records)
                    self._hand_over()
            return hit.consumed, hit.framed  # shared, immutable: no copy on our side
        before = (st.events_sent, st.events_read, st.holes, st.dummies, st.begins, self.sent_upto)
        nrec = len(self._recs)
        consumed = await self._process(data, pos)
        framed = bytes(self.out)
        self.out = bytearray()
        cache.put(key, FramedChunk(
            framed=framed, consumed=consumed, seq_after=self.seq, sent=st.events_sent - before[0],
            read=st.events_read - before[1], holes=st.holes - before[2], dummies=st.dummies - before[3],
            begins=st.begins - before[4], sent_end=self.sent_upto - pos if self.sent_upto != before[5] else -1,
            need=self._need, records=tuple(self._recs[nrec:]), gtid_out=self._gtid, chain_out=self._chain))
        if self._recs:
            self._hand_over()
        return consumed, framed  # the cached object itself: no second copy of this dump's framing

    async def _wait(self, version: int, name: str, known_end: int) -> None:
        """Wait for the store to change; heartbeat every period while nothing arrives."""
        period = self.p.heartbeat_ns / 1e9 if self.p.heartbeat_ns > 0 else None
        while True:
            if self.store.version != version or not self.store.is_active(name):
                return
            new = await self.store.wait_change(version, period)
            if new != version or self.store.end_of(name) > known_end:
                return
            if period is not None and self.store.is_active(name):
                self._put_event(heartbeat(self.server_id, name, self.pos, self.alg == BINLOG_CHECKSUM_ALG_CRC32))
                self.stats.heartbeats += 1
                last = self.stats.last_event_at
                await self._flush()
                self.stats.last_event_at = last

    async def _maybe_sync_position(self) -> None:
        """binlogd extension: when the last events before the end were withheld, a fake GTID_LIST with
        log_pos = the end moves a capability-4 replica's Read/Exec_Master_Log_Pos up to the primary's end
        (MariaDB's replica treats fake GTID_LISTs as position updates; MariaDB itself leaves it behind)."""
        if self.sent_upto >= self.pos or not self._wants_position_sync():
            return
        await self._send_fake_list(self.pos)
        self.sent_upto = self.pos
        await self._flush()

    async def _process(self, buf: bytes | memoryview, base: int) -> int:
        """Decide and frame every whole event in `buf` (file offset `base`); return the bytes consumed.

        The inner loop handles runs of events sent as stored or left out: one header peek, one table
        lookup, a 5-byte packet header and one copy into the output buffer, all on locals. Anything else (a
        rewrite, a GTID start position still pending, an incomplete or > 16 MiB event) leaves it for the
        general path below, one event at a time. The output of one chunk (at most a BLOCK of file) is flushed by
        the caller.
        """
        mv = memoryview(buf)
        n = len(buf)
        last = n - HEADER_LEN
        p = 0
        out = self.out
        seq = self.seq
        normal, flagged = self.table.normal, self.table.flagged
        actions = self.table.by_type_and_skip_flag
        peek = _PEEK.unpack_from
        pack = _PKT.pack
        sent = events = holes = 0
        sent_end = -1  # end offset (in buf) of the last event the replica got
        self._need = 0
        # audit ledger: the current run of sends is only its start (run_p) and the counters there (run_sent, run_n:
        # events sent as stored, all events); events sent as stored cost nothing more. Events a type rule of the
        # connection withholds or rewrites (why "capability": ANNOTATE_ROWS, GTID -> BEGIN, ...) stay inside that
        # run: its `policy` count is derived from the counters, a policy hole costs one add (`pol_holes`: the bytes
        # left out), and the audit recomputes which events they were from the binlog and decide(). Events withheld
        # for another reason (skip_replication, a GTID start) coalesce the same way: the open run of them is nw
        # events from nw_p to run_p with one (action, why); an event extending it costs a compare and a count, a
        # record (a tuple) is only built when the run closes (other action/why, a send, chunk end)
        ledger = self.ledger is not None
        recs = self._recs if ledger else None
        whys = self._whys
        pol = self._pol
        pol_holes = 0
        run_p = run_sent = run_n = 0
        nw = nw_p = nw_typ = nw_flags = 0
        nw_a = nw_why = nw_gtid = NULL
        chain = self._chain  # for an event at run_p == 0: was the event before this chunk not sent as is?
        try:
            while p <= last:
                if self.skipper is None and self.semi is None:
                    while p <= last:
                        typ, length, flags = peek(mv, p)
                        end = p + length
                        if end > n or length < HEADER_LEN or length >= _BIG:  # > 16 MiB: several packets
                            break
                        i = typ | (flags >> 7 & 0x100)
                        a = actions[i]
                        if a:
                            if a != _HOLE:
                                break
                            holes += 1
                            if recs is not None:  # holes coalesce (never any cost per event sent)
                                if pol[i]:  # a type rule: part of the run of sends
                                    pol_holes += length
                                    p = end
                                    continue
                                w = whys[i]
                                if nw and p == run_p and w == nw_why and nw_a == "hole":
                                    nw += 1  # extends the open run
                                    if typ == GTID_EVENT:
                                        self._group_gtid(mv, p, typ, True)
                                else:
                                    if nw:
                                        self._close_withheld(base, nw_p, run_p, nw, nw_a, nw_why, nw_typ, nw_flags,
                                                             nw_gtid)
                                    if p > run_p:
                                        k = sent + holes + events - 1 - run_n
                                        self._close_run(mv, base, run_p, p, k, k - sent + run_sent, pol_holes)
                                        pol_holes = 0
                                    nw, nw_p, nw_a, nw_why, nw_typ, nw_flags = 1, p, "hole", w, typ, flags
                                    nw_gtid = self._group_gtid(mv, p, typ, p == run_p and (p > 0 or chain))
                                p = end
                                while p <= last:  # the holes that extend this run (a skipped group): no bookkeeping
                                    typ, length, flags = peek(mv, p)
                                    end = p + length
                                    if end > n or length < HEADER_LEN or length >= _BIG:
                                        break
                                    i = typ | (flags >> 7 & 0x100)
                                    if actions[i] != _HOLE or whys[i] != w:
                                        break
                                    if typ == GTID_EVENT:
                                        self._group_gtid(mv, p, typ, True)
                                    nw += 1
                                    holes += 1
                                    p = end
                                run_p = p
                                run_sent = sent
                                run_n = sent + holes + events
                                continue
                            p = end
                            continue
                        out += pack((length + 1) | (seq << 24), 0)
                        out += mv[p:end]
                        seq = (seq + 1) & 0xFF
                        p = sent_end = end
                        sent += 1
                    if p > last:
                        break
                # the general path, for one event
                typ, length, flags = peek(mv, p)
                end = p + length
                if length < HEADER_LEN or length > MAX_EVENT_SIZE:
                    self.last_event_pos = base + p
                    self.last_byte = base + p + HEADER_LEN
                    raise DumpError(check_event_length(length) or errors.READ_BOGUS)
                if end > n:
                    self._need = length
                    break
                self._skip_hole = False
                self._twhy = None
                if self.skipper is not None:
                    a = self._gtid_start_decide(mv, p, end, typ, flags, base)
                else:
                    a = (flagged if flags & 0x8000 else normal)[typ]
                    if a == _PEEK_GTID:
                        a = self._gtid_action(mv, p, end, flags, base)
                if a == _PEEK_TABLES:
                    a = self._table_action(mv, p, end, typ, flags, base)
                if a == _SEND:
                    if self.semi is not None:
                        seq = self._frame_semi(mv[p:end], base + end, seq, out)
                    else:
                        seq = frame(b"\0" + bytes(mv[p:end]), seq, out)  # may split a > 16 MiB event
                    sent += 1
                    sent_end = end
                elif a != _HOLE:
                    self.seq = seq
                    self._rewrite(a, mv[p:end], base + p)
                    seq = self.seq
                    sent_end = end
                    events += 1
                else:
                    holes += 1
                if ledger and a != _SEND:
                    i = typ | (flags >> 7 & 0x100)
                    if typ == GTID_EVENT and end - p > HEADER_LEN + 12 and mv[p + HEADER_LEN + 12] & 1:
                        i |= 0x200  # a standalone GTID
                    if pol[i] and not self._skip_hole and self._twhy is None:  # a type rule: in the run of sends
                        if a == _HOLE:
                            pol_holes += length
                        if typ == GTID_EVENT:
                            self._gtid = None  # a new group, its GTID not looked at (explicit records say null)
                    else:
                        aname, w = _ACTION_NAME[a], '"gtid_start"' if self._skip_hole else self._twhy or whys[i]
                        if nw and p == run_p and w == nw_why and nw_a == aname:
                            nw += 1
                            if typ == GTID_EVENT:
                                self._group_gtid(mv, p, typ, True)
                        else:
                            if nw:
                                self._close_withheld(base, nw_p, run_p, nw, nw_a, nw_why, nw_typ, nw_flags, nw_gtid)
                            contiguous = p == run_p and (p > 0 or chain)
                            k = sent + holes + events - 1 - run_n
                            self._close_run(mv, base, run_p, p, k, k - sent + run_sent, pol_holes)
                            pol_holes = 0
                            nw, nw_p, nw_a, nw_why, nw_typ, nw_flags = 1, p, aname, w, typ, flags
                            nw_gtid = self._group_gtid(mv, p, typ, contiguous)
                        run_p = end
                        run_sent = sent
                        run_n = sent + holes + events
                p = end
                if self.skipper is not None and self.skipper.take_fake_list():
                    if ledger:
                        if nw:
                            self._close_withheld(base, nw_p, run_p, nw, nw_a, nw_why, nw_typ, nw_flags, nw_gtid)
                            nw = 0
                        k = sent + holes + events - run_n
                        self._close_run(mv, base, run_p, p, k, k - sent + run_sent, pol_holes)
                        pol_holes = 0
                        run_p, run_sent, run_n = p, sent, sent + holes + events
                    self.seq = seq
                    await self._send_fake_list(base + p, "gtid_start", self.skipper.seen.as_list())
                    seq = self.seq
                    sent_end = p
                    if self.skipper.done:
                        self.skipper = None  # start position reached: back to the plain loop
                if self.skipper is not None and self.skipper.until_reached(mv, p - length, p, self._crc_len):
                    if ledger:
                        if nw:
                            self._close_withheld(base, nw_p, run_p, nw, nw_a, nw_why, nw_typ, nw_flags, nw_gtid)
                            nw = 0
                        k = sent + holes + events - run_n
                        self._close_run(mv, base, run_p, p, k, k - sent + run_sent, pol_holes)
                        pol_holes = 0
                        run_p, run_sent, run_n = p, sent, sent + holes + events
                    self.seq = seq
                    await self._send_fake_list(base + p, "gtid_until", self.skipper.seen.as_list(),
                                               GTID_LIST_FLAG_UNTIL_REACHED)
                    seq = self.seq
                    sent_end = p
                    self._done = True  # MariaDB ends the dump here (EOF), blocking or not
                    break
        finally:
            if ledger:
                if nw:  # runs never cross a chunk end
                    self._close_withheld(base, nw_p, run_p, nw, nw_a, nw_why, nw_typ, nw_flags, nw_gtid)
                k = sent + holes + events - run_n
                self._close_run(mv, base, run_p, p, k, k - sent + run_sent, pol_holes)
                if p:
                    self._chain = run_p == p
            self.seq = seq
            st = self.stats
            st.events_sent += sent
            st.events_read += events + sent + holes
            st.holes += holes
            if sent_end >= 0:
                self.sent_upto = base + sent_end
        self.pos = base + p
        self.last_event_pos = self.last_byte = base + p
        return p

    def _gtid_action(self, mv: memoryview, p: int, end: int, flags: int, base: int) -> int:
        """The answer for a GTID event whose action depends on its FL_STANDALONE bit."""
        if end - p < HEADER_LEN + GTID_POST_HEADER_LEN:  # Gtid_log_event::make_compatible_event refuses it
            self.last_event_pos = base + p
            self.last_byte = base + end
            raise DumpError(errors.GTID_TO_BEGIN_FAILED)
        return int(self.table.lookup(GTID_EVENT, flags, bool(mv[p + HEADER_LEN + 12] & 1)))

    def _table_action(self, mv: memoryview, p: int, end: int, typ: int, flags: int, base: int) -> int:
        """The answer for an event the connection's table filter must look at (protocol/table_filter.py decides
        whether a rule rejects it, protocol/decision.py what a rejected event becomes)."""
        tf = self.tfilter
        assert tf is not None
        ev = mv[p:end]
        crc = self.alg == BINLOG_CHECKSUM_ALG_CRC32
        if typ == GTID_EVENT:
            tf.decide(ev, crc)
            return self._gtid_action(mv, p, end, flags, base)
        standalone = tf.in_standalone_group
        v = tf.decide(ev, crc)
        a, why = explain(typ, flags, standalone, self.policy, v.rule)
        if v.rule is not None:
            self._twhy = jstr(why)
        elif v.new_db is not None and a == Action.SEND:
            self._new_db = v.new_db
            self._twhy = '"replicate-rewrite-db"'
            return _RENAME
        return int(a)

    def _gtid_start_decide(self, mv: memoryview, p: int, end: int, typ: int, flags: int, base: int) -> int:
        """Per-event path while a GTID start position is pending: skip the groups the replica has."""
        sk = self.skipper
        assert sk is not None
        if typ == GTID_EVENT:
            if end - p - self._crc_len < HEADER_LEN + GTID_POST_HEADER_LEN:  # Gtid_log_event::peek refuses it
                self.last_event_pos = base + p
                self.last_byte = base + end
                raise DumpError(errors.CORRUPT_GTID)
            d, s, n, flags2 = peek_gtid(mv, p)
            if sk.pending or sk.until is not None:
                try:
                    if sk.on_gtid(Gtid(d, s, n), mv, p, end):
                        self._skip_hole = True
                        return _HOLE
                except GtidStartError as e:
                    raise DumpError(e.text(), suffix=False) from e
            if self.tfilter is not None:
                self.tfilter.decide(mv[p:end], self.alg == BINLOG_CHECKSUM_ALG_CRC32)
            return int(self.table.lookup(typ, flags, bool(flags2 & 1)))
        if typ == GTID_LIST_EVENT and sk.until is not None:
            self._until_gtid_list(mv, p, end, base)
        if sk.in_skipped_group(mv, p, end, CRC_LEN if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else 0):
            self._skip_hole = True
            return _HOLE
        a = (self.table.flagged if flags & 0x8000 else self.table.normal)[typ]
        return _SEND if a == Action.PEEK_GTID else int(a)  # (PEEK_TABLES: the caller asks the table filter)

    @property
    def _crc_len(self) -> int:
        return CRC_LEN if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else 0

    def _until_gtid_list(self, mv: memoryview, p: int, end: int, base: int) -> None:
        """A GTID_LIST event read while an UNTIL is set: MariaDB reloads its until_binlog_state from it."""
        assert self.skipper is not None
        try:
            gtids, _flags = peek_gtid_list(mv, p, end - self._crc_len)
        except ValueError as e:
            self.last_event_pos = base + p
            self.last_byte = base + end
            raise DumpError(errors.CORRUPT_GTID_LIST) from e
        self.skipper.on_gtid_list(gtids)

    async def _send_fake_list(self, log_pos: int, why: str = "position_sync", gtids: list[Gtid] | None = None,
                              flags: int = 0) -> None:
        """A fake GTID_LIST at `log_pos` of the current file listing `gtids` (a GTID start: what MariaDB's
        until_binlog_state holds), or by default the file's GTID state there (its GTID_LIST plus the GTIDs since)."""
        if gtids is None:
            state = await asyncio.to_thread(self.store.gtid_state_at, self.file, log_pos)
            if state is None:  # the dump started at a position that is not an event boundary of the file
                log.warning("%s no GTID state at %s:%d; fake GTID_LIST not sent", self.label, self.file, log_pos)
                return
            gtids = state.as_list()
        checksum = self.alg == BINLOG_CHECKSUM_ALG_CRC32
        ev = fake_gtid_list(self.server_id, log_pos, gtids, checksum, flags)
        self._put_event(ev)
        self.stats.fakes += 1
        if self.ledger is not None:
            self._recs.append((self._fj, log_pos, log_pos, 1, 0, "fake", jstr(why), ev[4], 0x20, NULL, len(ev), 0))

    def _rewrite(self, action: int, ev: memoryview, pos: int) -> None:
        checksum = self.alg == BINLOG_CHECKSUM_ALG_CRC32
        try:
            if action == Action.DUMMY:
                self._put_event(dummy_event(ev, checksum), pos + len(ev))
                self.stats.dummies += 1
            elif action == Action.BEGIN:
                self._put_event(begin_event(ev, checksum), pos + len(ev))
                self.stats.begins += 1
            elif action == Action.RENAME:
                renamed = rename_db(ev, self._new_db, checksum)
                self._renamed_bytes += len(renamed) - len(ev)
                self._put_event(renamed)
        except RewriteError as e:
            self.last_event_pos = pos
            self.last_byte = pos + len(ev)
            typ = ev[4]
            if action == Action.BEGIN:
                msg = errors.GTID_TO_BEGIN_FAILED
            elif typ == 160:
                msg = errors.ANNOTATE_DUMMY_FAILED
            else:
                msg = errors.CHECKPOINT_DUMMY_FAILED
            raise DumpError(msg) from e
