"""The standalone source: client statements in, binlog groups out, through one writer thread.

`execute()` is called for every COM_QUERY of a standalone server. Writes are classified (`classify`), checked
against the schema catalogue (`schema`: refused with MariaDB's error before anything is logged), turned into
events (`logger`) and either buffered in the session's open transaction or committed; everything else goes to
the read-only SQL surface as in directory mode, with the transaction side effects MariaDB has (COMMIT writes the
buffered transaction, ROLLBACK drops it, BEGIN / DDL / FLUSH / SET autocommit=1 commit it implicitly).

Commits go through a queue drained by a single writer thread: groups that arrive while the thread is busy are
written together and made durable with one commit (group commit), and a client gets its OK only once its group
is committed (fsync'd per `--sync-binlog`), so nothing acknowledged is lost by a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from binlogd.protocol.constants import LOG_EVENT_SUPPRESS_USE_F, QUERY_EVENT
from binlogd.protocol.events import AutoIncrement, QueryCharset
from mysql_mimic.charset import Collation

from .. import sysvars as SV
from ..binlog.store import BinlogStore
from ..binlog.writer import BinlogWriteError, BinlogWriter
from ..expiry import PurgeRequest, purge_request
from ..semisync import SemiSyncMaster
from ..sql_surface import Ok, ResultSet, SessionState, SqlError, change_database, execute, not_supported
from . import prepared
from .classify import Kind, ShapeKey, Statement, classify, dml_shape, shape_info
from .files import BinlogFiles
from .logger import (
    FLAGS2,
    LOG_EVENT_THREAD_SPECIFIC_F,
    OPTION_AUTO_IS_NULL,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_RELAXED_UNIQUE_CHECKS,
    Group,
    QueryContext,
    StatementEvents,
    TablesInfoHook,
    query_body,
)
from .schema import SYSTEM_DATABASES, Catalogue, DmlPlan, apply_statement
from .session import WriteSession

if TYPE_CHECKING:
    from ..primary import Primary

log = logging.getLogger("binlogd.standalone")

ER_ERROR_ON_WRITE = 1026
RAND_MAX_SEED = 0x3FFFFFFF  # my_rnd's max_value: MariaDB's seeds are below it
_TRIM = " \t\n\r\v\f"
_TRIM_END = _TRIM + ";"
# `SET @name = integer`: a user variable set from an integer literal, answered without the SQL surface's lexer,
# parser and evaluator (tests/test_standalone_fast_path.py compares it with them)
_WS = r"[ \t\n\r\v\f]*"
SET_USER_INT = re.compile(rf"{_WS}SET{_WS[:-1]}+@([A-Za-z_][A-Za-z0-9_]{{0,63}}){_WS}:?={_WS}"
                          rf"(-?[0-9]{{1,18}}){_WS};?{_WS}", re.I)
# bytes beyond the bodies that a group / an event adds when encoded (GTID, XID, headers, checksums), generously
_INLINE_GROUP_MARGIN = 256
_INLINE_EVENT_MARGIN = 64
_READY_MAX = 256  # ready statements per session (a shape cache entry each)


# a started commit (StandaloneSource.commit_nowait): where it ended when appended at once, else a future of that
Commit = tuple[str, int] | asyncio.Future[tuple[str, int]]


@dataclass(slots=True)
class Done:
    """A statement answered without waiting (StandaloneSource.start): its result, and the commit its answer waits
    for (None: nothing to wait for). Not frozen: one is made per statement, and a frozen dataclass's __init__ sets
    each field through object.__setattr__."""

    result: ResultSet | Ok
    commit: Commit | None


def note_error(st: SessionState, e: SqlError) -> None:
    """SHOW WARNINGS after an error, as in MariaDB."""
    st.diagnostics = [("Error", e.code, e.message)]


@dataclass(frozen=True)
class StandaloneConfig:
    datadir: Path
    server_id: int
    server_version: str
    basename: str = "mysql-bin"
    gtid_domain_id: int = 0
    max_binlog_size: int = 1 << 30
    sync_binlog: int = 0


def collation_id(name: str, fallback: int = 45) -> int:
    """MariaDB's id of a collation name (the ids MariaDB shares with MySQL), else `fallback`."""
    n = name.lower()
    for candidate in (n, n.replace("utf8mb3_", "utf8_")):
        try:
            return int(Collation[candidate].value)
        except KeyError:
            continue
    return fallback


