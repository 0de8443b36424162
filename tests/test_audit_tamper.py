"""The tamper suite: a real run's ledger, binlog and relay log edited one way per case; the audit must exit 1 with
exactly the findings that name what was changed (check, connection, file, position, message) and no other error.

The run: binlogd serves the oracle's two binlog files with `--ledger`; the raw dumps of tests/test_audit.py
(capability unset, 1, 2, 4, 4 + skip_replication, 1 + skip_replication), a GTID connect (capability 4, state 0-1-5:
the groups up to 0-1-5 are skipped, not withheld) and a real MariaDB 10.11 replica (FILTER_ON_MASTER, relay logs
kept). Untouched, the audit is consistent with no finding at all.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import shutil
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.oracle_data import oracle_dir
from tests.test_audit import REPLICA_SID, Scenario, _load, audit, file_events, run_scenario

# Spark under load: a 300 s timeout inside a py4j call leaves the module's shared session unusable for the rest
pytestmark = [pytest.mark.mariadb, pytest.mark.timeout(900)]

GTID_SID = 21
GTID_STATE = "0-1-5"
Finding = tuple[int, int | None, str | None, int | None, str]  # check, connection, file, pos, message


@pytest.fixture(scope="session")
def spark():
    from binlogd.spark_analytics.session import build_session

    s = build_session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def sc(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path, mariadb_binaries: dict[str, str]) -> Scenario:
    base = Path(tmp_path_factory.mktemp("audit-tamper"))
    binlogs = base / "binlogs"
    binlogs.mkdir()
    files = ["mysql-bin.000001", "mysql-bin.000002"]
    for f in files:
        shutil.copy(oracle_dir() / f, binlogs / f)
    (binlogs / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in files))
    return run_scenario(base, binlogs, mariadb_base / "_template", with_replica=True,
                        gtid_dumps=((GTID_SID, GTID_STATE),))


class Ledger:
    """The run's ledger records (one file), editable, with lookups by the dump's server_id."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.recs = _load(path)
        self.conn_of = {r["server_id"]: r["conn"] for r in self.recs if r["r"] == "conn"}
        self.raw: dict[int, str] = {}

    def evs(self, sid: int, **match: object) -> list[dict]:
        return [r for r in self.recs if r["r"] == "ev" and r["conn"] == self.conn_of[sid]
                and all(r.get(k) == v for k, v in match.items())]

    def close(self, sid: int) -> dict:
        return next(r for r in self.recs if r["r"] == "close" and r["conn"] == self.conn_of[sid])

    def save(self) -> None:
        """Records as JSON lines; a record in `raw` is written as that text instead (a damaged line)."""
        self.path.write_text("".join(self.raw.get(id(r), json.dumps(r, separators=(",", ":"))) + "\n"
                                     for r in self.recs))


def _order(f: Finding) -> tuple:
    return (f[0], -1 if f[1] is None else f[1], f[2] or "", -1 if f[3] is None else f[3], f[4])


def errors(summary: dict) -> list[Finding]:
    return sorted(((f["check"], f["connection_id"], f["file"], f["pos"], f["message"]) for f in summary["findings"]
                   if f["severity"] == "error"), key=_order)


def run_tampered(spark, sc: Scenario, tmp_path: Path, *, ledger: Callable[[Ledger], list[Finding]] | None = None,
                 binlog: Callable[[Path], list[Finding]] | None = None) -> tuple[int, dict, list[Finding]]:
    """Copy the run, apply one edit, audit; the edit returns the findings it must give."""
    scn = sc
    expected: list[Finding] = []
    led = tmp_path / "ledger"
    shutil.copytree(sc.ledger_dir, led)
    if ledger is not None:
        (lf,) = sorted(led.glob("ledger.*.jsonl"))
        L = Ledger(lf)
        expected = ledger(L)
        L.save()
    if binlog is not None:
        bd = tmp_path / "binlogs"
        shutil.copytree(sc.binlog_dir, bd)
        scn = dataclasses.replace(sc, binlog_dir=bd)
        expected = binlog(bd)
    rc, summary = audit(spark, scn, tmp_path / "out", ledger=led)
    return rc, summary, sorted(expected, key=_order)


def fi(name: str) -> int:
    return int(name.rsplit(".", 1)[1]) - 1


