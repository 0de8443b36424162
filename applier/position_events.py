"""The channel's position row as binlog events, carried in the BINLOG statement of the group it belongs to.

A 1-row transaction used to be five statements for the target to parse and run (SET gtid_seq_no, BEGIN, BINLOG,
the position row's INSERT ... ON DUPLICATE KEY UPDATE, COMMIT) where a replica's SQL thread runs none (issue 20).
A group that is one whole row statement (its TABLE_MAPs, then its rows events, the last with STMT_END_F) goes
instead as ONE autocommit `BINLOG` statement: the source's TABLE_MAPs, a TABLE_MAP of
`binlogd_apply.channel_position`, the source's rows events (STMT_END_F taken off the last, its CRC redone) and an
UPDATE_ROWS event of the channel's position row (STMT_END_F). One statement is one transaction: the changes and
the position commit together or not at all (crash-safe as before), under the source's GTID
(`SET gtid_seq_no` stays its own statement: two statements per transaction, one without a target binlog).

The UPDATE_ROWS event has a MINIMAL before image (the primary key `channel`), so the row must exist: the first
group of a channel, or any group whose events the target refuses, takes the SQL path (applier/apply.py), which
inserts it. The TABLE_MAP is built from the target's own column definitions (information_schema), so it matches
the table exactly; a table that differs from the one applier/position.py creates keeps the SQL path.

Names: `PositionEvents` (`for_target`, `statement`, `row_events`), `fusable_fde`.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    HEADER_LEN,
    LOG_EVENT_SKIP_REPLICATION_F,
    STMT_END_F,
    TABLE_MAP_EVENT,
    UPDATE_ROWS_EVENT_V1,
)

from .position import SCHEMA, Position

TABLE_ID: Final = (1 << 48) - 2  # the position table's id inside the BINLOG statement (never a source's: 6 bytes)
_HEADER: Final = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event length, end_log_pos, flags
_U64: Final = struct.Struct("<Q")
_U32BE: Final = struct.Struct(">I")
_FLAGS_AT: Final = HEADER_LEN + 6  # rows events: table id (6 bytes), then the flags (u16)
_MYSQL_TYPE_LONGLONG: Final = 8
_MYSQL_TYPE_VARCHAR: Final = 15
_MYSQL_TYPE_TIMESTAMP2: Final = 17
_MYSQL_TYPE_BLOB: Final = 252
_TM_BIT_LEN_EXACT_F: Final = 1
_ASCII_CHARSETS: Final = frozenset({"utf8mb4", "utf8mb3", "utf8", "latin1", "ascii", "binary"})
# the columns applier/position.py creates: name, DATA_TYPE (their types, keys and NULLs are checked too)
_COLUMNS: Final = (("channel", "varchar"), ("log_file", "varchar"), ("log_pos", "bigint"), ("gtid_pos", "text"),
                   ("updated_at", "timestamp"))


def fusable_fde(fde: bytes) -> bool:
    """The source's FDE gives TABLE_MAP and UPDATE_ROWS_V1 the post-header lengths (8) the events built here use."""
    at = HEADER_LEN + 2 + 50 + 4 + 1  # binlog version, server version, create time, header length
    return len(fde) > at + UPDATE_ROWS_EVENT_V1 and fde[at + TABLE_MAP_EVENT - 1] == 8 \
        and fde[at + UPDATE_ROWS_EVENT_V1 - 1] == 8


def _lenenc(n: int) -> bytes:
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    return b"\xfd" + n.to_bytes(3, "little")


