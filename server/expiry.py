"""Which binlog files a purge removes, in one place for the standalone primary and the relay, and the expiry task.

MariaDB 10.11's rules (sql/log.cc `purge_logs`, `purge_logs_before_date`, both through `can_purge_log`): only the
oldest files go, never the active one, and never a file a connected dump is reading. `PURGE BINARY LOGS TO` and
`BEFORE` stop at the first file in use and answer OK without a warning (what a real 10.11 answers:
tests/test_expiry.py compares), automatic expiry (`binlog_expire_logs_seconds`, alias `expire_logs_days`) logs it;
the file in use and everything after it wait for a later purge. The index is rewritten before a file is deleted
(`BinlogWriter.purge`), so a crash in between leaves a file the index no longer names, which recovery deletes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .sql_surface import SqlError

if TYPE_CHECKING:
    from .ledger import Ledger
    from .primary import Primary
    from .relay.upstream import UpstreamRelay
    from .standalone.source import StandaloneSource

log = logging.getLogger("binlogd.expiry")

ER_UNKNOWN_TARGET_BINLOG = 1373
ER_TRUNCATED_WRONG_VALUE = 1292

MAX_EXPIRE_SECONDS = 8553600  # 99 days: MariaDB 10.11's maximum of binlog_expire_logs_seconds (and expire_logs_days)
DEFAULT_CHECK_INTERVAL = 60.0  # seconds between periodic checks (besides start-up and each rotation)


@dataclass(frozen=True)
class PurgeRequest:
    """`PURGE BINARY LOGS TO 'file'` (`to`), `... BEFORE 'datetime'` (`before`, a Unix time) or expiry (`before`,
    `automatic`)."""

    to: str | None = None
    before: float | None = None
    automatic: bool = False
    warning: tuple[str, int, str] | None = None  # for SHOW WARNINGS after the statement

    def diagnostics(self) -> list[tuple[str, int, str]]:
        return [self.warning] if self.warning is not None else []


def before_request(text: str) -> PurgeRequest:
    """`PURGE BINARY LOGS BEFORE 'text'` (local time zone). A text that is no datetime purges nothing, with MariaDB
    10.11's warning 1292 (checked against a real one: tests/test_expiry.py)."""
    try:
        return PurgeRequest(before=dt.datetime.fromisoformat(text.strip()).timestamp())
    except ValueError:
        return PurgeRequest(before=-math.inf,
                            warning=("Warning", ER_TRUNCATED_WRONG_VALUE, f"Incorrect datetime value: '{text}'"))


def purge_request(sql: str, default_db: str | None) -> PurgeRequest | None:
    """The PurgeRequest of a `PURGE BINARY|MASTER LOGS` statement (its syntax errors are 1064 / 1235), else
    None; other statements cost a prefix test."""
    if not sql.lstrip(" \t\r\n").upper().startswith("PURGE"):
        return None
    from .standalone.classify import Kind, classify

    stmt = classify(sql, default_db)
    if stmt.kind is not Kind.PURGE:
        return None
    if stmt.purge_to is not None:
        return PurgeRequest(to=stmt.purge_to)
    return before_request(stmt.purge_before or "")


def choose_victims(names: list[str], req: PurgeRequest, in_use: Collection[str],
                   mtime: Callable[[str], float]) -> list[str]:
    """The oldest files the request removes (blocking: stats files); SqlError 1373 for `TO` an unknown file."""
    if req.to is not None:
        if req.to not in names:
            raise SqlError(ER_UNKNOWN_TARGET_BINLOG, "Target log not found in binlog index")
        candidates = names[: names.index(req.to)]
    else:
        candidates = names[:-1]  # never the active file
    victims = []
    for n in candidates:
        if n in in_use:
            what = "binlog expiry" if req.automatic else "PURGE BINARY LOGS"
            log.info("%s: %s is being read by a replica; it and the files after it wait", what, n)
            break
        if req.before is not None:
            try:
                if mtime(n) >= req.before:
                    break
            except FileNotFoundError:
                pass  # already gone (MariaDB: not fatal); dropped from the index with the others
        victims.append(n)
    return victims


