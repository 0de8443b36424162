"""The reader's hot event types read in place (struct), for the native path (issue 20).

`parse_event` copies the event, builds its header and body objects through generic tables and slices the CRC: a
third of the reader's time per 1-row transaction. The three types every row transaction has are decoded here
the way `parse_event` decodes them, straight from the event bytes: the GTID event's fields (no object), a rows
event's header and post-header (its bytes go to the target unchanged, in a BINLOG statement) and a TABLE_MAP
seen before (its decoded body comes from the channel's cache by body bytes). Anything these functions do not
take (an XA GTID, a new TABLE_MAP body, a length `parse_event` would refuse) returns None and goes through
`parse_event` as before, so errors stay its errors. `tests/test_applier_grouping.py` checks both give equal
results on a real MariaDB binlog.

Names: `gtid_fields`, `native_event`.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from binlogd.protocol.constants import (
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    GTID_HEADER_LEN,
    HEADER_LEN,
    TABLE_MAP_EVENT,
)
from binlogd.protocol.events import Event, EventDecodeError, EventHeader, parse_rows

_HEADER: Final = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event length, end_log_pos, flags
_GTID_FIXED: Final = struct.Struct("<QIB")  # GTID body: seq_no, domain_id, flags2


def gtid_fields(raw: bytes, crc_len: int) -> tuple[int, int, int, int, int, int] | None:
    """(server_id, log_pos, header flags, seq_no, domain_id, flags2) of a GTID event that `parse_event` would
    accept; None for an XA one or a length it would refuse (`parse_event` then decodes or refuses it)."""
    body = len(raw) - HEADER_LEN - crc_len
    if body < GTID_HEADER_LEN:
        return None
    _, _, server_id, length, log_pos, hflags = _HEADER.unpack_from(raw)
    seq_no, domain_id, flags2 = _GTID_FIXED.unpack_from(raw, HEADER_LEN)
    if length != len(raw) or flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA) or \
            (flags2 & FL_GROUP_COMMIT_ID and body < _GTID_FIXED.size + 8):
        return None
    return server_id, log_pos, hflags, seq_no, domain_id, flags2


def native_event(raw: bytes, typ: int, crc_len: int, table_maps: dict[bytes, Any]) -> Event | None:
    """A rows event, or a TABLE_MAP whose body bytes are in `table_maps` (body bytes -> decoded body), as
    `parse_event` gives it but without the CRC value; None when `parse_event` must decode it."""
    head = _HEADER.unpack_from(raw)
    end = len(raw) - crc_len
    if head[3] != len(raw) or end < HEADER_LEN:
        return None
    if typ == TABLE_MAP_EVENT:
        body: Any = table_maps.get(bytes(raw[HEADER_LEN:end]))
        if body is None:
            return None
    else:
        try:
            body = parse_rows(bytes(raw[HEADER_LEN:end]), typ)
        except EventDecodeError:
            return None
    return Event(EventHeader(*head), body)


__all__ = ["gtid_fields", "native_event"]
