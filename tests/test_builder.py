"""binlogd.testing.builder: binlog files built from Python, checked against real MariaDB 10.11 components.

* the row encoding is compared byte for byte with what a real 10.11 primary writes for the same table and values
  (TABLE_MAP with binlog_row_metadata NO_LOG / MINIMAL / FULL, WRITE / UPDATE / DELETE_ROWS v1), and so are the
  GTID flags2 and the closing event of transactional (XID) and non-transactional (COMMIT query) groups;
* a stream that uses every builder call is decoded by `mariadb-binlog` from the files and with
  --read-from-remote-server from binlogd serving the directory, and by python-mysql-replication reading from
  binlogd, into exactly the events and values that were scripted (CRC32 and NONE);
* an event over 16 MiB, and groups appended while clients are connected;
* bad input: ValueError naming the field, and the files unchanged.
"""

from __future__ import annotations

import datetime as dt
import mmap
import re
import subprocess
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from binlogd.applier.rows import decode_rows, decode_table_map
from binlogd.protocol.constants import (
    INTVAR_EVENT,
    INTVAR_INSERT_ID,
    LOG_EVENT_SKIP_REPLICATION_F,
    WRITE_ROWS_EVENT_V1,
)
from binlogd.protocol.events import (
    GtidBody,
    IntvarBody,
    QueryBody,
    RowsBody,
    TableMapBody,
    encode_intvar,
    fde_checksum_alg,
    iter_binlog,
    parse_event,
)
from binlogd.protocol.row_encode import rows_data, table_map_body
from hypothesis import given, settings
from hypothesis import strategies as st
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication import event as repl_event
from pymysqlreplication import row_event as repl_row_event

from binlogd.testing.builder import BinlogBuilder
from binlogd.testing.columns import columns as parse_columns
from tests.harness import MariaDB, find_binary, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:'db' is deprecated:DeprecationWarning")

TS = 1_700_000_000
COLUMNS = [
    "a TINYINT", "b TINYINT UNSIGNED", "c SMALLINT", "d SMALLINT UNSIGNED", "e MEDIUMINT", "f INT",
    "g INT UNSIGNED", "h BIGINT", "i BIGINT UNSIGNED", "j FLOAT", "k DOUBLE", "l DECIMAL(10,2)", "m DECIMAL(30,12)",
    "n VARCHAR(20)", "o CHAR(5)", "p TEXT", "q BLOB", "r VARBINARY(10)", "s VARCHAR(300) CHARACTER SET latin1",
    "t DATE", "u DATETIME", "v DATETIME(3)", "w TIMESTAMP NULL", "x TIMESTAMP(6) NULL", "y TIME", "z TIME(2)",
    "za TIME(4)", "zb TIME(6)", "id INT NOT NULL PRIMARY KEY",
]
ROW_1 = (
    -5, 250, -300, 65000, -8000000, -70000, 4000000000, -5000000000, 18000000000000000000, 1.5, 2.25,
    Decimal("-123.45"), Decimal("123456789012345678.123456789012"), "héllo wörld", "ab", "some text",
    b"\x00\x01\xc3\xa9", b"bin", "latin", dt.date(2024, 2, 29), dt.datetime(2024, 1, 31, 12, 34, 56),
    dt.datetime(2024, 1, 31, 12, 34, 56, 789000), dt.datetime(2024, 1, 31, 12, 34, 56, tzinfo=dt.UTC),
    dt.datetime(2024, 1, 31, 12, 34, 56, 123456, tzinfo=dt.UTC), -dt.timedelta(hours=12, minutes=34, seconds=56),
    dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=500000),
    -dt.timedelta(seconds=1, microseconds=500000), -dt.timedelta(hours=1, microseconds=1), 1,
)
ROW_1_SQL = (
    "-5, 250, -300, 65000, -8000000, -70000, 4000000000, -5000000000, 18000000000000000000, 1.5, 2.25, -123.45, "
    "123456789012345678.123456789012, 'héllo wörld', 'ab', 'some text', x'0001c3a9', 'bin', 'latin', '2024-02-29', "
    "'2024-01-31 12:34:56', '2024-01-31 12:34:56.789', '2024-01-31 12:34:56', '2024-01-31 12:34:56.123456', "
    "'-12:34:56', '838:59:59.5', '-00:00:01.5', '-01:00:00.000001', 1"
)
ROW_2 = (*([None] * 28), 2)
# edge cases of the field metadata and packing: CHAR over 255 bytes, BINARY padding, 3-byte BLOB lengths, the
# widest DECIMAL, utf8mb3, DECIMAL without integer digits, odd fsp
EDGE_COLUMNS = ["c1 CHAR(100)", "c2 VARCHAR(100)", "c3 BINARY(4)", "c4 TINYTEXT", "c5 MEDIUMBLOB", "c6 LONGTEXT",
                "c7 DECIMAL(65,30)", "c8 MEDIUMINT UNSIGNED", "c9 VARCHAR(10) CHARACTER SET utf8mb3",
                "c10 DECIMAL(4,4)", "c11 CHAR(3) CHARACTER SET latin1", "c12 TIME(1)", "c13 DATETIME(6)"]
