"""What applier/native.py relies on in a real MariaDB 10.11 target, and the SQL path it falls back to.

* A BINLOG statement carrying a source's TABLE_MAP + rows events (after its FORMAT_DESCRIPTION event) applies
  them: the row lands, unsigned values included, and the target's binlog keeps the GTID the session set.
* Its errors are the ones the SQL path words: 1062 "Duplicate entry '1' for key 'PRIMARY'", 1032 "Can't find
  record in 't'".
* In a multi-statement query the BINLOG statement's OK packet lacks SERVER_MORE_RESULTS_EXISTS although the
  statements behind it run (why applier/pipeline.py reads one result per statement by count).
* `--row-apply=sql` and `--row-apply=binlog` leave identical tables, also with a rewrite-db rule (whose
  statements take the SQL path inside the native mode).
"""

from __future__ import annotations

import struct
import subprocess
from typing import Any

import pymysql
from binlogd.applier.native import binlog_sql, native_fde
from pymysql.constants import CLIENT

from tests.harness import MariaDB
from tests.test_applier import wait_applied

SERVER_MORE_RESULTS_EXISTS = 8


def _events(server: MariaDB, name: str) -> list[bytes]:
    data = (server.datadir / name).read_bytes()
    out, pos = [], 4
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append(data[pos:pos + size])
        pos += size
    return out


def test_binlog_statements_as_the_native_path_uses_them(mariadb: Any) -> None:
    primary = mariadb.primary()
    target = mariadb("target", 3, "--log-bin=mysql-bin")
    ddl = "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, a INT UNSIGNED, b VARCHAR(20)) ENGINE=InnoDB"
    primary.execute(ddl)
    target.execute(ddl)
    primary.execute("INSERT INTO d.t VALUES (1, 4000000001, 'r1')")
    primary.execute("UPDATE d.t SET b = 'u' WHERE id = 1")
    primary.execute("FLUSH BINARY LOGS")
    events = _events(primary, "mysql-bin.000001")
    fde = native_fde(events[0])
    assert fde is not None  # a MariaDB source's FDE
    write, update = ([events[i - 1], events[i]] for i, e in enumerate(events) if e[4] in (23, 24))
    conn = pymysql.connect(host=target.host, port=target.port, user="root", autocommit=True,
                           client_flag=CLIENT.MULTI_STATEMENTS)
    try:
        conn.query(binlog_sql([fde]))
        conn.query(b"SET @@session.gtid_domain_id=7, @@session.server_id=1; SET @@session.gtid_seq_no=42; BEGIN; "
                   + binlog_sql(write) + b"; SELECT 1; INSERT INTO d.t VALUES (2, 2, 'behind'); COMMIT")
        statuses = [conn.server_status]
        for _ in range(5):  # SET, SET, BEGIN, BINLOG, SELECT, INSERT, COMMIT: six more results
            conn.next_result()
            statuses.append(conn.server_status)
        assert statuses[0] & SERVER_MORE_RESULTS_EXISTS and statuses[2] & SERVER_MORE_RESULTS_EXISTS
        assert not statuses[3] & SERVER_MORE_RESULTS_EXISTS  # the BINLOG statement's OK
        conn.next_result()  # the COMMIT's result is still there: the statements behind BINLOG ran
        assert target.query("SELECT id, a, b FROM d.t ORDER BY id") == [(1, 4000000001, "r1"), (2, 2, "behind")]
        assert "7-1-42" in str(target.query("SELECT @@gtid_binlog_pos")[0][0])
        try:
            conn.query(binlog_sql(write))
            raise AssertionError("a duplicate row was written")
        except pymysql.MySQLError as e:
            assert e.args == (1062, "Duplicate entry '1' for key 'PRIMARY'")
        target.execute("DELETE FROM d.t")
        try:
            conn.query(binlog_sql(update))
            raise AssertionError("an update found a deleted row")
        except pymysql.MySQLError as e:
            assert e.args == (1032, "Can't find record in 't'")
    finally:
        conn.close()


