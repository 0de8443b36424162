"""Relay mode end to end: a real MariaDB 10.11 primary -> binlogd --upstream -> real 10.11 replicas.

The workload is concurrent row-format transactions from several sessions, some of them under
SET skip_replication=1; the test records itself which rows the flagged transactions wrote, so the expected
contents of the filtering replicas (primary minus exactly those transactions) are computed independently of
binlogd. binlogd is killed with -9 three times while the workload runs, and the upstream is restarted once while
it runs (a transaction its restart cut is looked up afterwards: its rows exist or they do not).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.constants import FLAGS_OFFSET

from tests.harness import Binlogd, MariaDB

DB = "w"
WORKERS = 4
FLAGGED_EVERY = 3  # worker 0 and 1 flag every third transaction


# ---- helpers shared with tests/test_relay_errors.py ------------------------------------------------------


def relay_args(upstream: MariaDB, datadir: Path, user: str = "root", password: str = "",
               port: int | None = None, gtid: bool = False) -> list[str]:
    return ["--upstream", f"mysql://{user}:{password}@{upstream.host}:{port or upstream.port}", "--datadir",
            str(datadir), "--server-id", "100", "--upstream-heartbeat", "1", "--upstream-retry-max", "0.5",
            *(["--upstream-use-gtid"] if gtid else [])]


def relay_status(server: Binlogd) -> dict[str, Any]:
    """binlogd's SHOW SLAVE STATUS as {column: value} ({} when it has none)."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone()
            return {} if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))
    finally:
        conn.close()


def relay_master_status(server: Binlogd) -> tuple[str, int] | None:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            return None if row is None else (str(row[0]), int(row[1]))
    except pymysql.Error:
        return None
    finally:
        conn.close()


def wait_relay_caught_up(server: Binlogd, upstream: MariaDB, timeout: float = 60) -> None:
    """Until binlogd's SHOW MASTER STATUS equals the upstream's (the upstream must be quiet)."""
    def done() -> bool:
        return relay_master_status(server) == upstream.master_status()

    upstream.wait_until(done, timeout=timeout, interval=0.05,
                        message=lambda: f"binlogd at {relay_master_status(server)} != upstream "
                        f"{upstream.master_status()}; status {relay_status(server)}")


def _stored_diff(datadir: Path, upstream: MariaDB, prefix_only: bool) -> tuple[str | None, list[str]]:
    """(why binlogd's files differ from the upstream's or None, the stored names)."""
    names = [n for n, _ in upstream.binary_logs()]
    index = [line.strip().removeprefix("./") for line in (datadir / "mysql-bin.index").read_text().splitlines()]
    if index != names[: len(index)] or not (prefix_only or index == names):
        return f"index {index} vs the upstream's {names}", index
    flag_at = 4 + FLAGS_OFFSET
    for i, n in enumerate(index):
        mine, theirs = bytearray((datadir / n).read_bytes()), bytearray((upstream.datadir / n).read_bytes())
        mine[flag_at] &= ~1
        theirs[flag_at] &= ~1
        if prefix_only and i == len(index) - 1:
            theirs = theirs[: len(mine)]
        if mine != theirs:
            at = next((k for k in range(min(len(mine), len(theirs))) if mine[k] != theirs[k]), None)
            return f"{n}: stored copy differs from the upstream's at {at} ({len(mine)} vs {len(theirs)} bytes)", index
    return None, index


def stored_equals_upstream(datadir: Path, upstream: MariaDB, prefix_only: bool = False) -> list[str]:
    """binlogd's files equal the upstream's byte for byte, apart from the FDE's in-use flag; returns the names.

    Polled for a while: the upstream writes a BINLOG_CHECKPOINT event asynchronously after a rotation, which the
    relay then stores too. `prefix_only`: binlogd's last file may be a prefix of the upstream's (it stopped).
    """
    upstream.wait_until(lambda: _stored_diff(datadir, upstream, prefix_only)[0] is None, timeout=20, interval=0.1,
                        message=lambda: str(_stored_diff(datadir, upstream, prefix_only)[0]))
    return _stored_diff(datadir, upstream, prefix_only)[1]


