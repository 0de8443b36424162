"""The mysql-mimic server glue shared by binlogd's primary (server/) and the applier's admin port (applier/).

mysql-mimic does the MySQL server protocol, but its stream misreads a header split across TCP segments and
buffers unbounded packets, and its handshake parser spins forever on a string missing its NUL. `SafeStream`
and `StrictConnection` put binlogd's strict, bounded parsing in front of it and answer a failed login with one
MariaDB-style ERR. Like `protocol/connection.py` (the client side) this module does I/O; the rest of
`protocol/` is sans-IO.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import io
import logging
import ssl
import struct
from contextvars import ContextVar
from typing import Any

from mysql_mimic import context, packets
from mysql_mimic.connection import Connection
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import MysqlError
from mysql_mimic.prepared import REGEX_PARAM, PreparedStatement
from mysql_mimic.stream import ConnectionClosed, MysqlStream
from mysql_mimic.types import Capabilities

from .charsets import BINARY_COLLATION, LATIN1_COLLATION, refused_client_charset, usable_collation
from .constants import ER_ACCESS_DENIED_ERROR, ER_MALFORMED_PACKET, ER_NET_PACKETS_OUT_OF_ORDER
from .handshake import ER_HANDSHAKE_ERROR, HandshakeError, check_change_user, parse_handshake_response
from .packets import err_packet
from .stmt_errors import (
    MAX_LONG_DATA,
    MAX_PREPARED_STMTS,
    bad_arguments,
    no_open_cursor,
    too_many_statements,
    unknown_statement,
)
from .stmt_params import read_execute_params

log = logging.getLogger("binlogd.conn")


def _return_big_buffers_to_the_os() -> None:
    """glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so after one big packet
    the next 16 MiB statements come from the heap, whose top is rarely given back: RSS stayed hundreds of MB
    above the start after a storm of big statements. A fixed threshold (M_MMAP_THRESHOLD, 128 KiB as glibc's
    default) keeps every packet-sized buffer in its own mapping, unmapped when freed. Done on import: every
    server that uses this module reads client packets."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # -3: M_MMAP_THRESHOLD


_return_big_buffers_to_the_os()

# what mimic's packet parsers raise on bytes that do not parse: the command gets 1835, the connection lives on
MALFORMED_INPUT = (struct.error, IndexError, ValueError)
ER_WRONG_VALUE_FOR_VAR = 1231

# the client's address during authentication (identity providers use it for host rules and error texts)
PEER_HOST: ContextVar[str] = ContextVar("binlogd_peer_host", default="unknown")


def access_denied(user: str, host: str, with_password: bool) -> str:
    """MariaDB's 1045 text."""
    return f"Access denied for user '{user}'@'{host}' (using password: {'YES' if with_password else 'NO'})"


class SafeStream:
    """mimic's stream (a compiled class, so wrapped rather than subclassed) with a safer `read`: the 4-byte
    header is read with readexactly (mimic's read(4) may return part of a header split across TCP segments)
    and a packet's size is bounded like MariaDB's max_allowed_packet (16 MiB by default), so a client cannot
    make the server buffer gigabytes."""

    max_payload = 16 << 20

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._inner = MysqlStream(reader, writer)
        # seconds each read may wait (connect_timeout before login, wait_timeout after, as MariaDB's
        # net->read_timeout): a silent peer or one stuck inside a packet is dropped without an answer
        self.timeout: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def read(self) -> bytes:
        """One packet (joined across 16 MiB frames); one timeout covers the whole packet."""
        try:
            async with asyncio.timeout(self.timeout):
                return await self._read_packet()
        except (asyncio.IncompleteReadError, TimeoutError) as e:
            raise ConnectionClosed() from e

    async def _read_packet(self) -> bytes:
        seqs = self._inner.seq
        reader = self._inner.reader
        data = b""
        while True:
            word = int.from_bytes(await reader.readexactly(4), "little")
            length, seq = word & 0xFFFFFF, word >> 24
            expected = next(seqs)
            if seq != expected:
                raise MysqlError("Got packets out of order", ER_NET_PACKETS_OUT_OF_ORDER)  # type: ignore[arg-type]
            if len(data) + length > self.max_payload:
                raise MysqlError("Got a packet bigger than 'max_allowed_packet' bytes", 1153)  # type: ignore[arg-type]
            data += await reader.readexactly(length)
            if length < 0xFFFFFF:
                return data


