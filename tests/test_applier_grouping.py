"""Grouped commits (applier/grouping.py) and the reader's in-place decoding (applier/raw_events.py), issue 20.

* A backlog of row transactions on a target without a binlog is committed many source transactions per target
  transaction; DDL, statement-format transactions, ROLLBACK, flagged transactions (REPLICATE mode) and a
  transaction whose table the filters drop cut the runs, and the target ends equal to a real replica's tables.
* A lone transaction on an idle channel is applied at once: a run never waits for more.
* The in-place decoding of GTID, TABLE_MAP and rows events gives what `parse_event` gives, on a real binlog.
(kill -9 inside a run: tests/test_applier_batches.py, `serial-grouped`; an error in the middle of a run:
`test_error_in_the_middle_of_a_batch`, whose target has no binlog.)
"""

from __future__ import annotations

import time
from typing import Any

from binlogd.applier.raw_events import gtid_fields, native_event
from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    CRC_LEN,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    ROWS_EVENT_TYPES,
    TABLE_MAP_EVENT,
)
from binlogd.protocol.events import GtidBody, fde_checksum_alg, iter_binlog, parse_event

from tests.test_applier import url, wait_applied

SETUP = ("CREATE DATABASE d1; CREATE DATABASE d2;"
         " CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(20), n BIGINT UNSIGNED, f DOUBLE, dt DATETIME(6),"
         " dec1 DECIMAL(12,3), b BLOB) ENGINE=InnoDB; CREATE TABLE d2.t (id INT PRIMARY KEY) ENGINE=InnoDB")


def _com(target: Any) -> dict[str, int]:
    rows = target.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_binlog', 'Com_commit', 'Com_begin')")
    return {str(k): int(v) for k, v in rows}


def test_runs_cut_at_ddl_statements_flags_and_filters(mariadb: Any, applier: Any) -> None:
    primary = mariadb.primary()
    replica = mariadb("replica", 2, "--replicate-wild-ignore-table=d2.%")
    target = mariadb("target", 3)  # no binlog: the source's GTIDs are not kept, runs are grouped
    primary.execute(SETUP)
    txns = 0
    for i in range(1, 601):
        v = f"{i}, 'v{i}', {18446744073709551615 - i}, {i / 7}, '2026-11-28 12:00:{i % 60:02}.{i:06}', {i}.125, " \
            f"x'{i:04x}'"
        primary.query(f"INSERT INTO d1.t VALUES ({v})")
        txns += 1
        if i % 50 == 0:
            primary.query(f"ALTER TABLE d1.t COMMENT 'ddl {i}'")  # DDL: a run ends before it
        if i % 40 == 0:
            primary.query(f"INSERT INTO d2.t VALUES ({i})")  # dropped by the filter: its own transaction
        if i % 45 == 0:
            primary.execute(f"SET binlog_format=STATEMENT; UPDATE d1.t SET v = 'stmt' WHERE id = {i}")
        if i % 35 == 0:
            primary.execute(f"SET skip_replication=1; UPDATE d1.t SET v = 'flagged' WHERE id = {i - 1}; "
                            f"SET skip_replication=0")
        if i % 30 == 0:
            primary.execute(f"BEGIN; UPDATE d1.t SET n = 0 WHERE id = {i - 2}; DELETE FROM d1.t WHERE id = {i - 3};"
                            f" COMMIT")
        if i % 55 == 0:  # a transaction rolled back on the source with a non-transactional change: ROLLBACK
            primary.execute("CREATE TABLE IF NOT EXISTS d1.m (id INT) ENGINE=MyISAM")
            primary.execute(f"BEGIN; INSERT INTO d1.m VALUES ({i}); INSERT INTO d1.t VALUES ({10000 + i}, 'r', 0, 0,"
                            f" NOW(), 0, ''); ROLLBACK")
    want = primary.master_status()
    replica.change_master(primary.host, primary.port, use_gtid="slave_pos")
    replica.start_slave()
    before = _com(target)
    proc = applier(target, f"--channel=={url(primary)}", "--replicate-wild-ignore-table=d2.%")
    wait_applied(target, proc, want, timeout=120)
    replica.wait_slave_pos(*want, timeout=120)
    assert target.table_checksums(["d1", "d2"]) == replica.table_checksums(["d1", "d2"])
    assert target.table_checksums(["d2"]) == {}  # CREATE TABLE d2.t and its rows: dropped by the filter
    com = {k: v - before[k] for k, v in _com(target).items()}
    assert 0 < com["Com_binlog"] < txns // 4, com  # most of the 600 INSERTs went many per BINLOG statement
    assert " ERROR " not in proc.log() and "Traceback" not in proc.log()