def wait_all_at_end(upstream: MariaDB, replicas: tuple[MariaDB, ...], timeout: float = 60) -> tuple[str, int]:
    """Until every replica has read and executed up to the upstream's end, with the end unchanged meanwhile (the
    upstream writes a BINLOG_CHECKPOINT event asynchronously after a rotation or restart)."""
    def at_end() -> tuple[str, int] | None:
        end = upstream.master_status()
        for r in replicas:
            st = r.slave_status()
            if st["Slave_SQL_Running"] != "Yes" and st["Last_SQL_Errno"]:
                raise AssertionError(f"{r.name}: {MariaDB.format_slave_status(st)}")
            if (st["Relay_Master_Log_File"], int(st["Exec_Master_Log_Pos"]), int(st["Read_Master_Log_Pos"])) != (
                    end[0], end[1], end[1]) or st["Slave_IO_Running"] != "Yes":
                return None
        return end if upstream.master_status() == end else None

    def why() -> str:
        pos = "; ".join(f"{r.name} {r.slave_status().get('Exec_Master_Log_Pos')}" for r in replicas)
        return f"replicas at the end: {pos} vs {upstream.master_status()}"

    return upstream.wait_until(at_end, timeout=timeout, interval=0.05, message=why)


class Workload:
    """Concurrent transactions; remembers the ids written by flagged (skip_replication) transactions."""

    def __init__(self, primary: MariaDB) -> None:
        self.primary = primary
        self.flagged_ids: set[int] = set()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.txns = 0
        self.cut = 0  # transactions whose connection the upstream's restart cut

    def setup(self) -> None:
        self.primary.execute(
            f"CREATE DATABASE {DB};"
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, worker INT, val INT, note VARCHAR(200)) ENGINE=InnoDB;"
            f"CREATE TABLE {DB}.side (id INT PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB;"
            f"SET skip_replication=1; CREATE TABLE {DB}.flagged_only (x INT) ENGINE=InnoDB;")

    def _next(self) -> int:
        with self.lock:
            return next(self.ids)

    def _reconnect(self) -> pymysql.connections.Connection:  # type: ignore[type-arg]
        """A new connection once the upstream answers again (it may be restarting)."""
        def attempt() -> pymysql.connections.Connection | None:  # type: ignore[type-arg]
            try:
                return self.primary.connect(autocommit=False)
            except pymysql.err.OperationalError:
                return None

        return self.primary.wait_until(attempt, timeout=60, interval=0.05, message="the upstream back")

    def _committed(self, conn: pymysql.connections.Connection, first_id: int) -> bool:  # type: ignore[type-arg]
        """Whether a transaction cut by a lost connection committed: its rows exist (ids are never reused)."""
        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {DB}.t WHERE id = %s", (first_id,))
            row = cur.fetchone()
        conn.commit()
        return bool(row and row[0])

    def worker(self, w: int, n: int) -> None:
        conn = self._reconnect()
        own: list[int] = []
        try:
            for i in range(n):
                flagged = w < 2 and i % FLAGGED_EVERY == 1
                ids = [self._next() for _ in range(1 + i % 3)]
                try:
                    with conn.cursor() as cur:
                        cur.execute(f"SET skip_replication={int(flagged)}")
                        for rid in ids:
                            cur.execute(f"INSERT INTO {DB}.t VALUES (%s, %s, %s, %s)",
                                        (rid, w, i, "x" * (i % 150)))
                        if flagged:
                            cur.execute(f"INSERT INTO {DB}.side VALUES (%s, 'flagged')", (ids[0],))
                        elif own:
                            cur.execute(f"UPDATE {DB}.t SET val = val + 1 WHERE id = %s", (own[i % len(own)],))
                    conn.commit()
                    committed = True
                except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
                    # the upstream restarted under us: find out whether the commit happened
                    conn.close()
                    conn = self._reconnect()
                    committed = self._committed(conn, ids[0])
                    with self.lock:
                        self.cut += 1
                if not committed:
                    continue
                with self.lock:
                    self.txns += 1
                    if flagged:
                        self.flagged_ids.update(ids)
                if not flagged:
                    own.extend(ids)
        finally:
            conn.close()

    def run(self, n: int) -> None:
        with ThreadPoolExecutor(WORKERS) as pool:
            for f in [pool.submit(self.worker, w, n) for w in range(WORKERS)]:
                f.result()


