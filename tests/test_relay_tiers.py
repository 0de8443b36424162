"""Relays in tiers: a real MariaDB 10.11 primary -> binlogd relay (tier 1) -> binlogd relay (tier 2, whose upstream
is tier 1) -> real 10.11 replicas at the leaves, one of them on tier 1.

The workload runs throughout: row-, statement- and mixed-format transactions from concurrent sessions (one of them
in a second GTID domain), transactions flagged with skip_replication (into a table of their own, so the filtering
leaves can be checked), DDL, FLUSH BINARY LOGS and a 17 MiB transaction (past the relay's 16 MiB spill threshold,
its rows event split over packets). A tier is killed with -9 several times under that load and restarted, each
time once both tiers relay again: tier 1 in one case, tier 2 in another, both alternately in a third; the cases
also vary which tier follows its upstream by GTID and which by file/pos.

What must hold end to end: every tier's files have the primary's names and bytes (the FDE's in-use flag aside),
SHOW MASTER STATUS / SHOW BINARY LOGS / @@gtid_binlog_pos / Gtid_IO_Pos are the primary's on both tiers, the
leaves reach the primary's file and position and their tables equal the primary's (the filtering leaves: minus the
flagged table), the GTID leaf runs in gtid_strict_mode (a duplicated or reordered GTID stops it) and its
gtid_slave_pos is the primary's gtid_binlog_pos, and it keeps replicating after the kills.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Binlogd, MariaDB
from tests.test_relay import relay_master_status, relay_status, stored_equals_upstream, wait_all_at_end

DB = "w"
BIG = 17 << 20  # one row: a rows event over 16 MiB in a group over the relay's SPILL_BYTES
CASES = {  # the tier killed at each kill, tier 1 follows the primary by GTID, tier 2 follows tier 1 by GTID
    "kill_tier1": ((1, 1, 1), False, True),
    "kill_tier2": ((2, 2, 2), True, False),
    "kill_both_gtid": ((2, 1, 2, 1), True, True),
}


def tier_args(upstream: Any, datadir: Path, server_id: int, gtid: bool) -> list[str]:
    return ["--upstream", f"mysql://root:@{upstream.host}:{upstream.port}", "--datadir", str(datadir),
            "--server-id", str(server_id), "--upstream-heartbeat", "1", "--upstream-retry-max", "0.5",
            *(["--upstream-use-gtid"] if gtid else [])]


def _query(server: Binlogd, sql: str) -> list[tuple[Any, ...]]:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def _positions(server: MariaDB | Binlogd) -> tuple[Any, ...]:
    """What a replica sees of a server's binlog: SHOW MASTER STATUS, SHOW BINARY LOGS, @@gtid_binlog_pos."""
    q = server.query if isinstance(server, MariaDB) else lambda sql: _query(server, sql)
    row = q("SHOW MASTER STATUS")[0]
    master = (str(row[0]), int(row[1]))
    logs = tuple((str(n), int(s)) for n, s, *_ in q("SHOW BINARY LOGS"))
    return master, logs, str(q("SELECT @@gtid_binlog_pos")[0][0])


def _heartbeats(tier: Binlogd) -> int:
    conn = tier.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW ALL SLAVES STATUS")
            row = cur.fetchone()
            return int(dict(zip([d[0] for d in cur.description], row or (), strict=True))["Slave_received_heartbeats"])
    finally:
        conn.close()