# ---- ledger edits -------------------------------------------------------------------------------------------------


def swap_dummy_and_next_run(L: Ledger) -> list[Finding]:
    """A dummy run and the sent run after it swapped, seq kept in file order: only the stream order is wrong."""
    mine = L.evs(16)
    a, b = next((a, b) for a, b in itertools.pairwise(mine) if a["action"] == "dummy"
                and b["action"] == "sent" and a["file"] == b["file"] and a["end"] == b["start"])
    i, j = L.recs.index(a), L.recs.index(b)
    assert j == i + 1
    a["seq"], b["seq"] = b["seq"], a["seq"]
    L.recs[i], L.recs[j] = b, a
    return [(1, L.conn_of[16], a["file"], a["start"],
             f"record seq {a['seq']} [{a['start']}, {a['end']}) is out of stream order: the ledger has it after seq "
             f"{b['seq']}, whose events come after it in the binlog")]


def delete_sent_between_holes(L: Ledger) -> list[Finding]:
    mine = L.evs(15)
    rec = next(b for a, b, c in zip(mine, mine[1:], mine[2:], strict=False)
               if a["action"] == c["action"] == "hole" and b["action"] == "sent")
    L.recs.remove(rec)
    return [(1, L.conn_of[15], rec["file"], rec["end"], f"gap: events [{rec['start']}, {rec['end']}) are not "
                                                        "accounted for"),
            (10, L.conn_of[15], L.path.name, rec["seq"], f"records seq {rec['seq']}..{rec['seq']} are missing "
                                                         "(removed or lost)")]


def delete_policy_run(L: Ledger) -> list[Finding]:
    """The run holding capability holes (capability 2) of the first file removed: its ANNOTATE_ROWS are not also
    "sent as-is"; the file's records end early and a seq is missing."""
    rec = next(r for r in L.evs(13, file="mysql-bin.000001") if (r.get("policy") or 0) > 0)
    L.recs.remove(rec)
    end = _file_end(L, rec["file"])
    assert rec["end"] == end
    return [(1, L.conn_of[13], "mysql-bin.000002", 4, f"the previous file's records end at {rec['start']}, before "
                                                      f"its end {end}"),
            (10, L.conn_of[13], L.path.name, rec["seq"], f"records seq {rec['seq']}..{rec['seq']} are missing "
                                                         "(removed or lost)")]


def _file_end(L: Ledger, file: str) -> int:
    d = Path(next(r for r in L.recs if r["r"] == "conn")["binlog_dir"])
    s, n, _, _ = file_events(d / file)[-1]
    return s + n


def duplicate_line(L: Ledger) -> list[Finding]:
    rec = L.evs(13, action="sent", file="mysql-bin.000002")[-1]
    L.recs.insert(L.recs.index(rec) + 1, dict(rec))
    return [(10, L.conn_of[13], L.path.name, rec["seq"], f"record seq {rec['seq']} appears 2 times "
                                                         "(duplicated record)")]


def duplicate_hole_renumbered(L: Ledger) -> list[Finding]:
    """A flagged group's hole record copied right after itself with the next seq (the later records renumbered):
    the copy is the overlap; the genuine record is not blamed."""
    rec = L.evs(15, action="hole", why="skip_replication")[0]
    i = L.recs.index(rec)
    L.recs.insert(i + 1, dict(rec))
    for r in L.recs[i + 1 :]:
        r["seq"] += 1
    return [(1, L.conn_of[15], rec["file"], rec["start"],
             f"overlap: [{rec['start']}, {rec['end']}) accounted for twice (previous record ends at {rec['end']})")]


def _count_finding(L: Ledger, sid: int, rec: dict) -> Finding:
    return (1, L.conn_of[sid], rec["file"], rec["start"], f"record [{rec['start']}, {rec['end']}) says "
                                                          f"{rec['count']} events, the binlog has {rec['count'] - 1} "
                                                          "there")


def dummy_run_count(L: Ledger) -> list[Finding]:
    rec = next(r for r in L.evs(16, action="dummy") if r["count"] > 1)
    rec["count"] += 1
    return [_count_finding(L, 16, rec)]


def policy_run_count(L: Ledger) -> list[Finding]:
    """A changed count leaves the run unexpanded: only its count is named (no "sent as-is" for its events)."""
    rec = next(r for r in L.evs(12) if (r.get("policy") or 0) > 0)
    rec["count"] += 1
    return [_count_finding(L, 12, rec)]


