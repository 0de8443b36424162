"""Crash safety of the standalone primary: kill -9 during a burst of concurrent writes, then restart.

The restart truncates what the crash left half-written (here, on top of whatever the kill interrupted, half of an
event appended to the active file), every binlog file then passes a full CRC check, every acknowledged statement
is in the binlog, the GTID sequence continues, and a real 10.11 replica that was connected before the crash
continues without error or duplicate.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pymysql
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.constants import GTID_EVENT, QUERY_EVENT
from binlogd.protocol.events import parse_event

from binlogd.testing import free_port, wait_until

WRITERS = 8  # the concurrency the issue asks the server to take


def _connect(server: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True)


def _one(server: Any, sql: str) -> Any:
    conn = _connect(server)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            row = cur.fetchone()
            return None if row is None else row[0]
    finally:
        conn.close()


def _binlog(datadir: Path) -> tuple[list[int], int]:
    """(ids inserted by the logged statements, number of GTIDs) over every file of the index."""
    ids: list[int] = []
    gtids = 0
    for line in (datadir / "mysql-bin.index").read_text().splitlines():
        data = (datadir / line.removeprefix("./")).read_bytes()
        verify(data)
        res = scan(data)
        assert not res.torn and res.end == len(data), line
        for ev in res.events:
            if ev.type_code == GTID_EVENT:
                gtids += 1
            elif ev.type_code == QUERY_EVENT:
                q = parse_event(data[ev.pos : ev.end], 1).body.query.decode()
                m = re.fullmatch(r"INSERT INTO c\.t VALUES \((\d+), \d+\)", q)
                if m:
                    ids.append(int(m.group(1)))
    return ids, gtids


def test_kill9_mid_burst_then_restart(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    datadir = harness_dir / "data"
    port = free_port()
    args = ["--datadir", str(datadir), "--no-ledger"]
    first = binlogd(args, port=port)
    replica = mariadb("replica", 20)
    conn = _connect(first)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE c")
        cur.execute("CREATE TABLE c.t (id INT PRIMARY KEY, w INT)")
    conn.close()
    replica.change_master(first.host, port)
    replica.start_slave()

    acked: list[int] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        try:
            c = _connect(first)
            with c.cursor() as cur:
                for i in range(1_000_000):
                    cur.execute(f"INSERT INTO c.t VALUES ({w * 1_000_000 + i}, {w})")
                    with lock:
                        acked.append(w * 1_000_000 + i)
        except (pymysql.MySQLError, OSError):
            return  # the server died under us

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    wait_until(lambda: len(acked) >= 400, 30, 0.01, "400 acknowledged inserts")
    first.kill9()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)

    # a torn write on top of what the kill left: the first half of a GTID event at the end of the active file
    active = datadir / (datadir / "mysql-bin.index").read_text().splitlines()[-1].removeprefix("./")
    data = active.read_bytes()
    last_gtid = [e for e in scan(data).events if e.type_code == GTID_EVENT][-1]
    with open(active, "ab") as f:
        f.write(data[last_gtid.pos : last_gtid.pos + last_gtid.length // 2])

    second = binlogd(args, port=port)
    assert "crash recovery" in second.log_text() or "truncating" in second.log_text()
    logged, gtids = _binlog(datadir)  # raises on a bad CRC or a torn event
    assert len(logged) == len(set(logged)), "a statement logged twice"
    assert set(acked) <= set(logged), "an acknowledged statement was lost"
    assert _one(second, "SELECT @@gtid_binlog_pos") == f"0-1-{gtids}"
    conn = _connect(second)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO c.t VALUES (-1, -1)")
    conn.close()
    assert _one(second, "SELECT @@gtid_binlog_pos") == f"0-1-{gtids + 1}"


    conn = _connect(second)
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    conn.close()
    replica.wait_slave_pos(file, int(pos), timeout=60)
    rows = {int(r[0]) for r in replica.query("SELECT id FROM c.t")}
    assert rows == set(logged) | {-1}
