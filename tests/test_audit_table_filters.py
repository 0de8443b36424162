"""The audit's filter-correctness check covers table-filter decisions (issue 18): every event a connection's
replicate-* rules rejected or renamed is recomputed from the binlog with the same rules (protocol/table_filter.py,
the dump's own code) and compared with the ledger; a tampered ledger is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binlogd.testing.mariadb import wait_until
from tests.dumpclient import raw_dump
from tests.test_table_filters import STANDALONE, run

# Spark under load: a 300 s timeout inside a py4j call leaves the module's shared session unusable for the rest
pytestmark = pytest.mark.timeout(900)

DUMPS = [  # (server_id, capability, session filter statements)
    (60, 0, ["SET @binlogd_replicate_do_table='db1.t1'"]),
    (62, 2, ["SET @binlogd_replicate_wild_ignore_table='db2.%'"]),
    (64, 4, ["SET @binlogd_replicate_do_db='db9'", "SET @binlogd_replicate_rewrite_db='db1->db9'"]),
    (65, 4, []),
]


@pytest.fixture(scope="module")
def spark() -> Any:
    from binlogd.spark_analytics.session import build_session

    s = build_session("local[2]")
    yield s
    s.stop()


def _audit(binlog_dir: Path, ledger: Path, out: Path) -> tuple[int, dict[str, Any]]:
    """The CLI in this process (same Spark session): exit status and summary.json."""
    from binlogd.spark_analytics.cli import main

    rc = main(["--binlog-dir", str(binlog_dir), "--ledger", str(ledger), "--out", str(out), "--quiet"])
    return rc, json.loads((out / "summary.json").read_text())


def test_audit_covers_table_filter_decisions(spark: Any, binlogd: Any, harness_dir: Path) -> None:
    primary = binlogd.standalone(["--binlog-with-tables-info"])
    run(primary, STANDALONE)  # type: ignore[arg-type]
    for sid, cap, stmts in DUMPS:
        cmd = b"\x12" + (4).to_bytes(4, "little") + (1).to_bytes(2, "little") + sid.to_bytes(4, "little")
        got = raw_dump(primary.host, primary.port, ["SET @master_binlog_checksum=@@global.binlog_checksum",
                                                    f"SET @mariadb_slave_capability={cap}", *stmts],
                       cmd + b"mysql-bin.000001")
        assert got.end == "EOF", got.error
    wait_until(lambda: len([c for c in primary.connections() if c.closed]) == len(DUMPS), timeout=10)
    decided = {r.why for c in primary.connections() for r in c.runs}
    assert {"replicate-do-table", "replicate-wild-ignore-table", "replicate-do-db", "replicate-rewrite-db"} <= decided
    # one audit: the ledger as written, except that connection 65 (no filters) claims rules it did not apply; every
    # finding must be about that tampered connection, and check 4 must find what its rules would have rejected
    recs = [json.loads(line) for f in sorted(primary.ledger_dir.glob("ledger.*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]
    conns = {r["server_id"]: r["conn"] for r in recs if r["r"] == "conn"}
    for r in recs:
        if r["r"] == "conn" and r["conn"] == conns[65]:
            r["table_filters"] = {"replicate-do-table": ["db1.t1"]}
    tampered = harness_dir / "ledger"
    tampered.mkdir()
    (tampered / "ledger.000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, summary = _audit(primary.binlog_dir, tampered, harness_dir / "audit")
    assert rc == 1
    findings = summary["findings"]
    assert {(f["check"], f["connection_id"]) for f in findings} == {(4, conns[65])}, findings
    assert any("replicate-do-table rejects it" in f["message"] for f in findings), findings
