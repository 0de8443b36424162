"""MySQL packet framing and the generic OK/ERR/EOF packets, sans-IO.

A MySQL packet is a 3-byte little-endian payload length, a 1-byte sequence id, then the payload.
Payloads of 0xFFFFFF bytes or more are split into 0xFFFFFF-byte chunks followed by a shorter one
(possibly empty); sequence ids keep rising modulo 256 across the whole exchange.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .constants import MAX_PACKET_PAYLOAD, SERVER_STATUS_AUTOCOMMIT, SQLSTATE

_HDR = struct.Struct("<I")


class PacketError(ValueError):
    """The peer sent bytes that are not a valid packet sequence."""


def frame(payload: bytes | bytearray | memoryview, seq: int, out: bytearray) -> int:
    """Append `payload` framed as one logical packet to `out`; return the next sequence id."""
    n = len(payload)
    if n < MAX_PACKET_PAYLOAD:
        out += _HDR.pack(n | (seq << 24))
        out += payload
        return (seq + 1) & 0xFF
    view = memoryview(payload)
    off = 0
    while True:
        chunk = min(MAX_PACKET_PAYLOAD, n - off)
        out += _HDR.pack(chunk | (seq << 24))
        out += view[off : off + chunk]
        seq = (seq + 1) & 0xFF
        off += chunk
        if chunk < MAX_PACKET_PAYLOAD:
            return seq


class PacketReader:
    """Reassembles logical packets from a byte stream (feed bytes, pop payloads).

    `expected_seq` is checked on every physical packet, so out-of-order data is refused
    instead of being silently accepted.
    """

    def __init__(self, expected_seq: int = 0, max_payload: int = 1 << 30) -> None:
        self._buf = bytearray()
        self._parts: list[bytes] = []
        self._size = 0
        self.expected_seq = expected_seq
        self.max_payload = max_payload

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_packet(self) -> bytes | None:
        """Return the next complete payload, or None when more bytes are needed."""
        buf = self._buf
        while len(buf) >= 4:
            (word,) = _HDR.unpack_from(buf, 0)
            length, seq = word & 0xFFFFFF, word >> 24
            if seq != self.expected_seq:
                raise PacketError(f"packets out of order: expected sequence id {self.expected_seq}, got {seq}")
            if len(buf) < 4 + length:
                return None
            if self._size + length > self.max_payload:
                raise PacketError(f"packet larger than the maximum of {self.max_payload} bytes")
            self._parts.append(bytes(buf[4 : 4 + length]))
            self._size += length
            del buf[: 4 + length]
            self.expected_seq = (seq + 1) & 0xFF
            if length < MAX_PACKET_PAYLOAD:
                payload = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
                return payload
        return None


def ok_packet(affected_rows: int = 0, last_insert_id: int = 0, status: int = SERVER_STATUS_AUTOCOMMIT,
              warnings: int = 0, info: bytes = b"") -> bytes:
    """OK packet as MariaDB sends it (protocol 4.1, no session-track)."""
    head = b"\x00" + lenenc_int(affected_rows) + lenenc_int(last_insert_id)
    return head + struct.pack("<HH", status, warnings) + info


def eof_packet(warnings: int = 0, status: int = SERVER_STATUS_AUTOCOMMIT) -> bytes:
    """Classic EOF (0xFE): what MariaDB sends at the end of a non-blocking dump."""
    return struct.pack("<BHH", 0xFE, warnings, status)


def err_packet(code: int, message: str, sqlstate: bytes | None = None) -> bytes:
    """ERR packet with SQLSTATE marker (protocol 4.1)."""
    state = sqlstate or SQLSTATE.get(code, b"HY000")
    return struct.pack("<BH", 0xFF, code) + b"#" + state + message.encode("utf-8", "replace")


def early_err_packet(code: int, message: str) -> bytes:
    """ERR sent in place of the greeting: the client's capabilities are not known yet, so MariaDB sends no
    SQLSTATE marker (net_send_error_packet without CLIENT_PROTOCOL_41)."""
    return struct.pack("<BH", 0xFF, code) + message.encode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class ErrPacket:
    code: int
    sqlstate: str
    message: str


def parse_err(payload: bytes) -> ErrPacket:
    """Decode an ERR packet (used by tests and the replication client)."""
    if len(payload) < 3 or payload[0] != 0xFF:
        raise PacketError("not an ERR packet")
    (code,) = struct.unpack_from("<H", payload, 1)
    if len(payload) >= 9 and payload[3:4] == b"#":
        return ErrPacket(code, payload[4:9].decode("ascii", "replace"), payload[9:].decode("utf-8", "replace"))
    return ErrPacket(code, "HY000", payload[3:].decode("utf-8", "replace"))


def lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes((n,))
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)
