"""Turning the upstream's dump stream into the upstream's own files, byte for byte (apart from the in-use flag).

Runs in the writer thread (every method does file I/O through `BinlogWriter`), one call at a time; a small batch
that only appends (`appends_only`) is fed on the event loop while no thread job runs. What arrives is what a 10.11
primary sends a file/pos replica: a fake ROTATE (artificial, log_pos 0) naming the file and position, that
file's FDE (its real one when the dump starts at 4, a copy with log_pos 0 when it resumes mid-file), then the
file's events in order, a real ROTATE at its end, and heartbeats when idle. Every stored event must start exactly
where the file ends (its header's log_pos minus its length): anything else is refused, never stored.

Events are collected in memory and handed to the writer as whole groups, one write and one commit per batch. What
is safe to commit, and what a crash leaves, follows the crash rules of `server.binlog.writer` (numbered there): a
commit only at a group end (1), a group larger than SPILL_BYTES written before its end and unpublished (1), a real
ROTATE published only with the file it names (3), and a resume from the committed end (7).
"""

from __future__ import annotations

import contextlib
import logging
import struct
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from binlogd.protocol import native
from binlogd.protocol.binlog_file import EVENT_HEADER, BinlogFormatError, fde_checksum_alg
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_IGNORABLE_F,
    ROTATE_EVENT,
)
from binlogd.protocol.dump_runs import MIN_PACKETS, EventRun, Ints, u32_at
from binlogd.protocol.groups import TRANSACTION_EDGES, GroupTracker
from binlogd.protocol.gtid import BinlogState, Gtid, format_gtid_list, peek_gtid

from ..expiry import PurgeRequest, choose_victims, file_mtime
from .status import ER_SLAVE_RELAY_LOG_WRITE_FAILURE, RelayStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

    from binlogd.server.binlog.writer import BinlogWriter

log = logging.getLogger("binlogd.relay")

SPILL_BYTES = 16 << 20
_ONE_BY_ONE = (HEARTBEAT_LOG_EVENT, ROTATE_EVENT, FORMAT_DESCRIPTION_EVENT)
# by type code: stored by the hot loop without further checks (known, and not one of the above)
_PLAIN = bytes(int(t in EVENT_TYPE_NAMES and t not in _ONE_BY_ONE) for t in range(256))
_PLAIN_NP = np.frombuffer(_PLAIN, np.uint8).astype(bool)
_EDGE_NP = np.array([t in TRANSACTION_EDGES for t in range(256)], dtype=bool)
_ZERO = np.zeros(1, dtype=np.int64)


