"""SHOW PROCESSLIST, KILL, COM_PROCESS_INFO and COM_PROCESS_KILL, compared with a real MariaDB 10.11 primary.

binlogd serves the real primary's binlog directory, so both servers hold the same dump; every answer (columns,
rows, error codes and texts, what a killed client reads) is taken from both and compared.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.accounts import native_hash
from binlogd.server.processlist import KillRequest, kill_request, thread_id, user_name
from binlogd.server.sql_surface import SqlError

from binlogd.testing.mariadb import wait_until
from tests.dumpclient import DumpCapture, raw_dump
from tests.test_ledger_dump import read_ledger

DUMP_SETTINGS = ["SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=4"]
COM_PROCESS_INFO, COM_PROCESS_KILL = 0x0A, 0x0C
PW = "pw"
WAITING = "Master has sent all binlog to slave; waiting for more updates"


@pytest.fixture
def pair(mariadb: Any, binlogd: Any, harness_dir: Path) -> Iterator[tuple[Any, Any]]:
    """(real MariaDB, binlogd serving its binlog directory), both with a user `u` that has no privileges."""
    real = mariadb("proc-primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW")
    real.execute(f"CREATE DATABASE d; CREATE TABLE d.t (a INT); INSERT INTO d.t VALUES (1); "
                 f"CREATE USER u@'%' IDENTIFIED BY '{PW}'")
    users = harness_dir / "proc-users"
    users.write_text(f"root@localhost:''\nu:{native_hash(PW)} GRANT USAGE\n")
    ours = binlogd(["--binlog-dir", str(real.datadir), "--server-id", "1", "--users", str(users)])
    yield real, ours


def _connect(port: int, user: str = "root", password: str = "", **kw: Any) -> pymysql.Connection[Any]:
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, autocommit=True, **kw)


def _query(conn: pymysql.Connection[Any], sql: str) -> tuple[list[tuple[str, int]], list[tuple[Any, ...]]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return [(d[0], d[1]) for d in cur.description], list(cur.fetchall())


def _error(conn: pymysql.Connection[Any], sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as ei, conn.cursor() as cur:
        cur.execute(sql)
    return int(ei.value.args[0]), str(ei.value.args[1])


def _blocking_dump(server_id: int) -> bytes:
    return b"\x12" + struct.pack("<IHI", 4, 0, server_id) + b"mysql-bin.000001"


def _start_dump(port: int, server_id: int) -> tuple[threading.Thread, dict[str, DumpCapture]]:
    held: dict[str, DumpCapture] = {}
    t = threading.Thread(target=lambda: held.setdefault(
        "dump", raw_dump("127.0.0.1", port, DUMP_SETTINGS, _blocking_dump(server_id), idle_timeout=20)))
    t.start()
    return t, held


def _dump_id(conn: pymysql.Connection[Any]) -> int:
    ids: list[int] = []

    def found() -> bool:
        ids[:] = [r[0] for r in _query(conn, "SHOW PROCESSLIST")[1] if r[4] == "Binlog Dump" and r[6] == WAITING]
        return len(ids) == 1
    wait_until(found, 15, message="the dump is listed, waiting for more")
    return ids[0]


def _shape(rows: list[tuple[Any, ...]], me: int) -> list[tuple[Any, ...]]:
    """Rows without what differs between two servers: ids (the caller's own marked), ports, times."""
    return sorted(((r[0] == me, r[1], r[2].rsplit(":", 1)[0], *r[3:5], r[6], r[7], r[8]) for r in rows), key=repr)


def test_processlist_shows_dumps_idle_clients_and_itself(pair: tuple[Any, Any]) -> None:
    shapes = []
    for server in pair:
        idle = _connect(server.port, database="information_schema")
        t, _ = _start_dump(server.port, 7)
        conn = _connect(server.port)
        try:
            _dump_id(conn)
            me = _query(conn, "SELECT CONNECTION_ID()")[1][0][0]
            for sql in ("SHOW PROCESSLIST", "SHOW FULL PROCESSLIST"):
                columns, rows = _query(conn, sql)
                assert [c[0] for c in columns] == ["Id", "User", "Host", "db", "Command", "Time", "State", "Info",
                                                   "Progress"]
                shapes.append((sql, [c[1] for c in columns[:6]], _shape(rows, me)))
            host = next(r[2] for r in rows if r[0] == me)
            assert host.startswith("localhost:") and int(host.split(":")[1]) == conn._sock.getsockname()[1]  # type: ignore[attr-defined]
            assert all(isinstance(r[5], int) and 0 <= r[5] < 60 for r in rows)
        finally:
            conn.close()
            idle.close()
        conn = _connect(server.port)
        conn.query(f"KILL {_dump_id(conn)}")
        conn.close()
        t.join(30)
    assert shapes[:2] == shapes[2:], shapes
    rows = shapes[0][2]
    assert (False, "root", "localhost", None, "Binlog Dump", WAITING, None, 0.0) in rows
    assert (False, "root", "localhost", "information_schema", "Sleep", "", None, 0.0) in rows
    assert (True, "root", "localhost", None, "Query", "starting", "SHOW PROCESSLIST", 0.0) in rows


def test_kill_errors_are_mariadbs(pair: tuple[Any, Any]) -> None:
    got = []
    for server in pair:
        conn = _connect(server.port)
        me = _query(conn, "SELECT CONNECTION_ID()")[1][0][0]
        answers: list[object] = [_error(conn, sql) for sql in (
            "KILL 999999", "KILL QUERY 999999", "KILL CONNECTION 999999", "KILL HARD 999999",
            "KILL SOFT CONNECTION 999999", "KILL QUERY ID 5", "KILL 'x'", "KILL NULL", "KILL -1", "KILL 1000000.5",
            "KILL 999990+9", "KILL", "KILL ID 5", f"KILL QUERY {me}")]
        with conn.cursor() as cur:
            answers.append(cur.execute("KILL USER 'nobody'"))
            cur.execute("SELECT 1")  # KILL QUERY of itself interrupted only that statement
            answers.append(cur.fetchall())
        got.append(answers)
        conn.close()
    assert got[0] == got[1], got
    assert got[0][0] == (1094, "Unknown thread id: 999999") and got[0][8] == (1094, "Unknown thread id: "
                                                                                      "18446744073709551615")


def _reads_eof(conn: pymysql.Connection[Any]) -> bytes:
    sock = conn._sock  # type: ignore[attr-defined]
    sock.settimeout(15)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def test_kill_idle_self_and_com_process_kill(pair: tuple[Any, Any]) -> None:
    got = []
    for server in pair:
        admin = _connect(server.port)
        answers: list[object] = []
        victim = _connect(server.port)
        vid = _query(victim, "SELECT CONNECTION_ID()")[1][0][0]
        with admin.cursor() as cur:
            cur.execute(f"KILL {vid}")
        answers.append(_reads_eof(victim))  # closed without a packet
        victim = _connect(server.port)
        vid = _query(victim, "SELECT CONNECTION_ID()")[1][0][0]
        admin._execute_command(COM_PROCESS_KILL, struct.pack("<I", vid))  # type: ignore[attr-defined]
        answers.append(admin._read_packet().get_all_data()[:1])  # type: ignore[attr-defined]  # OK
        answers.append(_reads_eof(victim))
        admin._execute_command(COM_PROCESS_KILL, struct.pack("<I", 999999))  # type: ignore[attr-defined]
        with pytest.raises(pymysql.err.MySQLError) as ei:
            admin._read_packet()  # type: ignore[attr-defined]
        answers.append(ei.value.args)
        me = _query(admin, "SELECT CONNECTION_ID()")[1][0][0]
        answers.append(_error(admin, f"KILL {me}"))
        answers.append(_reads_eof(admin))
        selfkill = _connect(server.port)
        sid = _query(selfkill, "SELECT CONNECTION_ID()")[1][0][0]
        selfkill._execute_command(COM_PROCESS_KILL, struct.pack("<I", sid))  # type: ignore[attr-defined]
        with pytest.raises(pymysql.err.MySQLError) as ei:
            selfkill._read_packet()  # type: ignore[attr-defined]
        answers.append(ei.value.args)
        u1, u2 = _connect(server.port, "u", PW), _connect(server.port, "u", PW)
        with u1.cursor() as cur:  # its own user: the caller's connection too, closed after the OK
            answers.append(cur.execute("KILL USER 'u'"))
        answers.append((_reads_eof(u1), _reads_eof(u2)))
        got.append(answers)
    assert got[0] == got[1], got
    assert got[0][0] == b"" and got[0][1] == b"\x00" and got[0][4] == (1927, "Connection was killed")
    assert got[0][-2:] == [2, (b"", b"")]


def test_kill_a_dump_connection_or_its_query(pair: tuple[Any, Any]) -> None:
    """KILL: the dump's reader sees the socket close; KILL QUERY: an EOF in sequence, as at a dump's end."""
    seen = []
    for server in pair:
        ends = []
        for how in ("KILL", "KILL QUERY"):
            t, held = _start_dump(server.port, 8)
            conn = _connect(server.port)
            conn.query(f"{how} {_dump_id(conn)}")
            t.join(30)
            cap = held["dump"]
            assert [p.seq for p in cap.packets] == list(range(1, len(cap.packets) + 1)), (server, how)
            ends.append((how, cap.end, cap.error, len(cap.events)))
            wait_until(lambda c=conn: all(r[4] != "Binlog Dump" for r in _query(c, "SHOW PROCESSLIST")[1]), 10,
                       message="the killed dump leaves the process list")
            conn.close()
        seen.append(ends)
    assert seen[0] == seen[1], seen
    assert [e[1] for e in seen[0]] == ["closed", "EOF"]


def test_com_process_info_and_a_user_without_process(pair: tuple[Any, Any]) -> None:
    got = []
    for server in pair:
        root = _connect(server.port)
        rid = _query(root, "SELECT CONNECTION_ID()")[1][0][0]
        user = _connect(server.port, "u", PW)
        uid = _query(user, "SELECT CONNECTION_ID()")[1][0][0]
        answers: list[object] = [_shape(_query(user, "SHOW PROCESSLIST")[1], uid)]  # its own connection only
        answers.append(_error(user, f"KILL {rid}") == (1095, f"You are not owner of thread {rid}"))
        answers.append(_error(user, f"KILL QUERY {rid}") == (1095, f"You are not owner of thread {rid}"))
        with user.cursor() as cur:  # without PROCESS it does not see root's connections: nothing to kill
            answers.append(cur.execute("KILL USER 'root'"))
        user._execute_command(COM_PROCESS_KILL, struct.pack("<I", rid))  # type: ignore[attr-defined]
        with pytest.raises(pymysql.err.MySQLError) as ei:
            user._read_packet()  # type: ignore[attr-defined]
        answers.append(ei.value.args == (1095, f"You are not owner of thread {rid}"))
        with root.cursor(pymysql.cursors.Cursor) as cur:  # COM_PROCESS_INFO: a text result set
            root._execute_command(COM_PROCESS_INFO, b"")  # type: ignore[attr-defined]
            result = pymysql.connections.MySQLResult(root)
            result.read()
            answers.append([f[0] for f in result.description])
            answers.append(_shape(list(result.rows), rid))
            del cur
        got.append(answers)
        user.close()
        root.close()
    assert got[0] == got[1], got
    assert got[0][1] is got[0][2] is got[0][4] is True
    assert got[0][3] == 0


def test_kill_request_parts() -> None:
    assert kill_request("SELECT 1") is None and kill_request("KILLER") is None
    assert kill_request(" kill query 5 ;") == KillRequest(query=True, query_id=False, user=False, target="5")
    assert kill_request("KILL HARD CONNECTION 7") == KillRequest(query=False, query_id=False, user=False, target="7")
    assert kill_request("KILL USER 'u'@'%'") == KillRequest(query=False, query_id=False, user=True,
                                                          target="'u'@'%'")
    with pytest.raises(SqlError) as ei:
        kill_request("KILL ")
    assert ei.value.code == 1064
    assert [thread_id(v) for v in (None, "x", "12abc", 1.5, -1, b"3")] == [0, 0, 12, 2, (1 << 64) - 1, 3]
    assert user_name("'u'@'%'") == "u" and user_name("u") == "u"


def test_a_killed_replica_dump_reconnects_and_the_ledger_says_killed(binlogd_factory: Any, mariadb: Any,
                                                                     harness_dir: Path) -> None:
    """The standalone primary: KILL of a real replica's Binlog Dump thread; its IO thread reconnects and catches
    up, SHOW SLAVE HOSTS lists it again, and the ledger closes the killed dump with reason `killed`."""
    ledger = harness_dir / "ledger"
    primary = binlogd_factory.standalone(["--ledger", str(ledger)])
    primary.execute("CREATE DATABASE d; CREATE TABLE d.t (a INT PRIMARY KEY); INSERT INTO d.t VALUES (1)")
    replica = mariadb("proc-replica", 2)
    replica.change_master_to(primary)
    replica.wait_caught_up()
    conn = _connect(primary.port)
    first = _dump_id(conn)
    conn.query(f"KILL {first}")
    primary.execute("INSERT INTO d.t VALUES (2)")
    wait_until(lambda: any(r[0] != first for r in _query(conn, "SHOW PROCESSLIST")[1] if r[4] == "Binlog Dump"), 30,
               message="the replica dumps again")
    replica.wait_caught_up()
    assert replica.query("SELECT a FROM d.t ORDER BY a") == [(1,), (2,)]
    assert replica.slave_status()["Slave_IO_Running"] == "Yes"
    wait_until(lambda: [r[0] for r in _query(conn, "SHOW SLAVE HOSTS")[1]] == [2], 15,
               message="SHOW SLAVE HOSTS lists the replica again")
    recs = read_ledger(ledger)
    closes = [r for r in recs if r["r"] == "close"]
    assert closes and closes[0]["reason"] == "killed" and closes[0]["error_code"] is None, closes
    conn.close()


def test_information_schema_processlist(pair: tuple[Any, Any]) -> None:
    got = []
    for server in pair:
        t, _ = _start_dump(server.port, 9)
        conn = _connect(server.port)
        dump = _dump_id(conn)
        answers = [sorted(_query(conn, "SELECT ID = CONNECTION_ID(), USER, COMMAND, STATE, INFO, DB, TIME < 60, "
                                       "STAGE, PROGRESS FROM information_schema.PROCESSLIST")[1], key=repr)]
        answers.append(_query(conn, f"SELECT ID = {dump}, USER FROM information_schema.PROCESSLIST "
                                    "WHERE COMMAND = 'Binlog Dump'")[1])
        columns = _query(conn, "SELECT * FROM information_schema.PROCESSLIST WHERE ID = 0")[0]
        answers.append([c[0] for c in columns])
        conn.query(f"KILL {dump}")
        t.join(30)
        conn.close()
        got.append(answers)
    assert got[0] == got[1], got
    assert got[0][1] == [(1, "root")]
