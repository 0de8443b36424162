"""A small asyncio replication client: what a MariaDB 10.11 replica's IO thread does on the wire.

Shared by the relay (issue 4) and the applier (issue 6). It owns the socket and the session (handshake with
mysql_native_password or MariaDB's client_ed25519, optionally over TLS; the text-protocol queries a 10.11
replica sends before the dump, COM_REGISTER_SLAVE, COM_BINLOG_DUMP) and yields raw events. All framing and
encoding is delegated to the sans-IO codecs in this package (packets, commands, checksum, binlog_file, events);
this module only adds I/O and the per-connection state they need (sequence ids, the current checksum algorithm).

Errors are all `ReplicationError`. `fatal` follows the 10.11 IO thread: it stops without retrying on 1236
(ER_MASTER_FATAL_ERROR_READING_BINLOG), 1041 (ER_OUT_OF_RESOURCES) and on an event whose CRC does not
match (ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE, 1743: the bytes came from the primary's file, so a retry
reads the same corruption). Everything else (lost connection, read timeout, access denied, EOF of a
non-blocking dump is not an error) is retryable.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import ssl
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Self

import numpy as np

from . import ed25519
from .binlog_file import BinlogFormatError, fde_checksum_alg
from .checksum import crc_ok
from .commands import build_binlog_dump, build_register_slave
from .constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_SEND_ANNOTATE_ROWS_EVENT,
    CAP_MINE,
    COM_QUERY,
    COM_QUIT,
    CRC_LEN,
    ER_MASTER_FATAL_ERROR_READING_BINLOG,
    ER_UNKNOWN_SYSTEM_VARIABLE,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    MAX_PACKET_PAYLOAD,
)
from .dump_receiver import DumpReceiver
from .dump_runs import EventRun, Ints, scan_packets
from .handshake import CLIENT_PLUGIN_AUTH, CLIENT_PROTOCOL_41, CLIENT_SECURE_CONNECTION, CLIENT_SSL
from .packets import PacketError, PacketReader, frame, parse_err
from .semisync import MASTER_ENABLED_VAR, USER_VAR, SemiSyncError, ack_packet, split_event_packet
from .tls_options import TlsOptions

CLIENT_LONG_PASSWORD = 1
CLIENT_LONG_FLAG = 1 << 2
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_FLAGS = (CLIENT_LONG_PASSWORD | CLIENT_LONG_FLAG | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS
                | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH)  # no CLIENT_DEPRECATE_EOF: classic EOF rows
UTF8MB4_GENERAL_CI = 45
NATIVE_PLUGIN = "mysql_native_password"

ER_OUT_OF_RESOURCES = 1041
ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE = 1743
CR_CONN_HOST_ERROR = 2003
CR_SERVER_LOST = 2013
CR_MALFORMED_PACKET = 2027
CR_AUTH_PLUGIN_CANNOT_LOAD = 2059
CR_SSL_CONNECTION_ERROR = 2026
FATAL_CODES = frozenset({ER_MASTER_FATAL_ERROR_READING_BINLOG, ER_OUT_OF_RESOURCES,
                         ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE})

_U32 = struct.Struct("<I")
_CRC32_RESIDUE = 0x2144DF1C  # zlib.crc32(data + crc32(data) as 4 little-endian bytes), whatever the data
STREAM_LIMIT = 1 << 16  # asyncio StreamReader buffer bound; reads are chunked at this size
DUMP_READ = 1 << 20  # a dump reads up to this much at once (DumpReceiver's buffer; runs checked as a whole)
COMMAND_MAX_PAYLOAD = 64 << 20  # handshake and query replies
EVENT_MAX_PAYLOAD = 1 << 30  # slave_max_allowed_packet default


class ReplicationError(Exception):
    """A server ERR packet or a client-side failure; `fatal` means a replica must not reconnect and retry."""

    def __init__(self, code: int, message: str, fatal: bool | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.fatal = code in FATAL_CODES if fatal is None else fatal

    def io_error_text(self) -> str:
        """Last_IO_Error as a 10.11 IO thread words this error: a CRC failure, a fatal ERR packet the source sent in
        the dump (1236...); other errors keep the client's own text."""
        if self.code == ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE:
            return f"Replication event checksum verification failed while reading from network. ({self.message})"
        if self.fatal and self.code < 2000:
            return f"Got fatal error {self.code} from master when reading data from binary log: '{self.message}'"
        return self.message