EDGE_ROW = ("é" * 100, "v" * 100, b"ab", "tiny", b"\0" * 70000, "long",
            Decimal("-12345678901234567890123456789012345.123456789012345678901234567890"), 16777215, "ümlaut",
            Decimal("-0.1234"), "a", -dt.timedelta(microseconds=500000), dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
EDGE_ROW_SQL = ("REPEAT('é', 100), REPEAT('v', 100), x'6162', 'tiny', REPEAT(0x00, 70000), 'long', "
                "-12345678901234567890123456789012345.123456789012345678901234567890, 16777215, 'ümlaut', -0.1234, "
                "'a', '-00:00:00.5', '9999-12-31 23:59:59.999999'")
ROW_2B = (*([None] * 5), 7, *([None] * 22), 2)


def _bin(name: str) -> str:
    path = find_binary(name)
    if path is None:
        pytest.fail(f"{name} not found")
    return path


def _events(path: Path) -> list[Any]:
    """Every event of a binlog file, decoded (protocol.events)."""
    data = path.read_bytes()
    out = []
    alg = None
    for _, raw in iter_binlog(data):
        if alg is None:
            alg = fde_checksum_alg(raw)
        out.append(parse_event(raw, alg, verify_crc=True))
    return out


def _files_state(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


# ---- the row encoding against a real primary ----------------------------------------------------------------


@pytest.mark.mariadb
def test_row_events_are_byte_identical_to_a_real_primary(mariadb: Any, tmp_path: Path) -> None:
    """The same table and values through a real 10.11 primary and through the builder: TABLE_MAP (all but the
    table id) and the rows-event bodies are identical for binlog_row_metadata NO_LOG, MINIMAL and FULL; so are
    the GTID flags2 and closing events of InnoDB (XID) and MyISAM (COMMIT query) groups, and of a DDL statement."""
    real = mariadb.primary("rows", 1, "--binlog-row-metadata=FULL", "--default-time-zone=+00:00")
    real.execute("CREATE DATABASE d CHARACTER SET utf8mb4; SET time_zone='+00:00'")
    real.execute(f"CREATE TABLE d.t ({', '.join(COLUMNS)}) ENGINE=InnoDB; CREATE TABLE d.m (f INT, n VARCHAR(20)) "
                 f"ENGINE=MyISAM; CREATE TABLE d.e ({', '.join(EDGE_COLUMNS)})")
    modes = ("FULL", "MINIMAL", "NO_LOG")
    for mode in modes:
        real.execute(f"SET GLOBAL binlog_row_metadata={mode}")
        real.execute(f"SET time_zone='+00:00'; INSERT INTO d.t VALUES ({ROW_1_SQL}), ({', '.join(['NULL'] * 28)}, 2)")
        real.execute("UPDATE d.t SET f=7 WHERE id=2")
        real.execute("DELETE FROM d.t WHERE id=2")
        real.execute("INSERT INTO d.m VALUES (1, 'x')")
        real.execute("DELETE FROM d.t")
        real.execute(f"SET time_zone='+00:00'; INSERT INTO d.e VALUES ({EDGE_ROW_SQL})")
    real.execute("FLUSH BINARY LOGS")
    theirs = [e for e in _events(real.datadir / "mysql-bin.000001") if e.header.type_code in (19, 23, 24, 25)]

    ours_tm: list[Any] = []
    for mode in modes:
        b = BinlogBuilder(tmp_path / mode, row_metadata=mode, timestamp=TS)
        b.statement("CREATE TABLE d.x (i INT)", db="d")
        with b.transaction() as t:
            t.insert("d", "t", COLUMNS, [ROW_1, ROW_2])
        with b.transaction() as t:
            t.update("d", "t", COLUMNS, [(ROW_2, ROW_2B)])
        with b.transaction() as t:
            t.delete("d", "t", COLUMNS, [ROW_2B])
        with b.transaction(commit="query") as t:
            t.insert("d", "m", ["f INT", "n VARCHAR(20)"], [(1, "x")])
        with b.transaction() as t:
            t.delete("d", "t", COLUMNS, [ROW_1])
        with b.transaction() as t:
            t.insert("d", "e", EDGE_COLUMNS, [EDGE_ROW])
        b.close()
        ours_tm += [e for e in _events(tmp_path / mode / b.file) if e.header.type_code in (19, 23, 24, 25)]
    assert len(ours_tm) == len(theirs) == 36
    for i, (o, r) in enumerate(zip(ours_tm, theirs, strict=True)):
        assert o.header.type_code == r.header.type_code, i
        assert o.header.flags == r.header.flags, i
        if isinstance(r.body, TableMapBody):
            assert isinstance(o.body, TableMapBody)
            assert {**vars_of(o.body), "table_id": 0} == {**vars_of(r.body), "table_id": 0}, f"event {i}"
        else:
            assert isinstance(o.body, RowsBody) and isinstance(r.body, RowsBody)
            assert o.body.flags == r.body.flags, f"event {i}"
            assert o.body.data == r.body.data, f"event {i}: {_first_diff(o.body.data, r.body.data)}"

    # group shapes: GTID flags2 and the closing event (first mode's groups: InnoDB x3, MyISAM, InnoDB x2)
    def shapes(events: list[Any]) -> list[tuple[Any, ...]]:
        out = []
        for k, e in enumerate(events):
            if isinstance(e.body, GtidBody) and not e.body.flags2 & 1:  # transactions, not DDL
                close = next(x for x in events[k + 1 :] if x.header.type_code in (16, 2))
                q = close.body.query if isinstance(close.body, QueryBody) else None
                out.append((e.header.flags, e.body.flags2, close.header.type_code, close.header.flags, q))
        return out

    def ddl_shapes(events: list[Any]) -> list[tuple[Any, ...]]:
        return [(e.header.flags, e.body.flags2, events[k + 1].header.type_code, events[k + 1].header.flags)
                for k, e in enumerate(events) if isinstance(e.body, GtidBody) and e.body.flags2 & 1]

    assert ddl_shapes(_events(tmp_path / "FULL" / "mysql-bin.000001")) == \
        ddl_shapes(_events(real.datadir / "mysql-bin.000001"))[1:2] == [(8, 41, 2, 0)]  # CREATE TABLE d.t
    real_shapes = shapes(_events(real.datadir / "mysql-bin.000001"))[:6]
    assert shapes(_events(tmp_path / "FULL" / "mysql-bin.000001")) == real_shapes
    assert [s[1] for s in real_shapes] == [12, 12, 12, 8, 12, 12]


def _first_diff(ours: bytes, theirs: bytes) -> str:
    n = next((k for k, (x, y) in enumerate(zip(ours, theirs, strict=False)) if x != y), min(len(ours), len(theirs)))
    return f"first difference at byte {n}: ours {ours[n - 4 : n + 12]!r}, MariaDB's {theirs[n - 4 : n + 12]!r}"


def vars_of(body: Any) -> dict[str, Any]:
    return {k: getattr(body, k) for k in body.__dataclass_fields__}


# ---- bad input ----------------------------------------------------------------------------------------------


@pytest.fixture
def built(tmp_path: Path) -> Iterator[tuple[BinlogBuilder, Path]]:
    b = BinlogBuilder(tmp_path / "bl", timestamp=TS)
    b.statement("CREATE TABLE d.t (id INT)", db="d")
    yield b, tmp_path / "bl"
    b.close()


@pytest.mark.parametrize(("column", "value", "field"), [
    ("a TINYINT", 128, "'a'"), ("a TINYINT UNSIGNED", -1, "'a'"), ("a INT UNSIGNED", 1 << 32, "'a'"),
    ("a BIGINT", 1 << 63, "'a'"), ("a INT", "1", "'a'"), ("a FLOAT", 1e39, "'a'"), ("a DOUBLE", float("nan"), "'a'"),
    ("a DECIMAL(5,2)", Decimal("1234.5"), "'a'"), ("a DECIMAL(5,2)", Decimal("1.234"), "'a'"),
    ("a VARCHAR(3)", "abcd", "'a'"), ("a CHAR(2)", "abc", "'a'"), ("a VARBINARY(2)", b"abc", "'a'"),
    ("a VARCHAR(3) CHARACTER SET latin1", "\u20ac", "'a'"), ("a TINYBLOB", b"x" * 256, "'a'"),
    ("a BLOB", "text for a blob", "'a'"), ("a DATE", dt.datetime(2024, 1, 1), "'a'"),
    ("a DATETIME", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "'a'"),
    ("a DATETIME(2)", dt.datetime(2024, 1, 1, 0, 0, 0, 123000), "'a'"),
    ("a TIMESTAMP", dt.datetime(2024, 1, 1), "'a'"), ("a TIMESTAMP", dt.datetime(2040, 1, 1, tzinfo=dt.UTC), "'a'"),
    ("a TIME", dt.timedelta(hours=839), "'a'"), ("a TIME", dt.timedelta(microseconds=5), "'a'"),
    ("a INT NOT NULL", None, "'a'"),
])
def test_value_that_does_not_fit_its_column(built: tuple[BinlogBuilder, Path], column: str, value: object,
                                            field: str) -> None:
    """ValueError naming the column; the transaction's earlier events are not written either."""
    b, d = built
    before = _files_state(d)
    with pytest.raises(ValueError, match=f"column {field}"), b.transaction() as t:
        t.query("INSERT INTO d.t VALUES (1)", db="d")
        t.insert("d", "t", [column], [(value,)])
    assert _files_state(d) == before
    assert b.gtid_state == "0-1-1"
    with b.transaction() as t:  # the builder is still usable and the sequence unchanged
        t.query("INSERT INTO d.t VALUES (1)", db="d")
    assert b.last_gtid() == "0-1-2"


@pytest.mark.parametrize(("spec", "field"), [
    ("a VARCHAR", "'a'"), ("a GEOMETRY", "'a'"), ("a DECIMAL(70,2)", "'a'"), ("a TIME(7)", "'a'"),
    ("a VARCHAR(3) CHARACTER SET koi8r", "'a'"), ("a TEXT UNSIGNED", "'a'"), ("a INT SIGNED WRONG", "'a'"),
])
def test_column_spec_the_builder_cannot_encode(built: tuple[BinlogBuilder, Path], spec: str, field: str) -> None:
    b, d = built
    before = _files_state(d)
    with pytest.raises(ValueError, match=f"column {field}"), b.transaction() as t:
        t.insert("d", "t", [spec], [(1,)])
    assert _files_state(d) == before


@pytest.mark.parametrize("name", ["mysql-bin.000001", "a/b", "", "bin.log", "x" * 201, "../up"])
def test_basename_that_is_not_a_binlog_base_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="basename="):
        BinlogBuilder(tmp_path, basename=name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.mariadb
def test_mariadb_base_names_have_no_extension(mariadb: Any) -> None:
    """Why the builder refuses a '.' in a base name: MariaDB drops the extension of --log-bin=foo.bar."""
    real = mariadb("ext", 1, "--log-bin=foo.bar")
    assert real.master_status()[0] == "foo.000001"
    assert (real.datadir / "foo.index").exists()


@pytest.mark.parametrize("name", ["other.000002", "mysql-bin.000001", "mysql-bin.2", "mysql-bin.000002/x", "x"])
def test_rotate_to_a_file_name_that_is_not_next(built: tuple[BinlogBuilder, Path], name: str) -> None:
    b, d = built
    before = _files_state(d)
    with pytest.raises(ValueError, match="next_file="):
        b.rotate(name)
    assert _files_state(d) == before
    assert b.rotate("mysql-bin.000009") == "mysql-bin.000009"


def test_event_over_4_gib(built: tuple[BinlogBuilder, Path]) -> None:
    """The size is checked before a byte is copied: an untouched anonymous mapping stands in for the payload."""
    b, d = built
    before = _files_state(d)
    with mmap.mmap(-1, (1 << 32) - 19 - 4 + 1) as huge:
        with pytest.raises(ValueError, match="over 4 GiB"):
            b.ignorable(100, huge)
        with pytest.raises(ValueError, match="over 4 GiB"), b.transaction() as t:
            t.query("INSERT INTO d.t VALUES (1)", db="d")
            t.ignorable(100, huge)
    assert _files_state(d) == before


def test_gtid_going_backwards(built: tuple[BinlogBuilder, Path]) -> None:
    b, d = built
    b.statement("CREATE TABLE d.u (id INT)", db="d", seq_no=10)
    b.statement("CREATE TABLE d.v (id INT)", db="d", domain=1, seq_no=3)
    before = _files_state(d)
    for seq in (10, 9, 1):
        with pytest.raises(ValueError, match=f"seq_no={seq} goes backwards in domain 0"):
            b.statement("CREATE TABLE d.w (id INT)", db="d", seq_no=seq)
        with pytest.raises(ValueError, match=f"seq_no={seq} goes backwards in domain 0"), \
                b.transaction(server_id=2, seq_no=seq) as t:
            t.query("INSERT INTO d.t VALUES (1)", db="d")
    assert _files_state(d) == before
    assert b.gtid_state == "0-1-10,1-1-3"
    assert b.statement("CREATE TABLE d.w (id INT)", db="d", domain=1) == "1-1-4"


def test_other_bad_arguments(tmp_path: Path, built: tuple[BinlogBuilder, Path]) -> None:
    b, d = built
    before = _files_state(d)
    cases: list[tuple[str, Any]] = [
        ("checksum=", lambda: BinlogBuilder(tmp_path / "c", checksum="MD5")),  # type: ignore[arg-type]
        ("row_metadata=", lambda: BinlogBuilder(tmp_path / "c", row_metadata="ALL")),
        ("server_id=", lambda: BinlogBuilder(tmp_path / "c", server_id=1 << 32)),
        ("type_code=15", lambda: b.ignorable(15, b"x")),
        ("type_code=159", lambda: b.ignorable(159, b"x")),
        ("type_code=200", lambda: b.ignorable(200, b"x")),
        ("tables_info=True", lambda: b.tables_info([("d", "t")])),
        ("domain=", lambda: b.statement("DROP TABLE d.t", domain=-1)),
        ("db=", lambda: b.statement("DROP TABLE d.t", db="x" * 65)),
    ]
    for field, call in cases:
        with pytest.raises(ValueError, match=re.escape(field)):
            call()
    assert _files_state(d) == before


# ---- every builder call, decoded by real readers -----------------------------------------------------------

SHOP_COLUMNS = [c.replace("id INT NOT NULL PRIMARY KEY", "id INT UNSIGNED NOT NULL PRIMARY KEY") for c in COLUMNS]
CREATE_SHOP = "CREATE DATABASE shop CHARACTER SET utf8mb4"  # the builder's default charset: the DDL must agree
CREATE_SHOP_T = f"CREATE TABLE shop.t ({', '.join(SHOP_COLUMNS)})"


def script(b: BinlogBuilder) -> None:
    """Every builder call once (the stream the reader tests decode)."""
    b.statement(CREATE_SHOP, db="shop")
    b.statement(CREATE_SHOP_T, db="shop")
    b.tables_info([("shop", "t")], "shop")
    with b.transaction() as t:
        t.tables_info([("shop", "t"), ("other", "u")], "shop")
        t.insert("shop", "t", SHOP_COLUMNS, [ROW_1, ROW_2], annotate="INSERT INTO shop.t VALUES (...)")
    with b.transaction(domain=1, server_id=2) as t:
        t.event(INTVAR_EVENT, encode_intvar(IntvarBody(INTVAR_INSERT_ID, 5)))  # any event, raw body
        t.query("UPDATE shop.t SET f=7 WHERE id=2", db="shop")
    with b.transaction(skip_replication=True) as t:
        t.update("shop", "t", SHOP_COLUMNS, [(ROW_2, ROW_2B)], annotate="UPDATE shop.t SET f=7 WHERE id=2")
    b.ignorable(100, b"an unknown ignorable event")
    b.rotate()
    with b.transaction(commit="query", seq_no=10) as t:
        t.ignorable(120, b"inside a group")
        t.delete("shop", "t", SHOP_COLUMNS, [ROW_2B])
    b.statement("DROP TABLE shop.t", db="shop", domain=1, skip_replication=True)
    b.close()


# What the readers print / return for ROW_1, ROW_2 and ROW_2B.
ROW_1_MARIADB_BINLOG = [
    "-5 (251)", "-6 (250)", "-300 (65236)", "-536 (65000)", "-8000000 (8777216)", "-70000 (4294897296)",
    "-294967296 (4000000000)", "-5000000000 (18446744068709551616)",
    "-446744073709551616 (18000000000000000000)", "1.5", "2.25", "-123.45", "123456789012345678.123456789012",
    "'héllo wörld'", "'ab'", "'some text'", "'\\x00\\x01é'", "'bin'", "'latin'", "'2024:02:29'",
    "'2024-01-31 12:34:56'", "'2024-01-31 12:34:56.789'", "1706704496", "1706704496.123456", "'-12:34:56'",
    "'838:59:59.50'", "'-00:00:01.5000'", "'-01:00:00.000001'", "1",
]
ROW_2_MARIADB_BINLOG = ["NULL"] * 28 + ["2"]
ROW_2B_MARIADB_BINLOG = ["NULL"] * 5 + ["7"] + ["NULL"] * 22 + ["2"]

_HEADER = re.compile(r"^#\d{6} +\d+:\d\d:\d\d server id (\d+)\s+end_log_pos (\d+)(?: CRC32 0x[0-9a-f]{8})?\s+(.*)$")
_KINDS = {5: "Intvar", 15: "Start", 163: "Gtid list", 161: "Binlog checkpoint", 162: "GTID", 2: "Query",
          160: "Annotate_rows", 19: "Table_map", 23: "Write_rows", 24: "Update_rows", 25: "Delete_rows", 16: "Xid",
          4: "Rotate"}


def _kind(text: str) -> str:
    return next((k for k in _KINDS.values() if text.startswith(k)), text.split()[0] if text else "")


def parse_mariadb_binlog(text: str) -> list[tuple[Any, ...]]:
    """(server_id, end_log_pos, kind, skip_replication in effect, ignorable type or None, row values) per event."""
    out: list[list[Any]] = []
    skip = False
    for line in text.splitlines():
        if "SET skip_replication=1" in line:
            skip = True
        elif "SET skip_replication=0" in line:
            skip = False
        elif m := _HEADER.match(line):
            out.append([int(m[1]), int(m[2]), _kind(m[3]), skip, None, []])
        elif m := re.match(r"^# Ignorable event type (\d+)", line):
            out[-1][4] = int(m[1])
        elif line in ("### SET", "### WHERE"):
            out[-1][5].append([])
        elif m := re.match(r"^###   @\d+=(.*?)(?:\s*/\*.*\*/)?$", line):
            out[-1][5][-1].append(m[1])
    return [(*e[:5], tuple(tuple(r) for r in e[5])) for e in out]


def expected_mariadb_binlog(b: BinlogBuilder, files: list[str]) -> list[tuple[Any, ...]]:
    """What mariadb-binlog must print for the builder's events in `files` (script()'s rows)."""
    rows = {23: [ROW_1_MARIADB_BINLOG, ROW_2_MARIADB_BINLOG], 24: [ROW_2_MARIADB_BINLOG, ROW_2B_MARIADB_BINLOG],
            25: [ROW_2B_MARIADB_BINLOG]}
    out = []
    for w in b.written:
        if w.file not in files:
            continue
        sid = int(w.gtid.split("-")[1]) if w.gtid else b.server_id
        kind = _KINDS.get(w.type_code, "Ignorable")
        ign = w.type_code if kind == "Ignorable" else None
        out.append((sid, w.end, kind, bool(w.flags & LOG_EVENT_SKIP_REPLICATION_F), ign,
                    tuple(tuple(r) for r in rows.get(w.type_code, []))))
    return out


def run_mariadb_binlog(*args: str, timeout: float = 120) -> str:
    res = subprocess.run([_bin("mariadb-binlog"), "--no-defaults", "-vv", "--base64-output=decode-rows", *args],
                         capture_output=True, timeout=timeout, check=False)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    return res.stdout.decode("utf-8", errors="backslashreplace")


def remote_args(port: int) -> list[str]:
    return ["--read-from-remote-server", "--host=127.0.0.1", f"--port={port}", "--user=root"]


def pymysqlrepl_events(port: int, *, blocking: bool = False, until: int | None = None, timeout: float = 30,
                       started: threading.Event | None = None, **kw: Any) -> list[tuple[Any, ...]]:
    """python-mysql-replication 1.0.17 from binlogd: (file, class, server_id, log_pos, flags, detail) per event,
    without the fake ROTATE it gets at the start of each file (log_pos 0). `started` is set at the first event."""
    settings = {"host": "127.0.0.1", "port": port, "user": "root", "password": "", "read_timeout": timeout}
    stream = BinLogStreamReader(connection_settings=settings, server_id=101, is_mariadb=True, verify_checksum=True,
                                blocking=blocking, annotate_rows_event=True, **kw)
    out: list[tuple[Any, ...]] = []
    try:
        for ev in stream:
            pk = ev.packet
            if pk.log_pos == 0:
                continue
            detail: Any = None
            if hasattr(ev, "rows"):
                detail = (ev.schema, ev.table, [r.get("values") or (r["before_values"], r["after_values"])
                                                 if "values" not in r else r["values"] for r in ev.rows])
            elif hasattr(ev, "sql_statement"):
                detail = ev.sql_statement
            elif hasattr(ev, "query"):
                detail = (ev.schema.decode() if isinstance(ev.schema, bytes) else ev.schema, ev.query)
            elif hasattr(ev, "gtid"):
                detail = ev.gtid
            elif hasattr(ev, "xid"):
                detail = ev.xid
            elif hasattr(ev, "next_binlog"):
                detail = ev.next_binlog
            elif isinstance(ev, repl_event.IntvarEvent):
                detail = (ev.type, ev.value)
            out.append((stream.log_file, type(ev).__name__, pk.server_id, pk.log_pos, pk.flags, detail))
            if started is not None:
                started.set()
            if until is not None and len(out) >= until:
                break
    finally:
        stream.close()
    return out


def _pymysqlrepl_value(v: Any, metadata: bool = False) -> Any:
    """What python-mysql-replication 1.0.17 returns for a scripted value. Unless the server announces
    binlog_row_metadata=FULL (binlogd answers NO_LOG) it ignores the optional metadata: it reads binary columns as
    UTF-8 str (and, in pymysqlrepl_row, every integer as signed and column names as UNKNOWN_COL<i>)."""
    if isinstance(v, bytes) and not metadata:
        return v.decode()
    if isinstance(v, dt.datetime) and v.tzinfo is not None:  # TIMESTAMP: naive UTC (utcfromtimestamp)
        return v.replace(tzinfo=None)
    if v == -dt.timedelta(hours=1, microseconds=1):
        # the library's TIME2 reader mis-decodes a negative TIME(5|6) with a fraction (it adds the fraction to
        # the negated whole seconds); mariadb-binlog prints '-01:00:00.000001' for the same bytes, which are
        # MariaDB's own (test_row_events_are_byte_identical_to_a_real_primary)
        return dt.timedelta(hours=-1, seconds=-1, microseconds=1)
    return v


def _signed(v: Any, col: str) -> Any:
    if isinstance(v, int) and "UNSIGNED" in col:
        size = {"TINYINT": 1, "SMALLINT": 2, "MEDIUMINT": 3, "INT": 4, "BIGINT": 8}[col.split()[1]]
        return v - (1 << 8 * size) if v >= 1 << (8 * size - 1) else v
    return v


def pymysqlrepl_row(row: tuple[Any, ...]) -> dict[str, Any]:
    return {f"UNKNOWN_COL{i}": _signed(_pymysqlrepl_value(v), SHOP_COLUMNS[i]) for i, v in enumerate(row)}


_CLASSES = {5: "IntvarEvent", 15: "FormatDescriptionEvent", 163: "MariadbGtidListEvent",
            161: "MariadbBinLogCheckPointEvent", 162: "MariadbGtidEvent", 2: "QueryEvent",
            160: "MariadbAnnotateRowsEvent", 19: "TableMapEvent", 23: "WriteRowsEvent", 24: "UpdateRowsEvent",
            25: "DeleteRowsEvent", 16: "XidEvent", 4: "RotateEvent"}


def expected_pymysqlrepl(b: BinlogBuilder) -> list[tuple[Any, ...]]:
    """The builder's events as python-mysql-replication must return them (script()'s statements and rows)."""
    queries = iter([("shop", CREATE_SHOP), ("shop", CREATE_SHOP_T),
                    ("shop", "UPDATE shop.t SET f=7 WHERE id=2"), ("", "COMMIT"), ("shop", "DROP TABLE shop.t")])
    annotations = iter([b"INSERT INTO shop.t VALUES (...)", b"UPDATE shop.t SET f=7 WHERE id=2"])
    rows = {23: [pymysqlrepl_row(ROW_1), pymysqlrepl_row(ROW_2)],
            24: [(pymysqlrepl_row(ROW_2), pymysqlrepl_row(ROW_2B))], 25: [pymysqlrepl_row(ROW_2B)]}
    xids = iter([1, 2, 3])
    out = []
    for w in b.written:
        cls = _CLASSES.get(w.type_code, "NotImplementedEvent")
        sid = int(w.gtid.split("-")[1]) if w.gtid else b.server_id
        detail: Any = {
            162: w.gtid, 2: None, 160: None, 16: None, 4: None, 23: ("shop", "t", rows[23]),
            24: ("shop", "t", rows[24]), 25: ("shop", "t", rows[25])}.get(w.type_code)
        if w.type_code == 2:
            detail = next(queries)
        elif w.type_code == 160:
            detail = next(annotations)
        elif w.type_code == 16:
            detail = next(xids)
        elif w.type_code == 5:
            detail = (INTVAR_INSERT_ID, 5)
        elif w.type_code == 4:
            detail = b.files[1]
        # the library names the file it reads after a ROTATE is applied: the ROTATE itself is in the next one
        out.append((b.files[1] if w.type_code == 4 else w.file, cls, sid, w.end, w.flags, detail))
    return out


@pytest.mark.mariadb
@pytest.mark.parametrize("checksum", ["CRC32", "NONE"])
def test_every_builder_call_decoded_by_real_readers(binlogd: Any, tmp_path: Path, checksum: str) -> None:
    """script()'s stream: mariadb-binlog on the files, mariadb-binlog --read-from-remote-server from binlogd
    serving them, and python-mysql-replication from binlogd see exactly the scripted events and values."""
    d = tmp_path / "binlogs"
    b = BinlogBuilder(d, server_id=7, timestamp=TS, tables_info=True, checksum=checksum)  # type: ignore[arg-type]
    script(b)
    assert b.files == ["mysql-bin.000001", "mysql-bin.000002"]
    assert b.gtid_state == "0-7-10,1-2-1,1-7-2"
    expected = expected_mariadb_binlog(b, b.files)
    assert len(expected) == 35
    assert parse_mariadb_binlog(run_mariadb_binlog(*(str(d / f) for f in b.files))) == expected

    # over the wire binlogd withholds tables-info events from clients that did not ask for them (holes)
    server = binlogd(["--binlog-dir", str(d)])
    remote = parse_mariadb_binlog(run_mariadb_binlog(*remote_args(server.port), "--to-last-log", b.files[0]))
    assert [e for e in remote if e[1] != 0] == [e for e in expected if e[4] != 159]  # fake ROTATEs have pos 0

    # python-mysql-replication drops the events it has no class for (the unknown ignorable ones) itself; it
    # returns INTVAR only when asked for (only_events)
    only = [getattr(repl_event, c, None) or getattr(repl_row_event, c) for c in _CLASSES.values()]
    got = pymysqlrepl_events(server.port, only_events=only)
    assert got == [e for e in expected_pymysqlrepl(b) if e[1] != "NotImplementedEvent"]
    assert "Traceback" not in server.log_text()


BIG = 17 << 20  # over the 16 MiB - 1 of one MySQL packet: the event is split over two packets on the wire


@pytest.mark.mariadb
def test_events_over_16_mib(binlogd: Any, tmp_path: Path) -> None:
    """A 17 MiB row (LONGBLOB) and a 17 MiB unknown ignorable event: mariadb-binlog reads both from the file and
    from binlogd, python-mysql-replication gets the row's value whole."""
    d = tmp_path / "big"
    b = BinlogBuilder(d, timestamp=TS)
    big_value = bytes(range(32, 127)) * (BIG // 95 + 1)
    with b.transaction() as t:
        t.insert("db", "big", ["id INT", "v LONGBLOB"], [(1, big_value)])
    b.ignorable(100, b"\x01" * BIG)
    with b.transaction() as t:
        t.query("INSERT INTO db.small VALUES (1)", db="db")
    b.close()
    sizes = [w.end - w.start for w in b.written]
    assert sum(s > BIG for s in sizes) == 2
    expected = [(w.end, _KINDS.get(w.type_code, "Ignorable")) for w in b.written]

    def positions(text: str) -> list[tuple[int, str]]:
        return [(int(m[2]), _kind(m[3])) for line in text.splitlines() if (m := _HEADER.match(line)) and m[2] != "0"]

    assert positions(run_mariadb_binlog(str(d / b.file))) == expected
    server = binlogd(["--binlog-dir", str(d)])
    assert positions(run_mariadb_binlog(*remote_args(server.port), b.file)) == expected
    got = pymysqlrepl_events(server.port)
    rows = [e for e in got if e[1] == "WriteRowsEvent"]
    assert len(rows) == 1 and rows[0][5][2] == [{"UNKNOWN_COL0": 1, "UNKNOWN_COL1": big_value.decode()}]
    assert [e[3] for e in got] == [w.end for w in b.written if w.type_code != 100]


# ---- appending while clients are connected ------------------------------------------------------------------


@pytest.mark.mariadb
def test_appending_live_to_a_served_directory(binlogd: Any, tmp_path: Path) -> None:
    """binlogd serves the builder's directory while the builder appends groups and rotates: a blocking
    python-mysql-replication client and `mariadb-binlog --stop-never` connected before receive them all."""
    d = tmp_path / "live"
    b = BinlogBuilder(d, timestamp=TS)
    b.statement("CREATE DATABASE live", db="live")
    server = binlogd(["--binlog-dir", str(d)])

    # FDE GTID_LIST CHECKPOINT GTID QUERY | GTID TABLE_MAP WRITE_ROWS XID | ROTATE | FDE GTID_LIST CHECKPOINT |
    # GTID QUERY XID | GTID QUERY
    n_expected = 5 + 4 + 1 + 3 + 3 + 2
    results: list[Any] = []
    started = threading.Event()

    def read() -> None:
        try:
            results.append(pymysqlrepl_events(server.port, blocking=True, until=n_expected, started=started))
        except Exception as e:  # reported by the assertion below
            results.append(e)
            started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(30), "python-mysql-replication did not start reading"
    out = tmp_path / "stop-never.txt"
    with open(out, "wb") as f:
        proc = subprocess.Popen([_bin("mariadb-binlog"), "--no-defaults", "--base64-output=decode-rows", "-vv",
                                 *remote_args(server.port), "--stop-never", "--stop-never-slave-server-id=55",
                                 b.file], stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "CREATE DATABASE live" in out.read_text(errors="replace"), timeout=30,
                   message="mariadb-binlog --stop-never read the first group")
        with b.transaction() as t:
            t.insert("live", "t", ["id INT"], [(1,)])
        b.rotate()
        with b.transaction(domain=2) as t:
            t.query("INSERT INTO live.t VALUES (2)", db="live")
        b.statement("DROP TABLE live.t", db="live")
        reader.join(60)
        assert not reader.is_alive(), "python-mysql-replication did not receive every appended event"
        wait_until(lambda: "DROP TABLE live.t" in out.read_text(errors="replace"), timeout=30,
                   message="mariadb-binlog --stop-never read the last group")
    finally:
        proc.kill()
        proc.wait(10)
        b.close()
    got = results[0]
    assert isinstance(got, list), f"python-mysql-replication failed: {got!r}"
    assert [(e[1], e[3]) for e in got] == [(_CLASSES[w.type_code], w.end) for w in b.written]
    assert [e[5] for e in got if e[1] == "MariadbGtidEvent"] == ["0-1-1", "0-1-2", "2-1-1", "0-1-3"]
    text = out.read_text(errors="replace")
    ends = [int(m[2]) for line in text.splitlines() if (m := _HEADER.match(line)) and m[2] != "0"]
    assert ends == [w.end for w in b.written]
    assert "### INSERT INTO `live`.`t`" in text and "INSERT INTO live.t VALUES (2)" in text


# ---- continuing a directory ---------------------------------------------------------------------------------


def test_a_builder_continues_an_existing_directory(tmp_path: Path) -> None:
    """A second builder on the same directory appends to its last file and continues the GTID sequence."""
    with BinlogBuilder(tmp_path, timestamp=TS) as b:
        b.statement("CREATE DATABASE a", domain=3, seq_no=41)
        end = b.position
    with pytest.raises(ValueError, match="checksum='NONE'"):
        BinlogBuilder(tmp_path, checksum="NONE")
    with BinlogBuilder(tmp_path, timestamp=TS) as b2:
        assert (b2.file, b2.position, b2.gtid_state) == ("mysql-bin.000001", end, "3-1-41")
        assert b2.statement("CREATE DATABASE b", domain=3) == "3-1-42"
    types = [e.header.type_code for e in _events(tmp_path / "mysql-bin.000001")]
    assert types == [15, 163, 161, 162, 2, 162, 2]
    assert _events(tmp_path / "mysql-bin.000001")[0].header.flags & 1 == 0  # closed: in-use flag clear


# ---- a real replica applies what the builder wrote --------------------------------------------------------


@pytest.mark.mariadb
@pytest.mark.parametrize("mode", ["REPLICATE", "FILTER_ON_MASTER", "FILTER_ON_SLAVE"])
def test_a_real_replica_applies_the_built_stream(mariadb: Any, binlogd: Any, tmp_path: Path, mode: str) -> None:
    """A MariaDB 10.11 replica of binlogd serving a built directory executes its statements and applies its row
    events (every column type, values read back equal to the scripted ones); flagged groups are applied or
    skipped by replicate_events_marked_for_skip; unknown ignorable and tables-info events are passed over."""
    d = tmp_path / "built"
    b = BinlogBuilder(d, server_id=7, timestamp=TS, tables_info=True)
    b.statement(CREATE_SHOP, db="shop")
    b.statement(CREATE_SHOP_T, db="shop")
    with b.transaction() as t:
        t.tables_info([("shop", "t")], "shop")
        t.insert("shop", "t", SHOP_COLUMNS, [ROW_1, ROW_2], annotate="INSERT INTO shop.t VALUES (...)")
    with b.transaction(skip_replication=True) as t:
        t.insert("shop", "t", SHOP_COLUMNS, [(*([None] * 28), 3)])
        t.ignorable(100, b"unknown")
    b.rotate()
    with b.transaction() as t:
        t.update("shop", "t", SHOP_COLUMNS, [(ROW_2, ROW_2B)])
    with b.transaction(domain=1) as t:
        t.query("INSERT INTO shop.t (id) VALUES (4)", db="shop")
    b.close()
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])
    replica = mariadb("replica", 2, "--default-time-zone=+00:00")
    replica.set_skip_mode(mode)
    replica.change_master(server.host, server.port, use_gtid="slave_pos")
    replica.start_slave()
    st = replica.wait_slave_pos(b.file, b.position, timeout=60)
    assert st["Slave_SQL_Running"] == "Yes" and st["Last_SQL_Errno"] == 0, MariaDB.format_slave_status(st)
    ids = [r[0] for r in replica.query("SELECT id FROM shop.t ORDER BY id")]
    assert ids == ([1, 2, 3, 4] if mode == "REPLICATE" else [1, 2, 4])
    assert replica.query("SELECT f FROM shop.t WHERE id = 2") == [(7,)]
    row = replica.query(f"SELECT {', '.join(c.split()[0] for c in SHOP_COLUMNS)} FROM shop.t WHERE id = 1")[0]
    scripted = tuple(v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v for v in ROW_1)
    assert row == scripted
    assert replica.gtid_slave_pos() == "0-7-5,1-7-1"


@pytest.mark.mariadb
def test_a_replica_stops_on_an_ignorable_event_between_groups(mariadb: Any, binlogd: Any, tmp_path: Path) -> None:
    """What a real 10.11 replica does with `BinlogBuilder.ignorable` outside a group: its IO thread refuses an
    event that is not in a GTID group ("The current group of events starts with a non-GTID Unknown event") and
    stops with 1595. Inside a group (`Transaction.ignorable`, the previous test) the same event is passed over."""
    d = tmp_path / "between"
    b = BinlogBuilder(d, server_id=7, timestamp=TS)
    b.statement("CREATE DATABASE x", db="x")
    b.ignorable(100, b"between groups")
    b.statement("CREATE TABLE x.t (id INT)", db="x")
    b.close()
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])
    replica = mariadb("replica", 2)
    replica.change_master(server.host, server.port, use_gtid="slave_pos")
    replica.start_slave()
    # (the IO thread sets its error a moment before it reports itself stopped: wait for both)
    st = replica.wait_until(lambda: (s := replica.slave_status())["Last_IO_Errno"]
                            and s["Slave_IO_Running"] != "Yes" and s, timeout=30,
                            message="the replica's IO thread stopping")
    assert (st["Slave_IO_Running"], st["Last_IO_Errno"]) == ("No", 1595), MariaDB.format_slave_status(st)
    replica.wait_until(lambda: replica.gtid_slave_pos() == "0-7-1", timeout=30, message="the first group applied")
    assert "starts with a non-GTID Unknown event" in replica.error_log_tail(20)


