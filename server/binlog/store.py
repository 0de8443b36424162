"""The read side of the binlog: which files exist, how far each is readable, the GTID state, and wake-ups.

Readers (dump streams, SHOW statements) ask the store which files exist, how far each is readable (the end
`BinlogWriter` last published for the file it appends to: nothing it has not committed is ever read), and wait on it
for growth. Sources that append (standalone, relay) publish through `server.binlog.writer`; the read-only directory
source watches the files itself (`DirectoryWatcher`: an external writer, e.g. a copy in progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from binlogd.protocol import native
from binlogd.protocol.binlog_file import EVENT_HEADER, BinlogFormatError, check_event_length, fde_checksum_alg, scan
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_MAGIC,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
)
from binlogd.protocol.gtid import BinlogState, Gtid, peek_gtid, peek_gtid_list

from .index import NUMBERED, IndexReader

log = logging.getLogger("binlogd.store")

class StoreError(Exception):
    """The directory cannot be served (no binlogs, unreadable index, mixed base names...)."""


@dataclass(frozen=True, slots=True)
class FileHead:
    """What the start of a binlog file says: its checksum algorithm, FDE end and first GTID_LIST."""

    checksum_alg: int
    fde_end: int
    gtid_list: list[Gtid] | None  # None for a file without GTID_LIST (pre-10.0)
    complete: bool = True  # False: the active file holds only its FDE so far (what follows is not known yet)


BLOCK = 64 << 10  # file bytes per shared read (BlockCache); also the most a dump frames before writing


_NOWAIT = getattr(os, "RWF_NOWAIT", 0)  # preadv2 flag: read only what the page cache holds, never wait for the disk


def _pread_tail(fd: int, length: int, start: int, ours: bool) -> bytes | None:
    """The `length` bytes at `start`, read on the event loop when that cannot wait for the disk, else None (read them
    in a thread): when the page cache holds them all (preadv2 RWF_NOWAIT), or, where the file system cannot tell
    (tmpfs), when binlogd's own writer just wrote them (`ours`: pages written moments ago are in the page cache)."""
    if _NOWAIT:
        buf = bytearray(length)
        cached = _read_cached(fd, [buf], start)
        if cached is not None:
            return bytes(buf) if cached else None
        # not supported here (tmpfs): plain reads of our own bytes from now on
    if not ours:
        return None
    data = os.pread(fd, length, start)
    return data if len(data) == length else None


def _read_cached(fd: int, bufs: list[bytearray], start: int) -> bool | None:
    """Fill `bufs` from `start` only from the page cache (preadv2 RWF_NOWAIT): True when they are filled, False when
    the pages are not all cached, None when this file system cannot tell (then never asked again)."""
    global _NOWAIT
    try:
        got = os.preadv(fd, bufs, start, _NOWAIT)
    except BlockingIOError:  # (EAGAIN) not all cached
        return False
    except OSError:  # not supported here (tmpfs)
        _NOWAIT = 0
        return None
    return got == sum(len(b) for b in bufs)  # (short: partly cached)


def _pread_blocks(fd: int, where: list[tuple[int, int]]) -> list[bytes]:
    """Blocks (start, length) read in one worker thread; after a short read (the file's end) the rest are empty."""
    try:
        out: list[bytes] = []
        short = False
        for start, n in where:
            b = b"" if short else os.pread(fd, n, start)
            short = len(b) < n
            out.append(b)
        return out
    finally:
        os.close(fd)


