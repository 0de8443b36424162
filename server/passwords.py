"""Passwords that do not go on the command line: read from a file or an environment variable.

Why: a password in an argument (`mysql://U:P@HOST`) is shown by `ps` and /proc/PID/cmdline to every local user.
binlogd (`--upstream-password-file`, $BINLOGD_UPSTREAM_PASSWORD) and binlogd-apply (`?password_file=`,
`?password_env=`) read them here, with one rule for the file format and one set of messages.
"""

from __future__ import annotations

import os
from pathlib import Path

URL_PASSWORD_WARNING = ("the password of {what} is in its URL, where ps and /proc/PID/cmdline show it to every "
                        "local user; give it with {instead} instead")


class PasswordError(ValueError):
    """A password file that cannot be used; the message names it and says why."""


def read_password_file(path: Path | str, what: str) -> str:
    """The file's first line without its line ending (\\n or \\r\\n); the rest of the file is ignored.

    An empty first line is refused: an empty password needs no file, so it is more likely a mistake.
    """
    try:
        with open(path, "rb") as f:
            first = f.readline(65536)
    except OSError as e:
        raise PasswordError(f"{what} {path}: cannot read it: {e.strerror}") from None
    password = first.rstrip(b"\n").rstrip(b"\r")
    if not password:
        raise PasswordError(f"{what} {path}: the first line is empty (it must hold the password)")
    try:
        return password.decode("utf-8")
    except UnicodeDecodeError:
        raise PasswordError(f"{what} {path}: the password is not UTF-8") from None


def password_from_env(name: str) -> str | None:
    """$name, or None if unset (a process's environment, /proc/PID/environ, is readable by its owner only)."""
    return os.environ.get(name)


def mask_url_password(url: str) -> str:
    """`scheme://USER:***@HOST...` for messages: a URL's password never reaches a log line or an error text."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, hostpart = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{hostpart}"
