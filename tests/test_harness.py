"""Tests of the test harness itself, against real MariaDB 10.11 servers.

They pin down what other end-to-end tests rely on: instances start fast and in parallel on their own
ports, replication helpers wait for the right thing, skip_replication behaves as on the oracle, a
real primary can serve copied binlog files, and nothing is left running afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import binlogd.testing.binlogd_server as hb
import binlogd.testing.mariadb as hm
from tests.harness import BinlogdStartError, MariaDB, SlaveWaitError, free_port
from tests.oracle_data import oracle_dir

if TYPE_CHECKING:
    from binlogd.testing.servers import BinlogdFactory, MariaDBFactory

def _oracle_dir() -> Path:
    return oracle_dir()


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def _ids(db: MariaDB, table: str) -> list[int]:
    return [int(r[0]) for r in db.query(f"SELECT id FROM {table} ORDER BY id")]


# ---- basics ------------------------------------------------------------------------------------


def test_free_port_hands_out_distinct_bindable_ports() -> None:
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == 20
    for p in ports[:3]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_two_instances_start_in_parallel(mariadb: MariaDBFactory) -> None:
    t0 = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda nid: mariadb(nid[0], nid[1]), [("a", 11), ("b", 12)])
    wall = time.monotonic() - t0
    assert a.port != b.port
    for inst, sid in ((a, 11), (b, 12)):
        port, server_id, datadir = inst.query("SELECT @@port, @@server_id, @@datadir")[0]
        assert (port, server_id) == (inst.port, sid)
        assert os.path.realpath(datadir) == os.path.realpath(inst.datadir)
        assert int(inst.pid_file.read_text()) == inst.pid
    print(f"parallel start of 2: {wall:.2f} s (each {a.start_seconds:.2f} / {b.start_seconds:.2f} s)")


def test_port_taken_meanwhile_is_retried(mariadb: MariaDBFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """free_port() races with other processes; a start that loses the race retries on a new port."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        real = hm.free_port
        handed: list[int] = []

        def fake_free_port() -> int:
            port = taken if not handed else real()
            handed.append(port)
            return port

        monkeypatch.setattr(hm, "free_port", fake_free_port)
        db = mariadb("retry", 1)
    assert handed[0] == taken and db.port == handed[-1] != taken
    assert "Address already in use" in db.error_log.read_text()
    assert db.query("SELECT @@port") == [(db.port,)]


def test_query_and_execute(mariadb: MariaDBFactory) -> None:
    db = mariadb("q", 1)
    results = db.execute(
        "CREATE DATABASE x; CREATE TABLE x.t (id INT PRIMARY KEY, v VARCHAR(10));"
        "INSERT INTO x.t VALUES (1,'a'),(2,'b'); SET @v='c'; INSERT INTO x.t VALUES (3,@v);"
        "SELECT v FROM x.t ORDER BY id"
    )
    assert results[-1] == [("a",), ("b",), ("c",)]
    assert db.query("SELECT v FROM x.t WHERE id = %s", 2) == [("b",)]
    assert db.query("SELECT '100%'") == [("100%",)]  # no args: '%' is not a placeholder
    with db.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@autocommit")
        assert cur.fetchone() == (1,)
    sums = db.table_checksums(["x", "mysql_nonexistent"])
    assert list(sums) == ["x.t"] and isinstance(sums["x.t"], int)


# ---- replication -------------------------------------------------------------------------------


