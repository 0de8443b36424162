"""`binlogd show` on binlogd's own `--binlog-with-tables-info` binlog: the Tables_info events are printed as comments
(mariadb-binlog's Ignorable text plus the table list), and the table filters decide statements from them: replaying
the filtered text gives the tables a real MariaDB 10.11 replica of that binlogd, with the matching replicate-*
option, ends with."""

from __future__ import annotations

import pytest

from tests.test_show_filters import DBS, WORKLOAD, _reset
from tests.test_show_helpers import mariadb_binlog, replay, show

pytestmark = pytest.mark.mariadb


def test_tables_info_events_shown_and_used_by_the_filters(mariadb, binlogd) -> None:
    server = binlogd.standalone(["--binlog-with-tables-info"])
    server.execute(WORKLOAD)
    assert server.binlog_dir is not None
    files = sorted(server.binlog_dir.glob("mysql-bin.0*"))

    text = show(*files).stdout
    assert b"# Ignorable event type 159 (Tables_info)\n# Tables_info: `a`.`t3`, `a`.`t1`\n" in text  # CREATE LIKE
    assert b"# Tables_info: `a`.`t1`, `a`.`t2`\n" in text  # the RENAME chain, without its tmp
    assert b"Ignorable event type 159" in mariadb_binlog(*files).stdout  # mariadb-binlog skips them the same way

    replica, target = mariadb("replica", 2), mariadb("target", 3)
    for option, value in (("ignore-table", "a.t2"), ("wild-do-table", "a.%"), ("do-db", "a")):
        if replica.slave_status():
            replica.stop_slave()
            replica.query("RESET SLAVE ALL")
        _reset(replica)
        for v in ("do_db", "ignore_table", "wild_do_table"):
            replica.query(f"SET GLOBAL replicate_{v}=%s", value if v == option.replace("-", "_") else "")
        replica.change_master(server.host, server.port, log_file="mysql-bin.000001", log_pos=4)
        replica.start_slave()
        replica.wait_caught_up(server)
        _reset(target)
        replay(target, show(f"--{option}={value}", *files).stdout)
        assert target.table_checksums(DBS) == replica.table_checksums(DBS), option
        assert target.table_checksums(DBS), option
