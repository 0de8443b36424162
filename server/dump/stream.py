"""One replica's COM_BINLOG_DUMP stream (MariaDB `mysql_binlog_send`, dump-protocol.md sections 4-7).

Per file: fake ROTATE, the FDE (fixed up), then every stored event through the decision table;
at the end of the active file: EOF for non-blocking dumps, else wait for the store to grow, with
heartbeats when idle. The event loop works on memoryviews of large file chunks and writes framed
packets into one output buffer (framing.py: runs of plain SENDs in C, the rest one event at a time).

Memory per dump is bounded (issue 12): file bytes come from the store's shared blocks (read once for all
dumps), framed chunks from its shared frame cache, and each chunk's framing goes to the transport whole with
back-pressure (uvloop keeps a view of what the socket does not take; asyncio's own loop, which copies, gets slices of
WRITE_SLICE), so a slow reader holds about one framed chunk. Each dump frames a SPAN of several shared blocks per
loop turn while few dumps run, MANY_SPAN when many do (read ahead in one thread hand-off while the previous span is
written; framed by the C loop where the blocks lie): the per-turn costs, not the bytes, were the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import struct
import time
from collections import deque
from collections.abc import Hashable

from binlogd.protocol import errors
from binlogd.protocol.binlog_file import BinlogFormatError, fde_checksum_alg
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    CAP_GTID,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    MAX_EVENT_SIZE,
    START_ENCRYPTION_EVENT,
)
from binlogd.protocol.decision import WHY_CAPABILITY, Action, Compat, DecisionTable, ReplicaPolicy
from binlogd.protocol.gtid import Gtid
from binlogd.protocol.io_cache import last_byte_read
from binlogd.protocol.packets import eof_packet, err_packet
from binlogd.protocol.repl_filters import FilterType
from binlogd.protocol.rewrite import (
    fake_gtid_list,
    fake_rotate,
    fix_fde,
    heartbeat,
)
from binlogd.protocol.table_filter import TableFilterStream

from ..binlog.store import BLOCK, BinlogStore
from ..fault_writer import FaultStop, FaultWriter
from ..faults import MAX_ERROR_TEXT
from ..gtid_start import GtidSkipper
from ..ledger import NULL, EvRecord, Ledger, jstr
from ..semisync import SemiSyncMaster
from ..transcode import TranscodeRefused, TranscodingWriter, target_algorithm
from . import pacing, sender
from .framing import _LEN, Blocks, FramedChunk, Framing, frames_of
from .params import DumpError, DumpParams, DumpStats, Writer
from .records import LedgerRecords
from .start import StartResolution
from .tail import Tailing

KILL_QUERY = 0  # kill()'s code for KILL QUERY: an EOF, no ERR


@functools.lru_cache(maxsize=256)
def _tables(policy: ReplicaPolicy) -> tuple[DecisionTable, tuple[str, ...], tuple[bool, ...], bytes, bytes]:
    """The decision table of `policy` and what the loops read of it, made once per policy (1 536 `decide`/`explain`
    calls: 1.5 ms that each of 200 dumps paid at its start): the table; its `why` as JSON text by its `reasons`
    index (type | 0x100 flagged | 0x200 standalone GTID); same index: whether the action is a type rule's (why
    "capability", so the event stays inside the run of sends); the table as bytes for the C loop (dump/_cframe.c),
    and the GTID event's answers by flagged << 1 | standalone for it.
    Shared by every dump of the policy, so nothing here may be written to once made (the lists are tuples)."""
    t = DecisionTable(policy)
    gtid = bytes(int(t.lookup(GTID_EVENT, 0x8000 if i & 2 else 0, bool(i & 1))) for i in range(4))
    return (t, tuple(jstr(w) for w in t.reasons), tuple(w == WHY_CAPABILITY for w in t.reasons),
            bytes(t.by_type_and_skip_flag), gtid)


def _check_open(w: object) -> None:
    """A peer gone between two slices is a lost connection: uvloop's drain() can return before the loss is
    delivered, and a write to its closed handle raises RuntimeError, which would read as an internal error.
    (`w` is the socket's StreamWriter, or a transcoding / fault stage in front of it: `inner` leads to it.)"""
    while (transport := getattr(w, "transport", None)) is None and (w := getattr(w, "inner", None)) is not None:
        pass
    if transport is not None and transport.is_closing():
        raise ConnectionResetError("the replica went away")

log = logging.getLogger("binlogd.dump")


def _keeps_views(loop: asyncio.AbstractEventLoop) -> bool:
    """Does this loop's transport keep a view of a write the socket did not take (uvloop), not a copy (asyncio)?"""
    return type(loop).__module__.startswith("uvloop")

# file bytes a dump frames per loop turn while few dumps run (MANY_SPAN when many do: memory): the per-turn Python
# (read, frame cache, write, drain), not the bytes, is what a dump costs. 1 MiB, not 512 KiB: half the turns, ~15 %
# less server CPU for 2 KB rows (2026-11-28/29); a span and its read-ahead fit in BlockCache
SPAN = 1 << 20
FEW_DUMPS = 8  # up to this many dumps running, each frames SPANs (at most ~2 SPANs held per dump while framing)
# with more: half a MiB per turn (8 shared blocks). A quarter was 1.6-1.9x the server CPU of half for 200 dumps; a
# whole MiB saved 4-12 % more but held ~35 KiB more per connection (2026-11-29). The framing is shared by the dumps
# of one setting, so what a dump holds beyond the shared caches stays one chunk's framing
MANY_SPAN = 8 * BLOCK
# the shared frame cache: how far apart dumps may be and still share one framing (and, taken before the read, one
# read) of a span. While few dumps run it may grow, as far as their evicted framings are wanted again, by up to
# FRAMES_PER_DUMP per dump (8 dumps of 2 KB rows, started as clients are, drifted apart by more than 8 MiB and each
# framed every span itself: 4.0 server CPU s, 1.8 with room to grow, MariaDB's 1.6, 2026-11-29); with many, the
# fixed 8 MiB (200 dumps: a connection's share of RSS stays ~190 KiB). The block cache stays 4 MiB: dumps that share
# a framing do not read its blocks.
FRAME_CACHE = 8 << 20
FRAMES_PER_DUMP = 8 << 20


def frame_cache_limit(running: int) -> int:
    """How far the frame cache may grow with `running` dumps: up to FEW_DUMPS, room per dump; more, FRAME_CACHE."""
    return FRAME_CACHE if running > FEW_DUMPS else max(FRAME_CACHE, running * FRAMES_PER_DUMP)


INLINE_READS = 1  # up to this many dumps running, a span the page cache holds is read on the event loop
WRITE_SLICE = 32 << 10  # most handed to asyncio's transport at once (it copies what the socket does not take)
ACKS_ASKED = 4096  # semi-sync: ack requests remembered per dump (an ack for an older one is ignored)


class DumpStream(Framing, LedgerRecords, StartResolution, Tailing):
    """Serves one COM_BINLOG_DUMP; `run()` returns when the dump ends (EOF, error, kill, peer gone)."""

    running = 0  # dumps running in this process (how much of a file each may frame at once: `_chunk`)

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
        self.table, self._whys, self._pol, self._acts, self._gacts = _tables(self.policy)
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
        self._skip_hole = False  # the last _gtid_start_decide HOLE was a group the replica has
        # the ledger's `gtid` of withheld events: the GTID of the last GTID event not sent as stored, valid while
        # no event has been sent since when this replica may get GTID events as stored (capability 4)
        self._gtid: str | None = None  # as JSON text
        self._chain = False  # the last event processed was not sent as stored
        t = self.table
        self.tc: TranscodingWriter | None = None  # checksum transcoding (server/transcode.py), set by _serve
        self._tc_start = (params.pos, 0, params.pos)  # first file: file position, events before it, stream position
        self._whole = False  # writes go whole to the transport (`_write`; set when the dump runs, from its loop)
        self._fan_fd: int | None = None  # the socket's descriptor for the fan-out's writes (`_raw_fd`)
        self._keeps_up = True  # the socket took the last big write whole: the next may go to the sender thread
        self._paced: bool | None = None  # TCP_NOTSENT_LOWAT on the socket (pacing.py); None: not set yet
        self.fast_loop = True  # the C loop when it is built (tests turn it off to compare with the Python loop)
        self._gtid_sent = Action.SEND in (t.lookup(GTID_EVENT, 0, False), t.lookup(GTID_EVENT, 0, True),
                                          t.lookup(GTID_EVENT, 0x8000, False), t.lookup(GTID_EVENT, 0x8000, True))

    def kill(self, code: int, message: str) -> None:
        """End the dump from outside (a newer dump with the same server_id): the replica gets ERR `code`."""
        self._kill = (code, message)
        if self._task is not None:
            self._task.cancel()

    def end_by_kill_query(self) -> None:
        """KILL QUERY of this dump's connection: the dump ends as at its end, with an EOF (MariaDB's dump loop
        stops when its thread is killed and answers EOF; `mariadb-binlog --stop-never` exits 0)."""
        self.kill(KILL_QUERY, "KILL QUERY")

    async def run(self) -> None:
        self._task = asyncio.current_task()
        self._whole = _keeps_views(asyncio.get_running_loop())
        if self.ledger is not None:
            self.ledger_conn = self.ledger.new_conn()
        st = self.stats
        err: tuple[int, str] | None = None
        DumpStream.running += 1
        self._size_caches()
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
            log.info("%s dump killed: %s", self.label, msg)
            self.out = bytearray()
            self._recs = []  # not sent
            if code == KILL_QUERY:  # an EOF where the wire is between packets (else the connection just closes)
                if self._boundary_seq is not None:
                    self.seq = self._boundary_seq
                    self._put_packet(eof_packet())
                    with contextlib.suppress(ConnectionError, OSError, DumpError):
                        await self._flush()
            else:
                err = (code, msg)
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
            DumpStream.running -= 1
            self._size_caches()
            if self.tc is not None and st.close_reason != "fault":  # (a fault's count is the socket's already)
                st.bytes_sent = self.tc.written
            if self.ledger is not None:
                self._ledger_close(err)

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
        text = errors.internal_error(e)
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

    async def _write(self, data: bytes | bytearray | memoryview) -> None:
        """Send `data` whole, one write and one drain, on uvloop (it keeps a view of what the socket does not take,
        not a copy: a slow reader holds nothing beyond the framing it was given) or while few dumps run (sixteen
        turns of write/drain per span cost more than the bytes). On asyncio's own loop, whose transport copies what
        the socket does not take, in slices with a drain between them: a slow reader makes the server hold one
        slice plus the transport's high-water mark, not a whole framed chunk copied again.
        Through --faults the data goes whole (the fault writer cuts and counts packets per write)."""
        self._count_write(data)
        w = self.writer
        self._pace()
        if data:
            self._boundary_seq = data[3]  # a write that raises before taking anything leaves the wire here
        if len(data) >= sender.OFFLOAD_MIN and (out := self._sender()) is not None:
            taken = await self._send_off_loop(out, data)
            if taken == len(data):
                self._boundary_seq = self.seq
                return
            self._keeps_up = False  # a reader slower than the server: the thread would wait on it as the loop does
            if taken:
                data = memoryview(data)[taken:]  # the rest through the transport, with its back-pressure
                self._boundary_seq = None
        if len(data) <= WRITE_SLICE or self.fault is not None or self._whole or DumpStream.running <= FEW_DUMPS:
            _check_open(w)
            w.write(data)
            self._boundary_seq = None
            if type(w) is not asyncio.StreamWriter or w.transport.get_write_buffer_size():
                await w.drain()
            elif len(data) >= sender.OFFLOAD_MIN:
                self._keeps_up = True  # the socket took a big write whole: the next may go to the sender thread
            # else the socket took it all: drain() would return at once (nothing buffered, so no pause); a peer
            # gone is seen by the next write's _check_open, as between slices
        else:
            mv = memoryview(data)
            for i in range(0, len(data), WRITE_SLICE):
                _check_open(w)
                w.write(mv[i:i + WRITE_SLICE])
                self._boundary_seq = None
                await w.drain()
        self._boundary_seq = self.seq

    def _pace(self) -> None:
        """Hold little unsent in the socket while few dumps run, no limit while more do (pacing.py): set or cleared
        when the number of dumps crosses PACED_DUMPS (checked at each write)."""
        paced = DumpStream.running <= pacing.PACED_DUMPS
        if paced is self._paced:
            return
        self._paced = paced
        w = self.writer
        sock = w.transport.get_extra_info("socket") if type(w) is asyncio.StreamWriter else None
        if sock is not None:
            pacing.pace(sock, paced)

    def _sender(self) -> sender.Sender | None:
        """The sender thread for a big write (sender.py), or None: the write goes on the loop. Only with other dumps
        running, to a plain socket (no fault stage, no TLS) whose transport holds nothing (its bytes go first) and
        that took the last big write whole (a reader slower than the server sets the pace either way: its hand-offs
        would be pure cost)."""
        if not (self._keeps_up and sender.enabled) or self.fault is not None:
            return None
        if DumpStream.running < sender.OFFLOAD_DUMPS:
            return None
        w = self.writer
        if type(w) is not asyncio.StreamWriter:
            return None
        transport = w.transport
        if transport.is_closing() or transport.get_write_buffer_size() or self._raw_fd() < 0:
            return None
        return sender.for_loop(asyncio.get_running_loop())

    async def _send_off_loop(self, out: sender.Sender, data: bytes | bytearray) -> int:
        """What the socket took of `data` from the sender thread (0: nothing yet, or no descriptor to spare). A
        cancelled dump (KILL) waits for the thread's send to end before anything else is written to the socket, and
        `_boundary_seq` then says where the wire is. A failed send closes the connection."""
        try:
            fut = out.send(self._raw_fd(), data)
        except OSError as e:
            log.debug("%s sender thread not used: %s", self.label, e)
            return 0
        try:
            taken = await asyncio.shield(fut)
        except asyncio.CancelledError:
            await asyncio.wait([fut])
            done = fut.result()
            if done == len(data):
                self._boundary_seq = self.seq
            elif done > 0:
                self._boundary_seq = None  # inside a packet: the connection just closes
            raise
        self.stats.thread_writes += 1
        if taken == -errno.EAGAIN:
            return 0
        if taken < 0:
            self.writer.transport.abort()
            raise ConnectionResetError(os.strerror(-taken))
        return taken

    def _count_write(self, data: bytes | bytearray | memoryview) -> None:
        self.stats.bytes_sent += len(data)
        self.stats.last_event_at = time.monotonic()  # per write, not per event (a heartbeat's is undone in _wait)

    def _fan_in_eligible(self) -> bool:
        """Can a group's leader serve this dump (tail.py)? Its framing comes from the shared frame cache and goes whole
        to a plain socket writer: no transcoding or fault stage, no partial event pending, a blocking dump, room in
        the ledger (else its own turn waits for it)."""
        return (self.tc is None and self.fault is None and not self._need and not self.p.non_blocking
                and self._shares_frames() and type(self.writer) is asyncio.StreamWriter
                and (self.ledger is None or not self.ledger.full))

    def _writable(self, size: int) -> bool:
        """Can `size` framed bytes go to the socket at once, as `_write` would send them without waiting? Only when
        the transport holds nothing (a reader that has not taken the last bytes gets its own turn, which drains) and
        `_write` would not slice them."""
        transport = self.writer.transport
        return (not transport.is_closing() and not transport.get_write_buffer_size()
                and (size <= WRITE_SLICE or self._whole or DumpStream.running <= FEW_DUMPS))

    def _raw_fd(self) -> int:
        """The socket's descriptor for the fan-out's own writes (tail.py), or -1: through --tls the bytes must go
        through the transport (it encrypts)."""
        fd = self._fan_fd
        if fd is None:
            transport = self.writer.transport
            sock = transport.get_extra_info("socket")
            fd = -1 if sock is None or transport.get_extra_info("ssl_object") is not None else sock.fileno()
            self._fan_fd = fd
        return fd

    def _write_now(self, data: bytes | bytearray, written: int) -> None:
        """`_write` for a fan-in (`_writable` checked), of which the fan-out wrote `written` bytes to the socket
        itself (-errno: it failed): the same counts, the rest to the transport, no drain. A socket whose send
        failed (the peer went away, or an unknown state) is closed: its bytes are never written twice."""
        self._count_write(data)
        self._pace()  # (for its next writes: these are in the socket already, or go to the transport)
        transport = self.writer.transport
        if written < 0 and written != -errno.EAGAIN:
            log.info("%s replica went away: %s", self.label, os.strerror(-written))
            transport.abort()
        elif written < len(data):
            transport.write(memoryview(data)[written:] if written > 0 else data)
        self._boundary_seq = self.seq

    def _start_transcoding(self) -> None:
        """Checksum transcoding for this client (server/transcode.py): a stage that rewrites what the dump writes."""
        p = self.p
        try:
            target = target_algorithm(p.checksum_aware, p.first_rotate_crc, p.add_checksums, p.compat is Compat.MARIADB)
        except TranscodeRefused as e:
            raise DumpError(str(e), suffix=False) from e
        if target is not None and self.semi is not None:  # the stage rewrites plain event packets only
            raise DumpError(errors.NO_TRANSCODE_SEMI_SYNC, suffix=False)
        if target is not None and p.table_filters is not None and FilterType.REWRITE_DB in p.table_filters.rules:
            raise DumpError(errors.NO_TRANSCODE_REWRITE_DB, suffix=False)
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

    def _size_caches(self) -> None:
        """Let the store's frame cache grow as far as the dumps running now may use (`frame_cache_limit`)."""
        frames_of(self.store).resize(frame_cache_limit(DumpStream.running))

    def _wants_position_sync(self) -> bool:
        """binlogd extension: fake GTID_LISTs over trailing holes, for blocking capability-4 replicas."""
        return (self.policy.capability >= CAP_GTID and not self.p.non_blocking
                and self.policy.compat is Compat.BINLOGD)

    async def _stream(self, fd: int, name: str, pos: int) -> None:
        """Send the events of `name` from `pos`; returns at the end of a closed file (or a non-blocking end)."""
        self.pos = pos
        ino = os.fstat(fd).st_ino
        try:
            await self._stream_from(fd, name, ino, pos)
        finally:
            self._wake_followers()  # (a leader that ends before its turn framed: its group takes turns of its own)

    async def _stream_from(self, fd: int, name: str, ino: int, pos: int) -> None:
        store = self.store
        final = False  # seen rotated: the whole file is readable
        while True:
            self._turn = None
            version = store.version  # before the read: a change after it must wake the wait below
            cap = None if final else store.published_end(name)  # binlogd's own writer: only what it published
            end = os.fstat(fd).st_size if cap is None else cap
            # another dump's framing of this span from the same state: no read, no framing
            hit = self._framed_span(ino, pos, end) if end > pos else None
            data = await self._chunk(fd, ino, pos, end) if end > pos and hit is None else b""
            if self.tc is not None and data:
                if isinstance(data, Blocks):  # (the stage reads the chunk: joined once, for it and the framing)
                    data = data.join()
                self.tc.feed(name, data, pos)  # before its packets are written: the stage maps their positions
            if self.out or self._recs:
                await self._flush()
            if hit is not None:
                consumed, framed = self._take_framed(hit, pos)
            else:
                consumed, framed = await self._frame_chunk(ino, data, pos) if data else (0, b"")
            del data  # the shared block is not held while the packets are written
            if self._followers is not None:  # woken as a group's leader: the group takes this framing (tail.py)
                self._serve_followers(pos)
            if framed:
                await self._write(framed)  # records of these bytes were handed over with them
            del framed
            pos += consumed
            if self.out or self._recs:
                await self._flush()
            if self._done:  # START SLAVE UNTIL reached
                return
            if consumed and (pos < end or cap is None or self.p.non_blocking or store.version != version):
                continue  # more may follow right away
            # (at the end binlogd's writer published, with no change since: the next turn would read nothing and
            # wait, so a dump woken for one transaction goes straight back to waiting; a publication not yet
            # bumped ends the wait at once)
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
            if await self._wait(version, name, pos + tail, ino):
                pos = self.pos  # a group's leader moved it on meanwhile (tail.py)

    def _last_byte_read(self, fd: int, failed_at: int, size: int) -> int:
        """Where MariaDB's dump thread would say it stopped reading this file (its IO_CACHE replayed)."""
        return last_byte_read(lambda p, n: os.pread(fd, n, p), size, self._file_start, failed_at)

    @staticmethod
    def _span() -> int:
        """File bytes a dump frames per loop turn now: SPAN, MANY_SPAN when more than FEW_DUMPS dumps run."""
        return SPAN if DumpStream.running <= FEW_DUMPS else MANY_SPAN

    def _span_stop(self, pos: int, end: int) -> int:
        """Where the span `_chunk` reads from `pos` ends: `_span()` from the start of `pos`'s block, or `end` (the
        readable end) before that."""
        return min(end, pos - pos % BLOCK + self._span())

    def _framed_span(self, ino: int, pos: int, end: int) -> FramedChunk | None:
        """The framing of the span `_chunk` would read at `pos`, when another dump in the same state made it: found
        by its key before the read (the key is the bytes' range and the state), so a dump in step with others reads
        and frames nothing (200 dumps of four settings: each span framed four times, the rest take it over). Only
        spans (they are the same for every dump at `pos`), and not for a transcoding stage (it reads the chunk)."""
        if self.tc is not None or not self._shares_frames():
            return None
        stop = self._span_stop(pos, end)
        if stop <= pos - pos % BLOCK + BLOCK:
            return None
        cache, key = self._frame_key(ino, pos, stop - pos)
        return cache.peek(key)

    async def _chunk(self, fd: int, ino: int, pos: int, end: int) -> bytes | memoryview | Blocks:
        """What to frame next from `pos` (< `end`, the readable end): the bytes from `pos` to the end of the SPAN
        (MANY_SPAN when more than FEW_DUMPS dumps run) that starts at `pos`'s block, left in the store's shared
        blocks (`Blocks`, read with one thread hand-off; joined only by a dump that frames them outside the C loop).
        When the event at `pos` does not fit in it: a view of the shared block holding `pos`, up to the block's end;
        or, when the event at `pos` crosses that end, this event alone (joined from the shared blocks when it ends
        in the next one, else read for this dump)."""
        b0 = pos - pos % BLOCK
        span = self._span()
        stop = min(end, b0 + span)
        if stop > b0 + BLOCK:
            keys, lengths = self._run(ino, b0, stop)
            # a dump running alone reads on the loop when the page cache holds the span (the thread hand-off cost
            # more than the copy); with others, reads stay in threads, where the dumps waiting for one read advance
            # in step and share its framing (inline reads: 8 dumps of 2 KB rows 1.9x the CPU, 2026-11-29; 200
            # dumps 1.75x, commit 3357746)
            now = self.store.blocks.read_now(keys, lengths, fd, b0) if DumpStream.running <= INLINE_READS else None
            blks = now if now is not None else await self.store.blocks.read_run(keys, lengths, fd, b0)
            if now is None and stop < end:  # the next span is read while this one is framed and written
                nxt = min(end, stop + span)
                last = nxt - 1 - (nxt - 1) % BLOCK
                # unless a dump in step already asked for it (its last block cached or in flight): dumps that advance
                # together each built and checked the span's keys for nothing
                if not self.store.blocks.known((self.store.generation, ino, last, min(BLOCK, nxt - last))):
                    self.store.blocks.start_run(*self._run(ino, stop, nxt), fd, stop)
            # left in the shared blocks: the C loop frames them where they lie (no join: a copy less); the other
            # paths join them only when they frame (a dump that finds the span's framing cached never does)
            data = Blocks((memoryview(blks[0])[pos - b0:], *blks[1:]))
            head = data.join(0, HEADER_LEN)
            if len(head) >= HEADER_LEN:
                (evlen,) = _LEN.unpack_from(head)
                if evlen <= len(data) or evlen < HEADER_LEN or evlen > MAX_EVENT_SIZE:
                    return data  # (a bogus length is reported by _process)
        length = min(BLOCK, end - b0)
        blk = self.store.blocks.cached((self.store.generation, ino, b0, length))
        if blk is None:
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

    def _run(self, ino: int, b0: int, stop: int) -> tuple[list[Hashable], list[int]]:
        """The shared blocks' keys and lengths from `b0` (a block start) to `stop`."""
        starts = range(b0, stop, BLOCK)
        lengths = [min(BLOCK, stop - b) for b in starts]
        gen = self.store.generation
        return [(gen, ino, b, n) for b, n in zip(starts, lengths, strict=True)], lengths

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

    async def _wait(self, version: int, name: str, known_end: int, ino: int) -> bool:
        """Wait for the store to change; heartbeat every period while nothing arrives. At the published end of the
        active file the dump parks in its group (tail.py), whose leader may move it on meanwhile: True then (its
        position is `self.pos`)."""
        period = self.p.heartbeat_ns / 1e9 if self.p.heartbeat_ns > 0 else None
        moved = False
        while True:
            if self.store.version != version or not self.store.is_active(name):
                return moved
            at = self.pos
            key = self._tail_key(ino, at) if at == known_end and self.store.published_end(name) == at else None
            if key is None:
                new = await self.store.wait_change(version, period)
                if new != version or self.store.end_of(name) > known_end:
                    return moved
            else:
                due = await self._park(key, period)
                moved = moved or self.pos != at
                if not due or self.store.end_of(name) > self.pos:
                    return moved
            if period is not None and self.store.is_active(name):
                self._put_event(heartbeat(self.server_id, name, self.pos, self.alg == BINLOG_CHECKSUM_ALG_CRC32))
                self.stats.heartbeats += 1
                last = self.stats.last_event_at
                await self._flush()
                self.stats.last_event_at = last
            if moved:
                return moved

    async def _maybe_sync_position(self) -> None:
        """binlogd extension: when the last events before the end were withheld, a fake GTID_LIST with
        log_pos = the end moves a capability-4 replica's Read/Exec_Master_Log_Pos up to the primary's end
        (MariaDB's replica treats fake GTID_LISTs as position updates; MariaDB itself leaves it behind)."""
        if self.sent_upto >= self.pos or not self._wants_position_sync():
            return
        await self._send_fake_list(self.pos)
        self.sent_upto = self.pos
        await self._flush()

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
