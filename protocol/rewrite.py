"""Events a primary makes up or rewrites while serving a dump (dump-protocol.md sections 2, 5, 7, 9.4).

Every function returns complete event bytes with a correct CRC32 when the algorithm asks for one.
The rewrites keep the event's length, timestamp, server_id and log_pos, exactly as MariaDB's
`Query_log_event::dummy_event` and `begin_event` do, so a replica's position arithmetic is unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from .checksum import set_crc
from .constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    FLAGS_OFFSET,
    GTID_LIST_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    LOG_POS_OFFSET,
    Q_TIME_ZONE_CODE,
    QUERY_EVENT,
    ROTATE_EVENT,
    USER_VAR_EVENT,
)
from .events import build_event
from .gtid import Gtid

_HEADER = struct.Struct("<IBIIIH")
_U32 = struct.Struct("<I")
_DUMMY_VAR = b"!dummyvar"
FDE_CREATED_OFFSET = HEADER_LEN + 2 + 50  # create_timestamp in a FORMAT_DESCRIPTION event


class RewriteError(ValueError):
    """The event cannot be rewritten (too small, or a GTID of a length BEGIN cannot replace)."""


def fake_rotate(server_id: int, pos: int, file: str, checksum: bool) -> bytes:
    """The artificial ROTATE sent before each file: timestamp 0, log_pos 0, flags ARTIFICIAL."""
    return build_event(type_code=ROTATE_EVENT, server_id=server_id, flags=LOG_EVENT_ARTIFICIAL_F,
                       body=struct.pack("<Q", pos) + file.encode(), checksum=checksum)


def heartbeat(server_id: int, file: str, log_pos: int, checksum: bool) -> bytes:
    """HEARTBEAT: log_pos = dump position in `file`; past 4 GiB the position moves to a u64 sub-header."""
    if log_pos > 0xFFFFFFFF:
        return build_event(type_code=HEARTBEAT_LOG_EVENT, server_id=server_id,
                           body=struct.pack("<Q", log_pos) + file.encode(), checksum=checksum)
    return build_event(type_code=HEARTBEAT_LOG_EVENT, server_id=server_id, log_pos=log_pos, body=file.encode(),
                       checksum=checksum)


def gtid_list_body(gtids: Iterable[Gtid] | Iterable[tuple[int, int, int]], flags: int = 0) -> bytes:
    items = [tuple(g) if isinstance(g, tuple) else (g.domain, g.server, g.seq) for g in gtids]
    body = struct.pack("<I", len(items) | flags) + b"".join(struct.pack("<IIQ", *g) for g in items)
    if not items:
        body += b"\0\0"  # MariaDB pads an empty list so the event can become a dummy
    return body


def fake_gtid_list(server_id: int, log_pos: int, gtids: Iterable[Gtid] | Iterable[tuple[int, int, int]], checksum: bool,
                   flags: int = 0) -> bytes:
    """The artificial GTID_LIST sent when a GTID start position is reached (and by binlogd to move
    a replica's position over trailing holes)."""
    return build_event(type_code=GTID_LIST_EVENT, server_id=server_id, log_pos=log_pos, flags=LOG_EVENT_ARTIFICIAL_F,
                       body=gtid_list_body(gtids, flags), checksum=checksum)


def fix_fde(ev: bytes | bytearray | memoryview, zero_log_pos: bool, zero_created: bool, checksum_alg: int) -> bytes:
    """The FDE as sent: in-use flag cleared; log_pos and/or created zeroed (start pos > 4, GTID start).

    An FDE always carries a CRC slot; it is recomputed only when a field covered by it changed, so a
    file written with checksums off keeps its stored bytes there (like MariaDB).
    """
    out = bytearray(ev)
    out[FLAGS_OFFSET] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
    changed = False
    if zero_log_pos:
        _U32.pack_into(out, LOG_POS_OFFSET, 0)
        changed = True
    if zero_created:
        _U32.pack_into(out, FDE_CREATED_OFFSET, 0)
        changed = True
    if changed and checksum_alg == BINLOG_CHECKSUM_ALG_CRC32:
        set_crc(out)
    return bytes(out)


def _data_len(ev_len: int, checksum: bool) -> int:
    return ev_len - CRC_LEN if checksum else ev_len


def dummy_event(ev: bytes | bytearray | memoryview, checksum: bool) -> bytes:
    """Same-length replacement a replica ignores (MariaDB `Query_log_event::dummy_event`).

    data_len < 25: impossible; < 34: USER_VAR '@!dummyvar'-prefix set to NULL; else a comment QUERY.
    """
    out = bytearray(ev)
    data_len = _data_len(len(out), checksum)
    if data_len < 25:
        raise RewriteError("too small event")
    flags = struct.unpack_from("<H", out, FLAGS_OFFSET)[0]
    flags = (flags & ~LOG_EVENT_THREAD_SPECIFIC_F) | LOG_EVENT_SUPPRESS_USE_F
    struct.pack_into("<H", out, FLAGS_OFFSET, flags)
    orig_type = out[4]
    if data_len < 34:
        out[4] = USER_VAR_EVENT
        name_len = data_len - 24
        body = _U32.pack(name_len) + _DUMMY_VAR[:name_len] + b"\x01"
    else:
        out[4] = QUERY_EVENT
        room = data_len - (HEADER_LEN + 13 + 1)
        msg = f"# Dummy event replacing event type {orig_type} that slave cannot handle.".encode()
        text = msg[:room].ljust(room, b" ")
        body = b"\0" * 13 + b"\0" + text
    out[HEADER_LEN:data_len] = body
    if checksum:
        set_crc(out)
    return bytes(out)


def begin_event(ev: bytes | bytearray | memoryview, checksum: bool) -> bytes:
    """GTID -> `BEGIN` Query of the same length for replicas without GTID support (capability < 4)."""
    out = bytearray(ev)
    data_len = _data_len(len(out), checksum)
    if data_len not in (38, 40):
        raise RewriteError("currupt event")  # sic: MariaDB's text
    flags = struct.unpack_from("<H", out, FLAGS_OFFSET)[0]
    flags = (flags & ~LOG_EVENT_THREAD_SPECIFIC_F) | LOG_EVENT_SUPPRESS_USE_F
    struct.pack_into("<H", out, FLAGS_OFFSET, flags)
    out[4] = QUERY_EVENT
    if data_len == 38:
        body = b"\0" * 11 + b"\0\0" + b"\0" + b"BEGIN"
    else:
        body = b"\0" * 11 + struct.pack("<H", 2) + bytes((Q_TIME_ZONE_CODE, 0)) + b"\0" + b"BEGIN"
    out[HEADER_LEN:data_len] = body
    if checksum:
        set_crc(out)
    return bytes(out)