def extra_info(writer: asyncio.StreamWriter, name: str) -> Any:
    """writer.get_extra_info(name), None once the socket is gone: uvloop asks the socket each time (and raises
    on a closed one) where asyncio's transport answers from what it cached at connect."""
    try:
        return writer.get_extra_info(name)
    except (OSError, ValueError):
        return None


def _feed(transport: asyncio.BaseTransport, data: bytes) -> None:
    """Give bytes read before the TLS upgrade to the TLS protocol now installed on `transport`."""
    protocol = transport.get_protocol()
    if transport.is_closing() or not _is_tls_protocol(protocol):
        transport.close()
        return
    view = memoryview(data)
    while view:
        buf = protocol.get_buffer(len(view))
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        protocol.buffer_updated(n)
        view = view[n:]


def _is_tls_protocol(protocol: object) -> bool:
    """Is start_tls's protocol installed? asyncio's SSLProtocol is a BufferedProtocol; uvloop's has the same
    get_buffer / buffer_updated methods without the base class."""
    return isinstance(protocol, asyncio.BufferedProtocol) or (
        hasattr(protocol, "get_buffer") and hasattr(protocol, "buffer_updated"))


class AuthFailed(Exception):
    """The handshake ended with an access-denied error already sent."""


PARAMETER_COUNT_AVAILABLE = 0x08  # COM_STMT_EXECUTE flags: a parameter count follows (query attributes)
# escape_string_for_mysql: the characters MariaDB escapes when it writes a parameter into the logged statement
_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\"": "\\\"", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"})