def file_mtime(directory: Path) -> Callable[[str], float]:
    return lambda name: os.stat(directory / name).st_mtime


class Expirer:
    """Runs `purge(PurgeRequest(before=now - seconds, automatic=True))` at start, at each rotation (a new active
    file) and every `interval` seconds; also `extra()` jobs (ledger retention) on the same schedule. `purge` runs
    in the binlog writer's thread (the caller's), so it never races a commit or a rotation."""

    def __init__(self, seconds: int, purge: Callable[[PurgeRequest], Awaitable[list[str]]] | None,
                 active: Callable[[], str | None], wait_change: Callable[[float], Awaitable[None]],
                 extra: list[Callable[[], Awaitable[None]]] | None = None,
                 interval: float = DEFAULT_CHECK_INTERVAL, clock: Callable[[], float] = time.time) -> None:
        self.seconds = seconds
        self.purge = purge
        self.active = active
        self.wait_change = wait_change
        self.extra = extra or []
        self.interval = interval
        self.clock = clock
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> None:
        """One pass; failures are logged and retried at the next one."""
        if self.seconds and self.purge is not None:
            try:
                gone = await self.purge(PurgeRequest(before=self.clock() - self.seconds, automatic=True))
                if gone:
                    log.info("binlog expiry (binlog_expire_logs_seconds=%d): purged %s", self.seconds,
                             ", ".join(gone))
            except (OSError, SqlError) as e:
                log.error("binlog expiry failed (retried at the next check): %s", e)
            except Exception:  # the task must outlive a bug: logged, retried at the next check
                log.exception("binlog expiry failed (retried at the next check)")
        for job in self.extra:
            try:
                await job()
            except OSError as e:
                log.error("retention check failed (retried at the next check): %s", e)
            except Exception:
                log.exception("retention check failed (retried at the next check)")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = self.active()
        await self.check()
        due = loop.time() + self.interval
        while True:
            await self.wait_change(max(0.0, due - loop.time()))
            now_active = self.active()
            if now_active != last or loop.time() >= due:
                last = now_active
                await self.check()
                due = loop.time() + self.interval

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="binlog-expiry")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def start_expiry(primary: Primary, relay: UpstreamRelay | None, standalone: StandaloneSource | None,
                 ledger: Ledger | None, expire_seconds: int, ledger_retention_seconds: int) -> Expirer | None:
    """Wire PURGE BINARY LOGS (standalone, relay) into `primary`, and start the expiry task when expiry or ledger
    retention is on. The check interval is a quarter of the shortest period, between 1 and 60 seconds."""
    active: Callable[[], str | None] = lambda: None  # noqa: E731
    if standalone is not None:
        primary.purge, active = standalone.purge, lambda: standalone.writer.active
    elif relay is not None:
        the_relay = relay

        async def relay_purge(req: PurgeRequest) -> list[str]:
            return await the_relay.purge(req, primary.files_in_use())

        primary.purge, active = relay_purge, lambda: the_relay.storage.w.active
    primary.binlog_expire_logs_seconds = expire_seconds
    extra: list[Callable[[], Awaitable[None]]] = []
    if ledger is not None and ledger_retention_seconds:
        from .ledger_retention import LedgerRetention

        retention = LedgerRetention(ledger.directory, ledger_retention_seconds, primary.store.files,
                                    lambda: ledger.current_path)

        async def ledger_job() -> None:
            await asyncio.to_thread(retention.run, time.time())

        extra.append(ledger_job)
    periods = [p for p in (expire_seconds if primary.purge is not None else 0, ledger_retention_seconds) if p]
    if not periods:
        return None
    store = primary.store

    async def wait_change(timeout: float) -> None:
        await store.wait_change(store.version, timeout)

    expirer = Expirer(expire_seconds, primary.purge, active, wait_change, extra,
                      interval=min(DEFAULT_CHECK_INTERVAL, max(1.0, min(periods) / 4)))
    expirer.start()
    log.info("expiry on: binlog_expire_logs_seconds=%d, ledger retention %d s (checked every %.0f s and at each "
             "new binlog file)", expire_seconds, ledger_retention_seconds, expirer.interval)
    return expirer