@dataclass
class ClientConfig:
    """Connection and dump settings; the defaults are those of a plain 10.11 replica."""

    host: str
    port: int
    server_id: int
    user: str = "root"
    password: str = field(default="", repr=False)  # never in a log line or an error message
    capability: int = CAP_MINE
    checksum: bool = True  # SET @master_binlog_checksum (without it a CRC32 primary answers 1236)
    heartbeat_s: float | None = None  # None: @master_heartbeat_period not sent (server default: none)
    skip_replication: bool = False  # FILTER_ON_MASTER: the primary drops 0x8000-flagged events
    annotate: bool = True  # BINLOG_SEND_ANNOTATE_ROWS_EVENT
    gtid: str | None = None  # @slave_connect_state; None = file/pos mode
    gtid_strict: bool = False
    report_port: int = 0
    connect_timeout: float = 10.0  # TCP connect, handshake, and each command-phase reply
    read_timeout: float | None = None  # per dump read; None = 2 * heartbeat_s, or no timeout without heartbeats
    tls: TlsOptions | None = None  # None: clear text (protocol/tls_options.py: the URL options)
    semi_sync: bool = False  # rpl_semi_sync_slave_enabled: ask for semi-sync when the primary offers it

    def dump_read_timeout(self) -> float | None:
        if self.read_timeout is not None:
            return self.read_timeout
        return 2 * self.heartbeat_s if self.heartbeat_s else None


def native_password_scramble(password: str, nonce: bytes) -> bytes:
    """mysql_native_password: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))); empty for an empty password."""
    if not password:
        return b""
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(nonce + hashlib.sha1(h1).digest()).digest()
    return bytes(a ^ b for a, b in zip(h1, h2, strict=True))


@dataclass(frozen=True, slots=True)
class ServerHandshake:
    server_version: str
    connection_id: int
    capabilities: int
    nonce: bytes
    plugin: str


def parse_handshake_v10(p: bytes) -> ServerHandshake:
    """Initial handshake packet (protocol 10); raises ReplicationError on anything malformed."""
    try:
        if p[0] != 10:
            raise ReplicationError(CR_MALFORMED_PACKET, f"unsupported handshake protocol version {p[0]}")
        end = p.index(b"\0", 1)
        version = p[1:end].decode("utf-8", "replace")
        q = end + 1
        conn_id, = struct.unpack_from("<I", p, q)
        nonce1 = p[q + 4 : q + 12]
        cap_lo, _charset, _status, cap_hi, auth_len = struct.unpack_from("<HBHHB", p, q + 13)
        caps = cap_lo | cap_hi << 16
        q += 13 + 8 + 10
        n2 = max(13, auth_len - 8) if caps & CLIENT_SECURE_CONNECTION else 0
        nonce2 = p[q : q + n2].rstrip(b"\0")
        q += n2
        plugin = NATIVE_PLUGIN
        if caps & CLIENT_PLUGIN_AUTH and q < len(p):
            plugin = p[q:].split(b"\0", 1)[0].decode("ascii", "replace")
    except (IndexError, ValueError, struct.error) as e:
        raise ReplicationError(CR_MALFORMED_PACKET, f"malformed handshake packet: {e}") from None
    return ServerHandshake(version, conn_id, caps, nonce1 + nonce2, plugin)


def _lenenc(p: bytes, q: int) -> tuple[int | None, int]:
    """Length-encoded integer at q -> (value or None for 0xFB NULL, next offset)."""
    b = p[q]
    if b < 0xFB:
        return b, q + 1
    if b == 0xFB:
        return None, q + 1
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(b)
    if size is None or q + 1 + size > len(p):
        raise ReplicationError(CR_MALFORMED_PACKET, "bad length-encoded integer")
    return int.from_bytes(p[q + 1 : q + 1 + size], "little"), q + 1 + size


