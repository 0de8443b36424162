"""Fault injection (`binlogd serve --faults FILE`, server/faults.py, server/fault_writer.py): for every fault, what a
real client observes and how it recovers once the fault is removed.

Clients: python-mysql-replication 1.0.17 (its exception, or its reconnect and what it got, by position) and a real
MariaDB 10.11 replica (Last_IO_Errno / Last_IO_Error, its reconnect, Slave_received_heartbeats, convergence). The
source is a standalone binlogd with a small statement workload; the faults file is rewritten while it runs, as the
pytest plugin does. Every fault action must also leave its `fault` record in the audit ledger.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.server.faults import Fault, FaultFile, FaultSet, load_faults
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import HeartbeatLogEvent

from binlogd.testing.faults import write_faults
from tests.harness import Binlogd, MariaDB, wait_until

ROWS = 12
PMR_ID = 77  # python-mysql-replication's server_id
FILE1 = "mysql-bin.000001"


# ---- the fault description -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "field"), [
    ({"close_after_events": 3}, "server_id / connection"),
    ({"server_id": 1, "connection": 1, "close_after_events": 3}, "server_id / connection"),
    ({"server_id": -1, "close_after_events": 3}, "server_id"),
    ({"server_id": 1 << 32, "close_after_events": 3}, "server_id"),
    ({"connection": 0, "close_after_events": 3}, "connection"),
    ({"server_id": 1, "close_after_events": -1}, "close_after_events"),
    ({"server_id": 1, "close_after_events": True}, "close_after_events"),
    ({"server_id": 1, "close_after_bytes": "10"}, "close_after_bytes"),
    ({"server_id": 1, "corrupt_crc_of_event": 0}, "corrupt_crc_of_event"),
    ({"server_id": 1, "stall_seconds": 0}, "stall_seconds"),
    ({"server_id": 1, "stall_seconds": float("nan")}, "stall_seconds"),
    ({"server_id": 1, "stall_after_events": 2}, "stall_after_events"),
    ({"server_id": 1, "error_1236": 5}, "error_1236"),
    ({"server_id": 1, "error_1236": "x" * 513}, "error_1236"),
    ({"server_id": 1, "error_after_events": 2}, "error_after_events"),
    ({"server_id": 1, "throttle_bytes_per_s": 0}, "throttle_bytes_per_s"),
    ({"server_id": 1, "heartbeat_s": -1}, "heartbeat_s"),
    ({"server_id": 1, "heartbeat_s": 5e6}, "heartbeat_s"),
    ({"server_id": 1, "close_after_events": 1, "times": 0}, "times"),
    ({"server_id": 1, "internal_error_after_events": -1}, "internal_error_after_events"),
    ({"server_id": 1}, "no action"),
    ({"server_id": 1, "close_after_event": 1}, "unknown field 'close_after_event'"),
])
def test_bad_fault_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("(", r"\(").replace(")", r"\)")):
        Fault.from_dict(spec)
    with pytest.raises(ValueError, match=r"^fault 2: "):
        FaultSet.from_json(json.dumps([{"server_id": 1, "heartbeat_s": 1}, spec]))


def test_fault_set_json_round_trip_and_atomic_write(tmp_path: Path) -> None:
    faults = FaultSet([Fault(server_id=3, close_after_events=5, times=2),
                       Fault(connection=2, error_1236="gone", error_after_events=4, heartbeat_s=0.5),
                       Fault(server_id=0, throttle_bytes_per_s=1000, stall_seconds=1.5, stall_after_events=2)])
    assert FaultSet.from_json(faults.to_json()) == faults
    assert json.loads(faults.to_json())[0] == {"server_id": 3, "close_after_events": 5, "times": 2}
    path = write_faults(tmp_path / "faults.json", faults)
    assert load_faults(path) == faults
    assert [p.name for p in tmp_path.iterdir()] == ["faults.json"]  # no temp file left
    for bad in ("", "{", '{"server_id": 1}', "[1]"):
        with pytest.raises(ValueError):
            FaultSet.from_json(bad)


def test_fault_file_reload_order_times_and_bad_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "faults.json"
    ff = FaultFile(path)

    def dump(server_id: int) -> int | None:
        ff.install(*ff.check())
        m = ff.match(server_id)
        return None if m is None else m.index

    assert dump(5) is None  # missing file: no faults
    write_faults(path, [Fault(server_id=5, close_after_events=1, times=2), Fault(connection=3, heartbeat_s=0),
                        Fault(server_id=5, heartbeat_s=1)])
    # dumps since the load: 1 (sid 5) fault 1, 2 (sid 6) none, 3 (sid 5) fault 1 (its 2nd and last use)... no:
    # fault 1 comes first in the file, so dump 3 of sid 5 takes it; dump 4 of sid 5 gets fault 3
    assert [dump(5), dump(6), dump(5), dump(5), dump(6)] == [1, None, 1, 3, None]
    path.write_text('[{"server_id": 5, "stall_seconds": -2}]')
    with caplog.at_level("ERROR", logger="binlogd.faults"):
        assert dump(5) == 3  # the bad file keeps the previous set (and its counters)
    assert "stall_seconds: must be > 0" in caplog.text and "keeping the previous set (3 fault(s))" in caplog.text
    write_faults(path, [Fault(connection=3, heartbeat_s=0)])  # a new load restarts the dump numbering
    assert [dump(9), dump(9), dump(9)] == [None, None, 1]
    path.unlink()
    assert dump(9) is None


def test_cli_faults_option(tmp_path: Path) -> None:
    """--faults is in the help as a testing tool; a bad file at start is refused with one line (exit 2)."""
    run = [sys.executable, "-m", "binlogd.server.cli", "serve"]
    helptext = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "fault injection (a testing tool: never in production)" in helptext and "--faults FILE" in helptext
    bad = tmp_path / "faults.json"
    bad.write_text('[{"server_id": 2, "corrupt_crc_of_event": 0}]')
    p = subprocess.run([*run, "--datadir", str(tmp_path / "d"), "--port", "0", "--faults", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr == f"binlogd: --faults {bad}: fault 1: corrupt_crc_of_event: must be >= 1, not 0\n"
    assert not (tmp_path / "d").exists()  # refused before anything was written


# ---- a standalone binlogd with a faults file ------------------------------------------------------------------------


@dataclass
class Source:
    server: Binlogd
    faults: Path
    datadir: Path

    def set(self, *faults: Fault) -> None:
        write_faults(self.faults, faults)

    def sql(self, *statements: str) -> None:
        with self.server.connect() as c, c.cursor() as cur:
            for s in statements:
                cur.execute(s)

    def master_status(self) -> tuple[str, int]:
        with self.server.connect() as c, c.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
        assert row is not None
        return str(row[0]), int(row[1])

    def _records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for p in sorted((self.datadir / "ledger").glob("ledger.*.jsonl"))
                for line in p.read_text().splitlines() if line.endswith("}")]

    def ledger(self, kind: str | None = None, settled: bool = True) -> list[dict[str, Any]]:
        """The ledger's records (of one kind); `settled`: first wait until every dump has its `close` record (the
        ledger's writer thread may still hold the last records when the client has seen the end)."""
        if settled:
            wait_until(lambda: len({r["conn"] for r in self._records() if r["r"] in ("conn", "close")})
                       == len([r for r in self._records() if r["r"] == "close"]), 10, message="close records")
        return [r for r in self._records() if kind is None or r["r"] == kind]

    def fault_actions(self, settled: bool = True) -> list[str]:
        return [r["action"] for r in self.ledger("fault", settled) if r["action"] != "match"]

    def wait_actions(self, expected: list[str]) -> None:
        """For dumps still running (a replica's): wait until the fault records are `expected`."""
        wait_until(lambda: self.fault_actions(settled=False) == expected, 10,
                   message=lambda: f"fault records {expected}, have {self.fault_actions(settled=False)}")

    def settings(self, **kw: Any) -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.server.port, "user": "root", "password": "", **kw}


