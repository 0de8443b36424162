"""Who may connect, from where, over what, and with which privileges: the users file, or passwordless root on
loopback only.

Users file (`--users FILE`), one account per line, `#` starts a comment:

    USER[@HOST]:*NATIVEHASH [GRANT PRIV[, PRIV...]] [REQUIRE SSL]   # as MariaDB stores it (`binlogd passwd`)
    USER[@HOST]:'' [GRANT ...] [REQUIRE SSL]                         # no password
    USER[@HOST]:PASSWORD                                             # the older form: clear text, every privilege

HOST is a MariaDB host pattern (`%` and `_` wildcards, IP/NETMASK, `localhost` for loopback; default `%`);
PRIV are MariaDB's names (server/privileges.py). A line without GRANT grants everything, which is what every
line meant before privileges existed. Everyone else gets MariaDB's ER_ACCESS_DENIED_ERROR (1045) text, and so
does a REQUIRE SSL account that logs in without TLS.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

from binlogd.protocol.sqlserver import PEER_HOST, access_denied
from mysql_mimic.auth import (
    AuthInfo,
    Decision,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    User,
)

from .privileges import Priv, best_match, parse_privileges

_HASH = re.compile(r"^\*[0-9A-Fa-f]{40}$")
_OPTIONS = re.compile(r"^(?:GRANT\s+(?P<grant>.+?))?\s*(?:REQUIRE\s+(?P<require>SSL|NONE))?\s*$", re.I)
_LEGACY_OPTIONS = re.compile(r"\s(GRANT|REQUIRE)\s", re.I)


class UsersFileError(ValueError):
    pass


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


class _NativePassword(NativePasswordAuthPlugin):
    """mysql_native_password with MariaDB's access-denied message (user@host, using password)."""

    async def auth(self, auth_info: AuthInfo | None = None) -> AsyncGenerator[Decision, AuthInfo]:  # type: ignore[override]
        inner = super().auth(auth_info)
        decision = await inner.__anext__()
        while True:
            if isinstance(decision, Forbidden):
                info = auth_info
                yield Forbidden(access_denied(info.username if info else "", PEER_HOST.get(),
                                              bool(info and info.data)))
                return
            received = yield decision
            auth_info = received
            try:
                decision = await inner.asend(received)
            except StopAsyncIteration:
                return


@dataclass(frozen=True)
class UserEntry:
    name: str
    auth_string: str  # '' = no password, else SHA1(SHA1(password)) in hex (mysql-mimic's form)
    loopback_only: bool = False
    host: str = "%"  # MariaDB host pattern
    privileges: Priv = Priv.ALL
    require_ssl: bool = False


def native_hash(password: str) -> str:
    """`*HEX`: the mysql_native_password hash MariaDB stores (PASSWORD('...'))."""
    return "*" + NativePasswordAuthPlugin.create_auth_string(password).upper()


def format_entry(name: str, host: str, password: str, grants: str | None, require_ssl: bool) -> str:
    """One users-file line (what `binlogd passwd` writes); the grants are checked."""
    if grants is not None:
        parse_privileges(grants)
    who = name if host == "%" else f"{name}@{host}"
    auth = native_hash(password) if password else "''"
    return " ".join([f"{who}:{auth}", *([f"GRANT {grants}"] if grants else []), *(["REQUIRE SSL"] if require_ssl
                                                                                  else [])])


def parse_line(raw: str, where: str) -> UserEntry | None:
    """One line of the users file (None for blank and comment lines), or UsersFileError naming `where`."""
    line = raw.split("#", 1)[0].strip()
    if not line:
        return None
    who, sep, rest = line.partition(":")
    name, _, host = who.strip().partition("@")
    name, host = name.strip(), host.strip().strip("'\"`") or "%"
    if not sep or not name:
        raise UsersFileError(f"{where}: expected USER[@HOST]:*HASH [GRANT ...] [REQUIRE SSL] or USER:PASSWORD, "
                             f"got {raw.strip()!r}")
    rest = rest.strip()
    auth, _, options = rest.partition(" ")
    if _HASH.match(auth) or auth == "''":
        m = _OPTIONS.match(options.strip())
        if m is None or (options.strip() and not (m.group("grant") or m.group("require"))):
            raise UsersFileError(f"{where}: after the password hash only GRANT PRIV[, PRIV...] and REQUIRE SSL "
                                 f"may follow, got {options.strip()!r}")
        try:
            privs = parse_privileges(m.group("grant")) if m.group("grant") else Priv.ALL
        except ValueError as e:
            raise UsersFileError(f"{where}: {e}") from None
        return UserEntry(name, "" if auth == "''" else auth[1:].lower(), host=host, privileges=privs,
                         require_ssl=(m.group("require") or "").upper() == "SSL")
    if _LEGACY_OPTIONS.search(f" {rest} "):
        raise UsersFileError(f"{where}: GRANT and REQUIRE need the password as a hash (*HEX, or '' for none; "
                             "`binlogd passwd` writes such a line), not in clear text")
    return UserEntry(name, NativePasswordAuthPlugin.create_auth_string(rest) if rest else "", host=host)


class BinlogdIdentityProvider(IdentityProvider):
    def __init__(self, users: dict[str, UserEntry] | list[UserEntry]) -> None:
        self.users: list[UserEntry] = list(users.values()) if isinstance(users, dict) else list(users)
        self._plugin = _NativePassword()

    @classmethod
    def default(cls) -> BinlogdIdentityProvider:
        return cls([UserEntry("root", "", loopback_only=True)])

    @staticmethod
    def read_file(path: Path) -> list[UserEntry]:
        """The file's accounts, or UsersFileError (the file as a whole: one bad line refuses it)."""
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise UsersFileError(f"cannot read users file {path}: {getattr(e, 'strerror', None) or e}") from e
        users: list[UserEntry] = []
        seen: set[tuple[str, str]] = set()
        for no, raw in enumerate(lines, 1):
            entry = parse_line(raw, f"{path}:{no}")
            if entry is None:
                continue
            key = (entry.name, entry.host.lower())
            if key in seen:
                raise UsersFileError(f"{path}:{no}: user {entry.name!r}@{entry.host!r} listed twice")
            seen.add(key)
            users.append(entry)
        if not users:
            raise UsersFileError(f"{path}: no users")
        return users

    @classmethod
    def from_file(cls, path: Path) -> BinlogdIdentityProvider:
        return cls(cls.read_file(path))

    def replace(self, users: list[UserEntry]) -> None:
        """SIGHUP: new logins use these accounts; connections already logged in keep theirs."""
        self.users = users

    def entry_for(self, username: str, host: str) -> UserEntry | None:
        """The account `username` logs in as from `host`: the most specific matching host pattern."""
        candidates = [(e.host, e) for e in self.users if e.name == username
                      and not (e.loopback_only and not is_loopback(host))]
        found = best_match(candidates, host)
        return found if isinstance(found, UserEntry) else None

    def requires_tls(self, username: str) -> bool:
        entry = self.entry_for(username, PEER_HOST.get())
        return entry is not None and entry.require_ssl

    def get_plugins(self) -> list[NativePasswordAuthPlugin]:
        return [self._plugin]

    def get_default_plugin(self) -> NativePasswordAuthPlugin:
        return self._plugin

    async def get_user(self, username: str) -> User | None:
        entry = self.entry_for(username, PEER_HOST.get())
        if entry is None:
            return None
        return User(name=entry.name, auth_string=entry.auth_string or None, auth_plugin=self._plugin.name)
