"""The hot loop: decide and frame the events of one chunk, and the frame cache shared by all dumps of a store.

Dumps that read the same bytes at the same offset with the same policy, checksum algorithm and packet sequence id
produce the same packets: the first frames the chunk, the others send its bytes (FrameCache).
"""

from __future__ import annotations

import struct
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from binlogd.protocol import errors
from binlogd.protocol.binlog_file import check_event_length
from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    GTID_EVENT,
    GTID_LIST_EVENT,
    GTID_LIST_FLAG_UNTIL_REACHED,
    HEADER_LEN,
    MAX_EVENT_SIZE,
    MAX_PACKET_PAYLOAD,
)
from binlogd.protocol.decision import Action, explain
from binlogd.protocol.gtid import Gtid, peek_gtid, peek_gtid_list
from binlogd.protocol.packets import frame
from binlogd.protocol.rewrite import RewriteError, begin_event, dummy_event
from binlogd.protocol.semisync import event_prefix
from binlogd.protocol.table_filter import rename_db

from ..binlog.store import BinlogStore
from ..gtid_start import GtidStartError
from ..ledger import jstr
from .params import DumpError, DumpParams, DumpStats
from .records import _ACTION_NAME, _PEEK, Runs

try:  # the inner loop for runs of sends, in C (server/dump/_cframe.c); the Python loop below does the same without it
    from ._cframe import frame_sends
except ImportError:  # not built (no compiler at install time): same bytes, more CPU per event
    frame_sends = None

_LEN = struct.Struct("<9xI")  # event_length in an event header
_PKT = struct.Struct("<IB")  # packet header + the 0x00 OK byte of an event packet
_SEND, _HOLE, _PEEK_GTID = int(Action.SEND), int(Action.HOLE), int(Action.PEEK_GTID)
_PEEK_TABLES, _RENAME = int(Action.PEEK_TABLES), int(Action.RENAME)
_BIG = MAX_PACKET_PAYLOAD - 1  # an event this long needs several MySQL packets (general path)
GTID_POST_HEADER_LEN = 19  # a GTID event's post-header (MariaDB's Gtid_log_event::POST_HEADER_LENGTH)


class Blocks:
    """A chunk left in the store's shared blocks: `parts` read as their concatenation (the first a view from the
    dump's position). The C loop frames them where they lie; joining them first was a second copy of every byte
    of a span (issue 12: 2 KB rows cost 2.5-2.9x MariaDB's CPU per event). Only what the C loop leaves (normally
    the event that continues in the next span) is joined, for the Python path."""

    __slots__ = ("n", "parts")

    def __init__(self, parts: tuple[bytes | memoryview, ...]) -> None:
        self.parts = tuple(b for b in parts if len(b))
        self.n = sum(len(b) for b in self.parts)

    def __len__(self) -> int:
        return self.n

    def join(self, start: int = 0, stop: int | None = None) -> bytes:
        """The bytes [start, stop) of the concatenation."""
        stop = self.n if stop is None else min(stop, self.n)
        out: list[bytes | memoryview] = []
        at = 0
        for b in self.parts:
            nxt = at + len(b)
            if nxt > start and at < stop:
                out.append(memoryview(b)[max(0, start - at):min(len(b), stop - at)])
            at = nxt
        return b"".join(out)


@dataclass(frozen=True, slots=True)
class FramedChunk:
    """The packets one dump made of one chunk of a file, and what they did (for `FrameCache`)."""

    framed: bytes | bytearray  # a bytearray no one writes to once framed
    consumed: int
    seq_after: int
    sent: int
    read: int
    holes: int
    dummies: int
    begins: int
    sent_end: int  # offset in the chunk after the last event sent, -1 if none
    need: int
    # audit ledger (docs/ledger.md): the chunk's records and the dump's group tracking after it
    records: tuple[Any, ...] = ()
    gtid_out: str | None = None
    chain_out: bool = False


RESEQ_MAX = 4 << 10  # framed bytes up to which a chunk framed at another sequence id is copied and renumbered


def reseq(item: FramedChunk, seq_before: int, seq: int) -> FramedChunk | None:
    """`item` (framed from sequence id `seq_before`) as framed from `seq`: the same packets, renumbered (the packets
    of a cached chunk are numbered one after the other: semi-sync dumps, which restart, never share); None if they
    were not (then the dump frames the chunk itself)."""
    out = bytearray(item.framed)
    off, n, s = 0, len(out), seq
    while off + 4 <= n:
        out[off + 3] = s
        s = (s + 1) & 0xFF
        off += 4 + (out[off] | out[off + 1] << 8 | out[off + 2] << 16)
    if off != n or s != (item.seq_after - seq_before + seq) & 0xFF:
        return None
    return FramedChunk(out, item.consumed, s, item.sent, item.read, item.holes, item.dummies, item.begins,
                       item.sent_end, item.need, item.records, item.gtid_out, item.chain_out)


