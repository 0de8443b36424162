"""Binlog expiry and PURGE BINARY LOGS in standalone and relay modes, with real MariaDB 10.11 replicas reading
(server/expiry.py): a file a connected replica reads is never removed, it goes once the replica moved on, SHOW BINARY
LOGS and the index agree, restarts and kill -9 during a purge leave a consistent binlog. The variables' values are
compared with a real MariaDB started with the same options."""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.commands import build_binlog_dump

from binlogd.testing import MariaDB, wait_until
from binlogd.testing.faults import Fault
from tests.harness.cli import run_cli

REPLICA_SID = 21


def run(server: Any, sql: str, **kw: Any) -> list[tuple[Any, ...]]:
    conn = pymysql.connect(host=server.host, port=server.port, user=kw.pop("user", "root"),
                           password=kw.pop("password", ""), autocommit=True, **kw)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def error_of(server: Any, sql: str, **kw: Any) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as info:
        run(server, sql, **kw)
    return int(info.value.args[0]), str(info.value.args[1])


def names_of(server: Any) -> list[str]:
    return [str(r[0]) for r in run(server, "SHOW BINARY LOGS")]


def index_of(datadir: Path) -> list[str]:
    return [line.removeprefix("./") for line in (datadir / "mysql-bin.index").read_text().splitlines()]


def numbered(datadir: Path) -> list[str]:
    return sorted(p.name for p in datadir.glob("mysql-bin.[0-9]*"))


def assert_consistent(server: Any, datadir: Path) -> list[str]:
    """SHOW BINARY LOGS, the index and the files on disk name the same files."""
    shown = names_of(server)
    assert shown == index_of(datadir) == numbered(datadir)
    return shown


def restart(binlogd: Any, server: Any) -> Any:
    """The same `binlogd serve` command line again, on the same port (after stop or kill -9)."""
    return binlogd(server.cmd[server.cmd.index("serve") + 3:], port=server.port)


def make_files(server: Any, n: int, first_id: int = 0) -> None:
    run(server, "CREATE DATABASE IF NOT EXISTS d")
    run(server, "CREATE TABLE IF NOT EXISTS d.t (id INT PRIMARY KEY)")
    for i in range(n):
        run(server, f"INSERT INTO d.t VALUES ({first_id + i})")
        run(server, "FLUSH BINARY LOGS")


def end_of(server: Any) -> tuple[str, int]:
    row = run(server, "SHOW MASTER STATUS")[0]
    return str(row[0]), int(row[1])


def caught_up(replica: MariaDB, server: Any) -> None:
    replica.wait_slave_pos(*end_of(server), timeout=30)


def count_rows(replica: MariaDB) -> int:
    return int(replica.query("SELECT COUNT(*) FROM d.t")[0][0])


