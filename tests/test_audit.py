"""The Spark audit (`binlogd-audit`) over real ledgers written by binlogd for real connections.

Scenario: binlogd serves a binlog directory with `--ledger`; five raw COM_BINLOG_DUMP clients (capability unset,
1, 2, 4, and 4 with skip_replication) and a real MariaDB 10.11 replica (FILTER_ON_MASTER: capability 4 +
skip_replication, relay logs kept) connect. The test classifies what each client actually received (raw bytes;
the replica: its relay log) against the binlog files with its own minimal parser, and the report's per-connection
counts must equal that; exit 0.
Then the ledger and the relay log are tampered with, and the audit must name the right check, connection and
position, exit 1.
"""

from __future__ import annotations

import itertools
import json
import shutil
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from binlogd.spark_analytics.report_charts import ACTIONS, COLORS

from tests.dumpclient import raw_dump
from tests.harness import Binlogd, MariaDB
from tests.oracle_data import oracle_dir

# Spark under load: a 300 s timeout inside a py4j call leaves the module's shared session unusable for the rest
pytestmark = [pytest.mark.mariadb, pytest.mark.timeout(900)]

_HDR = struct.Struct("<IBIIIH")
ROTATE, QUERY, FDE, USER_VAR, GTID = 4, 2, 15, 14, 162
ARTIFICIAL, RELAY_OWN = 0x20, 0x40
# (server_id, capability, SET skip_replication=1); capability None = not set. No dump flag 2: capability >= 2
# withholds ANNOTATE_ROWS (policy runs, docs/ledger.md); 15 also withholds every flagged group, 16 replaces it
RAW_DUMPS = ((11, None, False), (12, 1, False), (13, 2, False), (14, 4, False), (15, 4, True), (16, 1, True))
REPLICA_SID = 7


# ---- the test's own view of binlog files and streams (independent of spark_analytics) -------------------------


def file_events(path: Path) -> list[tuple[int, int, int, int]]:
    """(start, length, type, flags) of every whole event of a binlog/relay file."""
    data = path.read_bytes()
    out, p = [], 4
    while len(data) - p >= 19:
        _, typ, _, length, _, flags = _HDR.unpack_from(data, p)
        if p + length > len(data):
            break
        out.append((p, length, typ, flags))
        p += length
    return out


def is_dummy(ev: bytes) -> bool:
    """MariaDB's same-length dummies (`Query_log_event::dummy_event`), which may have the replaced event's type."""
    return (ev[4] == QUERY and b"# Dummy event replacing event type" in ev) or (ev[4] == USER_VAR
                                                                              and b"!dummyvar" in ev[19:40])


@dataclass
class Counts:
    actions: Counter = field(default_factory=Counter)
    bytes: Counter = field(default_factory=Counter)


def classify(received: list[bytes], binlog_dir: Path, files: list[str], checksum: bool = True) -> Counts:
    """What a client got, event by event, against the files: sent / begin / dummy / fake, the rest holes."""
    by_end = {f: {s + n: (s, n, t) for s, n, t, _ in file_events(binlog_dir / f)} for f in files}
    got: set[tuple[str, int]] = set()
    c = Counts()
    cur = None
    for ev in received:
        typ, (log_pos,), (flags,) = ev[4], struct.unpack_from("<I", ev, 13), struct.unpack_from("<H", ev, 17)
        if flags & ARTIFICIAL:
            c.actions["fake"] += 1
            c.bytes["fake"] += len(ev)
            if typ == ROTATE:
                cur = ev[27 : len(ev) - (4 if checksum else 0)].decode()
            continue
        if typ == FDE and log_pos == 0:
            start, length, otype = 4, len(ev), FDE
        else:
            start, length, otype = by_end[cur][log_pos]
        assert length == len(ev), f"{cur}:{start}: received {len(ev)} bytes for an event of {length}"
        if typ == otype and not is_dummy(ev):
            kind = "sent"
        elif otype == GTID and typ == QUERY and b"BEGIN" in ev[-12:]:
            kind = "begin"
        else:
            kind = "dummy"
        c.actions[kind] += 1
        c.bytes[kind] += length
        got.add((cur, start))
    for f in files:
        for s, n, _, _ in file_events(binlog_dir / f):
            if (f, s) not in got:
                c.actions["hole"] += 1
                c.bytes["hole"] += n
    return c


def relay_received(relay_dir: Path) -> list[bytes]:
    """The upstream's events as the replica stored them (its own FDE/ROTATE, flag 0x40, left out)."""
    out = []
    for name in (relay_dir / "relay-bin.index").read_text().split():
        path = relay_dir / Path(name).name
        data = path.read_bytes()
        for s, n, _, flags in file_events(path):
            if not flags & RELAY_OWN:
                out.append(data[s : s + n])
    return out


def dump_cmd(server_id: int, file: str, pos: int = 4, flags: int = 1) -> bytes:
    return struct.pack("<BIHI", 0x12, pos, flags, server_id) + file.encode()


@dataclass
class Scenario:
    binlog_dir: Path
    ledger_dir: Path
    relay_dir: Path | None
    files: list[str]
    expected: dict[int, Counts]  # by replica server_id


def run_scenario(base: Path, binlog_dir: Path, template: Path, with_replica: bool,
                 gtid_dumps: tuple[tuple[int, str], ...] = ()) -> Scenario:
    """The RAW_DUMPS, then `gtid_dumps` ((server_id, @slave_connect_state): capability 4 GTID connects, not
    classified), then the replica."""
    files = [ln.strip().split("/")[-1] for ln in (binlog_dir / "mysql-bin.index").read_text().splitlines() if ln]
    ledger = base / "ledger"
    server = Binlogd.start(["--binlog-dir", str(binlog_dir), "--server-id", "100", "--ledger", str(ledger)], None,
                           log_path=base / "binlogd.log")
    replica = None
    expected: dict[int, Counts] = {}
    relay_dir = None
    try:
        if with_replica:  # started first, connected after the raw dumps (their ledger records do not interleave)
            replica = MariaDB.start(base, "replica", REPLICA_SID, "--relay-log-purge=0", template_dir=template)
            replica.set_skip_mode("FILTER_ON_MASTER")  # the replica runs SET skip_replication=1 on binlogd
        for sid, cap, skip in RAW_DUMPS:
            stmts = ["SET @master_binlog_checksum=@@global.binlog_checksum"]
            if cap is not None:
                stmts.append(f"SET @mariadb_slave_capability={cap}")
            if skip:
                stmts.append("SET skip_replication=1")
            cap_ = raw_dump(server.host, server.port, stmts, dump_cmd(sid, files[0]))
            assert cap_.end == "EOF", cap_.error
            expected[sid] = classify(cap_.events, binlog_dir, files)
        for sid, state in gtid_dumps:
            stmts = ["SET @master_binlog_checksum=@@global.binlog_checksum", "SET @mariadb_slave_capability=4",
                     f"SET @slave_connect_state='{state}'", "SET @slave_gtid_strict_mode=0"]
            cap_ = raw_dump(server.host, server.port, stmts, b"\x12" + struct.pack("<IHI", 4, 1, sid))
            assert cap_.end == "EOF", cap_.error
        if replica is not None:
            replica.change_master(server.host, server.port, use_gtid="slave_pos")
            replica.start_slave()
            last = files[-1]
            end = file_events(binlog_dir / last)[-1]
            replica.wait_slave_pos(last, end[0] + end[1], timeout=60)
            replica.stop_slave()  # ends the dump: binlogd writes its close record
            relay_dir = base / "relay"
            relay_dir.mkdir()
            for p in replica.datadir.glob("relay-bin.*"):
                shutil.copy(p, relay_dir / p.name)
            expected[REPLICA_SID] = classify(relay_received(relay_dir), binlog_dir, files)
        # every dump has its close record before the files are audited
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = "".join(p.read_text() for p in sorted(ledger.glob("ledger.*.jsonl")))
            if text.count('"r":"close"') >= len(expected) + len(gtid_dumps):
                break
            time.sleep(0.05)
    finally:
        if replica is not None:
            replica.stop()
        server.stop()
    return Scenario(binlog_dir, ledger, relay_dir, files, expected)


# ---- fixtures ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark():
    from binlogd.spark_analytics.session import build_session

    s = build_session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def oracle_scenario(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path,
                    mariadb_binaries: dict[str, str]) -> Scenario:
    base = Path(tmp_path_factory.mktemp("audit-oracle"))
    binlogs = base / "binlogs"
    binlogs.mkdir()
    files = ["mysql-bin.000001", "mysql-bin.000002"]  # 000003 rotates to a file that does not exist
    for f in files:
        shutil.copy(oracle_dir() / f, binlogs / f)
    (binlogs / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in files))
    return run_scenario(base, binlogs, mariadb_base / "_template", with_replica=True)


GENERATED_SQL = """
CREATE DATABASE g;
CREATE TABLE g.t (id INT PRIMARY KEY, v VARCHAR(60), n INT) ENGINE=InnoDB;
"""


@pytest.fixture(scope="module")
def generated_scenario(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path,
                       mariadb_binaries: dict[str, str]) -> Scenario:
    """A larger binlog written by a real 10.11 primary: 600 transactions (ROW + annotate, some STATEMENT, every
    fifth under skip_replication), a DDL every 100, two rotations."""
    base = Path(tmp_path_factory.mktemp("audit-gen"))
    gen = MariaDB.start(base, "gen", 1, "--log-bin=mysql-bin", "--binlog-format=ROW",
                        "--binlog-annotate-row-events=ON", template_dir=mariadb_base / "_template")
    try:
        gen.execute(GENERATED_SQL)
        conn = gen.connect(autocommit=True)
        with conn.cursor() as cur:
            for i in range(600):
                cur.execute(f"SET skip_replication={1 if i % 5 == 4 else 0}")
                cur.execute(f"SET SESSION binlog_format={'STATEMENT' if i % 7 == 3 else 'ROW'}")
                if i % 3 == 0:
                    cur.execute("BEGIN")
                    cur.execute(f"INSERT INTO g.t VALUES ({i}, 'row {i}', {i})")
                    cur.execute(f"UPDATE g.t SET n = n + 1 WHERE id = {i}")
                    cur.execute("COMMIT")
                else:
                    cur.execute(f"INSERT INTO g.t VALUES ({i}, 'autocommit {i}', {i})")
                if i % 100 == 50:
                    cur.execute(f"ALTER TABLE g.t COMMENT 'ddl {i}'")
                if i in (200, 400):
                    cur.execute("FLUSH BINARY LOGS")
        conn.close()
        files = [f for f, _ in gen.binary_logs()]
        size = -1
        for _ in range(100):  # the checkpoint of a rotated-away file is written asynchronously
            now = sum(s for _, s in gen.binary_logs())
            if now == size:
                break
            size = now
            time.sleep(0.1)
        binlogs = base / "binlogs"
        binlogs.mkdir()
        for f in files:
            shutil.copy(gen.datadir / f, binlogs / f)
    finally:
        gen.stop()
    (binlogs / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in files))
    return run_scenario(base, binlogs, mariadb_base / "_template", with_replica=False)


def audit(spark, sc: Scenario, out: Path, ledger: Path | None = None, relay: Path | None = None) -> tuple[int, dict]:
    """Run the CLI in this process (same Spark session); exit status and summary.json."""
    from binlogd.spark_analytics.cli import main

    args = ["--binlog-dir", str(sc.binlog_dir), "--ledger", str(ledger or sc.ledger_dir), "--out", str(out), "--quiet"]
    relay = relay or sc.relay_dir
    if relay is not None:
        args += ["--relay-logs", f"{REPLICA_SID}={relay}"]
    rc = main(args)
    return rc, json.loads((out / "summary.json").read_text())


def assert_counts_equal(summary: dict, sc: Scenario) -> None:
    by_sid = {c["server_id"]: c for c in summary["connections"]}
    assert set(by_sid) == set(sc.expected), summary["connections"]
    for sid, exp in sc.expected.items():
        got = by_sid[sid]
        for a in ("sent", "hole", "dummy", "begin"):
            assert got["actions"][a] == exp.actions[a], (sid, a, got["actions"], dict(exp.actions))
            assert got["bytes"][a] == exp.bytes[a], (sid, a, got["bytes"], dict(exp.bytes))
        if sid != REPLICA_SID:  # a relay log does not keep every fake event; raw clients saw them all
            assert got["actions"]["fake"] == exp.actions["fake"]
            assert got["bytes"]["fake"] == exp.bytes["fake"]


# ---- tests -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle_audit(spark, oracle_scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, Path]:
    """The untouched oracle scenario audited once: exit status, summary.json and the output directory."""
    out = Path(tmp_path_factory.mktemp("audit-oracle-out")) / "out"
    rc, summary = audit(spark, oracle_scenario, out)
    return rc, summary, out


def test_oracle_scenario_consistent_counts_match(oracle_scenario: Scenario,
                                                 oracle_audit: tuple[int, dict, Path]) -> None:
    sc = oracle_scenario
    # the scenario exercises every action: holes (cap 2, the skip replica), dummies (cap < 2), BEGINs (cap < 4)
    assert sc.expected[11].actions["dummy"] and sc.expected[11].actions["begin"]
    assert sc.expected[13].actions["hole"] and sc.expected[REPLICA_SID].actions["hole"]
    rc, summary, out = oracle_audit
    assert rc == 0, summary["findings"]
    assert summary["consistent"] is True and summary["findings_total"] == 0
    assert_counts_equal(summary, sc)
    by_sid = {c["server_id"]: c for c in summary["connections"]}
    rep = by_sid[REPLICA_SID]
    assert rep["skip_replication"] is True and rep["capability"] == 4
    assert [c["capability"] for sid, c in sorted(by_sid.items()) if sid != REPLICA_SID] == [0, 1, 2, 4, 4, 1]
    assert by_sid[15]["skip_replication"] is True and by_sid[15]["withheld"]["gtids"] == rep["withheld"]["gtids"]
    assert by_sid[11]["capability_set"] is False
    # divergence: the skip replica was not given the flagged transactions (oracle: 0-1-4, 0-1-8, 0-1-9, 0-1-10)
    assert rep["withheld"]["gtids"] == ["0-1-4", "0-1-8", "0-1-9", "0-1-10"]  # numeric order
    assert all(c["behind"]["events"] == 0 for c in summary["connections"])
    relay = summary["relay"][str(REPLICA_SID)]
    assert relay["relay_events"] == relay["ledger_sent_events"] == relay["matched"] > 0
    assert (out / "report.html").is_file() and (out / "findings.parquet").is_dir()  # the report: test_report_*


def test_generated_scenario_consistent_counts_match(spark, generated_scenario: Scenario, tmp_path: Path) -> None:
    sc = generated_scenario
    assert len(sc.files) == 3
    assert sum(sc.expected[14].actions.values()) > 3000
    rc, summary = audit(spark, sc, tmp_path / "out")
    assert rc == 0, summary["findings"]
    assert_counts_equal(summary, sc)
    by_sid = {c["server_id"]: c for c in summary["connections"]}
    assert by_sid[14]["withheld"]["transactions"] == 0  # capability 4 without skip: every transaction


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _save(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))


def to_policy_runs(recs: list[dict]) -> list[dict]:
    """The test's own writer of the policy-run format (docs/ledger.md): per connection, contiguous `sent` records
    and `hole`/`dummy`/`begin` records with why "capability" merge into one `sent` record whose `policy` counts the
    latter; seqs renumbered. A ledger the server already wrote that way only gets runs merged further."""
    out: list[dict] = []
    open_run: dict[int, dict] = {}
    for r in recs:
        if r["r"] != "ev":
            open_run.pop(r["conn"], None)
            out.append(dict(r))
            continue
        cap = r["action"] in ("hole", "dummy", "begin") and r["why"] == "capability"
        if r["action"] != "sent" and not cap:
            open_run.pop(r["conn"], None)
            out.append(dict(r))
            continue
        policy = r["count"] if cap else r.get("policy") or 0
        sent_length = 0 if r["action"] == "hole" else r["sent_length"]
        run = open_run.get(r["conn"])
        if run is not None and run["file"] == r["file"] and run["end"] == r["start"]:
            run.update(end=r["end"], count=run["count"] + r["count"], length=run["length"] + r["length"],
                       sent_length=run["sent_length"] + sent_length, policy=run["policy"] + policy, type=None,
                       flags=None, gtid=None)
        else:
            run = dict(r, action="sent", why=None, gtid=None, sent_length=sent_length, policy=policy)
            out.append(run)
            open_run[r["conn"]] = run
    for i, r in enumerate(out):
        r["seq"] = out[0]["seq"] + i
    return out


def test_policy_runs_expand_and_tampering_is_caught(spark, oracle_scenario: Scenario, tmp_path: Path) -> None:
    """The same dumps in the policy-run format (capability holes/dummies/BEGINs inside `sent` records): the audit
    expands them to the same counts; a changed `policy` count and a run stretched over a flagged group of the skip
    connection are caught by check 4, naming the connection and position."""
    sc = oracle_scenario
    ledger = tmp_path / "ledger"
    shutil.copytree(sc.ledger_dir, ledger)
    (lf,) = sorted(ledger.glob("ledger.*.jsonl"))
    recs = to_policy_runs(_load(lf))
    conn_of = {r["server_id"]: r["conn"] for r in recs if r["r"] == "conn"}
    runs = {sid: [r for r in recs if r["r"] == "ev" and r["conn"] == c and (r.get("policy") or 0) > 0]
            for sid, c in conn_of.items()}
    assert all(runs[sid] for sid in (11, 12, 13, 14, 15)), {s: len(v) for s, v in runs.items()}
    assert not any(r["why"] == "capability" for r in recs if r["r"] == "ev")
    _save(lf, recs)
    rc, summary = audit(spark, sc, tmp_path / "out", ledger=ledger)
    assert rc == 0, summary["findings"]
    assert_counts_equal(summary, sc)

    # tampering: a policy count (capability 2), and a run of the skip connection stretched over the flagged group
    # after it (its holes removed: the run claims the flagged events were sent as stored; same policy count)
    bad = max(runs[13], key=lambda r: r["policy"])
    bad["policy"] += 1
    mine = [r for r in recs if r["r"] == "ev" and r["conn"] == conn_of[15]]
    run, flagged = next((a, b) for a, b in itertools.pairwise(mine) if b["why"] == "skip_replication"
                        and a["action"] == "sent" and (a["file"], a["end"]) == (b["file"], b["start"]))
    assert flagged["action"] == "hole"
    run.update(end=flagged["end"], count=run["count"] + flagged["count"], length=run["length"] + flagged["length"],
               sent_length=run["sent_length"] + flagged["length"], type=None, flags=None)
    recs.remove(flagged)
    _save(lf, recs)
    rc, summary = audit(spark, sc, tmp_path / "out2", ledger=ledger)
    assert rc == 1 and summary["consistent"] is False
    errors = [f for f in summary["findings"] if f["severity"] == "error"]
    hit = [f for f in errors if f["connection_id"] == conn_of[13]]
    assert [(f["check"], f["file"], f["pos"]) for f in hit] == [(4, bad["file"], bad["start"])], hit
    assert hit[0]["message"] == (f"record seq {bad['seq']} says {bad['policy']} events got the connection's type "
                                 f"rules; the binlog and the policy give {bad['policy'] - 1}")
    hit = [f for f in errors if f["connection_id"] == conn_of[15] and f["check"] == 4]
    assert hit and all("flagged 0x8000 sent as-is to a skip_replication connection" in f["message"] for f in hit)
    assert min((f["file"], f["pos"]) for f in hit) == (flagged["file"], flagged["start"])
    assert len(hit) == flagged["count"]
    assert {f["connection_id"] for f in errors} <= {conn_of[13], conn_of[15], None}


def test_tampered_ledger_is_caught(spark, oracle_scenario: Scenario, tmp_path: Path) -> None:
    """Five kinds of tampering, each on its own connection; the other connections stay clean."""
    sc = oracle_scenario
    ledger = tmp_path / "ledger"
    shutil.copytree(sc.ledger_dir, ledger)
    (lf,) = sorted(ledger.glob("ledger.*.jsonl"))
    recs = _load(lf)
    conn_of = {r["server_id"]: r["conn"] for r in recs if r["r"] == "conn"}

    def evs(sid: int, **match: object) -> list[dict]:
        return [r for r in recs if r["r"] == "ev" and r["conn"] == conn_of[sid]
                and all(r.get(k) == v for k, v in match.items())]

    def ev(sid: int, **match: object) -> dict:
        return evs(sid, **match)[0]

    mine = evs(15)  # a ledger record removed: the sends between the two flagged groups of the skip connection
    removed = next(b for a, b, c in zip(mine, mine[1:], mine[2:], strict=False)
                   if a["action"] == c["action"] == "hole" and b["action"] == "sent")
    recs.remove(removed)
    dup = ev(13, action="sent", file="mysql-bin.000002", type=None)  # a ledger record (a run) duplicated
    recs.insert(recs.index(dup) + 1, dict(dup))
    flagged = ev(REPLICA_SID, action="hole", why="skip_replication")  # a flagged event recorded as sent
    flagged.update(action="sent", why=None, sent_length=flagged["length"])
    run = next(r for r in evs(16) if r["action"] == "dummy" and r["count"] > 1)  # a run of dummies: wrong length
    run_len = run["length"]
    run.update(length=run_len + 4, sent_length=run["sent_length"] + 4, end=run["end"] + 4)
    pol = next(r for r in evs(12) if (r.get("policy") or 0) > 0)  # a policy run claiming 4 bytes more sent
    pol_sent = pol["sent_length"]
    pol["sent_length"] += 4
    _save(lf, recs)

    rc, summary = audit(spark, sc, tmp_path / "out", ledger=ledger)
    assert rc == 1 and summary["consistent"] is False
    found: dict[int, set[int]] = {}
    for f in summary["findings"]:
        if f["severity"] == "error":
            found.setdefault(f["connection_id"], set()).add(f["check"])

    def at(check: int, sid: int, file: str, pos: int) -> list[dict]:
        return [f for f in summary["findings"] if f["check"] == check and f["connection_id"] == conn_of[sid]
                and (f["file"], f["pos"]) == (file, pos)]

    # removed: a coverage gap exactly where the record was, and the seq gap
    hit = at(1, 15, removed["file"], removed["end"])
    assert hit and f"gap: events [{removed['start']}, {removed['end']})" in hit[0]["message"]
    assert any(f["check"] == 10 and f"seq {removed['seq']}..{removed['seq']}" in f["message"]
               for f in summary["findings"])
    # duplicated line: named once, as a duplicate seq (not also an overlap)
    assert not at(1, 13, dup["file"], dup["start"])
    assert any(f["check"] == 10 and "appears 2 times" in f["message"] for f in summary["findings"])
    # flagged event sent as-is to the skip_replication connection
    hit = at(4, REPLICA_SID, flagged["file"], flagged["start"])
    assert hit and "0x8000" in hit[0]["message"] and "skip_replication" in hit[0]["message"]
    # dummy run stretched by 4 bytes: its range no longer ends at an event (check 1 names the record, once)
    hit = [(f["check"], f["file"], f["pos"], f["message"]) for f in summary["findings"]
           if f["connection_id"] == conn_of[16]]
    assert (1, run["file"], run["start"], f"record [{run['start']}, {run['end']}) does not end at an event "
                                          "boundary") in hit, hit
    assert {h[0] for h in hit} == {1}, hit
    assert run_len == run["length"] - 4
    # policy run sent_length
    hit = at(1, 12, pol["file"], pol["start"])
    assert [f["message"] for f in hit] == [f"record seq {pol['seq']} says sent_length {pol_sent + 4}; its events "
                                           f"and policy holes give {pol_sent}"]
    assert conn_of[11] not in found and conn_of[14] not in found  # the untouched connections stay clean
    assert {1, 10} <= found[conn_of[15]] and found[conn_of[13]] == {10}
    assert 4 in found[conn_of[REPLICA_SID]] and found[conn_of[16]] == {1} and found[conn_of[12]] == {1}


def test_truncated_relay_log_is_caught(spark, oracle_scenario: Scenario, tmp_path: Path) -> None:
    sc = oracle_scenario
    assert sc.relay_dir is not None
    relay = tmp_path / "relay"
    shutil.copytree(sc.relay_dir, relay)
    # cut the last relay file right after a TABLE_MAP: inside the last transaction
    last = relay / (relay / "relay-bin.index").read_text().split()[-1].split("/")[-1]
    evs = file_events(last)
    cut = max(s + n for s, n, t, _ in evs if t == 19)
    with last.open("r+b") as fh:
        fh.truncate(cut)
    # and a torn last ledger record (binlogd killed while writing): tolerated, reported as a warning
    ledger = tmp_path / "ledger"
    shutil.copytree(sc.ledger_dir, ledger)
    (lf,) = sorted(ledger.glob("ledger.*.jsonl"))
    with lf.open("a") as fh:
        fh.write('{"r":"ev","seq":99999,"conn":1,"ts_us":1,"file":"mysql-bi')
    rc, summary = audit(spark, sc, tmp_path / "out", relay=relay, ledger=ledger)
    assert rc == 1
    torn = [f for f in summary["findings"] if f["check"] == 10]
    assert len(torn) == 1 and torn[0]["severity"] == "warning" and "torn last record" in torn[0]["message"], torn
    assert summary["ledger"]["torn"][0]["file"] == lf.name
    msgs = [f for f in summary["findings"] if f["check"] == 8]
    assert any("ends inside transaction 0-1-13" in f["message"] for f in msgs), msgs
    assert any("missing from its relay log" in f["message"] and f["file"] == "mysql-bin.000002" for f in msgs), msgs
    assert {f["check"] for f in summary["findings"] if f["severity"] == "error"} == {8}


