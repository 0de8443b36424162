"""Real replicas on a live binlogd: growth of the served directory, reconnects, semi-sync replicas, heartbeats."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from binlogd.protocol.binlog_file import scan
from binlogd.protocol.commands import build_binlog_dump

from tests.dumpclient import raw_dump
from tests.oracle_data import ORACLE

FILES = ["mysql-bin.000001", "mysql-bin.000002"]


def _replica(mariadb, name: str, sid: int, *args: str):
    return mariadb(name, sid, "--relay-log=relay-bin", *args)


def test_blocking_dump_picks_up_new_files_and_reconnects(tmp_path: Path, mariadb, binlogd) -> None:
    """Start with only the first file; the replica waits at its end. A second file (and index) appears:
    the waiting dump follows the rotation without polling from the replica. STOP/START SLAVE (GTID and
    file/pos) resume at the end without errors."""
    d = tmp_path / "live"
    d.mkdir()
    first = (ORACLE / FILES[0]).read_bytes()
    rotate = scan(first).events[-1]
    assert rotate.type_code == 4  # the ROTATE we hold back
    cut = rotate.pos
    # file 1 without its trailing ROTATE: the "active" file as it was before FLUSH BINARY LOGS
    (d / FILES[0]).write_bytes(first[:cut])
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])
    gtid_r = _replica(mariadb, "gtid", 2)
    pos_r = _replica(mariadb, "filepos", 3)
    gtid_r.change_master(server.host, server.port, use_gtid="slave_pos", heartbeat=0.5)
    pos_r.change_master(server.host, server.port, use_gtid="no", log_file=FILES[0], log_pos=4)
    for r in (gtid_r, pos_r):
        r.start_slave()
    for r in (gtid_r, pos_r):
        r.wait_slave_pos(FILES[0], cut)
    # an idle replica with MASTER_HEARTBEAT_PERIOD=0.5 receives heartbeats and keeps running
    time.sleep(1.6)
    beats = gtid_r.query("SHOW GLOBAL STATUS LIKE 'Slave_received_heartbeats'")
    assert int(beats[0][1]) >= 2 and gtid_r.slave_status()["Slave_IO_Running"] == "Yes"

    # the primary rotates: file 1 gets its ROTATE, file 2 and the index appear
    (d / FILES[0]).write_bytes(first)
    shutil.copy(ORACLE / FILES[1], d / FILES[1])
    (d / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in FILES))
    end = (d / FILES[1]).stat().st_size
    for r in (gtid_r, pos_r):
        r.wait_slave_pos(FILES[1], end)
    want = gtid_r.table_checksums(["d"])
    assert want and pos_r.table_checksums(["d"]) == want

    for r in (gtid_r, pos_r):
        r.stop_slave()
        r.start_slave()
        r.wait_slave_pos(FILES[1], end)
        st = r.slave_status()
        assert st["Last_IO_Errno"] == 0 and st["Last_SQL_Errno"] == 0, st
    assert "Traceback" not in server.log_text()


def test_semi_sync_replica_gets_the_semi_sync_header(tmp_path: Path, mariadb, binlogd) -> None:
    """A 10.11 replica with rpl_semi_sync_slave_enabled finds rpl_semi_sync_master_enabled (OFF) on binlogd, asks
    for semi-sync and reads every event behind the 0xef header (it refuses a packet without one): same data."""
    d = tmp_path / "b"
    d.mkdir()
    for f in FILES:
        shutil.copy(ORACLE / f, d)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])
    r = _replica(mariadb, "semisync", 2, "--rpl-semi-sync-slave-enabled=ON")
    plain = _replica(mariadb, "plain", 3)
    for x in (r, plain):
        x.change_master(server.host, server.port, use_gtid="slave_pos")
        x.start_slave()
    for x in (r, plain):
        x.wait_slave_pos(FILES[1], (d / FILES[1]).stat().st_size)
    assert r.query("SHOW STATUS LIKE 'Rpl_semi_sync_slave_status'") == [("Rpl_semi_sync_slave_status", "ON")]
    assert r.slave_status()["Slave_IO_Running"] == "Yes"
    assert r.table_checksums(["d"]) == plain.table_checksums(["d"]) != {}


def test_torn_tail_of_the_active_file_is_held_back_until_complete(tmp_path: Path, mariadb, binlogd) -> None:
    """The active file ends in the middle of an event (a writer still writing it): a real replica gets
    everything before it, nothing half-written, and the rest once the event is complete; mariadb-binlog's
    non-blocking dump ends cleanly before it. A closed file with a torn tail is MariaDB's 1236 instead."""
    d = tmp_path / "torn"
    d.mkdir()
    first = (ORACLE / FILES[0]).read_bytes()
    events = scan(first).events
    cut_event = events[len(events) // 2]
    torn_at = cut_event.pos + cut_event.length // 2
    (d / FILES[0]).write_bytes(first[:torn_at])
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])

    raw = subprocess.run(["mariadb-binlog", "--no-defaults", "--read-from-remote-server", f"--host={server.host}",
                          f"--port={server.port}", "--user=root", "--raw", f"--result-file={tmp_path}/copy-",
                          FILES[0]], capture_output=True, timeout=30)
    assert raw.returncode == 0, raw.stderr
    copy = (tmp_path / f"copy-{FILES[0]}").read_bytes()
    assert copy[:4] + copy[4 + 17 + 1 :] == first[:4] + first[4 + 17 + 1 : cut_event.pos]  # all whole events

    r = _replica(mariadb, "torn", 2)
    r.change_master(server.host, server.port, use_gtid="no", log_file=FILES[0], log_pos=4)
    r.start_slave()
    r.wait_until(lambda: int(r.slave_status().get("Read_Master_Log_Pos") or 0) >= cut_event.pos, timeout=30,
                 message="replica read up to the torn event")
    time.sleep(0.8)
    st = r.slave_status()
    assert int(st["Read_Master_Log_Pos"]) == cut_event.pos and st["Slave_IO_Running"] == "Yes", st
    # the writer finishes the event and the rest of the file (not the trailing ROTATE: no next file yet)
    (d / FILES[0]).write_bytes(first[: events[-1].pos])
    r.wait_slave_pos(FILES[0], events[-1].pos)
    assert "Traceback" not in server.log_text()


def test_torn_tail_of_a_closed_file_is_error_1236(tmp_path: Path, binlogd) -> None:
    d = tmp_path / "closed"
    d.mkdir()
    first = (ORACLE / FILES[0]).read_bytes()
    last = scan(first).events[-1]
    (d / FILES[0]).write_bytes(first[: last.pos + 10])  # a later file exists: this one is closed, yet torn
    shutil.copy(ORACLE / FILES[1], d / FILES[1])
    server = binlogd(["--binlog-dir", str(d), "--server-id", "100"])
    cap = raw_dump(server.host, server.port, ["SET @master_binlog_checksum= @@global.binlog_checksum"],
                   build_binlog_dump(4, 1, 5, FILES[0]))
    # a torn header: MariaDB's IO_CACHE stays at the event's start (tests/test_oracle_multidomain.py, tornheader)
    assert cap.error == (1236, "binlog truncated in the middle of event; consider out of disk space on master; the "
                               f"first event '{FILES[0]}' at 4, the last event read from '{FILES[0]}' at {last.pos}, "
                               f"the last byte read from '{FILES[0]}' at {last.pos}.")
    assert cap.events[-1] == first[last.pos - len(cap.events[-1]) : last.pos]  # everything whole came first