def test_a_lone_transaction_is_not_delayed(mariadb: Any, applier: Any) -> None:
    primary = mariadb.primary()
    target = mariadb("target", 3)
    primary.execute(SETUP)
    proc = applier(target, f"--channel=={url(primary)}")
    wait_applied(target, proc, primary.master_status())
    for i in range(1, 6):  # idle channel: each INSERT alone, applied without waiting for company
        primary.query(f"INSERT INTO d1.t (id) VALUES ({i})")
        want = primary.master_status()
        t0 = time.monotonic()
        wait_applied(target, proc, want, timeout=30)
        assert time.monotonic() - t0 < 3.0
        assert target.query("SELECT COUNT(*) FROM d1.t") == [(i,)]


def test_in_place_decoding_equals_parse_event(mariadb: Any) -> None:
    primary = mariadb.primary()
    primary.execute(SETUP)
    for i in range(1, 30):
        primary.query(f"INSERT INTO d1.t VALUES ({i}, 'v', {i}, 1.5, NOW(6), 1.25, x'00ff')")
    primary.execute("UPDATE d1.t SET v = 'u' WHERE id < 10; DELETE FROM d1.t WHERE id > 20;"
                    " SET binlog_row_image=MINIMAL; UPDATE d1.t SET n = 7 WHERE id = 3")
    data = (primary.datadir / primary.binary_logs()[-1][0]).read_bytes()
    alg = None
    cache: dict[bytes, Any] = {}
    seen = {GTID_EVENT: 0, TABLE_MAP_EVENT: 0, "rows": 0}
    for _, raw in iter_binlog(data):
        typ = raw[4]
        if typ == FORMAT_DESCRIPTION_EVENT:
            alg = fde_checksum_alg(raw)
            continue
        assert alg == BINLOG_CHECKSUM_ALG_CRC32
        ref = parse_event(raw, alg)
        if typ == GTID_EVENT:
            body = ref.body
            assert isinstance(body, GtidBody)
            h = ref.header
            assert gtid_fields(raw, CRC_LEN) == (h.server_id, h.log_pos, h.flags, body.seq_no, body.domain_id,
                                                 body.flags2)
            assert gtid_fields(raw[:-1], CRC_LEN) is None  # a length the header does not give
            seen[GTID_EVENT] += 1
        elif typ == TABLE_MAP_EVENT or typ in ROWS_EVENT_TYPES:
            if typ == TABLE_MAP_EVENT and not seen[TABLE_MAP_EVENT]:
                assert native_event(raw, typ, CRC_LEN, cache) is None  # not seen before: parse_event decodes it
            if typ == TABLE_MAP_EVENT:
                cache[bytes(raw[19:-CRC_LEN])] = ref.body
            got = native_event(raw, typ, CRC_LEN, cache)
            assert got is not None and (got.header, got.body) == (ref.header, ref.body)
            seen[TABLE_MAP_EVENT if typ == TABLE_MAP_EVENT else "rows"] += 1
    assert seen[GTID_EVENT] > 30 and seen[TABLE_MAP_EVENT] > 30 and seen["rows"] > 30, seen