class BlockCache:
    """File bytes read once for all dumps: aligned blocks of BLOCK bytes, bounded in bytes (LRU).

    200 dumps of one file read each block once between them (a read in flight is awaited, not repeated), and
    hold only views of the shared blocks, never copies of their own. A block is keyed with its length: the last
    block of a growing file is another entry once more of it is readable.
    """

    def __init__(self, max_bytes: int = 4 << 20) -> None:
        self.max_bytes = max_bytes
        self.ours = False  # binlogd's writer appends to these files (BinlogStore.own_names): their tails are fresh
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        # blocks being read: the read (one worker thread's, for a run of blocks) and the block's index in its result
        self._inflight: dict[Hashable, tuple[asyncio.Future[list[bytes]], int]] = {}
        self._bytes = 0
        self.hits = self.misses = 0

    def cached(self, key: Hashable) -> bytes | None:
        """The block `key` names when it is cached (no coroutine: 20 dumps woken for one transaction all find the
        tail block here, read once by the first)."""
        item = self._items.get(key)
        if item is not None:
            self.hits += 1
            self._items.move_to_end(key)
        return item

    def known(self, key: Hashable) -> bool:
        """Is the block `key` names cached or being read?"""
        return key in self._items or key in self._inflight

    async def read(self, key: Hashable, fd: int, start: int, length: int) -> bytes:
        """The `length` bytes at `start` of `fd` (`key` names them: file identity, start and length)."""
        item = self.cached(key)
        if item is not None:
            return item
        got = self._inflight.get(key)
        if got is None:
            self.misses += 1
            if length < BLOCK:
                # the growing end of a file (what a writer just published, in the page cache): read on the loop,
                # since a thread hand-off delays every dump waiting at the end by the hop. Whole blocks (a dump
                # catching up) stay in threads: read there, the dumps that wait for a block advance in step and
                # share its framing (inline reads of whole blocks cost 200 dumps 1.75x the CPU, commit 3357746)
                data = _pread_tail(fd, length, start, self.ours)
                if data is not None:
                    self._keep(key, data)
                    return data
            got = (self._start_read(fd, [(start, length)], [key]), 0)
        return await _block_of(*got)

    def read_now(self, keys: list[Hashable], lengths: list[int], fd: int, start: int) -> list[bytes] | None:
        """`read_run` on the event loop, without a thread hand-off, when the page cache holds every block it must
        read (one preadv2 RWF_NOWAIT for them; a dump that catches up reads what was just written or read). None
        when it cannot tell, a block is in flight, or the pages are not all cached: then `read_run`.
        Measured (2 KB rows, one client, py-spy --gil): the hand-off to the read thread was a quarter of the event
        loop's time, the copy from the page cache itself a few per cent."""
        if not _NOWAIT:
            return None
        items = self._items
        out: list[bytes | None] = []
        first = -1  # the blocks to read: one contiguous run from `first`
        n_miss = 0
        for i, key in enumerate(keys):
            item = items.get(key)
            if item is None:
                if key in self._inflight or (first >= 0 and first + n_miss != i):
                    return None
                if first < 0:
                    first = i
                n_miss += 1
            out.append(item)
        hits = [key for key, item in zip(keys, out, strict=True) if item is not None]
        if n_miss:
            bufs = [bytearray(n) for n in lengths[first:first + n_miss]]
            if not _read_cached(fd, bufs, start + sum(lengths[:first])):  # not all cached: the thread reads them
                return None
            self.misses += n_miss
            for i, buf in enumerate(bufs, first):  # (kept as read: a bytearray no one writes to, as `bytes`)
                out[i] = buf  # type: ignore[call-overload]
                self._keep(keys[i], buf)  # type: ignore[arg-type]
        for key in hits:
            self.hits += 1
            if key in items:  # (unless the blocks just kept pushed it out)
                items.move_to_end(key)
        return out  # type: ignore[return-value]

    async def read_run(self, keys: list[Hashable], lengths: list[int], fd: int, start: int) -> list[bytes]:
        """Consecutive blocks from `start` (block i: `lengths[i]` bytes, named `keys[i]`): as `read` for each, but
        the ones neither cached nor in flight are read in one worker thread, so a dump reading alone
        pays one thread hand-off per run of blocks, not one per block (issue 12)."""
        out: list[bytes] = []
        for part in self.start_run(keys, lengths, fd, start):
            out.append(part if type(part) is not tuple else await _block_of(*part))  # type: ignore[misc]
        return out

    def start_run(self, keys: list[Hashable], lengths: list[int], fd: int, start: int
                  ) -> list[bytes | tuple[asyncio.Future[list[bytes]], int]]:
        """`read_run` without waiting: each block, or the read it lands with and its index there (a read ahead
        while the dump writes what it framed: the next `read_run` finds its blocks cached or in flight). One future
        and one callback per read, not per block: 16 per span were a third of a lone dump's interpreter time."""
        parts: list[bytes | tuple[asyncio.Future[list[bytes]], int] | None] = []
        mine: list[Hashable] = []  # the blocks this call reads
        where: list[tuple[int, int]] = []
        at = start
        items, inflight = self._items, self._inflight
        for key, n in zip(keys, lengths, strict=True):
            item = items.get(key)
            if item is not None:
                self.hits += 1
                items.move_to_end(key)
                parts.append(item)
            elif (got := inflight.get(key)) is not None:
                parts.append(got)
            else:
                self.misses += 1
                mine.append(key)
                where.append((at, n))
                parts.append(None)
            at += n
        if mine:
            read = self._start_read(fd, where, mine)
            j = 0
            for i, part in enumerate(parts):
                if part is None:
                    parts[i] = (read, j)
                    j += 1
        return parts  # type: ignore[return-value]

    def _start_read(self, fd: int, where: list[tuple[int, int]], keys: list[Hashable]) -> asyncio.Future[list[bytes]]:
        """Read the blocks `where` names in one worker thread (on a duplicate of the descriptor: the dump that asked
        may close its own before the read ends); they are in flight until it lands, then cached."""
        read = asyncio.ensure_future(asyncio.to_thread(_pread_blocks, os.dup(fd), where))
        for i, key in enumerate(keys):
            self._inflight[key] = (read, i)
        read.add_done_callback(functools.partial(self._landed, keys))
        return read

    def _landed(self, keys: list[Hashable], read: asyncio.Future[list[bytes]]) -> None:
        for key in keys:
            if (got := self._inflight.get(key)) is not None and got[0] is read:
                del self._inflight[key]
        if read.cancelled() or read.exception() is not None:
            return
        for key, data in zip(keys, read.result(), strict=True):
            self._keep(key, data)

    def _keep(self, key: Hashable, data: bytes) -> None:
        self._items[key] = data
        self._bytes += len(data)
        while self._bytes > self.max_bytes and self._items:
            _, old = self._items.popitem(last=False)
            self._bytes -= len(old)


