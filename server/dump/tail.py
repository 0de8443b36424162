"""Dumps parked at the end of the active file, served from one place (issue 12: the relay's fan-out).

A relay or standalone primary wakes every dump that follows the end of its active file once per transaction.
Woken one by one, 20 dumps paid 20 task turns of the same work (look up the chunk, take the shared framing, write,
hand the ledger its record), ~100 µs of Python each: the 20th replica got a transaction 2-3 ms after the first.
Parked here, dumps in the same state (file, position, policy, checksum algorithm, ledger group state: the frame
cache's key without the sequence id) form a group of which only the first waits on the store. A change wakes that
one alone; once its turn has framed the new bytes (or found another's framing) it hands every other member the
same framing (`Tailing._serve_followers`: their state advanced, their records to the ledger, their bytes to their
sockets in one system call), without their tasks running. A member that needs anything else (a drain, a position
sync, more bytes, a rotation, the ledger's back-pressure, a framing not cached) is woken and takes its own turn,
exactly as before: what a dump sends and records is what its own turn would have sent and recorded.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from ..binlog.store import BinlogStore

try:  # the fan-out's writes in one io_uring submission (server/dump/_fanout.c); without it, one write per socket
    from ._fanout import send_many, set_io_uring
except ImportError:  # pragma: no cover - a build without a C compiler
    send_many = None
else:
    if os.environ.get("BINLOGD_NO_IO_URING"):  # comparisons: the same sends, one system call each
        set_io_uring(False)

if TYPE_CHECKING:
    from .framing import FrameCache, FramedChunk

_UNSUPPORTED = (-errno.EINVAL, -errno.EOPNOTSUPP)  # an io_uring operation the kernel does not know (before 5.6)
T = TypeVar("T")
log = logging.getLogger("binlogd.dump")
Group = list[Any]  # the parked dumps of one state, the first the one the store wakes

_ROOMS: weakref.WeakKeyDictionary[BinlogStore, TailRoom] = weakref.WeakKeyDictionary()


class TailRoom:
    """The groups of dumps parked at the end of a store's active file, by state."""

    __slots__ = ("__weakref__", "groups")

    def __init__(self) -> None:
        self.groups: dict[Hashable, Group] = {}


def room_of(store: BinlogStore) -> TailRoom:
    """The tail room shared by the dumps of `store`."""
    room = _ROOMS.get(store)
    if room is None:
        room = _ROOMS[store] = TailRoom()
    return room


def send_all(taken: list[tuple[Tailing, bytes | bytearray]]) -> None:
    """Write each dump's framed bytes: in one system call where the C helper is built (`_fanout.send_many`; each
    socket's transport holds nothing, so these bytes come next on its wire), the rest of a short write queued on
    its transport; else through each transport."""
    if send_many is None:
        for f, framed in taken:
            f._write_now(framed, 0)
        return
    fds = [f._raw_fd() for f, _ in taken]
    raw = [i for i, fd in enumerate(fds) if fd >= 0]
    done = send_many([fds[i] for i in raw], [taken[i][1] for i in raw]) if raw else []
    if any(r in _UNSUPPORTED for r in done):  # a kernel whose io_uring lacks IORING_OP_SEND: nothing was sent
        log.warning("io_uring cannot send on this kernel; the fan-out sends one socket at a time")
        set_io_uring(False)
        done = [0 if r in _UNSUPPORTED else r for r in done]
    written = dict(zip(raw, done, strict=True))
    for i, (f, framed) in enumerate(taken):
        f._write_now(framed, written.get(i, 0))


