"""Semi-synchronous replication on the wire (MariaDB 10.11 sql/semisync.h, semisync_master.cc, semisync_slave.cc).

A replica that ran `SET @rpl_semi_sync_slave= 1` before COM_BINLOG_DUMP gets every event packet as
`0x00, 0xef, flag, event`: flag 0x01 asks it to acknowledge once the event is stored. The acknowledgement is one
packet from the replica, sequence id 0: `0xef`, the 8-byte position after the event, the file name (no NUL).
After a packet that asks for an ack, both sides restart the packet sequence (the primary's next packet is 1).
Pure codecs: bytes in, values out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0xEF  # ReplSemiSyncBase::k_packet_magic_num
FLAG_SYNC = 0x01  # k_packet_flag_sync: the primary waits for this event's ack
HEADER_LEN = 2  # magic + flag, after the packet's 0x00
FN_REFLEN = 512  # a longer file name in an ack is refused (report_reply_packet)
_POS = struct.Struct("<Q")
ACK_NAME_OFFSET = 1 + _POS.size  # REPLY_BINLOG_NAME_OFFSET
COM_QUIT = 0x01
USER_VAR = "rpl_semi_sync_slave"  # the user variable a semi-sync replica sets on its primary
MASTER_ENABLED_VAR = "rpl_semi_sync_master_enabled"  # what a replica looks for (SHOW VARIABLES) before asking

SYNC_HEADER = bytes((0, MAGIC, 0))  # an event packet's prefix when no ack is requested
SYNC_HEADER_ACK = bytes((0, MAGIC, FLAG_SYNC))


class SemiSyncError(ValueError):
    """A packet that is not what semi-sync says; the text is MariaDB's log message for it."""


@dataclass(frozen=True)
class Ack:
    file: str
    pos: int


def event_prefix(ack: bool) -> bytes:
    """The bytes before the event in a semi-sync event packet."""
    return SYNC_HEADER_ACK if ack else SYNC_HEADER


def split_event_packet(payload: bytes | memoryview) -> tuple[bool, memoryview]:
    """(ack requested, the event) of a semi-sync dump packet `0x00 0xef flag event`."""
    mv = memoryview(payload)
    if len(mv) < 1 + HEADER_LEN or mv[0] != 0 or mv[1] != MAGIC:
        raise SemiSyncError(f"Missing magic number for semi-sync packet, packet len: {len(mv)}")
    return bool(mv[2] & FLAG_SYNC), mv[1 + HEADER_LEN:]


def ack_packet(file: str, pos: int) -> bytes:
    """The replica's acknowledgement payload (Repl_semi_sync_slave::slave_reply)."""
    return bytes((MAGIC,)) + _POS.pack(pos) + file.encode()


def parse_ack(payload: bytes | memoryview) -> Ack | None:
    """The primary's reading of a packet from a semi-sync replica (report_reply_packet); None for COM_QUIT."""
    b = bytes(payload)
    if not b or b[0] != MAGIC:
        if b == bytes((COM_QUIT,)):
            return None
        raise SemiSyncError("Read semi-sync reply magic number error")
    if len(b) < ACK_NAME_OFFSET:
        raise SemiSyncError("Read semi-sync reply length error: packet is too small")
    name = b[ACK_NAME_OFFSET:]
    if len(name) >= FN_REFLEN:
        raise SemiSyncError("Read semi-sync reply binlog file length too large")
    if not name or b"\0" in name or b"/" in name:
        raise SemiSyncError(f"Read semi-sync reply with a bad binlog file name {name[:64]!r}")
    return Ack(name.decode("utf-8", "replace"), _POS.unpack_from(b, 1)[0])
