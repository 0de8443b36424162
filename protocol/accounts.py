"""Accounts: the users file (who may connect, from where, over what, with which privileges) and the mysql-mimic
identity provider that logs them in. Shared by binlogd's primary (server/auth.py) and the applier's admin port, so
both read one format with one set of messages.

Users file, one account per line, `#` starts a comment:

    USER[@HOST]:*NATIVEHASH [GRANT PRIV[, PRIV...]] [REQUIRE SSL]   # as MariaDB stores it (`binlogd passwd`)
    USER[@HOST]:ed25519:BASE64 [GRANT ...] [REQUIRE SSL]             # an ed25519 account (MariaDB's public key)
    USER[@HOST]:'' [GRANT ...] [REQUIRE SSL]                         # no password
    USER[@HOST]:PASSWORD                                             # the older form: clear text, every privilege

    ... [replicate-OPTION=VALUE[,VALUE...] ...]                      # table filters for this user's dumps

HOST is a MariaDB host pattern (`%` and `_` wildcards, IP/NETMASK, `localhost` for loopback; default `%`);
PRIV are MariaDB's names (REPLICATION SLAVE, REPLICATION CLIENT = BINLOG MONITOR, SLAVE MONITOR, REPLICATION
MASTER ADMIN, RELOAD, BINLOG ADMIN, USAGE, ALL) plus WRITE (binlogd's: data and schema changes). A line without
GRANT grants everything, which is what every line meant before privileges existed. Everyone else gets MariaDB's
1045 text, and so does a REQUIRE SSL account that logs in without TLS. The replicate-* filters (MariaDB's
option names: replicate-do-table, -ignore-table, -wild-do-table, -wild-ignore-table, -do-db, -ignore-db,
-rewrite-db) follow the hash form's options; binlogd filters this user's dumps with them (server/replica_filters.py).
"""

from __future__ import annotations

import asyncio
import base64
import enum
import ipaddress
import os
import re
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from mysql_mimic.auth import (
    AuthInfo,
    AuthPlugin,
    Decision,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)

from . import ed25519
from .repl_filters import FilterError, FilterType
from .sqlserver import PEER_HOST, access_denied
from .table_filter import parse_assignment

_HASH = re.compile(r"^\*[0-9A-Fa-f]{40}$")
_OPTIONS = re.compile(r"^(?:GRANT\s+(?P<grant>.+?))?\s*(?:REQUIRE\s+(?P<require>SSL|NONE))?\s*$", re.I)
_LEGACY_OPTIONS = re.compile(r"\s(GRANT|REQUIRE)\s", re.I)
_FILTER_TOKEN = re.compile(r"(?<!\S)replicate[-_][a-z_-]+\s*=\s*\S+", re.I)


class Priv(enum.Flag):
    NONE = 0
    REPLICATION_SLAVE = enum.auto()
    BINLOG_MONITOR = enum.auto()
    SLAVE_MONITOR = enum.auto()
    REPLICATION_MASTER_ADMIN = enum.auto()
    WRITE = enum.auto()
    RELOAD = enum.auto()
    BINLOG_ADMIN = enum.auto()
    PROCESS = enum.auto()  # SHOW PROCESSLIST lists every connection, not only the user's own
    CONNECTION_ADMIN = enum.auto()  # KILL of another user's connection
    ALL = (REPLICATION_SLAVE | BINLOG_MONITOR | SLAVE_MONITOR | REPLICATION_MASTER_ADMIN | WRITE | RELOAD
           | BINLOG_ADMIN | PROCESS | CONNECTION_ADMIN)