def test_standalone_expiry_never_removes_a_file_a_replica_reads(binlogd: Any, mariadb: Any) -> None:
    replica = mariadb("replica", REPLICA_SID)
    server = binlogd.standalone(["--binlog-expire-logs-seconds", "4"])  # checked every second
    datadir = server.datadir
    assert run(server, "SHOW VARIABLES WHERE Variable_name IN ('expire_logs_days', 'binlog_expire_logs_seconds')") \
        == [("binlog_expire_logs_seconds", "4"), ("expire_logs_days", "0.000046")]
    # startup options here (MariaDB's are dynamic): SET GLOBAL gets a clear refusal
    assert error_of(server, "SET GLOBAL expire_logs_days=1") == (1238, "Variable 'expire_logs_days' is a read only "
                                                                       "variable")
    # the replica connects first; its dump stalls in the first file after the CREATE DATABASE (6 event packets)
    server.inject(Fault(server_id=REPLICA_SID, stall_after_events=6, stall_seconds=15))
    replica.change_master_to(server, log_file="mysql-bin.000001", log_pos=4)
    wait_until(lambda: f"sid {REPLICA_SID} " in server.log_text(), 20, 0.05, "the replica's dump")
    run(server, "CREATE DATABASE d")
    wait_until(lambda: "stall after 6 event packets" in server.log_text(), 20, 0.05, "the replica's dump stalled")
    made = time.monotonic()
    make_files(server, 4)
    names = names_of(server)
    assert len(names) == 5
    time.sleep(max(0.0, made + 7 - time.monotonic()))  # every file is older than 4 s now, several checks ran
    assert assert_consistent(server, datadir) == names  # the stalled replica reads names[0]: nothing removed
    assert "binlog expiry: mysql-bin.000001 is being read by a replica; it and the files after it wait" \
        in server.log_text()
    # the stall ends, the replica reads on to the active file: the next checks remove the others
    replica.wait_caught_up(server, timeout=30)
    wait_until(lambda: names_of(server) == names[-1:], 10, 0.2, lambda: f"binlog files {names_of(server)}")
    assert assert_consistent(server, datadir) == names[-1:]
    assert count_rows(replica) == 4
    # a restart after expiry: the binlog continues, the replica follows
    server.stop()
    again = restart(binlogd, server)
    run(again, "INSERT INTO d.t VALUES (100)")
    caught_up(replica, again)
    assert count_rows(replica) == 5
    now = assert_consistent(again, datadir)  # the restart opened a new file; the expired ones stay gone
    assert now[0] >= names[-1] and now[-1] > names[-1]


def _stall_a_raw_dump(server: Any, file: str) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    """A COM_BINLOG_DUMP from `file` whose client reads nothing: the server's dump blocks (TCP back-pressure) in the
    first files, which stay in use until the connection closes."""
    conn = pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True)
    conn.cursor().execute("SET @master_binlog_checksum='CRC32'")
    payload = build_binlog_dump(4, 0, 77, file)
    conn._sock.sendall(struct.pack("<I", len(payload))[:3] + b"\x00" + payload)  # type: ignore[attr-defined]
    return conn


def _purge_with_a_dump_in_use(server: Any) -> list[Any]:
    """What PURGE TO / BEFORE answer and leave while a dump reads the fourth of many 4 MiB files."""
    conn = pymysql.connect(host=server.host, port=server.port, user="root", password="", autocommit=True,
                           max_allowed_packet=16 << 20)
    cur = conn.cursor()
    cur.execute("CREATE DATABASE d")
    cur.execute("CREATE TABLE d.t (id INT, v LONGTEXT)")
    for i in range(36):
        cur.execute(f"INSERT INTO d.t VALUES ({i}, '{'x' * 1_000_000}')")
    names = names_of(server)
    assert len(names) >= 8
    dump = _stall_a_raw_dump(server, names[3])
    time.sleep(1)
    seen: list[Any] = []
    for q in (f"PURGE BINARY LOGS TO '{names[1]}'", f"PURGE BINARY LOGS TO '{names[-1]}'",
              "PURGE BINARY LOGS BEFORE '2099-01-01 00:00:00'", "PURGE BINARY LOGS BEFORE 'garbage'"):
        cur.execute(q)
        left = names_of(server)
        cur.execute("SHOW WARNINGS")
        seen.append((q.replace(names[1], "<second>").replace(names[-1], "<last>"), list(cur.fetchall()),
                     [names.index(n) for n in left]))
    dump.close()
    time.sleep(0.5)
    cur.execute(f"PURGE BINARY LOGS TO '{names[-1]}'")
    seen.append(names_of(server) == names[-1:])
    conn.close()
    return seen