def _rows(server: MariaDB, where: str = "") -> list[tuple[Any, ...]]:
    return server.query(f"SELECT id, worker, val, note FROM {DB}.t {where} ORDER BY id")


def _has_table(server: MariaDB, name: str) -> bool:
    return bool(server.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema=%s AND "
                             "table_name=%s", DB, name)[0][0])


def _replica(mariadb: Callable[..., MariaDB], name: str, sid: int, mode: str) -> MariaDB:
    r = mariadb(name, sid)
    r.set_skip_mode(mode)
    return r


def _start_crashing(binlogd: Callable[..., Binlogd], server: Binlogd, args: list[str]) -> Binlogd:
    server.kill9()
    return binlogd(args, port=server.port)


@pytest.mark.parametrize("upstream_gtid", [False, True], ids=["filepos", "gtid"])
def test_relay_three_replicas_with_crashes(mariadb, binlogd, harness_dir: Path, upstream_gtid: bool) -> None:
    upstream = mariadb.primary("upstream", 1, "--binlog-annotate-row-events=ON", "--max-binlog-size=65536")
    with ThreadPoolExecutor(3) as pool:
        futs = [pool.submit(_replica, mariadb, n, sid, mode) for n, sid, mode in
                (("replicate", 11, "REPLICATE"), ("on_slave", 12, "FILTER_ON_SLAVE"),
                 ("on_master", 13, "FILTER_ON_MASTER"))]
        replicate, on_slave, on_master = (f.result() for f in futs)
    load = Workload(upstream)
    load.setup()
    datadir = harness_dir / "relay-data"
    args = relay_args(upstream, datadir, gtid=upstream_gtid)
    relay = binlogd(args)
    wait_relay_caught_up(relay, upstream)  # a fresh relay has no binlog (dumps get 1236) until the first file
    first_file = upstream.binary_logs()[0][0]
    replicate.change_master(relay.host, relay.port, use_gtid="slave_pos")
    on_slave.change_master(relay.host, relay.port, use_gtid="no", log_file=first_file, log_pos=4)
    on_master.change_master(relay.host, relay.port, use_gtid="slave_pos")
    for r in (replicate, on_slave, on_master):
        r.start_slave()

    # phase 1: the workload runs while binlogd is killed -9 twice (each time after the upstream has moved on)
    phase = threading.Thread(target=load.run, args=(60,))
    phase.start()
    try:
        for _ in range(2):
            before = load.txns
            upstream.wait_until(lambda b=before: load.txns >= b + 25 or not phase.is_alive(), timeout=60,
                                message="workload progress")
            relay = _start_crashing(binlogd, relay, args)
    finally:
        phase.join()
    # phase 2: the upstream restarts once during the workload (the workers reconnect and find out whether a cut
    # transaction committed), then binlogd is killed -9 a third time
    phase = threading.Thread(target=load.run, args=(60,))
    phase.start()
    try:
        before = load.txns
        upstream.wait_until(lambda: load.txns >= before + 25 or not phase.is_alive(), timeout=60,
                            message="workload progress")
        upstream.restart()
        before = load.txns
        upstream.wait_until(lambda: load.txns >= before + 25 or not phase.is_alive(), timeout=60,
                            message="workload progress")
        relay = _start_crashing(binlogd, relay, args)
    finally:
        phase.join()
    # end with flagged events, so FILTER_ON_MASTER's position must be moved over them
    upstream.execute(f"SET skip_replication=1; INSERT INTO {DB}.side VALUES (-1, 'flagged last')")

    wait_relay_caught_up(relay, upstream)
    end_file, end_pos = wait_all_at_end(upstream, (replicate, on_slave, on_master))

    assert load.flagged_ids, "the workload must flag transactions"
    assert load.cut >= 1, "the upstream's restart must have hit the running workload"
    assert replicate.table_checksums([DB]) == upstream.table_checksums([DB])
    flagged = ",".join(str(i) for i in sorted(load.flagged_ids))
    expected = _rows(upstream, f"WHERE id NOT IN ({flagged})")
    for r in (on_slave, on_master):
        assert _rows(r) == expected, r.name
        assert r.query(f"SELECT COUNT(*) FROM {DB}.side")[0][0] == 0
        assert not _has_table(r, "flagged_only")
    assert _has_table(replicate, "flagged_only")

    def relay_at_end() -> dict[str, Any] | None:  # the upstream may add a BINLOG_CHECKPOINT after (end_file, end_pos)
        st = relay_status(relay)
        return st if (st["Slave_IO_Running"], st["Last_IO_Errno"], st["Master_Log_File"],
                      int(st["Read_Master_Log_Pos"])) == ("Yes", 0, *upstream.master_status()) else None

    st = upstream.wait_until(relay_at_end, timeout=30, interval=0.05,
                             message=lambda: f"relay {relay_status(relay)} vs upstream {upstream.master_status()}")
    assert (st["Master_Log_File"], int(st["Read_Master_Log_Pos"])) >= (end_file, end_pos)
    assert st["Using_Gtid"] == ("Slave_Pos" if upstream_gtid else "No")
    assert st["Gtid_IO_Pos"] == upstream.query("SELECT @@gtid_binlog_pos")[0][0]
    stored_equals_upstream(datadir, upstream)
    logs = "".join(s.log_text() for s in binlogd.servers)
    assert logs.count("relay: recovered") >= 3, "every restart resumes from the stored binlog"

    # a replica moves from binlogd to the upstream with the same coordinates and carries on
    replicate.stop_slave()
    replicate.change_master(upstream.host, upstream.port, use_gtid="slave_pos")
    replicate.start_slave()
    on_slave.stop_slave()
    st = on_slave.slave_status()
    on_slave.change_master(upstream.host, upstream.port, use_gtid="no", log_file=st["Relay_Master_Log_File"],
                           log_pos=int(st["Exec_Master_Log_Pos"]))
    on_slave.start_slave()
    upstream.execute(f"INSERT INTO {DB}.t VALUES (-5, 9, 9, 'after the move'); UPDATE {DB}.t SET val=-1 WHERE id=1")
    wait_all_at_end(upstream, (replicate, on_slave))
    assert replicate.table_checksums([DB]) == upstream.table_checksums([DB])
    assert _rows(on_slave) == _rows(upstream, f"WHERE id NOT IN ({flagged})")



