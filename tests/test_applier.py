"""binlogd-apply end to end: real primaries -> the applier process -> a real target, compared with a real replica.

Every test starts private MariaDB 10.11 servers (tests/harness) and runs `python -m applier.cli` as a
subprocess. Ground truth is a real 10.11 replica of the same primary: the target must end with the same table
checksums, and the applier's stored position (binlogd_apply.channel_position) must reach the primary's end.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.constants import (
    BINLOG_MAGIC,
    CRC_LEN,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    XID_EVENT,
)
from binlogd.protocol.events import (
    FormatDescriptionBody,
    GtidBody,
    QueryBody,
    TableMapBody,
    XidBody,
    build_event,
    encode_format_description,
    encode_gtid,
    encode_query,
    encode_xid,
    iter_binlog,
    parse_event,
    parse_header,
)

from tests.harness import REPO_ROOT, MariaDB, free_port
from tests.harness.applier import ApplierProc

DBS = ("d1", "d2")


# ---- the applier process -------------------------------------------------------------------------------------


def url(server: MariaDB | Any, query: str = "") -> str:
    return f"mysql://root@127.0.0.1:{server.port}" + (f"?{query}" if query else "")


def stored_position(target: MariaDB, channel: str = "") -> tuple[str, int] | None:
    try:
        rows = target.query("SELECT log_file, log_pos FROM binlogd_apply.channel_position WHERE channel=%s", channel)
    except pymysql.MySQLError:
        return None
    return (str(rows[0][0]), int(rows[0][1])) if rows else None


def wait_applied(target: MariaDB, proc: ApplierProc, want: tuple[str, int], channel: str = "",
                 timeout: float = 60.0, log_from: int = 0) -> None:
    """Until the stored position is `want`; fails at once when the applier dies or logs an ERROR after `log_from`."""
    deadline = time.monotonic() + timeout
    while True:
        got = stored_position(target, channel)
        if got == want:
            return
        if not proc.alive or time.monotonic() > deadline or " ERROR " in proc.log()[log_from:]:
            pytest.fail(f"applier channel {channel!r} at {got}, wanted {want} (alive={proc.alive})\n"
                        + proc.log()[-4000:])
        time.sleep(0.05)


def wait_lock_wait(target: MariaDB, proc: ApplierProc, statement: str, context: Any,
                   timeout: float = 120.0) -> tuple[str, int]:
    """Until a target transaction running `statement` (a prefix) is in LOCK WAIT; returns (state, rows modified).

    InnoDB refreshes its INNODB_TRX snapshot only when nobody read it for 0.1 s (trx0i_s.cc,
    CACHE_MIN_IDLE_TIME_US): polling it faster returns the first snapshot for ever, which on a loaded machine was
    taken before the applier reached the lock (the old 20 ms poll hit its 120 s deadline that way). Hence 0.15 s.
    """
    deadline = time.monotonic() + timeout
    like = statement.replace("%", "\\%").replace("_", "\\_") + "%"
    while True:
        rows = target.query("SELECT trx_state, trx_rows_modified FROM information_schema.INNODB_TRX"
                            " WHERE trx_query LIKE %s", like)
        if rows and rows[0][0] == "LOCK WAIT":
            return str(rows[0][0]), int(rows[0][1])
        if not proc.alive or time.monotonic() > deadline:
            pytest.fail(f"no LOCK WAIT in {statement!r} (alive={proc.alive}, last {rows}): {context}\n"
                        + proc.log()[-4000:])
        time.sleep(0.15)


def start_replica(mariadb: Any, primary: MariaDB, name: str, server_id: int, mode: str = "REPLICATE") -> MariaDB:
    replica = mariadb(name, server_id)
    replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
    replica.set_skip_mode(mode)  # type: ignore[arg-type]
    replica.start_slave()
    return replica


# ---- the workload -------------------------------------------------------------------------------------------

TYPES_DDL = """
CREATE TABLE d1.types (
  id INT PRIMARY KEY AUTO_INCREMENT,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  de DECIMAL(20,6), de0 DECIMAL(5,0), de38 DECIMAL(38,30), f FLOAT, d DOUBLE,
  b1 BIT(1), b13 BIT(13), b64 BIT(64),
  dt DATE, tm TIME, tm3 TIME(3), tm6 TIME(6), dtm DATETIME, dtm2 DATETIME(2), dtm6 DATETIME(6),
  ts TIMESTAMP NULL DEFAULT NULL, ts4 TIMESTAMP(4) NULL DEFAULT NULL, y YEAR,
  c CHAR(10), c255 CHAR(255), vc VARCHAR(100), vcl VARCHAR(1000), bn BINARY(4), vb VARBINARY(300),
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB, tt TINYTEXT, tx TEXT, lt LONGTEXT,
  lat VARCHAR(20) CHARACTER SET latin1, e ENUM('a','b','c'), s SET('x','y','z'), j JSON, g GEOMETRY
) ENGINE=InnoDB
"""

TYPES_ROWS = [
    # extremes
    "INSERT INTO d1.types VALUES (NULL, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,"
    " -9223372036854775808, 18446744073709551615, -99999999999999.999999, 99999, -0.123456789012345678901234567891,"
    " -1.5e38, 1.7976931348623157e308, b'1', b'1010101010101', b'1111111111111111111111111111111111111111111111111111"
    "111111111111', '9999-12-31', '-838:59:59', '838:59:58.999', '-00:00:01.000001', '9999-12-31 23:59:59',"
    " '1000-01-01 00:00:00.01', '2024-02-29 12:34:56.789012', '2038-01-19 03:14:07', '1970-01-01 00:00:01.0001',"
    " 2155, 'abc', REPEAT('x', 255), 'héllo wörld ✓', REPEAT('é', 400), x'00ff0a00', x'deadbeef00',"
    " x'01', REPEAT('b', 3000), REPEAT('m', 70000), REPEAT('l', 100), 'tiny', 'text', REPEAT('long ', 1000),"
    " 'caf\u00e9', 'c', 'x,z', '{\"k\": [1, 2, {\"n\": null}]}', ST_GeomFromText('POINT(1 2)'))",
    # all NULL
    "INSERT INTO d1.types (id) VALUES (NULL)",
    # ordinary values, negatives, fractions, emoji
    "INSERT INTO d1.types (ti, tiu, si, i, bi, de, de0, de38, f, d, b13, dt, tm, tm3, dtm, dtm2, ts, y, c, vc,"
    " e, s, j, g, tx) VALUES (-1, 0, -2, 42, 1234567890123, 0.5, -7, 1.000000000000000000000000000001, 3.25,"
    " -2.5e-10, b'0', '2000-02-29', '00:00:00', '-01:02:03.4', '2001-02-03 04:05:06', '2001-02-03 04:05:06.7',"
    " '2001-02-03 04:05:06', 1901, '', '😀 emoji', 'b', '', '[]',"
    " ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), '')",
]

WORKLOAD = [
    "CREATE DATABASE d1 CHARACTER SET utf8mb4",
    "CREATE DATABASE d2 CHARACTER SET utf8mb4",
    TYPES_DDL,
    *TYPES_ROWS,
    "SET sql_mode=''; INSERT INTO d1.types (dt, dtm, ts, y) VALUES ('0000-00-00', '0000-00-00 00:00:00', "
    "'0000-00-00 00:00:00', 0)",
    # updates and deletes by primary key
    "UPDATE d1.types SET vc='updated', de=de+1, tm6='12:00:00.5', lb=NULL WHERE id=1",
    "UPDATE d1.types SET ti=7 WHERE id IN (2, 3)",
    "DELETE FROM d1.types WHERE id=2",
    # a table without a primary key, with duplicate rows
    "CREATE TABLE d2.nopk (a INT, b VARCHAR(10), f FLOAT) ENGINE=InnoDB",
    "INSERT INTO d2.nopk VALUES (1,'x',1.1),(1,'x',1.1),(2,'y',NULL),(3,NULL,2.5)",
    "DELETE FROM d2.nopk WHERE a=1 LIMIT 1",
    "UPDATE d2.nopk SET b='z' WHERE a=2",
    # generated columns
    "CREATE TABLE d2.gen (id INT PRIMARY KEY, a INT, v INT AS (a*2) VIRTUAL, s INT AS (a+1) PERSISTENT)",
    "INSERT INTO d2.gen (id, a) VALUES (1, 10), (2, 20)",
    "UPDATE d2.gen SET a=a+5 WHERE id=1",
    # a transaction over two databases; a rolled back one
    "BEGIN; INSERT INTO d2.nopk VALUES (10,'t',0); UPDATE d1.types SET c='in trx' WHERE id=3;"
    " INSERT INTO d2.gen (id, a) VALUES (3, 30); COMMIT",
    "BEGIN; INSERT INTO d2.nopk VALUES (11,'rolled',0); ROLLBACK",
    # non-transactional tables: autocommit (BEGIN ... COMMIT queries) and a mixed transaction rolled back
    "CREATE TABLE d2.my (a INT PRIMARY KEY, b VARCHAR(10)) ENGINE=MyISAM",
    "INSERT INTO d2.my VALUES (1, 'one'), (2, 'two')",
    "BEGIN; INSERT INTO d2.my VALUES (3, 'kept'); INSERT INTO d2.gen (id, a) VALUES (9, 9); ROLLBACK",
    # statement-format status variables (in ROW format they only shape the rows)
    "CREATE TABLE d2.st (id INT AUTO_INCREMENT PRIMARY KEY, ts TIMESTAMP(6) NULL, t VARCHAR(50), r DOUBLE,"
    " li BIGINT, u VARCHAR(30), dec_v DECIMAL(10,3), lat VARCHAR(10) CHARACTER SET latin1)",
    "SET time_zone='+05:00'; INSERT INTO d2.st (ts, t) VALUES ('2024-01-01 10:00:00', 'tz'), (NOW(6), 'now')",
    "SET @s='héllo', @i=-42, @u=18446744073709551615, @dv=12.5, @n=NULL, @f=1.5e10;"
    " INSERT INTO d2.st (t, li, u, dec_v, r) VALUES (@s, @i, @u, @dv, @f), (@n, @n, @n, @n, @n)",
    "INSERT INTO d2.st (t, r) VALUES ('rand', RAND()), ('rand2', RAND(7))",
    "INSERT INTO d2.st (t, li) VALUES ('lid', LAST_INSERT_ID())",
    "SET sql_mode='PIPES_AS_CONCAT'; INSERT INTO d2.st (t) VALUES ('a' || 'b')",
    "SET auto_increment_increment=5, auto_increment_offset=3; INSERT INTO d2.st (t) VALUES ('ai1'), ('ai2')",
    "CREATE TABLE d2.parent (id INT PRIMARY KEY) ENGINE=InnoDB",
    "CREATE TABLE d2.child (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES d2.parent(id)) ENGINE=InnoDB",
    "SET foreign_key_checks=0; INSERT INTO d2.child VALUES (1, 99)",
    # DDL: alter, rename, create like, drop; default database
    "USE d1; ALTER TABLE types ADD COLUMN extra INT DEFAULT 5",
    "USE d1; INSERT INTO types (id, extra) VALUES (100, 6)",
    "RENAME TABLE d2.nopk TO d2.nopk2",
    "CREATE TABLE d2.types_copy LIKE d1.types",
    "INSERT INTO d2.types_copy SELECT * FROM d1.types",
    "CREATE TABLE d2.dropme (a INT)",
    "DROP TABLE d2.dropme",
    # skip_replication sessions (applied in REPLICATE mode)
    "SET skip_replication=1; INSERT INTO d2.st (t) VALUES ('flagged'); UPDATE d1.types SET ti=1 WHERE id=1",
    "DELETE FROM d1.types WHERE id=4",
]


def run_workload(primary: MariaDB, statements: list[str]) -> None:
    for sql in statements:
        primary.execute(sql)


def latin1_statement(primary: MariaDB) -> None:
    """A statement sent in latin1 (character_set_client=latin1): its bytes must be applied as latin1."""
    conn = primary.connect(charset="latin1")
    try:
        conn.query("INSERT INTO d2.st (t, lat) VALUES ('caf\xe9 latin1', 'na\xefve')".encode("latin1"))
    finally:
        conn.close()


# ---- tests ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["ROW", "STATEMENT", "ROW-compressed"])
def test_apply_matches_real_replica(mariadb: Any, applier: Any, fmt: str) -> None:
    """Every column type, DML, DDL, transactions, status variables: target == real replica == primary.

    ROW-compressed: `--log-bin-compress` makes the primary write QUERY_COMPRESSED and *_ROWS_COMPRESSED_V1 events.
    """
    compress = ("--log-bin-compress", "--log-bin-compress-min-len=10") if fmt.endswith("compressed") else ()
    primary = mariadb("primary", 1, "--log-bin=mysql-bin", f"--binlog-format={fmt.split('-')[0]}", *compress)
    replica = start_replica(mariadb, primary, "replica", 2)
    target = mariadb("target", 3)
    run_workload(primary, WORKLOAD[:8])  # some history before the applier starts
    proc = applier(target, f"--channel==mysql://root@127.0.0.1:{primary.port}")
    run_workload(primary, WORKLOAD[8:])
    latin1_statement(primary)
    want = primary.master_status()
    replica.wait_slave_pos(*want)
    wait_applied(target, proc, want)
    expected = replica.table_checksums(DBS)
    assert len(expected) == 8
    assert target.table_checksums(DBS) == expected
    assert primary.table_checksums(DBS) == expected
    # the values themselves, not only checksums, for the trickiest columns
    cols = "id, de, de38, f, b64, tm, tm6, dtm6, ts4, c255 = REPEAT('x', 255), vcl, lat, j, ST_AsText(g), y"
    assert target.query(f"SELECT {cols} FROM d1.types ORDER BY id") == \
        replica.query(f"SELECT {cols} FROM d1.types ORDER BY id")
    assert "Traceback" not in proc.log()
    if compress:  # the compressed event types really were used
        types = {parse_header(ev).type_code for _, ev in iter_binlog((primary.datadir / want[0]).read_bytes())}
        assert {QUERY_COMPRESSED_EVENT, WRITE_ROWS_COMPRESSED_EVENT_V1, UPDATE_ROWS_COMPRESSED_EVENT_V1} <= types


# ---- WL#4033: ignorable and unknown events in a crafted stream ---------------------------------------------------


class _BinlogWriter:
    """A binlog file built with the project's encoders (protocol/events.build_event), CRC32, server_id 1."""

    def __init__(self) -> None:
        self.buf = bytearray(BINLOG_MAGIC)
        self.seq = 0
        fde = FormatDescriptionBody.mariadb_10_11("10.11.19-MariaDB-log")
        self.add(FORMAT_DESCRIPTION_EVENT, encode_format_description(fde))

    def add(self, type_code: int, body: bytes, flags: int = 0) -> int:
        end = len(self.buf) + HEADER_LEN + len(body) + CRC_LEN
        self.buf += build_event(type_code=type_code, body=body, checksum=True, timestamp=1_700_000_000,
                                server_id=1, log_pos=end, flags=flags)
        return end

    def ddl(self, sql: str, db: str = "") -> int:
        self.seq += 1
        self.add(GTID_EVENT, encode_gtid(GtidBody(self.seq, 0, FL_STANDALONE)))
        return self.add(QUERY_EVENT, encode_query(QueryBody(1, 0, 0, db.encode(), sql.encode())))

    def trx(self, sql: str) -> int:
        self.seq += 1
        self.add(GTID_EVENT, encode_gtid(GtidBody(self.seq, 0, 0)))
        self.add(QUERY_EVENT, encode_query(QueryBody(1, 0, 0, b"", sql.encode())))
        return self.add(XID_EVENT, encode_xid(XidBody(self.seq)))


