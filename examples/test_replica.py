"""A real MariaDB 10.11 replica converging on a scripted stream with flagged events.

FILTER_ON_MASTER: binlogd leaves the flagged transaction out of the stream (holes); FILTER_ON_SLAVE: the replica
gets it and does not apply it. Either way the replica ends at the primary's position without row 2.
Needs MariaDB 10.11 (Debian: apt-get install mariadb-server mariadb-client). Run: `pytest -n 2`.
"""

from __future__ import annotations

from typing import Any

import pytest

COLUMNS = ["id INT PRIMARY KEY", "name VARCHAR(20)"]


@pytest.mark.parametrize("skip_mode", ["FILTER_ON_MASTER", "FILTER_ON_SLAVE"])
def test_replica_skips_flagged_transaction(binlog_builder: Any, binlogd_factory: Any, mariadb_replica: Any,
                                           skip_mode: str) -> None:
    binlog_builder.statement("CREATE DATABASE shop CHARACTER SET utf8mb4")
    binlog_builder.statement("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", db="shop")
    for rows, flagged in (([(1, "kept")], False), ([(2, "flagged")], True), ([(3, "kept too")], False)):
        with binlog_builder.transaction(skip_replication=flagged) as t:
            t.insert("shop", "t", COLUMNS, rows)
    server = binlogd_factory.serve(binlog_builder)

    mariadb_replica.change_master_to(server, use_gtid="slave_pos", skip_mode=skip_mode)
    status = mariadb_replica.wait_caught_up(timeout=30)

    assert mariadb_replica.query("SELECT id FROM shop.t ORDER BY id") == [(1,), (3,)]
    assert status["Slave_IO_Running"] == status["Slave_SQL_Running"] == "Yes"
    (dump,) = server.connections()
    expected_holes = 4 if skip_mode == "FILTER_ON_MASTER" else 0  # GTID, TABLE_MAP, WRITE_ROWS, XID
    assert dump.count("hole", "skip_replication") == expected_holes
