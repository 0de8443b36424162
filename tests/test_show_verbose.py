"""`binlogd show -v` / `-vv` against the real mariadb-binlog for every MariaDB 10.11 column type: the text is the
same byte for byte (no differences to list), with NULLs, extreme and zero values, negative TIME fractions, long
CHAR (more than 255 bytes), compressed columns, UUID/INET4/INET6, JSON and geometry, for WRITE/UPDATE/DELETE rows;
and with log_bin_compress=ON, where both print the rows uncompressed in the BINLOG block."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_show_helpers import copy_binlogs, mariadb_binlog, show

pytestmark = pytest.mark.mariadb

COLUMNS = """ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, i INT, bi BIGINT, biu BIGINT UNSIGNED,
 de DECIMAL(10,3), de2 DECIMAL(65,30), de3 DECIMAL(4,4), fl FLOAT, db DOUBLE, bt BIT(13), b1 BIT(1), b64 BIT(64),
 dt DATE, tm TIME, tm3 TIME(3), tm6 TIME(6), dtm DATETIME, dtm2 DATETIME(2), dtm6 DATETIME(6),
 ts TIMESTAMP NULL, ts4 TIMESTAMP(4) NULL, yr YEAR,
 ch CHAR(5), chl CHAR(100) CHARACTER SET utf8mb4, vc VARCHAR(20), vcl VARCHAR(300), bn BINARY(4), vb VARBINARY(10),
 tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB, tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
 en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY, pt POINT,
 vcc VARCHAR(50) COMPRESSED, blc BLOB COMPRESSED, u UUID, i6 INET6, i4 INET4"""
ROWS = r"""
INSERT INTO d.t (id) VALUES (1);
INSERT INTO d.t VALUES (2, -128, 255, -32768, -8388608, -2147483648, -9223372036854775808, 18446744073709551615,
 -1234567.891, -12345678901234567890.123456789012345678901234567890, -0.0001, -1.5e-7, 3.141592653589793,
 b'1010101010101', b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
 '2024-02-29', '-838:59:59', '-01:02:03.456', '12:34:56.789012', '1000-01-01 00:00:00', '9999-12-31 23:59:59.99',
 '2024-01-31 12:00:00.000001', '2038-01-19 03:14:07', '2000-01-01 00:00:00.1234', 1901,
 'ab', REPEAT('é', 100), 'it''s\\ \n\t\0', REPEAT('v', 300), 'bi', 0x000102,
 'tiny', 'blob', 'medium', 'long', 'tt', 'tx', 'mt', 'lt',
 'b', 'x,z', '{"k": [1, 2]}', ST_GeomFromText('LINESTRING(0 0,1 1)'), POINT(1,2),
 REPEAT('c', 50), REPEAT('blob', 20), '123e4567-e89b-12d3-a456-426614174000', '::1', '192.168.0.1');
INSERT INTO d.t (id, tm, tm3, tm6, dt, dtm, yr, fl, db, de, ts, ts4, bt)
 VALUES (3, '00:00:00', '-00:00:00.5', '-00:00:01.000001', '0000-00-00', '0000-00-00 00:00:00', 0, 0, -0.0, 0,
 '1970-01-01 00:00:01', '1970-01-01 00:00:01.0001', b'0');
INSERT INTO d.t (id, fl, db, de2) VALUES (4, 3.4e38, -1.7976931348623157e308, 99999999999999999999999999999999999.9);
UPDATE d.t SET vc='upd', i=i+1, tm6='-00:00:00.000001' WHERE id=2;
UPDATE d.t SET en='c', st='' WHERE id IN (1, 3);
DELETE FROM d.t WHERE id=3;
"""


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "log_bin_compress"])
def test_verbose_text_equals_mariadb_binlog_for_every_type(mariadb, harness_dir: Path, compress: bool) -> None:
    extra = ("--log-bin-compress=ON", "--log-bin-compress-min-len=10") if compress else ()
    primary = mariadb("primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", *extra)
    primary.execute(f"CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, {COLUMNS})")
    primary.execute("SET sql_mode=''; " + ROWS)
    files = copy_binlogs(primary, harness_dir / "b")
    for opts in ((), ("-v",), ("-vv",)):
        ours = show(*opts, *files).stdout
        assert ours == mariadb_binlog(*opts, *files).stdout, opts
    assert ours.count(b"### UPDATE `d`.`t`") == 3 and ours.count(b"/* TIME(6) meta=6") >= 4
    if compress:
        assert b"\tWrite_compressed_rows: " in ours and b"\tQuery_compressed\t" in ours