# ---- the encoder against an independent decoder (applier/rows.py), over many values ---------------------------


def _roundtrip(spec: str, value: object) -> Any:
    """Encode one value with protocol/row_encode.py, decode it with the applier's row decoder."""
    cols = parse_columns([spec])
    tm = table_map_body(1, "d", "t", cols)
    data = rows_data(cols, [(value,)])
    change = decode_rows(decode_table_map(tm), WRITE_ROWS_EVENT_V1, data, [cols[0].unsigned])
    return change.rows[0][1][0]  # type: ignore[index]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 65).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, min(p, 30)))), st.data())
def test_decimal_encoding_round_trips(ps: tuple[int, int], data: st.DataObject) -> None:
    p, s = ps
    digits = data.draw(st.integers(0, 10**p - 1))
    value = Decimal((data.draw(st.sampled_from([0, 1])), tuple(map(int, str(digits))), -s))  # exact: no context
    assert _roundtrip(f"a DECIMAL({p},{s})", value) == value


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 6), st.integers(-(838 * 3600 + 3599) * 10**6, (838 * 3600 + 3599) * 10**6), st.data())
def test_time_encoding_round_trips(fsp: int, usec: int, data: st.DataObject) -> None:
    usec -= usec % 10 ** (6 - fsp)
    sign, a = ("-" if usec < 0 else ""), abs(usec)
    sec, frac = divmod(a, 10**6)
    text = f"{sign}{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}" + (f".{frac:06d}"[: fsp + 1] if fsp else "")
    assert _roundtrip(f"a TIME({fsp})", dt.timedelta(microseconds=usec)) == text


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 6), st.datetimes(min_value=dt.datetime(1000, 1, 1)))
def test_datetime_encoding_round_trips(fsp: int, value: dt.datetime) -> None:
    value = value.replace(microsecond=value.microsecond - value.microsecond % 10 ** (6 - fsp))
    text = value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}"[: fsp + 1] if fsp else "")
    assert _roundtrip(f"a DATETIME({fsp})", value) == text


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"]), st.booleans(), st.data())
def test_integer_encoding_round_trips(kind: str, unsigned: bool, data: st.DataObject) -> None:
    bits = {"TINYINT": 8, "SMALLINT": 16, "MEDIUMINT": 24, "INT": 32, "BIGINT": 64}[kind]
    lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    value = data.draw(st.integers(lo, hi))
    assert _roundtrip(f"a {kind}{' UNSIGNED' if unsigned else ''}", value) == value
    with pytest.raises(ValueError, match="column 'a'"):
        _roundtrip(f"a {kind}{' UNSIGNED' if unsigned else ''}", data.draw(st.sampled_from([lo - 1, hi + 1])))


