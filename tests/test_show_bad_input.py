"""Bad input for `binlogd show`, made from a real MariaDB 10.11 binlog and checked against the real mariadb-binlog:
a truncated file, a corrupt CRC, an unknown event type with and without the ignorable flag (inside and beyond the
FDE's table of types), --force-read, a missing file, a file that is not a binlog, bad options. Every case ends with
one clear line on stderr naming the file and the position of the bad event (exit 1; 2 for options), never a
traceback; progress goes to stderr only when asked or on a terminal.

A file still in use (its FDE says so) that ends in a torn event ends there quietly (a warning), as in mariadb-binlog.
Differences from mariadb-binlog, on purpose: CRCs are always checked (mariadb-binlog prints a corrupt event unless
given --verify-binlog-checksum, and the client then replays garbage); --force-read skips a corrupt event with a
warning; on a truncated (closed) file --force-read stops with the error (mariadb-binlog --force-read loops there forever
writing the same event, checked by hand: 28 GB in 10 minutes, so it is not run here).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from binlogd.protocol.checksum import set_crc
from binlogd.protocol.events import iter_binlog

from tests.test_show_helpers import copy_binlogs, mariadb_binlog, show

pytestmark = pytest.mark.mariadb


@pytest.fixture
def variants(mariadb, harness_dir: Path) -> dict[str, tuple[Path, int]]:
    """name -> (file, position of the damaged event) from a real primary's binlog."""
    primary = mariadb("primary", 1, "--log-bin=mysql-bin", "--binlog-format=STATEMENT")
    primary.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT); INSERT INTO d.t VALUES (1); "
                    "INSERT INTO d.t VALUES (2); FLUSH BINARY LOGS")
    good, active = copy_binlogs(primary, harness_dir / "good")  # 1 closed, 2 still in use (FDE flag 0x1)
    src = good.read_bytes()
    pos, event = next((p, e) for p, e in iter_binlog(src) if b"VALUES (1)" in e)
    out: dict[str, tuple[Path, int]] = {"good": (good, pos)}

    def write(name: str, data: bytes) -> None:
        d = harness_dir / name
        d.mkdir()
        (d / "mysql-bin.000001").write_bytes(data)
        out[name] = (d / "mysql-bin.000001", pos)

    write("truncated", src[:pos + 30])
    active_data = active.read_bytes()
    last_pos, last = list(iter_binlog(active_data))[-1]
    d = harness_dir / "active"
    d.mkdir()
    (d / active.name).write_bytes(active_data[:last_pos + len(last) // 2])
    out["active"] = (d / active.name, last_pos)
    corrupt = bytearray(src)
    corrupt[pos + 60] ^= 0xFF
    write("crc", bytes(corrupt))
    for name, type_code, flags in (("unknown", 50, 0), ("ignorable", 50, 0x80), ("beyond", 200, 0x80)):
        ev = bytearray(event)
        ev[4] = type_code
        ev[17:19] = (int.from_bytes(ev[17:19], "little") | flags).to_bytes(2, "little")
        set_crc(ev)
        write(name, src[:pos] + bytes(ev) + src[pos + len(event):])
    return out


def _one_error_line(stderr: bytes, *needles: bytes) -> None:
    assert b"Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    for n in needles:
        assert n in lines[0], (n, stderr)


def test_truncated_file(variants: dict[str, tuple[Path, int]]) -> None:
    path, pos = variants["truncated"]
    for force in ((), ("--force-read",)):
        r = show(*force, path, check=False)
        assert r.returncode == 1
        _one_error_line(r.stderr, b"mysql-bin.000001", b"truncated event at position %d" % pos)
        assert b"INSERT INTO d.t VALUES (1)" not in r.stdout
    assert mariadb_binlog(path, check=False).returncode == 1  # mariadb-binlog fails too (without --force-read)


def test_truncated_file_in_use_ends_quietly(variants: dict[str, tuple[Path, int]]) -> None:
    """A file still being written (FDE in-use flag) ends where the writer is: a warning, exit 0, as mariadb-binlog."""
    path, pos = variants["active"]
    r = show(path)
    assert b"WARNING" in r.stderr and b"position %d" % pos in r.stderr and b"in use" in r.stderr
    assert b"# Warning: this binlog is either in use" in r.stdout
    assert r.stdout == mariadb_binlog(path).stdout


def test_corrupt_crc(variants: dict[str, tuple[Path, int]]) -> None:
    path, pos = variants["crc"]
    r = show(path, check=False)
    assert r.returncode == 1
    _one_error_line(r.stderr, b"event at position %d" % pos, b"CRC32")
    assert mariadb_binlog("--verify-binlog-checksum", path, check=False).returncode == 1
    forced = show("--force-read", path, check=False)
    assert forced.returncode == 0
    assert b"WARNING" in forced.stderr and b"position %d" % pos in forced.stderr
    assert b"VALUES (1)" not in forced.stdout and b"INSERT INTO d.t VALUES (2)" in forced.stdout


def test_unknown_event_types(variants: dict[str, tuple[Path, int]]) -> None:
    # inside the FDE's table without the ignorable flag: both tools stop; with --force-read both print the same
    path, pos = variants["unknown"]
    r = show(path, check=False)
    assert r.returncode == 1 and mariadb_binlog(path, check=False).returncode == 1
    _one_error_line(r.stderr, b"position %d" % pos, b"unknown type 50 without the ignorable flag")
    forced = show("--force-read", path)
    assert forced.stdout == mariadb_binlog("--force-read", path).stdout
    assert b"# Unknown event" in forced.stdout

    # with the ignorable flag: both print it as an Ignorable event and go on
    path, _ = variants["ignorable"]
    text = show(path).stdout
    assert text == mariadb_binlog(path).stdout
    assert b"# Ignorable event type 50 (Unknown)" in text and b"INSERT INTO d.t VALUES (2)" in text

    # beyond the FDE's table: an error even with the ignorable flag (as mariadb-binlog); --force-read goes on
    path, pos = variants["beyond"]
    r = show(path, check=False)
    assert r.returncode == 1 and mariadb_binlog(path, check=False).returncode == 1
    _one_error_line(r.stderr, b"position %d" % pos, b"type 200 is beyond the 171 event types")
    forced = show("--force-read", path)
    assert b"# Unknown event" in forced.stdout and b"INSERT INTO d.t VALUES (2)" in forced.stdout


def test_missing_and_foreign_files_and_bad_options(variants: dict[str, tuple[Path, int]], harness_dir: Path) -> None:
    r = show(harness_dir / "nope.000001", check=False)
    assert r.returncode == 1
    _one_error_line(r.stderr, b"nope.000001", b"cannot open")
    foreign = harness_dir / "foreign.000001"
    foreign.write_bytes(b"CREATE TABLE x (a INT);\n")
    r = show(foreign, check=False)
    assert r.returncode == 1
    _one_error_line(r.stderr, b"not a binlog file")
    good, _ = variants["good"]
    for args, needle in (((), b"no binlog file given"), (("--start-position=2", good), b"positions start at 4"),
                         (("--stop-datetime=yesterday", good), b"Incorrect date and time argument"),
                         (("--do-table=nodot", good), b"db_name.table_name"),
                         (("--to-last-log", good), b"--to-last-log needs --read-from-remote-server")):
        r = show(*args, check=False)
        assert r.returncode == 2, args
        assert b"Traceback" not in r.stderr and needle in r.stderr, (args, r.stderr)


def test_progress_only_on_stderr_and_only_when_asked(variants: dict[str, tuple[Path, int]]) -> None:
    good, _ = variants["good"]
    quiet = show("--progress=auto", good)  # stderr is a pipe here: no progress
    assert quiet.stderr == b""
    loud = show("--progress=on", good)
    assert loud.stdout == quiet.stdout
    assert b"\x1b[" in loud.stderr  # a rich live display


def test_damaged_event_bodies_never_crash(variants: dict[str, tuple[Path, int]], harness_dir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Random bytes in event bodies, each event's CRC made right again so that the decoders see them: every run
    ends with exit 0 or 1 and at most clear lines on stderr (an exception would fail this test)."""
    from binlogd.show.cli import main

    good, _ = variants["good"]
    data = good.read_bytes()
    events = list(iter_binlog(data))[1:]  # keep the FDE
    rng = random.Random(17)
    target = harness_dir / "fuzz" / good.name
    target.parent.mkdir()
    codes: set[int] = set()
    for _ in range(150):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos, ev = rng.choice(events)
            body = bytearray(ev)
            for _ in range(rng.randint(1, 4)):
                body[rng.randrange(19, len(body) - 4)] = rng.randrange(256)
            set_crc(body)
            damaged[pos:pos + len(body)] = body
        target.write_bytes(damaged)
        for opts in ((), ("-vv", "--force-read"), ("--do-table=d.t", "--skip-flagged")):
            rc = main([*opts, "--progress=off", "-r", os.devnull, str(target)])
            assert rc in (0, 1)
            codes.add(rc)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert codes == {0, 1}  # some damage is harmless text, some stops the read
