"""applier/results.py reads a multi-statement query's results as pymysql would, from a real MariaDB 10.11.

Each statement's affected (found) rows, a result set in the middle, an error packet raised as pymysql raises it
(code and text) with the session still usable afterwards, and a lost connection raised as 2013.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest
from binlogd.applier.results import read_result, send_query
from pymysql.constants import CLIENT


def _connect(server: Any) -> Any:
    return pymysql.connect(host=server.host, port=server.port, user="root", autocommit=True,
                           client_flag=CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS)


def test_results_read_as_pymysql_reads_them(mariadb: Any) -> None:
    server = mariadb("target", 3)
    conn = _connect(server)
    try:
        send_query(conn, b"CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT); BEGIN; "
                         b"INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3); UPDATE d.t SET v = 9 WHERE id < 3; "
                         b"UPDATE d.t SET v = 9 WHERE id = 1; SELECT 1; DELETE FROM d.t WHERE id = 3; COMMIT")
        assert [read_result(conn) for _ in range(9)] == [1, 0, 0, 3, 2, 1, 1, 1, 0]  # FOUND_ROWS: 1 matched
        send_query(conn, b"INSERT INTO d.t VALUES (4, 4); INSERT INTO d.t VALUES (1, 1); INSERT INTO d.t VALUES (5, 5)")
        assert read_result(conn) == 1
        with pytest.raises(pymysql.err.IntegrityError) as e:
            read_result(conn)  # the server stops the query at the failing statement: no third result
        assert e.value.args == (1062, "Duplicate entry '1' for key 'PRIMARY'")
        send_query(conn, b"SELECT COUNT(*) FROM d.t")  # the session is in step
        assert read_result(conn) == 1 and conn._result.rows == ((3,),)
        with conn.cursor() as cur:  # and pymysql's own calls still work on it
            cur.execute("SELECT id, v FROM d.t ORDER BY id")
            assert cur.fetchall() == ((1, 9), (2, 9), (4, 4))
        killer = _connect(server)
        try:
            with killer.cursor() as cur:
                cur.execute(f"KILL {conn.thread_id()}")
        finally:
            killer.close()
        with pytest.raises(pymysql.err.OperationalError) as lost:
            send_query(conn, b"SELECT 1")
            read_result(conn)
        assert lost.value.args[0] in (2006, 2013)
    finally:
        conn.close()