@dataclass(slots=True)
class PositionEvents:
    """The position row of one channel on one target, as events (built once per target connection)."""

    table_map_body: bytes  # after the header: table id, flags, names, column types, metadata, null bitmap
    channel_value: bytes  # the before image: the channel name with its length prefix
    file_prefix: int  # length-prefix bytes of log_file (1 when its octet length is below 256)
    _update_prefix: bytes = b""  # the UPDATE_ROWS body up to the after image's first value
    _maps: dict[tuple[int, int, bool], bytes] = field(default_factory=dict)  # whole TABLE_MAP events

    def __post_init__(self) -> None:
        self._update_prefix = (TABLE_ID.to_bytes(6, "little") + STMT_END_F.to_bytes(2, "little") + b"\x05"
                               + b"\x01" + b"\x1e"  # the before image has the channel, the after image the rest
                               + b"\0" + self.channel_value + b"\0")  # each image: its null bitmap first

    @staticmethod
    def for_target(conn: Any, channel: str) -> PositionEvents | None:
        """Read the table's definition from the target; None when it is not the one the applier creates (or the
        channel name is not ASCII): the position then stays an SQL statement."""
        with conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_OCTET_LENGTH, CHARACTER_SET_NAME, "
                        "IS_NULLABLE, DATETIME_PRECISION, COLUMN_KEY FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA=%s AND TABLE_NAME='channel_position' ORDER BY ORDINAL_POSITION",
                        (SCHEMA,))
            cols: Sequence[tuple[Any, ...]] = cur.fetchall()
        if [(str(c[0]), str(c[1]).lower()) for c in cols] != list(_COLUMNS) or not channel.isascii():
            return None
        if any(str(c[5]) != "NO" for c in cols) or str(cols[0][7]) != "PRI" or str(cols[3][7]) or \
                "unsigned" not in str(cols[2][2]).lower() or int(cols[4][6] or 0) != 6:
            return None
        if any(c[4] is not None and str(c[4]) not in _ASCII_CHARSETS for c in cols):
            return None
        chan_len, file_len = int(cols[0][3]), int(cols[1][3])
        if chan_len > 0xFFFF or file_len > 0xFFFF:
            return None
        types = bytes([_MYSQL_TYPE_VARCHAR, _MYSQL_TYPE_VARCHAR, _MYSQL_TYPE_LONGLONG, _MYSQL_TYPE_BLOB,
                       _MYSQL_TYPE_TIMESTAMP2])
        meta = chan_len.to_bytes(2, "little") + file_len.to_bytes(2, "little") + bytes([2, 6])
        db, table = SCHEMA.encode(), b"channel_position"
        body = (TABLE_ID.to_bytes(6, "little") + _TM_BIT_LEN_EXACT_F.to_bytes(2, "little")
                + bytes([len(db)]) + db + b"\0" + bytes([len(table)]) + table + b"\0"
                + _lenenc(len(types)) + types + _lenenc(len(meta)) + meta + b"\0")
        name = channel.encode("ascii")
        prefix = 1 if chan_len < 256 else 2
        return PositionEvents(body, len(name).to_bytes(prefix, "little") + name, 1 if file_len < 256 else 2)

    def statement(self, raws: Sequence[bytes], pos: Position, crc_alg: int) -> list[bytes] | None:
        """The events of one BINLOG statement that applies `raws` (one whole row statement of the source: its
        TABLE_MAPs, then its rows events, the last one with STMT_END_F) and stores `pos`; None when `raws` is
        not of that shape (the caller keeps the BEGIN ... COMMIT form). Per group of the 1-row benchmark this
        is the applier's own largest cost after the reader's: built from precomputed parts."""
        n = len(raws)
        maps = 0
        while maps < n and raws[maps][4] == TABLE_MAP_EVENT:
            maps += 1
        if not maps or maps == n:
            return None
        for r in raws[maps:-1]:
            if r[4] == TABLE_MAP_EVENT or r[_FLAGS_AT] & STMT_END_F:
                return None
        last = raws[-1]
        if not last[_FLAGS_AT] & STMT_END_F:
            return None
        row = self.row_events(pos, last, crc_alg)
        if row is None:
            return None
        crc = crc_alg == BINLOG_CHECKSUM_ALG_CRC32
        end = len(last) - (CRC_LEN if crc else 0)
        ended = b"".join((last[:_FLAGS_AT], bytes([last[_FLAGS_AT] & ~STMT_END_F]), last[_FLAGS_AT + 1:end]))
        if crc:
            ended += zlib.crc32(ended).to_bytes(4, "little")
        tm, up = row
        return [*raws[:maps], tm, *raws[maps:-1], ended, up]

    def row_events(self, pos: Position, last: bytes, crc_alg: int) -> tuple[bytes, bytes] | None:
        """The position row `pos` as a TABLE_MAP and an UPDATE_ROWS event (STMT_END_F: a statement of its own
        when it follows whole statements), with the timestamp, server_id, end_log_pos and skip_replication flag
        of the source's event `last`; None when the values do not fit the table's length prefixes."""
        file, gtids = pos.file.encode("ascii", "replace"), pos.gtid_text().encode("ascii")
        if len(file) >= 1 << (8 * self.file_prefix) or len(gtids) > 0xFFFF:
            return None
        crc = crc_alg == BINLOG_CHECKSUM_ALG_CRC32
        now = time.time()
        sec = int(now)
        body = b"".join((self._update_prefix, len(file).to_bytes(self.file_prefix, "little"), file,
                         _U64.pack(pos.pos), len(gtids).to_bytes(2, "little"), gtids, _U32BE.pack(sec),
                         int((now - sec) * 1e6).to_bytes(3, "big")))
        # the source's timestamp, server_id and end_log_pos; the skip_replication flag of its rows event
        ts, _, server_id, _, log_pos, hflags = _HEADER.unpack_from(last)
        hflags &= LOG_EVENT_SKIP_REPLICATION_F
        up = _HEADER.pack(ts, UPDATE_ROWS_EVENT_V1, server_id, HEADER_LEN + len(body) + (CRC_LEN if crc else 0),
                          log_pos, hflags) + body
        if crc:
            up += zlib.crc32(up).to_bytes(4, "little")
        return self._table_map(server_id, hflags, crc), up

    def _table_map(self, server_id: int, flags: int, crc: bool) -> bytes:
        key = (server_id, flags, crc)
        tm = self._maps.get(key)
        if tm is None:
            tm = _HEADER.pack(0, TABLE_MAP_EVENT, server_id, HEADER_LEN + len(self.table_map_body)
                              + (CRC_LEN if crc else 0), 0, flags) + self.table_map_body
            if crc:
                tm += zlib.crc32(tm).to_bytes(4, "little")
            if len(self._maps) > 64:
                self._maps.clear()
            self._maps[key] = tm
        return tm


__all__ = ["TABLE_ID", "PositionEvents", "fusable_fde"]