def _workload(rows: int, width: int) -> list[str]:
    return ["CREATE DATABASE f", "CREATE TABLE f.t (id INT PRIMARY KEY, v VARCHAR(2000))",
            *(f"INSERT INTO f.t VALUES ({i}, '{'x' * width}')" for i in range(rows))]


@pytest.fixture
def source(binlogd: Any, harness_dir: Path) -> Source:
    src = Source(binlogd(["--datadir", str(harness_dir / "d"), "--faults", str(harness_dir / "faults.json")]),
                 harness_dir / "faults.json", harness_dir / "d")
    src.sql(*_workload(ROWS, 100))
    return src


def pmr_read(src: Source, *, server_id: int = PMR_ID, mariadb: bool = False, **kw: Any
             ) -> tuple[list[tuple[str, str, int]], list[Any], BaseException | None]:
    """python-mysql-replication reading to the end (non-blocking): (file, event class, log_pos) of each event, the
    events, and the exception that ended the read (None: EOF). File/pos mode resumes where it was after a lost
    connection; is_mariadb=True restarts with the same COM_BINLOG_DUMP (the first file, pos 4)."""
    pos = {} if mariadb else {"log_file": FILE1, "log_pos": 4, "resume_stream": True}
    stream = BinLogStreamReader(connection_settings=src.settings(**kw.pop("settings", {})), server_id=server_id,
                                blocking=False, is_mariadb=mariadb, **pos, **kw)
    got: list[tuple[str, str, int]] = []
    events: list[Any] = []
    err: BaseException | None = None
    try:
        for ev in stream:
            got.append((stream.log_file, type(ev).__name__, ev.packet.log_pos))
            events.append(ev)
    except Exception as e:  # what the client raises is the observation
        err = e
    finally:
        stream.close()
    return got, events, err


