"""Replication commands a replica sends: COM_REGISTER_SLAVE, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID.

Parsers take the whole command payload (command byte included) and raise `CommandError` with the
message MariaDB would use; builders produce what a MariaDB 10.11 replica sends (used by tests and
by the replication client).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .constants import COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID, COM_REGISTER_SLAVE, FN_REFLEN


class CommandError(ValueError):
    """A malformed replication command."""


@dataclass(frozen=True, slots=True)
class RegisterSlave:
    server_id: int
    host: str
    user: str
    password: str
    port: int
    rank: int
    master_id: int


@dataclass(frozen=True, slots=True)
class BinlogDump:
    pos: int
    flags: int
    server_id: int
    file: str


@dataclass(frozen=True, slots=True)
class BinlogDumpGtid:
    flags: int
    server_id: int
    file: str
    pos: int
    gtid_data: bytes


def parse_register_slave(payload: bytes) -> RegisterSlave:
    """Parse COM_REGISTER_SLAVE like MariaDB's THD::register_slave (length checks included)."""
    if not payload or payload[0] != COM_REGISTER_SLAVE:
        raise CommandError("not a COM_REGISTER_SLAVE packet")
    end = len(payload)
    if end < 5:  # MariaDB reads the server_id past the end, then fails on the host's length
        raise CommandError(_too_long("report-host"))
    (server_id,) = struct.unpack_from("<I", payload, 1)
    p = 5
    strings: list[str] = []
    for what in ("report-host", "report-user", "report-password"):
        if p >= end:  # (its length byte is read past the end: the string cannot fit)
            raise CommandError(_too_long(what))
        n = payload[p]
        p += 1
        if p + n > end:
            raise CommandError(_too_long(what))
        strings.append(payload[p : p + n].decode("utf-8", "replace"))
        p += n
    if end - p < 10:
        raise CommandError("Wrong parameters to function register_slave")
    port, rank, master_id = struct.unpack_from("<HII", payload, p)
    return RegisterSlave(server_id, strings[0], strings[1], strings[2], port, rank, master_id)


def _too_long(what: str) -> str:
    """MariaDB's get_object text (its password one has a ';', as in sql/repl_failsafe.cc)."""
    return f"Failed to register slave{';' if what == 'report-password' else ':'} too long '{what}'"


def build_register_slave(server_id: int, host: str = "", user: str = "", password: str = "", port: int = 0,
                         rank: int = 0, master_id: int = 0) -> bytes:
    out = bytearray(struct.pack("<BI", COM_REGISTER_SLAVE, server_id))
    for s in (host, user, password):
        b = s.encode()
        if len(b) > 255:
            raise CommandError("report string longer than 255 bytes")
        out += bytes((len(b),)) + b
    out += struct.pack("<HII", port, rank, master_id)
    return bytes(out)


def parse_binlog_dump(payload: bytes) -> BinlogDump:
    """Parse COM_BINLOG_DUMP: u32 pos, u16 flags, u32 server_id, file name to the end of the packet.

    MariaDB reads the name with strlen, so a NUL ends it (python-mysql-replication sends '\\0\\0\\0\\0').
    """
    if not payload or payload[0] != COM_BINLOG_DUMP:
        raise CommandError("not a COM_BINLOG_DUMP packet")
    if len(payload) < 11:  # MariaDB reads the missing bytes from past the packet's end: here they read as zeros
        payload = payload.ljust(11, b"\0")
    pos, flags, server_id = struct.unpack_from("<IHI", payload, 1)
    raw = payload[11:]
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    if len(raw) >= FN_REFLEN:
        raise CommandError("Log name too long")
    return BinlogDump(pos, flags, server_id, raw.decode("utf-8", "replace"))


def build_binlog_dump(pos: int, flags: int, server_id: int, file: str) -> bytes:
    return struct.pack("<BIHI", COM_BINLOG_DUMP, pos, flags, server_id) + file.encode()


def parse_binlog_dump_gtid(payload: bytes) -> BinlogDumpGtid:
    """Parse MySQL's COM_BINLOG_DUMP_GTID (MariaDB answers it with 1047; parsed for logging)."""
    if not payload or payload[0] != COM_BINLOG_DUMP_GTID:
        raise CommandError("not a COM_BINLOG_DUMP_GTID packet")
    try:
        flags, server_id, name_len = struct.unpack_from("<HII", payload, 1)
        p = 11
        name = payload[p : p + name_len]
        if len(name) != name_len:
            raise CommandError("Malformed COM_BINLOG_DUMP_GTID packet")
        p += name_len
        (pos,) = struct.unpack_from("<Q", payload, p)
        p += 8
        data = b""
        if p + 4 <= len(payload):
            (size,) = struct.unpack_from("<I", payload, p)
            data = payload[p + 4 : p + 4 + size]
    except struct.error as e:
        raise CommandError("Malformed COM_BINLOG_DUMP_GTID packet") from e
    return BinlogDumpGtid(flags, server_id, name.decode("utf-8", "replace"), pos, data)
