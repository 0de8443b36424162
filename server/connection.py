"""One client connection: mysql-mimic does the handshake and auth; binlogd adds the replication commands.

mysql-mimic has no hook for COM_REGISTER_SLAVE / COM_BINLOG_DUMP, so `ReplicationConnection`
replaces its command loop (`command_phase`), keeps mimic's handlers for the ordinary commands, and
answers COM_QUERY through `server.sql_surface` with per-session user variables.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from binlogd.protocol import semisync
from binlogd.protocol.commands import CommandError, parse_binlog_dump, parse_binlog_dump_gtid, parse_register_slave
from binlogd.protocol.constants import (
    COM_BINLOG_DUMP,
    COM_BINLOG_DUMP_GTID,
    COM_REGISTER_SLAVE,
    ER_CON_COUNT_ERROR,
    ER_MALFORMED_PACKET,
    ER_UNKNOWN_COM_ERROR,
    ER_UNKNOWN_ERROR,
)
from binlogd.protocol.decision import clamp_capability
from binlogd.protocol.packets import err_packet, ok_packet
from binlogd.protocol.sqlserver import MALFORMED_INPUT, SafeStream, StrictConnection, extra_info
from mysql_mimic import packets, types
from mysql_mimic.connection import Connection
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import MysqlError
from mysql_mimic.results import ResultColumn, ensure_result_set, infer_type
from mysql_mimic.results import ResultSet as ResultSet_
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import Capabilities, ColumnType
from mysql_mimic.variables import GlobalVariables, SessionVariables

from . import command_io
from .auth import is_loopback
from .dump import DumpParams, DumpStream
from .expiry import purge_request
from .fast_commands import FastCommands
from .fault_writer import FaultWriter
from .faults import FaultFile
from .minor_commands import MINOR_COMMANDS
from .primary import Primary
from .privileges import Priv, check_dump, check_purge, check_register, check_show, check_write
from .processlist import (
    STATE_DUMP_SENDING,
    STATE_DUMP_WAITING,
    KillRequest,
    ProcessRow,
    kill_request,
    literal_id,
    thread_id,
    user_name,
)
from .replica_filters import Assignments, filters_for
from .semisync_acks import watch_acks
from .sql_surface import Ok, ResultSet, SessionState, SqlError, change_database, execute
from .standalone.classify import refuse_if_write
from .standalone.session import WriteSession
from .tls import tls_status
from .transcode import first_rotate_crc

log = logging.getLogger("binlogd.conn")
SLOW_STATEMENT_S = 1.0  # a statement slower than this is logged with its text
_WRITE_PRIVS = Priv.WRITE | Priv.RELOAD | Priv.BINLOG_ADMIN
MAX_DUMP_NAME = 512  # FN_REFLEN: MariaDB does not dump from a longer file name

# SHOW PROCESSLIST's Command while one runs (MariaDB's command names)
_COMMAND_NAMES = {0x03: "Query", 0x02: "Init DB", 0x04: "Field List", 0x07: "Refresh", 0x09: "Statistics",
                  0x0A: "Processlist", 0x0C: "Kill", 0x0D: "Debug", 0x0E: "Ping", 0x11: "Change user",
                  0x12: "Binlog Dump", 0x15: "Register Slave", 0x16: "Prepare", 0x17: "Execute",
                  0x18: "Long Data", 0x19: "Close stmt", 0x1A: "Reset stmt", 0x1B: "Set option", 0x1C: "Fetch",
                  0x1F: "Reset connection"}

# Commands mimic handles itself (everything else that is not replication gets 1047 like MariaDB).
_MIMIC_COMMANDS = {
    types.Commands.COM_QUERY: "handle_query",
    types.Commands.COM_PING: "handle_ping",
    types.Commands.COM_INIT_DB: "handle_init_db",
    types.Commands.COM_RESET_CONNECTION: "handle_reset_connection",
    types.Commands.COM_CHANGE_USER: "handle_change_user",
    types.Commands.COM_STMT_PREPARE: "handle_stmt_prepare",
    types.Commands.COM_STMT_EXECUTE: "handle_stmt_execute",
    types.Commands.COM_STMT_CLOSE: "handle_stmt_close",
    types.Commands.COM_STMT_RESET: "handle_stmt_reset",
    types.Commands.COM_STMT_SEND_LONG_DATA: "handle_stmt_send_long_data",
    types.Commands.COM_STMT_FETCH: "handle_stmt_fetch",
}


class ReplicationSession(BaseSession):
    """Per-connection SQL state; statements go to the pure evaluator in `sql_surface`."""

    def __init__(self, primary: Primary) -> None:
        self.primary = primary
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", "5.5.5-" + primary.version, force=True)
        self.variables.set("version_comment", "binlogd", force=True)
        self.username: str | None = None
        self.database: str | None = None
        self.state = SessionState()
        self.handshake_collation = 45  # the client's collation id from its handshake (standalone Query events)
        self.writes: WriteSession | None = None  # standalone mode: this connection's write state
        self.privileges = Priv.ALL  # the account's, from the users file (server/privileges.py)
        self.account_host = "%"  # the account's host pattern (MariaDB names it in 1044)
        self.user_filters: Assignments = {}  # the account's replicate-* rules (server/replica_filters.py)

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        try:
            if (sql[:1] in "kK" or sql[:1].isspace()) and (kill := kill_request(sql)) is not None:
                return await self._kill(kill)
            if self.privileges != Priv.ALL:
                await self._check_privileges(sql)
            if self.writes is not None and self.primary.standalone is not None:  # standalone: writes -> events
                result = await self.primary.standalone.execute(sql, self.state, self.writes)
            elif self.primary.purge is not None and (purge := purge_request(sql, self.state.database)) is not None:
                await self.primary.purge(purge)  # relay mode: PURGE BINARY LOGS of the stored files
                self.state.diagnostics = purge.diagnostics()
                return None
            else:
                refuse_if_write(sql, self.state.database)  # read-only modes: 1290 for writes
                # in a thread: SHOW BINLOG EVENTS, @@gtid_binlog_pos... read binlog files
                result = await asyncio.to_thread(execute, sql, self.state, self.primary)
        except SqlError as e:
            if e.after_columns is not None:
                return _error_after_metadata(e.after_columns, e)
            raise _mysql_error(e) from e
        if isinstance(result, Ok):
            return None
        assert isinstance(result, ResultSet)
        if result.types is not None:
            return result.rows, [name if t is None else ResultColumn(name=name, type=column_type(t))
                                 for name, t in zip(result.columns, result.types, strict=True)]
        if len(set(result.columns)) < len(result.columns):
            return result.rows, typed_by_position(result.rows, result.columns)
        return result.rows, result.columns

    async def _kill(self, kill: KillRequest) -> None:
        """KILL (server/processlist.py): on the event loop, where the connections are; an id that is no plain
        number is evaluated as SELECT evaluates it."""
        processes = self.primary.processes
        assert processes is not None
        me = self.state.connection_id
        if kill.query_id:
            raise SqlError(1957, f"Unknown query id: {kill.target}", "HY000")
        if kill.user:
            count = processes.kill_user(me, user_name(kill.target), kill.query)
            self.state.diagnostics = []
            self.affected_rows = count
            return None
        target = literal_id(kill.target)
        if target is None:
            value = await asyncio.to_thread(execute, f"SELECT {kill.target}", self.state, self.primary)
            assert isinstance(value, ResultSet)
            target = thread_id(value.rows[0][0] if value.rows else None)
        processes.kill(me, target, kill.query)
        return None

    affected_rows = 0  # KILL USER's count, for the OK (read once by the connection)

    async def _check_privileges(self, sql: str) -> None:
        """MariaDB's refusals for a user without the privilege (server/privileges.py), before anything runs."""
        check_show(sql, self.privileges, self.primary.version)
        if self.writes is None and self.primary.purge is not None and purge_request(sql, self.state.database):
            check_purge(self.privileges)  # relay mode
        if self.writes is not None and _WRITE_PRIVS & self.privileges != _WRITE_PRIVS:
            from .standalone.classify import classify
            from .standalone.prepared import statement_to_check

            # PREPARE / EXECUTE: the statement prepared or bound (MariaDB checks it when it is prepared)
            text = statement_to_check(sql, self.writes.prepared, self.state.user_vars)
            if text is None:
                return
            stmt = classify(text, self.state.database)  # 1064 / 1046 first, as MariaDB's parser runs first
            check_write(stmt, text, self.privileges, self.username or "", self.state.host, self.account_host,
                        self.state.database, self.primary.version)

    def grant(self, connection: Connection) -> None:
        """This session's privileges: those of the account the user logged in as (login, COM_CHANGE_USER)."""
        find = getattr(connection.identity_provider, "entry_for", None)
        entry = find(self.username or "", self.state.host) if find is not None else None
        self.privileges = entry.privileges if entry is not None else Priv.NONE
        self.account_host = entry.host if entry is not None else "%"
        self.user_filters = dict(entry.filters) if entry is not None else {}

    async def init(self, connection: Connection) -> None:
        """After authentication: CONNECTION_ID() and USER() answer for this session."""
        self.state.connection_id = connection.connection_id
        self.state.user = self.username or ""
        self.state.host = getattr(connection, "peer_host", "localhost")
        self.grant(connection)
        cipher, version = tls_status(connection.stream.writer.transport)
        self.state.status.update(Ssl_cipher=cipher, Ssl_version=version)
        if self.primary.standalone is not None:
            self.writes = self.primary.standalone.session(connection.connection_id, self.handshake_collation)
        if self.database:  # the database named in the handshake
            try:
                self._change_database(self.database)
            except SqlError as e:
                log.warning("connection %d: handshake database ignored: %s", connection.connection_id, e.message)
                self.database = None

    async def use(self, database: str) -> None:
        """COM_INIT_DB. MariaDB checks the name before looking it up: none is 1046, one with a NUL 1102 (named up to
        the NUL)."""
        try:
            if not database:
                raise SqlError(1046, "No database selected", "3D000")
            if "\0" in database:
                raise SqlError(1102, f"Incorrect database name '{database.split(chr(0))[0]}'", "42000")
            self._change_database(database)
        except SqlError as e:
            raise _mysql_error(e) from e

    def _change_database(self, database: str) -> None:
        if self.writes is not None and self.primary.standalone is not None:
            self.primary.standalone.use_database(self.state, database)  # standalone: the schema catalogue's
        else:
            change_database(self.state, database)

    async def close(self) -> None:
        if self.writes is not None and self.primary.standalone is not None:
            self.primary.standalone.end_session(self.writes)  # an open transaction is rolled back
        await super().close()


