"""`binlogd show` ranges and remote reading against a real MariaDB 10.11 primary and the real mariadb-binlog:
--start/--stop-position and --start/--stop-datetime print what mariadb-binlog prints (byte for byte), --start/
--stop-gtid select whole groups, -R reads the same text from the server, --to-last-log and --stop-never follow
the server's files (replayed into a real target: the primary's tables)."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

import pytest
from binlogd.protocol.events import iter_binlog

from tests.harness import MariaDB
from tests.test_show_helpers import BINLOGD, copy_binlogs, mariadb_binlog, replay, show

pytestmark = pytest.mark.mariadb

T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC; every statement gets its own timestamp T0 + 60 * i
STATEMENTS_1 = [
    "CREATE DATABASE d",
    "CREATE TABLE d.t (id INT PRIMARY KEY, u VARCHAR(40))",
    "INSERT INTO d.t VALUES (1, UUID())",
    "INSERT INTO d.t VALUES (2, 'two')",
    "UPDATE d.t SET u = UUID() WHERE id = 1",
    "INSERT INTO d.t VALUES (3, 'three')",
]
STATEMENTS_2 = ["INSERT INTO d.t VALUES (4, UUID())", "DELETE FROM d.t WHERE id = 2"]
GTID_LINE = re.compile(rb"\tGTID (\d+-\d+-\d+)")
AT_GTID = re.compile(rb"# at (\d+)\n#[^\n]*\tGTID (\d+-\d+-\d+)")


def _timed(statements: list[str], first: int) -> str:
    return "; ".join(f"SET timestamp={T0 + 60 * (first + i)}; {s}" for i, s in enumerate(statements))


@pytest.fixture
def primary(mariadb) -> MariaDB:
    p: MariaDB = mariadb("primary", 1, "--log-bin=mysql-bin", "--binlog-format=MIXED")
    p.execute(_timed(STATEMENTS_1, 0))
    p.query("FLUSH BINARY LOGS")
    p.execute(_timed(STATEMENTS_2, len(STATEMENTS_1)))
    return p


def _boundaries(path: Path) -> list[int]:
    return [pos for pos, _ in iter_binlog(path.read_bytes())]


def _local(t: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def test_positions_and_datetimes_print_what_mariadb_binlog_prints(primary: MariaDB, harness_dir: Path) -> None:
    f1, f2 = copy_binlogs(primary, harness_dir / "b")
    b1, b2 = _boundaries(f1), _boundaries(f2)
    cases: list[tuple[str, ...]] = [
        (f"--start-position={b1[5]}", str(f1)),
        (f"--stop-position={b1[8]}", str(f1)),
        (f"--start-position={b1[6]}", f"--stop-position={b1[-3]}", str(f1)),
        (f"--start-position={b1[4]}", f"--stop-position={b2[6]}", str(f1), str(f2)),
        (f"--start-datetime={_local(T0 + 120)}", str(f1), str(f2)),
        (f"--stop-datetime={_local(T0 + 180)}", str(f1)),
        (f"--start-datetime={_local(T0 + 61)}", f"--stop-datetime={_local(T0 + 400)}", str(f1), str(f2)),
    ]
    for args in cases:
        ours = show(*args).stdout
        assert ours == mariadb_binlog(*args).stdout, args
        assert b"\tGTID" in ours or "--stop" in args[0], args  # each case prints something


def test_gtid_ranges_select_whole_groups(primary: MariaDB, harness_dir: Path) -> None:
    files = copy_binlogs(primary, harness_dir / "b")
    everything = GTID_LINE.findall(show(*files).stdout)
    assert [g.decode() for g in everything] == [f"0-1-{n}" for n in range(1, 9)]

    text = show("--start-gtid=0-1-3", "--stop-gtid=0-1-6", *files).stdout
    assert [g.decode() for g in GTID_LINE.findall(text)] == ["0-1-4", "0-1-5", "0-1-6"]
    assert text.rstrip().endswith(b"/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;")
    assert text.split(b"\tGTID 0-1-6")[1].count(b"COMMIT/*!*/;") == 1  # the stop group is printed whole
    assert b"VALUES (1," not in text and b"VALUES (4," not in text

    # mariadb-binlog 10.11 takes GTIDs in --start/--stop-position: the same selection, the same text
    for args in (("--start-position=0-1-3", "--stop-position=0-1-6"), ("--start-position=0-1-7",),
                 ("--stop-position=0-1-2",)):
        assert show(*args, *files).stdout == mariadb_binlog(*args, *files).stdout, args
    assert show("--start-gtid=0-1-3", "--stop-gtid=0-1-6", *files).stdout == \
        mariadb_binlog("--start-position=0-1-3", "--stop-position=0-1-6", *files).stdout

    bad = show("--start-gtid=0-1", *files, check=False)
    assert bad.returncode == 2 and b"--start-gtid" in bad.stderr and b"DOMAIN-SERVER-SEQ" in bad.stderr


def test_remote_reads_print_what_mariadb_binlog_prints(primary: MariaDB, mariadb, harness_dir: Path) -> None:
    remote = ("-R", "-h", primary.host, "-P", str(primary.port), "-u", "root")
    for extra in ((), ("--start-position=451",), ("--stop-position=700",), ("--start-position=451",
                                                                             "--stop-position=900")):
        args = (*remote, *extra, "mysql-bin.000001")
        assert show(*args).stdout == mariadb_binlog(*args).stdout, extra

    # a GTID start (@slave_connect_state): the server skips to it; binlogd show prints each event at its own
    # position (mariadb-binlog counts on from the first event it got, so its "# at" lines are not file positions)
    remote_gtid = show(*remote, "--start-position=0-1-4", "--to-last-log", "mysql-bin.000001").stdout
    files = copy_binlogs(primary, harness_dir / "b")
    local_gtid = show("--start-gtid=0-1-4", *files).stdout
    assert AT_GTID.findall(remote_gtid) == AT_GTID.findall(local_gtid)
    assert [g.decode() for g in GTID_LINE.findall(remote_gtid)] == [f"0-1-{n}" for n in range(5, 9)]

    # --to-last-log: both files; replayed, the primary's tables (positions are each file's own, see docs/show.md)
    text = show(*remote, "--to-last-log", "mysql-bin.000001").stdout
    assert [g.decode() for g in GTID_LINE.findall(text)] == [f"0-1-{n}" for n in range(1, 9)]
    target = mariadb("target", 41)
    replay(target, text)
    assert target.table_checksums(["d"]) == primary.table_checksums(["d"])

    unknown = show(*remote, "mysql-bin.000099", check=False)
    assert unknown.returncode == 1
    assert b"Could not find first log file name in binary log index file" in unknown.stderr


def test_stop_never_follows_new_events(primary: MariaDB) -> None:
    proc = subprocess.Popen([BINLOGD, "show", "--progress=off", "-R", "-h", primary.host, "-P", str(primary.port),
                             "--stop-never", "mysql-bin.000001"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        seen = _read_until(proc, b"GTID 0-1-8")
        primary.query("INSERT INTO d.t VALUES (5, 'after the end')")
        seen += _read_until(proc, b"VALUES (5, 'after the end')")
        assert proc.poll() is None  # still following
    finally:
        proc.terminate()
        proc.wait(10)
    assert b"GTID 0-1-9" in seen


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, timeout: float = 20) -> bytes:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    got = b""
    fd = proc.stdout.fileno()
    while marker not in got:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else b""
            raise AssertionError(f"no {marker!r} in {got[-500:]!r}; stderr: {err!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            got += os.read(fd, 65536)
    return got