# ---- binlog_row_metadata=FULL, announced ------------------------------------------------------------------


@pytest.mark.mariadb
def test_full_row_metadata_gives_a_cdc_client_names_and_exact_values(mariadb: Any, binlogd: Any,
                                                                      tmp_path: Path) -> None:
    """The builder's default row_metadata="FULL" is what a CDC client needs: served by a real 10.11 primary that
    announces binlog_row_metadata=FULL, or by binlogd with --binlog-row-metadata FULL, python-mysql-replication
    names the columns and returns the scripted values (unsigned integers unsigned). binlogd without the option
    answers NO_LOG (MariaDB's default), and the same client then falls back to UNKNOWN_COL<i> and signed integers
    (test_every_builder_call_decoded_by_real_readers)."""
    d = tmp_path / "full"
    b = BinlogBuilder(d, server_id=7, timestamp=TS)
    b.statement(CREATE_SHOP, db="shop")
    b.statement(CREATE_SHOP_T, db="shop")
    with b.transaction() as t:
        t.insert("shop", "t", SHOP_COLUMNS, [ROW_1, ROW_2])
    with b.transaction() as t:
        t.update("shop", "t", SHOP_COLUMNS, [(ROW_2, ROW_2B)])
    b.close()
    real = mariadb.primary_from_binlogs("full", 1, [d / f for f in b.files],
                                        extra_args=["--binlog-row-metadata=FULL"])
    got = [e for e in pymysqlrepl_events(real.port, log_file=b.files[0], log_pos=4) if e[1].endswith("RowsEvent")]
    names = [c.split()[0] for c in SHOP_COLUMNS]
    row_1 = dict(zip(names, [_pymysqlrepl_value(v, metadata=True) for v in ROW_1], strict=True))
    row_2 = {**dict.fromkeys(names), "id": 2}
    assert [e[5] for e in got] == [("shop", "t", [row_1, row_2]), ("shop", "t", [(row_2, {**row_2, "f": 7})])]

    served = binlogd(["--binlog-dir", str(d), "--binlog-row-metadata", "FULL"])  # binlogd announcing it likewise
    assert served.connect().cursor().execute("SELECT @@binlog_row_metadata") == 1
    got_binlogd = [e for e in pymysqlrepl_events(served.port, log_file=b.files[0], log_pos=4)
                   if e[1].endswith("RowsEvent")]
    assert [e[5] for e in got_binlogd] == [e[5] for e in got]


