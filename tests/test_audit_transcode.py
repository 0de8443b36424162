"""The Spark audit over ledgers of transcoded dumps (server/transcode.py): exact, not "tampered".

The ledger describes what the dump decided in the file's own positions and lengths; the `conn` record says which
transcoding the stage applied. So the audit's byte and length checks stay exact for stripped and added streams
(exit 0), and a `transcode` the connection's settings do not allow is a finding of check 10.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.dumpclient import raw_dump
from tests.harness import Binlogd
from tests.test_transcode import ADD, _twin

# Spark under load: a 300 s timeout inside a py4j call leaves the module's shared session unusable for the rest
pytestmark = [pytest.mark.mariadb, pytest.mark.timeout(900)]

# (server_id, session, capability, skip, start position in the stream); None capability: not set
NON_AWARE_DUMPS = ((21, [], None, False, 4), (22, [], 0, True, 4), (23, [], 4, True, 4), (24, [], 2, False, 0))
ADD_DUMPS = ((31, ADD, 4, True, 4), (32, ADD, 0, True, 4), (33, ADD, 1, False, 0))


@pytest.fixture(scope="module")
def spark():
    from binlogd.spark_analytics.session import build_session

    s = build_session("local[2]")
    yield s
    s.stop()


def _serve_and_dump(base: Path, checksum: str, dumps: tuple) -> tuple[Path, Path]:
    """binlogd over one twin with a ledger; each dump run to its EOF (a start of 0: the third event boundary of
    the stream, a position only the transcoded stream has)."""
    binlogs, ledger = base / "binlogs", base / "ledger"
    _twin(binlogs, checksum)
    server = Binlogd.start(["--binlog-dir", str(binlogs), "--ledger", str(ledger)], None, log_path=base / "log")
    try:
        first = raw_dump(server.host, server.port, dumps[0][1], b"\x12" + struct.pack("<IHI", 4, 0, 0)
                         + b"mysql-bin.000001", idle_timeout=5.0)
        ends = [struct.unpack_from("<I", e, 13)[0] for e in first.events[2:5]]  # after the fake ROTATE and FDE
        for sid, session, cap, skip, pos in dumps:
            st = [*session, *([f"SET @mariadb_slave_capability={cap}"] if cap is not None else []),
                  *(["SET skip_replication=1"] if skip else [])]
            cmd = b"\x12" + struct.pack("<IHI", pos or ends[2], 1, sid) + b"mysql-bin.000001"
            cap_ = raw_dump(server.host, server.port, st, cmd, idle_timeout=5.0)
            assert cap_.end == "EOF", (sid, cap_.error)
    finally:
        server.stop()
    return binlogs, ledger


def _audit(spark, binlogs: Path, ledger: Path, out: Path) -> tuple[int, dict]:
    from binlogd.spark_analytics.cli import main

    rc = main(["--binlog-dir", str(binlogs), "--ledger", str(ledger), "--out", str(out), "--quiet"])
    return rc, json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("checksum,dumps,kind", [("CRC32", NON_AWARE_DUMPS, "strip_crc"),
                                                 ("NONE", ADD_DUMPS, "add_crc")])
def test_transcoded_dumps_audit_consistent(spark, tmp_path: Path, checksum: str, dumps: tuple, kind: str) -> None:
    binlogs, ledger = _serve_and_dump(tmp_path, checksum, dumps)
    rc, summary = _audit(spark, binlogs, ledger, tmp_path / "out")
    assert rc == 0, summary["findings"]
    by_sid = {c["server_id"]: c for c in summary["connections"]}
    assert {sid: by_sid[sid]["transcode"] for sid, *_ in dumps} == {sid: kind for sid, *_ in dumps}
    assert by_sid[dumps[1][0]]["actions"]["dummy" if dumps[1][2] == 0 else "hole"] > 0
    # a transcoding the connection could not have been given: check 10
    (lf,) = sorted(ledger.glob("ledger.*.jsonl"))
    recs = [json.loads(ln) for ln in lf.read_text().splitlines()]
    target = next(r for r in recs if r["r"] == "conn" and r["server_id"] == dumps[0][0])
    target["transcode"] = "add_crc" if kind == "strip_crc" else "strip_crc"
    lf.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))
    rc, summary = _audit(spark, binlogs, ledger, tmp_path / "out2")
    assert rc == 1
    found = [f for f in summary["findings"] if f["check"] == 10]
    assert [f["connection_id"] for f in found] == [target["conn"]] and "transcode" in found[0]["message"], found