class FrameCache:
    """The most recently framed chunks, shared by all dumps of a store, bounded in bytes (chunks holding an
    event of several MiB are not kept).

    Keys are `(generation, ino, pos, length, seq, ...)`. Dumps that follow the end of a file get each transaction
    as a small chunk, and their sequence ids differ wherever their heartbeats did (each dump's own timer): a small
    chunk framed at another sequence id is found by the key without it (`any`) and renumbered, which costs a copy
    of a few hundred bytes instead of a framing per dump and transaction."""

    SEQ_AT = 4  # the sequence id's place in a key
    GROW = 4 << 20  # bytes the bound grows by when an evicted chunk is wanted again (up to `limit`)
    GHOSTS = 512  # evicted keys remembered (to see that they are wanted again)

    def __init__(self, max_bytes: int = 8 << 20, max_item: int = 4 << 20) -> None:
        self.max_bytes = self.floor = self.limit = max_bytes
        self.max_item = max_item
        # keys of chunks evicted lately: a miss on one of them means dumps that frame the same chunks are further
        # apart than the cache holds, and each frames them again (`resize` lets it grow then)
        self._ghosts: OrderedDict[Hashable, None] = OrderedDict()
        self._items: OrderedDict[Hashable, FramedChunk] = OrderedDict()
        # small chunks by their key without the sequence id: (the sequence id they were framed from, the chunk)
        self._any: dict[tuple[Any, ...], tuple[int, FramedChunk]] = {}
        self._bytes = 0
        self.hits = self.misses = self.renumbered = 0

    def peek(self, key: tuple[Any, ...]) -> FramedChunk | None:
        """`get` before the chunk is read: a hit counts, a miss does not (the lookup after the read counts it)."""
        item = self._items.get(key)
        if item is not None:
            self.hits += 1
            self._items.move_to_end(key)
        return item

    def get(self, key: tuple[Any, ...]) -> FramedChunk | None:
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            if self.max_bytes < self.limit and key in self._ghosts:  # framed, evicted, wanted again
                del self._ghosts[key]
                self.max_bytes = min(self.limit, self.max_bytes + self.GROW)
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return item

    def any(self, key: tuple[Any, ...]) -> FramedChunk | None:
        """After a miss: the chunk of `key` framed at another sequence id and renumbered (then kept under `key`), if
        a small one is cached."""
        at = self.SEQ_AT
        found = self._any.get(key[:at] + key[at + 1:])
        if found is None:
            return None
        item = reseq(found[1], found[0], key[at])
        if item is None:
            return None
        self.renumbered += 1
        self.put(key, item)
        return item

    def resize(self, limit: int) -> None:
        """Let the cache grow up to `limit` bytes when its evicted chunks are wanted again (it starts at, and never
        goes below, its first bound); at once down to it when `limit` is less (the oldest framings go)."""
        self.limit = max(self.floor, limit)
        if self.max_bytes > self.limit:
            self.max_bytes = self.limit
            self._evict()

    def put(self, key: tuple[Any, ...], item: FramedChunk) -> None:
        if len(item.framed) > self.max_item or key in self._items:
            return
        self._items[key] = item
        self._bytes += len(item.framed)
        at = self.SEQ_AT
        if len(item.framed) <= RESEQ_MAX:
            self._any.setdefault(key[:at] + key[at + 1:], (key[at], item))
        self._evict()

    def _evict(self) -> None:
        at = self.SEQ_AT
        ghosts = self._ghosts
        while self._bytes > self.max_bytes and self._items:
            old_key, old = self._items.popitem(last=False)
            self._bytes -= len(old.framed)
            if self.max_bytes < self.limit:
                ghosts[old_key] = None
                if len(ghosts) > self.GHOSTS:
                    ghosts.popitem(last=False)
            any_key = old_key[:at] + old_key[at + 1:]
            if (found := self._any.get(any_key)) is not None and found[1] is old:
                del self._any[any_key]



_CACHES: weakref.WeakKeyDictionary[BinlogStore, FrameCache] = weakref.WeakKeyDictionary()


def frames_of(store: BinlogStore) -> FrameCache:
    """The frame cache shared by the dumps of `store`."""
    cache = _CACHES.get(store)
    if cache is None:
        cache = _CACHES[store] = FrameCache()
    return cache