class Load:
    """Concurrent writers until `stop` is set: row and statement format, flagged transactions, DDL and rotations.

    Runs against the primary only (it is never restarted), so every commit it sees is a commit."""

    def __init__(self, primary: MariaDB) -> None:
        self.primary = primary
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.txns = 0
        self.flagged = 0
        self.ddl = 0
        self.errors: list[BaseException] = []

    def thread(self, target: Callable[..., None], *args: Any) -> threading.Thread:
        """A thread running `target`; what it raises stops the load and fails the test (`check`)."""
        def run() -> None:
            try:
                target(*args)
            except BaseException as e:
                self.errors.append(e)
                self.stop.set()
                raise

        return threading.Thread(target=run, name=getattr(target, "__name__", "load"))

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"the workload failed: {self.errors!r}") from self.errors[0]

    def setup(self) -> None:
        self.primary.execute(
            f"CREATE DATABASE {DB};"
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, w INT, val INT, note VARCHAR(200)) ENGINE=InnoDB;"
            f"CREATE TABLE {DB}.flagged (id INT PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB;"
            f"CREATE TABLE {DB}.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB")

    def _next(self) -> int:
        with self.lock:
            return next(self.ids)

    def writer(self, w: int, fmt: str) -> None:
        conn = self.primary.connect(autocommit=False)
        own: list[int] = []
        try:
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION binlog_format={fmt}")
                if fmt == "MIXED":  # a second GTID domain: the GTID positions compared have two
                    cur.execute("SET SESSION gtid_domain_id=1")
            for i in itertools.count():
                if self.stop.is_set():
                    return
                flagged = i % 5 == 3
                ids = [self._next() for _ in range(1 + i % 3)]
                with conn.cursor() as cur:
                    if flagged:
                        cur.execute("SET skip_replication=1")
                        cur.executemany(f"INSERT INTO {DB}.flagged VALUES (%s, %s)", [(r, fmt) for r in ids])
                    else:
                        cur.execute("SET skip_replication=0")
                        cur.executemany(f"INSERT INTO {DB}.t VALUES (%s, %s, %s, %s)",
                                        [(r, w, i, f"{fmt} " + "x" * (i % 150)) for r in ids])
                        if own:  # its own rows only: the writers never wait for each other's locks
                            cur.execute(f"UPDATE {DB}.t SET val = val + 1 WHERE id = %s", (own[i % len(own)],))
                conn.commit()
                if not flagged:
                    own.extend(ids)
                with self.lock:
                    self.txns += 1
                    self.flagged += flagged
                time.sleep(0.002)
        finally:
            conn.close()

    def ddl_and_rotations(self) -> None:
        for n in itertools.count(1):
            if self.stop.wait(0.4):
                return
            self.primary.execute(
                f"CREATE TABLE {DB}.d{n} (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO {DB}.d{n} VALUES ({n});"
                f"ALTER TABLE {DB}.d{n} ADD COLUMN c VARCHAR(10) DEFAULT 'c{n}';"
                + (f"DROP TABLE {DB}.d{n - 1};" if n % 2 == 0 else "")
                + ("FLUSH BINARY LOGS;" if n % 3 == 0 else ""))
            with self.lock:
                self.ddl += 1

    def big_transaction(self) -> None:
        self.primary.execute(f"BEGIN; INSERT INTO {DB}.big VALUES (1, REPEAT('a', {BIG})); "
                             f"INSERT INTO {DB}.big VALUES (2, 'small'); COMMIT")


def _wait_txns(load: Load, n: int, primary: MariaDB) -> None:
    before = load.txns
    primary.wait_until(lambda: load.txns >= before + n or load.stop.is_set(), timeout=90,
                       message=f"{n} more transactions")
    load.check()


def _restart(binlogd: Callable[..., Binlogd], server: Binlogd, args: list[str]) -> Binlogd:
    server.kill9()
    return binlogd(args, port=server.port)


def _wait_progress(load: Load, primary: MariaDB, tiers: tuple[Binlogd, ...]) -> None:
    """Until every tier has stored more than it had now (so the next kill hits a tier that is relaying again)."""
    since = [relay_master_status(t) or ("", 0) for t in tiers]

    def moved() -> bool:
        load.check()
        return all((relay_master_status(t) or ("", 0)) > s for t, s in zip(tiers, since, strict=True))

    primary.wait_until(moved, timeout=90, interval=0.05, message=lambda: f"tiers moving on from {since}: "
                       f"{[relay_master_status(t) for t in tiers]} {[relay_status(t) for t in tiers]}")


