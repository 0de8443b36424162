"""Who may connect: mysql_native_password users from a file, or passwordless root on loopback only.

Users file (`--users FILE`), one user per line, `#` starts a comment:

    repl:secret                 # plain password, hashed at load time
    monitor:*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19   # a mysql.user-style native hash

Everyone else gets MariaDB's ER_ACCESS_DENIED_ERROR (1045) text.
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

_HASH = re.compile(r"^\*[0-9A-Fa-f]{40}$")


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


class BinlogdIdentityProvider(IdentityProvider):
    def __init__(self, users: dict[str, UserEntry]) -> None:
        self.users = users
        self._plugin = _NativePassword()

    @classmethod
    def default(cls) -> BinlogdIdentityProvider:
        return cls({"root": UserEntry("root", "", loopback_only=True)})

    @classmethod
    def from_file(cls, path: Path) -> BinlogdIdentityProvider:
        users: dict[str, UserEntry] = {}
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as e:
            raise UsersFileError(f"cannot read users file {path}: {e.strerror}") from e
        for no, raw in enumerate(lines, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, secret = line.partition(":")
            name = name.strip()
            if not sep or not name:
                raise UsersFileError(f"{path}:{no}: expected USER:PASSWORD or USER:*HASH, got {raw.strip()!r}")
            secret = secret.strip()
            if name in users:
                raise UsersFileError(f"{path}:{no}: user {name!r} listed twice")
            auth = secret[1:].lower() if _HASH.match(secret) else (
                NativePasswordAuthPlugin.create_auth_string(secret) if secret else "")
            users[name] = UserEntry(name, auth)
        if not users:
            raise UsersFileError(f"{path}: no users")
        return cls(users)

    def get_plugins(self) -> list[NativePasswordAuthPlugin]:
        return [self._plugin]

    def get_default_plugin(self) -> NativePasswordAuthPlugin:
        return self._plugin

    async def get_user(self, username: str) -> User | None:
        entry = self.users.get(username)
        if entry is None or (entry.loopback_only and not is_loopback(PEER_HOST.get())):
            return None
        return User(name=entry.name, auth_string=entry.auth_string or None,
                    auth_plugin=self._plugin.name)