def dummy_run_sent_length(L: Ledger) -> list[Finding]:
    rec = next(r for r in L.evs(16, action="dummy") if r["count"] > 1)
    rec["sent_length"] += 4
    return [(3, L.conn_of[16], rec["file"], rec["start"],
             f"dummy run of {rec['count']} events of length {rec['length']} (sent {rec['sent_length']} bytes) "
             f"replaces {rec['count']} events of length {rec['length']}")]


def policy_run_sent_length(L: Ledger) -> list[Finding]:
    rec = next(r for r in L.evs(12) if (r.get("policy") or 0) > 0)
    rec["sent_length"] += 4
    return [(1, L.conn_of[12], rec["file"], rec["start"], f"record seq {rec['seq']} says sent_length "
                                                          f"{rec['sent_length']}; its events and policy holes give "
                                                          f"{rec['sent_length'] - 4}")]


def unparsable_record(L: Ledger) -> list[Finding]:
    """A record's line damaged inside the ledger: named by the seq its text still shows; the file's records then
    begin after its events (check 1)."""
    rec = L.evs(14, action="sent", file="mysql-bin.000002")[0]  # the second file's FDE
    nxt = L.evs(14, action="sent", file="mysql-bin.000002")[1]
    text = json.dumps(rec, separators=(",", ":"))[:70]
    L.raw[id(rec)] = text
    return [(1, L.conn_of[14], nxt["file"], nxt["start"], f"the file's records begin at {nxt['start']} (expected 4, "
                                                          "right after file #0)"),
            (10, L.conn_of[14], L.path.name, rec["seq"], f"unparsable record seq {rec['seq']} inside the ledger: "
                                                         f"{text[:60] + '…'!r}")]


def close_removed(L: Ledger) -> list[Finding]:
    """A connection's close record removed: the seq gap is not charged to the next connection."""
    rec = L.close(14)
    nxt = L.recs[L.recs.index(rec) + 1]
    prev = L.recs[L.recs.index(rec) - 1]
    assert nxt["conn"] != rec["conn"]
    L.recs.remove(rec)
    return [(10, None, L.path.name, rec["seq"], f"records seq {rec['seq']}..{rec['seq']} are missing (removed or "
                                                f"lost), between seq {prev['seq']} (connection {prev['conn']}) and "
                                                f"seq {nxt['seq']} (connection {nxt['conn']})")]


def flagged_group_recorded_sent(L: Ledger) -> list[Finding]:
    rec = L.evs(15, action="hole", why="skip_replication")[0]
    rec.update(action="sent", why=None, sent_length=rec["length"])
    return [(4, L.conn_of[15], rec["file"], s, f"event type {t} flagged 0x8000 sent as-is to a skip_replication "
                                               "connection (the rule says hole)")
            for s, _, t, _ in _events_in(L, rec)]


def _events_in(L: Ledger, rec: dict) -> list[tuple[int, int, int, int]]:
    d = Path(next(r for r in L.recs if r["r"] == "conn")["binlog_dir"])
    return [e for e in file_events(d / rec["file"]) if rec["start"] <= e[0] < rec["end"]]


# Each edit touches one connection; edits of different connections share an audit (a Spark audit is slow on the
# shared 2-core machine), and the audit must give the union of their findings exactly: an edit's findings landing on
# another connection, or a missing one, fails the batch. Renumbering edits go last (they shift later seqs).
LEDGER_BATCHES = [
    [swap_dummy_and_next_run, delete_sent_between_holes, delete_policy_run, policy_run_count, unparsable_record],
    [dummy_run_count, duplicate_line, policy_run_sent_length, close_removed, flagged_group_recorded_sent],
    [dummy_run_sent_length, duplicate_hole_renumbered],
]


@pytest.mark.parametrize("edits", LEDGER_BATCHES, ids=["+".join(e.__name__ for e in b) for b in LEDGER_BATCHES])
def test_ledger_tampering(spark, sc: Scenario, tmp_path: Path, edits: list[Callable[[Ledger], list[Finding]]]
                          ) -> None:
    touched = [e.__name__ for e in edits]
    assert len(set(touched)) == len(touched)

    def apply(L: Ledger) -> list[Finding]:
        return [f for e in edits for f in e(L)]

    rc, summary, expected = run_tampered(spark, sc, tmp_path, ledger=apply)
    assert rc == 1 and summary["consistent"] is False
    assert errors(summary) == expected