def test_primary_replica_replication(mariadb: MariaDBFactory) -> None:
    with ThreadPoolExecutor(2) as pool:
        f_primary = pool.submit(mariadb.primary, "primary", 1)
        f_replica = pool.submit(mariadb, "replica", 2)
        primary, replica = f_primary.result(), f_replica.result()
    replica.change_master(primary.host, primary.port)
    replica.start_slave()
    primary.execute(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB;"
        "INSERT INTO d.t VALUES (1,'one'),(2,'two'); UPDATE d.t SET v='zwei' WHERE id=2;"
        "CREATE TABLE d.m (k INT) ENGINE=MyISAM; INSERT INTO d.m VALUES (7)"
    )
    file, pos = primary.master_status()
    t0 = time.monotonic()
    status = replica.wait_slave_pos(file, pos)
    print(f"replica caught up to {file}:{pos} in {1000 * (time.monotonic() - t0):.0f} ms")
    assert status["Slave_IO_Running"] == "Yes" and status["Slave_SQL_Running"] == "Yes"
    assert status["Using_Gtid"] == "Slave_Pos"
    sums = primary.table_checksums(["d"])
    assert set(sums) == {"d.t", "d.m"} and all(v is not None for v in sums.values())
    assert replica.table_checksums(["d"]) == sums
    assert replica.gtid_slave_pos() == primary.query("SELECT @@gtid_binlog_pos")[0][0]

    # Errors end the wait at once, with the replica's own words in the message. (Waiting for the
    # CHANGE MASTER position itself would succeed at once: a fresh replica already "is" there.)
    replica.stop_slave()
    replica.change_master(primary.host, primary.port, log_file="mysql-bin.000099", log_pos=4)
    replica.start_slave()
    t0 = time.monotonic()
    with pytest.raises(SlaveWaitError) as err:
        replica.wait_slave_pos("mysql-bin.000099", 1000, timeout=20)
    assert time.monotonic() - t0 < 10
    assert "Last_IO_Error" in str(err.value) and "1236" in str(err.value)
    assert err.value.status["Last_IO_Errno"] == 1236


def test_skip_replication_filter_on_slave(mariadb: MariaDBFactory) -> None:
    with ThreadPoolExecutor(3) as pool:
        primary, r_all, r_filter = pool.map(
            lambda a: mariadb(*a),
            [
                ("primary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW"),
                ("replicate", 2),
                ("filter", 3),
            ],
        )
    r_filter.set_skip_mode("FILTER_ON_SLAVE")
    assert r_filter.query("SELECT @@replicate_events_marked_for_skip") == [("FILTER_ON_SLAVE",)]
    for r in (r_all, r_filter):
        r.change_master(primary.host, primary.port)
        r.start_slave()
    primary.execute("CREATE DATABASE s; CREATE TABLE s.t (id INT PRIMARY KEY); INSERT INTO s.t VALUES (1)")
    # One session: the SET applies to both following statements, and not to later query() calls.
    primary.execute("SET skip_replication=1; INSERT INTO s.t VALUES (2); CREATE TABLE s.skipped (x INT)")
    primary.query("INSERT INTO s.t VALUES (3)")
    for r in (r_all, r_filter):
        r.wait_caught_up(primary)
    assert _ids(primary, "s.t") == [1, 2, 3]
    assert _ids(r_all, "s.t") == [1, 2, 3]
    assert _ids(r_filter, "s.t") == [1, 3]
    assert r_all.table_checksums(["s"]) == primary.table_checksums(["s"])
    assert set(r_filter.table_checksums(["s"])) == {"s.t"}
    assert r_filter.gtid_slave_pos() == r_all.gtid_slave_pos()  # filtered GTIDs are not holes


# ---- a real primary serving copied binlog files ------------------------------------------------


