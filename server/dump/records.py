"""The dump's audit-ledger records (docs/ledger.md), built only at the edges of runs.

The stream loop keeps a run as its start and counters; a record (a 12-field tuple, ledger.EvRecord) is built
here when a run closes, and handed over to the ledger right before its bytes are written.
"""

from __future__ import annotations

import json
import struct

from binlogd.protocol.constants import BIN_LOG_HEADER_SIZE, GTID_EVENT, HEADER_LEN
from binlogd.protocol.decision import Action

from ..ledger import NULL, EvRecord, Ledger, jstr
from ..transcode import kind
from .params import DumpParams, DumpStats

_ACTION_NAME = {int(Action.SEND): "sent", int(Action.HOLE): "hole", int(Action.DUMMY): "dummy",
                int(Action.BEGIN): "begin", int(Action.RENAME): "renamed"}
_NOT_IN_GROUPS = frozenset({3, 4, 15, 161, 163})  # STOP, ROTATE, FDE, BINLOG_CHECKPOINT, GTID_LIST: no `gtid`
_GTID_IDS = struct.Struct("<5xI10xQI")  # server_id, seq_no, domain_id of a GTID event (header + body start)
_PEEK = struct.Struct("<4xB4xI4xH")  # type, event_length, flags of an event header
_RUNS = frozenset({"sent", "hole", "dummy", "begin"})  # record actions that coalesce into runs


def _continues(a: EvRecord, b: EvRecord) -> bool:
    """`b` extends the run `a`: same file, action and why, starting where `a` ends (never an FDE at 4)."""
    return a[0] == b[0] and a[2] == b[1] and a[5] == b[5] and a[6] == b[6] and b[1] != BIN_LOG_HEADER_SIZE


def _join(a: EvRecord, b: EvRecord) -> EvRecord:
    """One record for the runs `a` then `b` (several events: no type, flags or gtid, as docs/ledger.md says)."""
    return (a[0], a[1], b[2], a[3] + b[3], a[4] + b[4], a[5], a[6], NULL, NULL, NULL, a[10] + b[10], a[11] + b[11])


class LedgerRecords:
    """The ledger side of a DumpStream (mixed into it): conn/close records and run records."""

    ledger: Ledger | None
    ledger_conn: int
    ledger_info: dict[str, object]
    p: DumpParams
    stats: DumpStats
    _recs: list[EvRecord]
    _tail: EvRecord | None

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


class Runs:
    """The ledger's open runs in one chunk being framed: the run of sends is only its start (run_p) and the counts
    there (run_sent, run_n: events sent as stored, all events), so events sent as stored cost nothing. Events a type
    rule of the connection withholds or rewrites (why "capability": ANNOTATE_ROWS, GTID -> BEGIN, ...) stay inside
    that run: its `policy` count comes from the counts, a policy hole adds its bytes to `pol_holes`, and the audit
    recomputes which events they were from the binlog and decide(). Events withheld for another reason
    (skip_replication, a GTID start, a table filter) coalesce likewise: the open run of them is `nw` events from
    nw_p to run_p with one (action, why). A record (a tuple) is built only when a run closes."""

    __slots__ = ("base", "chain", "d", "mv", "nw", "nw_a", "nw_flags", "nw_gtid", "nw_p", "nw_typ", "nw_why",
                 "pol_holes", "run_n", "run_p", "run_sent")

    def __init__(self, d: LedgerRecords, mv: memoryview, base: int, chain: bool) -> None:
        self.d, self.mv, self.base = d, mv, base
        self.chain = chain  # for an event at run_p == 0: was the event before this chunk not sent as is?
        self.pol_holes = self.run_p = self.run_sent = self.run_n = 0
        self.nw = self.nw_p = self.nw_typ = self.nw_flags = 0
        self.nw_a = self.nw_why = self.nw_gtid = NULL

    def withheld(self, p: int, end: int, action: str, why: str, typ: int, flags: int, sent: int, total: int) -> None:
        """The event at [p, end) was withheld or rewritten (`action`) for `why`; `sent`/`total` count it."""
        d = self.d
        if self.nw and p == self.run_p and why == self.nw_why and action == self.nw_a:
            self.nw += 1  # extends the open run
            if typ == GTID_EVENT:
                d._group_gtid(self.mv, p, typ, True)
        else:
            contiguous = p == self.run_p and (p > 0 or self.chain)
            self._close(p, total - 1 - self.run_n, sent)
            self.nw, self.nw_p, self.nw_a, self.nw_why, self.nw_typ, self.nw_flags = 1, p, action, why, typ, flags
            self.nw_gtid = d._group_gtid(self.mv, p, typ, contiguous)
        self.moved(end, sent, total)

    def extend(self, p: int, typ: int) -> None:
        """One more event at `p` in the open run of withheld events (same action and why)."""
        if typ == GTID_EVENT:
            self.d._group_gtid(self.mv, p, typ, True)
        self.nw += 1

    def moved(self, p: int, sent: int, total: int) -> None:
        """The run of sends starts at `p` now (after withheld events), with these counts before it."""
        self.run_p, self.run_sent, self.run_n = p, sent, total

    def close_all(self, p: int, sent: int, total: int) -> None:
        """Close both runs at `p` (a fake event is sent there, or the chunk ends)."""
        self._close(p, total - self.run_n, sent)
        self.moved(p, sent, total)

    def _close(self, p: int, count: int, sent: int) -> None:
        """The records of the open withheld run and of the run of `count` events from run_p to `p`."""
        if self.nw:
            self.d._close_withheld(self.base, self.nw_p, self.run_p, self.nw, self.nw_a, self.nw_why, self.nw_typ,
                                   self.nw_flags, self.nw_gtid)
            self.nw = 0
        self.d._close_run(self.mv, self.base, self.run_p, p, count, count - sent + self.run_sent, self.pol_holes)
        self.pol_holes = 0
