"""Standalone binlogd vs a real MariaDB 10.11 primary in STATEMENT format, running the same client session.

Real 10.11 replicas of each, in REPLICATE / FILTER_ON_SLAVE / FILTER_ON_MASTER, end with identical table
checksums per mode, and the filtered modes miss exactly the transactions written under skip_replication=1.
The two binlogs carry the same event sequence with the same bodies (up to what differs between any two
servers: timestamps, thread and query ids). `mariadb-binlog` reads binlogd's files, prints
`/*!50521 SET skip_replication=1*/` where the flag starts, and its output replayed into a fresh MariaDB gives
the REPLICATE data.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.constants import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    Q_HRNOW,
    Q_XID,
    QUERY_EVENT,
    ROTATE_EVENT,
)
from binlogd.protocol.events import parse_event

from tests.harness import MariaDB

WORKLOAD = [
    "CREATE DATABASE shop",
    "CREATE DATABASE audit",
    "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), qty INT, price DOUBLE)",
    "CREATE TABLE audit.log (id INT PRIMARY KEY, msg VARCHAR(80), r DOUBLE)",
    "INSERT INTO shop.items VALUES (1,'apple',10,1.5),(2,'pear',5,2.25)",
    "SET @who='stmt user var', @n=7, @f=0.5",
    "INSERT INTO audit.log VALUES (1, @who, @f)",
    "UPDATE shop.items SET qty=qty+@n WHERE id=1",
    "BEGIN",
    "UPDATE shop.items SET qty=qty-1 WHERE id=2",
    "INSERT INTO audit.log VALUES (2,'restock',NULL)",
    "COMMIT",
    "BEGIN",
    "INSERT INTO shop.items VALUES (3,'rolled back',0,0)",
    "ROLLBACK",
    "SET rand_seed1=123456, rand_seed2=654321",
    "INSERT INTO audit.log VALUES (3,'rand',RAND())",
    "SET skip_replication=1",
    "INSERT INTO shop.items VALUES (100,'skipped autocommit',1,0)",
    "BEGIN",
    "INSERT INTO audit.log VALUES (100,'skipped trx',NULL)",
    "UPDATE shop.items SET qty=0 WHERE id=1",
    "COMMIT",
    "CREATE TABLE shop.skipped_table (x INT)",
    "SET skip_replication=0",
    "USE shop",
    "INSERT INTO items VALUES (4,'default db',4,4)",
    "SET autocommit=0",
    "DELETE FROM items WHERE id=2",
    "INSERT INTO audit.log VALUES (4,'autocommit=0 trx',NULL)",
    "COMMIT",
    "SET autocommit=1",
    "ALTER TABLE items ADD COLUMN note VARCHAR(20) NULL",
    "FLUSH BINARY LOGS",
    "UPDATE items SET note=CONCAT('n', @n) WHERE id=4",
    "SET skip_replication=1",
    "INSERT INTO audit.log VALUES (101,'skipped late',NULL)",
    "SET skip_replication=0",
    "SET @big=18446744073709551615, @neg=-7, @dbl=1.5e0, @nul=NULL",
    "INSERT INTO audit.log VALUES (6, CONCAT_WS(',', @big, @neg, @nul, @undefined_var), @dbl)",
    "INSERT INTO audit.log VALUES (7, 'clock', UNIX_TIMESTAMP(NOW()) > 0)",
    "SET time_zone='+02:00'",
    "INSERT INTO audit.log VALUES (8, 'tz', HOUR(NOW()) >= 0)",
    "SET time_zone=DEFAULT",
    "INSERT INTO audit.log VALUES (5,'last',NULL)",
]
DATABASES = ["shop", "audit"]
MODES = ["REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER"]
ALL_ROWS = {"shop.items": {1, 4, 100}, "audit.log": {1, 2, 3, 4, 5, 6, 7, 8, 100, 101}}
FLAGGED = {"shop.items": {100}, "audit.log": {100, 101}}
# a reference primary that differs from binlogd only where any two servers differ (utf8mb4 like binlogd's default)
REFERENCE_ARGS = ("--log-bin=mysql-bin", "--binlog-format=STATEMENT", "--character-set-server=utf8mb4",
                  "--collation-server=utf8mb4_general_ci")


def run_session(host: str, port: int, statements: list[str]) -> None:
    conn = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True, charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def master_status(host: str, port: int) -> tuple[str, int]:
    conn = pymysql.connect(host=host, port=port, user="root", password="")
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            assert row is not None
            return str(row[0]), int(row[1])
    finally:
        conn.close()


def comparable(data: bytes) -> list[tuple[Any, ...]]:
    """The events of a file as two servers running the same session should agree on them."""
    out: list[tuple[Any, ...]] = []
    for ev in scan(data).events:
        raw = data[ev.pos : ev.end]
        if ev.type_code in (FORMAT_DESCRIPTION_EVENT, BINLOG_CHECKPOINT_EVENT):
            continue
        e = parse_event(raw, 1)
        flags = e.header.flags
        body: Any = e.body
        if ev.type_code == QUERY_EVENT:
            # Q_XID: a query id, Q_HRNOW: the microsecond the statement ran: both differ between any two servers
            status = {k: (v if k not in (Q_XID, Q_HRNOW) else "differs") for k, v in body.status_vars.items()}
            body = (body.db, body.query, body.error_code, status)
        elif ev.type_code == GTID_EVENT:
            body = (body.domain_id, body.seq_no, body.flags2)
        elif ev.type_code in (GTID_LIST_EVENT, ROTATE_EVENT):
            body = repr(body)
        elif ev.type_code == 16:  # XID: the query id of another server
            body = "xid"
        out.append((ev.type_code, flags, body))
    return out


@pytest.fixture
def started(mariadb: Any, binlogd: Any, harness_dir: Path) -> dict[str, Any]:
    def start_replica(name: str, sid: int) -> MariaDB:
        return mariadb(name, sid)

    with ThreadPoolExecutor(4) as pool:
        ref_f = pool.submit(mariadb, "ref", 1, *REFERENCE_ARGS)
        replica_f = {(src, mode): pool.submit(start_replica, f"r-{src}-{i}", 10 + 2 * i + (src == "bl"))
                     for i, mode in enumerate(MODES) for src in ("ref", "bl")}
        bl = binlogd(["--datadir", str(harness_dir / "bl-data"), "--no-ledger", "--server-id", "1"])
        ref = ref_f.result()
        replicas = {k: f.result() for k, f in replica_f.items()}
    return {"ref": ref, "bl": bl, "replicas": replicas, "datadir": harness_dir / "bl-data"}


def ids(server: MariaDB, table: str) -> set[int]:
    return {int(r[0]) for r in server.query(f"SELECT id FROM {table}")}


def test_workload_replicas_match_a_real_primary(started: dict[str, Any], mariadb: Any, harness_dir: Path) -> None:
    ref, bl, replicas = started["ref"], started["bl"], started["replicas"]
    run_session(ref.host, ref.port, WORKLOAD)
    run_session(bl.host, bl.port, WORKLOAD)

    # the binlogs: same events, same bodies, file by file
    ref_files = [f for f, _ in ref.binary_logs()]
    bl_dir: Path = started["datadir"]
    bl_files = [line.strip().removeprefix("./") for line in (bl_dir / "mysql-bin.index").read_text().splitlines()]
    assert bl_files == ref_files == ["mysql-bin.000001", "mysql-bin.000002"]
    for name in bl_files:
        data = (bl_dir / name).read_bytes()
        verify(data)
        assert comparable(data) == comparable((ref.datadir / name).read_bytes()), name

    # real replicas of each, in each mode
    for (src, mode), r in replicas.items():
        primary = ref if src == "ref" else bl
        r.set_skip_mode(mode)
        r.change_master(primary.host, primary.port)
        r.start_slave()
    # a real primary writes the new file's own BINLOG_CHECKPOINT asynchronously, once InnoDB made the previous file's
    # transactions durable: take its end only after that, or a replica reads past the end it is waited for
    last = ref_files[-1]
    ref.wait_until(lambda: any(r[5] == f"{last}" for r in ref.query(f"SHOW BINLOG EVENTS IN '{last}'")
                               if r[2] == "Binlog_checkpoint"), 30, message=f"{last}'s own Binlog_checkpoint")
    ends = {"ref": ref.master_status(), "bl": master_status(bl.host, bl.port)}
    for (src, _), r in replicas.items():  # six replicas start at once: allow a loaded 2-core machine its time
        r.wait_slave_pos(*ends[src], timeout=90)
    for mode in MODES:
        theirs, ours = replicas[("ref", mode)], replicas[("bl", mode)]
        assert ours.table_checksums(DATABASES) == theirs.table_checksums(DATABASES), mode
        for table, all_ids in ALL_ROWS.items():
            expected = all_ids if mode == "REPLICATE" else all_ids - FLAGGED[table]
            assert ids(ours, table) == expected, (mode, table)
        has_skipped_table = bool(ours.query("SHOW TABLES FROM shop LIKE 'skipped_table'"))
        assert has_skipped_table == (mode == "REPLICATE")
        status = ours.slave_status()
        assert status["Slave_IO_Running"] == status["Slave_SQL_Running"] == "Yes"
    # flagged rows really are flagged: qty of item 1 was zeroed by a flagged UPDATE
    assert replicas[("bl", "REPLICATE")].query("SELECT qty FROM shop.items WHERE id=1") == [(0,)]
    assert replicas[("bl", "FILTER_ON_MASTER")].query("SELECT qty FROM shop.items WHERE id=1") == [(17,)]

    # mariadb-binlog on binlogd's files, replayed into a fresh server
    text = subprocess.run(["mariadb-binlog", *[str(bl_dir / f) for f in bl_files]], capture_output=True, check=True,
                          text=True).stdout
    assert "/*!50521 SET skip_replication=1*/" in text
    first_flag = text.index("/*!50521 SET skip_replication=1*/")
    assert "skipped autocommit" in text[first_flag:] and "skipped autocommit" not in text[:first_flag]
    fresh = mariadb("replay", 30)
    subprocess.run(["mariadb", "-h", fresh.host, "-P", str(fresh.port), "-uroot"], input=text, text=True,
                   check=True, capture_output=True)
    assert fresh.table_checksums(DATABASES) == replicas[("bl", "REPLICATE")].table_checksums(DATABASES)