# ---- binlog edits -------------------------------------------------------------------------------------------------


def _event_at(d: Path, file: str, pos: int) -> tuple[int, int, int, int]:
    return next(e for e in file_events(d / file) if e[0] == pos)


def statement_byte_changed(d: Path) -> list[Finding]:
    """One byte of `CREATE DATABASE d` (every connection got it as stored): its CRC no longer matches."""
    f = d / "mysql-bin.000001"
    s, n, t, _ = _event_at(d, f.name, 370)
    data = bytearray(f.read_bytes())
    at = data.index(b"CREATE DATABASE d", s)
    data[at] ^= 0x20
    f.write_bytes(bytes(data))
    return [(1, None, f.name, s, f"stored event Query({t}) [{s}, {s + n}) fails its CRC32: the binlog file was "
                                 "changed after it was written")]


def flag_set_crc_fixed(d: Path) -> list[Finding]:
    """Flag 0x8000 set on `CREATE DATABASE d`, CRC recomputed: the skip_replication connections were sent a
    flagged event as stored (the capability 1 one needed a dummy). Findings carry the server_id (the test maps it
    to the connection)."""
    f = d / "mysql-bin.000001"
    s, n, t, flags = _event_at(d, f.name, 370)
    data = bytearray(f.read_bytes())
    struct.pack_into("<H", data, s + 17, flags | 0x8000)
    struct.pack_into("<I", data, s + n - 4, zlib.crc32(bytes(data[s : s + n - 4])))
    f.write_bytes(bytes(data))
    return [(4, sid, f.name, s, f"event type {t} flagged 0x8000 sent as-is to a skip_replication connection "
                                f"(the rule says {rule})") for sid, rule in ((15, "hole"), (16, "dummy"),
                                                                              (REPLICA_SID, "hole"))]