def test_primary_serves_copied_oracle_binlogs(mariadb: MariaDBFactory) -> None:
    oracle = _oracle_dir()
    if oracle is None:  # never: oracle_dir() fails the test instead
        pytest.fail(
            "oracle binlogs not found (set BINLOGD_ORACLE_DIR or copy shared/oracle/mariadb-10.11/dump "
            "to tests/data/mariadb-10.11/dump); test_primary_serves_generated_binlogs covers the mechanism"
        )
    sources = [oracle / "mysql-bin.000001", oracle / "mysql-bin.000002"]
    primary = mariadb.primary_from_binlogs("served", 1, sources)

    # The copies stay byte-identical; mariadbd adds exactly one new file and lists it in the index.
    for src in sources:
        assert (primary.datadir / src.name).read_bytes() == src.read_bytes()
    assert (primary.datadir / "mysql-bin.index").read_text() == (
        "./mysql-bin.000001\n./mysql-bin.000002\n./mysql-bin.000003\n"
    )
    assert primary.binary_logs() == [
        ("mysql-bin.000001", 3293),
        ("mysql-bin.000002", 624),
        ("mysql-bin.000003", 342),
    ]
    assert primary.master_status() == ("mysql-bin.000003", 342)
    events = primary.query("SHOW BINLOG EVENTS IN 'mysql-bin.000003'")
    assert [(e[1], e[2], e[4], e[5]) for e in events] == [
        (4, "Format_desc", 256, "Server ver: " + primary.query("SELECT VERSION()")[0][0] + ", Binlog ver: 4"),
        (256, "Gtid_list", 299, "[0-1-13]"),
        (299, "Binlog_checkpoint", 342, "mysql-bin.000003"),
    ]
    assert primary.query("SELECT @@gtid_binlog_state") == [("0-1-13",)]
    # 000002 was copied while in use (FDE flag 0x1): binlog crash recovery runs, changing nothing.
    assert "Recovering after a crash using mysql-bin" in primary.error_log.read_text()
    assert primary.query("SHOW DATABASES LIKE 'd'") == []  # serving is not applying

    with ThreadPoolExecutor(2) as pool:
        r_all, r_filter = pool.map(lambda a: mariadb(*a), [("replicate", 2), ("filter", 3)])
    r_filter.set_skip_mode("FILTER_ON_SLAVE")
    for r in (r_all, r_filter):
        r.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
        r.start_slave()
    for r in (r_all, r_filter):
        status = r.wait_slave_pos(*primary.master_status())
        assert status["Using_Gtid"] == "No"
        assert r.gtid_slave_pos() == "0-1-13"
    assert r_all.query("SHOW TABLES FROM d") == [("skipped_ddl",), ("t",)]
    assert r_all.query("SELECT id, v, n FROM d.t ORDER BY id") == [
        (1, "normal autocommit", 2),
        (2, "skip autocommit", None),
        (4, "multi-row b", 6),
        (5, "trx1", 1),
        (6, "skip trx", 6),
        (7, "user var", 7),
        (8, "trx2", 8),
        (9, "after rotate", 9),
        (10, "skip stmt-format", 10),
    ]
    # The skip_replication flags inside the copied files are honoured: GTIDs 0-1-4, 8, 9, 10 filtered.
    assert r_filter.query("SHOW TABLES FROM d") == [("t",)]
    assert r_filter.query("SELECT id, n FROM d.t ORDER BY id") == [
        (1, 2),
        (4, None),
        (5, 1),
        (7, 7),
        (8, 8),
        (9, 9),
    ]


def test_primary_serves_generated_binlogs(mariadb: MariaDBFactory) -> None:
    """Self-contained (no oracle files): binlogs of a real primary, served again by another one."""
    source = mariadb.primary("source", 1)
    source.execute(
        "CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY, v TEXT);"
        "INSERT INTO g.t VALUES (1, 'a'), (2, REPEAT('b', 3000)); FLUSH BINARY LOGS;"
        "UPDATE g.t SET v = 'c' WHERE id = 1; DELETE FROM g.t WHERE id = 2; FLUSH BINARY LOGS;"
        "INSERT INTO g.t VALUES (3, 'd')"
    )
    expected = source.table_checksums(["g"])
    gtid = source.query("SELECT @@gtid_binlog_pos")[0][0]
    source.stop()  # clean shutdown: the last file's in-use flag is cleared
    files = sorted(source.datadir.glob("mysql-bin.[0-9]*"))
    assert [f.name for f in files] == ["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000003"]

    # A different server_id on the serving primary does not matter: events keep their own (1).
    primary = mariadb.primary_from_binlogs("served", 5, files)
    logs = primary.binary_logs()
    assert logs[:3] == [(f.name, f.stat().st_size) for f in files]
    assert logs[3][0] == "mysql-bin.000004" and len(logs) == 4
    assert primary.master_status() == logs[3]
    assert "Recovering after a crash" not in primary.error_log.read_text()

    replica = mariadb("replica", 2)
    replica.change_master(primary.host, primary.port, log_file="mysql-bin.000001", log_pos=4)
    replica.start_slave()
    replica.wait_caught_up(primary)
    assert replica.table_checksums(["g"]) == expected
    assert replica.gtid_slave_pos() == gtid


def test_binlog_names_are_validated(tmp_path: Path) -> None:
    odd = tmp_path / "binlog.1"
    odd.write_bytes(b"\xfebin")
    with pytest.raises(ValueError, match=r"mysql-bin\.NNNNNN"):
        hm.binlog_datadir_setup([odd])
    a, b = tmp_path / "mysql-bin.000002", tmp_path / "mysql-bin.000001"
    a.write_bytes(b"\xfebin")
    b.write_bytes(b"\xfebin")
    with pytest.raises(ValueError, match="increasing"):
        hm.binlog_datadir_setup([a, b])


