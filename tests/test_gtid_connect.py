"""GTID connect (`@slave_connect_state`): binlogd and a real MariaDB 10.11 primary serving the same binlog
files answer the same start positions with the same stream, or the same 1236 error text.

The real primary opens one extra binlog file at startup (FDE, GTID_LIST, checkpoint: no transactions), so
a successful stream is compared up to the end of the copied files.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from binlogd.protocol.commands import build_binlog_dump
from binlogd.protocol.constants import GTID_EVENT
from binlogd.protocol.events import iter_binlog

from tests.dumpclient import DumpCapture, raw_dump
from tests.oracle_data import ORACLE

FILES = [ORACLE / "mysql-bin.000001", ORACLE / "mysql-bin.000002"]

CASES = [
    # (connect state, strict, ignore_duplicates)
    ("", 0, 0),
    ("0-1-4", 0, 0),
    ("0-1-4", 1, 0),
    ("0-1-11", 0, 0),
    ("0-1-12", 0, 0),
    ("0-1-99", 0, 0),  # beyond the binlog: 1945
    ("0-1-99", 0, 1),  # ... accepted with ignore_duplicates
    ("0-7-3", 0, 0),  # a server that never wrote to domain 0, lower seq: 1955 (diverged)
    ("0-7-99", 0, 0),  # ... higher seq: 1945
    ("5-1-3", 0, 0),  # a domain the binlog does not know: accepted (START_ON_EMPTY_DOMAIN)
    ("0-1-4,5-1-3", 0, 0),
    ("0-1", 0, 0),  # malformed
    ("0-1-4,0-1-5", 0, 0),  # duplicate domain
]


def _session(state: str, strict: int, dup: int) -> list[str]:
    return [
        "SET @master_binlog_checksum= @@global.binlog_checksum",
        "SET @mariadb_slave_capability=4",
        f"SET @slave_connect_state='{state}'",
        f"SET @slave_gtid_strict_mode={strict}",
        f"SET @slave_gtid_ignore_duplicates={dup}",
    ]


@pytest.fixture
def pair(tmp_path: Path, mariadb, binlogd):
    d = tmp_path / "binlogs"
    d.mkdir()
    for f in FILES:
        shutil.copy(f, d)
    real = mariadb.primary_from_binlogs("real", 1, FILES)
    ours = binlogd(["--binlog-dir", str(d), "--server-id", "1", "--compat", "mariadb"])
    return real, ours


def _dump(server, state: str, strict: int, dup: int) -> DumpCapture:
    return raw_dump(server.host, server.port, _session(state, strict, dup),
                    build_binlog_dump(4, 1, 77, "mysql-bin.000001"))


def test_gtid_connect_matches_real_primary(pair) -> None:
    real, ours = pair
    for state, strict, dup in CASES:
        want, got = _dump(real, state, strict, dup), _dump(ours, state, strict, dup)
        label = f"state={state!r} strict={strict} ignore_duplicates={dup}"
        if want.error is not None:
            assert got.error == want.error, label
            assert got.events == want.events, label
            continue
        assert got.end == "EOF" and got.error is None, (label, got.error)
        if want.events[0][27:43] == b"mysql-bin.000003":
            # the real primary found the position in its own startup file; binlogd has no such file, so it
            # starts in the last copied one and must send no transaction from it
            assert [e[4] for e in want.events] == [4, 15, 163, 161], label
            assert not [e for e in got.events if e[4] in (162, 2, 16, 19, 23, 24, 25, 30, 31, 32)], label
            continue
        # binlogd's stream = the real one up to the end of the copied files (then the real primary's
        # startup file follows: fake ROTATE + FDE + GTID_LIST + checkpoint)
        n = len(got.events)
        assert got.events == want.events[:n], label
        rest = want.events[n:]
        assert [e[4] for e in rest] == [4, 15, 163, 161], (label, [e[4] for e in rest])


def test_strict_mode_hole_and_other_servers(tmp_path: Path, mariadb, binlogd) -> None:
    """A binlog with a gap in domain 0 (seq 3 -> 10) and a second server id: GTIDs inside the gap are refused
    in strict mode (1951) and accepted otherwise, exactly like a real primary serving the same files."""
    gen = mariadb.primary("gen", 1, "--binlog-annotate-row-events=ON")
    gen.execute(
        "CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
        "INSERT INTO g.t VALUES (1); SET gtid_seq_no=10; INSERT INTO g.t VALUES (2);"
        "SET server_id=7; INSERT INTO g.t VALUES (3); SET server_id=1; SET gtid_domain_id=3;"
        "INSERT INTO g.t VALUES (4)"
    )
    files = [f for f, _ in gen.binary_logs()]
    gen.stop()
    d = tmp_path / "gap"
    d.mkdir()
    for f in files:
        shutil.copy(gen.datadir / f, d / f)
    real = mariadb.primary_from_binlogs("realgap", 1, [d / f for f in files])
    ours = binlogd(["--binlog-dir", str(d), "--server-id", "1", "--compat", "mariadb"])
    cases = [("0-1-5", 1, 0), ("0-1-5", 0, 0), ("0-1-10", 1, 0), ("0-7-11", 0, 0), ("0-1-10,3-1-1", 1, 0),
             ("0-7-11,3-1-0", 0, 0), ("0-1-3", 1, 0)]
    seen_errors = set()
    for state, strict, dup in cases:
        want = raw_dump(real.host, real.port, _session(state, strict, dup), build_binlog_dump(4, 1, 77, files[0]))
        got = raw_dump(ours.host, ours.port, _session(state, strict, dup), build_binlog_dump(4, 1, 77, files[0]))
        label = f"state={state!r} strict={strict}"
        assert got.error == want.error, label
        if want.error:
            seen_errors.add(want.error[0])
            continue
        n = len(got.events)
        assert [_canonical(e) for e in got.events] == [_canonical(e) for e in want.events[:n]], label
    assert 1236 in seen_errors  # the strict-mode hole (1951's text sent as 1236)


def _canonical(ev: bytes) -> bytes | tuple[bytes, frozenset[tuple[int, int, int]]]:
    """A fake GTID_LIST with several domains: MariaDB orders the domains by its internal hash table, binlogd
    by domain id (documented); both keep each domain's last GTID last. Compare those as sets of GTIDs."""
    if ev[4] != 163 or not ev[17] & 0x20:
        return ev
    (count,) = struct.unpack_from("<I", ev, 19)
    gtids = frozenset(struct.unpack_from("<IIQ", ev, 23 + 16 * i) for i in range(count & 0x0FFFFFFF))
    return ev[:19], gtids


def test_gtid_start_never_lands_in_a_file_that_holds_only_its_fde(tmp_path: Path, binlogd) -> None:
    """A file whose GTID_LIST is not written yet (the active file right after its FDE) is not taken for a file
    without GTID_LIST: an empty GTID position starts in the first file and gets every transaction."""
    d = tmp_path / "binlogs"
    d.mkdir()
    for f in FILES:
        shutil.copy(f, d)
    fde_len = struct.unpack_from("<I", FILES[1].read_bytes(), 4 + 9)[0]
    (d / "mysql-bin.000003").write_bytes(FILES[1].read_bytes()[: 4 + fde_len])
    ours = binlogd(["--binlog-dir", str(d), "--server-id", "1", "--compat", "mariadb"])
    got = _dump(ours, "", 0, 0)
    assert got.error is None and got.events[0][27:43] == b"mysql-bin.000001"
    want = sum(1 for f in FILES for _, ev in iter_binlog(f.read_bytes()) if ev[4] == GTID_EVENT)
    assert sum(1 for e in got.events if e[4] == GTID_EVENT) == want > 0
