"""Strict, bounded parsing of what a client sends during the handshake and in COM_CHANGE_USER.

mysql-mimic's own parsers loop forever on a string without its NUL terminator; binlogd validates every
client packet of the connection phase here first, so malformed input is answered with
ER_HANDSHAKE_ERROR ("Bad handshake") instead of hanging the event loop.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SSL = 1 << 11
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_CONNECT_ATTRS = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21
CLIENT_ZSTD_COMPRESSION_ALGORITHM = 1 << 26

ER_HANDSHAKE_ERROR = 1043
MAX_HANDSHAKE_PACKET = 64 * 1024


class HandshakeError(ValueError):
    """A client packet of the connection phase that cannot be parsed."""


@dataclass
class HandshakeResponse:
    capabilities: int  # the client's, before intersecting with the server's
    max_packet: int
    charset: int
    ssl_request: bool = False
    username: bytes = b""
    auth_response: bytes = b""
    database: bytes | None = None
    plugin: bytes | None = None
    attrs: dict[bytes, bytes] = field(default_factory=dict)


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.p = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.p + n > len(self.data):
            raise HandshakeError(f"{what}: {n} bytes announced, {len(self.data) - self.p} left")
        out = self.data[self.p : self.p + n]
        self.p += n
        return out

    def cstr(self, what: str) -> bytes:
        end = self.data.find(b"\0", self.p)
        if end < 0:
            raise HandshakeError(f"{what} is not NUL-terminated")
        out = self.data[self.p : end]
        self.p = end + 1
        return out

    def lenenc(self, what: str) -> int:
        first = self.take(1, what)[0]
        if first < 0xFB:
            return first
        if first == 0xFC:
            return int(struct.unpack("<H", self.take(2, what))[0])
        if first == 0xFD:
            return int.from_bytes(self.take(3, what), "little")
        if first == 0xFE:
            return int(struct.unpack("<Q", self.take(8, what))[0])
        raise HandshakeError(f"{what}: invalid length-encoded integer")

    @property
    def left(self) -> int:
        return len(self.data) - self.p


def parse_handshake_response(data: bytes, server_capabilities: int) -> HandshakeResponse:
    """HandshakeResponse41 (or an SSLRequest, 32 bytes); only protocol 4.1 clients are accepted."""
    if len(data) > MAX_HANDSHAKE_PACKET:
        raise HandshakeError("handshake response too long")
    c = _Cursor(data)
    caps, max_packet, charset = struct.unpack("<IIB", c.take(9, "capabilities"))
    c.take(23, "filler")
    if not caps & CLIENT_PROTOCOL_41:
        raise HandshakeError("client does not speak protocol 4.1")
    r = HandshakeResponse(caps, max_packet, charset)
    if c.left == 0:
        r.ssl_request = True
        return r
    both = caps & server_capabilities
    r.username = c.cstr("user name")
    if both & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
        r.auth_response = c.take(c.lenenc("auth response length"), "auth response")
    elif both & CLIENT_SECURE_CONNECTION:
        r.auth_response = c.take(c.take(1, "auth response length")[0], "auth response")
    else:
        r.auth_response = c.cstr("auth response")
    if both & CLIENT_CONNECT_WITH_DB:
        r.database = c.cstr("database")
    if both & CLIENT_PLUGIN_AUTH:
        r.plugin = c.cstr("auth plugin name")
    if both & CLIENT_CONNECT_ATTRS:
        total = c.lenenc("connection attributes length")
        attrs = _Cursor(c.take(total, "connection attributes"))
        while attrs.left:
            key = attrs.take(attrs.lenenc("attribute name length"), "attribute name")
            r.attrs[key] = attrs.take(attrs.lenenc("attribute value length"), "attribute value")
    if both & CLIENT_ZSTD_COMPRESSION_ALGORITHM:
        c.take(1, "zstd level")
    return r


def check_change_user(data: bytes, capabilities: int) -> None:
    """Validate a COM_CHANGE_USER payload (command byte excluded) before mysql-mimic reads it."""
    if len(data) > MAX_HANDSHAKE_PACKET:
        raise HandshakeError("COM_CHANGE_USER too long")
    c = _Cursor(data)
    c.cstr("user name")
    if capabilities & CLIENT_SECURE_CONNECTION:
        c.take(c.take(1, "auth response length")[0], "auth response")
    else:
        c.cstr("auth response")
    c.cstr("database")
    if c.left:
        if capabilities & CLIENT_PROTOCOL_41:
            c.take(2, "character set")
        if capabilities & CLIENT_PLUGIN_AUTH:
            c.cstr("auth plugin name")
        if capabilities & CLIENT_CONNECT_ATTRS:
            total = c.lenenc("connection attributes length")
            attrs = _Cursor(c.take(total, "connection attributes"))
            while attrs.left:
                attrs.take(attrs.lenenc("attribute name length"), "attribute name")
                attrs.take(attrs.lenenc("attribute value length"), "attribute value")