def _sql_mode_bits(text: str) -> int:
    bits = 0
    for part in text.split(","):
        if part.upper() in SV.SQL_MODES:
            bits |= 1 << SV.SQL_MODES.index(part.upper())
    return bits


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.upper() in ("1", "ON", "TRUE")
    return bool(v)


class StandaloneSource:
    def __init__(self, cfg: StandaloneConfig, tables_info: TablesInfoHook | None = None,
                 post_header_lengths: bytes | None = None) -> None:
        self.cfg = cfg
        self.writer = BinlogWriter(cfg.datadir, cfg.basename, cfg.sync_binlog)
        self.files = BinlogFiles(self.writer, server_id=cfg.server_id, domain_id=cfg.gtid_domain_id,
                                 server_version=cfg.server_version, max_binlog_size=cfg.max_binlog_size,
                                 post_header_lengths=post_header_lengths)
        self.tables_info = tables_info
        self.server: Primary | None = None  # the ServerView and its running dumps; set by serve()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="binlog-writer")
        self._query_ids = itertools.count(1)
        self._pending: list[tuple[list[Group], asyncio.Future[tuple[str, int]]]] = []
        self._draining = False
        self._drainer: asyncio.Task[None] | None = None  # the running group-commit task (a strong reference)
        self._rng = random.Random()
        self.schema = Catalogue()  # the event loop's catalogue: checked and changed in statement order
        self.semi_sync: SemiSyncMaster | None = None  # --rpl-semi-sync-master-enabled: commits wait for an ack
        self._checked: set[tuple[DmlPlan, str | None, bool]] = set()  # DML shapes the catalogue accepted
        self._in_thread = 0  # writer-thread jobs in flight (an inline append waits until there are none)
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop (set by `open`)
        self._epoch = 0  # bumped whenever the catalogue may have changed: sessions' ready statements are stale

    @property
    def view(self) -> Primary:
        """The Primary this source writes for: set by serve() before the first connection."""
        assert self.server is not None, "StandaloneSource.server is set by serve() before connections"
        return self.server

    # --- lifecycle -----------------------------------------------------------------------------------
    async def open(self) -> BinlogStore:
        loop = self._loop = asyncio.get_running_loop()
        self.writer.store.bind_loop(loop)
        report = await self._run(self.files.open)
        if report.truncated_bytes:
            log.warning("crash recovery: %s cut at %d (%d bytes of an unfinished write dropped)", report.file,
                        report.truncated_from, report.truncated_bytes)
        elif report.file:
            log.info("binlog %s recovered cleanly (end %d)", report.file, report.last_end)
        self.schema = self.files.schema.clone()
        self._catalogue_changed()
        return self.writer.store

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._run(self.files.close)
        self._executor.shutdown(wait=True)

    def session(self, thread_id: int, handshake_collation: int = 45) -> WriteSession:
        return WriteSession(thread_id=thread_id, handshake_collation=handshake_collation or 45)

    def end_session(self, ws: WriteSession) -> None:
        """A connection ended: its open transaction is rolled back (MariaDB does the same), nothing is written."""
        if ws.in_trx:
            log.info("connection %d closed inside a transaction: %d statement(s) rolled back", ws.thread_id,
                     len(ws.statements))
        ws.discard()

    # --- the writer thread ---------------------------------------------------------------------------
    async def _run(self, fn: Any, *args: Any) -> Any:
        self._in_thread += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        finally:
            self._in_thread -= 1

    def _write_inline(self, groups: list[Group]) -> bool:
        """Whether this batch is appended on the event loop rather than in the writer thread.

        With sync_binlog 0 a commit is one write(2) of a few KB into the page cache (microseconds, no fsync), while
        the thread hop costs two wake-ups and GIL hand-offs per batch: most of the server's CPU per statement for a
        lone writer. fsync (sync_binlog >= 1), a batch that would reach the size limit (rotation: new file, index,
        fsyncs) and any batch while a thread job (rotate, purge) is in flight stay in the writer thread, which also
        keeps every binlog change in one order."""
        if self.cfg.sync_binlog or self._in_thread:
            return False
        size = self.writer.end
        for g in groups:
            size += _INLINE_GROUP_MARGIN
            for ev in g.events:
                size += len(ev[1]) + _INLINE_EVENT_MARGIN
        return size < self.cfg.max_binlog_size

    def enable_semi_sync(self, semi: SemiSyncMaster) -> None:
        """Commits wait for a semi-sync replica's ack of their group, after it is durable (`commit`)."""
        self.semi_sync = semi
        self.files.on_written = semi.written

    async def commit(self, groups: list[Group]) -> None:
        """Write `groups` in one batch with whatever else is waiting; returns once they are durable and, with
        semi-sync, acknowledged by a replica (or the semi-sync timeout passed)."""
        if groups:
            await self.durable(self.commit_nowait(groups))

    def commit_nowait(self, groups: list[Group]) -> Commit:
        """Start committing `groups` (not empty): their (file, end) when appended at once on the event loop, else a
        future of it that group commit resolves once they are durable (its exception: the client's 1026)."""
        if not self._draining and self._write_inline(groups):
            # nothing queued before it: appended now, without a task, a future and two more loop iterations
            try:
                self.files.write_groups(groups)
            except (OSError, BinlogWriteError) as e:
                raise self._write_error(e) from e
            return self.files.last_ends[-1]
        loop = self._loop or asyncio.get_running_loop()  # (the loop `open` ran on: no getpid(2) per commit)
        fut: asyncio.Future[tuple[str, int]] = loop.create_future()
        self._pending.append((groups, fut))
        if not self._draining:
            self._draining = True
            self._drainer = loop.create_task(self._drain(), name="binlog-group-commit")
        return fut

    async def durable(self, commit: Commit) -> None:
        """Wait for a commit started by `commit_nowait` and, with semi-sync, for a replica's ack of it."""
        file, end = commit if isinstance(commit, tuple) else await commit
        if self.semi_sync is not None:
            await self.semi_sync.wait(file, end)

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                groups = [g for gs, _ in batch for g in gs]
                try:
                    seq0 = self.files.seq_no
                    if self._write_inline(groups):
                        self.files.write_groups(groups)
                    else:  # encoded here: the thread only writes and syncs (GIL-free syscalls)
                        await self._run(self.files.write_groups, groups, self.files.encode(groups))
                except (OSError, BinlogWriteError) as e:
                    err = self._write_error(e)
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(err)
                    continue
                if log.isEnabledFor(logging.DEBUG):
                    f = self.files
                    log.debug("committed %d group(s): %s", len(groups),
                              " ".join(f"{f.domain_id}-{f.server_id}-{n}" for n in range(seq0 + 1, f.seq_no + 1)))
                ends = self.files.last_ends
                i = 0
                for gs, fut in batch:
                    i += len(gs)
                    if not fut.done():
                        fut.set_result(ends[i - 1])  # the end of this commit's last group
        finally:
            self._draining = False

    def _write_error(self, e: OSError | BinlogWriteError) -> SqlError:
        """A failed binlog write (logged) as the client's MariaDB 1026."""
        log.error("binlog write failed: %s", e)
        return SqlError(ER_ERROR_ON_WRITE, f"Error writing file '{self.writer.active}' "
                        f"(errno: {getattr(e, 'errno', 0) or 0} \"{getattr(e, 'strerror', e)}\")")

    async def purge(self, req: PurgeRequest) -> list[str]:
        """PURGE BINARY LOGS or expiry, in the writer thread (never racing a commit or a rotation)."""
        return await self._run(self.files.purge, req, self.view.files_in_use())  # type: ignore[no-any-return]

    # --- statements ----------------------------------------------------------------------------------
    async def execute(self, sql: str, st: SessionState, ws: WriteSession) -> ResultSet | Ok:
        if prepared.is_prepared_statement_command(sql.lstrip(_TRIM)):
            return await self._sql_prepared(sql, st, ws)
        first = self.start(sql, st, ws)
        if isinstance(first, Done):
            if first.commit is not None:
                try:
                    await self.durable(first.commit)
                except SqlError as e:
                    note_error(st, e)
                    raise
            return first.result
        stmt, kind = first, first.kind
        try:
            if kind in (Kind.DDL, Kind.DB_DDL):
                st.diagnostics = []
                return await self._ddl(stmt, st, ws)
            if kind is Kind.USE and stmt.database is not None and stmt.database.lower() != "information_schema":
                self.use_database(st, stmt.database)
                return Ok()
        except SqlError as e:
            note_error(st, e)
            raise
        if kind is Kind.FLUSH_LOGS:
            await self._implicit_commit(st, ws)
            name = await self._run(self.files.rotate)
            log.info("FLUSH BINARY LOGS by connection %d: now writing %s", ws.thread_id, name)
            return Ok()
        if kind is Kind.PURGE:
            req = purge_request(sql, st.database)
            assert req is not None
            await self.purge(req)
            st.diagnostics = req.diagnostics()
            return Ok()
        if kind is Kind.BEGIN:
            await self._implicit_commit(st, ws)
        autocommit_before = st.autocommit
        if _in_memory(kind, sql):
            result = execute(sql, st, self.view)
        else:  # SHOW BINLOG EVENTS, @@gtid_binlog_pos, BINLOG_GTID_POS()...: may read binlog files
            result = await asyncio.to_thread(execute, sql, st, self.view)
        await self._after_surface(kind, autocommit_before, st, ws)
        return result

    def start(self, sql: str, st: SessionState, ws: WriteSession) -> Done | Statement:
        """The part of `execute` that needs no wait, shared with the command fast path (server/fast_commands.py):
        DML is checked, turned into events and its commit started; transaction control and SET that the SQL surface
        answers from the session alone are answered. Anything else comes back classified, untouched, for `execute`.
        Raises SqlError (nothing logged) as `execute` does. Not for PREPARE / EXECUTE (the caller routes them)."""
        if (st.autocommit and not st.in_transaction and st.sql_log_bin and self.tables_info is None
                and not ws.events):
            done = self._ready_dml(sql, st, ws)
            if done is not None:
                return done
        m = SET_USER_INT.fullmatch(sql)
        if m is not None and not m.group(1).lower().startswith("binlogd"):  # (@binlogd_*: checked by the surface)
            st.user_vars[m.group(1).lower()] = int(m.group(2))  # what the SQL surface's SET stores for it
            return Done(Ok(), None)
        try:
            stmt = classify(sql, st.database)
            kind = stmt.kind
            if kind is Kind.DML:
                if stmt.plan is not None:
                    self._check_dml(stmt.plan, st)
                group = self._dml(stmt, st, ws)
                st.diagnostics = []  # a statement that uses a table resets SHOW WARNINGS
                return Done(Ok(), None if group is None else self.commit_nowait([group]))
        except SqlError as e:
            note_error(st, e)
            raise
        if not _in_memory(kind, sql) or (kind is Kind.BEGIN and ws.in_trx):
            return stmt  # (BEGIN with an open transaction: its implicit commit is waited for before BEGIN runs)
        if kind is Kind.BEGIN:
            st.in_transaction = False  # the implicit commit (nothing to write: no open transaction)
        autocommit_before = st.autocommit
        result = execute(sql, st, self.view)
        group = self._ends_transaction(kind, autocommit_before, st, ws)
        return Done(result, None if group is None else self.commit_nowait([group]))

    def _ready_dml(self, sql: str, st: SessionState, ws: WriteSession) -> Done | None:
        """An autocommit DML statement whose shape this session logged before, in an unchanged session and catalogue:
        its group straight from the session's ready Query prefix, with no Statement, check or QueryContext built
        (the events `_dml` / `_statement` give for it, tests/test_standalone_fast_path.py). None: the full path."""
        key = dml_shape(sql, st.database)
        if key is None:
            return None
        sv = st.session_sysvars
        if "insert_id" in sv:
            return None
        stamp = ws.ready_stamp  # (compared field by field: no tuple of the session's items per statement)
        if stamp is None or stamp[2] != self._epoch or stamp[1] != st.database or stamp[0] != sv:
            ws.ready.clear()
            ws.ready_stamp = (dict(sv), st.database, self._epoch)
        prefix = ws.ready.get(key)
        if prefix is None:
            prefix = self._make_ready(key, st, ws)
            if prefix is None:
                return None
        ts_f = sv.get("timestamp")
        # (a tuple, not `int | float`: that expression builds a UnionType object every time it runs)
        ts = int(float(ts_f) if isinstance(ts_f, (int, float)) and ts_f else time.time())
        text = sql.lstrip(_TRIM).rstrip(_TRIM_END)
        group = Group(ddl=False, events=[(QUERY_EVENT, prefix + text.encode(), 0, ts)], timestamp=ts,
                      skip=st.skip_replication, xid=next(self._query_ids), info=[text])
        if text[:7].upper().startswith(("INSERT", "REPLACE")):
            ws.last_insert_id = None  # (as `_dml`)
        st.diagnostics = []
        return Done(Ok(), self.commit_nowait([group]))

    def _make_ready(self, key: ShapeKey, st: SessionState, ws: WriteSession) -> bytes | None:
        """The ready Query prefix of a shape `classify` accepted that logs nothing but its Query (no user variable,
        RAND, LAST_INSERT_ID or clock) once the catalogue accepts it in this session; None: the full path (which
        also gives a refusal its error and SHOW WARNINGS)."""
        info = shape_info(key)
        if info is None or any(info[:4]):
            return None
        plan = info[4]
        try:
            if plan is not None:
                self._check_dml(plan, st)
        except SqlError:
            return None
        if len(ws.ready) >= _READY_MAX:
            ws.ready.clear()
        prefix = ws.ready[key] = query_body(b"", self._context(st, ws, False, 0.0))
        return prefix

    def _catalogue_changed(self) -> None:
        self._checked.clear()
        self._epoch += 1

    async def _after_surface(self, kind: Kind, autocommit_before: bool, st: SessionState, ws: WriteSession) -> None:
        group = self._ends_transaction(kind, autocommit_before, st, ws)
        if group is not None:
            await self.commit([group])

    def _ends_transaction(self, kind: Kind, autocommit_before: bool, st: SessionState,
                          ws: WriteSession) -> Group | None:
        """After the SQL surface ran a statement: the open transaction to commit (COMMIT, SET autocommit=1), or
        dropped (ROLLBACK)."""
        if kind is Kind.COMMIT or (kind is not Kind.ROLLBACK and st.autocommit and not autocommit_before):
            return ws.take(self._now(st), st.skip_replication)
        if kind is Kind.ROLLBACK:
            ws.discard()
        return None

    async def _sql_prepared(self, sql: str, st: SessionState, ws: WriteSession) -> ResultSet | Ok:
        """PREPARE / EXECUTE / DEALLOCATE PREPARE (server/standalone/prepared.py): EXECUTE runs the statement with
        its parameters inlined, which is what MariaDB logs."""
        text = prepared.command_text(sql)
        verb = text[:7].upper()
        try:
            if verb.startswith("PREPARE"):
                prepared.prepare(text, ws.prepared, st.user_vars)
                return Ok(info="Statement prepared")
            if verb.startswith("EXECUTE"):
                bound = prepared.bind(text, ws.prepared, st.user_vars)
            else:
                prepared.deallocate(text, ws.prepared)
                return Ok()
        except SqlError as e:
            st.diagnostics = [("Error", e.code, e.message)]
            raise
        return await self.execute(bound, st, ws)

    async def _commit_session(self, st: SessionState, ws: WriteSession) -> None:
        group = ws.take(self._now(st), st.skip_replication)
        if group is not None:
            await self.commit([group])

    async def _implicit_commit(self, st: SessionState, ws: WriteSession) -> None:
        """DDL, BEGIN, FLUSH end the open transaction with a commit (MariaDB's implicit commit)."""
        await self._commit_session(st, ws)
        st.in_transaction = False

    def _now(self, st: SessionState) -> int:
        ts = st.session_sysvars.get("timestamp")
        return int(ts) if isinstance(ts, int | float) and ts else int(time.time())

    def _statement(self, stmt: Statement, st: SessionState, ws: WriteSession, query_id: int) -> StatementEvents:
        ts_f = st.session_sysvars.get("timestamp")
        now = float(ts_f) if isinstance(ts_f, int | float) and ts_f else time.time()
        sv = st.session_sysvars
        last_id: int | None = None
        if stmt.uses_last_insert_id:
            if "last_insert_id" in sv:
                ws.last_insert_id = int(sv.pop("last_insert_id"))  # type: ignore[call-overload]
            if ws.last_insert_id is None:
                raise not_supported("LAST_INSERT_ID() after an INSERT in the same session (binlogd stores no "
                                    "tables, so the generated id is unknown; SET LAST_INSERT_ID=n first)")
            last_id = ws.last_insert_id
        insert_id = sv.pop("insert_id", None) if stmt.kind is Kind.DML and _is_insert(stmt.sql) else None
        rand: tuple[int, int] | None = None
        if stmt.uses_rand:
            s1, s2 = sv.pop("rand_seed1", None), sv.pop("rand_seed2", None)
            rand = (int(s1) if s1 is not None else self._rng.randrange(RAND_MAX_SEED),  # type: ignore[call-overload]
                    int(s2) if s2 is not None else self._rng.randrange(RAND_MAX_SEED))  # type: ignore[call-overload]
        user_vars = tuple((name, st.user_vars.get(name)) for name in stmt.user_vars)
        ctx = self._context(st, ws, stmt.uses_clock, now)
        db = stmt.database if stmt.kind is Kind.DB_DDL else None
        flags = 0
        if stmt.kind is Kind.DB_DDL:
            flags |= LOG_EVENT_SUPPRESS_USE_F
        if stmt.thread_specific:
            flags |= LOG_EVENT_THREAD_SPECIFIC_F
        text = stmt.sql.lstrip(_TRIM).rstrip(_TRIM + ";")
        return StatementEvents(sql=text, ctx=ctx, timestamp=int(now), last_insert_id=last_id,
                               insert_id=None if insert_id is None else int(insert_id),  # type: ignore[call-overload]
                               rand=rand,
                               user_vars=user_vars, collation=ctx.charset.connection, db=db, query_flags=flags,
                               xid=query_id if stmt.ddl_xid else None)

    def _check_dml(self, plan: DmlPlan, st: SessionState) -> None:
        """The catalogue's check of a DML shape; a shape that passed is not checked again until DDL changes the
        catalogue (the check reads only the plan, the default database, strictness and the catalogue)."""
        key = (plan, st.database, _strict(self._get(st, "sql_mode")))
        if key in self._checked:
            return
        self.schema.check_dml(plan, key[1], key[2])
        if len(self._checked) >= 4096:
            self._checked.clear()
        self._checked.add(key)

    def _get(self, st: SessionState, name: str) -> Any:
        sv = st.session_sysvars
        return sv[name] if name in sv else SV.SYSVARS[name].global_value(self.view)

    def use_database(self, st: SessionState, name: str) -> None:
        """USE / COM_INIT_DB: a database of the catalogue (or a system one), else MariaDB's 1049."""
        if name not in self.schema.dbs and name.lower() not in SYSTEM_DATABASES:
            raise SqlError(1049, f"Unknown database '{name}'")
        use_database(st, name)

    def _context(self, st: SessionState, ws: WriteSession, clock: bool, now: float) -> QueryContext:
        """The session's QueryContext; without the clock it depends only on the session's SET variables and
        database (the globals do not change: SET GLOBAL is refused), so an unchanged session reuses the last one."""
        if clock:
            return self._build_context(st, ws, clock, now)
        try:
            key = (tuple(st.session_sysvars.items()), st.database)
            hash(key)
        except TypeError:  # a value without a hash: build it every time
            return self._build_context(st, ws, clock, now)
        cached = ws.context_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        ctx = self._build_context(st, ws, clock, now)
        ws.context_cache = (key, ctx)
        return ctx

    def _build_context(self, st: SessionState, ws: WriteSession, clock: bool, now: float) -> QueryContext:
        sv = st.session_sysvars

        def get(name: str) -> Any:
            return self._get(st, name)

        flags2 = FLAGS2
        if _truthy(get("sql_auto_is_null")):
            flags2 |= OPTION_AUTO_IS_NULL
        if not _truthy(get("foreign_key_checks")):
            flags2 |= OPTION_NO_FOREIGN_KEY_CHECKS
        if not _truthy(get("unique_checks")):
            flags2 |= OPTION_RELAXED_UNIQUE_CHECKS
        client = ws.handshake_collation
        connection = ws.handshake_collation
        if "character_set_client" in sv:
            client = collation_id(SV.default_collation(str(sv["character_set_client"])), client)
        if "collation_connection" in sv:
            connection = collation_id(str(sv["collation_connection"]), connection)
        server = collation_id(str(get("collation_server")))
        inc, off = int(get("auto_increment_increment")), int(get("auto_increment_offset"))
        tz = sv.get("time_zone")
        time_zone = str(tz) if tz is not None and str(tz) != str(SV.SYSVARS["time_zone"].global_value(self.view)) \
            else (str(get("time_zone")) if clock else None)
        return QueryContext(thread_id=ws.thread_id, charset=QueryCharset(client, connection, server),
                            db=st.database if st.database and st.database != "information_schema" else "",
                            flags2=flags2, sql_mode=_sql_mode_bits(str(get("sql_mode"))),
                            auto_increment=AutoIncrement(inc, off) if (inc, off) != (1, 1) else None,
                            time_zone=time_zone, hrnow=round(now * 1_000_000) % 1_000_000 if clock else None)

    def _dml(self, stmt: Statement, st: SessionState, ws: WriteSession) -> Group | None:
        """A checked DML statement: its group to commit (autocommit), or buffered in the open transaction."""
        query_id = next(self._query_ids)
        in_trx = st.in_transaction or not st.autocommit
        group = None
        if st.sql_log_bin:
            ev = self._statement(stmt, st, ws, query_id)
            events = ev.events(self.tables_info)
            if in_trx:
                ws.add(events, query_id, ev.sql)
            else:
                group = Group(ddl=False, events=events, timestamp=ev.timestamp, skip=st.skip_replication,
                              xid=query_id, info=[ev.sql])
        if _is_insert(stmt.sql):
            ws.last_insert_id = None  # an auto-increment id may have been generated: unknowable here
        if in_trx:
            st.in_transaction = True  # autocommit=0: the statement opened a transaction (the 1929 rule)
        return group

    async def _ddl(self, stmt: Statement, st: SessionState, ws: WriteSession) -> Ok:
        groups: list[Group] = []
        pending = ws.take(self._now(st), st.skip_replication)  # DDL commits the open transaction first
        if pending is not None:
            groups.append(pending)
        st.in_transaction = False
        db = st.database if st.database and st.database != "information_schema" else None
        try:
            # only logged DDL changes the catalogue (it models the replicas); unlogged DDL is checked on a copy
            notes = apply_statement(self.schema if st.sql_log_bin else self.schema.clone(), stmt, db)
        except SqlError:
            self._catalogue_changed()  # DDL changed or tried to change the catalogue: DML shapes are checked again
            await self.commit(groups)  # the implicit commit happened before the statement failed (as in MariaDB)
            raise
        self._catalogue_changed()  # the catalogue may have changed: DML shapes are checked again
        query_id = next(self._query_ids)
        if st.sql_log_bin:
            ev = self._statement(stmt, st, ws, query_id)
            groups.append(Group(ddl=True, events=ev.events(self.tables_info), timestamp=ev.timestamp,
                                skip=st.skip_replication, info=[ev.sql], schema_change=(stmt.sql, db)))
        await self.commit(groups)
        return Ok(warnings=len(notes)) if not notes else self._noted(st, notes)

    @staticmethod
    def _noted(st: SessionState, notes: list[str]) -> Ok:
        """IF [NOT] EXISTS on something that is / is not there: OK with MariaDB's Note (SHOW WARNINGS)."""
        codes = {"Can't create database": 1007, "Can't drop database": 1008, "Table '": 1050, "Unknown table": 1051}
        st.diagnostics = [("Note", next((c for k, c in codes.items() if n.startswith(k)), 1105), n) for n in notes]
        return Ok(warnings=len(notes))