def _stored(events: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """The stored events (the fake ROTATE and the FDE come again with every connection)."""
    return [e for e in events if e[1] not in ("RotateEvent", "FormatDescriptionEvent")]


# ---- python-mysql-replication ---------------------------------------------------------------------------------------


def test_pmr_close_after_events_resumes_or_restarts(source: Source) -> None:
    ref, _, err = pmr_read(source)
    assert err is None and len(ref) == 2 + 2 + 2 + 2 + 3 * ROWS  # ROTATE, FDE, GTID_LIST, CHECKPOINT, 2 DDL groups
    source.set(Fault(server_id=PMR_ID, close_after_events=8, times=1))
    got, _, err = pmr_read(source)
    # file/pos mode: 2013 "Lost connection", reconnect at the last log_pos (619, the CREATE TABLE's end): every
    # stored event once, in order; the second connection starts with a ROTATE/FDE again
    assert err is None
    assert got[:8] == ref[:8] and got[8][1:] == ("RotateEvent", 0) and got[9][1] == "FormatDescriptionEvent"
    assert _stored(got) == _stored(ref)
    assert source.fault_actions() == ["close_after_events"]
    close = source.ledger("close")[-2]
    assert close["reason"] == "fault" and close["bytes"] == source.ledger("fault")[-1]["bytes"]
    # is_mariadb=True: the reconnect repeats the first COM_BINLOG_DUMP (first file, pos 4): duplicates
    source.set(Fault(server_id=PMR_ID, close_after_events=8, times=1))
    got, _, err = pmr_read(source, mariadb=True)
    assert err is None and got == ref[:8] + ref


def test_pmr_close_after_bytes_mid_event(source: Source) -> None:
    ref, _, _ = pmr_read(source)
    source.set(Fault(server_id=PMR_ID, close_after_bytes=650, times=1))  # inside the CREATE TABLE's packet
    got, _, err = pmr_read(source)
    assert err is None and _stored(got) == _stored(ref)
    assert got[:7] == ref[:7] and got[7][1] == "RotateEvent"  # event 8 was cut: asked again from log_pos 493
    (rec,) = [r for r in source.ledger("fault") if r["action"] == "close_after_bytes"]
    assert (rec["bytes"], rec["events"], rec["pos"]) == (650, 7, 493)


def test_pmr_error_1236_then_recovery(source: Source) -> None:
    text = "binlogd fault: could not read the binlog (injected)"
    source.set(Fault(server_id=PMR_ID, error_1236=text, error_after_events=6))
    ref_prefix, _, err = pmr_read(source)
    assert isinstance(err, pymysql.err.OperationalError) and err.args == (1236, text)
    assert [e[2] for e in ref_prefix] == [0, 256, 285, 328, 370, 451]  # the 6 events before the ERR, by position
    close = source.ledger("close")[-1]
    assert (close["reason"], close["error_code"], close["error"]) == ("fault", 1236, text)
    source.set()  # fault removed: the same read completes
    got, _, err = pmr_read(source)
    assert err is None and got[:6] == ref_prefix and len(got) == 8 + 3 * ROWS


INTERNAL = "binlogd internal error (RuntimeError: fault: internal error after 6 event packets); see the server log"


def test_pmr_internal_error_logged_once_and_sent_as_1236(source: Source) -> None:
    """A bug inside a dump (the fault's stand-in: an exception from its writer between two packets) is one logged
    error with its traceback, and the replica gets ERR 1236 saying so instead of a silent close."""
    log_start = source.server.log_path.stat().st_size
    source.set(Fault(server_id=PMR_ID, internal_error_after_events=6))
    ref_prefix, _, err = pmr_read(source)
    assert isinstance(err, pymysql.err.OperationalError) and err.args == (1236, INTERNAL)
    assert [e[2] for e in ref_prefix] == [0, 256, 285, 328, 370, 451]  # the 6 events before it, by position
    close = source.ledger("close")[-1]
    assert (close["reason"], close["error_code"], close["error"]) == ("error", 1236, INTERNAL)
    text = source.server.log_path.read_bytes()[log_start:].decode()
    assert text.count("Traceback (most recent call last)") == 1
    assert text.count("dump failed with an internal error") == 1
    assert "RuntimeError: fault: internal error after 6 event packets" in text
    assert "dump ended (internal error: RuntimeError: fault: internal error after 6 event packets)" in text
    source.set()  # fault removed: the same read completes
    got, _, err = pmr_read(source)
    assert err is None and got[:6] == ref_prefix and len(got) == 8 + 3 * ROWS


def test_pmr_corrupt_crc(source: Source) -> None:
    ref, _, _ = pmr_read(source)
    source.set(Fault(server_id=PMR_ID, corrupt_crc_of_event=6))
    got, events, err = pmr_read(source, verify_checksum=True)
    # python-mysql-replication only logs the CRC failure and marks the event: nothing raises, nothing reconnects
    assert err is None and got == ref
    assert [i for i, ev in enumerate(events) if ev._is_event_valid is False] == [5]
    assert events[5].query == "CREATE DATABASE f"
    (rec,) = [r for r in source.ledger("fault") if r["action"] == "corrupt_crc_of_event"]
    assert (rec["event"], rec["event_type"], rec["pos"]) == (6, 2, 451)
    source.set()
    _, events, _ = pmr_read(source, verify_checksum=True)
    assert all(ev._is_event_valid for ev in events[1:])  # recovered (the fake ROTATE's CRC is not checked)


def test_pmr_stall_read_timeout_reconnects(source: Source) -> None:
    ref, _, _ = pmr_read(source)
    source.set(Fault(server_id=PMR_ID, stall_seconds=20, stall_after_events=10, times=1))
    t0 = time.monotonic()
    got, _, err = pmr_read(source, settings={"read_timeout": 1})
    elapsed = time.monotonic() - t0
    assert err is None and _stored(got) == _stored(ref)  # 2013 (read timeout), reconnect, resume by position
    assert got[10][1] == "RotateEvent" and elapsed < 10
    assert source.fault_actions() == ["stall"]


def test_pmr_throttle_rate(binlogd: Any, harness_dir: Path) -> None:
    src = Source(binlogd(["--datadir", str(harness_dir / "d"), "--faults", str(harness_dir / "faults.json")]),
                 harness_dir / "faults.json", harness_dir / "d")
    src.sql(*_workload(150, 1500))  # ~ 250 kB
    rate = 100_000

    def read() -> list[float]:
        stamps: list[float] = []
        stream = BinLogStreamReader(connection_settings=src.settings(), server_id=PMR_ID, blocking=False,
                                    log_file=FILE1, log_pos=4, resume_stream=True)
        try:
            for _ in stream:
                stamps.append(time.monotonic())
        finally:
            stream.close()
        return stamps

    free = read()  # the same read unthrottled: what this machine's load adds on its own
    src.set(Fault(server_id=PMR_ID, throttle_bytes_per_s=rate))
    stamps = read()
    close = src.ledger("close")[-1]
    first_piece = rate // 20  # the pacing starts after the first slice
    paced = (close["bytes"] - first_piece) / rate
    elapsed = stamps[-1] - stamps[0]
    assert close["bytes"] > 200_000 and len(stamps) == len(free) == 8 + 3 * 150
    # never faster than the rate; slower only by the pacing's 20 % plus what the unthrottled read took (load)
    assert 0.8 * paced <= elapsed <= 1.2 * paced + 2 * (free[-1] - free[0]), (elapsed, paced, free[-1] - free[0])
    assert src.fault_actions() == ["throttle"]


def test_pmr_heartbeat_override(source: Source) -> None:
    """The client asked for no heartbeats; heartbeat_s=0.2 sends them to it while it waits at the end."""
    source.set(Fault(server_id=PMR_ID, heartbeat_s=0.2))
    # read_timeout: without heartbeats the read times out (2013), python-mysql-replication reconnects and the loop
    # sees the replayed events, so the test ends (closing the stream from this thread while another reads it hangs)
    stream = BinLogStreamReader(connection_settings=source.settings(read_timeout=2), server_id=PMR_ID,
                                blocking=True, log_file=FILE1, log_pos=4, resume_stream=True)
    beats: list[tuple[str, int]] = []
    deadline = time.monotonic() + 10

    def read() -> None:
        for ev in stream:
            if isinstance(ev, HeartbeatLogEvent):
                beats.append((ev.ident, ev.packet.log_pos))
            if len(beats) == 3 or time.monotonic() > deadline:
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive()
    stream.close()
    end = source.master_status()
    assert beats == [end] * 3  # at the end of the active file: its name and size
    assert source.fault_actions() == ["heartbeat"]
    (conn,) = [r for r in source.ledger("conn") if r["server_id"] == PMR_ID]
    assert conn["heartbeat_ms"] == 200


def test_connection_order_and_bad_file_while_running(source: Source) -> None:
    source.set(Fault(connection=2, error_1236="second dump"))
    results = [pmr_read(source, server_id=sid)[2] for sid in (10, 11, 12)]
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], pymysql.err.OperationalError) and results[1].args == (1236, "second dump")
    source.faults.write_text("[{not json")  # a bad file: logged, the previous set (and its dump count) kept
    wait_until(lambda: True, 0.1)
    assert [pmr_read(source, server_id=13)[2]] == [None]  # dump 4: no fault
    assert "keeping the previous set (1 fault(s))" in source.server.log_text()
    assert source.server.is_running
    source.set(Fault(connection=2, error_1236="second dump"))  # a new load: dump numbers restart at 1
    assert pmr_read(source, server_id=14)[2] is None
    err = pmr_read(source, server_id=14)[2]
    assert isinstance(err, pymysql.err.OperationalError) and err.args == (1236, "second dump")


