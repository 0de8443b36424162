"""Semi-sync state: binlogd as a primary (who waits for which ack, MariaDB's Rpl_semi_sync_master_* counters) and
as the relay's replica side (Rpl_semi_sync_slave_*). The wire format is protocol/semisync.py.

The rules are MariaDB 10.11's Repl_semi_sync_master (sql/semisync_master.cc), with binlog positions as
(file, pos) tuples (compared as MariaDB compares them: file name, then position):
- the writer thread reports each committed group's end (`written`, write_tranx_in_binlog) before the group is
  published, so a dump never sends a group's last event before it knows a client waits for it;
- a dump asks `needs_ack` for every event it sends to a semi-sync replica (update_sync_header);
- an ack (`reply`) releases every commit waiting at or before its position (report_reply_binlog);
- a commit waits `timeout_ms` at most (`wait`, commit_trx); then semi-sync switches OFF (Rpl_semi_sync_master_status
  OFF, every later commit counted in _no_tx without waiting) until a replica acks the newest commit.
State shared with the writer thread is under one lock; the waits are futures on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field

log = logging.getLogger("binlogd.semisync")

Pos = tuple[str, int]
DEFAULT_TIMEOUT_MS = 10000  # MariaDB's rpl_semi_sync_master_timeout default


@dataclass
class MasterCounters:
    """The status counters, named as SHOW STATUS names them (without the Rpl_semi_sync_master_ prefix)."""

    yes_tx: int = 0
    no_tx: int = 0
    no_times: int = 0  # switched OFF
    timeouts: int = 0  # waits that timed out (rpl_semi_sync_master_wait_timeouts; not in SHOW STATUS)
    request_ack: int = 0
    get_ack: int = 0
    wait_sessions: int = 0
    wait_pos_backtraverse: int = 0
    tx_waits: int = 0
    tx_wait_time: int = 0  # microseconds
    net_waits: int = 0
    timefunc_failures: int = 0


@dataclass
class SemiSyncMaster:
    enabled: bool = False
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    wait_no_slave: bool = True
    clients: int = 0
    c: MasterCounters = field(default_factory=MasterCounters)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.on = self.enabled  # m_state: Rpl_semi_sync_master_status
        self._active: set[Pos] = set()  # ends of committed groups a client waits for (Active_tranx)
        self._reply: Pos | None = None  # the newest acked position
        self._commit: Pos | None = None  # the newest committed group's end
        self._waiters: list[tuple[Pos, asyncio.Future[bool]]] = []

    # --- the writer thread --------------------------------------------------------------------------------
    def written(self, file: str, ends: list[int]) -> None:
        """Groups ending at `ends` of `file` are written and about to be published (any thread)."""
        if not self.enabled or not ends:
            return
        with self._lock:
            pos = (file, ends[-1])
            if self._commit is None or pos > self._commit:
                self._commit = pos
            if self.on:
                self._active.update((file, e) for e in ends)
                self.c.request_ack += len(ends)

    # --- dumps --------------------------------------------------------------------------------------------
    def needs_ack(self, file: str, pos: int) -> bool:
        """Does the event ending at (file, pos), sent to a semi-sync replica, ask for an ack?"""
        if not self.enabled:
            return False
        p = (file, pos)
        with self._lock:
            if self.on:
                if self._reply is not None and p <= self._reply:
                    return False
                hit = p in self._active
            else:  # while OFF, every event from the newest commit on asks, so a replica that caught up says so
                hit = self._commit is None or p >= self._commit
        if hit:
            self.c.net_waits += 1
        return hit

    def add_client(self) -> None:
        """A semi-sync replica's dump began (Rpl_semi_sync_master_clients)."""
        self.clients += 1

    def dump_start(self, file: str, pos: int) -> None:
        """A semi-sync dump starts at (file, pos), checked against the binlog: the replica has everything before
        it, so it counts as an ack (MariaDB's dump_start, after init_binlog_sender checked the position)."""
        self._report((file, pos))

    def remove_client(self) -> None:
        self.clients -= 1
        if self.clients == 0 and not self.wait_no_slave:
            self._release_all(False)

    def reply(self, server_id: int, file: str, pos: int) -> None:
        """A replica acknowledged (file, pos) (report_reply_packet)."""
        self.c.get_ack += 1
        log.debug("semi-sync ack from server_id %d: %s:%d", server_id, file, pos)
        self._report((file, pos))

    def _report(self, p: Pos) -> None:
        if not self.enabled:
            return
        with self._lock:
            if not self.on and (self._commit is None or p >= self._commit):
                self.on = True  # try_switch_on
                log.info("semi-sync replication switched ON at (%s, %d)", p[0], p[1])
            if self._reply is not None and p < self._reply:
                return
            self._reply = p
            self._active = {a for a in self._active if a > p}
        for w in [w for w in self._waiters if w[0] <= p]:
            self._waiters.remove(w)
            if not w[1].done():
                w[1].set_result(True)

    # --- committing clients -------------------------------------------------------------------------------
    async def wait(self, file: str, pos: int) -> None:
        """A client's commit of a group ending at (file, pos) returns after an ack or the timeout (commit_trx)."""
        if not self.enabled:
            return
        c = self.c
        if (not self.clients and not self.wait_no_slave) or not self.on:
            c.no_tx += 1
            return
        p = (file, pos)
        if self._reply is not None and self._reply >= p:
            c.yes_tx += 1
            return
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append((p, fut))
        if len(self._waiters) > 1 and p <= min(w[0] for w in self._waiters[:-1]):
            c.wait_pos_backtraverse += 1  # an earlier position than every other waiter's
        c.wait_sessions += 1
        t0 = time.monotonic()
        try:
            acked = await asyncio.wait_for(asyncio.shield(fut), self.timeout_ms / 1000)
        except TimeoutError:
            acked = False
            c.timeouts += 1
            log.warning("Timeout waiting for reply of binlog (file: %s, pos: %d), semi-sync up to file %s, "
                        "position %d.", file, pos, *(self._reply or ("", 0)))
            self._switch_off()
        finally:
            c.wait_sessions -= 1
            if (p, fut) in self._waiters:
                self._waiters.remove((p, fut))
        if acked:
            c.yes_tx += 1
            c.tx_waits += 1
            c.tx_wait_time += int((time.monotonic() - t0) * 1e6)
        else:
            c.no_tx += 1

    def _switch_off(self) -> None:
        with self._lock:
            self._active.clear()
            if self.on:
                self.on = False
                self.c.no_times += 1
                self._reply = None
                log.info("semi-sync replication switched OFF")
        self._release_all(False)

    def _release_all(self, acked: bool) -> None:
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_result(acked)

    # --- SHOW STATUS ---------------------------------------------------------------------------------------
    def status(self) -> dict[str, int | str]:
        """Rpl_semi_sync_master_* as MariaDB 10.11 shows them (name without the prefix -> value)."""
        c = self.c
        return {
            "clients": self.clients, "get_ack": c.get_ack,
            "net_avg_wait_time": 0, "net_wait_time": 0, "net_waits": c.net_waits,
            "no_times": c.no_times, "no_tx": c.no_tx, "request_ack": c.request_ack,
            "status": "ON" if self.enabled and self.on else "OFF", "timefunc_failures": c.timefunc_failures,
            "tx_avg_wait_time": c.tx_wait_time // c.tx_waits if c.tx_waits else 0,
            "tx_wait_time": c.tx_wait_time, "tx_waits": c.tx_waits,
            "wait_pos_backtraverse": c.wait_pos_backtraverse, "wait_sessions": c.wait_sessions,
            "yes_tx": c.yes_tx,
        }


@dataclass
class SemiSyncSlave:
    """binlogd as a semi-sync replica of its upstream (relay mode): Rpl_semi_sync_slave_status / _send_ack."""

    enabled: bool = False  # --rpl-semi-sync-slave-enabled
    status: bool = False  # the upstream agreed (it has rpl_semi_sync_master_enabled and took the user variable)
    send_ack: int = 0

    @property
    def status_text(self) -> str:
        return "ON" if self.status else "OFF"
