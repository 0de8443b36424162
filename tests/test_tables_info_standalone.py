"""`--binlog-with-tables-info` end to end: binlogd's standalone primary writes the events, real MariaDB 10.11
replicas and tools read what it wrote.

Two binlogd standalone servers, one with the option and one without, receive the same session (two databases,
DDL, a RENAME chain, CREATE ... LIKE / SELECT, multi-table DML, a transaction, a statement under
skip_replication). Real replicas of both end with the same tables; the files binlogd wrote, copied into a real
MariaDB primary that sends the events as they are, replicate to the same tables too; mariadb-binlog reads them.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.commands import build_binlog_dump
from binlogd.protocol.constants import (
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    INTVAR_EVENT,
    LOG_EVENT_IGNORABLE_F,
    QUERY_EVENT,
    RAND_EVENT,
    USER_VAR_EVENT,
)
from binlogd.protocol.events import parse_event, parse_format_description, parse_header
from binlogd.protocol.tables_info import TABLES_INFO_EVENT, TABLES_INFO_HEADER_LEN, parse_tables_info
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import QueryEvent

from tests.dumpclient import raw_dump
from tests.harness import find_binary, wait_until

pytestmark = pytest.mark.mariadb

DBS = ("tis1", "tis2")
SESSION = [
    "CREATE DATABASE tis1",
    "CREATE DATABASE tis2",
    "USE tis1",
    "CREATE TABLE t1 (a INT PRIMARY KEY, b VARCHAR(20))",
    "CREATE TABLE t2 LIKE t1",
    "INSERT INTO t1 VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    "INSERT INTO t2 SELECT a + 10, b FROM t1 WHERE a > 1",
    "CREATE TABLE tis2.t3 (a INT PRIMARY KEY, b VARCHAR(20))",
    "INSERT INTO tis2.t3 SELECT * FROM t1",
    "RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2",
    "UPDATE t1 JOIN tis2.t3 ON t1.a = tis2.t3.a + 10 SET t1.b = CONCAT(tis2.t3.b, '!')",
    "BEGIN",
    "INSERT INTO t2 VALUES (30, 'thirty')",
    "DELETE t1 FROM t1 JOIN tis2.t3 ON t1.a = tis2.t3.a + 10 WHERE tis2.t3.a = 3",
    "COMMIT",
    "SET @v = 7",
    "INSERT INTO t2 VALUES (@v + 100, 'from a user variable')",
    "SET skip_replication=1",
    "INSERT INTO t2 VALUES (40, 'flagged')",
    "SET skip_replication=0",
    "ALTER TABLE t2 RENAME TO tis2.t4",
]


def _run(server) -> None:
    conn = pymysql.connect(host=server.host, port=server.port, user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in SESSION:
                cur.execute(sql)
    finally:
        conn.close()


def _files(datadir: Path) -> list[Path]:
    index = datadir / "mysql-bin.index"
    return [datadir / Path(line).name for line in index.read_text().split()]


def _master_status(server) -> tuple[str, int]:
    conn = pymysql.connect(host=server.host, port=server.port, user="root")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
    finally:
        conn.close()
    assert row is not None
    return str(row[0]), int(row[1])


def test_standalone_writes_declares_and_replicas_skip(harness_dir: Path, binlogd, mariadb) -> None:
    with_dir, without_dir = harness_dir / "with", harness_dir / "without"
    on = binlogd(["--datadir", str(with_dir), "--server-id", "41", "--binlog-with-tables-info"])
    off = binlogd(["--datadir", str(without_dir), "--server-id", "42"])
    _run(on)
    _run(off)

    # the file: FDE declares the type; each statement's Query is preceded by its Tables_info event
    data = _files(with_dir)[0].read_bytes()
    res = scan(data)
    fde = data[res.events[0].pos : res.events[0].pos + res.events[0].length]
    assert fde[4] == FORMAT_DESCRIPTION_EVENT
    assert parse_format_description(fde[HEADER_LEN:-4]).post_header_lengths[TABLES_INFO_EVENT - 1] == \
        TABLES_INFO_HEADER_LEN
    events = [data[e.pos : e.pos + e.length] for e in res.events]
    context = (INTVAR_EVENT, RAND_EVENT, USER_VAR_EVENT)
    pairs = []  # (Tables_info, the statement's Query)
    for i, ev in enumerate(events):
        if ev[4] == TABLES_INFO_EVENT:
            # first of the statement's events: before INTVAR/RAND/USER_VAR, whose effect a dummy in between
            # (capability < 2) could undo
            assert events[i - 1][4] not in context
            j = i + 1
            while events[j][4] in context:
                j += 1
            pairs.append((ev, events[j]))
    assert any(b[4] == USER_VAR_EVENT for a, b in itertools.pairwise(events) if a[4] == TABLES_INFO_EVENT)
    lists = {}
    for info, query in pairs:
        h = parse_header(info)
        assert h.flags & LOG_EVENT_IGNORABLE_F and query[4] == QUERY_EVENT
        assert h.flags & 0x8000 == parse_header(query).flags & 0x8000  # filtered together with its statement
        lists[parse_event(query, 1).body.query.decode()] = list(parse_tables_info(info[HEADER_LEN:-4]).tables)
    assert lists["RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2"] == [("tis1", "t1"), ("tis1", "t2")]
    assert lists["CREATE TABLE t2 LIKE t1"] == [("tis1", "t2"), ("tis1", "t1")]
    assert lists["INSERT INTO tis2.t3 SELECT * FROM t1"] == [("tis2", "t3"), ("tis1", "t1")]
    assert lists["ALTER TABLE t2 RENAME TO tis2.t4"] == [("tis1", "t2"), ("tis2", "t4")]
    assert len(pairs) == len([s for s in SESSION if not s.startswith(("USE", "BEGIN", "COMMIT", "SET"))])
    plain = scan(_files(without_dir)[0].read_bytes())
    assert not [e for e in plain.events if e.type_code == TABLES_INFO_EVENT]

    # real replicas: of binlogd with and without the option (they get holes), and of a real MariaDB primary
    # serving a copy of binlogd's files (it sends the events; the replica's IO thread drops them)
    real = mariadb.primary_from_binlogs("copy", 43, _files(with_dir))
    sums = {}
    for name, primary, sid in (("r-on", on, 51), ("r-off", off, 52), ("r-copy", real, 53)):
        r = mariadb(name, sid)
        r.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
        r.start_slave()
        r.wait_slave_pos(*_master_status(primary))
        st = r.slave_status()
        assert st["Slave_SQL_Running"] == "Yes" and not st["Last_SQL_Error"], st
        sums[name] = r.table_checksums(DBS)
    assert sums["r-on"] == sums["r-off"] == sums["r-copy"]
    assert "tis2.t4" in sums["r-on"] and "tis1.t1" in sums["r-on"]

    # a client that asks gets the events as stored; capability 1 gets same-length dummies
    stored = {parse_header(a).log_pos: a for a, _ in pairs}
    for session, check in (
        (["SET @binlogd_send_tables_info=1"], lambda got, ev: got == ev),
        (["SET @mariadb_slave_capability=1"], lambda got, ev: len(got) == len(ev) and got[4] != TABLES_INFO_EVENT),
    ):
        cap = raw_dump(on.host, on.port, ["SET @master_binlog_checksum= @@global.binlog_checksum", *session],
                       build_binlog_dump(4, 1, 0, "mysql-bin.000001"))
        got = {parse_header(ev).log_pos: ev for ev in cap.events}
        for end, ev in stored.items():
            assert check(got[end], ev), (session, end)

    # a CDC library (python-mysql-replication, capability 4: holes) streams both binlogs to the same statements
    def queries(server) -> list[str]:
        stream = BinLogStreamReader(connection_settings={"host": server.host, "port": server.port, "user": "root",
                                                         "password": ""}, server_id=61, blocking=False)
        try:
            return [ev.query for ev in stream if isinstance(ev, QueryEvent)]
        finally:
            stream.close()

    assert queries(on) == queries(off)
    assert "RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2" in queries(on)

    # the audit ledger records who asked (the audit's hole-legality check needs it)
    def asked() -> list[bool]:
        recs = [json.loads(line) for f in sorted((with_dir / "ledger").glob("ledger.*.jsonl"))
                for line in f.read_text().splitlines() if line.endswith("}")]
        return [bool(r.get("send_tables_info")) for r in recs if r.get("r") == "conn" and r.get("server_id") == 0]

    wait_until(lambda: len(asked()) >= 2, timeout=10, message="the raw dumps' ledger records")
    assert sorted(asked()) == [False, True]

    # mariadb-binlog reads the files, skipping the events
    out = subprocess.run([find_binary("mariadb-binlog"), "--no-defaults", *map(str, _files(with_dir))],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("# Ignorable event type 159") == len(pairs)
    assert "RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2" in out.stdout


def test_option_is_for_the_standalone_primary_only(harness_dir: Path) -> None:
    d = harness_dir / "d"
    d.mkdir()
    for args in (["--binlog-dir", str(d)], ["--upstream", "mysql://root:@127.0.0.1:1"]):
        out = subprocess.run([sys.executable, "-m", "binlogd.server.cli", "serve", *args,
                              "--binlog-with-tables-info"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out
        assert "--binlog-with-tables-info is for the standalone primary" in out.stderr