_NAMES = {
    "REPLICATION SLAVE": Priv.REPLICATION_SLAVE,
    "REPLICATION CLIENT": Priv.BINLOG_MONITOR,  # MariaDB 10.5+: an alias of BINLOG MONITOR
    "BINLOG MONITOR": Priv.BINLOG_MONITOR,
    "SLAVE MONITOR": Priv.SLAVE_MONITOR,
    "REPLICA MONITOR": Priv.SLAVE_MONITOR,
    "REPLICATION MASTER ADMIN": Priv.REPLICATION_MASTER_ADMIN,
    "WRITE": Priv.WRITE,
    "RELOAD": Priv.RELOAD,
    "BINLOG ADMIN": Priv.BINLOG_ADMIN,
    "PROCESS": Priv.PROCESS,
    "CONNECTION ADMIN": Priv.CONNECTION_ADMIN,
    "USAGE": Priv.NONE,  # MariaDB's "no privileges"
    "ALL": Priv.ALL,
    "ALL PRIVILEGES": Priv.ALL,
}
GRANT_NAMES = tuple(_NAMES)


def parse_privileges(text: str) -> Priv:
    """'REPLICATION SLAVE, BINLOG MONITOR' -> flags; ValueError names an unknown one."""
    privs = Priv.NONE
    for part in text.split(","):
        name = " ".join(part.split()).upper()
        if name not in _NAMES:
            raise ValueError(f"unknown privilege {part.strip()!r} (known: {', '.join(GRANT_NAMES)})")
        privs |= _NAMES[name]
    return privs


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


class _Ed25519(AuthPlugin):
    """MariaDB's ed25519 accounts: the client signs a fresh 32-byte nonce with its password, binlogd checks the
    signature against the stored public key (protocol/ed25519.py; in a thread: ~15 ms of pure-Python arithmetic)."""

    name = "ed25519"
    client_plugin_name = ed25519.PLUGIN

    async def auth(self, auth_info: AuthInfo | None = None) -> AsyncGenerator[Decision, AuthInfo]:  # type: ignore[override]
        nonce = os.urandom(ed25519.NONCE_BYTES)
        auth_info = yield nonce
        public = _b64(auth_info.user.auth_string or "")
        ok = public is not None and await asyncio.to_thread(ed25519.verify, public, nonce, auth_info.data)
        if ok:
            yield Success(auth_info.user.name)
        else:
            yield Forbidden(access_denied(auth_info.username, PEER_HOST.get(), bool(auth_info.data)))


def _b64(text: str) -> bytes | None:
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None
    return raw if len(raw) == 32 else None


@dataclass(frozen=True)
class UserEntry:
    name: str
    auth_string: str  # '' = no password; native: SHA1(SHA1(password)) in hex (mysql-mimic's form); ed25519: base64
    loopback_only: bool = False
    host: str = "%"  # MariaDB host pattern
    privileges: Priv = Priv.ALL
    require_ssl: bool = False
    plugin: str = "mysql_native_password"  # or "ed25519"
    filters: tuple[tuple[FilterType, tuple[str, ...]], ...] = ()  # replicate-* rules for this user's dumps


def native_hash(password: str) -> str:
    """`*HEX`: the mysql_native_password hash MariaDB stores (PASSWORD('...'))."""
    return "*" + NativePasswordAuthPlugin.create_auth_string(password).upper()


def ed25519_string(password: str) -> str:
    """`ed25519:BASE64`: the public key MariaDB stores for `IDENTIFIED VIA ed25519 USING PASSWORD('...')`."""
    return "ed25519:" + base64.b64encode(ed25519.public_key(password.encode())).decode().rstrip("=")


