"""`binlogd passwd`: one users-file line with the password as MariaDB stores it, printed or put into the file.

Why a helper: the users file holds mysql_native_password hashes (what `SELECT PASSWORD('...')` gives) or
ed25519 public keys (`SELECT ed25519_password('...')`), which nobody should compute by hand, and the clear-text
password must reach neither the file nor the command line.
"""

from __future__ import annotations

import getpass
import os
import sys
import tempfile
from pathlib import Path

from .auth import UsersFileError, format_entry, parse_line


class PasswdError(ValueError):
    """What the CLI prints (exit status 2)."""


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            raise PasswdError("the two passwords differ")
        password = first
    else:
        password = sys.stdin.readline().rstrip("\n").rstrip("\r")
    if not password:
        raise PasswdError("no password given (stdin's first line); an account without one needs no hash: "
                          "write USER:'' in the users file")
    return password


def _account(text: str) -> tuple[str, str]:
    name, _, host = text.partition("@")
    host = host.strip().strip("'\"`") or "%"
    if not name or ":" in name or "#" in name or any(c.isspace() for c in name + host):
        raise PasswdError(f"{text!r} is not USER[@HOST] (no ':', '#' or spaces in either)")
    return name, host


def run_passwd(account: str, grants: str | None, require_ssl: bool, users: Path | None,
               use_ed25519: bool = False) -> str:
    """The line for `account`; with `users`, that file updated (atomically, its mode kept, 0600 when new)."""
    name, host = _account(account)
    try:
        line = format_entry(name, host, _read_password_checked(grants), grants, require_ssl, use_ed25519)
    except ValueError as e:
        raise PasswdError(str(e)) from None
    if users is not None:
        _update(users, name, host, line)
    return line


def _read_password_checked(grants: str | None) -> str:
    if grants is not None:
        from binlogd.protocol.accounts import parse_privileges

        try:
            parse_privileges(grants)  # before asking for a password
        except ValueError as e:
            raise PasswdError(str(e)) from None
    return _read_password()


def _update(path: Path, name: str, host: str, line: str) -> None:
    try:
        old = path.read_text().splitlines() if path.exists() else []
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    except OSError as e:
        raise PasswdError(f"cannot read {path}: {e.strerror}") from None
    out, replaced = [], False
    for no, raw in enumerate(old, 1):
        try:
            entry = parse_line(raw, f"{path}:{no}")
        except UsersFileError:
            entry = None  # a line binlogd would refuse is kept for its owner to fix
        if entry is not None and (entry.name, entry.host.lower()) == (name, host.lower()):
            if not replaced:
                out.append(line)
            replaced = True
            continue
        out.append(raw)
    if not replaced:
        out.append(line)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(out) + "\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        raise PasswdError(f"cannot write {path}: {e.strerror}") from None