def test_ignorable_and_unknown_events(mariadb: Any, binlogd: Any, applier: Any, harness_dir: Path) -> None:
    """An unknown type flagged IGNORABLE (0x80) is skipped; an unknown type without it stops the channel."""
    w = _BinlogWriter()
    w.ddl("CREATE DATABASE c", db="c")
    w.ddl("CREATE TABLE c.t (a INT PRIMARY KEY) ENGINE=InnoDB")
    w.trx("INSERT INTO c.t VALUES (1)")
    w.add(150, b"an event from the future", flags=LOG_EVENT_IGNORABLE_F)
    after_two = w.trx("INSERT INTO c.t VALUES (2)")
    unknown_end = w.add(151, b"not ignorable")
    w.trx("INSERT INTO c.t VALUES (3)")
    src = harness_dir / "crafted"
    src.mkdir()
    (src / "mysql-bin.000001").write_bytes(bytes(w.buf))
    (src / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    server = binlogd(["--binlog-dir", str(src), "--server-id", "1"])
    target = mariadb("target", 3)
    admin_port = free_port()
    proc = applier(target, f"--channel=crafted=mysql://root@127.0.0.1:{server.port}?gtid=no",
                   f"--admin-port={admin_port}")
    deadline = time.monotonic() + 30
    while "Unknown event code" not in proc.log():
        assert proc.alive and time.monotonic() < deadline, proc.log()
        time.sleep(0.05)
    assert [r[0] for r in target.query("SELECT a FROM c.t ORDER BY a")] == [1, 2]
    assert stored_position(target, "crafted") == ("mysql-bin.000001", after_two)
    conn = pymysql.connect(host="127.0.0.1", port=admin_port, user="root", password="", ssl_disabled=True,
                           cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE 'crafted' STATUS")
            st = cur.fetchone()
    finally:
        conn.close()
    assert st["Slave_SQL_Running"] == "No" and st["Slave_IO_Running"] == "Yes"  # the IO side reads on (10.11)
    assert st["Last_SQL_Errno"] == 1594
    assert f"Unknown event code 151 (not ignorable) in mysql-bin.000001 at end_log_pos {unknown_end}" in \
        st["Last_SQL_Error"]
    assert st["Exec_Master_Log_Pos"] == after_two and st["Relay_Master_Log_File"] == "mysql-bin.000001"
    assert "skipped ignorable event of unknown type 150" in proc.log()


# ---- seed WL234 / MDEV-225: the three skip modes -----------------------------------------------------------------

SKIP_WORKLOAD = [
    "CREATE DATABASE d1",
    "CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
    "INSERT INTO d1.t VALUES (1, 'plain')",
    "SET skip_replication=1; INSERT INTO d1.t VALUES (2, 'flagged')",
    "SET skip_replication=1; BEGIN; INSERT INTO d1.t VALUES (3, 'flagged trx'); UPDATE d1.t SET v='f-upd' WHERE id=1;"
    " COMMIT",
    "SET skip_replication=1; CREATE TABLE d1.flagged_ddl (a INT)",
    "INSERT INTO d1.t VALUES (4, 'plain again')",
    "SET skip_replication=1; INSERT INTO d1.t VALUES (5, 'flagged')",
    # a MariaDB primary withholding the last events (FILTER_ON_MASTER) leaves its replicas' positions behind
    # until the next unflagged event: end with one
    "INSERT INTO d1.t VALUES (6, 'plain end')",
]


def _flagged_changes(binlog: Path) -> list[str]:
    """The flagged (0x8000) changes of a binlog: DDL texts and `db.table` of flagged TABLE_MAPs (ours excluded)."""
    out = []
    alg = 1
    for _, ev in iter_binlog(binlog.read_bytes()):
        h = parse_header(ev)
        if h.type_code == FORMAT_DESCRIPTION_EVENT:
            alg = ev[-CRC_LEN - 1]
        if not h.flags & LOG_EVENT_SKIP_REPLICATION_F:
            continue
        body = parse_event(ev, alg).body
        if isinstance(body, TableMapBody) and body.db != b"binlogd_apply":
            out.append(f"{body.db.decode()}.{body.table.decode()}")
        elif isinstance(body, QueryBody) and body.query.upper() not in (b"BEGIN", b"COMMIT"):
            out.append(body.query.decode())
    return sorted(out)


def test_skip_modes(mariadb: Any, applier: Any) -> None:
    """REPLICATE applies flagged events and keeps the flag in the target's binlog; the FILTER modes drop them."""
    primary = mariadb.primary()
    reference = start_replica(mariadb, primary, "replica", 2, "FILTER_ON_SLAVE")
    targets = {mode: mariadb(f"t-{mode.lower()}", 10 + i, "--log-bin=mysql-bin", "--binlog-format=ROW")
               for i, mode in enumerate(("REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER"))}
    procs = {mode: applier(t, f"--channel==mysql://root@127.0.0.1:{primary.port}",
                           f"--replicate-events-marked-for-skip={mode}", f"--server-id={100 + i}")
             for i, (mode, t) in enumerate(targets.items())}
    run_workload(primary, SKIP_WORKLOAD)
    want = primary.master_status()
    reference.wait_slave_pos(*want)
    for mode, t in targets.items():
        wait_applied(t, procs[mode], want)
    filtered = reference.table_checksums(["d1"])
    assert [r[0] for r in reference.query("SELECT id FROM d1.t ORDER BY id")] == [1, 4, 6]
    assert targets["REPLICATE"].table_checksums(["d1"]) == primary.table_checksums(["d1"])
    assert targets["FILTER_ON_SLAVE"].table_checksums(["d1"]) == filtered
    assert targets["FILTER_ON_MASTER"].table_checksums(["d1"]) == filtered
    # REPLICATE: the target's own binlog keeps the flag (its replicas can filter in turn)
    flagged = _flagged_changes(primary.datadir / "mysql-bin.000001")
    assert flagged == ["CREATE TABLE d1.flagged_ddl (a INT)", "d1.t", "d1.t", "d1.t", "d1.t"]
    assert _flagged_changes(targets["REPLICATE"].datadir / "mysql-bin.000001") == flagged
    assert _flagged_changes(targets["FILTER_ON_SLAVE"].datadir / "mysql-bin.000001") == []
    # applied groups keep the source's GTID in the target's binlog, as on a MariaDB replica
    source_state = str(primary.query("SELECT @@gtid_binlog_state")[0][0])
    assert source_state.startswith("0-1-")
    for t in targets.values():
        assert source_state in str(t.query("SELECT @@gtid_binlog_state")[0][0]).split(",")


def test_bad_options_exit_2(tmp_path: Path) -> None:
    """Bad command lines: one clear line on stderr and exit status 2, before anything connects."""
    cases = {
        ("--target=nope", "--channel==mysql://root@127.0.0.1:1"): "expected mysql://",
        ("--target=mysql://root@h:1", "--channel=nourl"): "expected NAME=mysql://",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1?gtid=maybe"): "gtid must be slave_pos or no",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1", "--channel=a=mysql://h:2"): "given twice",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1",
         "--replicate-events-marked-for-skip=SOMETIMES"): "is not one of",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1", "--replicate-rewrite-db=nodelimiter"): "",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1", "--parallel-apply=0"): "must be in 1..64",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1", "--parallel-min-bytes=-1"): "must be 0 or more",
        ("--target=mysql://root@h:1", "--channel=a=mysql://h:1", "--row-apply=fast"): "invalid choice",
    }
    for args, text in cases.items():
        r = subprocess.run([sys.executable, "-m", "binlogd.applier.cli", *args], cwd=REPO_ROOT, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert text in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    r = subprocess.run([sys.executable, "-m", "binlogd.applier.cli", "--help"], cwd=REPO_ROOT, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and "FILTER_ON_SLAVE" in r.stdout and "--replicate-wild-do-table" in r.stdout


# ---- crash safety --------------------------------------------------------------------------------------------


def test_kill9_mid_transaction(mariadb: Any, applier: Any) -> None:
    """kill -9 while a big transaction is half applied; the restarted applier ends identical to a real replica.

    A test session on the target holds a row lock that the big transaction's last statement needs, so the
    applier is provably inside it (INNODB_TRX: LOCK WAIT with 4 001 rows modified) when it is killed.
    """
    primary = mariadb.primary()
    replica = start_replica(mariadb, primary, "replica", 2)
    target = mariadb("target", 3)
    primary.execute("CREATE DATABASE d1; USE d1; CREATE TABLE d1.seq (n INT PRIMARY KEY) ENGINE=InnoDB;"
                    " INSERT INTO d1.seq SELECT seq FROM seq_1_to_2000;"
                    " CREATE TABLE d1.nopk (a INT, b VARCHAR(40)) ENGINE=InnoDB;"
                    " CREATE TABLE d1.pk (id INT PRIMARY KEY, b VARCHAR(40)) ENGINE=InnoDB;"
                    " INSERT INTO d1.pk VALUES (0, 'locked row')")
    channel = f"--channel==mysql://root@127.0.0.1:{primary.port}"
    proc = applier(target, channel)
    wait_applied(target, proc, primary.master_status())
    lock = target.connect(autocommit=False)
    with lock.cursor() as cur:
        cur.execute("SELECT * FROM d1.pk WHERE id = 0 FOR UPDATE")
    for i in range(3):  # big transactions: many rows events each; the first one ends on the locked row
        primary.execute(f"BEGIN; INSERT INTO d1.nopk SELECT n, REPEAT('x', 30) FROM d1.seq;"
                        f" INSERT INTO d1.pk SELECT n + {i * 10000}, 'y' FROM d1.seq;"
                        f" DELETE FROM d1.nopk WHERE a = {i + 1} LIMIT 1; UPDATE d1.pk SET b='u{i}' WHERE id = 0;"
                        " COMMIT")
    want = primary.master_status()
    rows_modified = wait_lock_wait(target, proc, "BINLOG '",  # row statements go as BINLOG (applier/native.py)
                                   (stored_position(target), want))[1]
    assert rows_modified == 2000 + 2000 + 1  # the big transaction's inserts and delete are applied, uncommitted
    proc.kill9()
    lock.rollback()
    lock.close()
    assert stored_position(target) != want
    proc2 = applier(target, channel)
    replica.wait_slave_pos(*want)
    wait_applied(target, proc2, want)
    assert target.table_checksums(["d1"]) == replica.table_checksums(["d1"]) == primary.table_checksums(["d1"])
    assert target.query("SELECT COUNT(*) FROM d1.nopk") == [(6000 - 3,)]
    assert target.query("SELECT b FROM d1.pk WHERE id = 0") == [("u2",)]


def test_reconnects_after_source_and_target_restarts(mariadb: Any, applier: Any) -> None:
    """A vanishing source is retried (file/pos mode here); a restarted target is reconnected; nothing lost."""
    primary = mariadb.primary()
    target = mariadb("target", 3)
    primary.execute("CREATE DATABASE d1; CREATE TABLE d1.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;"
                    " INSERT INTO d1.t VALUES (1, 1)")
    admin_port = free_port()
    proc = applier(target, f"--channel=src=mysql://root@127.0.0.1:{primary.port}?gtid=no&retry=0.2&heartbeat=1",
                   f"--admin-port={admin_port}")
    wait_applied(target, proc, primary.master_status(), "src")
    admin = pymysql.connect(host="127.0.0.1", port=admin_port, user="root", password="", ssl_disabled=True)
    with admin, admin.cursor() as cur, pytest.raises(pymysql.MySQLError) as err:
        cur.execute("SET GLOBAL replicate_events_marked_for_skip=FILTER_ON_SLAVE")  # refused while running
    assert err.value.args[0] == 1198
    primary.restart()
    primary.execute("INSERT INTO d1.t VALUES (2, 2); UPDATE d1.t SET v = 10 WHERE id = 1")
    wait_applied(target, proc, primary.master_status(), "src")
    target.restart()
    primary.execute("INSERT INTO d1.t VALUES (3, 3)")
    wait_applied(target, proc, primary.master_status(), "src")
    assert target.query("SELECT * FROM d1.t ORDER BY id") == [(1, 10), (2, 2), (3, 3)]
    assert "reconnecting in 0.2 s" in proc.log()


def test_filter_on_master_through_binlogd_reaches_the_end(mariadb: Any, binlogd: Any, applier: Any,
                                                          harness_dir: Path) -> None:
    """FILTER_ON_MASTER from binlogd: flagged events are withheld by binlogd, and its fake GTID_LIST at the end
    moves the stored position to the end even though the last events were flagged."""
    primary = mariadb.primary()
    run_workload(primary, SKIP_WORKLOAD[:-1])  # ends with a flagged transaction
    primary.kill9()  # no STOP event after it: the binlog really ends with flagged events
    src = harness_dir / "binlogs"
    src.mkdir()
    binlogs = sorted(primary.datadir.glob("mysql-bin.0*"))
    for f in binlogs:
        (src / f.name).write_bytes(f.read_bytes())
    (src / "mysql-bin.index").write_text("".join(f"./{f.name}\n" for f in binlogs))
    *_, (_, last) = iter_binlog((src / binlogs[-1].name).read_bytes())
    assert parse_header(last).flags & LOG_EVENT_SKIP_REPLICATION_F
    server = binlogd(["--binlog-dir", str(src), "--server-id", "1"])
    target = mariadb("target", 3)
    proc = applier(target, f"--channel==mysql://root@127.0.0.1:{server.port}",
                   "--replicate-events-marked-for-skip=FILTER_ON_MASTER")
    wait_applied(target, proc, (binlogs[-1].name, binlogs[-1].stat().st_size))
    assert [r[0] for r in target.query("SELECT id FROM d1.t ORDER BY id")] == [1, 4]
    assert not target.query("SHOW TABLES IN d1 LIKE 'flagged_ddl'")


def test_error_stops_channel_whole_group_rolled_back(mariadb: Any, applier: Any) -> None:
    """A duplicate key on the target stops the channel with MariaDB's text; none of the transaction stays applied;
    START SLAVE on the admin port after the conflict is removed resumes at that transaction."""
    primary = mariadb.primary()
    target = mariadb("target", 3)
    primary.execute("CREATE DATABASE d1; CREATE TABLE d1.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    admin_port = free_port()
    proc = applier(target, f"--channel=c=mysql://root@127.0.0.1:{primary.port}", f"--admin-port={admin_port}")
    wait_applied(target, proc, primary.master_status(), "c")
    before = stored_position(target, "c")
    target.query("INSERT INTO d1.t VALUES (3, 0)")  # the conflict, made on the target only
    primary.execute("BEGIN; INSERT INTO d1.t VALUES (1, 1); INSERT INTO d1.t VALUES (2, 2), (3, 3); COMMIT")
    want = primary.master_status()
    admin = pymysql.connect(host="127.0.0.1", port=admin_port, user="root", password="", ssl_disabled=True,
                            cursorclass=pymysql.cursors.DictCursor, autocommit=True)
    with admin:
        def status() -> dict[str, Any]:
            with admin.cursor() as cur:
                cur.execute("SHOW SLAVE 'c' STATUS")
                return dict(cur.fetchone())

        deadline = time.monotonic() + 30
        while (st := status())["Last_SQL_Errno"] == 0:
            assert time.monotonic() < deadline, st
            time.sleep(0.05)
        assert st["Last_SQL_Errno"] == 1062 and st["Slave_SQL_Running"] == "No"
        assert st["Last_SQL_Error"].startswith("Could not execute Write_rows_v1 event on table d1.t; Duplicate entry "
                                               "'3' for key 'PRIMARY', Error_code: 1062; handler error "
                                               "HA_ERR_FOUND_DUPP_KEY; the event's master log mysql-bin.000001")
        assert target.query("SELECT * FROM d1.t ORDER BY id") == [(3, 0)]  # nothing of the transaction
        assert stored_position(target, "c") == before and st["Exec_Master_Log_Pos"] == before[1]
        target.query("DELETE FROM d1.t WHERE id = 3")
        log_from = len(proc.log())
        with admin.cursor() as cur:
            cur.execute("START SLAVE 'c'")
        wait_applied(target, proc, want, "c", log_from=log_from)
    assert target.query("SELECT * FROM d1.t ORDER BY id") == [(1, 1), (2, 2), (3, 3)]