class _Counts:
    """What one chunk's framing did so far (the inner loop keeps its own counts on locals and adds them here)."""

    __slots__ = ("events", "holes", "p", "sent", "sent_end")

    def __init__(self) -> None:
        self.sent = self.holes = self.events = self.p = 0  # events: rewritten (dummy, BEGIN, renamed)
        self.sent_end = -1  # end offset (in the chunk) of the last event the replica got

    @property
    def total(self) -> int:
        return self.sent + self.holes + self.events


_POLICY_KEYS: dict[Any, int] = {}


def _policy_key(policy: Hashable) -> int:
    """A small int standing for `policy` in frame cache keys: the dataclass's generated hash, in Python, was paid at
    every chunk of every dump."""
    return _POLICY_KEYS.setdefault(policy, len(_POLICY_KEYS))


class Framing:
    """The framing side of a DumpStream (mixed into it)."""

    p: DumpParams
    store: BinlogStore
    stats: DumpStats
    _frames: FrameCache | None = None  # frames_of(store), looked up at the first chunk
    _pkey = -1  # _policy_key(policy), with _frames

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

    async def _frame_chunk(self, ino: int, data: bytes | memoryview | Blocks, pos: int
                           ) -> tuple[int, bytes | bytearray]:
        """Frame one chunk read at `pos`, or reuse the framing another dump in the same state already made.

        Dumps that read the same bytes at the same offset with the same policy, checksum algorithm and packet
        sequence id produce the same packets (N `mariadb-binlog -R` clients, replicas catching up from the
        same place): the first frames the chunk, the others send its bytes.
        """
        if not self._shares_frames():
            return await self._process(data, pos), b""  # (its packets are in self.out)
        cache, key = self._frame_key(ino, pos, len(data))
        hit = cache.get(key)
        if hit is None:
            hit = cache.any(key)
        if hit is not None:
            return self._take_framed(hit, pos)
        st = self.stats
        before = (st.events_sent, st.events_read, st.holes, st.dummies, st.begins, self.sent_upto)
        nrec = len(self._recs)
        consumed = await self._process(data, pos)
        framed, self.out = self.out, bytearray()  # never written to again: shared as it is (no copy)
        cache.put(key, FramedChunk(
            framed=framed, consumed=consumed, seq_after=self.seq, sent=st.events_sent - before[0],
            read=st.events_read - before[1], holes=st.holes - before[2], dummies=st.dummies - before[3],
            begins=st.begins - before[4], sent_end=self.sent_upto - pos if self.sent_upto != before[5] else -1,
            need=self._need, records=tuple(self._recs[nrec:]), gtid_out=self._gtid, chain_out=self._chain))
        if self._recs:
            self._hand_over()
        return consumed, framed  # the cached object itself: no second copy of this dump's framing

    def _shares_frames(self) -> bool:
        """Does this dump's framing go through the shared frame cache? Not with a filter (a GTID start's skipper,
        a table filter: their own state) nor for semi-sync (its packets ask for acks)."""
        return self.skipper is None and self.semi is None and self.tfilter is None

    def _frame_key(self, ino: int, pos: int, length: int) -> tuple[FrameCache, tuple[Any, ...]]:
        """The frame cache and the key of the `length` bytes at `pos` framed from this dump's state: the same bytes
        from the same state make the same packets, whichever path read them."""
        cache = self._frames
        if cache is None:  # (looked up once per dump: a WeakKeyDictionary lookup per chunk showed in profiles)
            cache = self._frames = frames_of(self.store)
            self._pkey = _policy_key(self.policy)
        gstate = (self._gtid, self._chain)  # the ledger's group tracking
        self._turn = (ino, pos, length)  # what a leader's followers look up after its turn (tail.py)
        return cache, (self.store.generation, ino, pos, length, self.seq, self._pkey, self.alg, gstate)

    def _take_framed(self, hit: FramedChunk, pos: int) -> tuple[int, bytes | bytearray]:
        """Take over another dump's framing of the chunk at `pos`: its packets (shared, immutable: no copy), its
        counts and its ledger records."""
        st = self.stats
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
        return hit.consumed, hit.framed

    def _frames_blocks(self) -> bool:
        """Can the C loop frame a chunk left in shared blocks (`Blocks`) for this dump? Not with the ledger (its runs
        read the chunk), a pending GTID start or semi-sync (every event in Python), nor through a transcoding stage
        (it reads the chunk too)."""
        return (self.fast_loop and frame_sends is not None and self.ledger is None and self.skipper is None
                and self.semi is None and self.tc is None)

    async def _process_blocks(self, blocks: Blocks, base: int) -> int:
        """`_process` for a chunk left in shared blocks (`_chunk` makes them only for a dump the C loop frames alone:
        see `_frames_blocks`): the C loop frames its run of sends and holes
        across the blocks, and `_process` takes what it leaves, joined (the event continuing in the next span, or
        from the first event the loop does not handle to the chunk's end)."""
        assert frame_sends is not None
        p, self.seq, k, h, e, d, b = frame_sends(blocks.parts, 0, self._acts, self.seq, self.out, True, self._gacts,
                                                 self.alg == BINLOG_CHECKSUM_ALG_CRC32)
        st = self.stats
        st.events_sent += k
        st.events_read += k + h + d + b
        st.holes += h
        if d or b:
            self._count_rewritten(d, b)
        if k or d or b:
            self.sent_upto = base + e
        return p + await self._process(blocks.join(p), base + p)

    def _count_rewritten(self, dummies: int, begins: int) -> None:
        """The dummies and BEGINs the C loop framed, counted as `_rewrite` counts its own (each is an event sent)."""
        st = self.stats
        st.events_sent += dummies + begins
        st.dummies += dummies
        st.begins += begins

    async def _process(self, buf: bytes | memoryview | Blocks, base: int) -> int:
        """Decide and frame every whole event in `buf` (file offset `base`); return the bytes consumed.

        The inner loop handles runs of events sent as stored or left out: one header peek, one table
        lookup, a 5-byte packet header and one copy into the output buffer, all on locals. Anything else (a
        rewrite, a GTID start position still pending, an incomplete or > 16 MiB event) goes to `_general`, one
        event at a time. The ledger's bookkeeping is `Runs`' (records.py): events sent as stored cost it nothing.
        The output of one chunk (at most a SPAN of file) is flushed by the caller.
        """
        if isinstance(buf, Blocks):
            if self._frames_blocks():
                return await self._process_blocks(buf, base)
            buf = buf.join()
        mv = memoryview(buf)
        n = len(buf)
        last = n - HEADER_LEN
        p = 0
        out = self.out
        actions = self.table.by_type_and_skip_flag
        fast = frame_sends if self.fast_loop else None
        acts = self._acts
        # the C loop also makes the same-length rewrites (dummies, BEGINs) without the ledger (with it, they are
        # withheld records of their own: _general)
        gacts = self._gacts if self.ledger is None else b""
        crc = self.alg == BINLOG_CHECKSUM_ALG_CRC32
        peek = _PEEK.unpack_from
        pack = _PKT.pack
        c = self._counts = _Counts()
        self._need = 0
        runs = Runs(self, mv, base, self._chain) if self.ledger is not None else None
        whys = self._whys
        pol = self._pol
        try:
            while p <= last:
                if self.skipper is None and self.semi is None:
                    seq = self.seq
                    sent = holes = 0
                    sent_end = c.sent_end
                    while p <= last:
                        if fast is not None:  # the run of sends (and holes, without a ledger) from p, in C
                            p, seq, k, h, e, d, b = fast(mv, p, acts, seq, out, runs is None, gacts, crc)
                            if k or d or b:
                                sent += k
                                sent_end = e
                                if d or b:
                                    c.events += d + b
                                    self._count_rewritten(d, b)
                            holes += h
                            if p > last:
                                break
                        typ, length, flags = peek(mv, p)
                        end = p + length
                        if end > n or length < HEADER_LEN or length >= _BIG:  # > 16 MiB: several packets
                            break
                        i = typ | (flags >> 7 & 0x100)
                        a = actions[i]
                        if not a:
                            out += pack((length + 1) | (seq << 24), 0)
                            out += mv[p:end]
                            seq = (seq + 1) & 0xFF
                            p = sent_end = end
                            sent += 1
                            continue
                        if a != _HOLE:
                            break
                        holes += 1
                        if runs is not None:  # holes coalesce (never any cost per event sent)
                            if pol[i]:  # a type rule: part of the run of sends
                                runs.pol_holes += length
                            else:
                                c.sent += sent
                                c.holes += holes
                                sent = holes = 0
                                w = whys[i]
                                runs.withheld(p, end, "hole", w, typ, flags, c.sent, c.total)
                                p = end
                                while p <= last:  # the holes that extend this run (a skipped group): no bookkeeping
                                    typ, length, flags = peek(mv, p)
                                    end = p + length
                                    if end > n or length < HEADER_LEN or length >= _BIG:
                                        break
                                    i = typ | (flags >> 7 & 0x100)
                                    if actions[i] != _HOLE or whys[i] != w:
                                        break
                                    runs.extend(p, typ)
                                    c.holes += 1
                                    p = end
                                runs.moved(p, c.sent, c.total)
                                continue
                        p = end
                    self.seq = seq
                    c.sent += sent
                    c.sent_end = sent_end
                    c.holes += holes
                    if p > last:
                        break
                done = await self._general(mv, p, base, runs)
                p = c.p
                if done:
                    break
        finally:
            if runs is not None:
                chain = runs.run_p == p  # the last event was not sent as stored
                runs.close_all(p, c.sent, c.total)  # runs never cross a chunk end
                if p:
                    self._chain = chain
            st = self.stats
            st.events_sent += c.sent
            st.events_read += c.total
            st.holes += c.holes
            if c.sent_end >= 0:
                self.sent_upto = base + c.sent_end
        self.pos = base + p
        self.last_event_pos = self.last_byte = base + p
        return p

    async def _general(self, mv: memoryview, p: int, base: int, runs: Runs | None) -> bool:
        """One event at `p` the inner loop left (rewrites, a pending GTID start, table filters, semi-sync, > 16 MiB
        events); sets `_counts.p` past it and returns True when the chunk ends here (incomplete event, UNTIL)."""
        c = self._counts
        c.p = p
        typ, length, flags = _PEEK.unpack_from(mv, p)
        end = p + length
        if length < HEADER_LEN or length > MAX_EVENT_SIZE:
            self.last_event_pos = base + p
            self.last_byte = base + p + HEADER_LEN
            raise DumpError(check_event_length(length) or errors.READ_BOGUS)
        if end > mv.nbytes:
            self._need = length
            return True
        self._skip_hole = False
        self._twhy = None
        if self.skipper is not None:
            a = self._gtid_start_decide(mv, p, end, typ, flags, base)
        else:
            a = (self.table.flagged if flags & 0x8000 else self.table.normal)[typ]
            if a == _PEEK_GTID:
                a = self._gtid_action(mv, p, end, flags, base)
        if a == _PEEK_TABLES:
            a = self._table_action(mv, p, end, typ, flags, base)
        if a == _SEND:
            if self.semi is not None:
                self.seq = self._frame_semi(mv[p:end], base + end, self.seq, self.out)
            else:
                self.seq = frame(b"\0" + bytes(mv[p:end]), self.seq, self.out)  # may split a > 16 MiB event
            c.sent += 1
            c.sent_end = end
        elif a != _HOLE:
            self._rewrite(a, mv[p:end], base + p)
            c.sent_end = end
            c.events += 1
        else:
            c.holes += 1
        if runs is not None and a != _SEND:
            i = typ | (flags >> 7 & 0x100)
            if typ == GTID_EVENT and end - p > HEADER_LEN + 12 and mv[p + HEADER_LEN + 12] & 1:
                i |= 0x200  # a standalone GTID
            if self._pol[i] and not self._skip_hole and self._twhy is None:  # a type rule: in the run of sends
                if a == _HOLE:
                    runs.pol_holes += length
                if typ == GTID_EVENT:
                    self._gtid = None  # a new group, its GTID not looked at (explicit records say null)
            else:
                w = '"gtid_start"' if self._skip_hole else self._twhy or self._whys[i]
                runs.withheld(p, end, _ACTION_NAME[a], w, typ, flags, c.sent, c.total)
        c.p = p = end
        for why, gtids, flags in self._fake_lists_due(mv, p, length):
            if runs is not None:
                runs.close_all(p, c.sent, c.total)
            await self._send_fake_list(base + p, why, gtids, flags)
            c.sent_end = p
            if why == "gtid_until":
                self._done = True  # MariaDB ends the dump here (EOF), blocking or not
                return True
        return False

    def _fake_lists_due(self, mv: memoryview, p: int, length: int) -> list[tuple[str, list[Gtid], int]]:
        """The one home of the fake GTID_LISTs the GTID skipper asks for after the event ending at `p`: the start
        position reached ("gtid_start": the replica's state so far), and START SLAVE UNTIL reached ("gtid_until",
        which ends the dump). The third trigger, "position_sync" over trailing holes, is the stream's
        (`_maybe_sync_position`): it fires only at the end of the binlog."""
        sk = self.skipper
        due: list[tuple[str, list[Gtid], int]] = []
        if sk is None:
            return due
        if sk.take_fake_list():
            due.append(("gtid_start", sk.seen.as_list(), 0))
            if sk.done:
                self.skipper = None  # start position reached: back to the plain loop
                return due
        if sk.until_reached(mv, p - length, p, self._crc_len):
            due.append(("gtid_until", sk.seen.as_list(), GTID_LIST_FLAG_UNTIL_REACHED))
        return due

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
