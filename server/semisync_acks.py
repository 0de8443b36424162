"""The packets a semi-sync replica sends during its dump (MariaDB's Ack_receiver): acks, or COM_QUIT.

Bad input never ends the dump: a malformed packet, an ack for a position this dump never asked about (or one
already answered) is logged and ignored, so a confused or hostile replica can neither break the connection nor
release a waiting commit with a position it was never sent. Reads are bounded (a packet longer than an ack can
be is skipped in pieces, never buffered whole).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from binlogd.protocol.semisync import SemiSyncError, parse_ack

if TYPE_CHECKING:
    from .dump import DumpStream

log = logging.getLogger("binlogd.semisync")

MAX_ACK = 4096  # the longest packet read whole (an ack is at most 1 + 8 + FN_REFLEN - 1 bytes)
_SKIP = 64 << 10


async def watch_acks(reader: asyncio.StreamReader, dump: DumpStream, server_id: int, label: str) -> None:
    """Read the replica's packets until it goes away (returns at EOF, like the plain dump's peer watch)."""
    semi = dump.semi
    assert semi is not None
    while True:
        try:
            head = await reader.readexactly(4)
        except (asyncio.IncompleteReadError, OSError):
            return
        length = int.from_bytes(head[:3], "little")
        if length > MAX_ACK:
            log.warning("%s semi-sync: ignored a %d-byte packet from the replica (not an ack)", label, length)
            left = length
            try:
                while left:
                    chunk = await reader.read(min(left, _SKIP))
                    if not chunk:
                        return
                    left -= len(chunk)
            except OSError:
                return
            continue
        try:
            payload = await reader.readexactly(length)
        except (asyncio.IncompleteReadError, OSError):
            return
        try:
            ack = parse_ack(payload)
        except SemiSyncError as e:
            log.warning("%s semi-sync: %s; first bytes of the packet: %s (ignored)", label, e, payload[:64].hex())
            continue
        if ack is None:
            log.info("%s semi-sync: the replica's IO thread has stopped (COM_QUIT)", label)
            continue
        if not dump.ack_asked(ack.file, ack.pos):
            log.warning("%s semi-sync: ack for %s:%d, a position this dump did not ask about (ignored)", label,
                        ack.file, ack.pos)
            continue
        semi.reply(server_id, ack.file, ack.pos)