# ---- teardown ----------------------------------------------------------------------------------


def test_stop_kill9_restart_leave_no_process(mariadb: MariaDBFactory) -> None:
    db = mariadb("life", 1, "--log-bin=mysql-bin")
    db.execute("CREATE DATABASE k; CREATE TABLE k.t (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO k.t VALUES (1)")
    pid = db.pid
    t0 = time.monotonic()
    db.stop()
    stop_ms = 1000 * (time.monotonic() - t0)
    assert _gone(pid) and not db.is_running  # our child: reaped, not even a zombie
    db.stop()  # idempotent

    t0 = time.monotonic()
    db.restart()
    restart_ms = 1000 * (time.monotonic() - t0)
    assert db.pid != pid and _ids(db, "k.t") == [1]
    db.query("INSERT INTO k.t VALUES (2)")
    crashed = db.pid
    db.kill9()
    assert _gone(crashed)
    db.restart()  # crash recovery
    assert _ids(db, "k.t") == [1, 2]
    last = db.pid
    db.stop()
    assert _gone(last)
    print(f"stop {stop_ms:.0f} ms, restart {restart_ms:.0f} ms")


def test_fixture_teardown_stops_everything(mariadb: MariaDBFactory) -> None:
    """The factory's own teardown (used after every test, pass or fail) leaves no process."""
    dbs = [mariadb(f"t{i}", i) for i in (1, 2)]
    pids = [d.pid for d in dbs]
    assert all(not _gone(p) for p in pids)
    mariadb.stop_all()
    assert all(_gone(p) for p in pids)


# ---- binlogd subprocess harness ----------------------------------------------------------------

@pytest.fixture
def oracle_binlog_dir(harness_dir: Path) -> Path:
    d = harness_dir / "oracle-binlogs"
    d.mkdir()
    for n in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copyfile(_oracle_dir() / n, d / n)
    return d


def test_binlogd_harness_start_stop_kill(binlogd: BinlogdFactory, oracle_binlog_dir: Path) -> None:
    srv = binlogd(["--binlog-dir", str(oracle_binlog_dir)])
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    assert f":{srv.port}" in srv.log_text()
    pid = srv.pid
    assert srv.stop() == 0
    assert _gone(pid) and "shutting down" in srv.log_text()

    crashed = binlogd(["--binlog-dir", str(oracle_binlog_dir)])
    assert crashed.kill9() == -9 and _gone(crashed.pid)


def test_binlogd_start_failure_shows_log(binlogd: BinlogdFactory, harness_dir: Path) -> None:
    with pytest.raises(BinlogdStartError, match="does not exist"):
        binlogd(["--binlog-dir", str(harness_dir / "no-such-dir")])


def test_binlogd_port_in_use_is_retried(
    binlogd: BinlogdFactory, oracle_binlog_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        handed: list[int] = []

        def fake_free_port() -> int:
            port = taken if not handed else free_port()
            handed.append(port)
            return port

        monkeypatch.setattr(hb, "free_port", fake_free_port)
        srv = binlogd(["--binlog-dir", str(oracle_binlog_dir)])
    assert handed[0] == taken and srv.port == handed[-1] != taken
    assert "cannot listen" in srv.log_text()


def test_binlogd_real_server_starts_and_stops(
    binlogd: BinlogdFactory, mariadb: MariaDBFactory, harness_dir: Path
) -> None:
    source = mariadb.primary("source", 1)
    source.execute("CREATE DATABASE b; CREATE TABLE b.t (id INT PRIMARY KEY); INSERT INTO b.t VALUES (1)")
    source.stop()
    binlog_dir = harness_dir / "binlogs"
    binlog_dir.mkdir()
    for f in [source.datadir / "mysql-bin.index", *source.datadir.glob("mysql-bin.[0-9]*")]:
        shutil.copyfile(f, binlog_dir / f.name)
    srv = binlogd(["--binlog-dir", str(binlog_dir), "--server-id", "1"])
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone()[0] == 1
    pid = srv.pid
    srv.stop()
    assert _gone(pid)