class RelayError(Exception):
    """The upstream sent something binlogd must not store; `code`/`message` go to Last_IO_Errno/Error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class FilePosNeeded(RelayError):
    """A GTID-started dump cannot be stored byte for byte here (it starts another file than binlogd's active one,
    with the FDE's log_pos zeroed): the upstream loop resumes this time by file/pos from the stored end."""

    def __init__(self, why: str) -> None:
        super().__init__(0, why)


def _refuse(why: str) -> RelayError:
    # MariaDB's IO thread reports a refused event as ER_SLAVE_RELAY_LOG_WRITE_FAILURE with this prefix
    return RelayError(ER_SLAVE_RELAY_LOG_WRITE_FAILURE, f"Relay log write failure: could not queue event from master "
                      f"({why})")


def _joined(runs: Sequence[bytes | bytearray | EventRun]) -> list[bytes | bytearray | EventRun]:
    """Consecutive EventRuns of a batch as one (one copy, C speed): the per-run numpy costs are paid once per
    batch, whatever the size of the socket reads."""
    out: list[bytes | bytearray | EventRun] = []
    group: list[EventRun] = []
    for run in (*runs, None):
        if isinstance(run, EventRun):
            group.append(run)
            continue
        if len(group) > 1:
            offsets = np.cumsum([0] + [len(r.data) for r in group[:-1]])
            out.append(EventRun(b"".join(r.data for r in group),
                                np.concatenate([r.ends + off for r, off in zip(group, offsets.tolist(), strict=True)])))
        else:
            out.extend(group)
        group = []
        if run is not None:
            out.append(run)
    return out


def is_known_type(type_code: int, flags: int) -> bool:
    """Known to MariaDB 10.11 (its type list), or flagged IGNORABLE (a newer primary's optional event)."""
    return type_code in EVENT_TYPE_NAMES or bool(flags & LOG_EVENT_IGNORABLE_F)


class RelayStorage:
    """One per process; `begin()` at every (re)connect, `feed()` per batch of events, `abort()` on errors."""

    def __init__(self, writer: BinlogWriter, status: RelayStatus, state: BinlogState | None = None) -> None:
        self.w = writer
        self.status = status
        self.tracker = GroupTracker()
        self.buf = bytearray()  # received events not yet handed to the writer: whole groups, then an incomplete one
        self.complete = 0  # length of the whole groups at the start of `buf`
        self.spilled = False  # part of the current group is already in the file (uncommitted)
        # a real ROTATE written, unpublished until the file it names exists (crash rule 3); after recovery only such
        # a ROTATE can be left unpublished (rule 4)
        self.rotate_pending = writer.end != writer.committed
        self.last_ts = 0  # timestamp of the last whole group's last event (Seconds_Behind_Master)
        self.gtid_session = False
        self.first_rotate = True
        self.dedupe_until = 0  # GTID session: events ending at or before this are already stored
        self.file: str | None = writer.active
        self.end = writer.end if self.file else 0  # position after the last event received (incl. pending)
        self.new_file: str | None = None  # announced by a fake ROTATE, created by the FDE that follows
        # the new file's FDE, held until the event after it: a MariaDB file is created with its GTID_LIST (a GTID
        # start must never see the file without the GTID state it starts from)
        self.new_fde: bytes | None = None
        self.session_alg = BINLOG_CHECKSUM_ALG_CRC32
        self.alg: int | None = None
        self.state = state.copy() if state is not None else BinlogState()
        self._pending_gtids: list[Gtid] = []
        self.status.stored_file = self.file or ""
        self.status.stored_pos = self.end
        self.status.gtid_io_pos = format_gtid_list(self.state.current_pos())

    # --- session ---------------------------------------------------------------------------------------
    def resume_point(self) -> tuple[str, int]:
        """Where to ask the upstream to start: the end of what is stored and committed, or the upstream's first file.

        Written but uncommitted bytes (a spilled group, a closing ROTATE whose file does not exist yet, also after a
        crash) are dropped by `begin()`, so the upstream sends them again."""
        if self.file is None:
            return "", BIN_LOG_HEADER_SIZE
        return self.file, self.w.committed

    def begin(self, session_alg: int, gtid: bool = False) -> None:
        """A new dump: `session_alg` is the checksum the upstream announced (for events before the FDE); `gtid`
        when it was started with @slave_connect_state (the upstream then starts at the beginning of a file)."""
        self.abort()
        self.session_alg = session_alg
        self.gtid_session = gtid
        self.first_rotate = True
        self.dedupe_until = 0

    def gtid_pos(self) -> str:
        """The GTID position at the stored end (for @slave_connect_state)."""
        return format_gtid_list(self.state.current_pos())

    def abort(self) -> None:
        """Drop everything of an incomplete group (a dump that ended mid-group is resumed from the last commit)."""
        with contextlib.suppress(OSError):
            self._flush()  # whole groups received before the end are kept
        if self.buf or self.spilled:
            log.info("relay: dropping the incomplete group after %s:%d (%d byte(s) received)", self.file,
                     self.w.committed, self.end - self.w.committed)
        self.buf.clear()
        self.complete = 0
        if self.spilled or self.rotate_pending:
            self.status.stored_bytes -= self.w.end - self.w.committed
            self.w.discard()
            self.spilled = self.rotate_pending = False
        self.tracker.reset()
        self._pending_gtids.clear()
        self.new_file = self.new_fde = None
        self.end = self.w.end if self.file else 0
        self.status.read_pos = self.end
        self.status.caught_up = True

    def _flush(self) -> None:
        """Hand the whole groups received so far to the writer in one write, and commit unless a spilled group
        is still incomplete."""
        if self.complete:
            self.status.stored_bytes += self.complete
            self.w.write(memoryview(self.buf)[: self.complete])
            del self.buf[: self.complete]
            self.complete = 0
        if not self.spilled and not self.rotate_pending and self.w.end != self.w.committed:
            self.w.commit()
            self._published()

    def purge(self, req: PurgeRequest, in_use: set[str]) -> list[str]:
        """PURGE BINARY LOGS or expiry of stored files (the rule: `server.expiry.choose_victims`); the active file
        and the files a dump reads stay, and resuming from the stored end is unaffected."""
        victims = choose_victims(self.w.files(), req, in_use, file_mtime(self.w.directory))
        size = sum((self.w.directory / n).stat().st_size for n in victims if (self.w.directory / n).exists())
        self.w.purge(victims)
        self.status.stored_bytes -= size
        if victims:
            log.info("relay: purged %s", ", ".join(victims))
        return victims

    # --- events ----------------------------------------------------------------------------------------
    def appends_only(self, runs: Sequence[bytes | bytearray | EventRun], limit: int) -> bool:
        """Whether storing `runs` (at most `limit` bytes) only appends to the active file and publishes: no file to
        create, no rotation, no fsync (sync_binlog 0), no spill; every event a plain one or a heartbeat. Such a
        batch is a few write(2)s into the page cache, so the caller may store it on the event loop (`feed`
        there too) instead of hopping to the writer thread; anything else stays in that thread."""
        if (self.w.sync_binlog or self.file is None or self.new_file is not None or self.new_fde is not None
                or self.rotate_pending or self.spilled):
            return False
        size = 0
        for run in runs:
            data = run.data if isinstance(run, EventRun) else run
            size += len(data)
            if size > limit:
                return False
            p, n = 0, len(data)
            while p < n:
                if n - p < HEADER_LEN:
                    return False  # (refused in the writer thread, with its error)
                _, typ, _, length, _, _ = EVENT_HEADER.unpack_from(data, p)
                if not (_PLAIN[typ] or typ == HEARTBEAT_LOG_EVENT) or length < HEADER_LEN or p + length > n:
                    return False
                p += length
        return True

    def feed(self, runs: Sequence[bytes | bytearray | EventRun]) -> None:
        """Store a batch: each run holds whole events back to back (`ReplicationClient.event_runs()`: CRCs
        verified, header lengths checked; a single event is a run too). One write and one commit for its whole
        groups. A run whose event ends are known is stored in stretches (`_feed_indexed`)."""
        try:
            for run in _joined(runs):
                if isinstance(run, EventRun):
                    self._feed_indexed(run)
                else:
                    self._feed_run(run)
            self._flush()
        finally:
            self.status.read_pos = self.end
            self.status.caught_up = not self.buf and not self.spilled

    def _feed_run(self, data: bytes | bytearray | memoryview) -> None:
        """The hot loop: per event one header unpack, the group rule, and no copy of its own (the stored events
        of a run are appended to `buf` in slices between the events skipped or handled one by one)."""
        mv = memoryview(data)
        buf, tracker, status, pending = self.buf, self.tracker, self.status, self._pending_gtids
        crc = CRC_LEN if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else 0
        end, dedupe, plain = self.end, self.dedupe_until, self.new_file is None and self.file is not None
        n, p, run = len(data), 0, 0  # data[run:p]: stored events not yet copied into buf
        events = groups = 0
        try:
            while p < n:
                if n - p < HEADER_LEN:
                    raise _refuse(f"a torn event header ({n - p} bytes)")
                ts, typ, server_id, length, log_pos, flags = EVENT_HEADER.unpack_from(data, p)
                q = p + length
                if length < HEADER_LEN or q > n:
                    raise _refuse(f"event length {length} does not match the {n - p} bytes received")
                if not _PLAIN[typ] or flags & LOG_EVENT_ARTIFICIAL_F or log_pos <= dedupe or not plain:
                    buf += mv[run:p]
                    run = q
                    self.end = end  # the one-by-one rules read the stored end
                    keep = self._special(bytes(mv[p:q]), typ, server_id, log_pos, flags)
                    crc = CRC_LEN if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else 0
                    end, dedupe, plain = self.end, self.dedupe_until, self.new_file is None and self.file is not None
                    if not keep:
                        p = q
                        continue
                    run = p  # stored after all: part of the run again
                if log_pos - length != end:
                    raise _refuse(f"{EVENT_TYPE_NAMES.get(typ, typ)} event for {self.file}:{log_pos - length} but "
                                  f"the stored file ends at {end}")
                if typ == GTID_EVENT:
                    if length < HEADER_LEN + 13:
                        raise _refuse("GTID event too short")
                    d, s, seq, _ = peek_gtid(data, p)
                    pending.append(Gtid(d, s, seq))
                end = log_pos
                events += 1
                if tracker.feed(data, p, q, crc):
                    self.complete = len(buf) + q - run
                    self.spilled = False
                    groups += 1
                    self.last_ts = ts
                    for g in pending:
                        self.state.update(g)
                    pending.clear()
                elif len(buf) + q - run - self.complete >= SPILL_BYTES:
                    buf += mv[run:q]
                    run = q
                    status.stored_bytes += len(buf)
                    self.w.write(buf)
                    buf.clear()
                    self.complete = 0
                    self.spilled = True
                p = q
        finally:
            buf += mv[run:p]  # also on an error: the events before it are valid, their whole groups kept
            self.end = end
            status.events_stored += events
            status.groups_stored += groups

    def _feed_indexed(self, run: EventRun) -> None:
        """`_feed_run` for a run whose event ends are known: its headers read with numpy at once, and every
        stretch of MIN_PACKETS or more plain events that start where the stored file ends stored as a whole
        (`_store_stretch`); the events before, between and after such stretches (an FDE, a ROTATE, a heartbeat,
        a GTID start's duplicates, anything to refuse) go the one-by-one way, with its rules and errors."""
        data, ends = run.data, run.ends
        n = len(ends)
        if n < MIN_PACKETS:  # a few events (a quiet upstream: each transaction as it commits): numpy costs more
            self._feed_run(data)
            return
        starts = np.concatenate((_ZERO, ends[:-1]))
        typ = np.frombuffer(data, np.uint8)[starts + 4]
        plain = _PLAIN_NP[typ] & ~(np.frombuffer(data, np.uint8)[starts + 17] & LOG_EVENT_ARTIFICIAL_F).astype(bool)
        gtid = typ == GTID_EVENT
        plain &= ~gtid | (ends - starts >= HEADER_LEN + 13)
        log_pos = u32_at(data, starts + 13)
        mv = memoryview(data)
        i = 0
        while i < n:
            j = i
            if self.new_file is None and self.file is not None:
                ok = plain[i:] & (log_pos[i:] > self.dedupe_until) & (log_pos[i:] == ends[i:] - starts[i] + self.end)
                j = n if ok.all() else i + int(np.argmin(ok))
            if j - i >= MIN_PACKETS:
                self._store_stretch(data, starts, ends, typ, gtid, i, j)
                i = j
                continue
            k = n  # one by one: up to the next event that may start a stretch (past a GTID start's duplicates)
            if j < n:
                may = plain[j + 1 :] & (log_pos[j + 1 :] > self.dedupe_until)
                k = j + 1 + int(np.argmax(may)) if may.any() else n
            self._feed_run(mv[starts[i] : ends[k - 1]])
            i = k

    def _store_stretch(self, data: bytes, starts: Ints, ends: Ints, typ: npt.NDArray[np.uint8],
                       gtid: npt.NDArray[np.bool_], i: int, j: int) -> None:
        """Events i..j-1 of a run, all plain and in place: into `buf` with one copy, the group rule fed at
        transaction edges only (`GroupTracker.feed_run`), the GTIDs read where they are."""
        base = int(starts[i])
        crc = CRC_LEN if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else 0
        mv = memoryview(data)[base : int(ends[j - 1])]
        edges = None if native.dumpscan else np.flatnonzero(_EDGE_NP[typ[i:j]]).tolist()
        last, groups = self.tracker.feed_ends(data, ends, i, j, crc, edges)
        buf, pending = self.buf, self._pending_gtids
        at = np.flatnonzero(gtid[i:j])
        if last >= 0:
            for g in pending:
                self.state.update(g)
            pending.clear()
            done = at[at <= last]
            if len(done):
                g0 = starts[i + done]  # GTID bodies: seq_no (8 bytes), domain_id (4); server_id is the header's
                seq = (u32_at(data, g0 + HEADER_LEN).astype(np.uint64)
                       | (u32_at(data, g0 + HEADER_LEN + 4).astype(np.uint64) << np.uint64(32)))  # u64
                self.state.update_all(u32_at(data, g0 + HEADER_LEN + 8).tolist(), u32_at(data, g0 + 5).tolist(),
                                      seq.tolist())
            self.complete = len(buf) + int(ends[i + last]) - base
            self.spilled = False
            ts_at = int(starts[i + last]) - base
            self.last_ts = int.from_bytes(mv[ts_at : ts_at + 4], "little")
        for k in at[at > last].tolist():  # the unfinished group's GTID: its state waits for the group's end
            d_, s_, seq_no, _ = peek_gtid(mv, int(starts[i + k]) - base)
            pending.append(Gtid(d_, s_, seq_no))
        buf += mv
        self.end += len(mv)
        self.status.events_stored += j - i
        self.status.groups_stored += groups
        if len(buf) - self.complete >= SPILL_BYTES:
            self.status.stored_bytes += len(buf)
            self.w.write(buf)
            buf.clear()
            self.complete = 0
            self.spilled = True

    def _special(self, ev: bytes, typ: int, server_id: int, log_pos: int, flags: int) -> bool:
        """An event outside the hot loop's plain case, with the rules in their order; True when it is to be stored
        (a real ROTATE, an ignorable event of an unknown type)."""
        if typ == HEARTBEAT_LOG_EVENT:
            self.status.heartbeats += 1
            return False
        if typ == ROTATE_EVENT and (log_pos == 0 or flags & LOG_EVENT_ARTIFICIAL_F):
            self._fake_rotate(ev, server_id)
            return False
        if typ == FORMAT_DESCRIPTION_EVENT:
            self._fde(ev, log_pos)
            return False
        if self.new_fde is not None:
            fde, self.new_fde = self.new_fde, None
            if typ == GTID_LIST_EVENT and not flags & LOG_EVENT_ARTIFICIAL_F:
                if log_pos != BIN_LOG_HEADER_SIZE + len(fde) + len(ev):
                    raise _refuse(f"GTID_LIST of {self.new_file} with log_pos {log_pos}")
                self._start_file(fde + ev)
                return False
            self._start_file(fde)  # a file without GTID_LIST (an upstream before 10.0): stored as it comes
            return self._special(ev, typ, server_id, log_pos, flags)
        if self.new_file is not None:
            raise _refuse(f"{EVENT_TYPE_NAMES.get(typ, typ)} event before the format description of "
                          f"{self.new_file}")
        if self.file is None:
            raise _refuse("event before any ROTATE/format description")
        if not is_known_type(typ, flags):
            raise _refuse(f"unknown event type {typ} at {self.file}:{self.end}, not flagged ignorable")
        if flags & LOG_EVENT_ARTIFICIAL_F:
            return False  # generated by the upstream's dump thread, not part of its file
        keep = log_pos > self.dedupe_until  # a GTID start re-sends the start of the file: already stored
        if keep and typ == ROTATE_EVENT:
            self._flush()  # the whole groups before it are published now
            self.rotate_pending = True  # the ROTATE with the file it names (BinlogWriter.start_file)
        return keep

    def _published(self) -> None:
        st = self.status
        with st._lock:
            st.stored_file = self.file or ""
            st.stored_pos = self.w.committed
            st.gtid_io_pos = format_gtid_list(self.state.current_pos())
            st.last_event_ts = self.last_ts

    def _fake_rotate(self, ev: bytes, server_id: int) -> None:
        alg = self.session_alg if self.alg is None else self.alg  # as the client checked its CRC
        body_end = len(ev) - (CRC_LEN if alg == BINLOG_CHECKSUM_ALG_CRC32 else 0)
        if body_end < HEADER_LEN + 8:
            raise _refuse("ROTATE event too short")
        (pos,) = struct.unpack_from("<Q", ev, HEADER_LEN)
        name = ev[HEADER_LEN + 8 : body_end].decode("utf-8", "replace")
        if not name or "/" in name or name.startswith("."):
            raise _refuse(f"ROTATE to an unusable file name {name!r}")
        if len(self.buf) > self.complete or self.spilled:
            raise _refuse(f"ROTATE to {name} inside an event group of {self.file}")
        self.status.master_server_id = server_id
        self.status.master_log_file = name
        first, self.first_rotate = self.first_rotate, False
        if self.gtid_session and first and self.file is not None and name != self.file:
            raise FilePosNeeded(f"the GTID start is in {name}, binlogd's active file is {self.file}")
        self.dedupe_until = 0  # positions are per file
        self.new_fde = None
        if name == self.file:
            if self.gtid_session and first and pos <= self.end:
                self.dedupe_until = self.end
            elif pos != self.end:
                raise _refuse(f"upstream resumes {name} at {pos}, the stored file ends at {self.end}")
            self.new_file = None
        else:
            if pos != BIN_LOG_HEADER_SIZE:
                raise _refuse(f"upstream starts {name} at {pos}, which binlogd does not have from its start")
            if self.file is not None and name in self.w.files():
                raise _refuse(f"upstream goes back to {name}, which binlogd already stored")
            self.new_file = name
        self.status.read_pos = pos
        self.alg = None  # the FDE that follows says

    def _start_file(self, head: bytes) -> None:
        """Create the announced file with its head (FDE, and GTID_LIST when there is one), committed at once."""
        assert self.new_file is not None
        self._flush()  # the previous file's last groups (start_file drops uncommitted bytes)
        self.w.start_file(self.new_file, head)  # the previous file's ROTATE becomes readable with it
        self.rotate_pending = False
        self.status.stored_bytes += BIN_LOG_HEADER_SIZE + len(head)
        log.info("relay: new binlog file %s (from the upstream, checksum %s)", self.new_file,
                 "CRC32" if self.alg == BINLOG_CHECKSUM_ALG_CRC32 else "NONE")
        self.file, self.new_file = self.new_file, None
        self.end = self.w.end
        self.tracker.reset()
        self._published()
        self.status.read_pos = self.end

    def _fde(self, ev: bytes, log_pos: int) -> None:
        try:
            alg = fde_checksum_alg(ev)
        except BinlogFormatError as e:
            raise _refuse(str(e)) from None
        if self.new_file is not None:
            if log_pos == 0 and self.gtid_session:
                raise FilePosNeeded(f"the upstream sent {self.new_file}'s format description with log_pos 0")
            if log_pos != BIN_LOG_HEADER_SIZE + len(ev):
                raise _refuse(f"format description of {self.new_file} with log_pos {log_pos}")
            self.new_fde = ev
            self.alg = alg
            return
        if self.file is None:
            raise _refuse("format description before any ROTATE")
        stored_alg = self.w.store.head(self.file).checksum_alg
        if alg != stored_alg:
            raise _refuse(f"the upstream's {self.file} has checksum algorithm {alg}, the stored copy {stored_alg}")
        self.alg = alg
