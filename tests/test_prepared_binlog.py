"""Prepared statements on the standalone primary, logged as a real MariaDB 10.11 primary logs them.

The same session goes to a reference MariaDB (STATEMENT format) and to binlogd, from three clients: pymysql
(parameters interpolated by the client), the `mariadb` connector (COM_STMT_PREPARE / COM_STMT_EXECUTE, binary
parameters) and the mariadb CLI (SQL PREPARE / EXECUTE ... USING / DEALLOCATE PREPARE). Both binlogs must carry the
same events with the same bodies (test_standalone_replicas.comparable: up to timestamps and query ids). Refused
executions (unknown statement, wrong parameter count, a parameter type that does not exist) get MariaDB's error on
both and leave binlogd's binlog as it was.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path
from typing import Any

import mariadb as mariadb_connector  # the `connector` extra (`make test` installs it)
import pymysql

from tests.test_bad_input import COM_STMT_EXECUTE, send_packet
from tests.test_bad_input_mariadb import answer, login, prepare
from tests.test_standalone_replicas import REFERENCE_ARGS, comparable, master_status

SETUP = ["CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(100), f DOUBLE, n DECIMAL(10,2))"]
TEXT = "it's a \\ b\n\0 \"q\" ? é"
CLI_SESSION = ("PREPARE s FROM 'INSERT INTO d.t (id, v, f, n) VALUES (?, ?, ?, ?)'; "
               "SET @a = 20, @b = 'it''s \\\\ ?', @c = 0.5, @d = NULL; EXECUTE s USING @a, @b, @c, @d; "
               "EXECUTE s USING 21, 'x', NULL, 1.25; "
               "PREPARE u FROM 'UPDATE d.t SET v = ? WHERE id = ?'; EXECUTE u USING 'updated', 20; "
               "DEALLOCATE PREPARE s; DROP PREPARE u")
SQL_ERRORS = [
    ("EXECUTE nosuch", 1243, "Unknown prepared statement handler (nosuch) given to EXECUTE"),
    ("PREPARE p FROM 'DELETE FROM d.t WHERE id = ?'", None, None),
    ("EXECUTE p", 1210, "Incorrect arguments to EXECUTE"),
    ("EXECUTE p USING 1, 2", 1210, "Incorrect arguments to EXECUTE"),
    ("DEALLOCATE PREPARE p", None, None),
    ("DEALLOCATE PREPARE p", 1243, "Unknown prepared statement handler (p) given to DEALLOCATE PREPARE"),
]


def _session(host: str, port: int) -> list[tuple[str, Any]]:
    """The session, from the three clients in turn; returns what each refused statement answered."""
    conn = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True, charset="utf8mb4")
    answers: list[tuple[str, Any]] = []
    with conn.cursor() as cur:
        for sql in SETUP:
            cur.execute(sql)
        cur.execute("INSERT INTO d.t VALUES (%s, %s, %s, %s)", (1, TEXT, 1.5, "3.25"))
        cur.execute("UPDATE d.t SET v = %s WHERE id = %s", ("x'y", 1))
        for sql, _, _ in SQL_ERRORS:
            try:
                cur.execute(sql)
                answers.append((sql, None))
            except pymysql.MySQLError as e:
                answers.append((sql, (e.args[0], e.args[1])))
    conn.close()
    mc = mariadb_connector.connect(host=host, port=port, user="root", password="", autocommit=True)
    cur = mc.cursor()
    cur.execute("INSERT INTO d.t (id, v, f, n) VALUES (?, ?, ?, ?)", (2, TEXT, 2.5, None))
    cur.execute("INSERT INTO d.t (id, v) VALUES (?, ?)", (-3, 12345678901234))
    cur.execute("UPDATE d.t SET v = ?, f = ? WHERE id = ?", ("it's", -0.125, 2))
    cur.execute("DELETE FROM d.t WHERE id = ? AND v = ?", (-3, "12345678901234"))
    mc.close()
    cli = subprocess.run(["mariadb", "-h", host, "-P", str(port), "-u", "root", "--protocol=TCP", "-e", CLI_SESSION],
                         capture_output=True, text=True, timeout=30)
    assert cli.returncode == 0, cli.stderr
    return answers


def _bad_executions(host: str, port: int) -> tuple[int, list[Any]]:
    """COM_STMT_EXECUTE with an unknown id, without its parameters, with a type that does not exist."""
    sock = login(host, port)
    try:
        sid = prepare(sock, "INSERT INTO d.t (id, v) VALUES (?, ?)")
        got = []
        send_packet(sock, bytes((COM_STMT_EXECUTE,)) + struct.pack("<IBI", sid + 1000, 0, 1))
        got.append(answer(sock))
        send_packet(sock, bytes((COM_STMT_EXECUTE,)) + struct.pack("<IBI", sid, 0, 1))
        got.append(answer(sock))
        body = struct.pack("<IBI", sid, 0, 1) + b"\x00\x01" + bytes((0x08, 0, 0x99, 0))
        body += struct.pack("<q", 7) + b"\x01b"
        send_packet(sock, bytes((COM_STMT_EXECUTE,)) + body)
        got.append(answer(sock))
        return sid, got
    finally:
        sock.close()


def test_prepared_statements_logged_as_mariadb_logs_them(mariadb: Any, binlogd_factory: Any) -> None:
    ref = mariadb("ref", 1, *REFERENCE_ARGS)
    ours = binlogd_factory.standalone()
    answers = {"mariadb": _session(ref.host, ref.port), "binlogd": _session(ours.host, ours.port)}
    assert answers["binlogd"] == answers["mariadb"]
    assert [a for _, a in answers["mariadb"]] == [None if c is None else (c, m) for _, c, m in SQL_ERRORS]

    end_before = master_status(ours.host, ours.port)
    bad = {"mariadb": _bad_executions(ref.host, ref.port), "binlogd": _bad_executions(ours.host, ours.port)}
    for side, (sid, got) in bad.items():  # statement ids are per server (MariaDB's count across connections)
        assert got == [
            ("err", 1243, f"Unknown prepared statement handler ({sid + 1000}) given to mysqld_stmt_execute"),
            ("err", 1210, "Incorrect arguments to mysqld_stmt_execute"),
            ("err", 1210, "Incorrect arguments to mysqld_stmt_execute"),
        ], side
    assert master_status(ours.host, ours.port) == end_before  # nothing logged for the refused executions

    name, _ = master_status(ref.host, ref.port)
    ours_file = Path(ours.datadir) / master_status(ours.host, ours.port)[0]
    real = comparable((ref.datadir / name).read_bytes())
    mine = comparable(ours_file.read_bytes())
    assert mine == real
    queries = [body[1] for code, _, body in real if code == 2]
    assert b"INSERT INTO d.t (id, v, f, n) VALUES (20, 'it\\'s \\\\ ?', 0.5, NULL)" in queries  # EXECUTE ... USING