def test_purge_stops_at_a_file_in_use_as_mariadb_does(binlogd: Any, mariadb: Any) -> None:
    """A real 10.11 answers OK without a warning and purges the files before the one a dump reads."""
    real = _purge_with_a_dump_in_use(mariadb("primary", 1, "--log-bin=mysql-bin", "--max-binlog-size=4M",
                                             "--max-allowed-packet=64M"))
    ours = _purge_with_a_dump_in_use(binlogd.standalone(["--max-binlog-size", "4M"]))
    assert real[0] == ours[0] and real[0][2][0] == 1  # TO the second file: the first one goes
    for r in (real, ours):  # TO the last file: OK, no warning, the dump's file (the 4th, or later for MariaDB's
        # kernel-buffered dump) and the ones after it stay; BEFORE a future date then removes nothing more
        assert r[1][1] == [] and r[1][2][0] >= 3 and len(r[1][2]) > 1
        assert r[2] == ("PURGE BINARY LOGS BEFORE '2099-01-01 00:00:00'", [], r[1][2])
        assert r[3] == ("PURGE BINARY LOGS BEFORE 'garbage'", [("Warning", 1292, "Incorrect datetime value: "
                                                                "'garbage'")], r[1][2])  # OK, nothing purged
        assert r[4] is True  # once the dump is gone, everything but the active file goes
    assert ours[1][2][0] == 3


def _relay_args(upstream: MariaDB, datadir: Path, *extra: str) -> list[str]:
    return ["--upstream", f"mysql://root@{upstream.host}:{upstream.port}", "--datadir", str(datadir),
            "--server-id", "11", "--upstream-heartbeat", "1", "--upstream-retry-max", "0.5", *extra]


def test_relay_purge_and_expiry_with_a_real_replica(binlogd: Any, mariadb: Any, harness_dir: Path) -> None:
    upstream = mariadb("upstream", 1, "--log-bin=mysql-bin")
    replica = mariadb("replica", REPLICA_SID)
    make_files(upstream, 4)  # upstream files 1..5
    names = [n for n, _ in upstream.binary_logs()]
    users = harness_dir / "users"
    users.write_text("root:\nmonitor:'' GRANT REPLICATION SLAVE, BINLOG MONITOR\n")
    faults = harness_dir / "faults.json"
    from binlogd.testing.faults import write_faults

    write_faults(faults, [Fault(server_id=REPLICA_SID, stall_after_events=6, stall_seconds=8)])
    datadir = harness_dir / "relay"
    args = _relay_args(upstream, datadir, "--users", str(users), "--faults", str(faults), "--no-ledger")
    relay = binlogd(args)
    wait_until(lambda: names_of(relay) == names and end_of(relay) == upstream.master_status(), 30, 0.1,
               lambda: f"relay at {names_of(relay)}")
    replica.change_master_to(relay, log_file=names[0], log_pos=4)
    wait_until(lambda: "COM_BINLOG_DUMP file='mysql-bin.000001'" in relay.log_text(), 10, 0.05, "the replica's dump")
    time.sleep(0.5)
    # the stalled replica reads names[0]: PURGE TO a later file stops there (OK, as MariaDB 10.11 answers)
    run(relay, f"PURGE BINARY LOGS TO '{names[2]}'")
    assert "PURGE BINARY LOGS: mysql-bin.000001 is being read by a replica" in relay.log_text()
    assert error_of(relay, "PURGE BINARY LOGS TO 'mysql-bin.999999'") == (1373, "Target log not found in binlog index")
    assert error_of(relay, f"PURGE BINARY LOGS TO '{names[2]}'", user="monitor") == (
        1227, "Access denied; you need (at least one of) the BINLOG ADMIN privilege(s) for this operation")
    run(relay, "PURGE BINARY LOGS BEFORE '2000-01-01 00:00:00'")  # nothing that old: nothing removed
    assert assert_consistent(relay, datadir) == names
    caught_up(replica, relay)
    run(relay, f"PURGE BINARY LOGS TO '{names[2]}'")
    assert assert_consistent(relay, datadir) == names[2:]
    # restart with expiry on: the old files go once nobody reads them, the relay goes on storing and serving
    relay.stop()
    relay = binlogd([*args, "--binlog-expire-logs-seconds", "2"], port=relay.port)
    wait_until(lambda: f"sid {REPLICA_SID} " in relay.log_text() and "COM_BINLOG_DUMP" in relay.log_text(), 20,
               0.05, "the replica reconnected")  # a replica that is not connected holds no file (as in MariaDB)
    make_files(upstream, 2, first_id=10)
    new_names = [n for n, _ in upstream.binary_logs()]
    wait_until(lambda: names_of(relay) == new_names[-1:], 20, 0.2, lambda: f"relay files {names_of(relay)}")
    assert assert_consistent(relay, datadir) == new_names[-1:]
    caught_up(replica, relay)
    assert count_rows(replica) == 6
    assert end_of(relay) == upstream.master_status()