async def _block_of(read: asyncio.Future[list[bytes]], i: int) -> bytes:
    """Block `i` of a read in flight (shielded: a dump cancelled while waiting must not cancel the read the others
    wait on)."""
    if read.done():
        return read.result()[i]
    return (await asyncio.shield(read))[i]


_BEFORE_GTID_LIST = frozenset((ROTATE_EVENT, STOP_EVENT, FORMAT_DESCRIPTION_EVENT, START_ENCRYPTION_EVENT))


def _head_span(data: bytes) -> int:
    """How much of a file's first bytes is its head: up to the end of the first event after the FDE that is not
    ROTATE/STOP/FDE/START_ENCRYPTION (where the GTID_LIST is looked for, as MariaDB reads no further), or to the
    first impossible length. A damaged event later in the file is the dump's to report, when it gets there."""
    p = BIN_LOG_HEADER_SIZE
    first = True
    while len(data) - p >= HEADER_LEN:
        length = int.from_bytes(data[p + 9 : p + 13], "little")
        if length < HEADER_LEN or p + length > len(data):
            return p
        typ = data[p + 4]
        p += length
        if not first and typ not in _BEFORE_GTID_LIST:
            break
        first = False
    return p


STATES_AT = 8  # files whose GTID state at a position `gtid_state_at` keeps


def _walk_gtids(data: bytes, state: BinlogState) -> tuple[int, int]:
    """`_dumpscan.gtid_walk` in Python, for when it is not built: the GTIDs of the whole events of `data` added to
    `state` as they come; (where the last whole event ends, the offset of an impossible event length or -1)."""
    peek, p, n = EVENT_HEADER.unpack_from, 0, len(data)
    while n - p >= HEADER_LEN:
        _, typ, _, length, _, _ = peek(data, p)
        if check_event_length(length) is not None:
            return p, p
        if p + length > n:
            break
        if typ == GTID_EVENT and length >= HEADER_LEN + 13:
            d, sid, seq, _ = peek_gtid(data, p)
            state.update(Gtid(d, sid, seq))
        p += length
    return p, -1


def _wake(fut: asyncio.Future[None]) -> None:
    """A `wait_change` timer: the waiter's time is up (unless a change came first)."""
    if not fut.done():
        fut.set_result(None)