@pytest.fixture
def suspects(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """What checks 2 and 4 compared per event (`checks.rule_suspects`' answers during the audit)."""
    from binlogd.spark_analytics import checks

    seen: list[dict] = []
    real = checks.rule_suspects

    def spy(data: checks.AuditData) -> dict:
        seen.append(real(data))
        return seen[-1]

    monkeypatch.setattr(checks, "rule_suspects", spy)
    monkeypatch.setattr(checks, "RULE_SUSPECTS_MIN_EVENTS", 0)  # the record-level path, as a large audit takes it
    return seen


@pytest.mark.parametrize("path", ["driver", "staged"])
def test_binlog_statement_byte_changed(spark, sc: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       path: str) -> None:
    """Found whether the events were decoded in the driver or staged by worker processes: both count the events
    whose CRC fails as they decode them, and the audit scans for them only when there is one."""
    from binlogd.spark_analytics import audit as audit_module
    from binlogd.spark_analytics import checks

    called: list[int] = []
    monkeypatch.setattr(checks, "rule_suspects", lambda data: called.append(1) or {})
    counted: list[int | None] = []
    real_crc = checks.check_binlog_crc
    monkeypatch.setattr(checks, "check_binlog_crc", lambda data: counted.append(data.crc_bad) or real_crc(data))
    if path == "staged":
        monkeypatch.setattr(audit_module, "prepare_inputs", functools.partial(audit_module.prepare_inputs,
                                                                              driver_bytes=0))
    rc, summary, expected = run_tampered(spark, sc, tmp_path, binlog=statement_byte_changed)
    assert rc == 1
    assert errors(summary) == expected
    assert counted == [1]
    assert called == []  # a small binlog (< RULE_SUSPECTS_MIN_EVENTS): every event compared, no record-level job


def test_binlog_flag_set_with_valid_crc(spark, sc: Scenario, tmp_path: Path, suspects: list[dict]) -> None:
    rc, summary, expected = run_tampered(spark, sc, tmp_path, binlog=flag_set_crc_fixed)
    conn_of = {c["server_id"]: c["connection_id"] for c in summary["connections"]}
    assert rc == 1
    assert errors(summary) == sorted(((c, conn_of[sid], f, p, m) for c, sid, f, p, m in expected), key=_order)
    # found from the prefix counts of the records holding the event: only those ranges compared per event
    (seen,) = suspects
    for _, sid, f, p, _ in expected:
        ranges = seen[conn_of[sid]]
        assert ranges is not None and any(rf == f and a <= p < b for rf, a, b in ranges), (sid, ranges)


# ---- untouched run, GTID connect, relay logs not covered ------------------------------------------------------------


def test_untouched_run_is_consistent_and_gtid_skips_are_not_withheld(spark, sc: Scenario, tmp_path: Path,
                                                                    suspects: list[dict]) -> None:
    rc, summary = audit(spark, sc, tmp_path / "out")
    assert rc == 0 and summary["findings_total"] == 0, summary["findings"]
    assert suspects == [{}]  # every record agrees with the rule at its prefix counts: no event compared one by one
    by_sid = {c["server_id"]: c for c in summary["connections"]}
    g = by_sid[GTID_SID]
    assert g["start"]["gtid"] == GTID_STATE
    assert g["withheld"] == {"transactions": 0, "gtids": [], "gtids_truncated": False, "content_bytes": 0}
    assert g["skipped_at_connect"]["gtids"] == ["0-1-1", "0-1-2", "0-1-3", "0-1-4", "0-1-5"]
    assert g["actions"]["skipped"] > 0 and g["skipped_at_connect"]["content_bytes"] > 0
    # numeric order: 0-1-10 after 0-1-9
    assert by_sid[15]["withheld"]["gtids"] == ["0-1-4", "0-1-8", "0-1-9", "0-1-10"]
    assert all(c["skipped_at_connect"]["transactions"] == 0 for s, c in by_sid.items() if s != GTID_SID)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "skipped at GTID connect" in html


def test_class_counts_do_not_depend_on_the_chunking(spark, sc: Scenario, tmp_path: Path, suspects: list[dict],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefix counts Spark computes when the records were not probed before it (`checks.class_counts`: the
    policy runs' holes, dummies and BEGINs, `rule_suspects`' classes) run per chunk of a file plus the chunks before
    it: with chunks of 512 bytes (dozens per file, records and groups across their edges) every count, total and
    timeline slice is the default's, and the numpy probes' (`record_probes`, the CLI's path)."""
    from binlogd.spark_analytics import audit as audit_module
    from binlogd.spark_analytics import checks

    rc, probed = audit(spark, sc, tmp_path / "probed")
    monkeypatch.setattr(audit_module, "probe_ledger", lambda tables, *a, **kw: (tables, None))
    rc1, whole = audit(spark, sc, tmp_path / "whole")
    monkeypatch.setattr(checks, "PREFIX_CHUNK", 512)
    rc2, chunked = audit(spark, sc, tmp_path / "chunked")
    assert rc == rc1 == rc2 == 0
    for s in (probed, whole, chunked):
        for k in ("generated_at", "seconds", "step_seconds"):
            s.pop(k)
    assert chunked == whole == probed
    assert suspects == [{}, {}, {}]
    assert sum(c["actions"]["hole"] + c["actions"]["dummy"] + c["actions"]["begin"] for c in whole["connections"]) > 0


def test_relay_logs_not_covering_the_start_is_a_warning(spark, sc: Scenario, tmp_path: Path) -> None:
    """Only the replica's last relay file kept (the others purged, or a GTID replica restarted its relay logs): the
    events before the relay logs given are "not covered" (a warning with the fix), not "missing" (exit 0). The last
    file begins with the upstream's artificial ROTATE, which names the upstream file."""
    assert sc.relay_dir is not None
    relay = tmp_path / "relay"
    shutil.copytree(sc.relay_dir, relay)
    names = [Path(x).name for x in (relay / "relay-bin.index").read_text().split()]
    assert len(names) >= 2, names
    for n in names[:-1]:
        (relay / n).unlink()
    (relay / "relay-bin.index").write_text(f"./{names[-1]}\n")
    rc, summary = audit(spark, sc, tmp_path / "out", relay=relay)
    assert rc == 0, summary["findings"]
    (w,) = summary["findings"]
    assert (w["check"], w["severity"]) == (8, "warning")
    assert "not covered by the relay logs given" in w["message"] and "relay_log_purge=0" in w["message"]
    assert summary["relay"][str(REPLICA_SID)]["not_covered"] > 0