# ---- a real MariaDB 10.11 replica -----------------------------------------------------------------------------------


def _replica(mariadb: Any, src: Source, *args: str, heartbeat: float | None = None) -> MariaDB:
    rep: MariaDB = mariadb("replica", 2, *args)
    rep.change_master("127.0.0.1", src.server.port, log_file=FILE1, log_pos=4, heartbeat=heartbeat)
    return rep


def _converged(rep: MariaDB, src: Source, timeout: float = 30) -> None:
    file, pos = src.master_status()
    rep.wait_slave_pos(file, pos, timeout)
    assert rep.query("SELECT COUNT(*) FROM f.t") == [(ROWS,)]


def _io_error(rep: MariaDB) -> dict[str, Any]:
    """SHOW SLAVE STATUS once the IO thread has stopped with an error: MariaDB sets Last_IO_Errno a moment before the
    thread is down (on a loaded machine a status read in between saw the error with Slave_IO_Running still Yes)."""

    def failed() -> dict[str, Any] | None:
        st = rep.slave_status()
        return st if st["Last_IO_Errno"] and st["Slave_IO_Running"] == "No" else None

    return rep.wait_until(failed, 30, message="an IO error")


def test_replica_error_1236_then_recovery(mariadb: Any, source: Source) -> None:
    text = "binlogd fault: injected 1236"
    source.set(Fault(server_id=2, error_1236=text, error_after_events=7))
    rep = _replica(mariadb, source)
    rep.start_slave()
    st = _io_error(rep)
    assert st["Last_IO_Errno"] == 1236
    assert st["Last_IO_Error"] == f"Got fatal error 1236 from master when reading data from binary log: '{text}'"
    assert st["Slave_IO_Running"] == "No"
    source.set()
    rep.start_slave()
    _converged(rep, source)


