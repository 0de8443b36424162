"""binlogd --compat mariadb against a real MariaDB 10.11 primary's streams over a binlog with four GTID domains.

tests/data/oracle/multidomain/dump holds the binlog files and the captures that
`python -m tests.data.oracle.multidomain.record` took from a real primary: file/position connects before, inside
and after each domain's first group (capabilities 0/2/4, skip off/on), starts in the middle of an event and past the
end, GTID connects from every replica state along the binlog (the fake GTID_LISTs: which domains and in which
order), GTID states the binlog cannot serve, @slave_until_gtid (START SLAVE UNTIL master_gtid_pos), and connects after
PURGE BINARY LOGS; dump/corrupt: closed files
damaged on purpose (an event length over 1 GiB or under 19, files ending inside a header, inside a body, inside
an event that crosses a read-buffer boundary, an event longer than it is). Each capture is replayed with the same
session statements and command bytes; the stream must be identical byte for byte, 1236 texts included.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from binlogd.protocol.gtid import Gtid
from binlogd.protocol.io_cache import last_byte_read
from binlogd.protocol.mariadb_hash import HashedBinlogState, hash_sort_bin

from binlogd.testing import Binlogd
from tests.data.oracle import records
from tests.data.oracle.multidomain.record import main as record_main
from tests.data.oracle.shape import binlog_shape, capture_shape
from tests.dumpclient import raw_dump, split_packets
from tests.oracle_data import REPO_ROOT

DUMP = REPO_ROOT / "tests" / "data" / "oracle" / "multidomain" / "dump"
CORRUPT = DUMP / "corrupt"
FILES = [f"mysql-bin.00000{n}" for n in (1, 2, 3, 4)]
CAPTURES = sorted(p.stem for p in DUMP.glob("*.json"))
PURGED = [c for c in CAPTURES if c.startswith("purged_")]
DAMAGED = sorted(p.stem for p in CORRUPT.glob("*.json"))
SUFFIX = re.compile(r"; the first event '([^']+)' at (\d+), the last event read from '([^']+)' at (\d+), "
                    r"the last byte read from '([^']+)' at (\d+)\.$")


def _load(path: Path) -> tuple[dict, bytes]:
    return json.loads(path.with_suffix(".json").read_text()), path.with_suffix(".raw").read_bytes()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    """binlogd --compat mariadb over the four files, over files 2-4 (file 1 purged), and over the damaged files."""
    if not (DUMP / FILES[0]).is_file():
        pytest.fail(f"multi-domain captures missing at {DUMP}", pytrace=False)
    started: dict[str, Binlogd] = {}
    logs = tmp_path_factory.mktemp("logs")
    damaged = sorted(p.name for p in CORRUPT.glob("mysql-bin.*"))
    try:
        for label, src, files, compat in (("all", DUMP, FILES, "mariadb"), ("purged", DUMP, FILES[1:], "mariadb"),
                                          ("corrupt", CORRUPT, damaged, "mariadb"),
                                          ("default", DUMP, FILES, "binlogd")):
            d = tmp_path_factory.mktemp(label)
            for f in files:
                shutil.copy(src / f, d)
            started[label] = Binlogd.start(["--binlog-dir", str(d), "--server-id", "1", "--compat", compat],
                                           log_path=logs / f"{label}.log")
        yield started
    finally:
        for s in started.values():
            s.stop()


def _diff(expected: bytes, got: bytes) -> str:
    ep, gp = split_packets(expected), split_packets(got)
    for i, (a, b) in enumerate(zip(ep, gp, strict=False)):
        if a != b:
            return f"packet {i}: expected seq {a.seq} {a.payload.hex()}\n          got seq {b.seq} {b.payload.hex()}"
    return f"packet count: expected {len(ep)}, got {len(gp)}"


def _replay(server: Binlogd, path: Path) -> None:
    meta, expected = _load(path)
    cap = raw_dump(server.host, server.port, meta["session_statements"], bytes.fromhex(meta["com_binlog_dump_hex"]),
                   bytes.fromhex(meta["com_register_slave_hex"]), idle_timeout=3.0)
    assert cap.raw == expected, _diff(expected, cap.raw)
    assert cap.end == meta["end"]["kind"]


def _fake_lists(meta: dict) -> list[list[str]]:
    return [e["decoded"]["gtids"] for e in meta["events"] if e["type"] == 163 and "ARTIFICIAL" in e["flag_names"]]


def test_captures_cover_the_cases() -> None:
    """The recording has what the issue asks for: fake GTID_LISTs naming up to four domains in MariaDB's (unsorted)
    order, 1236 errors of every kind, purged connects, damaged files read from several start positions."""
    assert len(CAPTURES) > 100, CAPTURES
    lists = [lst for name in CAPTURES for lst in _fake_lists(_load(DUMP / name)[0])]
    assert max(len({g.split("-")[0] for g in lst}) for lst in lists) == 4
    assert any(lst != sorted(lst, key=lambda g: [int(x) for x in g.split("-")]) for lst in lists)
    errors = {_load(DUMP / n)[0]["end"].get("message", "").split(";")[0] for n in CAPTURES + [f"corrupt/{d}" for d in
                                                                                               DAMAGED]}
    for text in ("bogus data in log event", "Could not find first log file name in binary log index file",
                 "log event entry exceeded max_allowed_packet", "binlog truncated in the middle of event",
                 "Client requested master to start replication from impossible position"):
        assert any(e.startswith(text) for e in errors), (text, errors)
    assert len(PURGED) >= 3 and len(DAMAGED) >= 12
    untils = [n for n in CAPTURES if n.startswith("until_")]  # START SLAVE UNTIL master_gtid_pos
    assert sum(1 for n in untils for e in _load(DUMP / n)[0]["events"]
               if e["type"] == 163 and e["decoded"]["flags"] == 1) >= 5  # FLAG_UNTIL_REACHED


@pytest.mark.parametrize("name", CAPTURES)
def test_compat_mariadb_is_byte_identical(name: str, servers: dict[str, Binlogd]) -> None:
    _replay(servers["purged" if name in PURGED else "all"], DUMP / name)


@pytest.mark.parametrize("name", [n for n in CAPTURES if n not in PURGED and not n.endswith(("cap0_skip1",))])
def test_default_policy_is_byte_identical_where_it_has_no_extension(name: str, servers: dict[str, Binlogd]) -> None:
    """binlogd's default policy differs from MariaDB only by dummies for skip_replication at capability < 2 and
    by the position sync of blocking dumps: every other multi-domain stream is MariaDB's, fake GTID_LISTs included."""
    _replay(servers["default"], DUMP / name)


