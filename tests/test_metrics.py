"""`binlogd serve --metrics-port`: Prometheus text scraped from a running binlogd with real clients.

* Per replica, during live dumps (the harness's raw dump client, capability 4 and 1, skip_replication=1): the
  counters equal the audit ledger's records of that connection and what the client itself received.
* Standalone: Binlog_commits / group commits / fsyncs after writes, against SHOW MASTER STATUS and the GTID.
* The HTTP surface: only /metrics, 404 / 405 / 400 / 431, never a traceback; the port in use refuses the start.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from binlogd.testing.ledger_view import DumpConnection
from binlogd.testing.mariadb import HOST, free_port, wait_until
from tests.dumpclient import DumpCapture, raw_dump
from tests.metrics_scrape import replica_series, scrape, value


def dump_cmd(server_id: int, file: str, pos: int = 4, flags: int = 0) -> bytes:
    return struct.pack("<BIHI", 0x12, pos, flags, server_id) + file.encode()


def packets(c: DumpConnection) -> int:
    """Event packets the ledger says went out: as stored, rewritten by a type rule of the connection inside a run
    of sends (`policy`), as a dummy or BEGIN, fakes. Exact for capabilities 4 and 1, where no type rule makes a
    hole (each `policy` event was sent rewritten)."""
    return c.sent + c.policy + c.dummies + c.count("begin") + c.count("fake")


def flagged_events(path: Path) -> int:
    """Events of a binlog file with LOG_EVENT_SKIP_REPLICATION_F (0x8000)."""
    data, p, n = path.read_bytes(), 4, 0
    while p + 19 <= len(data):
        (length,) = struct.unpack_from("<I", data, p + 9)
        n += bool(struct.unpack_from("<H", data, p + 17)[0] & 0x8000)
        p += length
    return n


def http(port: int, raw: bytes) -> bytes:
    """Send `raw` on a fresh connection, return everything the server answers before closing."""
    with socket.create_connection((HOST, port), timeout=10) as s:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


WORKLOAD = [
    "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))",
    *[f"INSERT INTO shop.t VALUES ({i}, 'plain')" for i in range(1, 6)],
    "SET skip_replication=1",
    *[f"INSERT INTO shop.t VALUES ({i}, 'flagged')" for i in range(6, 9)],
    "SET skip_replication=0",
    "BEGIN", "INSERT INTO shop.t VALUES (9, 'trx')", "INSERT INTO shop.t VALUES (10, 'trx')", "COMMIT",
]


def test_live_dumps_match_the_ledger_and_what_the_clients_received(binlogd):
    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport)])
    server.execute(";".join(WORKLOAD))
    file, end = server.master_status()
    assert server.binlog_dir is not None
    flagged = flagged_events(server.binlog_dir / file)
    assert flagged >= 6  # 3 flagged groups
    captures: dict[int, DumpCapture] = {}
    clients = {4: 41, 1: 11}  # capability -> server_id: holes for 4, same-length dummies for 1

    def dump(cap: int) -> None:
        stmts = [f"SET @mariadb_slave_capability={cap}", "SET @master_binlog_checksum='CRC32'",
                 "SET skip_replication=1"]
        captures[cap] = raw_dump(server.host, server.port, stmts, dump_cmd(clients[cap], "mysql-bin.000001"),
                                 idle_timeout=30, max_seconds=8)

    threads = [threading.Thread(target=dump, args=(cap,)) for cap in clients]
    for t in threads:
        t.start()
    # both dumps are live and caught up: nothing behind the end
    samples = wait_until(lambda: (s := scrape(mport)) and value(s, "binlogd_replicas_connected") == 2 and all(
        v == 0 for v in replica_series(s, "binlogd_replica_behind_bytes").values()) and s, 10, 0.05,
        "two caught-up dumps in the metrics")
    assert value(samples, "binlogd_binlog_end_position") == end
    assert value(samples, "binlogd_binlog_info", file=file) == 1
    by_sid = {dict(lv)["server_id"]: dict(lv) for (n, lv) in samples if n == "binlogd_replica_events_sent_total"}
    assert set(by_sid) == {"41", "11"} and all(lv["user"] == "root" for lv in by_sid.values())
    # the ledger's records of each connection, once the writer has them all: records are queued when their bytes
    # are written and the last run of a batch when nothing follows, so the scrape may precede a record by a moment
    deadline = time.monotonic() + 10
    while True:
        ledger = {c.peer: c for c in server.connections() if not c.closed}
        if time.monotonic() > deadline or (set(ledger) == {lv["peer"] for lv in by_sid.values()} and all(
                packets(ledger[lv["peer"]]) == value(samples, "binlogd_replica_events_sent_total", **lv)
                for lv in by_sid.values()) and value(scrape(mport), "binlogd_ledger_queue_depth") == 0):
            break
        time.sleep(0.05)
    assert set(ledger) == {lv["peer"] for lv in by_sid.values()}
    for sid, lv in by_sid.items():
        c = ledger[lv["peer"]]
        assert c.server_id == int(sid)
        events = value(samples, "binlogd_replica_events_sent_total", **lv)
        holes = value(samples, "binlogd_replica_holes_total", **lv)
        dummies = value(samples, "binlogd_replica_dummies_total", **lv)
        assert events == packets(c), (sid, c.runs)
        assert holes == c.holes
        if sid == "41":
            assert c.policy == 0 and dummies == 0 and holes == flagged  # every flagged event, no other
        else:
            # capability 1: the flagged groups are dummies (skip_replication); GTID_LIST/BINLOG_CHECKPOINT
            # dummies and GTID->BEGIN rewrites are the connection's type rules (the ledger's `policy`)
            assert holes == 0 and c.count("dummy", "skip_replication") == flagged and dummies + value(
                samples, "binlogd_replica_begins_total", **lv) == c.dummies + c.count("begin") + c.policy
        assert value(samples, "binlogd_replica_heartbeats_total", **lv) == 0
        assert value(samples, "binlogd_replica_last_event_age_seconds", **lv) >= 0
    for t in threads:
        t.join(30)
    # what the clients received: the bytes and event packets the metrics counted (nothing was sent since: idle)
    for cap, sid in clients.items():
        lv = by_sid[str(sid)]
        cap_ = captures[cap]
        assert cap_.end == "max_seconds", cap_.end
        assert value(samples, "binlogd_replica_sent_bytes_total", **lv) == len(cap_.raw)
        assert value(samples, "binlogd_replica_events_sent_total", **lv) == len(cap_.events)
    # the ended dumps are gone from the metrics, the connections counted
    after = wait_until(lambda: (s := scrape(mport)) and value(s, "binlogd_replicas_connected") == 0 and s, 10)
    assert not replica_series(after, "binlogd_replica_events_sent_total")
    assert value(after, "binlogd_connections_total") >= 3


def test_bytes_behind_and_last_event_age_of_a_slow_replica(binlogd):
    """A replica throttled to 4 KB/s (--faults) is behind by what it has not been sent yet, and then catches up."""
    from binlogd.testing.faults import Fault

    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport)])
    server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT, v TEXT); "
                   + ";".join(f"INSERT INTO d.t VALUES ({i}, '{'x' * 900}')" for i in range(30)))
    _file, end = server.master_status()
    server.inject(Fault(server_id=52, throttle_bytes_per_s=4000))
    t = threading.Thread(target=raw_dump, args=(server.host, server.port, ["SET @mariadb_slave_capability=4",
                                                                "SET @master_binlog_checksum='CRC32'"],
                                                dump_cmd(52, "mysql-bin.000001")), kwargs={"max_seconds": 20})
    t.start()
    try:
        behind = wait_until(lambda: list(replica_series(scrape(mport), "binlogd_replica_behind_bytes").values()),
                            10, 0.05)
        assert 0 < behind[0] <= end
        wait_until(lambda: list(replica_series(scrape(mport), "binlogd_replica_behind_bytes").values()) == [0.0],
                   20, 0.1, "the throttled replica caught up")
        time.sleep(1.2)
        age = replica_series(scrape(mport), "binlogd_replica_last_event_age_seconds")
        assert next(iter(age.values())) >= 1.0  # nothing written since it caught up
    finally:
        t.join(30)


def test_standalone_commits_and_fsyncs(binlogd):
    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport), "--sync-binlog", "1"])
    before = scrape(mport)
    assert value(before, "binlogd_info", mode="standalone", version=server.query("SELECT VERSION()")[0][0]) == 1
    c0 = value(before, "binlogd_binlog_commits_total")
    g0 = value(before, "binlogd_binlog_group_commits_total")
    f0 = value(before, "binlogd_binlog_fsyncs_total")
    server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT); INSERT INTO d.t VALUES (1); "
                   "BEGIN; INSERT INTO d.t VALUES (2); INSERT INTO d.t VALUES (3); COMMIT")
    n = 20  # concurrent writers: group commit may take several groups in one fsync
    ts = [threading.Thread(target=server.execute, args=(f"INSERT INTO d.t VALUES ({10 + i})",)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    after = scrape(mport)
    groups = value(after, "binlogd_binlog_commits_total") - c0
    assert groups == 4 + n  # CREATE DATABASE, CREATE TABLE, an autocommit INSERT, one transaction, n INSERTs
    seq = int(server.query("SELECT @@gtid_binlog_pos")[0][0].split("-")[2])
    assert value(after, "binlogd_binlog_commits_total") == seq  # one GTID per group since the start
    group_commits = value(after, "binlogd_binlog_group_commits_total") - g0
    assert 1 <= group_commits <= groups
    assert value(after, "binlogd_binlog_fsyncs_total") - f0 == group_commits  # --sync-binlog=1: one per commit
    file, pos = server.master_status()
    assert value(after, "binlogd_binlog_end_position") == pos
    assert value(after, "binlogd_binlog_file_number") == int(file.rsplit(".", 1)[1])
    wait_until(lambda: value(scrape(mport), "binlogd_threads_connected") == 0, 10, 0.05, "writers gone")
    conns = [server.connect() for _ in range(3)]
    try:
        assert value(scrape(mport), "binlogd_threads_connected") == 3
    finally:
        for c in conns:
            c.close()
    wait_until(lambda: value(scrape(mport), "binlogd_threads_connected") == 0, 10, 0.05, "connections closed")


def test_no_fsyncs_without_sync_binlog(binlogd):
    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport)])
    server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT); INSERT INTO d.t VALUES (1)")
    s = scrape(mport)
    assert value(s, "binlogd_binlog_commits_total") == 3
    assert value(s, "binlogd_binlog_group_commits_total") == 3
    assert value(s, "binlogd_binlog_fsyncs_total") == 0


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    (b"GET /metricsX HTTP/1.1\r\n\r\n", 404),
    (b"GET /metrics/ HTTP/1.1\r\n\r\n", 404),
    (b"GET /../metrics HTTP/1.0\r\n\r\n", 404),
    (b"GET %2Fmetrics HTTP/1.1\r\n\r\n", 400),
    (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
    (b"garbage\r\n\r\n", 400),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),  # a TLS ClientHello-ish start
    (b"GET /metrics HTTP/2.0\r\n\r\n", 400),
    (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 10000 + b"\r\n\r\n", 431),
    (b"GET /" + b"m" * 9000 + b" HTTP/1.1\r\n\r\n", 431),
])
def test_bad_requests_get_a_status_never_a_traceback(binlogd, request_bytes, status):
    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport)])
    answer = http(mport, request_bytes)
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:200]
    assert b"Traceback" not in answer
    assert scrape(mport)  # still serving
    assert "Traceback" not in server.log_text() and "ERROR" not in server.log_text()


def test_head_and_query_string(binlogd):
    mport = free_port()
    binlogd.standalone(["--metrics-port", str(mport)])
    head = http(mport, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    with urllib.request.urlopen(f"http://{HOST}:{mport}/metrics?name[]=x", timeout=10) as r:
        assert b"binlogd_uptime_seconds" in r.read()
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://{HOST}:{mport}/", timeout=10)
    assert e.value.code == 404


def test_metrics_port_in_use_refuses_the_start(tmp_path: Path):
    taken = socket.socket()
    taken.bind((HOST, 0))
    taken.listen(1)
    try:
        mport = taken.getsockname()[1]
        datadir = tmp_path / "data"
        p = subprocess.run([sys.executable, "-m", "binlogd.server.cli", "serve", "--port", str(free_port()),
                            "--datadir", str(datadir), "--metrics-port", str(mport)],
                           capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [
        f"binlogd: --metrics-port: cannot listen on 127.0.0.1:{mport}: Address already in use (another server "
        "holds the port: stop it or choose another --metrics-port)"]
    assert not datadir.exists()  # refused before anything was written


def test_metrics_address_needs_metrics_port(tmp_path: Path):
    p = subprocess.run([sys.executable, "-m", "binlogd.server.cli", "serve", "--datadir", str(tmp_path / "d"),
                        "--metrics-address", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.splitlines()[-1] == ("binlogd: --metrics-address without --metrics-port: there is no metrics "
                                         "port to bind")


COMMIT_WORKLOAD = ("CREATE DATABASE c; CREATE TABLE c.t (id INT PRIMARY KEY) ENGINE=InnoDB; "
                   "INSERT INTO c.t VALUES (1); "
                   "BEGIN; INSERT INTO c.t VALUES (2); INSERT INTO c.t VALUES (3); COMMIT; "
                   "BEGIN; INSERT INTO c.t VALUES (4); ROLLBACK; SET skip_replication=1; INSERT INTO c.t VALUES (5); "
                   "SET skip_replication=0; SET sql_log_bin=0; INSERT INTO c.t VALUES (6); SET sql_log_bin=1; "
                   "DROP TABLE c.t")


def test_commit_counters_against_mariadb(mariadb, binlogd):
    """binlogd_binlog_commits_total / _group_commits_total move as a real MariaDB 10.11's Binlog_commits /
    Binlog_group_commits do for the same statements from one client (autocommit, a transaction, a rollback, a
    flagged and an unlogged statement), plus one for each DDL statement, which binlogd commits like any group and
    MariaDB writes outside group commit (not counted there)."""
    real = mariadb.primary("p", 1)

    def status() -> tuple[int, int]:
        rows = dict(real.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Binlog_commits', 'Binlog_group_commits')"))
        return int(rows["Binlog_commits"]), int(rows["Binlog_group_commits"])

    before = status()
    real.execute(COMMIT_WORKLOAD)
    after = status()
    mport = free_port()
    server = binlogd.standalone(["--metrics-port", str(mport)])
    s0 = scrape(mport)
    server.execute(COMMIT_WORKLOAD)
    s1 = scrape(mport)
    ours = tuple(int(value(s1, n) - value(s0, n)) for n in ("binlogd_binlog_commits_total",
                                                           "binlogd_binlog_group_commits_total"))
    ddl = 3  # CREATE DATABASE, CREATE TABLE, DROP TABLE
    assert after[0] - before[0] == 3  # the autocommit INSERT, the transaction, the flagged INSERT
    assert ours == (after[0] - before[0] + ddl, after[1] - before[1] + ddl)


def test_a_dump_without_a_position_yet_is_behind_by_everything() -> None:
    """A GTID dump whose start is still being resolved (no file yet) is not shown caught up: behind by the whole
    binlog. A dump with a position counts from it, across the later files."""
    from types import SimpleNamespace

    from binlogd.server.metrics import bytes_behind

    ends = {"mysql-bin.000001": 1000, "mysql-bin.000002": 300}
    order = list(ends)
    assert bytes_behind(SimpleNamespace(file="", pos=0), ends, order) == 1300  # type: ignore[arg-type]
    assert bytes_behind(SimpleNamespace(file="mysql-bin.000001", pos=400), ends, order) == 900  # type: ignore[arg-type]
    assert bytes_behind(SimpleNamespace(file="mysql-bin.000002", pos=300), ends, order) == 0  # type: ignore[arg-type]
