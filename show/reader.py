"""Where `binlogd show` gets events: binlog files on disk, or a server with --read-from-remote-server.

Both yield `Item`s (file name, position, raw bytes, decoded event) in order. Problems are `ReadError`s whose text
names the file and the position of the bad event; with `force` (--force-read) a bad event is reported on stderr
and reading goes on after it when its length can be trusted, as mariadb-binlog --force-read does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.connection import ClientConfig, ReplicationClient, ReplicationError
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_MAGIC,
    CRC_LEN,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    MAX_EVENT_SIZE,
    ROTATE_EVENT,
)
from binlogd.protocol.events import Event, EventDecodeError, UnknownBody, parse_event, parse_header
from binlogd.protocol.tables_info import TABLES_INFO_EVENT
from binlogd.protocol.tls_options import TlsOptions

# The types a MariaDB 10.11 reader knows (types 0..38 and 160..171 of its FDE) plus binlogd's own Tables_info.
_KNOWN_MAX_MYSQL: int = 38
_KNOWN_MARIADB: range = range(160, 172)
_FDE_FIXED = 2 + 50 + 4 + 1  # binlog version, server version, created, header length


class ReadError(Exception):
    """A file or stream that cannot be read on; the message is the one line printed (exit status 1)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One event as read: `pos` is its start offset in `file`."""

    file: str
    pos: int
    raw: bytes
    event: Event

    @property
    def end(self) -> int:
        return self.pos + len(self.raw)


Warn = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr)


def known_type(type_code: int) -> bool:
    return type_code <= _KNOWN_MAX_MYSQL or type_code in _KNOWN_MARIADB or type_code == TABLES_INFO_EVENT


def check_event(file: str, pos: int, raw: bytes, checksum_alg: int, fde_types: int = 171, *,
                force: bool = False, warn: Warn = _stderr) -> Event:
    """Decode one event, checking its CRC and type as mariadb-binlog's reader does (ReadError on a bad one).

    A type beyond the FDE's table (even with the ignorable flag) or an unknown one without that flag is an error;
    with `force` it becomes an unknown event (printed as `# Unknown event`, as mariadb-binlog --force-read does).
    """
    header = parse_header(raw)
    has_crc = header.type_code == FORMAT_DESCRIPTION_EVENT or checksum_alg == BINLOG_CHECKSUM_ALG_CRC32
    if has_crc and not crc_ok(raw):
        stored = int.from_bytes(raw[-CRC_LEN:], "little")
        raise ReadError(f"{file}: event at position {pos} (type {header.type_code}, {len(raw)} bytes) fails its "
                        f"CRC32 check (stored 0x{stored:08x}): the file is corrupt")
    t = header.type_code
    beyond = t > fde_types
    if beyond or (not known_type(t) and not header.flags & LOG_EVENT_IGNORABLE_F):
        why = (f"type {t} is beyond the {fde_types} event types its Format_description event declares" if beyond
               else f"unknown type {t} without the ignorable flag (0x80)")
        if not force:
            raise ReadError(f"{file}: event at position {pos}: {why}; a MariaDB 10.11 reader stops here "
                            "(--force-read prints it as an unknown event and goes on)")
        warn(f"{file}: event at position {pos}: {why}; printed as an unknown event (--force-read)")
        body = raw[HEADER_LEN:len(raw) - (CRC_LEN if has_crc else 0)]
        return Event(header, UnknownBody(t, body, False), int.from_bytes(raw[-CRC_LEN:], "little") if has_crc
                     else None)
    try:
        return parse_event(raw, checksum_alg)
    except EventDecodeError as e:
        name = EVENT_TYPE_NAMES.get(t, f"type {t}")
        raise ReadError(f"{file}: event at position {pos} ({name}) cannot be decoded: {e}") from None


def fde_event_types(fde: bytes) -> int:
    """The number of event types a Format_description event declares (its post-header table's length)."""
    return max(len(fde) - HEADER_LEN - _FDE_FIXED - 1 - CRC_LEN, 0)


def read_file(path: Path, *, start: int = BIN_LOG_HEADER_SIZE, force: bool = False, warn: Warn = _stderr,
              progress: Callable[[int, int], None] | None = None) -> Iterator[Item]:
    """Events of one binlog file: its FDE (always, as mariadb-binlog), then the events from `start`."""
    name = path.name
    try:
        size = path.stat().st_size
        fh = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except OSError as e:
        raise ReadError(f"{path}: cannot open: {e.strerror or e}") from None
    try:
        if fh.read(BIN_LOG_HEADER_SIZE) != BINLOG_MAGIC:
            raise ReadError(f"{path}: not a binlog file (no \\xfebin magic at position 0)")
        pos = BIN_LOG_HEADER_SIZE
        checksum_alg = BINLOG_CHECKSUM_ALG_OFF
        fde_types = 171
        in_use = False
        first = True
        while pos < size:
            fh.seek(pos)
            head = fh.read(HEADER_LEN)
            torn = None
            if len(head) < HEADER_LEN:
                torn = (f"{name}: truncated event at position {pos}: {len(head)} bytes where a {HEADER_LEN}-byte "
                        f"event header should be (the file ends at {size})")
            else:
                header = parse_header(head)
                length = header.event_length
                if length < HEADER_LEN or length > MAX_EVENT_SIZE:
                    raise ReadError(f"{name}: event at position {pos} has an impossible length {length}")
                if pos + length > size:
                    torn = (f"{name}: truncated event at position {pos}: its header says {length} bytes, the file "
                            f"has {size - pos} left")
            if torn is not None:
                if in_use:  # a file still being written: its end is where the writer is (mariadb-binlog: the same)
                    warn(f"{torn}; the file is in use (its Format_description event says so): stopping at its "
                         "last whole event")
                    return
                raise ReadError(torn)
            raw = head + fh.read(length - HEADER_LEN)
            if first:
                if header.type_code != FORMAT_DESCRIPTION_EVENT:
                    raise ReadError(f"{name}: the first event (position {pos}) is not a Format_description event")
                checksum_alg = raw[-CRC_LEN - 1]
                fde_types = fde_event_types(raw)
                in_use = bool(header.flags & LOG_EVENT_BINLOG_IN_USE_F)
            try:
                ev = check_event(name, pos, raw, checksum_alg, fde_types, force=force, warn=warn)
            except ReadError as e:
                if not force or first:
                    raise
                warn(f"{e}; skipped (--force-read)")
                pos += length
                continue
            if first or pos >= start:
                yield Item(name, pos, raw, ev)
            if progress is not None:
                progress(pos + length, size)
            if first and start > pos + length:
                pos = start
                if start > size:
                    raise ReadError(f"{name}: --start-position {start} is past the end of the file ({size})")
            else:
                pos += length
            first = False
    finally:
        fh.close()


@dataclass(frozen=True, slots=True)
class RemoteSource:
    host: str
    port: int
    user: str
    password: str
    file: str
    start: int
    to_last_log: bool
    stop_never: bool
    server_id: int
    gtid: str | None = None
    tls: TlsOptions | None = None


async def read_remote(src: RemoteSource, *, force: bool = False, warn: Warn = _stderr) -> AsyncIterator[Item]:
    """Events a server sends for COM_BINLOG_DUMP, as mariadb-binlog -R reads them: the fake Rotate names the file,
    a Rotate to another file ends the read unless --to-last-log / --stop-never."""
    cfg = ClientConfig(host=src.host, port=src.port, server_id=src.server_id, user=src.user, password=src.password,
                       annotate=True, gtid=src.gtid, heartbeat_s=30.0 if src.stop_never else None,
                       tls=src.tls)
    try:
        client = await ReplicationClient.connect(cfg)
    except (TimeoutError, OSError, ReplicationError) as e:
        raise ReadError(f"cannot connect to {src.host}:{src.port}: {e}") from None
    file = src.file
    checksum_alg = BINLOG_CHECKSUM_ALG_OFF
    pos = src.start
    seen_file = seen_fde = False
    fde_types = 171
    try:
        await client.start_dump(src.file, src.start, non_blocking=not src.stop_never)
        async for raw in client.events():
            header = parse_header(raw)
            if header.type_code == HEARTBEAT_LOG_EVENT:
                continue
            if header.type_code == ROTATE_EVENT and (header.flags & LOG_EVENT_ARTIFICIAL_F or not header.log_pos):
                alg = checksum_alg if seen_fde else client.checksum_alg_before_fd
                body = raw[HEADER_LEN:len(raw) - (CRC_LEN if alg == BINLOG_CHECKSUM_ALG_CRC32 else 0)]
                name = body[8:].decode("utf-8", "replace")
                if seen_file and name != file and not (src.to_last_log or src.stop_never):
                    return
                file, pos, seen_file = name, int.from_bytes(body[:8], "little"), True
                continue
            if header.type_code == FORMAT_DESCRIPTION_EVENT:
                checksum_alg, seen_fde, fde_types = raw[-CRC_LEN - 1], True, fde_event_types(raw)
            start = header.log_pos - header.event_length if header.log_pos else pos
            try:
                ev = check_event(file, start, raw, checksum_alg, fde_types, force=force, warn=warn)
            except ReadError as e:
                if not force:
                    raise
                warn(f"{e}; skipped (--force-read)")
                continue
            yield Item(file, max(start, 0), raw, ev)
            if header.log_pos:
                pos = header.log_pos
            if header.type_code == ROTATE_EVENT and not (src.to_last_log or src.stop_never):
                return
    except ReplicationError as e:
        raise ReadError(f"{src.host}:{src.port}: {e}") from None
    except (TimeoutError, OSError) as e:
        raise ReadError(f"{src.host}:{src.port}: connection lost: {e}") from None
    finally:
        await client.close()


def env_password() -> str | None:
    return os.environ.get("MYSQL_PWD")
