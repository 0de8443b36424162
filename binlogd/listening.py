"""Listening sockets bound as asyncio.start_server binds them: the one home of that loop (the MySQL port and the
metrics endpoints both use it; each caller words its own errors)."""

from __future__ import annotations

import socket


def bind_listening(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for every address `host` resolves to (one per family; IPv6 ones
    V6ONLY so that an IPv4 socket on the same port does not collide). socket.gaierror / OSError when it cannot:
    sockets already made are closed first."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    socks: list[socket.socket] = []
    try:
        for family, type_, proto, _, addr in dict.fromkeys(infos):
            s = socket.socket(family, type_, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind(addr)
            s.listen(backlog)
            s.setblocking(False)
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks
