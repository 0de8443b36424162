"""The ledger writer (server/ledger.py) on real files, and the CLI's ledger options (real subprocesses).

End-to-end checks against real dumps are in test_ledger_dump.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from binlogd.server.ledger import NULL, SHORT_BATCH, Ledger, LedgerError, ev_lines, file_name, jstr, scan_directory

from tests.harness import REPO_ROOT
from tests.oracle_data import oracle_dir


def _records(directory: Path) -> list[dict]:
    """Every complete record of the directory, file by file (json, independent of the writer's scanner)."""
    out = []
    for path in sorted(directory.glob("ledger.*.jsonl")):
        for line in path.read_bytes().split(b"\n")[:-1]:
            out.append(json.loads(line))
    return out


def _ev(file: str, start: int, end: int) -> tuple:
    return (json.dumps(file), start, end, 1, end - start, "sent", "null", 2, 0, "null", end - start, 0)


async def _write(directory: Path, batches: list[list[tuple]], max_size: int = 1 << 20, queue_limit: int = 200_000,
                 ) -> tuple[list[int], int]:
    """Open a ledger, write one connection's batches (waiting when the queue is full), close it."""
    ledger = await asyncio.to_thread(Ledger.open, directory, max_size, queue_limit)
    ledger.start()
    conn = ledger.new_conn()
    ledger.put_dict("conn", conn, {"thread_id": 1})
    full_seen = 0
    for b in batches:
        ledger.put_records(conn, b)
        if ledger.full:
            full_seen += 1
            await ledger.wait_room()
    ledger.put_dict("close", conn, {"reason": "eof"})
    await asyncio.to_thread(ledger.close)
    return [conn], full_seen


async def test_numbering_continues_across_restarts(tmp_path: Path) -> None:
    await _write(tmp_path, [[_ev("f", 4, 10), _ev("f", 10, 20)]])
    await _write(tmp_path, [[_ev("f", 4, 10)]])
    recs = _records(tmp_path)
    assert [r["seq"] for r in recs] == list(range(1, 8))
    assert [r["conn"] for r in recs] == [1] * 4 + [2] * 3
    assert [r["r"] for r in recs] == ["conn", "ev", "ev", "close", "conn", "ev", "close"]
    assert list(recs[0])[:4] == ["r", "seq", "conn", "ts_us"]
    assert recs[1] == {"r": "ev", "seq": 2, "conn": 1, "ts_us": recs[1]["ts_us"], "file": "f", "start": 4, "end": 10,
                       "count": 1, "length": 6, "action": "sent", "why": None, "type": 2, "flags": 0, "gtid": None,
                       "sent_length": 6, "policy": 0}


async def test_rotation_by_size(tmp_path: Path) -> None:
    batches = [[_ev("mysql-bin.000001", 4 + i * 10, 14 + i * 10) for i in range(50)] for _ in range(4)]
    await _write(tmp_path, batches, max_size=4096)
    files = sorted(tmp_path.glob("ledger.*.jsonl"))
    assert len(files) > 5
    assert [f.name for f in files] == [file_name(i) for i in range(1, len(files) + 1)]
    assert all(f.stat().st_size <= 4096 for f in files)
    recs = _records(tmp_path)
    assert [r["seq"] for r in recs] == list(range(1, 4 * 50 + 3))
    # a restart appends to the newest file while it has room
    newest = files[-1]
    size = newest.stat().st_size
    await _write(tmp_path, [[_ev("f", 4, 10)]], max_size=4096)
    after = sorted(tmp_path.glob("ledger.*.jsonl"))
    if size + 3 * 250 < 4096:
        assert after[-1] == newest and newest.stat().st_size > size
    assert [f.name for f in after] == [file_name(i) for i in range(1, len(after) + 1)]
    assert [r["seq"] for r in _records(tmp_path)] == list(range(1, 4 * 50 + 6))


async def test_torn_last_record_reported_and_left_in_place(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    await _write(tmp_path, [[_ev("f", 4, 10)]])
    first = tmp_path / file_name(1)
    good = first.read_bytes()
    torn = b'{"r":"ev","seq":4,"conn":1,"ts_us":17953'
    first.write_bytes(good + torn)  # what a crash in the middle of a write leaves
    caplog.set_level("WARNING", logger="binlogd.ledger")
    await _write(tmp_path, [[_ev("f", 4, 10)]])
    assert any("torn record" in r.message and file_name(1) in r.message and f"offset {len(good)}" in r.message
               for r in caplog.records), caplog.text
    assert first.read_bytes() == good + torn  # append-only: never repaired in place
    second = [json.loads(x) for x in (tmp_path / file_name(2)).read_bytes().splitlines()]
    # the torn record's own number (4, readable in its bytes) is not reused; connections continue after 1
    assert [r["seq"] for r in second] == [5, 6, 7]
    assert {r["conn"] for r in second} == {2}


def test_scan_of_a_torn_record_without_a_number(tmp_path: Path) -> None:
    (tmp_path / file_name(3)).write_bytes(
        b'{"r":"conn","seq":7,"conn":4,"ts_us":1}\n{"r":"ev","seq":8,"conn":4,"ts_us":1}\n{"r":"e')
    r = scan_directory(tmp_path)
    assert (r.seq, r.conn, r.next_file) == (8, 4, 4)
    assert r.torn is not None and r.torn.seq is None and (r.torn.offset, r.torn.size) == (78, 7)


def test_scan_reads_older_files_for_the_connection_number(tmp_path: Path) -> None:
    (tmp_path / file_name(1)).write_bytes(b'{"r":"conn","seq":1,"conn":9,"ts_us":1}\n')
    (tmp_path / file_name(2)).write_bytes(b'{"r":"ev","seq":2,"conn":9,"ts_us":1}\n' * 3)
    r = scan_directory(tmp_path)
    assert (r.seq, r.conn, r.next_file, r.torn) == (2, 9, 2, None)


async def test_back_pressure_waits_and_loses_nothing(tmp_path: Path) -> None:
    batches = [[_ev("f", 4 + j, 5 + j) for j in range(500)] for _ in range(40)]
    _, full_seen = await _write(tmp_path, batches, queue_limit=100)
    assert full_seen > 0
    recs = _records(tmp_path)
    assert len(recs) == 40 * 500 + 2
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))