def test_replica_internal_error_then_recovery(mariadb: Any, source: Source) -> None:
    source.set(Fault(server_id=2, internal_error_after_events=6))
    rep = _replica(mariadb, source)
    rep.start_slave()
    st = _io_error(rep)
    assert st["Last_IO_Errno"] == 1236
    assert st["Last_IO_Error"] == f"Got fatal error 1236 from master when reading data from binary log: '{INTERNAL}'"
    source.set()
    rep.start_slave()
    _converged(rep, source)


def test_replica_corrupt_crc_then_recovery(mariadb: Any, source: Source) -> None:
    source.set(Fault(server_id=2, corrupt_crc_of_event=8))  # the CREATE TABLE
    rep = _replica(mariadb, source)
    rep.start_slave()
    st = _io_error(rep)
    # the IO thread reports 1743 (error log) and stops with the relay-log write error over it
    assert st["Last_IO_Errno"] == 1595
    assert st["Last_IO_Error"] == "Relay log write failure: could not queue event from master"
    assert st["Slave_IO_Running"] == "No"
    assert ("Slave I/O: Replication event checksum verification failed while reading from network, Internal "
            "MariaDB error code: 1743") in Path(rep.error_log).read_text()
    source.set()
    rep.start_slave()
    _converged(rep, source)
    source.wait_actions(["corrupt_crc_of_event"])