_COLUMN_TYPES = {"tinyint": ColumnType.TINY, "smallint": ColumnType.SHORT, "mediumint": ColumnType.INT24,
                 "int": ColumnType.LONG, "bigint": ColumnType.LONGLONG, "decimal": ColumnType.NEWDECIMAL,
                 "float": ColumnType.FLOAT, "double": ColumnType.DOUBLE, "date": ColumnType.DATE,
                 "datetime": ColumnType.DATETIME, "timestamp": ColumnType.TIMESTAMP, "time": ColumnType.TIME,
                 "year": ColumnType.YEAR, "varchar": ColumnType.VAR_STRING, "varbinary": ColumnType.VAR_STRING,
                 "char": ColumnType.STRING, "binary": ColumnType.STRING, "enum": ColumnType.STRING,
                 "set": ColumnType.STRING, "bit": ColumnType.BIT}


def column_type(sql_type: str) -> ColumnType:
    """The protocol type MariaDB sends in a column definition for a column of this SQL type."""
    base = sql_type.split("(")[0].split(" ")[0]
    if base.endswith(("text", "blob")):
        return ColumnType.BLOB
    return _COLUMN_TYPES.get(base, ColumnType.VAR_STRING)


def typed_by_position(rows: list[tuple[Any, ...]], names: list[str]) -> list[ResultColumn]:
    """Each column's type from its first non-NULL value, as mimic infers it, but by position: mimic keys its
    inference by name, so of two columns named alike (`SELECT '', ''`, `SELECT 1, 1`, a prepared `SELECT ?, ?`)
    one stayed untyped and mimic's assertion cost the client a 1105 where MariaDB answers the row."""
    columns = []
    for i, name in enumerate(names):
        value = next((row[i] for row in rows if row[i] is not None), None)
        columns.append(ResultColumn(name=name, type=ColumnType.NULL if value is None else infer_type(value)))
    return columns