@pytest.mark.parametrize("name", DAMAGED)
def test_damaged_files_give_mariadbs_1236(name: str, servers: dict[str, Binlogd]) -> None:
    """The same events, then the same 1236 text: code, reason, and the three coordinates."""
    _replay(servers["corrupt"], CORRUPT / name)


@pytest.mark.parametrize("path", [CORRUPT / n for n in DAMAGED] + [DUMP / n for n in CAPTURES if "midevent" in n],
                         ids=lambda p: p.stem)
def test_io_cache_model_gives_the_last_byte_read(path: Path) -> None:
    """The replayed IO_CACHE puts "the last byte read" where the real primary said, from the file alone; where the
    read buffer's end decides it (tornspan: 16384, not the event's header end; tornfar from 4: 32768) and where
    it does not (tornfar from a start past the first buffer: the refills end at 36 KiB, the header end is said)."""
    meta, _ = _load(path)
    m = SUFFIX.search(meta["end"]["message"])
    assert m, meta["end"]
    data = (path.parent / m[5]).read_bytes()
    start = int(m[2]) if m[1] == m[5] else 4  # a dump reads every file after its first from 4
    got = last_byte_read(lambda p, n: data[p : p + n], len(data), start, int(m[4]))
    assert got == int(m[6])
    if path.stem.startswith("tornspan") or path.stem == "tornfar_from4":  # a refill came up short
        assert got % 4096 == 0 and got != int(m[4]) + 19
    if path.stem.startswith("tornfar_from2"):  # the seek to the start left the first buffer: refills end elsewhere
        assert got == int(m[4]) + 19


