"""How much a dump's socket holds unsent (issue 12): TCP_NOTSENT_LOWAT while few dumps run.

A dump running alone frames a SPAN (1 MiB) per turn and hands it to the socket at once. Its reader is usually the
slower side (mariadb-binlog writes every event to a file), so the socket holds megabytes the reader's window has
not taken yet, and it is the reader's ACK, in the reader's own system call, that pushes them through the loopback
into its receive queue: the reader pays for the server's sending. MariaDB's dump thread writes 16 KiB at a time
and sends most of its bytes itself. With at most NOTSENT_LOWAT bytes unsent, the server's own writes do that
work: measured with a lone `mariadb-binlog --raw` of 2 KB rows, its CPU 0.55-0.57 s against 0.64-0.66 s
(MariaDB's stream: 0.63-0.64 s), 2026-11-30. It costs the server wake-ups and smaller writes: with 200 dumps
(fanout benchmark) 1.9x the server CPU and 270 KiB per connection, so it is only set while at most PACED_DUMPS
dumps run, and taken off (0: the system's default, no limit) when more do.
"""

from __future__ import annotations

import socket

PACED_DUMPS = 4
NOTSENT_LOWAT = 128 << 10
_TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)  # Linux's value (Python has it on Linux)


def pace(sock: object, on: bool) -> bool:
    """Set or clear the limit on `sock` (a socket, or the loop's stand-in for one); False when it cannot be set
    (not TCP: a Unix socket; a socket already closed; a platform without it)."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, _TCP_NOTSENT_LOWAT, NOTSENT_LOWAT if on else 0)  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return False
    return True
