"""Tables-info events with real components: real MariaDB 10.11 replicas, mariadb-binlog, the mariadb CLI and raw
COM_BINLOG_DUMP clients of each capability.

The binlog under test is a real MariaDB 10.11 STATEMENT-format binlog of a workload touching two databases
(CREATE TABLE ... LIKE / ... SELECT, a RENAME TABLE chain, multi-table UPDATE/DELETE, a transaction, ALTER ...
RENAME, DROP), into which every statement's Tables_info event is inserted before its Query with the project's
codec (positions and CRCs recomputed, the FDE declaring the type): the same shape `--binlog-with-tables-info`
writes. The end-to-end run through the standalone server's own writer is in test_tables_info_standalone.py.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest
from binlogd.protocol.checksum import crc_ok, set_crc
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
from binlogd.protocol.events import (
    build_event,
    encode_format_description,
    iter_binlog,
    parse_format_description,
    parse_header,
    parse_query,
)
from binlogd.protocol.tables_info import (
    TABLES_INFO_EVENT,
    declare_in_fde,
    parse_tables_info,
    tables_info_event,
    tables_of_statement,
)

from tests.dumpclient import raw_dump
from tests.harness import MariaDB, find_binary

pytestmark = pytest.mark.mariadb

DBS = ("ti1", "ti2")
WORKLOAD = [
    "CREATE DATABASE ti1",
    "CREATE DATABASE ti2",
    "USE ti1",
    "CREATE TABLE t1 (a INT PRIMARY KEY, b VARCHAR(20)) ENGINE=InnoDB",
    "CREATE TABLE t2 LIKE t1",
    "INSERT INTO t1 VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    "INSERT INTO t2 SELECT a + 10, b FROM t1 WHERE a IN (SELECT a FROM t1 WHERE a > 1)",
    "CREATE TABLE ti2.t3 ENGINE=InnoDB SELECT * FROM t1",
    "RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2",
    "UPDATE t1 JOIN ti2.t3 ON t1.a = ti2.t3.a + 10 SET t1.b = CONCAT(ti2.t3.b, '!')",
    "DELETE t2 FROM t2 JOIN ti2.t3 ON t2.a = ti2.t3.a WHERE ti2.t3.a = 1",
    "SET @v = 5",
    "SELECT LAST_INSERT_ID(40)",
    "INSERT INTO t1 VALUES (@v + LAST_INSERT_ID(), 'from context events')",
    "BEGIN",
    "INSERT INTO t1 VALUES (30, 'thirty')",
    "UPDATE t2 SET b = 'y' WHERE a = 2",
    "COMMIT",
    "ALTER TABLE t2 RENAME TO ti2.t4",
    "DROP TABLE ti2.t3",
]
# What the inserted events must say, statement by statement (seed rules; default database ti1).
EXPECTED = {
    "CREATE TABLE t2 LIKE t1": [("ti1", "t2"), ("ti1", "t1")],
    "CREATE TABLE ti2.t3 ENGINE=InnoDB SELECT * FROM t1": [("ti2", "t3"), ("ti1", "t1")],
    "RENAME TABLE t1 TO tmp, t2 TO t1, tmp TO t2": [("ti1", "t1"), ("ti1", "t2")],
    "DELETE t2 FROM t2 JOIN ti2.t3 ON t2.a = ti2.t3.a WHERE ti2.t3.a = 1": [("ti1", "t2"), ("ti2", "t3")],
    "ALTER TABLE t2 RENAME TO ti2.t4": [("ti1", "t2"), ("ti2", "t4")],
    "CREATE DATABASE ti2": [],
}


def with_tables_info(data: bytes) -> bytes:
    """A CRC32 binlog file with a Tables_info event before every statement's events (its INTVAR/RAND/USER_VAR
    and Query; not BEGIN/COMMIT), where binlogd's standalone logger puts it."""
    out = bytearray(data[:4])
    context: list[bytes] = []  # a statement's INTVAR/RAND/USER_VAR events, held until its Query
    for _, ev in iter_binlog(data):
        h = parse_header(ev)
        if h.type_code in (INTVAR_EVENT, RAND_EVENT, USER_VAR_EVENT):
            context.append(ev)
            continue
        if h.type_code == FORMAT_DESCRIPTION_EVENT:
            fde = declare_in_fde(parse_format_description(ev[HEADER_LEN:-4]))
            ev = build_event(type_code=FORMAT_DESCRIPTION_EVENT, body=encode_format_description(fde), checksum=True,
                             timestamp=h.timestamp, server_id=h.server_id, log_pos=0, flags=h.flags)
        elif h.type_code == QUERY_EVENT:
            q = parse_query(ev[HEADER_LEN:-4])
            sql, db = q.query.decode(), q.db.decode() or None
            if sql not in ("BEGIN", "COMMIT", "ROLLBACK"):
                info = tables_info_event(tables_of_statement(sql, db), db, checksum=True, server_id=h.server_id,
                                         timestamp=h.timestamp, flags=h.flags & 0x8000)
                out += _at(info, len(out))
        for c in context:
            out += _at(c, len(out))
        context = []
        out += _at(ev, len(out))
    return bytes(out)


