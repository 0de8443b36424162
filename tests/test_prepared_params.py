"""Prepared-statement parameters reach the statement as properly quoted literals (COM_STMT_PREPARE / EXECUTE).

mysql-mimic spliced each string parameter in as ``'{value}'`` with ``re.sub``: a quote in a value ended the literal
(the standalone primary logged a different statement than the client's), a backslash was read as a regex escape and
a ``?`` inside a value was taken for the next placeholder. A real MariaDB replica of binlogd must end with exactly the
values the client bound.
"""

from __future__ import annotations

import struct
from typing import Any

from tests.test_bad_input import COM_STMT_EXECUTE, send_packet
from tests.test_bad_input_mariadb import answer, login, prepare, query

VALUES = ["it's", "back\\slash and ? mark", "new\nline\0nul", "'); DROP TABLE d.t; --", "plain"]


def _lenenc(b: bytes) -> bytes:
    assert len(b) < 0xFB_0000
    return (bytes((len(b),)) if len(b) < 251 else b"\xfd" + len(b).to_bytes(3, "little")) + b


def _execute(sock: Any, stmt_id: int, n: int, text: str) -> Any:
    """COM_STMT_EXECUTE with (n BIGINT, text VAR_STRING), new-params-bound flag set."""
    body = struct.pack("<IBI", stmt_id, 0, 1) + b"\x00" + b"\x01" + bytes((8, 0, 253, 0))
    body += struct.pack("<q", n) + _lenenc(text.encode())
    send_packet(sock, bytes((COM_STMT_EXECUTE,)) + body)
    return answer(sock)


def test_string_parameters_are_quoted_literals(binlogd_factory: Any, mariadb_replica: Any) -> None:
    server = binlogd_factory.standalone()
    sock = login(server.host, server.port)
    try:
        assert query(sock, "CREATE DATABASE d") == ("ok",)
        assert query(sock, "CREATE TABLE d.t (id BIGINT PRIMARY KEY, v VARCHAR(100))") == ("ok",)
        sid = prepare(sock, "INSERT INTO d.t (id, v) VALUES (?, ?)")
        for i, v in enumerate(VALUES, 1):
            assert _execute(sock, sid, i, v) == ("ok",), v
    finally:
        sock.close()
    mariadb_replica.change_master_to(server)
    mariadb_replica.wait_caught_up(timeout=30)
    assert mariadb_replica.query("SELECT id, v FROM d.t ORDER BY id") == [(i, v) for i, v in enumerate(VALUES, 1)]