def _is_eof(p: bytes) -> bool:
    return p[:1] == b"\xfe" and len(p) < 9


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


class ReplicationClient:
    """One replica session. Not reusable after a dump: the server ends the session when the dump ends."""

    def __init__(self, cfg: ClientConfig, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.cfg = cfg
        self._reader = reader
        self._writer = writer
        self._packets = PacketReader(max_payload=COMMAND_MAX_PAYLOAD)
        self._seq = 0
        self._dumping = False
        self._closed = False
        self.handshake: ServerHandshake | None = None
        self.checksum_alg_before_fd = BINLOG_CHECKSUM_ALG_OFF  # what SELECT @master_binlog_checksum said
        self._alg = BINLOG_CHECKSUM_ALG_OFF  # the checksum algorithm of the events being received
        self._parts: list[bytes] = []  # the parts so far of a dump packet split at 16 MiB
        self._parts_size = 0
        self.semi_sync = False  # the primary agreed: event packets carry the semi-sync header (protocol/semisync.py)
        self._ack_cut = False  # _split stopped after an event that asks for an ack
        self._receiver: DumpReceiver | None = None  # the dump's reads (set by start_dump; not over TLS)

    # ---- connection -------------------------------------------------------------------------------

    @classmethod
    async def connect(cls, cfg: ClientConfig) -> ReplicationClient:
        """TCP connect and authenticate; the socket is closed again on any failure."""
        try:
            async with asyncio.timeout(cfg.connect_timeout):
                reader, writer = await asyncio.open_connection(cfg.host, cfg.port, limit=DUMP_READ)
        except (OSError, TimeoutError) as e:
            # Connector/C's text, as a 10.11 replica shows it in Last_IO_Error
            why = f'{e.errno} "{os.strerror(e.errno)}"' if isinstance(e, OSError) and e.errno else "timeout"
            raise ReplicationError(CR_CONN_HOST_ERROR, f"Can't connect to server on '{cfg.host}' ({why})") from None
        client = cls(cfg, reader, writer)
        try:
            async with asyncio.timeout(cfg.connect_timeout):
                await client._authenticate()
        except BaseException as e:
            await client.close()
            if isinstance(e, TimeoutError):
                raise ReplicationError(CR_SERVER_LOST, "timeout during handshake") from None
            raise
        return client

    async def _authenticate(self) -> None:
        first = await self._read_packet()
        if first[:1] == b"\xff":
            raise self._err(first)
        hs = self.handshake = parse_handshake_v10(first)
        flags = CLIENT_FLAGS
        if self.cfg.tls is not None:
            flags |= CLIENT_SSL
            await self._start_tls(hs, flags)
        auth = native_password_scramble(self.cfg.password, hs.nonce[:20])
        resp = struct.pack("<IIB23x", flags, EVENT_MAX_PAYLOAD, UTF8MB4_GENERAL_CI)
        resp += self.cfg.user.encode() + b"\0" + bytes((len(auth),)) + auth + NATIVE_PLUGIN.encode() + b"\0"
        self._send(resp, self._packets.expected_seq)
        reply = await self._read_packet()
        if reply[:1] == b"\xfe":  # auth switch request: plugin name NUL, new nonce
            name, _, data = reply[1:].partition(b"\0")
            plugin = name.decode("ascii", "replace")
            if plugin == NATIVE_PLUGIN:
                answer = native_password_scramble(self.cfg.password, data.rstrip(b"\0")[:20])
            elif plugin == ed25519.PLUGIN and len(data) >= ed25519.NONCE_BYTES:  # an account IDENTIFIED VIA ed25519
                answer = await asyncio.to_thread(ed25519.auth_response, self.cfg.password, data)
            else:
                raise ReplicationError(CR_AUTH_PLUGIN_CANNOT_LOAD, f"authentication plugin {name!r} not supported")
            self._send(answer, self._packets.expected_seq)
            reply = await self._read_packet()
        if reply[:1] == b"\xff":
            raise self._err(reply)
        if reply[:1] != b"\x00":
            raise ReplicationError(CR_MALFORMED_PACKET, f"unexpected authentication reply 0x{reply[:1].hex()}")

    async def _start_tls(self, hs: ServerHandshake, flags: int) -> None:
        """SSLRequest, then the TLS handshake on the same socket (what a replica with MASTER_SSL=1 does); failures
        are Connector/C's 2026, which a 10.11 replica shows in Last_IO_Error."""
        assert self.cfg.tls is not None
        if not hs.capabilities & CLIENT_SSL:
            raise ReplicationError(CR_SSL_CONNECTION_ERROR, "SSL connection error: SSL is required, but the server "
                                   "does not support it")
        try:
            ctx = self.cfg.tls.context()
        except ValueError as e:
            raise ReplicationError(CR_SSL_CONNECTION_ERROR, f"SSL connection error: {e}") from None
        self._send(struct.pack("<IIB23x", flags, EVENT_MAX_PAYLOAD, UTF8MB4_GENERAL_CI), self._packets.expected_seq)
        try:
            await self._writer.start_tls(ctx, server_hostname=self.cfg.host if self.cfg.tls.verify else None)
        except (ssl.SSLError, OSError) as e:
            raise ReplicationError(CR_SSL_CONNECTION_ERROR, f"SSL connection error: {e}") from None
        self._reader._transport = self._writer.transport  # type: ignore[attr-defined]  # flow control over TLS

    async def close(self) -> None:
        """Close the socket (COM_QUIT first when the session is still in the command phase)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            if not self._dumping and not self._writer.is_closing():
                self._send(bytes((COM_QUIT,)))
        self._writer.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await self._writer.wait_closed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- low level ----------------------------------------------------------------------------------

    def _send(self, payload: bytes, seq: int = 0) -> None:
        """Frame one command packet; a new command (seq 0) resets the reply sequence."""
        out = bytearray()
        self._packets.expected_seq = frame(payload, seq, out)
        self._writer.write(out)

    async def _read_packet(self) -> bytes:
        """Next logical packet, reading at most STREAM_LIMIT bytes at a time (no unbounded buffering)."""
        while True:
            try:
                pkt = self._packets.next_packet()
            except PacketError as e:
                raise ReplicationError(CR_MALFORMED_PACKET, str(e)) from None
            if pkt is not None:
                return pkt
            try:
                data = await self._reader.read(STREAM_LIMIT)
            except OSError as e:
                raise ReplicationError(CR_SERVER_LOST, f"lost connection to server: {e!r}") from None
            if not data:
                raise ReplicationError(CR_SERVER_LOST, "lost connection to server (closed by peer)")
            self._packets.feed(data)

    async def _command_reply(self) -> bytes:
        try:
            async with asyncio.timeout(self.cfg.connect_timeout):
                return await self._read_packet()
        except TimeoutError:
            raise ReplicationError(CR_SERVER_LOST, "timeout waiting for the server's reply") from None

    @staticmethod
    def _err(payload: bytes) -> ReplicationError:
        try:
            e = parse_err(payload)
        except PacketError:
            return ReplicationError(CR_MALFORMED_PACKET, "malformed ERR packet")
        return ReplicationError(e.code, e.message)

    def _check_command_phase(self) -> None:
        if self._closed or self._dumping:
            raise ReplicationError(CR_SERVER_LOST, "session closed or already dumping")

    # ---- text protocol ------------------------------------------------------------------------------

    async def query(self, sql: str) -> list[tuple[str | None, ...]]:
        """COM_QUERY; rows as strings (None for NULL); [] for statements without a result set."""
        self._check_command_phase()
        self._send(bytes((COM_QUERY,)) + sql.encode())
        first = await self._command_reply()
        if first[:1] == b"\xff":
            raise self._err(first)
        if first[:1] == b"\x00":
            return []
        try:
            ncols, _ = _lenenc(first, 0)
        except IndexError:
            raise ReplicationError(CR_MALFORMED_PACKET, "empty result-set header") from None
        for _ in range(ncols or 0):
            await self._command_reply()  # column definitions: not needed by a replica
        if not _is_eof(await self._command_reply()):
            raise ReplicationError(CR_MALFORMED_PACKET, "expected EOF after column definitions")
        rows: list[tuple[str | None, ...]] = []
        while True:
            p = await self._command_reply()
            if p[:1] == b"\xff":
                raise self._err(p)
            if _is_eof(p):
                return rows
            row: list[str | None] = []
            q = 0
            try:
                for _ in range(ncols or 0):
                    n, q = _lenenc(p, q)
                    if n is None:
                        row.append(None)
                        continue
                    if q + n > len(p):
                        raise IndexError
                    row.append(p[q : q + n].decode("utf-8", "replace"))
                    q += n
            except IndexError:
                raise ReplicationError(CR_MALFORMED_PACKET, "truncated result row") from None
            rows.append(tuple(row))

    async def _set(self, sql: str, tolerate_unknown: bool = False) -> bool:
        """Run a SET; with `tolerate_unknown` a 1193 (older primary) returns False like the IO thread does."""
        try:
            await self.query(sql)
        except ReplicationError as e:
            if tolerate_unknown and e.code == ER_UNKNOWN_SYSTEM_VARIABLE:
                return False
            raise
        return True

    # ---- dump ---------------------------------------------------------------------------------------

    async def start_dump(self, file: str, pos: int, non_blocking: bool = False) -> None:
        """The 10.11 IO thread's session set-up (spec 3.1), COM_REGISTER_SLAVE, then COM_BINLOG_DUMP."""
        self._check_command_phase()
        cfg = self.cfg
        if cfg.heartbeat_s is not None:
            await self._set(f"SET @master_heartbeat_period= {int(cfg.heartbeat_s * 1e9)}")
        if cfg.checksum and await self._set("SET @master_binlog_checksum= @@global.binlog_checksum", True):
            rows = await self.query("SELECT @master_binlog_checksum")
            value = rows[0][0] if rows and rows[0] else None
            algs = {"NONE": BINLOG_CHECKSUM_ALG_OFF, "CRC32": BINLOG_CHECKSUM_ALG_CRC32}
            if value is None or value.upper() not in algs:
                raise ReplicationError(CR_MALFORMED_PACKET, f"unknown @master_binlog_checksum {value!r}", fatal=True)
            self.checksum_alg_before_fd = algs[value.upper()]
        if cfg.skip_replication:
            await self._set("SET skip_replication=1", True)
        await self._set(f"SET @mariadb_slave_capability={int(cfg.capability)}")
        if cfg.gtid is not None:
            await self._set(f"SET @slave_connect_state={_sql_str(cfg.gtid)}")
            await self._set(f"SET @slave_gtid_strict_mode={int(cfg.gtid_strict)}")
            await self._set("SET @slave_gtid_ignore_duplicates=0")
        # Repl_semi_sync_slave::request_transmit: only a primary that has the variable is asked
        if cfg.semi_sync and await self.query(f"SHOW VARIABLES LIKE '{MASTER_ENABLED_VAR}'"):
            await self._set(f"SET @{USER_VAR}= 1")
            self.semi_sync = True
        self._send(build_register_slave(cfg.server_id, port=cfg.report_port))
        reply = await self._command_reply()
        if reply[:1] == b"\xff":
            raise self._err(reply)
        flags = BINLOG_DUMP_NON_BLOCK if non_blocking else 0
        flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT if cfg.annotate else 0
        self._send(build_binlog_dump(pos, flags, cfg.server_id, file))
        self._packets.max_payload = EVENT_MAX_PAYLOAD
        self._dumping = True
        if cfg.tls is None:  # nothing can have arrived after the COM_REGISTER_SLAVE reply yet: the stream is all here
            self._receiver = DumpReceiver.install(self._writer.transport, DUMP_READ)  # type: ignore[arg-type]

    async def events(self) -> AsyncIterator[bytes]:
        """Raw events (heartbeats included) with CRCs verified; ends at EOF; closes the session on any end.

        Events before the first FDE (the fake Rotate) are checked with the algorithm the server reported,
        every FDE with its own, everything else with the current FDE's, as the 10.11 IO thread does.
        """
        async for run in self.runs():
            for ev in split_run(run):
                yield ev

    async def batches(self) -> AsyncIterator[list[bytes]]:
        """`events()` in lists, one per socket read (never empty)."""
        async for run in self.runs():
            yield split_run(run)

    async def runs(self) -> AsyncIterator[bytes]:
        """`runs_with_acks()` without the ack requests (for consumers that do not acknowledge)."""
        gen = self.runs_with_acks()
        try:
            async for run, _ in gen:
                yield run
        finally:
            await gen.aclose()  # closes the session now, also when the consumer stops early

    def send_ack(self, file: str, pos: int) -> None:
        """Acknowledge (file, pos) to a semi-sync primary (slave_reply: sequence id 0, after `net_clear`)."""
        out = bytearray()
        frame(ack_packet(file, pos), 0, out)
        self._writer.write(out)

    async def runs_with_acks(self) -> AsyncIterator[tuple[bytes, bool]]:
        """`event_runs()` without the event ends."""
        gen = self.event_runs()
        try:
            async for run, ack in gen:
                yield run.data, ack
        finally:
            await gen.aclose()

    async def event_runs(self) -> AsyncIterator[tuple[EventRun, bool]]:
        """The dump as runs of whole events back to back, one run per socket read (never empty), and whether the
        run ends with an event the semi-sync primary wants acknowledged: every event checked as `events()` says,
        and its header's event_length equal to its packet's, so a consumer can walk a run by the header lengths.
        A run's `ends` are where its events end in it. The relay stores runs as they are: one copy per read, no
        object per event."""
        if not self._dumping:
            raise ReplicationError(CR_SERVER_LOST, "start_dump() first")
        timeout = self.cfg.dump_read_timeout()
        self._alg = self.checksum_alg_before_fd
        pending: list[bytes] = []  # the reads holding an incomplete packet
        have = need = 0
        try:
            if self._receiver is not None:
                async for item in self._received_runs(self._receiver, timeout):
                    yield item
                return
            while True:
                try:
                    async with asyncio.timeout(timeout):
                        data = await self._reader.read(DUMP_READ)
                except TimeoutError:
                    raise ReplicationError(CR_SERVER_LOST, f"no event or heartbeat for {timeout} s") from None
                except OSError as e:
                    raise ReplicationError(CR_SERVER_LOST, f"lost connection to server: {e!r}") from None
                if not data:
                    raise ReplicationError(CR_SERVER_LOST, "lost connection to server (closed by peer)")
                if pending:  # joined once when the packet is whole: a large event is not copied per read
                    pending.append(data)
                    have += len(data)
                    if have < need:
                        continue
                    data = b"".join(pending)
                    pending.clear()
                runs, used, stop = self._runs_in(data)
                for item in runs:
                    yield item
                if stop is True:  # EOF of a non-blocking dump
                    return
                if stop is not None:
                    raise stop
                if used < len(data):
                    pending.append(data[used:])
                    have = len(data) - used
                    need = 4 + (int.from_bytes(data[used : used + 3], "little") if have >= 4 else 0)
        finally:
            await self.close()

    async def _received_runs(self, rx: DumpReceiver, timeout: float | None) -> AsyncIterator[tuple[EventRun, bool]]:
        """`event_runs()` over the dump receiver's buffer: each read scanned where it lies (no copy before the
        scan), the torn packet at its end kept for the next one."""
        need = 1
        while True:
            try:
                async with asyncio.timeout(timeout):
                    await rx.fill(need)
            except TimeoutError:
                raise ReplicationError(CR_SERVER_LOST, f"no event or heartbeat for {timeout} s") from None
            if rx.filled < need:
                why = f": {rx.error!r}" if rx.error is not None else " (closed by peer)"
                raise ReplicationError(CR_SERVER_LOST, f"lost connection to server{why}")
            scanned = rx.filled
            runs, used, stop = self._runs_in(rx.view())
            for item in runs:
                yield item
            if stop is True:  # EOF of a non-blocking dump
                return
            if stop is not None:
                raise stop
            rx.consume(used)
            # what the scan left is a torn packet: wait for more than it. Bytes that arrived while the runs were
            # consumed (rx.filled > torn) are not waited for: they may hold whole packets (a semi-sync ack request
            # the primary waits on sat there until the next event or heartbeat)
            torn = scanned - used
            need = torn + 1 if torn < 4 else max(torn + 1, 4 + int.from_bytes(rx.buf[:3], "little"))

    def _runs_in(self, data: bytes | memoryview) -> tuple[list[tuple[EventRun, bool]], int,
                                                          ReplicationError | bool | None]:
        """One read's whole packets as runs, for both read paths (StreamReader and `DumpReceiver`): a run ends with
        each event the semi-sync primary wants acknowledged (flagged True: the consumer acks once it stored it),
        what came before an error is delivered before it. Returns (the non-empty runs, bytes consumed, what stopped
        the dump as `_split` says). Nothing returned refers to `data` (it may be the receiver's buffer)."""
        out: list[tuple[EventRun, bool]] = []
        run, taken, stop = self._split(data)
        while self._ack_cut:
            self._ack_cut = False
            out.append((run, True))
            run, used, stop = self._split(memoryview(data)[taken:])
            taken += used
        if run.data:
            out.append((run, False))
        return out, taken, stop

    def _split(self, data: bytes | memoryview) -> tuple[EventRun, int, ReplicationError | bool | None]:
        """The whole dump packets at the start of `data`: (their events back to back with their ends, bytes
        consumed, and what stopped the dump: an error, True for EOF, None to read on).

        The hot path: stretches of ordinary event packets are checked as a whole (`dump_runs.scan_packets`: one C
        call, or one walk, numpy and two CRC32 calls without the extension), tried at the start and after every
        packet the full rules handled. `data` may be a view of the dump receiver's buffer: nothing kept refers to
        it. What they leave goes event by event: one header read, one zlib.crc32 over a memoryview (a CRC32-summed event
        followed by its own CRC leaves zlib's constant residue) and one list append; FDEs, packets split at 16 MiB,
        ERR/EOF and every failure go through `_checked_event`, the full rules with their error messages.
        """
        mv = memoryview(data)
        n, p = len(data), 0
        seq = self._packets.expected_seq
        parts = self._parts
        crc = self._alg == BINLOG_CHECKSUM_ALG_CRC32
        h = 3 if self.semi_sync else 1  # 0x00 (and the semi-sync magic and flag) before each event
        min_len = h + HEADER_LEN + (CRC_LEN if crc else 0)
        out: list[bytes | memoryview] = []
        ends: list[Ints | list[int]] = []  # where the run's events end: a stretch's at once, or one by one
        one: list[int] = []
        size = 0  # of the run so far
        scan = not parts and h == 1
        stop: ReplicationError | bool | None = None
        try:
            while n - p >= 4:
                if scan:
                    scan = False
                    whole = scan_packets(data, seq, crc, p)
                    if whole.run is not None:
                        out.append(whole.run.data)
                        if one:
                            ends.append(one)
                            one = []
                        ends.append(whole.run.ends + size if size else whole.run.ends)
                        size += len(whole.run.data)
                        p = whole.used
                        seq = (seq + whole.packets) & 0xFF
                        continue
                (word,) = _U32.unpack_from(data, p)
                length = word & 0xFFFFFF
                if word >> 24 != seq:
                    stop = ReplicationError(CR_MALFORMED_PACKET, f"packets out of order: expected sequence id "
                                            f"{seq}, got {word >> 24}")
                    break
                q = p + 4 + length
                if q > n:
                    break
                seq = (seq + 1) & 0xFF
                s = p + 4 + h
                if (not parts and length >= min_len and length < MAX_PACKET_PAYLOAD and not data[p + 4]
                        and (h == 1 or (data[p + 5] == 0xEF and not data[p + 6]))
                        and data[s + 4] != FORMAT_DESCRIPTION_EVENT
                        and _U32.unpack_from(data, s + 9)[0] == length - h
                        and (not crc or zlib.crc32(mv[s:q]) == _CRC32_RESIDUE)):
                    out.append(mv[s:q])
                    size += q - s
                    one.append(size)
                    p = q
                    continue
                # anything else: one logical packet, maybe split in 16 MiB parts (a copy: `data` may be a view)
                parts.append(bytes(data[p + 4 : q]))
                self._parts_size += length
                p = q
                if self._parts_size > EVENT_MAX_PAYLOAD:
                    stop = ReplicationError(CR_MALFORMED_PACKET, f"packet larger than the maximum of "
                                            f"{EVENT_MAX_PAYLOAD} bytes")
                    break
                if length == MAX_PACKET_PAYLOAD:
                    continue
                payload = parts[0] if len(parts) == 1 else b"".join(parts)
                parts.clear()
                self._parts_size = 0
                if payload[:1] == b"\xff":
                    stop = self._err(payload)
                    break
                if _is_eof(payload):
                    stop = True
                    break
                ack = False
                try:
                    if self.semi_sync:
                        ack, ev = split_event_packet(payload)
                        payload = b"\0" + ev
                    ev = self._checked_event(payload)
                except SemiSyncError as e:
                    stop = ReplicationError(CR_MALFORMED_PACKET, str(e))
                    break
                except ReplicationError as e:
                    stop = e
                    break
                out.append(ev)
                size += len(ev)
                one.append(size)
                if ack:  # the primary restarts its sequence after it (flush_net); the run ends here
                    seq = 1
                    self._ack_cut = True
                    break
                crc = self._alg == BINLOG_CHECKSUM_ALG_CRC32
                min_len = h + HEADER_LEN + (CRC_LEN if crc else 0)
                scan = h == 1  # what follows an FDE (or any event the full rules took) may be a long stretch
        finally:
            self._packets.expected_seq = seq
        if not one and len(ends) == 1:
            return EventRun(bytes(out[0]), np.asarray(ends[0])), p, stop  # one stretch: nothing to join
        return EventRun(b"".join(out), np.array(one, dtype=np.int64) if not ends else
                        np.concatenate([*ends, one]).astype(np.int64, copy=False)), p, stop

    def _checked_event(self, p: bytes) -> bytes:
        """The event in a dump packet, its CRC verified (and the checksum algorithm followed across FDEs)."""
        if p[:1] != b"\x00" or len(p) < 1 + HEADER_LEN:
            raise ReplicationError(CR_MALFORMED_PACKET, f"unexpected packet in dump stream ({len(p)} bytes)")
        ev = p[1:]
        check = self._alg
        if ev[4] == FORMAT_DESCRIPTION_EVENT:
            try:
                self._alg = check = fde_checksum_alg(ev)
            except BinlogFormatError as e:
                raise ReplicationError(CR_MALFORMED_PACKET, str(e), fatal=True) from None
        if check == BINLOG_CHECKSUM_ALG_CRC32 and not crc_ok(ev):
            stored = int.from_bytes(ev[-CRC_LEN:], "little") if len(ev) >= CRC_LEN else None
            raise ReplicationError(ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE,
                                   f"event checksum mismatch (type {ev[4]}, log_pos "
                                   f"{int.from_bytes(ev[13:17], 'little')}, stored crc {stored})")
        if int.from_bytes(ev[9:13], "little") != len(ev):  # after the CRC, as the 10.11 IO thread checks
            # fatal: the primary would send the same bytes again
            raise ReplicationError(CR_MALFORMED_PACKET, f"event length {int.from_bytes(ev[9:13], 'little')} in "
                                   f"the header of a {len(ev)}-byte event (type {ev[4]})", fatal=True)
        return ev


def split_run(run: bytes) -> list[bytes]:
    """The events of a run from `ReplicationClient.runs()` (whose header lengths are checked), one bytes each."""
    out: list[bytes] = []
    p, n = 0, len(run)
    while p < n:
        q = p + _U32.unpack_from(run, p + 9)[0]
        out.append(run[p:q])
        p = q
    return out