def test_cli_could_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from binlogd.spark_analytics.cli import main

    assert main(["--binlog-dir", str(tmp_path / "nope"), "--ledger", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "--binlog-dir" in capsys.readouterr().err
    (tmp_path / "b").mkdir()
    assert main(["--binlog-dir", str(tmp_path / "b"), "--ledger", str(tmp_path), "--out", str(tmp_path / "o"),
                 "--relay-logs", "7=/does/not/exist"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["--binlog-dir", str(tmp_path / "b"), "--ledger", str(tmp_path), "--out", "o", "--relay-logs", "bad"])
    assert e.value.code == 2


def test_cli_empty_ledger_dir(spark, oracle_scenario: Scenario, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from binlogd.spark_analytics.cli import main

    rc = main(["--binlog-dir", str(oracle_scenario.binlog_dir), "--ledger", str(tmp_path), "--out",
               str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    assert "no ledger files" in capsys.readouterr().err


def test_binlog_data_source_rows(spark, oracle_scenario: Scenario) -> None:
    """`spark.read.format("binlog")`: one row per event, fields as the test's own parser and the oracle know them."""
    sc = oracle_scenario
    df = spark.read.format("binlog").load(str(sc.binlog_dir))
    rows = df.orderBy("file_index", "start").collect()
    mine = [(f, s, s + n, t, fl) for f in sc.files for s, n, t, fl in file_events(sc.binlog_dir / f)]
    assert [(r.file, r.start, r.end, r.type, r.flags) for r in rows] == mine
    assert df.rdd.getNumPartitions() == len(sc.files)  # one partition per file
    by_pos = {(r.file, r.start): r for r in rows}
    g = by_pos[("mysql-bin.000001", 873)]  # the first flagged transaction's GTID
    assert (g.type_name, g.gtid_domain, g.gtid_server, g.gtid_seq, g.gtid_standalone) == ("Gtid", 0, 1, 4, False)
    q = by_pos[("mysql-bin.000001", 370)]
    assert (q.db, q.statement, q.trx, q.group_end) == ("d", "CREATE DATABASE d", "0-1-1", True)
    assert by_pos[("mysql-bin.000001", 915)].statement == "INSERT INTO d.t VALUES (2,'skip autocommit')"
    assert all(r.crc_ok for r in rows) and not any(r.relay_own for r in rows)
    # the replica's relay log: upstream positions recovered across relay files
    assert sc.relay_dir is not None
    relay = spark.read.format("binlog").load(str(sc.relay_dir / "relay-bin.index")).filter("NOT relay_own").collect()
    upstream = {(r.source_file, r.source_start, r.source_end) for r in relay if not r.flags & ARTIFICIAL}
    assert ("mysql-bin.000002", 342, 384) in upstream  # GTID 0-1-13 in the second file
    assert all((f, s) in by_pos and by_pos[(f, s)].end == e for f, s, e in upstream)


def test_staged_events_give_the_rows_and_the_audit_of_the_other_paths(spark, oracle_scenario: Scenario,
                                                                      tmp_path: Path) -> None:
    """A binlog directory staged as Parquet by worker processes (`binlog_stage`, the path above the driver-decode
    threshold) gives exactly the data source's rows (two files, each cut in several splits), its per-file stats
    and types, and an audit with findings gives the same summary and findings as the driver-decoded path and as
    Spark finding the records' bounds and class counts itself (no staged ledger: no `record_probes`)."""
    import pyarrow as pa
    from binlogd.spark_analytics.audit import prepare_inputs, run_audit
    from binlogd.spark_analytics.binlog_source import arrow_event_types, arrow_file_stats, decode_in_driver, list_files
    from binlogd.spark_analytics.binlog_stage import STAGED, read_staged, stage_events

    sc = oracle_scenario
    names = [n for n, _, _ in STAGED]
    want = decode_in_driver(sc.binlog_dir, statements=False).select(names)
    staged = stage_events(list_files(sc.binlog_dir), tmp_path / "staged", processes=2, split_bytes=700)
    assert len(list((tmp_path / "staged").glob("*.parquet"))) > 2 * len(sc.files)  # several splits per file
    assert staged.stats == arrow_file_stats(want) and staged.types == arrow_event_types(want)
    keys = [("file_index", "ascending"), ("start", "ascending")]
    got = pa.Table.from_pylist([r.asDict() for r in read_staged(spark, staged).collect()], schema=want.schema)
    assert got.sort_by(keys).equals(want.sort_by(keys))

    # an audit with findings (a policy count raised, a record deleted: a gap), both ways
    ledger = tmp_path / "ledger"
    shutil.copytree(sc.ledger_dir, ledger)
    (lf,) = sorted(ledger.glob("ledger.*.jsonl"))
    recs = to_policy_runs(_load(lf))
    next(r for r in recs if (r.get("policy") or 0) > 0)["policy"] += 1
    recs.remove([r for r in recs if r["r"] == "ev" and r["action"] == "sent"][5])
    _save(lf, recs)
    relays = {str(REPLICA_SID): sc.relay_dir}
    results = []
    # driver-decoded, staged (both with the records' probes found by numpy: `record_probes`), and read by the data
    # source with Spark's JSON ledger (bounds and class counts found by Spark)
    for driver_bytes, stage in ((1 << 30, True), (0, True), (0, False)):
        inputs = prepare_inputs(sc.binlog_dir, ledger, relays, driver_bytes=driver_bytes, stage=stage)
        assert (inputs.staged is None) == (driver_bytes > 0 or not stage)
        assert (inputs.probes is not None) == stage
        r = run_audit(spark, sc.binlog_dir, ledger, relays, inputs=inputs)
        assert inputs.staged is None or not inputs.staged.path.exists()  # the staged files removed
        results.append(r)
    a = results[0]
    timing = ("generated_at", "seconds", "step_seconds")
    for b in results[1:]:
        assert {k: v for k, v in a.summary.items() if k not in timing} == {
            k: v for k, v in b.summary.items() if k not in timing}
        assert a.findings == b.findings and len(a.findings) >= 2 and not a.consistent
        assert a.timeline == b.timeline



def test_staged_ledger_gives_the_rows_of_spark_json_read(spark, oracle_scenario: Scenario, tmp_path: Path) -> None:
    """The ledger staged as Parquet by pyarrow (`stage_ledger`, in the CLI's input thread) gives exactly the rows of
    Spark's JSON reader; a ledger pyarrow would read otherwise than Spark (a number where the schema has a string,
    which Spark turns into text; a blank line; two objects on one line; a float count; a key named like the
    corrupt-record column; a torn tail) is not staged (None): Spark reads the JSON, as before."""
    from binlogd.spark_analytics.ledger import ledger_files, read_ledger, stage_ledger, strict_tables

    ledger = tmp_path / "ledger"
    shutil.copytree(oracle_scenario.ledger_dir, ledger)
    (f,) = sorted(ledger.glob("ledger.*.jsonl"))
    _save(f, to_policy_runs(_load(f)))  # runs as binlogd writes them now
    lf = ledger_files(ledger)
    staged = stage_ledger(lf, tmp_path / "staged")
    assert staged is not None and list(staged.glob("*.parquet"))
    want, got = read_ledger(spark, lf), read_ledger(spark, lf, staged)
    assert got.schema == want.schema
    rows = sorted((tuple(r) for r in want.collect()), key=repr)
    assert rows == sorted((tuple(r) for r in got.collect()), key=repr) and len(rows) == len(_load(f))
    assert sum(t.num_rows for t in strict_tables(lf)) == len(rows)  # the summary's record count, no Spark job
    text = f.read_bytes()
    lines = text.splitlines(keepends=True)
    for bad in (b'{"r": "ev", "seq": 2, "conn": 1, "file": 12}\n', b"\n", b'{"r": "ev"} {"r": "ev"}\n',
                b'{"r": "ev", "seq": 2, "count": 1.5}\n', b'{"r": "ev", "_corrupt_record": "x"}\n'):
        f.write_bytes(b"".join(lines[:3]) + bad + b"".join(lines[3:]))
        assert stage_ledger(ledger_files(ledger), tmp_path / "no") is None, bad
    f.write_bytes(text[:-5])
    assert stage_ledger(ledger_files(ledger), tmp_path / "no") is None
    assert not (tmp_path / "no").exists()


def test_seq_stats_tell_when_no_line_can_repeat(oracle_scenario: Scenario, tmp_path: Path) -> None:
    """`SeqStats.all_distinct` (of the tables pyarrow parsed): the ledger as written has one seq per record (the audit
    reads it without `drop_repeated_records`' aggregate); a line repeated byte for byte, a second record with an
    existing seq, or a record without a seq: not distinct (the records are deduplicated as before)."""
    from binlogd.spark_analytics.ledger import ledger_files, seq_stats, strict_tables

    def distinct() -> bool:
        tables = strict_tables(ledger_files(ledger))
        assert tables is not None
        return seq_stats([t.column("seq") for t in tables]).all_distinct

    ledger = tmp_path / "ledger"
    shutil.copytree(oracle_scenario.ledger_dir, ledger)
    (f,) = sorted(ledger.glob("ledger.*.jsonl"))
    text = f.read_bytes()
    lines = text.splitlines(keepends=True)
    assert distinct()
    ev = json.loads(lines[3])
    for changed in (lines[3], json.dumps({**ev, "start": ev["start"] + 1}).encode() + b"\n",
                    json.dumps({k: v for k, v in ev.items() if k != "seq"}).encode() + b"\n"):
        f.write_bytes(b"".join(lines[:4]) + changed + b"".join(lines[4:]))
        assert not distinct(), changed


def test_seq_stats_count_what_they_say() -> None:
    """`seq_stats` over several tables' chunks: out-of-order seqs, a seq repeated across tables, nulls."""
    import pyarrow as pa
    from binlogd.spark_analytics.ledger import SeqStats, seq_stats

    cols = [pa.chunked_array([[5, 3, None], [9]]), pa.chunked_array([[3, 1, None, 7]])]
    assert seq_stats(cols) == SeqStats(1, 9, 6, 5, 2)
    assert seq_stats([pa.chunked_array([[None]], pa.int64())]) == SeqStats(None, None, 0, 0, 1)
    assert seq_stats([pa.chunked_array([[4]])]).all_distinct

# ---- the HTML report, looked at in headless Chromium ---------------------------------------------------------------


class _PageNumbers(HTMLParser):
    """The figures the report marks with data-key, by the row they sit in (data-conn / data-check / data-replica)."""

    def __init__(self) -> None:
        super().__init__()
        self.row: tuple[str, str] | None = None
        self.key: str | None = None
        self.text = ""
        self.found: dict[tuple[tuple[str, str] | None, str], str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr":
            self.row = next(((k, v or "") for k, v in a.items() if k in ("data-conn", "data-check", "data-replica")),
                            None)
        if a.get("data-key"):
            self.key, self.text = a["data-key"], ""

    def handle_data(self, data: str) -> None:
        if self.key is not None:
            self.text += data

    def handle_endtag(self, tag: str) -> None:
        if self.key is not None:
            assert (self.row, self.key) not in self.found, (self.row, self.key)
            self.found[(self.row, self.key)] = self.text.strip()
            self.key = None
        if tag == "tr":
            self.row = None


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def assert_page_numbers_equal_summary(dom: str, s: dict) -> None:
    """Every figure the page marks equals summary.json's, and every per-connection count the page leaves out is 0."""
    p = _PageNumbers()
    p.feed(dom)
    got = p.found
    errors = sum(c["errors"] for c in s["checks"])
    top = {"binlog.events": s["binlog"]["events"], "binlog.files": len(s["binlog"]["files"]),
           "ledger.records": s["ledger"]["records"], "errors": errors, "warnings": s["findings_total"] - errors,
           "connections": len(s["connections"]), "seconds": s["seconds"], "findings_total": s["findings_total"]}
    for k, v in top.items():
        assert _num(got[(None, k)]) == v, (k, got.get((None, k)), v)
    for c in s["checks"]:
        for k in ("errors", "warnings"):
            assert _num(got[(("data-check", str(c["check"])), k)]) == c[k], (c, k)
    for name, r in s["relay"].items():
        for k in ("relay_events", "ledger_sent_events", "matched"):
            assert _num(got[(("data-replica", name), k)]) == r[k], (name, k)
    for c in s["connections"]:
        row = ("data-conn", str(c["connection_id"]))
        mine = {k: v for (r, k), v in got.items() if r == row}
        want = {"sent_bytes": c["sent_bytes"], "behind.events": c["behind"]["events"],
                "behind.bytes": c["behind"]["bytes"], "findings": c["findings"]}
        for group in ("withheld", "skipped_at_connect"):
            want |= {f"{group}.transactions": c[group]["transactions"],
                     f"{group}.content_bytes": c[group]["content_bytes"] or 0}
        for k, v in want.items():
            assert _num(mine[k]) == v, (c["connection_id"], k, mine.get(k), v)
        for group in ("actions", "bytes"):
            for a, v in c[group].items():
                shown = mine.get(f"{group}.{a}")
                assert (v == 0 if shown is None else _num(shown) == v), (c["connection_id"], group, a, shown, v)
            assert mine[f"{group}.sent"]  # always shown


def test_report_renders_in_headless_chromium(oracle_audit: tuple[int, dict, Path], tmp_path: Path) -> None:
    """The report of the real oracle audit opened in Debian's Chromium (no driver): the plotly charts render
    offline, the screenshot is a real, non-blank PNG of the window size, and the page's figures are summary.json's."""
    from tests.chromium import dump_dom, read_png, screenshot

    rc, summary, out = oracle_audit
    assert rc == 0
    page = out / "report.html"
    html = page.read_text()
    import plotly.offline

    # one self-contained file: plotly.js inline, nothing fetched (no src/href to another place, no URL at all
    # outside the library's own code)
    assert plotly.offline.get_plotlyjs() in html
    rest = html.replace(plotly.offline.get_plotlyjs(), "")
    assert "http" not in rest and " src=" not in rest and "<link" not in rest
    dom = dump_dom(page)
    charts = ("chart-actions", "chart-timeline", "chart-phases")
    idx = [dom.index(f'id="{c}"') for c in charts]
    for c, i, j in zip(charts, idx, [*idx[1:], len(dom)], strict=True):
        part = dom[i:j]
        assert 'class="main-svg"' in part, f"{c}: plotly drew nothing"
        assert 'class="point"' in part, f"{c}: no bars"
    # the actions chart: per events|bytes, a bar for every connection in each action that any connection has
    conns = summary["connections"]
    bars = sum(len(conns) for g in ("actions", "bytes") for a in ACTIONS if any(c[g][a] for c in conns))
    actions_part = dom[idx[0]:idx[1]]
    assert actions_part.count('class="point"') == bars, (actions_part.count('class="point"'), bars)
    assert_page_numbers_equal_summary(dom, summary)

    w, h = 1280, 1600
    png = tmp_path / "report.png"
    screenshot(page, png, w, h)
    img = read_png(png)
    assert img.shape[:2] == (h, w), img.shape
    rgb = img[:, :, :3].astype(np.uint32)
    packed = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]
    colours, counts = np.unique(packed, return_counts=True)
    assert len(colours) > 200, f"{len(colours)} colours: a blank or unrendered page"
    assert (packed != 0xFFFFFF).mean() > 0.1, "mostly white"
    by_colour = dict(zip(colours.tolist(), counts.tolist(), strict=True))
    for action in ("sent", "hole", "dummy", "begin"):  # the charts' bars, far more than the legend's keys
        code = int(COLORS[action].lstrip("#"), 16)
        assert by_colour.get(code, 0) > 3000, (action, by_colour.get(code, 0))


def test_report_without_its_libraries_is_a_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """jinja2/plotly missing: exit 2 with what to install, before any Spark work; render_html raises ReportError."""
    from binlogd.spark_analytics.cli import main
    from binlogd.spark_analytics.report import ReportError, render_html

    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly now fails as if it were not installed
    (tmp_path / "b").mkdir()
    (tmp_path / "l").mkdir()
    rc = main(["--binlog-dir", str(tmp_path / "b"), "--ledger", str(tmp_path / "l"), "--out", str(tmp_path / "o"),
               "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs plotly" in err and "pip install" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ReportError, match="plotly"):
        render_html({}, {})