def test_open_errors(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(LedgerError, match="not a directory"):
        Ledger.open(f)
    with pytest.raises(LedgerError, match="cannot create ledger directory"):
        Ledger.open(f / "sub")
    with pytest.raises(LedgerError, match="at least"):
        Ledger.open(tmp_path / "ok", max_size=10)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogd.server.cli", "serve", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_cli_bad_ledger_paths(tmp_path: Path) -> None:
    binlogs = str(oracle_dir())
    f = tmp_path / "afile"
    f.write_text("x")
    for bad, msg in [(str(f), "is not a directory"), (str(f / "sub"), "cannot create ledger directory")]:
        r = _cli("--binlog-dir", binlogs, "--port", "0", "--ledger", bad)
        assert r.returncode == 2, r
        assert f"binlogd: {msg}" in r.stderr or msg in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    r = _cli("--binlog-dir", binlogs, "--ledger", str(tmp_path / "l"), "--ledger-max-size", "12")
    assert r.returncode == 2 and "at least 1024 bytes" in r.stderr, r.stderr
    r = _cli("--binlog-dir", binlogs, "--ledger-max-size", "lots")
    assert r.returncode == 2 and "not a size" in r.stderr, r.stderr
    r = _cli("--binlog-dir", binlogs, "--ledger", str(tmp_path / "l"), "--no-ledger")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr, r.stderr
    assert not (tmp_path / "l").exists()


def test_cli_ledger_defaults() -> None:
    from binlogd.server.cli import _ledger_dir, build_parser

    def ledger_for(*argv: str) -> Path | None:
        return _ledger_dir(build_parser().parse_args(["serve", *argv]))

    assert ledger_for("--binlog-dir", "/b") is None  # may be read-only: off unless asked
    assert ledger_for("--datadir", "/d") == Path("/d/ledger")  # standalone primary
    assert ledger_for() == Path("var/ledger")  # standalone with the default datadir
    assert ledger_for("--binlog-dir", "/b", "--ledger", "/l") == Path("/l")
    assert ledger_for("--upstream", "mysql://root:@127.0.0.1:3306", "--datadir", "/d") == Path("/d/ledger")
    assert ledger_for("--upstream", "mysql://root:@127.0.0.1:3306", "--datadir", "/d", "--no-ledger") is None
    assert build_parser().parse_args(["serve", "--binlog-dir", "/b", "--ledger-max-size", "2M"]).ledger_max_size \
        == 2 << 20


def test_why_comes_from_the_decision_rules() -> None:
    """The ledger's `why` is the rule that gave the action: the table agrees with `explain()`, the action with
    `decide()`, and only non-SEND actions have a reason."""
    import itertools

    from binlogd.protocol.decision import Action, Compat, DecisionTable, ReplicaPolicy, decide, explain

    for cap, skip, annotate, compat in itertools.product(range(5), (False, True), (False, True), Compat):
        policy = ReplicaPolicy(cap, skip, annotate, compat)
        table = DecisionTable(policy)
        for t, flags, standalone in itertools.product(range(256), (0, 0x8000), (False, True)):
            action, why = explain(t, flags, standalone, policy)
            assert action == decide(t, flags, standalone, policy) == table.lookup(t, flags, standalone)
            assert table.why(t, flags, standalone) == why
            assert (why is None) == (action == Action.SEND)
            if skip and flags & 0x8000:
                assert why == "skip_replication"


def test_ev_line_is_json_for_any_file_name() -> None:
    from binlogd.server.ledger import ev_line

    for name in ("mysql-bin.000001", 'we"ird%s\\name.000001', "bin\u00e9.000002"):
        fj = json.dumps(name)
        rec = json.loads(ev_line(3, 2, 1, (fj, 4, 256, 1, 252, "sent", "null", 15, 0, "null", 252, 0)))
        assert rec["file"] == name and (rec["seq"], rec["conn"], rec["start"], rec["type"]) == (3, 2, 4, 15)
        assert ev_line(3, 2, 1, (fj, 4, 4, 1, 0, "fake", '"rotate"', 4, 32, "null", 47, 0)).isascii()


def test_short_and_long_batches_give_the_same_lines() -> None:
    """`ev_lines` formats a short batch through the cache of formatted records and a long one in bulk: the lines
    are the same JSON, equal records of other connections included."""
    recs = [(jstr("mysql-bin.000003"), 4 + 300 * i, 304 + 300 * i, i % 3 + 1, 300, ("sent", "hole", "dummy")[i % 3],
             NULL if i % 2 else jstr("capability"), 16 if i % 4 == 0 else NULL, 0 if i % 4 == 0 else NULL,
             jstr(f"0-1-{i}") if i % 5 == 0 else NULL, 300 - (i % 3 == 1) * 300, i % 2) for i in range(9)]
    long = list(ev_lines(10, 3, 1234, recs))
    short = [line for i in range(0, len(recs), SHORT_BATCH)
             for line in ev_lines(10 + i, 3, 1234, recs[i : i + SHORT_BATCH])]
    assert len(recs) > SHORT_BATCH and short == long
    again = list(ev_lines(10, 4, 99, recs[:1]))  # the same record for another connection, from the cache
    assert json.loads(again[0]) == {**json.loads(long[0]), "conn": 4, "ts_us": 99}
    assert [json.loads(x)["seq"] for x in long] == list(range(10, 19))
