"""Big writes of concurrent dumps copied into their sockets by a C thread, off the event loop (issue 12: both cores).

Why: with 200 dumps streaming, 59 % of the loop thread's samples were the kernel's copy of framed bytes into the
sockets (py-spy), so binlogd stayed on one core. `_sender.c` runs one thread that never takes the GIL: the loop
hands it (a duplicate of the socket's descriptor, the bytes) and goes on framing the next dump's span while the
thread copies; the completion comes back through an eventfd the loop watches. A thread pool in Python was tried
first and cost more than it saved: each hand-off woke a Python thread that had to take the GIL back.

The thread sends without waiting (a full socket takes less): the dump hands the rest to its transport, whose
back-pressure holds as before. On by default when the extension is built (`binlogd serve --no-send-thread`: off):
where the readers leave the other core free it is the server's second core (2 C readers of 2 KB rows: 1.69x
MariaDB's rate against 1.21x with the loop alone; 200 dumps: 20 % less CPU); with every core busy it neither gains
nor loses (benchmarks/README.md, issue 12 ninth and tenth sessions).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from typing import Any

try:
    from . import _sender
except ImportError:  # (built from pyproject.toml as an optional extension)
    _sender = None  # type: ignore[assignment]

log = logging.getLogger("binlogd.dump")

OFFLOAD_MIN = 64 << 10  # smaller writes go on the loop: a hand-off costs about as much as copying that much
OFFLOAD_DUMPS = 2  # a dump running alone has nothing for the loop to do meanwhile
enabled = False  # set by `binlogd serve` (cli.py): on when the extension is built, unless --no-send-thread


def available() -> bool:
    """Is the C extension built?"""
    return _sender is not None


# submitted writes by token, process-wide: the bytes stay referenced until the thread is done with them, even when
# the loop that submitted them has closed meanwhile (the next loop's sender reaps them)
_waiting: dict[int, tuple[asyncio.Future[int], Any]] = {}
_tokens = itertools.count()


class Sender:
    """The process's sender thread as one event loop sees it: its eventfd watched, completions handed to their
    futures."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        assert _sender is not None
        self.loop = loop
        self.efd = _sender.start()
        loop.add_reader(self.efd, self._reap)

    def send(self, fd: int, data: bytes | bytearray | memoryview) -> asyncio.Future[int]:
        """Send `data` to socket `fd` from the thread: the future gives the bytes sent (0: the socket was full) or
        -errno. Raises OSError when no descriptor is left to duplicate (the caller writes on the loop)."""
        assert _sender is not None
        dup = os.dup(fd)
        token = next(_tokens)
        fut = self.loop.create_future()
        _waiting[token] = (fut, data)
        try:
            _sender.submit(dup, data, token)
        except BaseException:
            del _waiting[token]
            os.close(dup)
            raise
        return fut

    def _reap(self) -> None:
        assert _sender is not None
        for token, result in _sender.reap():
            entry = _waiting.pop(token, None)
            if entry is not None and not entry[0].done() and not entry[0].get_loop().is_closed():
                entry[0].set_result(result)

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.remove_reader(self.efd)


_current: Sender | None = None


def for_loop(loop: asyncio.AbstractEventLoop) -> Sender | None:
    """The sender of `loop`, made on first use; None where the extension is not built or turned off, or while
    another running loop of this process has it (tests run servers in threads of their own)."""
    global _current
    if not enabled:
        return None
    s = _current
    if s is not None and s.loop is loop:
        return s
    if s is not None and s.loop.is_running():
        return None
    if s is not None:
        s.close()
        _current = None
    try:
        _current = Sender(loop)
    except OSError as e:
        log.warning("the sender thread could not start (%s): dumps write on the event loop", e)
        return None
    return _current