class BinlogStore:
    """The binlog files dump streams read: a directory plus its index.

    Read-only sources (a directory someone else writes) are watched by `DirectoryWatcher`; binlogd's own writer
    (`server.binlog.writer`) publishes the committed end of the active file with `publish()`, so dumps never read
    bytes of a group still being written, and wakes them at once.
    """

    def __init__(self, directory: Path, basename: str | None = None, allow_empty: bool = False) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise StoreError(f"binlog directory {self.directory} does not exist")
        if allow_empty and not basename:
            raise StoreError("an empty store needs its basename")
        self.allow_empty = allow_empty
        self.basename = basename or self._guess_basename()
        self.index_path = self.directory / f"{self.basename}.index"
        self._index = IndexReader(self.directory, self.basename, self.index_path)
        # the waiters of `wait_change`, one future each, resolved at the next change (a set: a waiter that timed out
        # leaves it at once, so an idle store's heartbeating dumps leave nothing behind)
        self._waiters: set[asyncio.Future[None]] = set()
        self._version = 0
        self._heads: dict[str, FileHead] = {}
        self._state_cache: tuple[str, int, BinlogState] | None = None
        self._state_lock = threading.Lock()
        # per file, the GTID state at the furthest event boundary `gtid_state_at` reached (STATES_AT files): dumps
        # asking for the state at the end of the active file (position syncs) scan only what was appended since;
        # 20 dumps that each scanned a 45 MB file from its start stalled the loop (the GIL) for half a second
        self._states_at: dict[str, tuple[int, BinlogState]] = {}
        self.blocks = BlockCache()
        # bumped by anything that deletes or rewrites bytes already in a file (`replaced`: a purge, a watched directory
        # whose files shrank or went): part of the shared blocks' and the dump frame cache's keys, which otherwise
        # rely on files being append-only and on inodes not being reused
        self.generation = 0
        self._published: tuple[str, int] | None = None  # (active file, committed end) when binlogd writes
        # the names as binlogd's writer last wrote them to the index (`own_names`): None when another process may
        # write the directory, and the index is read again whenever it changed (`IndexReader`)
        self._names: tuple[str, ...] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # the bound loop's thread, learnt at its first `_bump` (until then every publish takes the thread-safe way);
        # a plain ident compare, as asyncio.get_running_loop() costs a getpid(2) per call
        self._loop_thread: int | None = None
        self._bump_due = False  # a `_bump` is scheduled on the loop by the loop itself: the next publish joins it
        self.files()  # fail early on an unusable directory

    # --- inventory ---------------------------------------------------------------------------------
    def _guess_basename(self) -> str:
        indexes = sorted(p.stem for p in self.directory.glob("*.index"))
        if len(indexes) == 1:
            return indexes[0]
        bases = sorted({m["base"] for p in self.directory.iterdir() if (m := NUMBERED.match(p.name))})
        if len(bases) == 1:
            return bases[0]
        if not bases:
            raise StoreError(f"no binlog files (NAME.000001 ...) in {self.directory}")
        raise StoreError(f"several binlog base names in {self.directory}: {', '.join(bases)}; pass --basename")

    def files(self) -> list[str]:
        """Binlog file names in index order (the index when present, else numbered files)."""
        owned = self._names
        names = list(owned) if owned is not None else self._index.names()
        if not names and not self.allow_empty:
            raise StoreError(f"no binlog files named {self.basename}.NNNNNN in {self.directory}")
        return names

    def own_names(self, names: list[str]) -> None:
        """binlogd's writer owns the index: `names` is what it holds now (set by the writer right after each rewrite
        of the index, so readers see a new file exactly when they would have read it there). Every dump asks
        `is_active()` at each wake-up: with 20 dumps the index read per call was a tenth of the relay's CPU."""
        self._names = tuple(names)
        self.blocks.ours = True

    def path(self, name: str) -> Path:
        return self.directory / name

    def has(self, name: str) -> bool:
        return name in self.files()

    def active(self) -> str:
        names = self.files()
        if not names:
            raise StoreError("Binary log is not open")
        return names[-1]

    def next_file(self, name: str) -> str | None:
        names = self.files()
        try:
            i = names.index(name)
        except ValueError:
            return None
        return names[i + 1] if i + 1 < len(names) else None

    def published_end(self, name: str) -> int | None:
        """How far dumps may read `name`: the last publication when binlogd's writer is appending to it (bytes after
        it are an unfinished group or a closing ROTATE whose file is not in the index yet), else None (its size)."""
        pub = self._published
        return pub[1] if pub is not None and pub[0] == name else None

    def end_of(self, name: str) -> int:
        """Readable end of a file: its size, or the committed end of the file binlogd is writing."""
        pub = self.published_end(name)
        if pub is not None:
            return pub
        try:
            size = self.path(name).stat().st_size
        except FileNotFoundError:
            return 0
        return size

    def is_active(self, name: str) -> bool:
        return name == self.active()

    # --- file heads ----------------------------------------------------------------------------------
    def head(self, name: str) -> FileHead:
        """FDE and first GTID_LIST of a file (cached: a file's head never changes once written)."""
        cached = self._heads.get(name)
        if cached is not None:
            return cached
        closed = not self.is_active(name)  # before the read: a closed file's bytes are final
        with open(self.path(name), "rb") as f:
            data = f.read(64 * 1024)
        if data[:4] != BINLOG_MAGIC:
            raise BinlogFormatError(f"{name} is not a binlog file (bad magic)")
        res = scan(data[: _head_span(data)])
        if not res.events or res.events[0].type_code != FORMAT_DESCRIPTION_EVENT:
            raise BinlogFormatError("Failed to find format descriptor event in start of binlog")
        fde = res.events[0]
        alg = fde_checksum_alg(data[fde.pos : fde.end])
        gl: list[Gtid] | None = None
        complete = False
        for ev in res.events[1:]:
            if ev.type_code in _BEFORE_GTID_LIST:
                continue
            if ev.type_code == GTID_LIST_EVENT:
                gl, _ = peek_gtid_list(data, ev.pos, ev.end - (4 if alg else 0))
            complete = True
            break
        if not complete and closed:
            complete = True  # a closed file that ends after its FDE: it has no GTID_LIST
        h = FileHead(alg, fde.end, gl, complete)
        if complete:
            self._heads[name] = h
        return h

    def _add_gtids(self, name: str, start: int, end: int, state: BinlogState) -> int:
        """Add the GTIDs of the whole events in [start, end) of `name` to `state`; return where the last of them ends
        (`start` when none is whole). A walk over the headers that keeps nothing per event: an object per event of a
        45 MB file (240 000) made the collector walk them all, 35-67 ms with the GIL held."""
        if end <= start:
            return start
        with open(self.path(name), "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        walk = native.dumpscan.gtid_walk if native.dumpscan is not None else None
        if walk is not None:  # the same walk in C, without the GIL (protocol/_dumpscan.c)
            used, bad, domains, servers, seqs = walk(data)
            if seqs and bad < 0:
                state.update_all(memoryview(domains).cast("I"), memoryview(servers).cast("I"),
                                 memoryview(seqs).cast("Q"))
        else:
            used, bad = _walk_gtids(data, state)
        if bad >= 0:
            raise BinlogFormatError(f"bogus event length {EVENT_HEADER.unpack_from(data, bad)[3]} at {start + bad}")
        return start + used

    def _head_state(self, name: str) -> tuple[BinlogState, int]:
        """The state a file starts with (its GTID_LIST) and where its events start."""
        head = self.head(name)
        state = BinlogState()
        state.load(head.gtid_list or [])
        return state, head.fde_end

    def binlog_state(self) -> BinlogState:
        """GTID state at the end of the binlog: the active file's GTID_LIST plus its GTID events.

        Scanned incrementally (only bytes appended since the last call are read); call from a thread.
        """
        with self._state_lock:
            name = self.active()
            end = self.end_of(name)
            cached = self._state_cache
            if cached is None or cached[0] != name or cached[1] > end:
                state, start = self._head_state(name)
            else:
                _, start, state = cached
            last = self._add_gtids(name, start, end, state)
            # a file whose head is not complete yet may still get its GTID_LIST: not cached then
            self._state_cache = (name, last, state) if self.head(name).complete else None
            return state.copy()

    def gtid_state_at(self, name: str, pos: int) -> BinlogState | None:
        """GTID state at `pos` of file `name` (its GTID_LIST plus the GTID events before `pos`); None when
        `pos` is not an event boundary, or is past the file's end (a client-chosen position never sizes a read)."""
        if pos > self.end_of(name):
            return None
        with self._state_lock:  # (dumps that start together at the end of a big file: one scan, not one each)
            cached = self._states_at.get(name)
            if cached is not None and cached[0] <= pos:
                start, state = cached[0], cached[1].copy()
            else:
                state, start = self._head_state(name)
            last = self._add_gtids(name, start, pos, state)
            if self.head(name).complete:  # (an event boundary: where the next call may go on from)
                self._states_at.pop(name, None)
                self._states_at[name] = (last, state.copy())
                while len(self._states_at) > STATES_AT:
                    del self._states_at[next(iter(self._states_at))]
        if pos not in (BIN_LOG_HEADER_SIZE, start) and last != pos:
            return None
        return state

    # --- change notification --------------------------------------------------------------------------
    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop whose dump streams `publish()` wakes (a writer thread publishes from outside it)."""
        self._loop = loop
        self._loop_thread = None

    def publish(self, name: str, end: int) -> None:
        """Make `name` up to `end` readable (binlogd's writer, after a commit) and wake waiting dumps.

        Thread-safe: called from the writer's thread or the loop; the wake-up is scheduled on the bound loop.
        """
        self._published = (name, end)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            if threading.get_ident() != self._loop_thread:
                loop.call_soon_threadsafe(self._bump)
            elif not self._bump_due:
                # on the loop itself (standalone appends with sync_binlog 0) no self-pipe write and wake-up is needed,
                # and the commits of one loop iteration share one wake-up
                self._bump_due = True
                loop.call_soon(self._bump)

    def forget(self, names: list[str]) -> None:
        """Drop cached heads of purged files, and start a new generation of cache keys (`replaced`)."""
        for n in names:
            self._heads.pop(n, None)
        if names:
            self.replaced()

    def replaced(self) -> None:
        """Files were deleted or rewritten: the shared blocks and framings are keyed by (generation, inode, offset,
        length), and a file created later may get a deleted file's inode (ext4 and tmpfs reuse them at once), so
        keys of the next generation never match what was cached of the old files (which then ages out)."""
        self.generation += 1
        with self._state_lock:
            self._states_at.clear()  # (a file of the same name may now hold other events)

    def _bump(self) -> None:
        """Record a change and wake every waiter (on the loop's thread)."""
        self._loop_thread = threading.get_ident()
        self._bump_due = False
        self._version += 1
        waiters, self._waiters = self._waiters, set()
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def add_waiter(self, fut: asyncio.Future[None]) -> None:
        """Resolve `fut` at the next change (the leader of a group of parked dumps, server/dump/tail.py)."""
        self._waiters.add(fut)

    def discard_waiter(self, fut: asyncio.Future[None]) -> None:
        self._waiters.discard(fut)

    async def notify(self) -> None:
        """Wake every waiting dump stream (called by sources after an append or a rotation)."""
        self._bump()

    async def wait_change(self, version: int, timeout: float | None) -> int:
        """Wait until the store changed after `version` (or timeout); return the current version.

        Each waiter has a future of its own, resolved by `_bump` and by its own timer: a change wakes each waiting
        dump with one callback (a shared future behind `wait_for` and `shield` cost three futures, a timer and
        three callback hops per dump and change: with 20 dumps, a share of the relay's CPU per transaction)."""
        if self._version == version:
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.add(fut)
            timer = None if timeout is None else loop.call_later(timeout, _wake, fut)
            try:
                await fut
            finally:
                if timer is not None:
                    timer.cancel()
                self._waiters.discard(fut)
        return self._version

    @property
    def version(self) -> int:
        return self._version


class DirectoryWatcher:
    """Polls a read-only directory for growth (someone else writes the files) and notifies waiters."""

    def __init__(self, store: BinlogStore, interval: float = 0.5) -> None:
        self.store = store
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def _snapshot(self) -> tuple[tuple[str, ...], int]:
        try:
            names = tuple(self.store.files())
            return names, self.store.end_of(names[-1])
        except (OSError, StoreError):
            return (), 0

    async def _run(self) -> None:
        last = self._snapshot()
        while True:
            await asyncio.sleep(self.interval)
            now = await asyncio.to_thread(self._snapshot)
            if now != last:
                gone = set(last[0]) - set(now[0])
                if gone or (now[0] and last[0] and now[0][-1] == last[0][-1] and now[1] < last[1]):
                    self.store.replaced()  # deleted or cut by whoever writes the directory
                last = now
                await self.store.notify()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="directory-watcher")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