def _mysql_error(e: SqlError) -> MysqlError:
    """The SQL surface's error as mimic's exception, keeping its SQLSTATE for the ERR packet."""
    err = MysqlError(e.message, e.code)  # type: ignore[arg-type]
    err.sqlstate = e.sqlstate.encode()  # type: ignore[attr-defined]
    return err


def _error_after_metadata(columns: list[str], error: SqlError) -> ResultSet_:
    """A result set whose rows raise: mimic then sends the column definitions and EOF, and the command loop
    sends the ERR after them, as MariaDB does for SHOW BINLOG EVENTS."""

    async def rows() -> AsyncIterator[tuple[Any, ...]]:
        raise _mysql_error(error)
        yield ()  # an async generator

    return ResultSet_(rows=rows(), columns=[ResultColumn(name=c, type=ColumnType.VARCHAR) for c in columns])


class ReplicationConnection(StrictConnection):
    primary: Primary  # set by the server factory
    faults: FaultFile | None = None  # --faults (testing tool), set by the server factory
    # SHOW PROCESSLIST (server/processlist.py): the current command, since when (monotonic), its text; commands
    # the fast path answers leave them alone (a writer there shows as Sleep since its last other command)
    proc_command = "Connect"
    proc_since = 0.0
    proc_info: str | None = None
    dump: DumpStream | None = None  # the running COM_BINLOG_DUMP
    _end_after_reply = False  # KILL of its own id: the 1927 is the last packet

    def on_close(self) -> None:
        self.primary.connection_closed(self.connection_id)

    # --- the process list (server/processlist.py) ---------------------------------------------------
    def process_row(self) -> ProcessRow:
        session = self.rsession
        peer = extra_info(self.stream.writer, "peername")
        host = "localhost" if is_loopback(self.peer_host) else self.peer_host
        if peer:
            host = f"{host}:{peer[1]}"
        command, state = self.proc_command, ""
        if command == "Connect":
            return ProcessRow(self.connection_id, "unauthenticated user", host, None, command, self.proc_since,
                              "login", None)
        if command in ("Query", "Processlist"):
            state = "starting"
        elif command == "Binlog Dump" and (dump := self.dump) is not None:
            store = self.primary.store
            waiting = bool(dump.file) and store.is_active(dump.file) and dump.pos >= store.end_of(dump.file)
            state = STATE_DUMP_WAITING if waiting else STATE_DUMP_SENDING
        info = self.proc_info if command == "Query" else None
        return ProcessRow(self.connection_id, session.username or "", host, session.state.database, command,
                          self.proc_since, state, info)

    def process_privileges(self) -> Priv:
        return self.rsession.privileges

    def process_user(self) -> str | None:
        return self.session.username

    def kill_connection(self) -> None:
        """KILL CONNECTION: the connection closes without a packet (a dump's ledger says `killed`)."""
        if self.dump is not None:
            self.dump.cancel_reason = "killed"
        self.kill(KillKind.CONNECTION)

    def kill_query(self) -> None:
        """KILL QUERY: a dump ends as at its end (EOF); binlogd's other statements are over before it lands."""
        if self.dump is not None:
            self.dump.end_by_kill_query()

    def end_after_reply(self) -> None:
        self._end_after_reply = True

    @property
    def rsession(self) -> ReplicationSession:
        """mimic types `session` as its BaseSession; the server factory always makes a ReplicationSession."""
        s = self.session
        assert isinstance(s, ReplicationSession)
        return s

    fast_path = True  # serve what it can through FastCommands (off: `binlogd serve --command-path stream`)
    _fast: FastCommands | None = None

    def _fast_commands(self) -> FastCommands | None:
        """The fast path (server/fast_commands.py), when this connection may take it now: a standalone writer with
        every privilege (the others' statements are checked first), no semi-sync wait, plain TCP, no query
        attributes, nothing buffered in mimic's writer."""
        session = self.rsession
        source = self.primary.standalone
        if (not self.fast_path or source is None or session.writes is None or source.semi_sync is not None
                or session.privileges != Priv.ALL or Capabilities.CLIENT_QUERY_ATTRIBUTES in self.capabilities
                or not FastCommands.usable(self.stream) or self.stream._inner._buffer):
            return None
        if self._fast is None:
            assert isinstance(self.stream, SafeStream)
            self._fast = FastCommands(self, self.stream, source, session.state, session.writes)
        return self._fast

    def fast_path_ok(self) -> bytes:
        """The OK the fast path answers with (the one `_write_ok` sends)."""
        return self.ok()

    def fast_path_codec(self) -> str:
        return str(self.client_charset.codec)

    async def command_phase(self) -> None:
        """mimic's loop plus COM_REGISTER_SLAVE / COM_BINLOG_DUMP; never lets an exception kill the server."""
        while True:
            self.proc_command, self.proc_since = "Sleep", time.monotonic()
            if self._end_after_reply:
                return  # KILL of its own id: the 1927 went out
            fast = self._fast_commands()
            if fast is not None and not await fast.serve():
                return  # idle past wait_timeout: dropped silently, as the timed read below does
            self._set_read_timeout(self._wait_timeout())
            try:
                data = await self._read_command()
            except ConnectionClosed:
                return
            except MysqlError as e:  # out-of-order sequence ids, oversized packets: answer, then close
                log.warning("connection %d: %s", self.connection_id, e.msg)
                with contextlib.suppress(Exception):
                    await self._write_raw(err_packet(int(e.code), str(e.msg), b"08S01"))
                return
            except (ConnectionError, asyncio.IncompleteReadError):
                return
            if not data:
                await self._write_raw(err_packet(ER_MALFORMED_PACKET, "Malformed communication packet"))
                self.stream.reset_seq()
                continue
            command = data[0]
            self.proc_command, self.proc_since = _COMMAND_NAMES.get(command, "Query"), time.monotonic()
            try:
                if command == types.Commands.COM_QUIT:
                    return
                if command == COM_BINLOG_DUMP:
                    await self.handle_binlog_dump(data)
                    return  # MariaDB ends the session after a dump (a fake COM_QUIT)
                if command == COM_REGISTER_SLAVE:
                    await self.handle_register_slave(data)
                elif command == COM_BINLOG_DUMP_GTID:
                    with contextlib.suppress(CommandError):
                        log.info("connection %d: COM_BINLOG_DUMP_GTID %s refused (MySQL-only command)",
                                 self.connection_id, parse_binlog_dump_gtid(data))
                    await self._write_raw(err_packet(ER_UNKNOWN_COM_ERROR, "Unknown command"))
                elif command == types.Commands.COM_QUERY:
                    await self._com_query(data[1:])
                elif command in _MIMIC_COMMANDS:
                    await getattr(self, _MIMIC_COMMANDS[command])(data[1:])
                elif command in MINOR_COMMANDS:
                    if (reply := await MINOR_COMMANDS[command](self, data[1:])) is not None:
                        await self._write_raw(reply)
                else:
                    log.info("connection %d: unknown command 0x%02x", self.connection_id, command)
                    await self._write_raw(err_packet(ER_UNKNOWN_COM_ERROR, "Unknown command"))
            except MysqlError as e:
                log.info("connection %d: error %s: %s", self.connection_id, int(e.code), e.msg)
                await self._write_raw(err_packet(int(e.code), str(e.msg), getattr(e, "sqlstate", None)))
            except MALFORMED_INPUT as e:  # mimic's parsers on bad input
                log.info("connection %d: malformed command 0x%02x: %s", self.connection_id, command, e)
                await self._write_raw(err_packet(ER_MALFORMED_PACKET, "Malformed communication packet"))
            except (ConnectionError, ConnectionClosed, asyncio.IncompleteReadError):
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a bug must cost one statement, not the server
                log.exception("connection %d: internal error", self.connection_id)
                await self.stream.write(self.error(msg=f"Internal error: {e}", code=ER_UNKNOWN_ERROR))
            finally:
                self.stream.reset_seq()

    async def _com_query(self, data: bytes) -> None:
        """COM_QUERY as mimic's handle_query does it, without its dispatch and wrapper layers (the write load's
        per-packet path): OK when the session answers None, else the text result set through mimic's writer."""
        if Capabilities.CLIENT_QUERY_ATTRIBUTES in self.capabilities:
            q = packets.parse_com_query(capabilities=self.capabilities, client_charset=self.client_charset,
                                        data=data)
            sql, attrs = q.sql, q.query_attrs
        else:  # the text is the whole packet (mimic's parse, without its reader objects)
            sql, attrs = data.decode(self.client_charset.codec), {}
        self.proc_info = sql
        started = time.monotonic()
        try:
            result = await self.rsession.handle_query(sql, attrs)
        finally:
            took = time.monotonic() - started
            if took > SLOW_STATEMENT_S:  # named, so that a statement that stalls the server can be found
                log.warning("connection %d: a statement took %.1f s: %.300r", self.connection_id, took, sql)
        if result is None:
            if affected := self.rsession.affected_rows:  # KILL USER's count
                self.rsession.affected_rows = 0
                await self._write_raw(self.ok(affected_rows=affected))
            else:
                await self._write_ok()
            return
        await self.write_text_resultset(await ensure_result_set(result))

    async def _read_command(self) -> bytes:
        """The next command packet (server/command_io.py: no await when it is already buffered)."""
        stream = self.stream
        if isinstance(stream, SafeStream):
            return await command_io.read_packet(stream)
        return await stream.read()

    _ok_cache: tuple[object, bytes] | None = None  # (capabilities, status flags) -> the OK's payload

    async def _write_ok(self) -> None:
        """The OK of a statement without a result (built once per capabilities and status flags)."""
        key = (self.capabilities, self.status_flags)
        cached = self._ok_cache
        if self._login_refusal is not None:  # (the login's refusal takes the OK's place: StrictConnection.ok)
            payload = self.ok()
        elif cached is None or cached[0] != key:
            payload = self.ok()
            self._ok_cache = (key, payload)
        else:
            payload = cached[1]
        stream = self.stream
        if isinstance(stream, SafeStream):
            await command_io.write_packet(stream, payload)
        else:
            await stream.write(payload)

    async def handle_change_user(self, data: bytes) -> None:
        await super().handle_change_user(data)
        self.rsession.grant(self)

    over_limit = False  # the server's connection max_connections + 1: only an account with every privilege stays

    def login_refusal(self, username: str) -> bytes | None:
        """MariaDB's extra connection is for SUPER / CONNECTION ADMIN (here: an account with ALL privileges)."""
        if not self.over_limit:
            return None
        find = getattr(self.identity_provider, "entry_for", None)
        entry = find(username, self.peer_host) if find is not None else None
        if entry is not None and entry.privileges == Priv.ALL:
            return None
        return err_packet(ER_CON_COUNT_ERROR, "Too many connections", b"08004")

    def _wait_timeout(self) -> float:
        """The session's wait_timeout (SET SESSION wait_timeout), else the server's."""
        value = self.rsession.state.session_sysvars.get("wait_timeout")
        return float(value) if isinstance(value, int | float) else self.wait_timeout

    async def _refuse_replication(self, register: bool) -> bool:
        """COM_REGISTER_SLAVE / COM_BINLOG_DUMP without REPLICATION SLAVE: MariaDB's refusal, True if refused."""
        session = self.rsession
        try:
            if register:
                check_register(session.privileges, session.username or "", session.account_host)
            else:
                check_dump(session.privileges)
        except SqlError as e:
            log.info("connection %d: user %r refused: %s", self.connection_id, self.session.username, e.message)
            await self._write_raw(err_packet(e.code, e.message, e.sqlstate.encode()))
            return True
        return False

    async def handle_register_slave(self, data: bytes) -> None:
        if await self._refuse_replication(register=True):
            return
        try:
            cmd = parse_register_slave(data)
        except CommandError as e:
            await self._write_raw(err_packet(ER_UNKNOWN_ERROR, str(e)))
            return
        self.primary.register_slave(cmd, self.peer_host, self.connection_id)
        await self._write_raw(ok_packet())

    def _dump_params(self, pos: int, flags: int, server_id: int, file: str) -> DumpParams:
        st = self.rsession.state
        uv = st.user_vars
        checksum = uv.get("master_binlog_checksum")
        heartbeat = uv.get("master_heartbeat_period")
        try:
            heartbeat_ns = int(heartbeat) if heartbeat is not None else 0  # type: ignore[call-overload]
        except (TypeError, ValueError):
            heartbeat_ns = 0
        connect_state = uv.get("slave_connect_state")
        session: ReplicationSession = self.session  # type: ignore[assignment]
        filters, filters_from = filters_for(server_id, self.primary.replica_filters, session.user_filters, uv)
        return DumpParams(
            file=file,
            pos=pos,
            flags=flags,
            replica_server_id=server_id,
            capability=clamp_capability(uv.get("mariadb_slave_capability")),
            skip_replication=st.skip_replication,
            checksum_aware="master_binlog_checksum" in uv,
            first_rotate_crc=first_rotate_crc("master_binlog_checksum" in uv, checksum),
            heartbeat_ns=max(0, heartbeat_ns),
            connect_state=None if connect_state is None else str(connect_state),
            until_state=None if uv.get("slave_until_gtid") is None else str(uv.get("slave_until_gtid")),
            gtid_strict=_truthy(uv.get("slave_gtid_strict_mode")),
            gtid_ignore_duplicates=_truthy(uv.get("slave_gtid_ignore_duplicates")),
            compat=self.primary.compat,
            send_tables_info=_truthy(uv.get("binlogd_send_tables_info")),
            semi_sync=_truthy(uv.get(semisync.USER_VAR)),
            add_checksums=uv.get("binlogd_add_checksums"),
            table_filters=filters, filters_from=filters_from,
        )

    async def handle_binlog_dump(self, data: bytes) -> None:
        if await self._refuse_replication(register=False):
            return
        if len(data[11:].split(b"\0", 1)[0]) >= MAX_DUMP_NAME:  # MariaDB: no dump, an OK, the session ends
            log.info("connection %d: COM_BINLOG_DUMP with a file name of %d bytes or more: session ended",
                     self.connection_id, MAX_DUMP_NAME)
            await self._write_raw(ok_packet())
            return
        try:
            cmd = parse_binlog_dump(data)
        except CommandError as e:
            await self._write_raw(err_packet(ER_UNKNOWN_ERROR, str(e)))
            return
        params = self._dump_params(cmd.pos, cmd.flags, cmd.server_id, cmd.file)
        label = f"[conn {self.connection_id} sid {cmd.server_id} {self.peer_host}]"
        log.info("%s COM_BINLOG_DUMP file=%r pos=%d flags=%d capability=%d skip_replication=%d gtid=%r",
                 label, cmd.file, cmd.pos, cmd.flags, params.capability, params.skip_replication,
                 params.connect_state)
        writer = self.stream.writer
        writer.transport.set_write_buffer_limits(high=16 << 10)  # back-pressure: a slow reader holds little
        ledger = self.primary.ledger
        fault = await self._fault_writer(cmd.server_id, params, label) if self.faults is not None else None
        dump = DumpStream(self.primary.store, writer, self.primary.server_id, params,
                          seq=self.stream.seq.value, conn_label=label, ledger=ledger,
                          ledger_info=self._ledger_info(), fault=fault,  # (metrics label dumps by it)
                          semi=self.primary.semi_sync)
        self.primary.start_dump(dump, cmd.server_id)
        self.dump = dump
        if dump.semi is not None:
            dump.semi.add_client()
        dump_task = asyncio.create_task(dump.run(), name=f"dump-{self.connection_id}")
        watch = self._watch_peer() if dump.semi is None else watch_acks(self.stream.reader, dump, cmd.server_id, label)
        watch_task = asyncio.create_task(watch, name=f"watch-{self.connection_id}")
        try:
            await asyncio.wait({dump_task, watch_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if watch_task.done():
                dump.cancel_reason = "client_gone"  # else the connection itself is being cancelled: shutdown
            for t in (dump_task, watch_task):
                if not t.done():
                    t.cancel()
            for t in (dump_task, watch_task):
                try:
                    await t
                except (asyncio.CancelledError, ConnectionError, OSError):
                    pass  # (a reset from the peer while watching it: the peer is gone, not a bug)
                except Exception:  # (the dump logs its own; this is the watcher's) a bug is logged, never lost
                    log.exception("%s %s failed with an internal error", label, t.get_name())
            self.primary.end_dump(dump, cmd.server_id)
            self.dump = None
            if dump.semi is not None:
                dump.semi.remove_client()
            s = dump.stats
            log.info("%s dump ended (%s): %d events read, %d sent, %d holes, %d dummies, %d begins, %d bytes%s",
                     label, s.end_reason or "replica disconnected", s.events_read, s.events_sent, s.holes,
                     s.dummies, s.begins, s.bytes_sent,
                     f" ({s.thread_writes} writes by the sender thread)" if s.thread_writes else "")

    async def _fault_writer(self, server_id: int, params: DumpParams, label: str) -> FaultWriter | None:
        """--faults: this dump's fault, if one matches (the file is re-read when it changed); its heartbeat_s
        replaces the period the client asked for."""
        assert self.faults is not None
        self.faults.install(*await asyncio.to_thread(self.faults.check))
        m = self.faults.match(server_id)
        if m is None:
            return None
        requested = params.heartbeat_ns
        if m.fault.heartbeat_s is not None:
            params.heartbeat_ns = round(m.fault.heartbeat_s * 1e9)
        return FaultWriter(self.stream.writer, m, self.stream.seq.value, label, requested)

    def _ledger_info(self) -> dict[str, object]:
        """Who is dumping, for the audit ledger's `conn` record (docs/ledger.md)."""
        st = self.rsession.state
        peer = extra_info(self.stream.writer, "peername")
        return {"thread_id": self.connection_id, "peer": f"{peer[0]}:{peer[1]}" if peer else None,
                "user": self.session.username, "capability_set": "mariadb_slave_capability" in st.user_vars}

    async def _watch_peer(self) -> None:
        """A replica sends nothing during a dump (no semisync here); EOF means it went away."""
        reader = self.stream.reader
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return


def _truthy(v: object) -> bool:
    try:
        return int(v) != 0  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