def _leaf(mariadb: Callable[..., MariaDB], name: str, sid: int, mode: str, *extra: str) -> MariaDB:
    r = mariadb(name, sid, "--max-allowed-packet=64M", *extra)
    r.set_skip_mode(mode)
    return r


def _tables(server: MariaDB, flagged: bool) -> dict[str, int | None]:
    sums = server.table_checksums([DB])
    if not flagged:
        sums.pop(f"{DB}.flagged")
    return sums


@pytest.mark.parametrize("case", list(CASES))
def test_three_tiers_converge_and_survive_kills(mariadb, binlogd, harness_dir: Path, case: str) -> None:
    kills, gtid1, gtid2 = CASES[case]
    with ThreadPoolExecutor(4) as pool:
        fp = pool.submit(mariadb.primary, "primary", 1, "--max-allowed-packet=64M", "--max-binlog-size=262144")
        fleaves = [pool.submit(_leaf, mariadb, *spec) for spec in (
            ("strict", 21, "REPLICATE", "--gtid-strict-mode=ON"),  # tier 2, GTID
            ("filepos", 22, "FILTER_ON_SLAVE"),  # tier 2, file/pos
            ("on_tier1", 23, "FILTER_ON_MASTER"))]  # tier 1, GTID
        primary = fp.result()
        strict, filepos, on_tier1 = (f.result() for f in fleaves)
    load = Load(primary)
    load.setup()
    args1 = tier_args(primary, harness_dir / "tier1", 101, gtid1)
    tier1 = binlogd(args1)
    primary.wait_until(lambda: relay_master_status(tier1) == primary.master_status(), timeout=60,
                       message="tier 1 has the primary's first file")
    args2 = tier_args(tier1, harness_dir / "tier2", 102, gtid2)
    tier2 = binlogd(args2)
    primary.wait_until(lambda: relay_master_status(tier2) == primary.master_status(), timeout=60,
                       message="tier 2 has the primary's first file")
    first_file = primary.binary_logs()[0][0]
    strict.change_master(tier2.host, tier2.port, use_gtid="slave_pos")
    filepos.change_master(tier2.host, tier2.port, use_gtid="no", log_file=first_file, log_pos=4)
    on_tier1.change_master(tier1.host, tier1.port, use_gtid="slave_pos")
    for r in (strict, filepos, on_tier1):
        r.start_slave()

    workers = [load.thread(load.writer, w, fmt) for w, fmt in enumerate(("ROW", "STATEMENT", "MIXED"))]
    workers.append(load.thread(load.ddl_and_rotations))
    for t in workers:
        t.start()
    try:
        for k, killed in enumerate(kills):
            if k == 0:  # the first kill lands while the relays store (or serve) the large transaction
                load.big_transaction()
            else:  # both tiers relay again (the restarted one recovered, the one below it reconnected)
                _wait_progress(load, primary, (tier1, tier2))
                _wait_txns(load, 20, primary)
            if killed == 1:
                tier1 = _restart(binlogd, tier1, args1)
            else:
                tier2 = _restart(binlogd, tier2, args2)
        _wait_progress(load, primary, (tier1, tier2))
    finally:
        load.stop.set()
        for t in workers:
            t.join()
    load.check()
    # end with a flagged transaction: the filtering leaves must still be moved to the primary's end
    primary.execute(f"SET skip_replication=1; INSERT INTO {DB}.flagged VALUES (-1, 'flagged last')")
    assert load.flagged and load.ddl >= 3, (load.flagged, load.ddl)

    end = wait_all_at_end(primary, (strict, filepos, on_tier1), timeout=120)
    # the tiers: the primary's names, positions, sizes and GTID state; its bytes, file by file
    # (polled against the primary's current figures: it may still add a BINLOG_CHECKPOINT after a rotation)
    for tier in (tier1, tier2):
        primary.wait_until(lambda t=tier: _positions(t) == _positions(primary), timeout=30, interval=0.1,
                           message=lambda t=tier: f"{_positions(t)} vs the primary's {_positions(primary)}")
    want = _positions(primary)
    assert want[0] >= end
    for tier in (tier1, tier2):
        assert _positions(tier) == want
        st = relay_status(tier)
        assert (st["Slave_IO_Running"], st["Last_IO_Errno"], st["Gtid_IO_Pos"]) == ("Yes", 0, want[2]), st
    assert relay_status(tier2)["Master_Server_Id"] == 101
    # idle now: tier 1 keeps tier 2's connection alive with heartbeats (counted, never stored)
    beats = _heartbeats(tier2)
    primary.wait_until(lambda: _heartbeats(tier2) > beats, timeout=20, message="tier 1's heartbeats")
    for datadir in (harness_dir / "tier1", harness_dir / "tier2"):
        assert len(stored_equals_upstream(datadir, primary)) >= 3  # the FLUSHes and the 256 KiB size rotated
    logs = "".join(s.log_text() for s in binlogd.servers)
    assert logs.count("relay: recovered") >= len(kills), "every restart resumes from the stored binlog"

    # the leaves: nothing lost, nothing applied twice
    assert _tables(strict, flagged=True) == _tables(primary, flagged=True)
    assert strict.gtid_slave_pos() == want[2]
    for leaf in (filepos, on_tier1):
        assert _tables(leaf, flagged=False) == _tables(primary, flagged=False), leaf.name
        assert leaf.query(f"SELECT COUNT(*) FROM {DB}.flagged") == [(0,)], leaf.name
    assert primary.query(f"SELECT COUNT(*) FROM {DB}.big") == [(2,)]

    # the strict GTID leaf keeps replicating through both tiers after the kills
    primary.execute(f"INSERT INTO {DB}.t VALUES (-5, 9, 9, 'after the kills'); UPDATE {DB}.t SET val=-1 WHERE id=1")
    wait_all_at_end(primary, (strict, filepos, on_tier1))
    assert _tables(strict, flagged=True) == _tables(primary, flagged=True)
    assert strict.gtid_slave_pos() == str(primary.query("SELECT @@gtid_binlog_pos")[0][0])
    st = strict.slave_status()
    assert (st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_SQL_Errno"]) == ("Yes", "Yes", 0), st


def _chain(mariadb: Any, binlogd: Any, harness_dir: Path, *primary_args: str, gtid2: bool = True,
           extra1: tuple[str, ...] = (), extra2: tuple[str, ...] = ()) -> tuple[MariaDB, Binlogd, Binlogd]:
    """A primary and two tiers, both caught up with the primary's first file."""
    primary = mariadb.primary("primary", 1, *primary_args)
    tier1 = binlogd([*tier_args(primary, harness_dir / "tier1", 101, False), *extra1])
    primary.wait_until(lambda: relay_master_status(tier1) == primary.master_status(), timeout=60, message="tier 1")
    tier2 = binlogd([*tier_args(tier1, harness_dir / "tier2", 102, gtid2), *extra2])
    primary.wait_until(lambda: relay_master_status(tier2) == primary.master_status(), timeout=60, message="tier 2")
    return primary, tier1, tier2


def test_three_tiers_without_checksums(mariadb, binlogd, harness_dir: Path) -> None:
    """binlog_checksum=NONE at the primary: both tiers store and serve events without CRCs, rotation included."""
    primary, tier1, tier2 = _chain(mariadb, binlogd, harness_dir, "--binlog-checksum=NONE")
    leaf = mariadb("leaf", 21)
    leaf.change_master(tier2.host, tier2.port, use_gtid="slave_pos")
    leaf.start_slave()
    primary.execute(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
                    f"INSERT INTO {DB}.t VALUES (1); FLUSH BINARY LOGS; INSERT INTO {DB}.t VALUES (2)")
    wait_all_at_end(primary, (leaf,))
    assert leaf.table_checksums([DB]) == primary.table_checksums([DB])
    for tier, d in ((tier1, "tier1"), (tier2, "tier2")):
        assert _query(tier, "SELECT @@global.binlog_checksum") == [("NONE",)]
        assert len(stored_equals_upstream(harness_dir / d, primary)) == 2


def _status(server: Any, like: str) -> dict[str, str]:
    rows = server.query(f"SHOW STATUS LIKE '{like}'") if isinstance(server, MariaDB) else _query(
        server, f"SHOW STATUS LIKE '{like}'")
    return {str(k): str(v) for k, v in rows}


def test_three_tiers_semi_sync(mariadb, binlogd, harness_dir: Path) -> None:
    """Semi-sync at every hop: tier 1 acknowledges the primary, tier 2 is tier 1's semi-sync replica and a real
    semi-sync replica reads tier 2."""
    semi = ("--rpl-semi-sync-slave-enabled", "--sync-binlog", "1")
    primary, tier1, tier2 = _chain(mariadb, binlogd, harness_dir, "--rpl-semi-sync-master-enabled=ON",
                                   "--rpl-semi-sync-master-timeout=60000", extra1=semi, extra2=semi)
    leaf = mariadb("leaf", 21, "--rpl-semi-sync-slave-enabled=ON")
    leaf.change_master(tier2.host, tier2.port, use_gtid="slave_pos")
    leaf.start_slave()
    for tier in (tier1, tier2):
        primary.wait_until(lambda t=tier: _status(t, "Rpl_semi_sync_slave_status") == {
            "Rpl_semi_sync_slave_status": "ON"}, timeout=30, message="semi-sync on")
    t0 = time.monotonic()
    primary.execute(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
                    + "".join(f"INSERT INTO {DB}.t VALUES ({i});" for i in range(20)) + "FLUSH BINARY LOGS;"
                    f"INSERT INTO {DB}.t VALUES (100)")
    assert time.monotonic() - t0 < 30
    wait_all_at_end(primary, (leaf,))
    assert leaf.table_checksums([DB]) == primary.table_checksums([DB])
    assert _status(primary, "Rpl_semi_sync_master_no_tx")["Rpl_semi_sync_master_no_tx"] == "0"
    assert _status(leaf, "Rpl_semi_sync_slave_status")["Rpl_semi_sync_slave_status"] == "ON"
    for d in ("tier1", "tier2"):
        stored_equals_upstream(harness_dir / d, primary)
    for tier in (tier1, tier2):
        st = relay_status(tier)
        assert (st["Slave_IO_Running"], st["Last_IO_Errno"]) == ("Yes", 0), st


def test_tiers_started_together(mariadb, binlogd, harness_dir: Path) -> None:
    """Tier 2 started while tier 1 has no binlog yet (its primary is down): tier 1 answers 1236 "Binary log is not
    open", which tier 2 shows and retries (Connecting) instead of stopping; the chain converges once the primary is
    up, without START SLAVE anywhere."""
    primary = mariadb.primary("primary", 1)
    primary.stop()
    tier1 = binlogd(tier_args(primary, harness_dir / "tier1", 101, False))
    tier2 = binlogd(tier_args(tier1, harness_dir / "tier2", 102, True))

    def refused() -> dict[str, Any] | None:
        st = relay_status(tier2)
        return st if st["Last_IO_Errno"] == 1236 else None

    st = primary.wait_until(refused, timeout=30, message=lambda: str(relay_status(tier2)))
    assert st["Slave_IO_Running"] == "Connecting" and "Binary log is not open" in st["Last_IO_Error"], st
    primary.restart()
    primary.execute(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
                    f"INSERT INTO {DB}.t VALUES (1)")
    primary.wait_until(lambda: relay_master_status(tier2) == primary.master_status(), timeout=60,
                       message=lambda: f"tier 2 {relay_status(tier2)}")
    st = relay_status(tier2)
    assert (st["Slave_IO_Running"], st["Last_IO_Errno"], st["Gtid_IO_Pos"]) == (
        "Yes", 0, primary.query("SELECT @@gtid_binlog_pos")[0][0]), st
    stored_equals_upstream(harness_dir / "tier2", primary)