def test_hash_order_of_the_fake_lists() -> None:
    """The domain/server order comes from MariaDB's HASH, not from sorting or first appearance: the replayed
    insert algorithm gives the lists the real primary sent, and sorted order would not."""
    assert hash_sort_bin(b"\0\0\0\0") != hash_sort_bin(b"\x01\0\0\0")
    gtids = _file2_gtids()
    for name, upto in (("gtid_after13_cap4", 10), ("gtid_diverged_cap4", 11)):
        state = HashedBinlogState()
        for g in gtids[:upto]:
            state.update(g)
        got = [str(g) for g in state.as_list()]
        assert got == _fake_lists(_load(DUMP / name)[0])[-1]
        assert got != [str(g) for g in sorted(state.as_list())]
        assert [g.split("-")[0] for g in got] != list(dict.fromkeys(str(g.domain) for g in gtids[:upto]))


def _file2_gtids() -> list[Gtid]:
    """File 2's GTIDs in binlog order, from SHOW BINLOG EVENTS as recorded."""
    out = []
    for line in (DUMP / "show_binlog_events.txt").read_text().splitlines():
        cols = line.split("\t")
        if cols[0] == FILES[1] and cols[2] == "Gtid":
            d, s, n = (int(x) for x in cols[5].split()[-1].split("-"))
            out.append(Gtid(d, s, n))
    return out


def test_binlog_files_are_the_recorded_ones() -> None:
    """The stored files are the ones the captures were read from (their sizes as SHOW BINLOG EVENTS says)."""
    ends: dict[str, int] = {}
    for line in (DUMP / "show_binlog_events.txt").read_text().splitlines():
        cols = line.split("\t")
        if cols[0] in FILES:
            ends[cols[0]] = int(cols[4])
    assert {f: (DUMP / f).stat().st_size for f in FILES} == ends


@pytest.mark.parametrize("path", [DUMP / n for n in CAPTURES] + [CORRUPT / n for n in DAMAGED], ids=lambda p: p.stem)
def test_stored_json_is_rebuilt_from_raw(path: Path) -> None:
    """Each .json is what the oracle's record builder makes of its .raw (one format for both oracles)."""
    doc, raw = _load(path)
    events, end = records.stream_records(raw, [e["t_ms"] / 1000 for e in doc["events"]])
    assert events == doc["events"] and end == doc["end"]
    assert records.dumps(doc) == path.with_suffix(".json").read_text()


def test_recording_again_changes_only_run_dependent_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m tests.data.oracle.multidomain.record` on a fresh primary gives the stored files and streams apart
    from timestamps, CRCs and ids (the lengthened event of longer_* carries the next events' timestamps: its end
    and its event count are compared)."""
    monkeypatch.setenv("TMPDIR", os.environ.get("TMPDIR", "/tmp"))  # the recorder points TMPDIR at its own dir
    monkeypatch.setattr(tempfile, "tempdir", tempfile.tempdir)
    assert record_main(["--out", str(tmp_path / "new")]) == 0
    new = tmp_path / "new"
    for f in FILES:
        assert binlog_shape((new / f).read_bytes()) == binlog_shape((DUMP / f).read_bytes()), f
    assert sorted(p.stem for p in new.glob("*.json")) == CAPTURES
    assert sorted(p.stem for p in (new / "corrupt").glob("*.json")) == DAMAGED
    for path in [DUMP / n for n in CAPTURES] + [CORRUPT / n for n in DAMAGED]:
        old_doc = _load(path)[0]
        new_doc = json.loads((new / path.relative_to(DUMP)).with_suffix(".json").read_text())
        if path.stem.startswith("longer_"):
            assert (new_doc["end"], len(new_doc["events"])) == (old_doc["end"], len(old_doc["events"]))
        elif path.stem.startswith("shortgtid_cap"):  # a file/pos read goes on 27 bytes into the shortened GTID:
            # the next "header" is run-dependent bytes (commit id, timestamp), so which read error ends it varies
            ends = [(d["end"]["kind"], d["end"].get("code"), len(d["events"])) for d in (new_doc, old_doc)]
            assert ends[0] == ends[1], path.stem
        else:
            assert capture_shape(new_doc) == capture_shape(old_doc), path.stem