class Tailing:
    """The parking side of a DumpStream (mixed into it): park, lead, fan out."""

    store: BinlogStore
    pos: int
    file: str
    seq: int
    _park_fut: asyncio.Future[None] | None = None
    _park_group: Group | None = None  # the group this dump is parked in (a leader's taken group after a change)
    _park_key: Hashable = None
    _park_version = -1  # the store's version when it joined its group (a change after it makes a leader take it)
    _park_due = False  # the heartbeat's timer ended the parking
    _park_th: asyncio.TimerHandle | None = None
    _followers: Group | None = None  # a woken leader's group, until its turn has framed (`_serve_followers`)
    _turn: tuple[int, int, int] | None = None  # (ino, pos, length) of the last chunk looked up in the frame cache
    _room: TailRoom | None = None

    if TYPE_CHECKING:  # provided by DumpStream and its other mixins
        def _shares_frames(self) -> bool: ...
        def _frame_key(self, ino: int, pos: int, length: int) -> tuple[FrameCache, tuple[Any, ...]]: ...
        def _take_framed(self, hit: FramedChunk, pos: int) -> tuple[int, bytes | bytearray]: ...
        def _hand_over(self, final: bool = False) -> None: ...
        def _wants_position_sync(self) -> bool: ...
        def _fan_in_eligible(self) -> bool: ...
        def _writable(self, size: int) -> bool: ...
        def _raw_fd(self) -> int: ...
        def _write_now(self, data: bytes | bytearray, written: int) -> None: ...

    def _tail_key(self, ino: int, pos: int) -> Hashable | None:
        """The group of a dump waiting at `pos` (the published end of the active file), or None when it waits on
        the store alone (a state the fan-out does not serve: see `_fan_in_eligible`)."""
        if self.pos != pos or not self._fan_in_eligible():
            return None
        key = self._frame_key(ino, pos, 0)[1]
        self._turn = None
        return key[:3] + key[5:]  # (generation, ino, pos, policy, algorithm, group state): not length nor seq

    async def _park(self, key: Hashable, period: float | None) -> bool:
        """Wait in `key`'s group: for a change (as its leader), for a turn of its own (`_wake_parked`), or until
        the heartbeat is due (`period` after the last event written, fan-ins included). Meanwhile the group's leader
        may serve this dump (`_fan_take`) any number of times. True when the heartbeat is due."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._park_fut = fut
        self._park_due = False
        self._join(key)
        if period is not None:
            self._park_th = fut.get_loop().call_later(period, self._park_timer, period, time.monotonic())
        try:
            await fut
            group = self._park_group
            room = self._room
            if (self.store.version != self._park_version and group and group[0] is self and room is not None
                    and room.groups.get(self._park_key) is group):
                del room.groups[self._park_key]  # woken by a change as the leader: the others wait for its turn
                del group[0]
                self._followers = group
        finally:
            if self._park_th is not None:
                self._park_th.cancel()
                self._park_th = None
            self._leave()
            self._park_fut = None
        return self._park_due

    def _park_timer(self, period: float, since: float) -> None:
        """The heartbeat's timer: due `period` after the park or the last event written, whichever is later."""
        fut = self._park_fut
        if fut is None or fut.done():
            return
        rest = max(since, self.stats.last_event_at or 0.0) + period - time.monotonic()
        if rest > 0.0005:
            self._park_th = fut.get_loop().call_later(rest, self._park_timer, period, since)
            return
        self._park_due = True
        fut.set_result(None)

    def _join(self, key: Hashable) -> None:
        room = self._room
        if room is None:
            room = self._room = room_of(self.store)
        group = room.groups.get(key)
        if group is None:
            group = room.groups[key] = []
        group.append(self)
        self._park_group, self._park_key, self._park_version = group, key, self.store.version
        if len(group) == 1:
            assert self._park_fut is not None
            self.store.add_waiter(self._park_fut)  # the leader: the one a change wakes

    def _leave(self) -> None:
        """Out of its group (woken, timed out, cancelled); a leader leaving hands the store's wake-up on."""
        group, self._park_group = self._park_group, None
        if group is None:
            return
        if self._park_fut is not None:
            self.store.discard_waiter(self._park_fut)
        try:
            i = group.index(self)
        except ValueError:
            return
        del group[i]
        room = self._room
        if room is not None and room.groups.get(self._park_key) is group:
            if not group:
                del room.groups[self._park_key]
            elif i == 0:
                nxt = group[0]
                if self.store.version != nxt._park_version:
                    nxt._wake_parked()  # a change it has not seen (the leader was cancelled after it): lead now
                else:
                    self.store.add_waiter(nxt._park_fut)

    def _wake_parked(self) -> None:
        """End this dump's parking: it takes its own turn."""
        fut = self._park_fut
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _wake_followers(self) -> None:
        followers, self._followers = self._followers, None
        for f in followers or ():
            f._wake_parked()

    def _serve_followers(self, pos: int) -> None:
        """After a leader's turn framed the chunk at `pos`: every follower takes that framing, or is woken. The
        followers' bytes go out in one system call (`_fanout.send_many`: the readers are woken together)."""
        followers, self._followers = self._followers, None
        turn, self._turn = self._turn, None
        if not followers:
            return
        taken: list[tuple[Tailing, bytes | bytearray]] = []
        try:
            if turn is None or turn[1] != pos:
                return  # (this turn framed nothing from the group's state: all take turns of their own, below)
            ino, _, length = turn
            for f in tuple(followers):
                fut = f._park_fut
                if fut is not None and not fut.done():
                    framed = f._guarded(f._fan_take, ino, pos, length)
                    if framed is not None:
                        taken.append((f, framed))
            if taken:
                send_all(taken)
                for f, _ in taken:
                    f._guarded(f._fan_settle, ino)
        except BaseException:  # (a bug in the C helper's call): their state is unknown, their connections end
            log.exception("the fan-out failed; closing the connections it was writing to")
            for f, _ in taken:
                f.writer.transport.abort()
            raise
        finally:
            # the one place followers are woken: each one still in the group the leader took (not served, or not
            # parked again by `_fan_settle`) takes its own turn; none is left where no leader will come
            for f in tuple(followers):
                if f._park_group is followers:
                    f._wake_parked()

    def _guarded(self, step: Callable[..., T], *args: Any) -> T | None:
        """A fan-out step for this dump; a bug in it ends this dump's connection (logged), not the leader's."""
        try:
            return step(*args)
        except Exception:
            log.exception("%s the fan-out failed for this dump; closing its connection", self.label)
            self.writer.transport.abort()
            return None

    def _fan_take(self, ino: int, pos: int, length: int) -> bytes | bytearray | None:
        """Take the framing of the chunk (`ino`, `pos`, `length`) another dump's turn just made, as this dump's own
        turn would (its counts, its records to the ledger); None where its own turn must run: no framing cached for
        its state, or a socket that has not taken everything before (its turn drains)."""
        if self.pos != pos or not self._fan_in_eligible():
            return None
        cache, key = self._frame_key(ino, pos, length)
        self._turn = None
        hit = cache.get(key) or cache.any(key)
        if hit is None or not self._writable(len(hit.framed)):
            return None
        self.stats.fan_ins += 1
        return self._take_framed(hit, pos)[1]

    def _fan_settle(self, ino: int) -> bool:
        """After its bytes went out: parked again in its new state, as `_stream` would wait; False where its own turn
        must go on (more bytes than the chunk, a rotation, UNTIL, a position sync due, a state the fan-out does not
        serve)."""
        if self.store.published_end(self.file) != self.pos or self._done:
            return False
        if self.sent_upto < self.pos and self._wants_position_sync():
            return False
        if self._tail is not None:  # nothing follows right away: the held-back run is queued now (as `_stream` does)
            self._hand_over(final=True)
        key = self._tail_key(ino, self.pos)
        if key is None:
            return False
        self._leave()
        self._join(key)
        return True

    _tail: Any
    _done: bool
    sent_upto: int
    stats: Any
    writer: Any
    label: str