def test_replica_close_after_events_and_bytes_reconnects(mariadb: Any, source: Source) -> None:
    source.set(Fault(server_id=2, close_after_events=9, times=1), Fault(server_id=2, close_after_bytes=700, times=1))
    rep = _replica(mariadb, source)
    rep.start_slave()
    _converged(rep, source)  # no user action: the replica reconnected twice and resumed
    source.wait_actions(["close_after_events", "close_after_bytes"])
    conns = [r for r in source.ledger("conn", settled=False) if r["server_id"] == 2]
    assert len(conns) == 3 and conns[1]["req_pos"] > 4 and conns[2]["req_pos"] > conns[1]["req_pos"]
    assert rep.slave_status()["Last_IO_Errno"] == 0


def test_replica_stall_net_timeout_reconnects(mariadb: Any, source: Source) -> None:
    source.set(Fault(server_id=2, stall_seconds=60, stall_after_events=10, times=1))
    rep: MariaDB = mariadb("replica", 2, "--slave-net-timeout=2")
    rep.change_master("127.0.0.1", source.server.port, log_file=FILE1, log_pos=4)  # heartbeat: 1 s
    t0 = time.monotonic()
    rep.start_slave()
    _converged(rep, source, 30)
    assert time.monotonic() - t0 < 20  # reconnected after slave_net_timeout, long before the stall's end
    source.wait_actions(["stall"])
    assert len([r for r in source.ledger("conn", settled=False) if r["server_id"] == 2]) == 2


def _heartbeats(rep: MariaDB) -> int:
    ((_, n),) = rep.query("SHOW GLOBAL STATUS LIKE 'Slave_received_heartbeats'")
    return int(n)


def test_replica_heartbeat_override(mariadb: Any, source: Source) -> None:
    source.set(Fault(server_id=2, heartbeat_s=0.2))
    rep = _replica(mariadb, source, heartbeat=30)
    rep.start_slave()
    _converged(rep, source)
    n0 = _heartbeats(rep)
    time.sleep(2)
    n1 = _heartbeats(rep)
    assert n1 - n0 >= 5  # every 0.2 s instead of every 30 s
    # heartbeat_s=0: none at all, although the replica asks for one every 0.5 s
    rep.stop_slave()
    rep.change_master("127.0.0.1", source.server.port, heartbeat=0.5)
    source.set(Fault(server_id=2, heartbeat_s=0))
    rep.start_slave()
    _converged(rep, source)
    n0 = _heartbeats(rep)
    time.sleep(2)
    assert _heartbeats(rep) == n0
    source.set()  # removed: the replica's own period again (after its next connect)
    rep.stop_slave()
    rep.start_slave()
    _converged(rep, source)
    n0 = _heartbeats(rep)
    time.sleep(2)
    assert _heartbeats(rep) - n0 >= 2


def test_replica_throttle_rate(mariadb: Any, binlogd: Any, harness_dir: Path) -> None:
    src = Source(binlogd(["--datadir", str(harness_dir / "d"), "--faults", str(harness_dir / "faults.json")]),
                 harness_dir / "faults.json", harness_dir / "d")
    src.sql(*_workload(150, 1500))
    rate = 100_000
    src.set(Fault(server_id=2, throttle_bytes_per_s=rate))
    _, end = src.master_status()
    rep = _replica(mariadb, src)
    t0 = time.monotonic()
    rep.start_slave()
    rep.wait_until(lambda: rep.slave_status()["Read_Master_Log_Pos"] == end, 30, interval=0.01,
                   message="the replica read everything")
    measured = end / (time.monotonic() - t0)  # the stream's bytes are the file's plus ~1 % (headers, fakes)
    assert end > 200_000 and abs(measured - rate) / rate < 0.2, measured
    src.wait_actions(["throttle"])
