"""Standalone binlogd: session semantics, refusals and files, from pymysql and the mariadb CLI.

Error numbers and texts are MariaDB 10.11's (checked on a real server: 1929 and 1694 inside a transaction, 1238 for
SELECT @@global.skip_replication, 1228 for SET GLOBAL skip_replication, 1373 for PURGE; PURGE of a file in use:
tests/test_expiry.py).
"""

from __future__ import annotations

import socket
import struct
import subprocess
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.commands import build_binlog_dump
from binlogd.protocol.constants import (
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    LOG_EVENT_SKIP_REPLICATION_F,
    QUERY_EVENT,
    ROTATE_EVENT,
    USER_VAR_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import parse_event


def start(binlogd: Any, datadir: Path, *extra: str) -> Any:
    return binlogd(["--datadir", str(datadir), "--no-ledger", *extra])


def connect(server: Any, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True, **kw)


def run(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def error_of(conn: Any, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as info:
        run(conn, sql)
    code, message = info.value.args[:2]
    return int(code), str(message)


def events(datadir: Path, name: str = "mysql-bin.000001") -> list[tuple[int, int, Any]]:
    data = (datadir / name).read_bytes()
    out = []
    for ev in scan(data).events:
        e = parse_event(data[ev.pos : ev.end], 1)
        out.append((ev.type_code, e.header.flags, e.body))
    return out


@pytest.fixture
def server(binlogd: Any, harness_dir: Path) -> Any:
    s = start(binlogd, harness_dir / "data")
    s.datadir = harness_dir / "data"
    return s


def test_skip_replication_per_session_and_its_errors(server: Any) -> None:
    a, b = connect(server), connect(server)
    run(a, "CREATE DATABASE d")
    run(a, "CREATE TABLE d.t (a VARCHAR(10))")
    run(a, "SET skip_replication=1")
    assert run(a, "SELECT @@skip_replication") == [(1,)]
    assert run(b, "SELECT @@skip_replication") == [(0,)]
    assert error_of(a, "SELECT @@global.skip_replication") == (
        1238, "Variable 'skip_replication' is a SESSION variable")
    assert error_of(a, "SET GLOBAL skip_replication=1") == (
        1228, "Variable 'skip_replication' is a SESSION variable and can't be used with SET GLOBAL")
    run(a, "BEGIN")
    run(a, "INSERT INTO d.t VALUES (1)")
    assert error_of(a, "SET skip_replication=0") == (1929, "Cannot modify @@session.skip_replication inside a "
                                                           "transaction")
    assert error_of(a, "SET sql_log_bin=0") == (1694, "Cannot modify @@session.sql_log_bin inside a transaction")
    run(a, "COMMIT")
    run(a, "SET skip_replication=0")
    run(b, "SET autocommit=0")
    run(b, "INSERT INTO d.t VALUES (2)")  # autocommit=0: the statement opened a transaction
    assert error_of(b, "SET skip_replication=1")[0] == 1929
    run(b, "ROLLBACK")
    run(b, "SET autocommit=1")
    run(b, "SET skip_replication=1, @v='x'")
    run(b, "CREATE TABLE d.flagged (x INT)")
    run(b, "INSERT INTO d.t VALUES (@v)")
    evs = events(server.datadir)
    groups = [e for e in evs if e[0] in (GTID_EVENT, QUERY_EVENT, XID_EVENT, USER_VAR_EVENT)]
    flagged = [(t, f) for t, f, body in groups if f & LOG_EVENT_SKIP_REPLICATION_F]
    # the BEGIN..COMMIT under skip_replication=1 (GTID, Query, XID), the DDL (GTID, Query), the last insert
    # (GTID, USER_VAR, Query, XID): every event of theirs flagged, nothing else
    assert [t for t, _ in flagged] == [GTID_EVENT, QUERY_EVENT, XID_EVENT, GTID_EVENT, QUERY_EVENT,
                                       GTID_EVENT, USER_VAR_EVENT, QUERY_EVENT, XID_EVENT]
    assert all(f & 0x8000 for _, f in flagged)
    texts = [body.query for t, _, body in groups if t == QUERY_EVENT]
    assert texts == [b"CREATE DATABASE d", b"CREATE TABLE d.t (a VARCHAR(10))", b"INSERT INTO d.t VALUES (1)",
                     b"CREATE TABLE d.flagged (x INT)",
                     b"INSERT INTO d.t VALUES (@v)"]  # the rolled-back insert is not there


def test_sql_log_bin_0_logs_nothing_and_rollback_discards(server: Any) -> None:
    c = connect(server)
    run(c, "CREATE DATABASE d")
    run(c, "CREATE TABLE d.t (a INT)")
    before = run(c, "SHOW MASTER STATUS")
    run(c, "SET sql_log_bin=0")
    run(c, "INSERT INTO d.t VALUES (1)")
    run(c, "CREATE TABLE d.x (a INT)")
    run(c, "SET sql_log_bin=1")
    run(c, "BEGIN")
    run(c, "INSERT INTO d.t VALUES (2)")
    run(c, "ROLLBACK")
    run(c, "BEGIN")
    run(c, "COMMIT")  # an empty transaction logs nothing
    assert run(c, "SHOW MASTER STATUS") == before
    assert run(c, "SELECT @@gtid_binlog_pos") == [("0-1-2",)]
    # a transaction left open by a vanished client is rolled back
    d = connect(server)
    run(d, "BEGIN")
    run(d, "INSERT INTO d.t VALUES (3)")
    d.close()
    run(c, "INSERT INTO d.t VALUES (4)")
    texts = [body.query for t, _, body in events(server.datadir) if t == QUERY_EVENT]
    assert texts == [b"CREATE DATABASE d", b"CREATE TABLE d.t (a INT)", b"INSERT INTO d.t VALUES (4)"]
    assert run(c, "SELECT @@gtid_binlog_pos") == [("0-1-3",)]


REFUSED = [
    ("GRANT ALL ON *.* TO x@localhost", 1235),
    ("CREATE USER u@localhost", 1235),
    ("CREATE VIEW d.v AS SELECT 1", 1235),
    ("CREATE TEMPORARY TABLE d.tmp (a INT)", 1235),
    ("LOAD DATA INFILE '/etc/passwd' INTO TABLE d.t", 1235),
    ("CALL d.p()", 1235),
    ("INSERT INTO t VALUES (1)", 1046),  # no default database
    ("CREATE TABLE t (a INT)", 1046),
    ("INSERT INTO d.t VALUES (", 1064),
    ("UPDATE d.t SET", 1064),
]


def test_refusals_log_nothing(server: Any) -> None:
    c = connect(server)
    run(c, "CREATE DATABASE d")
    run(c, "CREATE TABLE d.t (a INT AUTO_INCREMENT PRIMARY KEY)")
    before = run(c, "SHOW MASTER STATUS")
    for sql, code in REFUSED:
        assert error_of(c, sql)[0] == code, sql
    assert error_of(c, "INSERT INTO d.t VALUES (") == (
        1064, "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server "
        "version for the right syntax to use near '' at line 1")
    run(c, "INSERT INTO d.t VALUES (LAST_INSERT_ID())")  # known: 0 on a new connection
    code, message = error_of(c, "INSERT INTO d.t VALUES (LAST_INSERT_ID())")  # after an insert: unknowable
    assert code == 1235 and "LAST_INSERT_ID()" in message
    run(c, "SET LAST_INSERT_ID=41")
    run(c, "INSERT INTO d.t VALUES (LAST_INSERT_ID())")
    run(c, "SET insert_id=5")  # the client's auto-increment value: logged as MariaDB logs the generated one
    run(c, "INSERT INTO d.t VALUES (NULL)")
    run(c, "INSERT INTO d.t VALUES (NULL)")  # consumed: no INSERT_ID any more
    assert run(c, "SHOW MASTER STATUS") != before
    intvars = [body for t, _, body in events(server.datadir) if t == 5]
    assert [(b.type, b.value) for b in intvars] == [(1, 0), (1, 41), (2, 5)]


def test_errors_from_the_mariadb_cli(server: Any) -> None:
    def cli(sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["mariadb", "-h", server.host, "-P", str(server.port), "-uroot", "-e", sql],
                              capture_output=True, text=True, timeout=30)

    r = cli("BEGIN; SET skip_replication=1")
    assert r.returncode == 1
    assert "ERROR 1929 (HY000) at line 1: Cannot modify @@session.skip_replication inside a transaction" in r.stderr
    r = cli("SELECT @@global.skip_replication")
    assert "ERROR 1238 (HY000) at line 1: Variable 'skip_replication' is a SESSION variable" in r.stderr
    r = cli("GRANT ALL ON *.* TO x@localhost")
    assert "ERROR 1235 (42000) at line 1: This version of binlogd doesn't yet support" in r.stderr
    r = cli("CREATE DATABASE cli; USE cli; CREATE TABLE t (a INT); SET skip_replication=1; INSERT INTO t VALUES (1);"
            "SELECT @@skip_replication, @@gtid_binlog_pos")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1] == "1\t0-1-3"


def _binlog_names(c: Any) -> list[str]:
    return [str(r[0]) for r in run(c, "SHOW BINARY LOGS")]


def test_rotation_flush_and_purge(binlogd: Any, harness_dir: Path) -> None:
    datadir = harness_dir / "data"
    server = start(binlogd, datadir, "--max-binlog-size", "4096", "--sync-binlog", "1")
    c = connect(server)
    run(c, "CREATE DATABASE d")
    run(c, "CREATE TABLE d.t (id INT, v TEXT)")
    for i in range(60):
        run(c, f"INSERT INTO d.t VALUES ({i}, '{'x' * 100}')")
    run(c, "FLUSH BINARY LOGS")
    names = _binlog_names(c)
    assert len(names) >= 4
    assert (datadir / "mysql-bin.index").read_text() == "".join(f"./{n}\n" for n in names)
    seq = 0
    for n in names:
        data = (datadir / n).read_bytes()
        verify(data)
        evs = events(datadir, n)
        assert [t for t, _, _ in evs[:3]] == [FORMAT_DESCRIPTION_EVENT, GTID_LIST_EVENT, 161]
        assert evs[0][1] & 1 == (1 if n == names[-1] else 0)  # only the active file is "in use"
        listed = evs[1][2].gtids
        assert [str(g) for g in listed] == ([f"0-1-{seq}"] if seq else [])  # the state at the file's start
        assert evs[2][2].file_name == n.encode()
        if n != names[-1]:
            assert evs[-1][0] == ROTATE_EVENT
        if n not in names[-2:]:
            assert len(data) >= 4096  # rotated for its size (the one before the last: by FLUSH BINARY LOGS)
        seq += sum(1 for t, _, _ in evs if t == GTID_EVENT)
        assert len(data) < 4096 + 1024  # a file ends at the first group end past the limit
    assert seq == 62
    # PURGE
    assert error_of(c, "PURGE BINARY LOGS TO 'mysql-bin.999999'") == (1373, "Target log not found in binlog index")
    run(c, f"PURGE BINARY LOGS TO '{names[2]}'")
    assert _binlog_names(c) == names[2:]
    assert not (datadir / names[0]).exists() and not (datadir / names[1]).exists()
    run(c, "PURGE BINARY LOGS BEFORE '2000-01-01 00:00:00'")
    assert _binlog_names(c) == names[2:]


def test_purge_refuses_a_file_a_replica_reads(binlogd: Any, harness_dir: Path) -> None:
    """A dump whose client reads nothing stalls (back-pressure) in an early file; PURGE must not delete it."""
    datadir = harness_dir / "data"
    server = start(binlogd, datadir, "--max-binlog-size", "4M")
    c = connect(server, max_allowed_packet=16 << 20)
    run(c, "CREATE DATABASE d")
    run(c, "CREATE TABLE d.t (id INT, v LONGTEXT)")
    big = "x" * 1_000_000
    for i in range(24):
        run(c, f"INSERT INTO d.t VALUES ({i}, '{big}')")
    names = _binlog_names(c)
    assert len(names) >= 5
    dump = connect(server)
    run(dump, "SET @master_binlog_checksum='CRC32'")
    sock: socket.socket = dump._sock  # type: ignore[attr-defined]
    payload = build_binlog_dump(4, 0, 77, names[0])
    sock.sendall(struct.pack("<I", len(payload))[:3] + b"\x00" + payload)
    sock.settimeout(10)
    assert sock.recv(4)  # the dump has started (and stalls: nobody reads the rest)

    run(c, f"PURGE BINARY LOGS TO '{names[-1]}'")  # OK, as from a real 10.11: it stops at the file in use
    assert _binlog_names(c) == names
    dump.close()
