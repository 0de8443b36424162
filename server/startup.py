"""Start-up checks that run before binlogd writes anything: the listening sockets, the directories it will write,
and the lock that keeps a second binlogd out of a datadir.

Why a separate step: a second `binlogd serve` on a port in use (or on a datadir another binlogd writes) used to
fail only after it had started a new binlog file and ledger. Now `serve()` checks what it can without writing
(`check_writable_dir`), takes the port (`listen`: bound *and* listening, so no other process can take it between
the check and the start), then the datadir lock (`DirLock`), and only then opens the binlog and the ledger.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from pathlib import Path

from binlogd.listening import bind_listening

LOCK_NAME = "binlogd.lock"
LISTEN_BACKLOG = 128  # connections arriving while the binlog is opened wait here


class StartupError(Exception):
    """binlogd cannot start; the message is the one line the CLI prints (exit status 2)."""


def check_writable_dir(directory: Path, what: str) -> None:
    """`directory` is a writable directory, or the nearest existing ancestor is one (binlogd creates the rest)."""
    directory = Path(directory).absolute()
    probe = directory
    while not probe.exists():
        if probe.is_symlink():  # a dangling symlink: mkdir would fail with EEXIST
            raise StartupError(f"{what} {directory}: {probe} is a dangling symbolic link")
        probe = probe.parent
    if probe != directory:  # binlogd will create it
        if not probe.is_dir():
            raise StartupError(f"cannot create {what} {directory}: {probe} is not a directory")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise StartupError(f"cannot create {what} {directory}: {probe} is not writable")
    elif not probe.is_dir():
        raise StartupError(f"{what} {directory} is not a directory")
    elif not os.access(probe, os.W_OK | os.X_OK):
        raise StartupError(f"{what} {directory} is not writable")


def listen(host: str, port: int, option: str = "--port") -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for every address `host` resolves to (as asyncio.start_server
    would bind them), or a StartupError saying why not. Accepting starts later (`BinlogdServer.serve_sockets`)."""
    try:
        return bind_listening(host, port, LISTEN_BACKLOG)
    except socket.gaierror as e:
        raise StartupError(f"{'' if option == '--port' else option + ': '}cannot listen on {host}:{port}: "
                           f"{e.strerror}") from None
    except OSError as e:
        why = e.strerror or str(e)
        hint = f" (another server holds the port: stop it or choose another {option})" \
            if e.errno == errno.EADDRINUSE else ""
        what = "" if option == "--port" else f"{option}: "
        raise StartupError(f"{what}cannot listen on {host}:{port}: {why}{hint}") from None


class DirLock:
    """An exclusive flock on DIR/binlogd.lock, held for the process's life; the file holds the holder's pid.

    flock, not the file's existence, is the lock: a kill -9 releases it with the process, so a crashed binlogd
    never leaves a stale lock behind. A refused process opens the existing file without changing it.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path, what: str) -> DirLock:
        directory = Path(directory).absolute()
        path = directory / LOCK_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StartupError(f"cannot lock {what} {directory}: {e.strerror} ({path})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_pid(fd)
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StartupError(f"cannot lock {what} {directory}: {e.strerror} ({path})") from None
            who = f"pid {holder}" if holder else "a process that has not written its pid yet"
            raise StartupError(f"{what} {directory} is in use by another binlogd ({who}, lock {path}); "
                               "two servers must not write one directory") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:
            os.close(fd)
            raise StartupError(f"cannot write {path}: {e.strerror}") from None
        return cls(path, fd)

    def release(self) -> None:
        """Unlock (the file stays: removing it would let a third process lock a new inode while one waits)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def is_within(path: Path, directory: Path) -> bool:
    """`path` is `directory` or below it (absolute, symlinks resolved where they exist)."""
    p, d = Path(path).absolute().resolve(), Path(directory).absolute().resolve()
    return p == d or d in p.parents