def sql_literal(value: Any) -> str:
    """A prepared statement's parameter as an SQL literal: strings quoted with MariaDB's backslash escapes."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, bytes | bytearray):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, dt.datetime | dt.date | dt.time | dt.timedelta):
        return "'" + str(value) + "'"
    return "'" + str(value).translate(_ESCAPES) + "'"


class StrictConnection(Connection):
    """mimic's Connection with a strict handshake, one ERR per failed login, and no traceback for bad input."""

    require_secure_transport = False  # set by the server: a clear-text login is refused with 1045, as MariaDB does
    tls_handshake_timeout = 10.0  # seconds; a client that stalls in its TLS hello costs only its own connection
    _login_refusal: bytes | None = None
    connect_timeout = 10.0  # MariaDB's: a peer that does not log in within it is dropped silently
    wait_timeout = 28800.0  # MariaDB's default: an authenticated client idle for longer is dropped silently
    _shutting_down = False

    def shut_down(self) -> None:
        """Server shutdown: end the connection without a word, idle or in a dump, as a real MariaDB 10.11 does
        on SIGTERM (recorded: no packet, the socket closes; a replica sees 2013 and reconnects), as KILL of another
        connection does."""
        if self._task:
            self._shutting_down = True
            self._task.cancel()

    @property
    def tls_active(self) -> bool:
        return extra_info(self.stream.writer, "ssl_object") is not None

    async def _start_tls(self) -> None:
        """Upgrade after the client's SSLRequest. A failed handshake (bad certificate, garbage instead of a TLS
        hello, a stall) ends this connection only.

        Why not just StreamWriter.start_tls: a client sends its TLS hello right behind the SSLRequest without
        waiting, so the hello is often already in the StreamReader's buffer, where the TLS protocol would never
        see it (the handshake would then stall). Those bytes are handed to the TLS protocol first."""
        assert self.ssl is not None
        writer, reader = self.stream.writer, self.stream.reader
        transport = writer.transport
        loop = asyncio.get_running_loop()
        upgrade = asyncio.ensure_future(writer.start_tls(self.ssl, ssl_handshake_timeout=self.tls_handshake_timeout))

        def feed_early() -> None:
            """Runs after start_tls installed the TLS protocol: the bytes the StreamReader got until then, including
            a hello whose read was already queued behind this coroutine when the upgrade began (it still went to the
            StreamReader, and the handshake stalled until its timeout: seen once in a full test run)."""
            if not _is_tls_protocol(transport.get_protocol()):
                if not upgrade.done() and not transport.is_closing():
                    loop.call_soon(feed_early)  # start_tls is still draining the writer: not installed yet
                return
            early = bytes(reader._buffer)
            reader._buffer.clear()
            if early:
                _feed(transport, early)

        try:
            await asyncio.sleep(0)  # start_tls has installed the TLS protocol and queued its connection_made
            loop.call_soon(feed_early)
            await upgrade
        except (TimeoutError, ssl.SSLError, OSError, ConnectionError) as e:
            raise AuthFailed(f"TLS handshake failed: {e or type(e).__name__}") from e
        finally:
            if not upgrade.done():
                upgrade.cancel()
        reader._transport = writer.transport  # pause/resume reading on the TLS transport

    _peer_host: str | None = None

    @property
    def peer_host(self) -> str:
        """The client's address, kept from the first ask (the handshake's), while the socket was open."""
        if self._peer_host is None:
            peer = extra_info(self.stream.writer, "peername")
            if not peer:
                return "unknown"
            self._peer_host = str(peer[0])
        return self._peer_host

    async def _start(self) -> None:
        """mimic's _start, except that a failed handshake is answered once (1043 or 1045) and logged
        without a traceback."""
        context.connection_id.set(self.connection_id)
        self._set_read_timeout(self.connect_timeout)
        try:
            await self.connection_phase()
            await self.session.init(self)
        except AuthFailed as e:
            log.info("connection %d from %s: %s", self.connection_id, self.peer_host, e)
            return
        except (ConnectionClosed, ConnectionError, asyncio.IncompleteReadError):
            log.info("connection %d from %s: closed during the handshake", self.connection_id, self.peer_host)
            return
        except Exception as e:
            log.warning("connection %d from %s: bad handshake: %r", self.connection_id, self.peer_host, e)
            with contextlib.suppress(Exception):
                if isinstance(e, MysqlError) and e.code == ER_NET_PACKETS_OUT_OF_ORDER:
                    await self._write_out_of_order()
                else:
                    await self._write_raw(err_packet(ER_HANDSHAKE_ERROR, "Bad handshake", b"08S01"))
            return
        self._set_read_timeout(self.wait_timeout)
        try:
            await self.command_phase()
        except asyncio.CancelledError:
            if self._shutting_down:
                log.info("connection %d closed: server shutdown", self.connection_id)
                return
            if self._kill != KillKind.CONNECTION:
                raise
            # KILL from another connection: the socket closes without a packet, as a real 10.11 does (recorded:
            # an idle client reads EOF, a dump's reader "Lost connection"); only a KILL of its own id gets 1927
            log.info("connection %d killed", self.connection_id)
        finally:
            self.on_close()
            await self.session.close()

    def _set_read_timeout(self, seconds: float) -> None:
        if isinstance(self.stream, SafeStream):
            self.stream.timeout = seconds

    def on_close(self) -> None:
        """Called once when the connection ends (subclasses drop their registrations)."""

    async def connection_phase(self) -> None:
        """mimic's connection phase with binlogd's strict parser in front of mimic's (which loops forever on
        a missing NUL terminator)."""
        PEER_HOST.set(self.peer_host)
        next(self.prepared_stmt_seq)  # mimic's ids start at 0; MariaDB's at 1
        plugin = self.identity_provider.get_default_plugin()
        auth_data, auth_state = await plugin.start()
        assert isinstance(auth_data, bytes)
        self.handshake_auth_data = auth_data
        self.handshake_auth_plugin = plugin.name
        await self.stream.write(packets.make_handshake_v10(
            capabilities=self.server_capabilities, server_charset=self.server_charset,
            server_version=str(self.session.variables.get("version")), connection_id=self.connection_id,
            auth_data=auth_data, status_flags=self.status_flags, auth_plugin_name=plugin.name))
        data = await self.stream.read()
        try:
            checked = parse_handshake_response(data, int(self.server_capabilities))
            if checked.ssl_request:
                if self.ssl is None:  # CLIENT_SSL is not offered: a client that insists is not served
                    raise HandshakeError("SSL requested but not offered")
                await self._start_tls()
                data = await self.stream.read()  # the real response, now encrypted
                checked = parse_handshake_response(data, int(self.server_capabilities))
                if checked.ssl_request:
                    raise HandshakeError("a second SSL request")
            refused = refused_client_charset(checked.charset)
            if refused is not None:
                await self._write_raw(err_packet(ER_WRONG_VALUE_FOR_VAR, "Variable 'character_set_client' can't be "
                                                 f"set to the value of '{refused}'", b"42000"))
                raise AuthFailed(f"client character set {refused} refused")
            collation = usable_collation(checked.charset)
            self.session.handshake_collation = collation  # type: ignore[attr-defined]
            if collation != checked.charset or collation == BINARY_COLLATION:  # mimic decodes names with it
                data = data[:8] + bytes((LATIN1_COLLATION if collation == BINARY_COLLATION else collation,)) + data[9:]
            response = packets.parse_handshake_response(capabilities=self.server_capabilities, data=data)
        except (HandshakeError, ValueError, KeyError, struct.error, UnicodeDecodeError) as e:
            await self._write_raw(err_packet(ER_HANDSHAKE_ERROR, "Bad handshake", b"08S01"))
            raise AuthFailed(f"bad handshake: {e}") from e
        assert isinstance(response, packets.HandshakeResponse41)
        if self.require_secure_transport and not self.tls_active:
            await self._write_raw(err_packet(ER_ACCESS_DENIED_ERROR, access_denied(
                response.username, self.peer_host, bool(response.auth_response))))
            raise AuthFailed(f"user {response.username!r} refused: clear-text login with require_secure_transport")
        self.capabilities = response.capabilities
        self.max_packet_size = response.max_packet_size
        self.session.variables.set("character_set_client", "binary" if collation == BINARY_COLLATION
                                   else response.client_charset.name)
        self.session.database = response.database
        self.client_plugin_name = response.client_plugin
        self.client_connect_attrs = response.connect_attrs
        self.session.variables.set("external_user", response.username, force=True)
        refusal = self._login_refusal = self.login_refusal(response.username)
        await self.authenticate(
            auth_state=auth_state, server_plugin=plugin, username=response.username,
            client_plugin_name=response.client_plugin, auth_response=response.auth_response,
            connect_attrs=response.connect_attrs)
        self.stream.reset_seq()
        if self.session.username is None:
            raise AuthFailed("access denied")
        if refusal is not None:
            raise AuthFailed(f"user {response.username!r} refused after authentication: too many connections")

    def login_refusal(self, username: str) -> bytes | None:
        """The ERR a correct login gets instead of its OK (MariaDB checks max_connections after the password)."""
        return None

    def ok(self, **kwargs: Any) -> bytes:
        """mimic's OK, except the login's when `login_refusal` gave an ERR for it (the packet takes its place)."""
        refusal, self._login_refusal = self._login_refusal, None
        return refusal if refusal is not None else super().ok(**kwargs)

    async def handle_change_user(self, data: bytes) -> None:
        try:
            check_change_user(data, int(self.capabilities))
        except HandshakeError as e:
            raise MysqlError(f"Malformed communication packet ({e})", ER_MALFORMED_PACKET) from e  # type: ignore[arg-type]
        self.session.username = None  # mimic keeps the previous user when the new login fails
        await super().handle_change_user(data)
        if self.session.username is None:  # mimic answered access denied: do not keep a half-authenticated session
            raise ConnectionClosed()

    async def authenticate(self, username: str, auth_response: bytes, client_plugin_name: str | None,
                           connect_attrs: dict[str, str], auth_state: Any = None, server_plugin: Any = None) -> None:
        """Unknown users get MariaDB's 1045 text (mimic would answer 'User x does not exist'), and so does an
        account bound to TLS (REQUIRE SSL) logging in without it."""
        requires_tls = getattr(self.identity_provider, "requires_tls", None)
        if await self.identity_provider.get_user(username) is None or (
                requires_tls is not None and requires_tls(username) and not self.tls_active):
            await self._write_raw(err_packet(ER_ACCESS_DENIED_ERROR,
                                             access_denied(username, self.peer_host, bool(auth_response))))
            return
        await super().authenticate(username, auth_response, client_plugin_name, connect_attrs, auth_state,
                                   server_plugin)

    # ---- prepared statements: mimic's registry (prepared_stmts), MariaDB's answers -----------------------------

    def _stmt(self, data: bytes, command: str) -> PreparedStatement:
        """The statement a COM_STMT_* names, or MariaDB's 1243 naming the command that asked."""
        if len(data) < 4:
            raise MysqlError("Malformed communication packet", ER_MALFORMED_PACKET)  # type: ignore[arg-type]
        stmt_id = int.from_bytes(data[:4], "little")
        stmt = self.prepared_stmts.get(stmt_id)
        if stmt is None:
            raise unknown_statement(stmt_id, command)
        return stmt

    async def handle_stmt_prepare(self, data: bytes) -> None:
        if len(self.prepared_stmts) >= MAX_PREPARED_STMTS:
            raise too_many_statements()
        await super().handle_stmt_prepare(data)

    async def handle_stmt_execute(self, data: bytes) -> None:
        """Unknown ids get 1243 and parameter data that cannot be read gets 1210, checked before anything runs; the
        parameters reach the statement as properly quoted literals (`_bind`)."""
        stmt = self._stmt(data, "mysqld_stmt_execute")
        if len(data) < 9:
            raise bad_arguments("mysqld_stmt_execute")
        try:
            bound = self._bind(stmt, data)
        except (AssertionError, OverflowError, MemoryError, struct.error, IndexError, ValueError, KeyError,
                TypeError, EOFError, UnicodeDecodeError, LookupError, MysqlError) as e:
            stmt.param_buffers = None
            log.info("connection %d: COM_STMT_EXECUTE %d: bad parameters: %r", self.connection_id, stmt.stmt_id, e)
            raise bad_arguments("mysqld_stmt_execute") from e
        if bound is None:
            await super().handle_stmt_execute(data)
            return
        flags = data[4] & ~PARAMETER_COUNT_AVAILABLE  # mimic then reads no parameters: the text has them
        stmt.param_buffers = None
        self.prepared_stmts[stmt.stmt_id] = bound
        try:
            await super().handle_stmt_execute(data[:4] + bytes((flags,)) + data[5:9])
        finally:
            self.prepared_stmts[stmt.stmt_id] = stmt
            stmt.cursor = bound.cursor

    def _bind(self, stmt: PreparedStatement, data: bytes) -> PreparedStatement | None:
        """The statement with its parameters spliced in as SQL literals (None: it has none).

        mimic splices each parameter in as ``'{value}'`` through ``re.sub``: a quote in a value ends the literal (the
        standalone primary would log another statement than the client's), a backslash is taken as a regex escape and
        a ``?`` inside a value for the next placeholder. Here the placeholders are found once in the prepared text and
        the values quoted as MariaDB quotes string literals; mimic then runs the result as a statement without
        parameters (its result-set and cursor handling unchanged).
        """
        if stmt.num_params == 0:
            return None
        reader = io.BytesIO(data)
        reader.seek(9)  # stmt_id, flags, iteration count
        count = stmt.num_params
        if Capabilities.CLIENT_QUERY_ATTRIBUTES in self.capabilities:
            count = packets.read_uint_len(reader)
        params = read_execute_params(data, reader.tell(), count, self.capabilities, self.client_charset,
                                     stmt.param_buffers)
        if len(params) < stmt.num_params:
            raise ValueError(f"{len(params)} parameters for {stmt.num_params} placeholders")
        parts, last = [], 0
        for m, value in zip(REGEX_PARAM.finditer(stmt.sql), params, strict=False):
            parts += [stmt.sql[last:m.start()], sql_literal(value)]
            last = m.end()
        parts.append(stmt.sql[last:])
        return PreparedStatement(stmt_id=stmt.stmt_id, sql="".join(parts), num_params=0)

    async def handle_stmt_fetch(self, data: bytes) -> None:
        stmt = self._stmt(data, "mysqld_stmt_fetch")
        if stmt.cursor is None:
            raise no_open_cursor(stmt.stmt_id)
        if len(data) < 8:
            raise MysqlError("Malformed communication packet", ER_MALFORMED_PACKET)  # type: ignore[arg-type]
        await super().handle_stmt_fetch(data)

    async def handle_stmt_reset(self, data: bytes) -> None:
        self._stmt(data, "mysqld_stmt_reset")
        await super().handle_stmt_reset(data)

    async def handle_stmt_close(self, data: bytes) -> None:
        """No answer, whatever the packet holds (MariaDB sends none: a pipelining client would get out of step)."""
        if len(data) >= 4:
            self.prepared_stmts.pop(int.from_bytes(data[:4], "little"), None)

    async def handle_stmt_send_long_data(self, data: bytes) -> None:
        """No answer ever (as MariaDB); a short packet or an unknown id is ignored, and a parameter's data is
        bounded by max_allowed_packet (what is beyond it is dropped, so a client cannot grow it forever)."""
        if len(data) < 6:
            return
        stmt = self.prepared_stmts.get(int.from_bytes(data[:4], "little"))
        if stmt is None:
            return
        param_id = int.from_bytes(data[4:6], "little")
        if param_id >= stmt.num_params:
            return
        buffers = stmt.param_buffers if stmt.param_buffers is not None else {}
        stmt.param_buffers = buffers
        buffer = buffers.setdefault(param_id, bytearray())
        buffer += data[6 : 6 + max(0, MAX_LONG_DATA - len(buffer))]

    async def _write_raw(self, payload: bytes) -> None:
        await self.stream.write(payload)

    async def _write_out_of_order(self) -> None:
        """MariaDB answers a handshake response with a wrong sequence id with 1156 in packet 1 (the id the
        response should have had), whatever id the response came with."""
        payload = err_packet(ER_NET_PACKETS_OUT_OF_ORDER, "Got packets out of order", b"08S01")
        self.stream.writer.write(struct.pack("<I", len(payload) | 1 << 24) + payload)
        await self.stream.writer.drain()