def test_kill9_during_purge_leaves_a_consistent_binlog(binlogd: Any) -> None:
    server = binlogd.standalone()
    datadir = server.datadir
    make_files(server, 30)
    names = names_of(server)
    # a real kill -9 while PURGE runs, wherever it lands: the restarted binlogd shows what its index and disk hold
    t = threading.Thread(target=_ignore_errors, args=(run, server, f"PURGE BINARY LOGS TO '{names[-1]}'"))
    t.start()
    time.sleep(0.01)
    server.kill9()
    t.join()
    again = restart(binlogd, server)
    shown = assert_consistent(again, datadir)
    assert shown[-1] > names[-1] and set(shown[:-1]) <= set(names)
    # the state a crash between the index rewrite and the deletions leaves, made on purpose: the index no longer
    # names the two oldest files, which are still there; recovery deletes them
    make_files(again, 3, first_id=100)
    before = names_of(again)
    again.kill9()
    (datadir / "mysql-bin.index").write_text("".join(f"./{n}\n" for n in before[2:]))
    third = restart(binlogd, again)
    assert "no longer in mysql-bin.index (a purge was interrupted); deleting it" in third.log_text()
    shown = assert_consistent(third, datadir)
    assert shown[:-1] == before[2:]
    run(third, "INSERT INTO d.t VALUES (1000)")
    run(third, f"PURGE BINARY LOGS TO '{shown[-1]}'")
    assert assert_consistent(third, datadir) == shown[-1:]


def _ignore_errors(fn: Any, *args: Any) -> None:
    with contextlib.suppress(pymysql.MySQLError):
        fn(*args)


@pytest.mark.parametrize("options", [
    ["--expire-logs-days=1.5"],
    ["--expire-logs-days=1", "--binlog-expire-logs-seconds=7200"],
    ["--binlog-expire-logs-seconds=7200", "--expire-logs-days=1"],
])
def test_expiry_variables_as_mariadb_shows_them(binlogd: Any, mariadb: Any, options: list[str]) -> None:
    """The two options are aliases (the last one given wins) and SHOW VARIABLES prints them as MariaDB 10.11 does."""
    q = "SHOW VARIABLES WHERE Variable_name IN ('expire_logs_days', 'binlog_expire_logs_seconds')"
    real = mariadb("real", 5, "--log-bin=mysql-bin", *options).query(q)
    server = binlogd.standalone(options)
    assert run(server, q) == [(str(a), str(b)) for a, b in real]
    assert run(server, "SELECT @@global.binlog_expire_logs_seconds")[0][0] == int(real[0][1])


@pytest.mark.parametrize(("args", "message"), [
    (["--binlog-expire-logs-seconds", "8553601"], "must be between 0 and 8553600 (99 days)"),
    (["--expire-logs-days", "100"], "must be between 0 and 99"),
    (["--binlog-dir", "/tmp", "--expire-logs-days", "1"], "--binlog-expire-logs-seconds / --expire-logs-days are "
     "for the modes that write a binlog"),
    (["--no-ledger", "--ledger-retention-seconds", "60"], "--ledger-retention-seconds with --no-ledger"),
])
def test_expiry_option_refusals(args: list[str], message: str) -> None:
    r = run_cli("serve", *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