def _at(ev: bytes, start: int) -> bytes:
    """The event with log_pos = its end when written at `start`, CRC redone."""
    b = bytearray(ev)
    struct.pack_into("<I", b, 13, start + len(b))
    set_crc(b)
    assert crc_ok(b)
    return bytes(b)


@dataclass
class Source:
    plain: Path  # the real primary's file
    injected: Path  # directory with mysql-bin.000001 (with Tables_info events) and mysql-bin.index
    checksums: dict[str, int | None]
    infos: list[tuple[int, bytes]]  # (position, event) of every Tables_info event in the injected file
    end: int


@pytest.fixture(scope="module")
def source(mariadb_base: Path, mariadb_binaries: dict[str, str]) -> Iterator[Source]:
    base = mariadb_base / "tables-info-source"
    base.mkdir()
    src = MariaDB.start(base, "src", 11, "--log-bin=mysql-bin", "--binlog-format=STATEMENT",
                        template_dir=mariadb_base / "_template")
    try:
        conn = src.connect(autocommit=True)
        with conn.cursor() as cur:
            for sql in WORKLOAD:
                cur.execute(sql)
        conn.close()
        checksums = src.table_checksums(DBS)
        src.query("FLUSH BINARY LOGS")
        plain = base / "plain-mysql-bin.000001"
        shutil.copy(src.datadir / "mysql-bin.000001", plain)
    finally:
        src.stop()
    data = with_tables_info(plain.read_bytes())
    injected = base / "injected"
    injected.mkdir()
    (injected / "mysql-bin.000001").write_bytes(data)
    (injected / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    infos = [(p, ev) for p, ev in iter_binlog(data) if ev[4] == TABLES_INFO_EVENT]
    yield Source(plain, injected, checksums, infos, len(data))


def test_injected_file_says_what_the_seed_says(source: Source) -> None:
    data = (source.injected / "mysql-bin.000001").read_bytes()
    events = list(iter_binlog(data))
    seen = {}
    kinds = [ev[4] for _, ev in events]
    after = [kinds[i + 1 : i + 3] for i, k in enumerate(kinds) if k == TABLES_INFO_EVENT]
    assert [INTVAR_EVENT, USER_VAR_EVENT] in after  # first of the statement's events
    for i, (_, ev) in enumerate(events):
        if ev[4] == TABLES_INFO_EVENT:
            assert parse_header(ev).flags & LOG_EVENT_IGNORABLE_F
            nxt = next(e for _, e in events[i + 1 :] if e[4] not in (INTVAR_EVENT, RAND_EVENT, USER_VAR_EVENT))
            assert nxt[4] == QUERY_EVENT
            seen[parse_query(nxt[HEADER_LEN:-4]).query.decode()] = list(parse_tables_info(ev[HEADER_LEN:-4]).tables)
    for sql, want in EXPECTED.items():
        assert seen[sql] == want, sql
    not_logged = ("USE", "BEGIN", "COMMIT", "SET", "SELECT")
    assert len(source.infos) == len([s for s in WORKLOAD if s.split()[0] not in not_logged])


def _dump(server, capability: int, ask: bool) -> list[tuple[int, bytes]]:
    """(log_pos, event) of everything a raw non-blocking dump from mysql-bin.000001:4 gets."""
    session = ["SET @master_binlog_checksum= @@global.binlog_checksum",
               f"SET @mariadb_slave_capability={capability}"]
    if ask:
        session.append("SET @binlogd_send_tables_info=1")
    cap = raw_dump(server.host, server.port, session, build_binlog_dump(4, 1, 0, "mysql-bin.000001"))
    assert cap.end == "EOF", (cap.end, cap.error)
    return [(parse_header(ev).log_pos, ev) for ev in cap.events]


def test_capabilities_get_dummy_hole_or_event(source: Source, binlogd) -> None:
    server = binlogd(["--binlog-dir", str(source.injected), "--server-id", "11"])
    ends = {p + len(ev): ev for p, ev in source.infos}
    for capability, ask in [(0, False), (1, False), (2, False), (4, False), (0, True), (4, True)]:
        got = dict(_dump(server, capability, ask))
        for end, ev in ends.items():
            if ask:
                assert got[end] == ev, (capability, end)  # sent as stored
            elif capability < 2:  # a same-length dummy at the same position
                d = got[end]
                assert len(d) == len(ev) and d[4] in (QUERY_EVENT, USER_VAR_EVENT), (capability, end)
                assert crc_ok(d)
            else:  # a hole: nothing ends there, and the following Query is still sent
                assert end not in got, (capability, end)
        assert max(got) == source.end


def test_real_replica_of_binlogd_and_of_mariadb_skip_it(source: Source, mariadb, binlogd) -> None:
    """A replica of binlogd (which leaves holes) and one of a real MariaDB primary serving the same file (which
    sends the unknown ignorable events as they are: the replica's IO thread drops them) end with the source's
    tables."""
    ours = binlogd(["--binlog-dir", str(source.injected), "--server-id", "11"])
    real = mariadb.primary_from_binlogs("realsrc", 12, [source.injected / "mysql-bin.000001"])
    sent = dict(_dump(real, 4, False))  # what MariaDB's dump thread sends a capability-4 replica
    assert all(sent[p + len(ev)] == ev for p, ev in source.infos)
    # the file ends with MariaDB's Rotate to mysql-bin.000002: binlogd has no such file yet, the real primary
    # opened it at startup
    for name, sid, primary, end in (("r-binlogd", 21, ours, ("mysql-bin.000002", 4)),
                                    ("r-mariadb", 22, real, real.master_status())):
        r = mariadb(name, sid)
        r.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
        r.start_slave()
        r.wait_slave_pos(*end)
        st = r.slave_status()
        assert st["Slave_SQL_Running"] == "Yes" and not st["Last_SQL_Error"], st
        assert r.table_checksums(DBS) == source.checksums, name


def test_mariadb_binlog_reads_the_file(source: Source, mariadb) -> None:
    """mariadb-binlog skips the unknown ignorable events and prints every statement; its output replays."""
    binary = find_binary("mariadb-binlog")
    out = subprocess.run([binary, "--no-defaults", str(source.injected / "mysql-bin.000001")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("# Ignorable event type 159") == len(source.infos), out.stdout[-3000:]
    queries = [parse_query(ev[HEADER_LEN:-4]).query.decode() for _, ev in iter_binlog(source.plain.read_bytes())
               if ev[4] == QUERY_EVENT]
    assert len(queries) >= len(source.infos)
    for sql in queries:
        assert sql in out.stdout, sql
    fresh = mariadb("replay", 31)
    client = [find_binary("mariadb"), "--no-defaults", "-h", fresh.host, "-P", str(fresh.port), "-uroot"]
    replay = subprocess.run(client, input=out.stdout, capture_output=True, text=True, timeout=60)
    assert replay.returncode == 0, replay.stderr
    assert fresh.table_checksums(DBS) == source.checksums


def test_show_binlog_events_from_the_cli(source: Source, binlogd) -> None:
    server = binlogd(["--binlog-dir", str(source.injected), "--server-id", "11"])
    cli = find_binary("mariadb")
    out = subprocess.run([cli, "--no-defaults", "-h", server.host, "-P", str(server.port), "-uroot", "--batch",
                          "-e", "SHOW BINLOG EVENTS IN 'mysql-bin.000001'"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()[1:]]
    infos = [r for r in rows if r[2] == "Tables_info"]
    assert len(infos) == len(source.infos)
    assert [int(r[1]) for r in infos] == [p for p, _ in source.infos]
    assert "`ti1`.`t1`, `ti1`.`t2`" in [r[5] for r in infos]  # the RENAME chain
    assert "`ti2`.`t3`, `ti1`.`t1`" in [r[5] for r in infos]  # CREATE TABLE ... SELECT
    conn = pymysql.connect(host=server.host, port=server.port, user="root")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINLOG EVENTS IN 'mysql-bin.000001'")
            assert [r[5] for r in cur.fetchall() if r[2] == "Tables_info"] == [r[5] for r in infos]
    finally:
        conn.close()