@pytest.mark.mariadb
def test_a_builder_starts_from_a_gtid_state(tmp_path: Path) -> None:
    """gtid_state is the first file's GTID_LIST; sequence numbers continue from it, per domain."""
    b = BinlogBuilder(tmp_path / "s", gtid_state="0-1-100,5-9-7", timestamp=TS)
    assert b.statement("CREATE DATABASE a") == "0-1-101"
    assert b.statement("CREATE DATABASE b", domain=5) == "5-1-8"
    with pytest.raises(ValueError, match="seq_no=7 goes backwards in domain 5"):
        b.statement("CREATE DATABASE c", domain=5, seq_no=7)
    with pytest.raises(ValueError, match="flags=0x10000"), b.transaction() as t:
        t.event(5, b"\x02" + bytes(8), flags=0x10000)
    b.close()
    events = _events(tmp_path / "s" / "mysql-bin.000001")
    assert [str(g) for g in events[1].body.gtids] == ["0-1-100", "5-9-7"]
    text = run_mariadb_binlog(str(tmp_path / "s" / "mysql-bin.000001"))
    assert "Gtid list [0-1-100,\n# 5-9-7]" in text and "GTID 0-1-101 ddl" in text and "GTID 5-1-8 ddl" in text
    with pytest.raises(ValueError, match="gtid_state='0-1'"):
        BinlogBuilder(tmp_path / "t", gtid_state="0-1")
