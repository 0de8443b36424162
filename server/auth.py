"""Who may connect to binlogd: the users file (`--users FILE`, format and rules in protocol/accounts.py, shared
with the applier's admin port), or without one passwordless root on loopback only."""

from __future__ import annotations

from binlogd.protocol.accounts import (
    AccountsIdentityProvider,
    UserEntry,
    UsersFileError,
    format_entry,
    is_loopback,
    native_hash,
    parse_line,
)

__all__ = ["BinlogdIdentityProvider", "UserEntry", "UsersFileError", "format_entry", "is_loopback", "native_hash",
           "parse_line"]


class BinlogdIdentityProvider(AccountsIdentityProvider):
    """binlogd's accounts: `from_file(--users)` or `default()` (root, no password, loopback only)."""
