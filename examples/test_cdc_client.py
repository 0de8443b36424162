"""A CDC client (python-mysql-replication) against holes, dummies and a server that drops it mid-stream.

Copy this file next to your own tests; with binlogd installed (`pip install binlogd`), its pytest plugin provides
the fixtures. Run: `pytest -n 2`.
"""

from __future__ import annotations

from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from binlogd.testing.faults import Fault

COLUMNS = ["id INT PRIMARY KEY", "name VARCHAR(20)"]


def _script(builder: Any) -> None:
    """Three transactions; the second ran under SET skip_replication=1 on the primary (flag 0x8000)."""
    builder.statement("CREATE DATABASE shop CHARACTER SET utf8mb4")
    builder.statement("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", db="shop")
    for rows, flagged in (([(1, "kept")], False), ([(2, "flagged")], True), ([(3, "kept too")], False)):
        with builder.transaction(skip_replication=flagged) as t:
            t.insert("shop", "t", COLUMNS, rows)


def _rows(server: Any, **kw: Any) -> list[tuple[Any, ...]]:
    """Every row python-mysql-replication decodes from the server's binlog (non-blocking: stops at the end)."""
    stream = BinLogStreamReader(
        connection_settings={"host": server.host, "port": server.port, "user": "root", "passwd": "",
                             **kw.pop("connection_settings", {})},
        server_id=101, blocking=False, only_events=[WriteRowsEvent], **kw)
    kw.setdefault("resume_stream", False)
    try:
        return [tuple(r["values"].values()) for ev in stream for r in ev.rows]
    finally:
        stream.close()


def test_skip_replication_holes(binlog_builder: Any, binlogd_factory: Any) -> None:
    """A client that ran SET skip_replication=1 gets holes for the flagged transaction: it never sees row 2."""
    _script(binlog_builder)
    server = binlogd_factory.serve(binlog_builder)

    rows = _rows(server, connection_settings={"init_command": "SET skip_replication=1"})

    assert [r[0] for r in rows] == [1, 3]
    (conn,) = server.connections()
    flagged = [e for e in binlog_builder.written if e.flags & 0x8000]
    assert conn.skip_replication and conn.capability == 4
    assert conn.count("hole", "skip_replication") == len(flagged)  # GTID, TABLE_MAP, WRITE_ROWS, XID


class _Capability0(pymysql.connections.Connection):  # type: ignore[misc]
    """python-mysql-replication always announces capability 4; this client pretends to be a MySQL-era replica."""

    def query(self, sql: str, unbuffered: bool = False) -> int:
        return super().query(sql.replace("@mariadb_slave_capability=4", "@mariadb_slave_capability=0"), unbuffered)


def test_capability_0_gets_same_length_dummies(binlog_builder: Any, binlogd_factory: Any) -> None:
    """Below capability 2 binlogd sends same-length dummies instead of holes, so positions add up event by event."""
    _script(binlog_builder)
    server = binlogd_factory.serve(binlog_builder)

    rows = _rows(server, connection_settings={"init_command": "SET skip_replication=1"},
                 pymysql_wrapper=_Capability0)

    assert [r[0] for r in rows] == [1, 3]
    (conn,) = server.connections()
    assert conn.capability == 0
    assert conn.count("dummy", "skip_replication") >= 3 and conn.count("hole", "skip_replication") == 0


def test_dropped_after_n_events_reconnects(binlog_builder: Any, binlogd_factory: Any) -> None:
    """The server closes the first dump after 12 event packets (row 1 delivered). python-mysql-replication
    reconnects by itself; resuming from the position it reached needs resume_stream=True, else it starts over."""
    _script(binlog_builder)
    server = binlogd_factory.serve(binlog_builder)

    server.inject(Fault(connection=1, close_after_events=12))
    assert [r[0] for r in _rows(server)] == [1, 1, 2, 3]  # resume_stream=False: the file again from its start

    server.inject(Fault(connection=1, close_after_events=12))
    resumed = _rows(server, resume_stream=True, log_file="mysql-bin.000001", log_pos=4)
    assert [r[0] for r in resumed] == [1, 2, 3]  # exactly once
    first, again, faulted, resumed_dump = server.connections(at_least=4)  # (the last may still be on its way)
    assert first.close_reason == faulted.close_reason == "fault"
    cut = first.fault("close_after_events")
    assert cut is not None and cut["events"] == 12  # where the client's stream really ended
    assert again.start_pos == 4 and resumed_dump.start_pos > 4  # the resumed dump began where row 1 ended
