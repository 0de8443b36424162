"""The handshake's character set as MariaDB takes it: binary (63) is accepted, and an id the server does not
know (0, 254...) falls back to the server's default instead of failing the login."""

from __future__ import annotations

from mysql_mimic.charset import Collation

BINARY_COLLATION = 63
LATIN1_COLLATION = 8  # latin1_swedish_ci: decodes every byte as itself (how mimic reads a binary client's names)
DEFAULT_COLLATION = 45  # utf8mb4_general_ci: binlogd's character_set_server / collation_connection default


def usable_collation(collation_id: int) -> int:
    """`collation_id` if the client may use it (binary included), else the server default MariaDB falls back to."""
    if collation_id == BINARY_COLLATION:
        return collation_id
    try:
        Collation(collation_id).charset.decode(b"")
    except (ValueError, LookupError):
        return DEFAULT_COLLATION
    return collation_id