def test_sql_and_binlog_row_apply_give_the_same_tables(mariadb: Any, applier: Any) -> None:
    primary = mariadb.primary()
    primary.execute("CREATE DATABASE d1; CREATE DATABASE d2;"
                    " CREATE TABLE d1.t (id INT PRIMARY KEY, u BIGINT UNSIGNED, f DOUBLE, s VARCHAR(30), j JSON,"
                    " dt DATETIME(6), dec1 DECIMAL(20,6), b BLOB, g INT AS (id * 2) VIRTUAL) ENGINE=InnoDB;"
                    " USE d2; CREATE TABLE t LIKE d1.t")  # USE d2: rewritten to d3 by the rule below
    for db in ("d1", "d2"):
        primary.execute(f"INSERT INTO {db}.t (id, u, f, s, j, dt, dec1, b) SELECT seq, 18446744073709551615 - seq,"
                        f" seq / 3, CONCAT('ü', seq), JSON_OBJECT('k', seq), '2024-02-29 23:59:59.123456',"
                        f" seq / 7, UNHEX('00FF27') FROM test.seq_1_to_300")
        primary.execute(f"UPDATE {db}.t SET s = NULL, b = 'x\\'y' WHERE id % 3 = 0")
        primary.execute(f"DELETE FROM {db}.t WHERE id % 5 = 0")
    want = primary.master_status()
    channel = f"--channel==mysql://root@127.0.0.1:{primary.port}"
    sums = []
    for n, mode in enumerate(("sql", "binlog")):
        target = mariadb(f"target{n}", 3 + n)
        target.execute("CREATE DATABASE d3")
        proc = applier(target, channel, f"--row-apply={mode}", "--replicate-rewrite-db=d2->d3")
        wait_applied(target, proc, want)
        sums.append(target.table_checksums(["d1", "d3"]))
        assert "Traceback" not in proc.log()
    assert sums[0] == sums[1] and all(v is not None for v in sums[0].values()), sums
    assert sorted(sums[0]) == ["d1.t", "d3.t"]


def _binlog_text(server: MariaDB) -> str:
    files = [str(server.datadir / name) for name, _ in server.binary_logs()]
    out = subprocess.run(["mariadb-binlog", "--no-defaults", "-v", "--base64-output=decode-rows", *files],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_one_statement_groups_carry_their_position_in_one_binlog_statement(mariadb: Any, applier: Any) -> None:
    """A transaction that is one row statement goes as ONE autocommit BINLOG statement that also updates the
    position row (applier/position_events.py): in the target's binlog each source GTID's transaction holds the
    rows and the position row's UPDATE; tables equal the source's. The first group (no position row yet) and a
    group whose position row was deleted behind the applier's back take the SQL path, which inserts the row."""
    primary = mariadb.primary()
    target = mariadb("target", 3, "--log-bin=mysql-bin")
    primary.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20), w BIGINT UNSIGNED)")
    for i in range(1, 41):
        primary.query(f"INSERT INTO d.t VALUES ({i}, 'v{i}', {18446744073709551615 - i})")
    primary.query("UPDATE d.t SET v = 'u' WHERE id <= 10")
    primary.query("DELETE FROM d.t WHERE id > 35")
    proc = applier(target, f"--channel==mysql://root@127.0.0.1:{primary.port}")
    wait_applied(target, proc, primary.master_status())
    assert target.table_checksums(["d"]) == primary.table_checksums(["d"])
    trxs = _binlog_text(target).split("\tGTID ")
    source = [t for t in trxs if t.startswith("0-1-")]
    fused = [t for t in source if "### UPDATE `binlogd_apply`.`channel_position`" in t]
    rows = [t for t in source if "`d`.`t`" in t and "### " in t]
    assert len(rows) == 42 and len(fused) >= 41, (len(rows), len(fused))  # all but the first: fused
    assert all("`d`.`t`" in t and "START TRANSACTION" in t and "COMMIT" in t for t in fused)
    gtid_pos = str(target.query("SELECT gtid_pos FROM binlogd_apply.channel_position")[0][0])
    assert gtid_pos == primary.query("SELECT @@gtid_binlog_pos")[0][0]

    target.query("DELETE FROM binlogd_apply.channel_position")  # the UPDATE finds no row: 1032, SQL path
    for i in range(41, 51):
        primary.query(f"INSERT INTO d.t VALUES ({i}, 'again', {i})")
    wait_applied(target, proc, primary.master_status())
    assert target.table_checksums(["d"]) == primary.table_checksums(["d"])
    assert " ERROR " not in proc.log() and "Traceback" not in proc.log()
