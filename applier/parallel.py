"""Parallel apply of a channel's row groups over several target sessions, committed in the source's order.

One session applies one group at a time, and a 1-row transaction spends most of its wall time waiting for the
target (issue 20). With `--parallel-apply N` a run of consecutive *row groups* (a transaction of TABLE_MAP and
rows events only) is spread over N target sessions, group k on session k mod N, like MariaDB's optimistic
parallel replication:

1. each session sends its group's transaction up to (not including) its position row: the changes run in
   parallel on the target;
2. it then waits for its turn: the previous group has committed (`CommitOrder`);
3. then it sends the position row and COMMIT.

So commits, the target's binlog (the source's GTIDs, in order: a gtid_strict_mode replica of the target keeps
replicating) and the one position row per channel advance exactly as with one session: the position row is
still written in the same transaction as the changes, and after a crash it names the last committed group, all
groups before it are committed, none after it (kill -9 safe, tested under load).

Conflicts: a group that waits for its turn longer than TURN_WAIT_S may hold a row lock a group before it needs
(InnoDB cannot see that deadlock: one wait is in this process). It rolls back and stops the run there, as any
failure does (a deadlock between two groups, an apply error, a lost target connection): the groups before it
commit, the ones after it roll back, and the channel's serial path (`TargetSession.apply_many`) takes over from
that group, with its retries and exactly its error texts; the next BACKOFF_BATCHES batches are applied serially
(transactions that conflict gain nothing from parallel sessions). Statement, DDL, non-transactional, rollback
and position-only groups always take the serial path (nothing after them starts before they end).

Small transactions (rows data below `--parallel-min-bytes`, default 1024) stay on the channel's one session: its
pipeline sends up to 192 of them per round trip, where parallel sessions need two round trips per transaction.

Names: `ParallelApply` (`sessions`, `apply`), `parallel_ok`, `CommitOrder`, `TURN_WAIT_S`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

import pymysql
from binlogd.protocol.constants import ROWS_EVENT_TYPES, TABLE_MAP_EVENT

from .apply import ApplyError, Group, TargetSession
from .pipeline import CONNECTION_LOST, error_code

log = logging.getLogger("binlogd.apply")

TURN_WAIT_S: Final = 0.2  # a group waiting longer for its predecessor's commit stops the run (rolls back)
BACKOFF_BATCHES: Final = 16  # batches applied serially after a run stopped early (conflicting transactions)
ROW_EVENTS: Final = frozenset(ROWS_EVENT_TYPES | {TABLE_MAP_EVENT})


def parallel_ok(g: Group, min_bytes: int = 0) -> bool:
    """A transaction of row events only (rows data of at least `min_bytes`): it can run beside its neighbours and
    commit in its turn."""
    if not g.events or not g.transactional or g.rollback:
        return False
    size = 0
    for ev in g.events:
        t = ev.header.type_code
        if t not in ROW_EVENTS:
            return False
        if t != TABLE_MAP_EVENT:
            size += len(ev.body.data)  # type: ignore[union-attr]
    return size >= min_bytes


class CommitOrder:
    """Turns of the groups of one parallel run: group k may commit once groups 0..k-1 have (`done`), unless the
    run stopped at an earlier group (`stop`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.next = 0  # the group whose turn it is
        self.stopped: int | None = None  # the first group that failed: it and every later group roll back

    def wait(self, k: int, timeout: float | None) -> bool:
        """True when it is k's turn (or the run stopped before k: check `stopped`); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.next >= k or self._stopped_before(k), timeout)

    def _stopped_before(self, k: int) -> bool:
        return self.stopped is not None and self.stopped < k

    def done(self, k: int) -> None:
        with self._cond:
            self.next = k + 1
            self._cond.notify_all()

    def stop(self, k: int) -> None:
        with self._cond:
            self.stopped = k if self.stopped is None else min(self.stopped, k)
            self._cond.notify_all()


class ParallelApply:
    """N sessions of one channel, each with its own worker thread; `sessions[0]` is the channel's own session
    (and its executor), which also runs the serial path."""

    def __init__(self, sessions: Sequence[TargetSession], executors: Sequence[ThreadPoolExecutor],
                 min_bytes: int = 0) -> None:
        self.sessions = list(sessions)
        self.min_bytes = min_bytes  # smaller transactions stay on the pipelined single session
        self.executors = list(executors)
        self.parallel_groups = 0  # groups committed through parallel runs
        self._serial_left = 0  # batches to apply serially (a run stopped early: the groups conflict)

    async def apply(self, batch: list[Group]) -> tuple[int, ApplyError | None]:
        """Apply consecutive groups in order; returns how many committed and the error that stopped the rest."""
        loop = asyncio.get_running_loop()
        if self._serial_left > 0 or len(self.sessions) == 1:
            self._serial_left -= 1
            return await loop.run_in_executor(self.executors[0], self.sessions[0].apply_many, batch)
        done = 0
        while done < len(batch):
            run = done
            while run < len(batch) and parallel_ok(batch[run], self.min_bytes):
                run += 1
            if run - done >= 2:
                n = await self._parallel(batch[done:run])
                done += n
                if done < run:  # stopped at a group: the serial path applies it again, and words any error
                    self._serial_left = BACKOFF_BATCHES
                    k, err = await loop.run_in_executor(self.executors[0], self.sessions[0].apply_many,
                                                        batch[done:run])
                    done += k
                    if err is not None:
                        return done, err
                continue
            end = max(run, done + 1)
            while end < len(batch) and not parallel_ok(batch[end], self.min_bytes):
                end += 1
            k, err = await loop.run_in_executor(self.executors[0], self.sessions[0].apply_many, batch[done:end])
            done += k
            if err is not None:
                return done, err
        return done, None

    async def _parallel(self, groups: list[Group]) -> int:
        """One parallel run; returns how many groups (a prefix) committed."""
        order = CommitOrder()
        n = len(self.sessions)
        loop = asyncio.get_running_loop()
        futs = [loop.run_in_executor(self.executors[i], self._session_work, self.sessions[i], order, groups, i, n)
                for i in range(min(n, len(groups)))]
        await asyncio.gather(*futs)
        if not self.parallel_groups and order.next:
            log.info("channel %r: parallel apply on %d target sessions (first run: %d of %d groups committed)",
                     self.sessions[0].channel, n, order.next, len(groups))
        self.parallel_groups += order.next
        return order.next

    @staticmethod
    def _session_work(s: TargetSession, order: CommitOrder, groups: list[Group], first: int, step: int) -> None:
        for k in range(first, len(groups), step):
            if not _one(s, order, groups[k], k):
                return


def _one(s: TargetSession, order: CommitOrder, g: Group, k: int) -> bool:
    """Group k on session s: its changes, its turn, its COMMIT. False when the run stopped (at k or before)."""
    if order.stopped is not None and order.stopped < k:
        return False
    try:
        s.connect()
        s.queue_body(g)
        s.flush()
    except (pymysql.MySQLError, ApplyError):  # also a deadlock between two groups of the run
        s.rollback()
        order.stop(k)
        return False
    if not order.wait(k, TURN_WAIT_S):  # may hold a lock a group before it needs: step back
        s.rollback()
        order.stop(k)
        return False
    if order.stopped is not None and order.stopped < k:
        s.rollback()
        return False
    try:
        s.queue_end(g)
    except (pymysql.MySQLError, ApplyError) as e:
        lost = isinstance(e, pymysql.err.InterfaceError) or (
            isinstance(e, pymysql.MySQLError) and error_code(e) in CONNECTION_LOST)
        s.rollback()
        if not (lost and s.committed(g)):
            order.stop(k)
            return False
    order.done(k)
    return True