def _strict(sql_mode: Any) -> bool:
    """STRICT_TRANS_TABLES / STRICT_ALL_TABLES: a missing value is an error, not a warning (1364, 1048)."""
    modes = str(sql_mode).upper().split(",")
    return "STRICT_TRANS_TABLES" in modes or "STRICT_ALL_TABLES" in modes


_INLINE_VERBS = ("SET", "BEGIN", "START", "COMMIT", "ROLLBACK")
_INLINE_MAX = 4096  # longer text (a SET of a huge string) is lexed in a thread: the loop stays responsive


def _in_memory(kind: Kind, sql: str) -> bool:
    """Statements the SQL surface answers from the session alone, run on the event loop without a thread hop:
    transaction control and SET without a function call, a system variable read or DEFAULT (which can reach a
    server value read from the binlog files: @@log_bin, @@binlog_checksum, BINLOG_GTID_POS())."""
    if (kind not in (Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.OTHER) or len(sql) > _INLINE_MAX or "(" in sql
            or "@@" in sql):
        return False
    text = sql.lstrip(_TRIM)[:9].upper()
    return text.startswith(_INLINE_VERBS) and "DEFAULT" not in sql.upper()


def _is_insert(sql: str) -> bool:
    return sql.lstrip(_TRIM)[:7].upper().startswith(("INSERT", "REPLACE"))


def use_database(st: SessionState, name: str) -> None:
    """Make `name` the session's database (StandaloneSource.use_database checks it against the catalogue)."""
    if name.lower() == "information_schema":
        change_database(st, name)
        return
    if not name or len(name) > 64 or name != name.rstrip(" "):
        raise SqlError(1102, f"Incorrect database name '{name}'")
    st.database = name
    st.session_sysvars.pop("character_set_database", None)
    st.session_sysvars.pop("collation_database", None)