def format_entry(name: str, host: str, password: str, grants: str | None, require_ssl: bool,
                 use_ed25519: bool = False) -> str:
    """One users-file line (what `binlogd passwd` writes); the grants are checked."""
    if grants is not None:
        parse_privileges(grants)
    who = name if host == "%" else f"{name}@{host}"
    auth = (ed25519_string(password) if use_ed25519 else native_hash(password)) if password else "''"
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
    ed = auth.startswith("ed25519:")
    if ed and _b64(auth[len("ed25519:"):]) is None:
        raise UsersFileError(f"{where}: ed25519: must be followed by a 32-byte public key in base64 (what "
                             "ed25519_password('...') gives, or `binlogd passwd --ed25519`)")
    if _HASH.match(auth) or auth == "''" or ed:
        rules: dict[FilterType, tuple[str, ...]] = {}
        for token in _FILTER_TOKEN.findall(options):
            try:
                ftype, values = parse_assignment(token)
            except FilterError as e:
                raise UsersFileError(f"{where}: {e}") from None
            rules[ftype] = rules.get(ftype, ()) + values
        options = _FILTER_TOKEN.sub(" ", options)
        m = _OPTIONS.match(options.strip())
        if m is None or (options.strip() and not (m.group("grant") or m.group("require"))):
            raise UsersFileError(f"{where}: after the password hash only GRANT PRIV[, PRIV...] and REQUIRE SSL "
                                 f"may follow, got {options.strip()!r}")
        try:
            privs = parse_privileges(m.group("grant")) if m.group("grant") else Priv.ALL
        except ValueError as e:
            raise UsersFileError(f"{where}: {e}") from None
        secret = auth[len("ed25519:"):] if ed else "" if auth == "''" else auth[1:].lower()
        return UserEntry(name, secret, host=host, privileges=privs,
                         require_ssl=(m.group("require") or "").upper() == "SSL",
                         plugin=_Ed25519.name if ed else NativePasswordAuthPlugin.name,
                         filters=tuple(rules.items()))
    if _LEGACY_OPTIONS.search(f" {rest} "):
        raise UsersFileError(f"{where}: GRANT and REQUIRE need the password as a hash (*HEX, or '' for none; "
                             "`binlogd passwd` writes such a line), not in clear text")
    return UserEntry(name, NativePasswordAuthPlugin.create_auth_string(rest) if rest else "", host=host)


class AccountsIdentityProvider(IdentityProvider):
    def __init__(self, users: dict[str, UserEntry] | list[UserEntry]) -> None:
        self.users: list[UserEntry] = list(users.values()) if isinstance(users, dict) else list(users)
        self._plugin = _NativePassword()
        self._ed25519 = _Ed25519()

    @classmethod
    def default(cls) -> Self:
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
    def from_file(cls, path: Path) -> Self:
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

    def get_plugins(self) -> list[AuthPlugin]:
        return [self._plugin, self._ed25519]

    def get_default_plugin(self) -> NativePasswordAuthPlugin:
        return self._plugin

    async def get_user(self, username: str) -> User | None:
        entry = self.entry_for(username, PEER_HOST.get())
        if entry is None:
            return None
        return User(name=entry.name, auth_string=entry.auth_string or None, auth_plugin=entry.plugin)


# --- host patterns ----------------------------------------------------------------------------------


def host_matches(pattern: str, host: str) -> bool:
    """MariaDB's account host rule for an address: % and _ wildcards (case-insensitive), IP/NETMASK, and
    'localhost' for a loopback client (binlogd does not resolve names)."""
    if "/" in pattern:
        ip, _, mask = pattern.partition("/")
        try:
            net = ipaddress.ip_network(f"{ip}/{mask}", strict=False)
            return ipaddress.ip_address(host.split("%")[0]) in net
        except ValueError:
            return False
    candidates = [host]
    try:
        if ipaddress.ip_address(host.split("%")[0]).is_loopback:
            candidates.append("localhost")
    except ValueError:
        pass
    rx = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.I)
    return any(rx.fullmatch(h) for h in candidates)


def specificity(pattern: str) -> tuple[int, int]:
    """Sort key: MariaDB tries exact hosts before patterns, and '%' last."""
    wild = pattern.find("%") if "%" in pattern else pattern.find("_") if "_" in pattern else -1
    return (0 if wild < 0 else 1 if pattern != "%" else 2, -len(pattern))


def best_match(entries: Iterable[tuple[str, object]], host: str) -> object | None:
    """The entry of the most specific host pattern that matches `host` (entries: (pattern, entry))."""
    for pattern, entry in sorted(entries, key=lambda pe: specificity(pe[0])):
        if host_matches(pattern, host):
            return entry
    return None
