"""The SQL surface (server/sql_surface.py, server/sysvars.py): every statement replicas and tools send.

Expected values, column names, error numbers and texts come from a real MariaDB 10.11.19 (statements run
against a private mariadbd, `perror NNNN`); `test_matches_real_mariadb` re-checks a large part of them
against a live server when the MariaDB binaries are installed.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from binlogd.server import sysvars
from binlogd.server.sql_surface import Ok, ResultSet, SessionState, SqlError, change_database, execute, like_match
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VERSION = "10.11.19-MariaDB-binlogd-log"
SYNTAX = ("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server "
          "version for the right syntax to use near '{}' at line {}")


@dataclass
class FakeServer:
    """In-memory ServerView: what a binlogd primary would report."""

    server_id: int = 1
    version: str = VERSION
    checksum: str = "CRC32"
    gtid_pos: str = "0-1-5"
    domain: int = 0
    logs: list[tuple[str, int]] = field(default_factory=lambda: [("mysql-bin.000001", 1168),
                                                                  ("mysql-bin.000002", 328)])
    hosts: list[tuple[int, str, int, int]] = field(default_factory=lambda: [(2, "10.0.0.2", 33062, 1)])
    hostname: str = "binlogd-test"
    clock: float = 1700000000.25
    event_calls: list[tuple[Any, ...]] = field(default_factory=list)

    def binlog_checksum(self) -> str:
        return self.checksum

    def gtid_binlog_pos(self) -> str:
        return self.gtid_pos

    def gtid_domain_id(self) -> int:
        return self.domain

    def binary_logs(self) -> list[tuple[str, int]]:
        return list(self.logs)

    def master_status(self) -> tuple[str, int] | None:
        return self.logs[-1] if self.logs else None

    def slave_hosts(self) -> list[tuple[int, str, int, int]]:
        return list(self.hosts)

    def processlist(self, viewer_id: int) -> list[tuple[object, ...]]:
        return []

    def binlog_events(self, file: str | None, pos: int | None, offset: int,
                      limit: int | None) -> list[tuple[str, int, str, int, int, str]]:
        self.event_calls.append((file, pos, offset, limit))
        if file == "nosuch":
            raise SqlError(1220, "Error when executing command SHOW BINLOG EVENTS: Could not find target log")
        rows = [("mysql-bin.000001", 4, "Format_desc", 1, 256, f"Server ver: {VERSION}, Binlog ver: 4"),
                ("mysql-bin.000001", 256, "Gtid_list", 1, 285, "[]"),
                ("mysql-bin.000001", 285, "Binlog_checkpoint", 1, 328, "mysql-bin.000001")]
        return rows[offset:] if limit is None else rows[offset : offset + limit]

    def binlog_gtid_pos(self, file: str, pos: int) -> str | None:
        return "0-1-5" if file == "mysql-bin.000001" and pos == 1168 else ("" if file == "mysql-bin.000001" else None)

    def now(self) -> float:
        return self.clock


def run(*statements: str, server: FakeServer | None = None, session: SessionState | None = None) -> Any:
    """Run statements on one session; return the last result (earlier ones must succeed)."""
    server = server or FakeServer()
    session = session if session is not None else SessionState()
    result: Any = None
    for sql in statements:
        result = execute(sql, session, server)
    return result


def error_of(*statements: str, server: FakeServer | None = None) -> tuple[int, str]:
    server = server or FakeServer()
    session = SessionState()
    for sql in statements[:-1]:
        execute(sql, session, server)
    with pytest.raises(SqlError) as ei:
        execute(statements[-1], session, server)
    assert len(ei.value.sqlstate) == 5
    return ei.value.code, ei.value.message


# ------------------------------------------------------------------------------------------------ clients


def test_replica_10_11_gtid_connect_sequence() -> None:
    """The exact statements of a 10.11 replica (observed general log, MASTER_USE_GTID=slave_pos)."""
    server = FakeServer()
    s = SessionState()
    r = execute("SELECT UNIX_TIMESTAMP()", s, server)
    assert r == ResultSet(["UNIX_TIMESTAMP()"], [(1700000000,)])
    r = execute("SHOW VARIABLES LIKE 'SERVER_ID'", s, server)
    assert r == ResultSet(["Variable_name", "Value"], [("server_id", "1")])
    assert execute("SET @master_heartbeat_period= 30000001024", s, server) == Ok()
    assert execute("SET @master_binlog_checksum= @@global.binlog_checksum", s, server) == Ok()
    r = execute("SELECT @master_binlog_checksum", s, server)
    assert r == ResultSet(["@master_binlog_checksum"], [("CRC32",)])
    assert execute("SET @mariadb_slave_capability=4", s, server) == Ok()
    r = execute("SELECT @@GLOBAL.gtid_domain_id", s, server)
    assert r == ResultSet(["@@GLOBAL.gtid_domain_id"], [(0,)])
    for sql in ("SET @slave_connect_state=''", "SET @slave_gtid_strict_mode=0", "SET @slave_gtid_ignore_duplicates=0"):
        assert execute(sql, s, server) == Ok()
    assert s.user_vars == {"master_heartbeat_period": 30000001024, "master_binlog_checksum": "CRC32",
                           "mariadb_slave_capability": 4, "slave_connect_state": "",
                           "slave_gtid_strict_mode": 0, "slave_gtid_ignore_duplicates": 0}
    assert s.skip_replication is False


def test_replica_file_pos_filter_on_master_semisync() -> None:
    server = FakeServer(checksum="NONE")
    s = SessionState()
    for sql in ("SELECT UNIX_TIMESTAMP()", "SHOW VARIABLES LIKE 'SERVER_ID'",
                "SET @master_heartbeat_period= 5000000000", "SET @master_binlog_checksum= @@global.binlog_checksum"):
        execute(sql, s, server)
    assert execute("SELECT @master_binlog_checksum", s, server).rows == [("NONE",)]
    assert execute("SET skip_replication=1", s, server) == Ok()
    assert s.skip_replication is True
    execute("SET @mariadb_slave_capability=4", s, server)
    r = execute("SELECT binlog_gtid_pos('mysql-bin.000001',1168)", s, server)
    assert r == ResultSet(["binlog_gtid_pos('mysql-bin.000001',1168)"], [("0-1-5",)])
    assert execute("SELECT binlog_gtid_pos('',4)", s, server).rows == [(None,)]
    r = execute("SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled'", s, server)
    # binlogd speaks semi-sync: the replica finds the variable and asks (SET @rpl_semi_sync_slave= 1)
    assert r == ResultSet(["Variable_name", "Value"], [("rpl_semi_sync_master_enabled", "OFF")])
    assert execute("SET @rpl_semi_sync_slave= 1", s, server) == Ok()
    assert s.user_vars["master_heartbeat_period"] == 5000000000
    assert s.user_vars["rpl_semi_sync_slave"] == 1


def test_mariadb_binlog_sequence() -> None:
    s = SessionState()
    server = FakeServer()
    assert execute("SELECT VERSION()", s, server) == ResultSet(["VERSION()"], [(VERSION,)])
    execute("SET @master_binlog_checksum='NONE'", s, server)
    execute("SET @mariadb_slave_capability=4", s, server)
    execute("SET @slave_connect_state='0-1-5'", s, server)
    assert s.user_vars == {"master_binlog_checksum": "NONE", "mariadb_slave_capability": 4,
                           "slave_connect_state": "0-1-5"}


def test_python_mysql_replication_1_0_17_sequence() -> None:
    """binlogstream.py: stream connection, then the ctl connection (pymysql sends SET NAMES / AUTOCOMMIT)."""
    server = FakeServer()
    s = SessionState()
    execute("SET NAMES utf8mb4", s, server)
    execute("SET AUTOCOMMIT = 0", s, server)
    assert s.autocommit is False
    r = execute("SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'", s, server)
    assert r == ResultSet(["Variable_name", "Value"], [("binlog_checksum", "CRC32")])
    execute("SET @master_binlog_checksum= @@global.binlog_checksum", s, server)
    execute("SET @slave_uuid = 'a1b2', @replica_uuid = 'a1b2'", s, server)
    execute("SET @master_heartbeat_period = 30000000000", s, server)
    execute("SET @mariadb_slave_capability=4", s, server)
    execute("SET @slave_connect_state = '0-1-5'", s, server)
    execute("SET @slave_gtid_strict_mode=1", s, server)
    execute("SET @slave_gtid_ignore_duplicates=0", s, server)
    assert s.user_vars["slave_uuid"] == s.user_vars["replica_uuid"] == "a1b2"
    assert s.user_vars["slave_gtid_strict_mode"] == 1
    # non-MariaDB mode asks MySQL 8.2's name first and falls back on ER_PARSE_ERROR
    assert error_of("SHOW BINARY LOG STATUS") == (1064, SYNTAX.format("LOG STATUS", 1))
    assert run("SHOW MASTER STATUS") == ResultSet(["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"],
                                                  [("mysql-bin.000002", 328, "", "")])
    ctl = SessionState()
    change_database(ctl, "information_schema")  # the ctl connection connects with db=information_schema
    execute("SET NAMES utf8mb4", ctl, server)
    execute("SET AUTOCOMMIT = 1", ctl, server)
    r = execute("SHOW VARIABLES LIKE 'BINLOG_ROW_METADATA';", ctl, server)
    assert r == ResultSet(["Variable_name", "Value"], [("binlog_row_metadata", "NO_LOG")])
    code, _ = error_of("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'd' AND "
                       "TABLE_NAME = 't' ORDER BY ORDINAL_POSITION")
    assert code == 1235  # its caller catches the error and goes on without column names


def test_mariadb_cli_probe() -> None:
    r = run("select @@version_comment limit 1")
    assert r == ResultSet(["@@version_comment"], [("binlogd",)])


# ------------------------------------------------------------------------------------------------ table

OK = Ok()

# (statement, expected): expected is ResultSet, Ok, or (code, message)
CASES: list[tuple[str, Any]] = [
    # literals, arithmetic, names (MariaDB names a column by the statement text, a literal by itself)
    ("SELECT 1", ResultSet(["1"], [(1,)])),
    ("SELECT 'literal'", ResultSet(["literal"], [("literal",)])),
    ("select 1 from dual", ResultSet(["1"], [(1,)])),
    ("SELECT 1+2*3, 7/2, -5, 10 DIV 3, 7 % 3",
     ResultSet(["1+2*3", "7/2", "-5", "10 DIV 3", "7 % 3"], [(7, "3.5000", -5, 3, 1)])),
    ("SELECT  1 + 1 ,   @@GLOBAL.server_id   ,concat( 'a' , 'b' )",
     ResultSet(["1 + 1", "@@GLOBAL.server_id", "concat( 'a' , 'b' )"], [(2, 1, "ab")])),
    ("SELECT \"x\", 'it''s', 'a\\nb', NULL, 1.50, -1.5e3, 0x41, X'42', TRUE, FALSE",
     ResultSet(["x", "it's", "a\nb", "NULL", "1.50", "-1.5e3", "0x41", "X'42'", "TRUE", "FALSE"],
               [("x", "it's", "a\nb", None, "1.50", -1500.0, b"A", b"B", 1, 0)])),
    ("SELECT 'a' 'b'", ResultSet(["ab"], [("ab",)])),
    ("SELECT _utf8mb4'x' 'y', N'z', _binary'q'", ResultSet(["xy", "z", "q"], [("xy", "z", b"q")])),
    ("SELECT (1), ('a'), (1+1), ((2)), -(5), +5, 'a' AS `x`",
     ResultSet(["1", "a", "(1+1)", "2", "-(5)", "5", "x"], [(1, "a", 2, 2, -5, 5, "a")])),
    ("SELECT 1 AS `one`, 2 two, 3 AS 'three', 4 AS \"four\", 5 `select`",
     ResultSet(["one", "two", "three", "four", "select"], [(1, 2, 3, 4, 5)])),
    ("SELECT 0.1 + 0.2, 1e0 + 1, 3 / 2, 1 / 3, 2.5 * 2, -10 % 3, 10.5 % 3",
     ResultSet(["0.1 + 0.2", "1e0 + 1", "3 / 2", "1 / 3", "2.5 * 2", "-10 % 3", "10.5 % 3"],
               [("0.3", 2.0, "1.5000", "0.3333", "5.0", -1, "1.5")])),
    ("SELECT 5.5 DIV 2, -7 DIV 2, 7 MOD -3, -7 MOD 3, 1.50 / 2, 2 * 1.25, MOD(7, 3)",
     ResultSet(["5.5 DIV 2", "-7 DIV 2", "7 MOD -3", "-7 MOD 3", "1.50 / 2", "2 * 1.25", "MOD(7, 3)"],
               [(2, -3, 1, -1, "0.750000", "2.50", 1)])),
    ("SELECT ~1, 1 << 64, 1 << 63, -1 | 0, 5 ^ 1, -1 >> 1, 6 & 3",
     ResultSet(["~1", "1 << 64", "1 << 63", "-1 | 0", "5 ^ 1", "-1 >> 1", "6 & 3"],
               [(18446744073709551614, 0, 9223372036854775808, 18446744073709551615, 4, 9223372036854775807, 2)])),
    ("SELECT 18446744073709551615, 18446744073709551616, 30000001024, 18446744073709551614 + 1",
     ResultSet(["18446744073709551615", "18446744073709551616", "30000001024", "18446744073709551614 + 1"],
               [(18446744073709551615, "18446744073709551616", 30000001024, 18446744073709551615)])),
    ("SELECT 1 + + 1, - - 1, 1 - -1, 1--1", ResultSet(["1 + + 1", "- - 1", "1 - -1", "1--1"], [(2, 1, 2, 2)])),
    ("SELECT 1/0, 1 DIV 0, 1 % 0", ResultSet(["1/0", "1 DIV 0", "1 % 0"], [(None, None, None)])),
    ("SELECT 9223372036854775807+1", (1690, "BIGINT value is out of range in '9223372036854775807 + 1'")),
    ("SELECT 9223372036854775807 * 2", (1690, "BIGINT value is out of range in '9223372036854775807 * 2'")),
    ("SELECT 0 - 18446744073709551615",
     (1690, "BIGINT UNSIGNED value is out of range in '0 - 18446744073709551615'")),
    ("SELECT 1e309", (1367, "Illegal double '1e309' value found during parsing")),
    ("SELECT CONCAT(1.0e0), CONCAT(1e20), CONCAT(0.1e0+0.2e0), CONCAT(1e15), CONCAT(1.5e-3), CONCAT(1e-7)",
     ResultSet(["CONCAT(1.0e0)", "CONCAT(1e20)", "CONCAT(0.1e0+0.2e0)", "CONCAT(1e15)", "CONCAT(1.5e-3)",
                "CONCAT(1e-7)"], [("1", "1e20", "0.30000000000000004", "1e15", "0.0015", "0.0000001")])),
    # comparisons and logic
    ("SELECT 1 = 1, 1 <> 2, 'a' = 'A', NULL = NULL, NULL <=> NULL, 1 IS NULL, NULL IS NOT NULL, "
     "'abc' LIKE 'A%', 2 IN (1,2), NOT 1, 1 AND 0, 1 OR 0, 1 XOR 1",
     ResultSet(["1 = 1", "1 <> 2", "'a' = 'A'", "NULL = NULL", "NULL <=> NULL", "1 IS NULL", "NULL IS NOT NULL",
                "'abc' LIKE 'A%'", "2 IN (1,2)", "NOT 1", "1 AND 0", "1 OR 0", "1 XOR 1"],
               [(1, 1, 1, None, 1, 0, 0, 1, 1, 0, 0, 1, 0)])),
    ("SELECT 2 = '2', '1e1' = 10, 'a' < 'B', NULL IN (1), 1 IN (NULL, 1), 2 IN (NULL, 1)",
     ResultSet(["2 = '2'", "'1e1' = 10", "'a' < 'B'", "NULL IN (1)", "1 IN (NULL, 1)", "2 IN (NULL, 1)"],
               [(1, 1, 1, None, 1, None)])),
    ("SELECT 'a' LIKE 'A', 'a_c' LIKE 'a\\_c', 'abc' LIKE 'a\\_c', 'a%' LIKE 'a|%' ESCAPE '|', 'x' NOT LIKE 'y'",
     ResultSet(["'a' LIKE 'A'", "'a_c' LIKE 'a\\_c'", "'abc' LIKE 'a\\_c'", "'a%' LIKE 'a|%' ESCAPE '|'",
                "'x' NOT LIKE 'y'"], [(1, 1, 0, 1, 1)])),
    ("SELECT 1 IS TRUE, 0 IS FALSE, NULL IS UNKNOWN, 2 BETWEEN 3 AND 1, 2 NOT BETWEEN 3 AND 1",
     ResultSet(["1 IS TRUE", "0 IS FALSE", "NULL IS UNKNOWN", "2 BETWEEN 3 AND 1", "2 NOT BETWEEN 3 AND 1"],
               [(1, 1, 1, 0, 1)])),
    ("SELECT CASE WHEN 1 THEN 'y' ELSE 'n' END, CASE 2 WHEN 1 THEN 'a' WHEN 2 THEN 'b' END, IF(0, 'a', 'b')",
     ResultSet(["CASE WHEN 1 THEN 'y' ELSE 'n' END", "CASE 2 WHEN 1 THEN 'a' WHEN 2 THEN 'b' END",
                "IF(0, 'a', 'b')"], [("y", "b", "b")])),
    ("SELECT 'x' COLLATE utf8mb4_bin", ResultSet(["'x' COLLATE utf8mb4_bin"], [("x",)])),
    # functions
    ("SELECT CONCAT('a', NULL), CONCAT('a', 1, 2.5), IFNULL(NULL, 'd'), COALESCE(NULL, NULL, 3), "
     "LOWER('AbC'), UPPER('aBc')",
     ResultSet(["CONCAT('a', NULL)", "CONCAT('a', 1, 2.5)", "IFNULL(NULL, 'd')", "COALESCE(NULL, NULL, 3)",
                "LOWER('AbC')", "UPPER('aBc')"], [(None, "a12.5", "d", 3, "abc", "ABC")])),
    ("SELECT LENGTH('é'), CHAR_LENGTH('é'), ABS(-3), NULLIF(1,1), CONCAT_WS(',', 'a', NULL, 'b')",
     ResultSet(["LENGTH('é')", "CHAR_LENGTH('é')", "ABS(-3)", "NULLIF(1,1)", "CONCAT_WS(',', 'a', NULL, 'b')"],
               [(2, 1, 3, None, "a,b")])),
    ("SELECT UNIX_TIMESTAMP(), UNIX_TIMESTAMP ()", ResultSet(["UNIX_TIMESTAMP()", "UNIX_TIMESTAMP ()"],
                                                              [(1700000000, 1700000000)])),
    ("SET time_zone='+00:00'", OK),
    ("SELECT version ( ), VERSION(), DATABASE(), SCHEMA(), CONNECTION_ID(), LAST_INSERT_ID()",
     ResultSet(["version ( )", "VERSION()", "DATABASE()", "SCHEMA()", "CONNECTION_ID()", "LAST_INSERT_ID()"],
               [(VERSION, VERSION, None, None, 0, 0)])),
    ("SELECT VERSION(1)", (1582, "Incorrect parameter count in the call to native function 'VERSION'")),
    ("select concat()", (1582, "Incorrect parameter count in the call to native function 'concat'")),
    ("SELECT IFNULL(1)", (1582, "Incorrect parameter count in the call to native function 'IFNULL'")),
    ("SELECT NOW(7)", (1426, "Too big precision specified for 'current_timestamp'. Maximum is 6")),
    ("SELECT foo()", (1305, "FUNCTION foo does not exist")),
    ("SELECT nosuch.foo()", (1305, "FUNCTION nosuch.foo does not exist")),
    ("SELECT SUBSTRING('abc', 1, 2)", (1235, "This version of binlogd doesn't yet support 'SUBSTRING()'")),
    ("SELECT SLEEP(1)", (1235, "This version of binlogd doesn't yet support 'SLEEP()'")),
    # variables
    ("SELECT @a, @b", ResultSet(["@a", "@b"], [(None, None)])),
    ("SELECT @`a b`, @'q', @\"r\", @x.y", ResultSet(["@`a b`", "@'q'", '@"r"', "@x.y"], [(None, None, None, None)])),
    ("SELECT @@version AS v", ResultSet(["v"], [(VERSION,)])),
    ("SELECT @@global.version, @@GLOBAL.VERSION, @@Version, @@`version`, @@global. version",
     ResultSet(["@@global.version", "@@GLOBAL.VERSION", "@@Version", "@@`version`", "@@global. version"],
               [(VERSION,) * 5])),
    ("SELECT @@version, @@server_id, @@gtid_binlog_pos, @@gtid_current_pos, @@gtid_slave_pos",
     ResultSet(["@@version", "@@server_id", "@@gtid_binlog_pos", "@@gtid_current_pos", "@@gtid_slave_pos"],
               [(VERSION, 1, "0-1-5", "0-1-5", "")])),
    ("SELECT @@global.binlog_checksum, @@hostname, @@max_allowed_packet, @@log_bin, @@binlog_format, "
     "@@gtid_domain_id, @@gtid_strict_mode, @@read_only",
     ResultSet(["@@global.binlog_checksum", "@@hostname", "@@max_allowed_packet", "@@log_bin", "@@binlog_format",
                "@@gtid_domain_id", "@@gtid_strict_mode", "@@read_only"],
               [("CRC32", "binlogd-test", 16777216, 1, "ROW", 0, 0, 0)])),
    ("SELECT @@skip_replication, @@session.skip_replication, @@local.skip_replication, @@autocommit, "
     "@@sql_log_bin, @@in_transaction",
     ResultSet(["@@skip_replication", "@@session.skip_replication", "@@local.skip_replication", "@@autocommit",
                "@@sql_log_bin", "@@in_transaction"], [(0, 0, 0, 1, 1, 0)])),
    ("SELECT @@sql_mode, @@time_zone, @@tx_isolation, @@character_set_client, @@collation_connection",
     ResultSet(["@@sql_mode", "@@time_zone", "@@tx_isolation", "@@character_set_client", "@@collation_connection"],
               [(sysvars.DEFAULT_SQL_MODE, "SYSTEM", "REPEATABLE-READ", "utf8mb4", "utf8mb4_general_ci")])),
    ("SELECT @@global.skip_replication", (1238, "Variable 'skip_replication' is a SESSION variable")),
    ("SELECT @@session.version", (1238, "Variable 'version' is a GLOBAL variable")),
    ("SELECT @@session.binlog_checksum", (1238, "Variable 'binlog_checksum' is a GLOBAL variable")),
    ("SELECT @@session.gtid_binlog_pos", (1238, "Variable 'gtid_binlog_pos' is a GLOBAL variable")),
    ("SELECT @@nosuch", (1193, "Unknown system variable 'nosuch'")),
    ("SELECT @@global.nosuch", (1193, "Unknown system variable 'nosuch'")),
    ("SET GLOBAL rpl_semi_sync_master_enabled=1", (1238, "Variable 'rpl_semi_sync_master_enabled' is a read only "
                                                        "variable")),
    ("SELECT @@transaction_isolation", (1193, "Unknown system variable 'transaction_isolation'")),
    ("SELECT @@foo.version",
     (1272, "Variable 'version' is not a variable component (can't be used as XXXX.variable_name)")),
    ("SELECT @a := 5", ResultSet(["@a := 5"], [(5,)])),
    ("SELECT (SELECT 1), (SELECT @@version)", ResultSet(["(SELECT 1)", "(SELECT @@version)"], [(1, VERSION)])),
    ("SELECT (1,2)", (1241, "Operand should contain 1 column(s)")),
    # SELECT clauses
    ("SELECT 1 LIMIT 0", ResultSet(["1"], [])),
    ("SELECT 1 WHERE 1=0", ResultSet(["1"], [])),
    ("SELECT 1 FROM DUAL WHERE @@skip_replication = 0", ResultSet(["1"], [(1,)])),
    ("SELECT @@version_comment LIMIT 1, 1", ResultSet(["@@version_comment"], [])),
    ("SELECT 1 LIMIT 1 OFFSET 0", ResultSet(["1"], [(1,)])),
    ("SELECT 1 LIMIT 2 OFFSET 1", ResultSet(["1"], [])),
    ("SELECT 1 ORDER BY 1", ResultSet(["1"], [(1,)])),
    ("SELECT 1 ORDER BY x", (1054, "Unknown column 'x' in 'ORDER BY'")),
    ("SELECT 1 INTO @zz", Ok(1)),
    ("SELECT 1, 2 INTO @a", (1222, "The used SELECT statements have a different number of columns")),
    ("SELECT a", (1054, "Unknown column 'a' in 'SELECT'")),
    ("SELECT USER", (1054, "Unknown column 'USER' in 'SELECT'")),
    ("SELECT 1 WHERE nosuch = 1", (1054, "Unknown column 'nosuch' in 'WHERE'")),
    ("SELECT `a`.`b`", (1109, "Unknown table 'a' in SELECT")),
    ("SELECT a.b.c", (1109, "Unknown table 'a.b' in SELECT")),
    ("SELECT *", (1096, "No tables used")),
    ("SELECT * FROM t", (1046, "No database selected")),
    ("SELECT * FROM db.t", (1146, "Table 'db.t' doesn't exist")),
    ("SELECT * FROM information_schema.nosuch", (1109, "Unknown table 'nosuch' in information_schema")),
    ("SELECT 1 GROUP BY 1", (1235, "This version of binlogd doesn't yet support 'SELECT ... GROUP'")),
    ("SELECT 1 UNION SELECT 2", (1235, "This version of binlogd doesn't yet support 'SELECT ... UNION'")),
    # syntax errors: MariaDB's text, near the failing token, 80 characters at most
    ("SELEC 1", (1064, SYNTAX.format("SELEC 1", 1))),
    ("SELECT", (1064, SYNTAX.format("", 1))),
    ("SELECT 1 FROM", (1064, SYNTAX.format("", 1))),
    ("SELECT 1,", (1064, SYNTAX.format("", 1))),
    ("SELECT (1", (1064, SYNTAX.format("", 1))),
    ("SELECT 1)", (1064, SYNTAX.format(")", 1))),
    ("SELECT 'abc", (1064, SYNTAX.format("'abc", 1))),
    ("SELECT 1 garbage garbage", (1064, SYNTAX.format("garbage", 1))),
    ("SELECT 1 'x' 'y' AS z", (1064, SYNTAX.format("'y' AS z", 1))),
    ("SELECT 1 AS 2", (1064, SYNTAX.format("2", 1))),
    ("SELECT 1 AS select", (1064, SYNTAX.format("select", 1))),
    ("SELECT 1 + NOT 2", (1064, SYNTAX.format("NOT 2", 1))),
    ("SELECT @", (1064, SYNTAX.format("", 1))),
    ("SELECT @ a", (1064, SYNTAX.format("a", 1))),
    ("SELECT @@", (1064, SYNTAX.format("", 1))),
    ("SELECT @@global", (1064, SYNTAX.format("", 1))),
    ("SELECT @@ version", (1064, SYNTAX.format(" version", 1))),
    ("SELECT @@version LIMIT -1", (1064, SYNTAX.format("-1", 1))),
    ("SELECT @@version LIMIT 'a'", (1064, SYNTAX.format("'a'", 1))),
    ("SELECT 1 /* unterminated", (1064, SYNTAX.format("/* unterminated", 1))),
    ("SELECT 1 aaaaaaaaaa bbbbbbbbbbb ccccccccccccc dddddddddddd eeeeeeeeeeee fffffffffff gggggggggg "
     "hhhhhhhhh iiiiiiiii jjjjjjjj",
     (1064, SYNTAX.format("bbbbbbbbbbb ccccccccccccc dddddddddddd eeeeeeeeeeee fffffffffff gggggggggg hh...", 1))),
    ("SELECT 1\n, 2 +\n", (1064, SYNTAX.format("", 2))),
    ("\n\nSELEC 1", (1064, SYNTAX.format("SELEC 1", 1))),  # MariaDB trims the query first
    ("SELECT 1 +\n\n;\n", (1064, SYNTAX.format("", 1))),
    # one statement per query: no CLIENT_MULTI_STATEMENTS
    ("SELECT 1; SELECT 2", (1064, SYNTAX.format("SELECT 2", 1))),
    ("SELECT 1;\nSELECT 2", (1064, SYNTAX.format("SELECT 2", 2))),
    ("SET @a=1; SET @b=2", (1064, SYNTAX.format("SET @b=2", 1))),
    ("SELECT 1;", ResultSet(["1"], [(1,)])),
    ("SELECT 1 ;  ", ResultSet(["1"], [(1,)])),
    ("SELECT 1;;", ResultSet(["1"], [(1,)])),
    ("SELECT 1; -- c", ResultSet(["1"], [(1,)])),
    ("", (1065, "Query was empty")),
    ("   \n", (1065, "Query was empty")),
    (";", (1065, "Query was empty")),
    ("/* only a comment */", OK),
    # comments and executable comments
    ("SELECT 1 -- comment", ResultSet(["1"], [(1,)])),
    ("SELECT 1 # comment", ResultSet(["1"], [(1,)])),
    ("SELECT /* c */ 1", ResultSet(["1"], [(1,)])),
    ("SELECT /*!40101 2 */", ResultSet(["2"], [(2,)])),
    ("SELECT 1 /*!99999 + 1 */", ResultSet(["1"], [(1,)])),
    ("SELECT 1 /*!50700 + 1 */", ResultSet(["1"], [(1,)])),
    ("SELECT 1 /*M!100100 + 1 */", ResultSet(["1  + 1"], [(2,)])),
    ("SELECT 1 /*!40101 + 1 */ + 1", ResultSet(["1  + 1  + 1"], [(3,)])),
    ("SELECT /*!40101 1 + */ 1", ResultSet(["1 +  1"], [(2,)])),
    ("SELECT 1 /*!99999 + 5 */ + 1", ResultSet(["1  + 1"], [(2,)])),
    ("SELECT 1 /* c */ + 1", ResultSet(["1 /* c */ + 1"], [(2,)])),
    ("SELECT 1 -- c\n + 1", ResultSet(["1 -- c\n + 1"], [(2,)])),
    ("/*!1 SET @x=10 */", (1064, SYNTAX.format("1 SET @x=10 */", 1))),
    # SHOW
    ("SHOW VARIABLES LIKE 'SERVER_ID'", ResultSet(["Variable_name", "Value"], [("server_id", "1")])),
    ("SHOW VARIABLES LIKE 'server\\_id'", ResultSet(["Variable_name", "Value"], [("server_id", "1")])),
    ("SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'",
     ResultSet(["Variable_name", "Value"], [("binlog_checksum", "CRC32")])),
    ("SHOW VARIABLES LIKE 'gtid%'",
     ResultSet(["Variable_name", "Value"], [("gtid_binlog_pos", "0-1-5"), ("gtid_current_pos", "0-1-5"),
                                            ("gtid_domain_id", "0"), ("gtid_ignore_duplicates", "OFF"),
                                            ("gtid_seq_no", "0"), ("gtid_slave_pos", ""),
                                            ("gtid_strict_mode", "OFF")])),
    ("SHOW SESSION VARIABLES LIKE 'skip_replication'",
     ResultSet(["Variable_name", "Value"], [("skip_replication", "OFF")])),
    ("SHOW LOCAL VARIABLES LIKE 'skip_rep%'", ResultSet(["Variable_name", "Value"], [("skip_replication", "OFF")])),
    ("SHOW GLOBAL VARIABLES LIKE 'skip_replication'", ResultSet(["Variable_name", "Value"], [])),
    ("SHOW VARIABLES LIKE 'log_bin'", ResultSet(["Variable_name", "Value"], [("log_bin", "ON")])),
    ("SHOW VARIABLES LIKE 'version%'",
     ResultSet(["Variable_name", "Value"], [("version", VERSION), ("version_comment", "binlogd"),
                                            ("version_compile_machine", sysvars.SYSVARS["version_compile_machine"]
                                             .default), ("version_compile_os",
                                                         sysvars.SYSVARS["version_compile_os"].default)])),
    ("SHOW VARIABLES LIKE 'rpl_semi_sync%'", ResultSet(["Variable_name", "Value"], [  # MariaDB 10.11's defaults
        ("rpl_semi_sync_master_enabled", "OFF"), ("rpl_semi_sync_master_timeout", "10000"),
        ("rpl_semi_sync_master_trace_level", "32"), ("rpl_semi_sync_master_wait_no_slave", "ON"),
        ("rpl_semi_sync_master_wait_point", "AFTER_COMMIT"), ("rpl_semi_sync_slave_delay_master", "OFF"),
        ("rpl_semi_sync_slave_enabled", "OFF"), ("rpl_semi_sync_slave_kill_conn_timeout", "5"),
        ("rpl_semi_sync_slave_trace_level", "32")])),
    ("SHOW VARIABLES WHERE Variable_name = 'server_id'",
     ResultSet(["Variable_name", "Value"], [("server_id", "1")])),
    ("SHOW VARIABLES WHERE variable_name='SERVER_ID'", ResultSet(["Variable_name", "Value"], [("server_id", "1")])),
    ("SHOW VARIABLES WHERE Variable_name LIKE 'binlog_check%'",
     ResultSet(["Variable_name", "Value"], [("binlog_checksum", "CRC32")])),
    ("SHOW VARIABLES WHERE Value = 'CRC32'", ResultSet(["Variable_name", "Value"], [("binlog_checksum", "CRC32")])),
    ("SHOW VARIABLES WHERE Variable_name IN ('server_id', 'log_bin')",
     ResultSet(["Variable_name", "Value"], [("log_bin", "ON"), ("server_id", "1")])),
    ("SHOW VARIABLES WHERE nosuch = 1", (1054, "Unknown column 'nosuch' in 'WHERE'")),
    ("SHOW VARIABLES LIKE", (1064, SYNTAX.format("", 1))),
    ("SHOW VARIABLES LIKE 1", (1064, SYNTAX.format("1", 1))),
    ("SHOW VARIABLES LIKE 'server_id' extra", (1064, SYNTAX.format("extra", 1))),
    ("SHOW VARIABLES LIKE 'a' ESCAPE '|'", (1064, SYNTAX.format("ESCAPE '|'", 1))),
    ("SHOW VARIABLES LIKE 'server_id' LIMIT 1", (1064, SYNTAX.format("LIMIT 1", 1))),
    ("SHOW GLOBAL STATUS LIKE 'Uptime'", ResultSet(["Variable_name", "Value"], [])),
    ("SHOW STATUS LIKE 'Slaves_connected'", ResultSet(["Variable_name", "Value"], [("Slaves_connected", "1")])),
    ("SHOW MASTER STATUS", ResultSet(["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"],
                                     [("mysql-bin.000002", 328, "", "")])),
    ("SHOW BINLOG STATUS", ResultSet(["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"],
                                     [("mysql-bin.000002", 328, "", "")])),
    ("SHOW BINARY LOGS", ResultSet(["Log_name", "File_size"], [("mysql-bin.000001", 1168),
                                                              ("mysql-bin.000002", 328)])),
    ("SHOW MASTER LOGS", ResultSet(["Log_name", "File_size"], [("mysql-bin.000001", 1168),
                                                              ("mysql-bin.000002", 328)])),
    ("SHOW BINLOG EVENTS LIMIT 1",
     ResultSet(["Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info"],
               [("mysql-bin.000001", 4, "Format_desc", 1, 256, f"Server ver: {VERSION}, Binlog ver: 4")])),
    ("SHOW BINLOG EVENTS IN 'nosuch'",
     (1220, "Error when executing command SHOW BINLOG EVENTS: Could not find target log")),
    ("SHOW SLAVE HOSTS", ResultSet(["Server_id", "Host", "Port", "Master_id"], [(2, "10.0.0.2", 33062, 1)])),
    ("SHOW REPLICA HOSTS", ResultSet(["Server_id", "Host", "Port", "Master_id"], [(2, "10.0.0.2", 33062, 1)])),
    ("SHOW WARNINGS", ResultSet(["Level", "Code", "Message"], [])),
    ("SHOW ERRORS LIMIT 1", ResultSet(["Level", "Code", "Message"], [])),
    ("SHOW COUNT(*) WARNINGS", ResultSet(["@@session.warning_count"], [(0,)])),
    ("SHOW COUNT(*) ERRORS", ResultSet(["@@session.error_count"], [(0,)])),
    ("SHOW DATABASES", ResultSet(["Database"], [("information_schema",)])),
    ("SHOW SCHEMAS LIKE 'inf%'", ResultSet(["Database (inf%)"], [("information_schema",)])),
    ("SHOW DATABASES WHERE `Database` LIKE 'x%'", ResultSet(["Database"], [])),
    ("SHOW TABLES", (1046, "No database selected")),
    ("SHOW NOSUCH", (1064, SYNTAX.format("NOSUCH", 1))),
    ("SHOW PROFILES", (1235, "This version of binlogd doesn't yet support 'SHOW PROFILES'")),
    ("SHOW ENGINES", (1235, "This version of binlogd doesn't yet support 'SHOW ENGINES'")),
    # SET
    ("SET @master_heartbeat_period= 30000001024", OK),
    ("SET @a = 1, @b = 'x'", OK),
    ("SET @a := 2", OK),
    ("SET @x", (1064, SYNTAX.format("", 1))),
    ("SET @ x = 1", (1064, SYNTAX.format("x = 1", 1))),
    ("SET @a = foo", (1054, "Unknown column 'foo' in 'SET'")),
    ("SET @a = foo()", (1305, "FUNCTION foo does not exist")),
    ("SET @a = 1 := 2", (1064, SYNTAX.format(":= 2", 1))),
    ("SET @a = (SELECT 1, 2)", (1241, "Operand should contain 1 column(s)")),
    ("SET", (1064, SYNTAX.format("", 1))),
    ("SET GLOBAL", (1064, SYNTAX.format("", 1))),
    ("SET GLOBAL @a=1", (1064, SYNTAX.format("@a=1", 1))),
    ("SET SESSION @a=1", (1064, SYNTAX.format("@a=1", 1))),
    ("SET @@session.@a=1", (1064, SYNTAX.format("@a=1", 1))),
    ("SET x = 1", (1193, "Unknown system variable 'x'")),
    ("SET @@x = 1", (1193, "Unknown system variable 'x'")),
    ("SET GLOBAL nosuch=1", (1193, "Unknown system variable 'nosuch'")),
    ("SET skip_replication=1", OK),
    ("SET @@session.skip_replication=1", OK),
    ("SET SESSION skip_replication=1", OK),
    ("SET LOCAL skip_replication=1", OK),
    ("SET @@local.skip_replication=1", OK),
    ("SET skip_replication=ON", OK),
    ("SET skip_replication=off", OK),
    ("SET skip_replication=TRUE", OK),
    ("SET skip_replication=DEFAULT", OK),
    ("SET GLOBAL skip_replication=1",
     (1228, "Variable 'skip_replication' is a SESSION variable and can't be used with SET GLOBAL")),
    ("SET @@global.skip_replication=1",
     (1228, "Variable 'skip_replication' is a SESSION variable and can't be used with SET GLOBAL")),
    ("SET LOCAL skip_replication=1, GLOBAL skip_replication=1",
     (1228, "Variable 'skip_replication' is a SESSION variable and can't be used with SET GLOBAL")),
    ("SET skip_replication='x'", (1231, "Variable 'skip_replication' can't be set to the value of 'x'")),
    ("SET skip_replication='true'", (1231, "Variable 'skip_replication' can't be set to the value of 'true'")),
    ("SET skip_replication='1'", (1231, "Variable 'skip_replication' can't be set to the value of '1'")),
    ("SET skip_replication=2", (1231, "Variable 'skip_replication' can't be set to the value of '2'")),
    ("SET skip_replication=-1", (1231, "Variable 'skip_replication' can't be set to the value of '-1'")),
    ("SET skip_replication=NULL", (1231, "Variable 'skip_replication' can't be set to the value of 'NULL'")),
    ("SET skip_replication=1.0", (1232, "Incorrect argument type to variable 'skip_replication'")),
    ("SET binlog_checksum='NONE'",
     (1229, "Variable 'binlog_checksum' is a GLOBAL variable and should be set with SET GLOBAL")),
    ("SET version='x'", (1238, "Variable 'version' is a read only variable")),
    ("SET GLOBAL version='x'", (1238, "Variable 'version' is a read only variable")),
    ("SET SESSION gtid_binlog_pos='x'", (1238, "Variable 'gtid_binlog_pos' is a read only variable")),
    ("SET GLOBAL sql_log_bin=0", (1238, "Variable 'sql_log_bin' is a SESSION variable")),
    ("SET @@global.sql_log_bin=0", (1238, "Variable 'sql_log_bin' is a SESSION variable")),
    ("SET max_allowed_packet=1024",
     (1621, "SESSION variable 'max_allowed_packet' is read-only. Use SET GLOBAL to assign the value")),
    ("SET @@global.gtid_slave_pos='0-1-1'",
     (1235, "This version of binlogd doesn't yet support 'SET GLOBAL gtid_slave_pos (binlogd is a binlog "
            "server, not a replica)'")),
    ("SET GLOBAL read_only=1",
     (1235, "This version of binlogd doesn't yet support 'SET GLOBAL read_only (binlogd's configuration is not "
            "changed through SQL)'")),
    ("SET autocommit=2", (1231, "Variable 'autocommit' can't be set to the value of '2'")),
    ("SET autocommit=NULL", (1231, "Variable 'autocommit' can't be set to the value of 'NULL'")),
    ("SET wait_timeout='abc'", (1232, "Incorrect argument type to variable 'wait_timeout'")),
    ("SET wait_timeout=1.5", (1232, "Incorrect argument type to variable 'wait_timeout'")),
    ("SET wait_timeout=NULL", (1232, "Incorrect argument type to variable 'wait_timeout'")),
    ("SET wait_timeout=ON", (1232, "Incorrect argument type to variable 'wait_timeout'")),
    ("SET sql_mode='NOSUCH'", (1231, "Variable 'sql_mode' can't be set to the value of 'NOSUCH'")),
    ("SET sql_mode = 'no_zero_date,ansi_quotes , pipes_as_concat'",
     (1231, "Variable 'sql_mode' can't be set to the value of 'ansi_quotes '")),
    ("SET sql_mode = 18446744073709551615",
     (1231, "Variable 'sql_mode' can't be set to the value of '18446744073709551615'")),
    ("SET sql_mode = NULL", (1231, "Variable 'sql_mode' can't be set to the value of 'NULL'")),
    ("SET tx_isolation='nope'", (1231, "Variable 'tx_isolation' can't be set to the value of 'nope'")),
    ("SET binlog_format=5", (1231, "Variable 'binlog_format' can't be set to the value of '5'")),
    ("SET time_zone = 'Europe/Nowhere'", (1298, "Unknown or incorrect time zone: 'Europe/Nowhere'")),
    ("SET time_zone = '+13:01'", (1298, "Unknown or incorrect time zone: '+13:01'")),
    ("SET time_zone = '-13:00'", (1298, "Unknown or incorrect time zone: '-13:00'")),
    ("SET time_zone = '+00:60'", (1298, "Unknown or incorrect time zone: '+00:60'")),
    ("SET time_zone = 5", (1232, "Incorrect argument type to variable 'time_zone'")),
    ("SET time_zone = NULL", (1231, "Variable 'time_zone' can't be set to the value of 'NULL'")),
    ("SET timestamp='x'", (1232, "Incorrect argument type to variable 'timestamp'")),
    ("SET NAMES utf8", OK),
    ("SET NAMES 'utf8mb4' COLLATE \"utf8mb4_bin\"", OK),
    ("SET NAMES `utf8`", OK),
    ("SET NAMES DEFAULT", OK),
    ("SET NAMES binary", OK),
    ("SET NAMES nosuch", (1115, "Unknown character set: 'nosuch'")),
    ("SET NAMES ucs2", (1231, "Variable 'character_set_client' can't be set to the value of 'ucs2'")),
    ("SET NAMES utf16 COLLATE utf16_bin",
     (1231, "Variable 'character_set_client' can't be set to the value of 'utf16'")),
    ("SET NAMES utf8 COLLATE latin1_swedish_ci",
     (1253, "COLLATION 'latin1_swedish_ci' is not valid for CHARACTER SET 'utf8mb3'")),
    ("SET NAMES latin1 COLLATE uca1400_ai_ci",
     (1253, "COLLATION 'uca1400_ai_ci' is not valid for CHARACTER SET 'latin1'")),
    ("SET NAMES utf8mb4 COLLATE nosuch", (1273, "Unknown collation: 'nosuch'")),
    ("SET NAMES", (1064, SYNTAX.format("", 1))),
    ("SET NAMES utf8 COLLATE", (1064, SYNTAX.format("", 1))),
    ("SET CHARACTER SET utf8", OK),
    ("SET CHARSET utf8", OK),
    ("SET CHARACTER SET DEFAULT", OK),
    ("SET CHARACTER SET nosuch", (1115, "Unknown character set: 'nosuch'")),
    ("SET CHARACTER SET", (1064, SYNTAX.format("", 1))),
    ("SET character_set_client = nosuch", (1115, "Unknown character set: 'nosuch'")),
    ("SET character_set_client = 5", (1115, "Unknown character set: '5'")),
    ("SET character_set_client=utf16",
     (1231, "Variable 'character_set_client' can't be set to the value of 'utf16'")),
    ("SET collation_connection = nosuch", (1273, "Unknown collation: 'nosuch'")),
    ("SET collation_connection=uca1400_ai_ci", (1273, "Unknown collation: 'uca1400_ai_ci'")),
    ("SET TRANSACTION ISOLATION LEVEL READ COMMITTED", OK),
    ("SET SESSION TRANSACTION READ ONLY", OK),
    ("SET TRANSACTION READ ONLY, @a=1", (1064, SYNTAX.format("@a=1", 1))),
    ("SET @a=1, TRANSACTION READ ONLY", (1064, SYNTAX.format("READ ONLY", 1))),
    ("SET PASSWORD = 'x'", (1235, "This version of binlogd doesn't yet support 'SET PASSWORD'")),
    # USE, transactions
    ("USE db", (1049, "Unknown database 'db'")),
    ("USE `information_schema`", OK),
    ("USE INFORMATION_SCHEMA", OK),
    ("USE 'information_schema'", (1064, SYNTAX.format("'information_schema'", 1))),
    ("BEGIN", OK),
    ("BEGIN WORK", OK),
    ("START TRANSACTION", OK),
    ("START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT", OK),
    ("COMMIT", OK),
    ("COMMIT WORK AND NO CHAIN NO RELEASE", OK),
    ("ROLLBACK", OK),
    ("ROLLBACK TO SAVEPOINT x", (1235, "This version of binlogd doesn't yet support 'ROLLBACK TO SAVEPOINT'")),
    ("DO 1, @a := 3", OK),
    # what binlogd does not do: MariaDB's own error where it fits, 1235 otherwise (never a silent OK)
    ("INSERT INTO t VALUES (1)", (1046, "No database selected")),
    ("INSERT INTO db.t VALUES (1)", (1146, "Table 'db.t' doesn't exist")),
    ("UPDATE t SET a=1", (1046, "No database selected")),
    ("DELETE FROM t", (1046, "No database selected")),
    ("REPLACE INTO db.t VALUES (1)", (1146, "Table 'db.t' doesn't exist")),
    ("TRUNCATE TABLE db.t", (1146, "Table 'db.t' doesn't exist")),
    ("CREATE TABLE t (a int)", (1046, "No database selected")),
    ("CREATE TABLE db.t (a int)", (1235, "This version of binlogd doesn't yet support 'CREATE TABLE'")),
    ("CREATE DATABASE d", (1235, "This version of binlogd doesn't yet support 'CREATE DATABASE'")),
    ("DROP TABLE IF EXISTS t", (1046, "No database selected")),
    ("FLUSH LOGS", (1235, "This version of binlogd doesn't yet support 'FLUSH LOGS'")),
    ("FLUSH BINARY LOGS", (1235, "This version of binlogd doesn't yet support 'FLUSH BINARY LOGS'")),
    ("PURGE BINARY LOGS TO 'mysql-bin.000001'",
     (1235, "This version of binlogd doesn't yet support 'PURGE BINARY LOGS'")),
    ("RESET MASTER", (1235, "This version of binlogd doesn't yet support 'RESET MASTER'")),
    ("KILL 999", (1235, "This version of binlogd doesn't yet support 'KILL'")),
    ("KILL QUERY 999", (1235, "This version of binlogd doesn't yet support 'KILL QUERY'")),
    ("CHANGE MASTER TO MASTER_HOST='x'", (1235, "This version of binlogd doesn't yet support 'CHANGE MASTER TO'")),
    ("START SLAVE", (1235, "This version of binlogd doesn't yet support 'START SLAVE'")),
    ("STOP SLAVE", (1235, "This version of binlogd doesn't yet support 'STOP SLAVE'")),
    ("LOCK TABLES t READ", (1235, "This version of binlogd doesn't yet support 'LOCK TABLES'")),
    ("EXPLAIN SELECT 1", (1235, "This version of binlogd doesn't yet support 'EXPLAIN'")),
    ("XA START 'x'", (1235, "This version of binlogd doesn't yet support 'XA'")),
    ("(SELECT 1)", (1235, "This version of binlogd doesn't yet support 'parenthesised query'")),
    ("DELIMITER //", (1064, SYNTAX.format("DELIMITER //", 1))),
    ("GIBBERISH", (1064, SYNTAX.format("GIBBERISH", 1))),
    ("123", (1064, SYNTAX.format("123", 1))),
]


@pytest.mark.parametrize(("sql", "expected"), CASES, ids=[c[0][:60] for c in CASES])
def test_statement(sql: str, expected: Any) -> None:
    server = FakeServer()
    session = SessionState()
    if isinstance(expected, tuple):
        with pytest.raises(SqlError) as ei:
            execute(sql, session, server)
        assert (ei.value.code, ei.value.message) == expected
        assert len(ei.value.sqlstate) == 5
        # the failure is what SHOW WARNINGS reports next
        assert execute("SHOW WARNINGS", session, server).rows == [("Error", *expected)]
    else:
        result = execute(sql, session, server)
        if isinstance(expected, ResultSet):
            assert isinstance(result, ResultSet)
            assert (result.columns, result.rows) == (expected.columns, expected.rows)
            for row in result.rows:
                assert len(row) == len(result.columns)
        else:
            assert result == expected


SQLSTATES = {1044: "42000", 1046: "3D000", 1049: "42000", 1054: "42S22", 1064: "42000", 1065: "42000",
             1096: "HY000", 1109: "42S02", 1115: "42000", 1146: "42S02", 1193: "HY000", 1228: "HY000",
             1229: "HY000", 1231: "42000", 1232: "42000", 1235: "42000", 1238: "HY000", 1241: "21000",
             1253: "42000", 1273: "HY000", 1298: "HY000", 1305: "42000", 1367: "22007", 1426: "42000",
             1582: "42000", 1621: "HY000", 1690: "22003", 1929: "HY000"}


@pytest.mark.parametrize(("sql", "expected"), [c for c in CASES if isinstance(c[1], tuple)])
def test_sqlstate(sql: str, expected: tuple[int, str]) -> None:
    """SQLSTATEs as the mariadb client prints them (ERROR 1064 (42000) ...)."""
    with pytest.raises(SqlError) as ei:
        execute(sql, SessionState(), FakeServer())
    if ei.value.code in SQLSTATES:
        assert ei.value.sqlstate == SQLSTATES[ei.value.code]


def test_show_slave_status_is_empty_with_mariadb_columns() -> None:
    r = run("SHOW SLAVE STATUS")
    assert r.rows == [] and len(r.columns) == 54
    assert r.columns[:3] == ["Slave_IO_State", "Master_Host", "Master_User"]
    assert r.columns[-1] == "Replicate_Rewrite_DB"
    assert run("SHOW REPLICA STATUS").columns == r.columns
    everything = run("SHOW ALL SLAVES STATUS")
    assert everything.rows == [] and everything.columns[:2] == ["Connection_name", "Slave_SQL_State"]
    assert everything.columns[-1] == "Gtid_Slave_Pos"


# ------------------------------------------------------------------------------------------------ sessions


def test_user_variables_are_per_session_and_case_insensitive() -> None:
    server = FakeServer()
    a, b = SessionState(), SessionState()
    execute("SET @Master_Binlog_Checksum = @@global.binlog_checksum, @X = 1.5, @h = 0x41, @n = NULL", a, server)
    assert a.user_vars == {"master_binlog_checksum": "CRC32", "x": "1.5", "h": b"A", "n": None}
    assert execute("SELECT @master_binlog_checksum, @MASTER_BINLOG_CHECKSUM", a, server).rows == [("CRC32", "CRC32")]
    assert execute("SELECT @master_binlog_checksum", b, server).rows == [(None,)]
    execute("SET skip_replication=1", a, server)
    assert execute("SELECT @@skip_replication", a, server).rows == [(1,)]
    assert execute("SELECT @@skip_replication", b, server).rows == [(0,)]
    assert (a.skip_replication, b.skip_replication) == (True, False)


def test_set_evaluates_all_right_hand_sides_first_and_is_atomic() -> None:
    """MariaDB checks every assignment before applying any (set_var::check, then update)."""
    s = SessionState()
    server = FakeServer()
    execute("SET @c = @@global.binlog_checksum, @d = @c", s, server)
    assert (s.user_vars["c"], s.user_vars["d"]) == ("CRC32", None)
    execute("SET @a=1", s, server)
    with pytest.raises(SqlError) as ei:
        execute("SET @a=5, skip_replication=7", s, server)
    assert ei.value.code == 1231
    assert s.user_vars["a"] == 1 and s.skip_replication is False
    execute("SET @a = @b := 3", s, server)
    assert (s.user_vars["a"], s.user_vars["b"]) == (3, 3)
    execute("SET @a=1, skip_replication=1, @b=2", s, server)
    assert (s.user_vars["a"], s.user_vars["b"], s.skip_replication) == (1, 2, True)


def test_skip_replication_inside_a_transaction_is_refused() -> None:
    """ERROR 1929 exactly where MariaDB 10.11 gives it (observed: skip_replication_demo)."""
    msg = (1929, "Cannot modify @@session.skip_replication inside a transaction")
    for begin in ("BEGIN", "START TRANSACTION", "begin work"):
        s, server = SessionState(), FakeServer()
        execute(begin, s, server)
        assert execute("SELECT @@in_transaction", s, server).rows == [(1,)]
        for sql in ("SET skip_replication=1", "SET @@session.skip_replication=1", "SET SESSION skip_replication=0",
                    "SET @a=1, skip_replication=1"):
            with pytest.raises(SqlError) as ei:
                execute(sql, s, server)
            assert (ei.value.code, ei.value.message) == msg
        assert s.skip_replication is False and "a" not in s.user_vars
        execute("COMMIT", s, server)
        execute("SET skip_replication=1", s, server)
        assert s.skip_replication is True
    # autocommit=0 with nothing pending is not a transaction; switching autocommit on commits one
    s, server = SessionState(), FakeServer()
    execute("SET autocommit=0", s, server)
    execute("SET skip_replication=1", s, server)
    execute("BEGIN", s, server)
    execute("SET autocommit=0", s, server)
    assert s.in_transaction
    execute("SET autocommit=1", s, server)
    assert not s.in_transaction
    execute("SET skip_replication=0", s, server)
    # BEGIN with autocommit already on: SET autocommit=1 changes nothing, the transaction stays open
    s = SessionState()
    execute("BEGIN", s, server)
    execute("SET autocommit=1", s, server)
    assert s.in_transaction
    execute("ROLLBACK", s, server)
    execute("BEGIN", s, server)
    execute("COMMIT AND CHAIN", s, server)
    assert s.in_transaction


def test_session_flags_and_sysvars_are_recorded() -> None:
    s, server = SessionState(), FakeServer()
    execute("SET sql_log_bin=0", s, server)
    assert s.sql_log_bin is False
    assert run("SELECT @@sql_log_bin, @@global.sql_log_bin", session=s, server=server).rows == [(0, 1)]
    execute("SET sql_log_bin=DEFAULT", s, server)
    assert s.sql_log_bin is True
    execute("SET AUTOCOMMIT = ON", s, server)
    execute("SET autocommit='off'", s, server)
    assert s.autocommit is False and execute("SELECT @@autocommit", s, server).rows == [(0,)]
    execute("SET @@autocommit:=1", s, server)
    assert s.autocommit is True
    execute("SET SESSION sql_mode='ANSI_QUOTES'", s, server)
    assert s.session_sysvars["sql_mode"] == "ANSI_QUOTES"
    execute("SET wait_timeout=100", s, server)
    assert execute("SELECT @@wait_timeout, @@global.wait_timeout", s, server).rows == [(100, 28800)]
    execute("SET wait_timeout=DEFAULT", s, server)
    assert execute("SELECT @@wait_timeout", s, server).rows == [(28800,)]
    execute("SET @@session.server_id=7", s, server)
    assert execute("SELECT @@server_id, @@global.server_id", s, server).rows == [(7, 1)]
    assert execute("SHOW VARIABLES LIKE 'server_id'", s, server).rows == [("server_id", "7")]
    assert execute("SHOW GLOBAL VARIABLES LIKE 'server_id'", s, server).rows == [("server_id", "1")]
    execute("SET gtid_domain_id = 5", s, server)
    assert execute("SELECT @@gtid_domain_id, @@global.gtid_domain_id", s, server).rows == [(5, 0)]
    execute("SET tx_isolation=1", s, server)
    assert execute("SELECT @@tx_isolation", s, server).rows == [("READ-COMMITTED",)]
    execute("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE", s, server)
    assert execute("SELECT @@tx_isolation", s, server).rows == [("SERIALIZABLE",)]
    execute("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", s, server)  # next transaction only
    assert execute("SELECT @@tx_isolation", s, server).rows == [("SERIALIZABLE",)]


def test_int_variables_are_clamped_with_a_warning() -> None:
    s, server = SessionState(), FakeServer()
    r = execute("SET wait_timeout=-1", s, server)
    assert r == Ok(warnings=1)
    assert execute("SHOW WARNINGS", s, server).rows == [
        ("Warning", 1292, "Truncated incorrect wait_timeout value: '-1'")]
    assert execute("SELECT @@wait_timeout", s, server).rows == [(1,)]
    execute("SET wait_timeout=99999999999", s, server)
    assert execute("SELECT @@wait_timeout", s, server).rows == [(31536000,)]
    execute("SET wait_timeout=TRUE", s, server)
    assert execute("SELECT @@wait_timeout", s, server).rows == [(1,)]


@pytest.mark.parametrize(("value", "expected"), [
    ("concat(@@sql_mode, ',STRICT_TRANS_TABLES')", sysvars.DEFAULT_SQL_MODE),
    ("''", ""),
    ("'ansi'", "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI"),
    ("'TRADITIONAL'", "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                      "ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"),
    ("'ORACLE'", "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ORACLE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,"
                 "NO_FIELD_OPTIONS,NO_AUTO_CREATE_USER,SIMULTANEOUS_ASSIGNMENT"),
    ("'MSSQL'", "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,MSSQL,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS"),
    ("'MAXDB'", "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,MAXDB,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS,"
                "NO_AUTO_CREATE_USER"),
    ("'MYSQL40'", "MYSQL40,HIGH_NOT_PRECEDENCE"),
    ("3", "REAL_AS_FLOAT,PIPES_AS_CONCAT"),
    ("ANSI_QUOTES", "ANSI_QUOTES"),
    ("DEFAULT", sysvars.DEFAULT_SQL_MODE),
    ("',,STRICT_TRANS_TABLES'", "STRICT_TRANS_TABLES"),
])
def test_sql_mode_values(value: str, expected: str) -> None:
    assert run(f"SET sql_mode = {value}", "SELECT @@sql_mode").rows == [(expected,)]


def test_sql_mode_changes_lexing() -> None:
    s, server = SessionState(), FakeServer()
    execute("SET sql_mode='ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES'", s, server)
    assert execute("SELECT 'a' || 'b', 'x\\n'", s, server).rows == [("ab", "x\\n")]
    with pytest.raises(SqlError) as ei:
        execute('SELECT "x"', s, server)  # an identifier now
    assert ei.value.code == 1054


def test_charset_variables() -> None:
    s, server = SessionState(), FakeServer()
    q = "SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection"
    execute("SET NAMES utf8", s, server)
    assert execute(q, s, server).rows == [("utf8mb3", "utf8mb3", "utf8mb3", "utf8mb3_general_ci")]
    execute("SET NAMES latin1", s, server)
    assert execute(q, s, server).rows == [("latin1", "latin1", "latin1", "latin1_swedish_ci")]
    execute("SET NAMES utf8mb4 COLLATE 'utf8mb4_unicode_ci'", s, server)
    assert execute(q, s, server).rows == [("utf8mb4", "utf8mb4", "utf8mb4", "utf8mb4_unicode_ci")]
    execute("SET NAMES utf8mb4 COLLATE uca1400_ai_ci", s, server)
    assert execute("SELECT @@collation_connection", s, server).rows == [("utf8mb4_uca1400_ai_ci",)]
    execute("SET NAMES utf8 COLLATE utf8_bin", s, server)
    assert execute("SELECT @@collation_connection", s, server).rows == [("utf8mb3_bin",)]
    execute("SET CHARACTER SET latin1", s, server)  # connection follows character_set_database
    assert execute(q, s, server).rows == [("latin1", "utf8mb4", "latin1", "utf8mb4_general_ci")]
    execute("SET character_set_connection=utf16", s, server)
    assert execute("SELECT @@character_set_connection, @@collation_connection", s, server).rows == [
        ("utf16", "utf16_general_ci")]
    execute("SET collation_connection=utf8mb4_bin", s, server)
    assert execute("SELECT @@character_set_connection", s, server).rows == [("utf8mb4",)]
    execute("SET character_set_results = NULL", s, server)
    assert execute("SELECT @@character_set_results", s, server).rows == [(None,)]
    assert execute("SHOW VARIABLES LIKE 'character_set_results'", s, server).rows == [("character_set_results", "")]


def test_time_zone_and_clock() -> None:
    s, server = SessionState(), FakeServer()
    execute("SET time_zone='+5:3'", s, server)
    assert execute("SELECT @@time_zone", s, server).rows == [("+05:03",)]
    execute("SET time_zone='-00:00'", s, server)
    assert execute("SELECT @@time_zone", s, server).rows == [("+00:00",)]
    r = execute("SELECT NOW(), NOW(3), CURRENT_TIMESTAMP, UTC_TIMESTAMP(), CURDATE(), CURTIME(), SYSDATE()",
                s, server)
    assert r.columns == ["NOW()", "NOW(3)", "CURRENT_TIMESTAMP", "UTC_TIMESTAMP()", "CURDATE()", "CURTIME()",
                         "SYSDATE()"]
    assert r.rows == [("2023-11-14 22:13:20", "2023-11-14 22:13:20.250", "2023-11-14 22:13:20",
                       "2023-11-14 22:13:20", "2023-11-14", "22:13:20", "2023-11-14 22:13:20")]
    execute("SET time_zone='+01:00'", s, server)
    assert execute("SELECT NOW(), UTC_TIMESTAMP", s, server).rows == [("2023-11-14 23:13:20", "2023-11-14 22:13:20")]
    execute("SET time_zone='SYSTEM'", s, server)
    execute("SET timestamp=1000000000", s, server)
    assert execute("SELECT UNIX_TIMESTAMP(), @@timestamp", s, server).rows == [(1000000000, 1000000000.0)]
    execute("SET timestamp=DEFAULT", s, server)
    assert execute("SELECT UNIX_TIMESTAMP()", s, server).rows == [(1700000000,)]
    execute("SET time_zone='+00:00'", s, server)
    r = execute("SELECT UNIX_TIMESTAMP('2020-01-01 00:00:00'), UNIX_TIMESTAMP('2020-01-01'), "
                "UNIX_TIMESTAMP(20200101), UNIX_TIMESTAMP('garbage'), UNIX_TIMESTAMP(NULL), UNIX_TIMESTAMP(1), "
                "UNIX_TIMESTAMP('2020-01-01 00:00:00.5')", s, server)
    assert r.rows == [(1577836800, 1577836800, 1577836800, None, None, None, "1577836800.5")]


def test_show_variables_shapes() -> None:
    s, server = SessionState(), FakeServer()
    everything = execute("SHOW VARIABLES", s, server)
    names = [r[0] for r in everything.rows]
    assert names == sorted(names) and len(names) == len(sysvars.SYSVARS)
    assert all(isinstance(v, str) for _, v in everything.rows)
    glob = [r[0] for r in execute("SHOW GLOBAL VARIABLES", s, server).rows]
    assert "skip_replication" not in glob and "in_transaction" not in glob and "server_id" in glob
    execute("SET skip_replication=1", s, server)
    assert execute("SHOW VARIABLES LIKE 'skip%'", s, server).rows == [("skip_replication", "ON")]
    assert execute("SHOW VARIABLES LIKE 's_ip_replication'", s, server).rows == [("skip_replication", "ON")]
    assert execute("SHOW VARIABLES LIKE 'SKIP\\_REPLICATION'", s, server).rows == [("skip_replication", "ON")]
    assert execute("SHOW VARIABLES LIKE 'skip'", s, server).rows == []


def test_show_status_uses_optional_server_attributes() -> None:
    server = FakeServer()
    server.uptime = 42  # type: ignore[attr-defined]
    server.threads_connected = lambda: 3  # type: ignore[attr-defined]
    r = run("SHOW GLOBAL STATUS", server=server)
    assert r.rows == [("Binlog_snapshot_file", "mysql-bin.000002"), ("Binlog_snapshot_position", "328"),
                      ("Slaves_connected", "1"), ("Threads_connected", "3"), ("Uptime", "42"),
                      ("Uptime_since_flush_status", "42")]
    assert run("SHOW STATUS LIKE 'Uptime'", server=server).rows == [("Uptime", "42")]
    assert run("SHOW SESSION STATUS WHERE Variable_name = 'uptime'", server=server).rows == [("Uptime", "42")]


def test_information_schema_variable_tables() -> None:
    s, server = SessionState(), FakeServer()
    r = execute("SELECT * FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME LIKE 'server_i%'", s, server)
    assert r == ResultSet(["VARIABLE_NAME", "VARIABLE_VALUE"], [("SERVER_ID", "1")])
    r = execute("SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE variable_name = 'autocommit'",
                s, server)
    assert r == ResultSet(["VARIABLE_VALUE"], [("ON",)])
    r = execute("SELECT variable_name AS n, v.variable_value FROM information_schema.global_variables v "
                "WHERE variable_name IN ('LOG_BIN', 'BINLOG_CHECKSUM') ORDER BY 1 DESC LIMIT 5", s, server)
    assert r == ResultSet(["n", "variable_value"], [("LOG_BIN", "ON"), ("BINLOG_CHECKSUM", "CRC32")])
    with pytest.raises(SqlError) as ei:
        execute("SELECT nosuch FROM information_schema.GLOBAL_VARIABLES", s, server)
    assert (ei.value.code, ei.value.message) == (1054, "Unknown column 'nosuch' in 'SELECT'")
    with pytest.raises(SqlError) as ei:
        execute("INSERT INTO information_schema.tables VALUES (1)", SessionState(user="root"), server)
    assert ei.value.message == "Access denied for user 'root'@'localhost' to database 'information_schema'"
    execute("USE information_schema", s, server)
    assert execute("SELECT DATABASE()", s, server).rows == [("information_schema",)]
    with pytest.raises(SqlError) as ei:
        execute("SELECT foo()", s, server)
    assert ei.value.message == "FUNCTION information_schema.foo does not exist"
    with pytest.raises(SqlError) as ei:
        execute("SELECT * FROM t", s, server)
    assert (ei.value.code, ei.value.message) == (1109, "Unknown table 't' in information_schema")


def test_use_and_change_database() -> None:
    s = SessionState()
    change_database(s, "INFORMATION_SCHEMA")
    assert s.database == "information_schema"
    with pytest.raises(SqlError) as ei:
        change_database(s, "Shop")
    assert (ei.value.code, ei.value.message, ei.value.sqlstate) == (1049, "Unknown database 'Shop'", "42000")


def test_user_function_identity() -> None:
    s = SessionState(user="repl", host="10.0.0.2", connection_id=17)
    r = run("SELECT USER(), CURRENT_USER(), CURRENT_USER, CONNECTION_ID()", session=s)
    assert r.rows == [("repl@10.0.0.2", "repl@10.0.0.2", "repl@10.0.0.2", 17)]


def test_show_binlog_events_delegates_arguments() -> None:
    server = FakeServer()
    run("SHOW BINLOG EVENTS", server=server)
    run("SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 256 LIMIT 2", server=server)
    run("SHOW BINLOG EVENTS IN 'mysql-bin.000001' LIMIT 1, 5", server=server)
    run("show binlog events from 4 limit 3 offset 1", server=server)
    assert server.event_calls == [(None, None, 0, None), ("mysql-bin.000001", 256, 0, 2),
                                  ("mysql-bin.000001", None, 1, 5), (None, 4, 1, 3)]
    r = run("SHOW BINLOG EVENTS LIMIT 1, 2", server=server)
    assert [row[1] for row in r.rows] == [256, 285]
    for bad, near in (("SHOW BINLOG EVENTS IN mysql", "mysql"), ("SHOW BINLOG EVENTS FROM 'x'", "'x'"),
                      ("SHOW BINLOG EVENTS LIMIT", "")):
        assert error_of(bad, server=server) == (1064, SYNTAX.format(near, 1))


def test_server_without_binlog() -> None:
    server = FakeServer(logs=[])
    assert run("SHOW MASTER STATUS", server=server).rows == []
    assert error_of("SHOW BINARY LOGS", server=server) == (1381, "You are not using binary logging")
    assert run("SELECT @@log_bin", server=server).rows == [(0,)]
    assert run("SHOW VARIABLES LIKE 'log_bin'", server=server).rows == [("log_bin", "OFF")]


def test_show_warnings_follows_mariadb() -> None:
    """An error or warning replaces the list; statements reading tables clear it; others keep it."""
    s, server = SessionState(), FakeServer()
    err = ("Error", 1064, SYNTAX.format("SELEC 1", 1))
    with pytest.raises(SqlError):
        execute("SELEC 1", s, server)
    for keeps in ("SELECT 1", "SET @a=1", "SHOW MASTER STATUS", "BEGIN", "COMMIT", "SHOW WARNINGS",
                  "SHOW BINARY LOGS", "SHOW SLAVE HOSTS"):
        execute(keeps, s, server)
        assert execute("SHOW WARNINGS", s, server).rows == [err], keeps
    assert execute("SELECT @@warning_count, @@error_count", s, server).rows == [(1, 1)]
    assert execute("SHOW COUNT(*) ERRORS", s, server).rows == [(1,)]
    execute("SHOW VARIABLES LIKE 'x'", s, server)
    assert execute("SHOW WARNINGS", s, server).rows == []
    r = execute("SELECT 1/0", s, server)
    assert r.rows == [(None,)] and r.warnings == 1
    assert execute("SHOW WARNINGS", s, server).rows == [("Warning", 1365, "Division by 0")]
    assert execute("SHOW ERRORS", s, server).rows == []
    execute("SELECT 'abc' = 0", s, server)
    assert execute("SHOW WARNINGS", s, server).rows == [("Warning", 1292, "Truncated incorrect DECIMAL value: 'abc'")]
    assert execute("SELECT 1 INTO @x FROM DUAL WHERE 0", s, server) == Ok(0, warnings=1)
    assert execute("SHOW WARNINGS", s, server).rows == [
        ("Warning", 1329, "No data - zero rows fetched, selected, or processed")]


def test_executable_comments_run() -> None:
    s, server = SessionState(), FakeServer()
    execute("/*!40101 SET @x=5 */", s, server)
    execute("/*!99999 SET @x=6 */", s, server)
    execute("/*!50700 SET @x=6 */", s, server)
    execute("/*!101120 SET @x=6 */", s, server)
    assert s.user_vars["x"] == 5
    execute("/*!101119 SET @x=8 */", s, server)
    execute("/*!SET @x=9 */", s, server)
    assert s.user_vars["x"] == 9
    execute("/*M!100100 SET @x=7 */", s, server)
    assert s.user_vars["x"] == 7
    execute("/*!40101 SET NAMES utf8mb4 */;", s, server)
    assert s.session_sysvars["character_set_client"] == "utf8mb4"


def test_select_into_user_variables() -> None:
    s, server = SessionState(), FakeServer()
    assert execute("SELECT @@global.binlog_checksum, 2 INTO @c, @two", s, server) == Ok(1)
    assert (s.user_vars["c"], s.user_vars["two"]) == ("CRC32", 2)
    assert execute("SELECT 3 FROM DUAL INTO @three", s, server) == Ok(1)
    assert s.user_vars["three"] == 3


# ------------------------------------------------------------------------------------------------ sysvars


def test_sysvar_table_is_consistent() -> None:
    for name, var in sysvars.SYSVARS.items():
        assert name == var.name == name.lower()
        if var.kind in (sysvars.Kind.ENUM, sysvars.Kind.SET):
            assert var.choices
        value = var.global_value(FakeServer())
        if var.scope is not sysvars.Scope.SESSION_ONLY and var.kind is sysvars.Kind.ENUM:
            assert value in var.choices, name
    assert sysvars.lookup("SERVER_ID") is sysvars.SYSVARS["server_id"]
    assert sysvars.lookup("rpl_semi_sync_master_timeouts") is None  # not a MariaDB variable either


@pytest.mark.parametrize(("name", "cs", "expected"), [
    ("utf8mb4_general_ci", None, ("utf8mb4_general_ci", "utf8mb4")),
    ("UTF8_BIN", None, ("utf8mb3_bin", "utf8mb3")),
    ("latin1_swedish_ci", None, ("latin1_swedish_ci", "latin1")),
    ("binary", None, ("binary", "binary")),
    ("utf8mb4_uca1400_swedish_nopad_as_cs", None, ("utf8mb4_uca1400_swedish_nopad_as_cs", "utf8mb4")),
    ("uca1400_ai_ci", "utf8mb4", ("utf8mb4_uca1400_ai_ci", "utf8mb4")),
    ("uca1400_ai_ci", None, None),
    ("uca1400_ai_ci", "latin1", None),
    ("latin1_uca1400_ai_ci", None, None),
    ("nosuch", None, None),
    ("utf8mb4_general_mysql500_ci", None, None),
])
def test_collations(name: str, cs: str | None, expected: tuple[str, str] | None) -> None:
    assert sysvars.collation(name, cs) == expected


def test_charsets_and_time_zones() -> None:
    assert sysvars.charset("UTF8") == "utf8mb3" and sysvars.charset("utf8mb4") == "utf8mb4"
    assert sysvars.charset("nosuch") is None
    assert sysvars.default_collation("latin1") == "latin1_swedish_ci"
    assert sysvars.default_collation("binary") == "binary"
    assert sysvars.parse_time_zone("system") == ("SYSTEM", None)
    assert sysvars.parse_time_zone("+13:00") == ("+13:00", 46800)
    assert sysvars.parse_time_zone("-12:59") == ("-12:59", -46740)
    assert sysvars.parse_time_zone("+13:01") is None
    assert sysvars.parse_time_zone("UTC") is None


@pytest.mark.parametrize(("s", "pattern", "expected"), [
    ("server_id", "SERVER_ID", True), ("server_id", "server\\_id", True), ("serverXid", "server\\_id", False),
    ("server_id", "s%", True), ("server_id", "%_id", True), ("server_id", "_erver_id", True),
    ("server_id", "server", False), ("", "%", True), ("", "_", False), ("a%b", "a\\%b", True),
    ("axb", "a\\%b", False), ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "%a%a%a%a%a%a%a%a%a%a%c", False),
])
def test_like(s: str, pattern: str, expected: bool) -> None:
    assert like_match(s, pattern) is expected


# ------------------------------------------------------------------------------------------------ oracle

# Statements whose answer does not depend on the server's identity: column names, values and errors must be
# MariaDB 10.11's own. Each group runs on one fresh connection (user variables and SET carry over).
ORACLE_GROUPS: list[list[str]] = [
    ["SELECT 1", "SELECT 'literal'", "SELECT 1+2*3, 7/2, -5, 10 DIV 3, 7 % 3",
     "SELECT  1 + 1 ,   @@GLOBAL.gtid_domain_id   ,concat( 'a' , 'b' )",
     "SELECT (1), ('a'), (1+1), ((2)), -(5), +5, 'a' AS `x`", "SELECT 'a' 'b', _utf8mb4'x' 'y', N'z'",
     "SELECT 0.1 + 0.2, 1e0 + 1, 3 / 2, 1 / 3, 2.5 * 2, -10 % 3, 10.5 % 3",
     "SELECT 5.5 DIV 2, -7 DIV 2, 7 MOD -3, -7 MOD 3, 1.50 / 2, 2 * 1.25, MOD(7, 3)",
     "SELECT ~1, 1 << 64, 1 << 63, -1 | 0, 5 ^ 1, -1 >> 1, 6 & 3",
     "SELECT 9223372036854775807+1", "SELECT 0 - 18446744073709551615", "SELECT 1e309",
     "SELECT CONCAT(1.0e0), CONCAT(1e20), CONCAT(0.1e0+0.2e0), CONCAT(1e15), CONCAT(1.5e-3), CONCAT(1e-7)",
     "SELECT 1 = 1, 1 <> 2, 'a' = 'A', NULL = NULL, NULL <=> NULL, 1 IS NULL, NULL IS NOT NULL, 2 IN (1,2)",
     "SELECT 2 = '2', '1e1' = 10, 'a' < 'B', NULL IN (1), 1 IN (NULL, 1), 2 IN (NULL, 1)",
     "SELECT 'a_c' LIKE 'a\\_c', 'abc' LIKE 'a\\_c', 'a%' LIKE 'a|%' ESCAPE '|', 'x' NOT LIKE 'y'",
     "SELECT 1 IS TRUE, 0 IS FALSE, NULL IS UNKNOWN, 2 BETWEEN 3 AND 1, 2 NOT BETWEEN 3 AND 1",
     "SELECT CASE WHEN 1 THEN 'y' ELSE 'n' END, IF(0, 'a', 'b'), IFNULL(NULL, 'd'), COALESCE(NULL, 3)",
     "SELECT LENGTH('é'), CHAR_LENGTH('é'), ABS(-3), NULLIF(1,1), CONCAT_WS(',', 'a', NULL, 'b')",
     "SELECT VERSION(1)", "select concat()", "SELECT NOW(7)", "SELECT foo()", "SELECT nosuch.foo()"],
    ["SELECT @a, @b", "SET @a = 1, @b = 'x'", "SELECT @a, @b", "SET @a := 2", "SELECT @a",
     "SET @c = @@global.binlog_checksum, @d = @c", "SELECT @c IS NOT NULL, @d", "SELECT @a := 5",
     "SET @a = @b := 3", "SELECT @a, @b", "SET @a = foo", "SET @a = (SELECT 1, 2)", "SELECT (SELECT 1)",
     "SELECT (1,2)", "SELECT 1 INTO @zz", "SELECT @zz", "SELECT 1, 2 INTO @a",
     "SELECT @@global.skip_replication", "SELECT @@session.version", "SELECT @@nosuch",
     "SELECT @@session.binlog_checksum", "SELECT @@foo.version", "SELECT @@transaction_isolation"],
    ["SELECT 1 LIMIT 0", "SELECT 1 WHERE 1=0", "SELECT 1 FROM DUAL WHERE @@skip_replication = 0",
     "SELECT @@version_comment LIMIT 1, 1", "SELECT 1 LIMIT 2 OFFSET 1", "SELECT 1 ORDER BY 1",
     "SELECT 1 ORDER BY x", "SELECT a", "SELECT USER", "SELECT 1 WHERE nosuch = 1", "SELECT `a`.`b`",
     "SELECT a.b.c", "SELECT *", "SELECT * FROM t", "SELECT * FROM db.t", "SELECT * FROM information_schema.nosuch"],
    ["SELEC 1", "SELECT", "SELECT 1 FROM", "SELECT 1,", "SELECT (1", "SELECT 1)", "SELECT 'abc",
     "SELECT 1 garbage garbage", "SELECT 1 'x' 'y' AS z", "SELECT 1 AS 2", "SELECT 1 AS select", "SELECT 1 + NOT 2",
     "SELECT @", "SELECT @ a", "SELECT @@", "SELECT @@global", "SELECT @@ version", "SELECT @@version LIMIT -1",
     "SELECT 1 /* unterminated", "SELECT 1; SELECT 2", "SELECT 1;\nSELECT 2", "SELECT 1;", "SELECT 1;;",
     "SELECT 1\n, 2 +\n", "\n\nSELEC 1", "SELECT 1 +\n\n;\n", "SELECT /*!40101 2 */", "SELECT 1 /*!99999 + 1 */",
     ";", "SELECT 1 /*!50700 + 1 */", "SELECT 1 /*M!100100 + 1 */", "/*!1 SET @x=10 */", "/* only a comment */",
     "SELECT 1 -- c\n + 1", "SELECT 1; -- c", "SELECT 1 /*!40101 + 1 */ + 1", "SELECT /*!40101 1 + */ 1",
     "SELECT 1 /*!99999 + 5 */ + 1", "SELECT 1 /* c */ + 1",
     "SHOW BINARY LOG STATUS", "SHOW NOSUCH", "SHOW VARIABLES LIKE", "SHOW VARIABLES LIKE 'a' ESCAPE '|'",
     "SHOW VARIABLES LIKE 'server_id' LIMIT 1", "GIBBERISH", "DELIMITER //",
     "SELECT 1 aaaaaaaaaa bbbbbbbbbbb ccccccccccccc dddddddddddd eeeeeeeeeeee fffffffffff gggggggggg "
     "hhhhhhhhh iiiiiiiii jjjjjjjj"],
    ["SET skip_replication=1", "SELECT @@skip_replication, @@session.skip_replication", "SET GLOBAL skip_replication=1",
     "SET @@global.skip_replication=1", "SET skip_replication='x'", "SET skip_replication=2",
     "SET skip_replication=NULL", "SET skip_replication=1.0", "SET skip_replication=ON",
     "SET skip_replication=DEFAULT", "SELECT @@skip_replication", "SET binlog_checksum='NONE'", "SET version='x'",
     "SET GLOBAL version='x'", "SET SESSION gtid_binlog_pos='x'", "SET GLOBAL sql_log_bin=0",
     "SET max_allowed_packet=1024", "SET x = 1", "SET autocommit=2", "SET autocommit=NULL",
     "SET wait_timeout='abc'", "SET wait_timeout=ON", "SET wait_timeout=-1", "SHOW WARNINGS",
     "SELECT @@wait_timeout", "SET wait_timeout=DEFAULT", "SET sql_mode='NOSUCH'",
     "SET sql_mode = 'no_zero_date,ansi_quotes , pipes_as_concat'", "SET sql_mode = 'ansi'", "SELECT @@sql_mode",
     "SET sql_mode = 3", "SELECT @@sql_mode", "SET sql_mode=DEFAULT", "SET time_zone='+13:01'",
     "SET time_zone='+5:3'", "SELECT @@time_zone", "SET time_zone = 5", "SET tx_isolation=1", "SELECT @@tx_isolation",
     "SET @x", "SET @ x = 1", "SET GLOBAL @a=1", "SET TRANSACTION READ ONLY, @a=1", "SET @a=1, TRANSACTION READ ONLY"],
    ["SET NAMES utf8", "SELECT @@character_set_client, @@collation_connection", "SET NAMES latin1",
     "SELECT @@character_set_client, @@character_set_results, @@collation_connection", "SET NAMES nosuch",
     "SET NAMES ucs2", "SET NAMES utf8 COLLATE latin1_swedish_ci", "SET NAMES latin1 COLLATE uca1400_ai_ci",
     "SET NAMES utf8mb4 COLLATE uca1400_ai_ci", "SELECT @@collation_connection", "SET NAMES utf8 COLLATE utf8_bin",
     "SELECT @@collation_connection", "SET collation_connection=uca1400_ai_ci", "SET character_set_client = 5",
     "SET NAMES", "SET CHARACTER SET nosuch"],
    ["BEGIN", "SELECT @@in_transaction", "SET skip_replication=1", "SET @a=1, skip_replication=1", "SELECT @a",
     "COMMIT", "SET skip_replication=1", "SET autocommit=0", "SET skip_replication=0", "BEGIN",
     "SET autocommit=1", "SELECT @@in_transaction", "SET skip_replication=1"],
    ["SHOW VARIABLES LIKE 'SERVER\\_ID'", "SHOW SESSION VARIABLES LIKE 'skip_replication'",
     "SHOW GLOBAL VARIABLES LIKE 'skip_replication'", "SHOW VARIABLES WHERE Variable_name IN ('log_bin', 'x')",
     "SHOW VARIABLES WHERE nosuch = 1", "SHOW COUNT(*) WARNINGS", "SHOW WARNINGS", "SHOW TABLES",
     "SHOW DATABASES LIKE 'information%'", "SHOW SLAVE STATUS", "SHOW ALL SLAVES STATUS",
     "USE db", "USE 'information_schema'", "INSERT INTO t VALUES (1)", "INSERT INTO db.t VALUES (1)",
     "DELETE FROM t", "CREATE TABLE t (a int)", "SELECEC 1", "SELECT @@warning_count, @@error_count"],
    ["SELECT * FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME LIKE 'server_i%'",
     "SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE variable_name = 'autocommit'",
     "SELECT variable_name AS n, v.variable_value FROM information_schema.global_variables v "
     "WHERE variable_name IN ('LOG_BIN', 'BINLOG_CHECKSUM') ORDER BY 1 DESC LIMIT 5",
     "SELECT nosuch FROM information_schema.GLOBAL_VARIABLES", "USE information_schema", "SELECT DATABASE()",
     "SELECT foo()", "SELECT * FROM t", "SHOW DATABASES WHERE `Database` = 'information_schema'"],
    ["SET time_zone='+00:00'", "SET timestamp=1000000000",
     "SELECT NOW(), NOW(3), UNIX_TIMESTAMP(), @@timestamp, CURDATE(), CURTIME(), UTC_TIMESTAMP(), CURRENT_TIMESTAMP",
     "SET time_zone='+01:00'", "SELECT NOW(), UTC_TIMESTAMP, UNIX_TIMESTAMP('2020-01-01 00:00:00')",
     "SELECT UNIX_TIMESTAMP('2020-01-01'), UNIX_TIMESTAMP(20200101), UNIX_TIMESTAMP('garbage'), UNIX_TIMESTAMP(1)",
     "SET @f = NOW()", "SELECT @f", "SET timestamp=DEFAULT", "SET time_zone=DEFAULT"],
    ["SET CHARACTER SET latin1",
     "SELECT @@character_set_client, @@character_set_results, @@character_set_connection, @@collation_connection",
     "SET character_set_connection=utf16", "SELECT @@character_set_connection, @@collation_connection",
     "SET collation_connection=utf8mb4_bin", "SELECT @@character_set_connection",
     "SET character_set_results = NULL", "SELECT @@character_set_results",
     "SHOW VARIABLES LIKE 'character_set_results'", "SET NAMES utf8mb4",
     "SET session_track_schema=1, session_track_transaction_info='STATE'",
     "SELECT @@session_track_schema, @@session_track_transaction_info", "SET session_track_transaction_info=7",
     "SET sql_mode='ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES'", "SELECT 'a' || 'b', 'x\\n'",
     'SELECT "x"', "SET sql_mode=DEFAULT"],
]


def _oracle_answer(cur: Any, sql: str) -> Any:
    import pymysql

    try:
        cur.execute(sql)
    except pymysql.MySQLError as e:
        return ("error", e.args[0], e.args[1])
    if cur.description is None:
        return ("ok",)
    cols = [d[0] for d in cur.description]
    return ("rows", cols, list(cur.fetchall()))


def _binlogd_answer(sql: str, session: SessionState, server: FakeServer) -> Any:
    try:
        r = execute(sql, session, server)
    except SqlError as e:
        return ("error", e.code, e.message)
    if isinstance(r, Ok):
        return ("ok",)
    return ("rows", r.columns, r.rows)


def test_matches_real_mariadb(mariadb: Any) -> None:
    """Differential check: the same statements on a real MariaDB 10.11 and on the evaluator.

    The fake server is told the oracle's server_id/checksum/binlog so @@-values agree; columns, values and
    errors must then be identical.
    """
    primary = mariadb.primary("oracle", 1, "--character-set-server=utf8mb4",
                              "--collation-server=utf8mb4_general_ci")
    from pymysql.constants import FIELD_TYPE
    from pymysql.converters import conversions

    # decimals and temporal values as the server's text (what binlogd's rows carry)
    conv = {k: v for k, v in conversions.items() if k not in (
        FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.DATE,
        FIELD_TYPE.TIME)}
    mismatches = []
    server: FakeServer | None = None
    for group in ORACLE_GROUPS:
        conn = primary.connect(autocommit=True, conv=conv)  # one fresh connection per group, like a session
        try:
            cur = conn.cursor()
            if server is None:
                checksum = _oracle_answer(cur, "SELECT @@global.binlog_checksum")[2][0][0]
                server = FakeServer(checksum=checksum, gtid_pos="", logs=[("mysql-bin.000001", 328)])
            cur.execute("SET NAMES utf8mb4")
            cur.execute("SELECT 1")  # a clean SHOW WARNINGS state on both sides
            session = SessionState()
            execute("SET NAMES utf8mb4", session, server)
            for sql in group:
                want = _oracle_answer(cur, sql)
                got = _binlogd_answer(sql, session, server)
                if got != want:
                    mismatches.append(f"{sql!r}\n  mariadb: {want!r}\n  binlogd: {got!r}")
        finally:
            conn.close()
    assert not mismatches, "\n".join(mismatches)


# ------------------------------------------------------------------------------------------------ fuzzing

SEEDS = [*(c[0] for c in CASES if c[0]), *(sql for group in ORACLE_GROUPS for sql in group),
         "SET @master_binlog_checksum= @@global.binlog_checksum", "SHOW VARIABLES LIKE 'SERVER_ID'",
         "SELECT binlog_gtid_pos('mysql-bin.000001',4)", "SET @slave_connect_state='0-1-5'"]
_ALPHABET = st.sampled_from([*"@@''\"`()*/+-%=<>!;,.#\\ \n\t_ax0159eE", "SELECT ", "SET ", "SHOW ", "@@global.",
                             "NULL", "/*!", "*/", "--", "LIKE", "'%'", "1e308", "18446744073709551616", "(",
                             "CASE ", " WHEN ", " END", "NOT ", "é"])


def _check_result(result: Any) -> None:
    assert isinstance(result, ResultSet | Ok)
    if isinstance(result, ResultSet):
        assert all(isinstance(c, str) for c in result.columns)
        for row in result.rows:
            assert len(row) == len(result.columns)
            assert all(v is None or type(v) in (int, str, float, bytes) for v in row)


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=120))
def test_fuzz_random_text_only_raises_sql_errors(sql: str) -> None:
    try:
        _check_result(execute(sql, SessionState(), FakeServer()))
    except SqlError as e:
        assert isinstance(e.code, int) and e.message and len(e.sqlstate) == 5


@settings(max_examples=600, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3), _ALPHABET), max_size=6))
def test_fuzz_mutated_statements_only_raise_sql_errors(seed: str, edits: list[tuple[int, int, str]]) -> None:
    sql = seed
    for pos, kind, text in edits:
        pos = pos % (len(sql) + 1)
        if kind == 0:
            sql = sql[:pos] + text + sql[pos:]
        elif kind == 1:
            sql = sql[:pos] + sql[pos + 1 :]
        elif kind == 2:
            sql = sql[:pos] + text + sql[pos + len(text) :]
        else:
            sql = sql[:pos] + sql[pos:] * 2
    session = SessionState()
    try:
        _check_result(execute(sql, session, FakeServer()))
    except SqlError as e:
        assert isinstance(e.code, int) and e.message and len(e.sqlstate) == 5
    assert all(isinstance(k, str) and k == k.lower() for k in session.user_vars)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    for sql in ("SELECT " + "(" * 5000 + "1" + ")" * 5000, "SELECT " + "-" * 5000 + "1",
                "SELECT " + "NOT " * 3000 + "1", "SELECT " + "+".join(["1"] * 3000),
                "SELECT " + "CONCAT(" * 2000 + "'a'" + ")" * 2000):
        try:
            execute(sql, SessionState(), FakeServer())
        except SqlError as e:
            assert e.code == 1064


def test_many_random_statements_quickly() -> None:
    rnd = random.Random(7)
    pieces = [s for s in SEEDS if s]
    for _ in range(2000):
        a, b = rnd.choice(pieces), rnd.choice(pieces)
        cut = rnd.randrange(len(a) + 1)
        sql = a[:cut] + b[rnd.randrange(len(b) + 1):]
        with contextlib.suppress(SqlError):
            _check_result(execute(sql, SessionState(), FakeServer()))


def test_result_types_are_wire_friendly() -> None:
    """Only None/int/str/float/bytes reach the wire layer (decimals and datetimes as MariaDB's text)."""
    for sql, expected in CASES:
        if isinstance(expected, ResultSet):
            _check_result(execute(sql, SessionState(), FakeServer()))


def test_unsupported_never_silently_ok() -> None:
    for sql in ("CREATE TABLE db.t (a int)", "DROP DATABASE x", "ALTER TABLE db.t ADD c int", "GRANT ALL ON *.* TO x",
                "FLUSH PRIVILEGES", "PURGE BINARY LOGS BEFORE NOW()", "RESET SLAVE", "SHUTDOWN", "INSTALL PLUGIN x",
                "LOAD DATA INFILE 'x' INTO TABLE t", "CALL p()", "PREPARE s FROM 'SELECT 1'", "HANDLER t OPEN",
                "SAVEPOINT x", "RELEASE SAVEPOINT x", "SIGNAL SQLSTATE '45000'", "WITH x AS (SELECT 1) SELECT 1",
                "VALUES (1)", "BINLOG 'abc'", "CACHE INDEX t IN k", "ANALYZE TABLE t", "CHECKSUM TABLE t"):
        with pytest.raises(SqlError) as ei:
            execute(sql, SessionState(), FakeServer())
        assert ei.value.code in (1235, 1046, 1064), sql


def test_version_of_executable_comments_follows_server_version() -> None:
    old = FakeServer(version="10.5.1-MariaDB")
    s = SessionState()
    execute("/*!100600 SET @x=1 */", s, old)
    assert "x" not in s.user_vars
    execute("/*!100501 SET @x=1 */", s, old)
    assert s.user_vars["x"] == 1


def test_mysql_8_replica_statements() -> None:
    """A MySQL 8 replica (spec 3.2): SELECT @@GLOBAL.SERVER_ID and the dual SET forms work; the MySQL-only
    variables answer 1193, which it tolerates."""
    s, server = SessionState(), FakeServer()
    assert execute("SELECT @@GLOBAL.SERVER_ID", s, server).rows == [(1,)]
    execute("SET @master_heartbeat_period = 30000000000, @source_heartbeat_period = 30000000000", s, server)
    execute("SET @master_binlog_checksum = @@global.binlog_checksum, "
            "@source_binlog_checksum = @@global.binlog_checksum", s, server)
    assert execute("SELECT @source_binlog_checksum", s, server).rows == [("CRC32",)]
    for var in ("GTID_MODE", "SERVER_UUID"):
        with pytest.raises(SqlError) as ei:
            execute(f"SELECT @@GLOBAL.{var}", s, server)
        assert (ei.value.code, ei.value.message) == (1193, f"Unknown system variable '{var}'")


def test_show_binlog_events_errors_come_after_the_column_metadata() -> None:
    """mysql_show_binlog_events sends the columns before it can fail: the error says so for the wire layer."""
    with pytest.raises(SqlError) as ei:
        execute("SHOW BINLOG EVENTS IN 'nosuch'", SessionState(), FakeServer())
    assert ei.value.after_columns == ["Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info"]
    with pytest.raises(SqlError) as ei:
        execute("SELECT @@nosuch", SessionState(), FakeServer())
    assert ei.value.after_columns is None
