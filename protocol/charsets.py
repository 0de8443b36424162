"""The handshake's character set as MariaDB takes it: binary (63) is accepted, and an id the server does not
know (0, 254...) falls back to the server's default instead of failing the login. A character set MariaDB
refuses for a client (ucs2, utf16, utf32: characters never 1 byte) fails the login with its 1231."""

from __future__ import annotations

from mysql_mimic.charset import Collation

BINARY_COLLATION = 63
LATIN1_COLLATION = 8  # latin1_swedish_ci: decodes every byte as itself (how mimic reads a binary client's names)
# character sets whose characters are never 1 byte: MariaDB refuses them as a client's
_MULTI_BYTE_MINIMUM = frozenset({"ucs2", "utf16", "utf16le", "utf32"})
DEFAULT_COLLATION = 45  # utf8mb4_general_ci: binlogd's character_set_server / collation_connection default


def usable_collation(collation_id: int) -> int:
    """`collation_id` if the server knows it (binary included), else the server default MariaDB falls back to."""
    if collation_id == BINARY_COLLATION or refused_client_charset(collation_id) is not None:
        return collation_id
    try:
        charset = Collation(collation_id).charset
        charset.decode(b"a")
    except (ValueError, LookupError):
        return DEFAULT_COLLATION
    return collation_id


def refused_client_charset(collation_id: int) -> str | None:
    """The name of the collation's character set when MariaDB refuses it for a client (answered with 1231)."""
    try:
        name = Collation(collation_id).charset.name
    except ValueError:
        return None
    return name if name in _MULTI_BYTE_MINIMUM else None