def test_relay_transaction_larger_than_the_spill_threshold(mariadb, binlogd, harness_dir: Path) -> None:
    """A 24 MiB transaction (events over 16 MiB arrive split across packets; the group is written to the file
    before its end, unpublished): stored byte for byte, served whole to a replica."""
    upstream = mariadb.primary("upstream", 1, "--max-allowed-packet=64M")
    replica = mariadb("replica", 2, "--max-allowed-packet=64M")
    datadir = harness_dir / "d"
    relay = binlogd(relay_args(upstream, datadir))
    wait_relay_caught_up(relay, upstream)
    upstream.execute(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB")
    replica.change_master(relay.host, relay.port, use_gtid="slave_pos")
    replica.start_slave()
    upstream.execute(f"BEGIN; INSERT INTO {DB}.big VALUES (1, REPEAT('a', 17 << 20)); "
                     f"INSERT INTO {DB}.big VALUES (2, REPEAT('b', 7 << 20)); COMMIT")
    wait_relay_caught_up(relay, upstream)
    stored_equals_upstream(datadir, upstream)
    wait_all_at_end(upstream, (replica,))
    assert replica.table_checksums([DB]) == upstream.table_checksums([DB])


def test_relay_upstream_without_checksums(mariadb, binlogd, harness_dir: Path) -> None:
    """binlog_checksum=NONE upstream: events without CRCs are stored as they are, rotation included."""
    upstream = mariadb.primary("upstream", 1, "--binlog-checksum=NONE")
    replica = mariadb("replica", 2)
    datadir = harness_dir / "d"
    relay = binlogd(relay_args(upstream, datadir))
    wait_relay_caught_up(relay, upstream)
    replica.change_master(relay.host, relay.port, use_gtid="slave_pos")
    replica.start_slave()
    upstream.execute(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
                     f"INSERT INTO {DB}.t VALUES (1); FLUSH BINARY LOGS; INSERT INTO {DB}.t VALUES (2)")
    wait_relay_caught_up(relay, upstream)
    assert len(stored_equals_upstream(datadir, upstream)) == 2
    wait_all_at_end(upstream, (replica,))
    assert replica.table_checksums([DB]) == upstream.table_checksums([DB])
