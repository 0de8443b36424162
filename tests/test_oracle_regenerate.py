"""tests/data/oracle/regenerate.py records the same oracle again, and binlogd serves what it records.

A re-run on a fresh MariaDB 10.11 primary differs from the stored captures only in run-dependent bytes
(timestamps, CRCs, xids, ...: tests/data/oracle/shape.py says which). Checked for a subset of variants that
covers holes, dummies, GTID->BEGIN, a GTID connect and an error, plus all three binlog files; then binlogd
(--compat mariadb) serving the regenerated files must send the regenerated streams byte for byte, as
tests/test_oracle.py checks for the stored ones. The stored .json files themselves are checked to be
exactly what the script's record builder makes of their .raw, so a regenerated oracle keeps their format.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.data.oracle import records
from tests.data.oracle.regenerate import PRIMARY_ARGS, SERVER_ID, record
from tests.data.oracle.shape import binlog_shape, capture_shape, show_binlog_events_shape
from tests.data.oracle.variants import FILE1, FILE2, FILE3, variants
from tests.dumpclient import raw_dump, split_packets
from tests.harness import REPO_ROOT, Binlogd, MariaDB
from tests.oracle_data import ORACLE

SUBSET = ["cap0_skip1", "cap2_skip0", "cap4_skip1", "gtid_0-1-4_cap4", "err_nofile"]
STORED = sorted(p.stem for p in ORACLE.glob("*.json"))
STORED_PORT = 33061  # the port of the primary the stored captures were read from


def _stored(name: str) -> dict[str, Any]:
    return json.loads((ORACLE / f"{name}.json").read_text())


# ---- the format: every stored .json is what records.py makes of its .raw -----------------------------


@pytest.mark.parametrize("name", STORED)
def test_stored_json_is_rebuilt_from_raw(name: str) -> None:
    doc = _stored(name)
    raw = (ORACLE / f"{name}.raw").read_bytes()
    (variant,) = [v for v in variants(1111) if v.name == name]
    events, end = records.stream_records(raw, [e["t_ms"] / 1000 for e in doc["events"]])
    assert events == doc["events"]
    if end:
        assert end == doc["end"]
    else:  # the reader ended it (heartbeat variant): not in the bytes
        assert doc["end"]["kind"] in ("max_seconds", "idle_timeout")
    assert variant.settings("127.0.0.1", STORED_PORT) == doc["settings"]
    assert variant.session_statements() == doc["session_statements"]
    assert variant.register_command().hex() == doc["com_register_slave_hex"]
    assert variant.dump_command().hex() == doc["com_binlog_dump_hex"]
    assert records.dumps(doc) == (ORACLE / f"{name}.json").read_text()


def test_every_variant_is_stored() -> None:
    assert sorted(v.name for v in variants(1111)) == STORED
    assert len(STORED) == 33


def _with_crc(ev: bytearray) -> bytes:
    struct.pack_into("<I", ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])))
    return bytes(ev)


def _edit(doc: dict[str, Any], type_code: int, change: Any) -> dict[str, Any]:
    """A copy of ``doc`` whose first event of ``type_code`` went through ``change(bytearray)`` (CRC redone)."""
    out = json.loads(json.dumps(doc))
    e = next(e for e in out["events"] if e["type"] == type_code)
    ev = bytearray.fromhex(e["hex"])
    change(ev)
    e["hex"] = _with_crc(ev).hex()
    return out


def test_shape_drops_only_run_dependent_bytes() -> None:
    """The structural comparison is blind to timestamps and xids, and sees a changed flag or row byte."""
    doc = _stored("cap2_skip0")
    base = capture_shape(doc)

    def timestamp(ev: bytearray) -> None:
        ev[0:4] = b"\x01\x02\x03\x04"

    def xid(ev: bytearray) -> None:
        ev[19] ^= 0xFF

    def skip_flag(ev: bytearray) -> None:
        ev[18] ^= 0x80

    def row_byte(ev: bytearray) -> None:
        ev[-5] ^= 0x01

    assert capture_shape(_edit(doc, 19, timestamp)) == base
    assert capture_shape(_edit(doc, 16, xid)) == base
    assert capture_shape(_edit(doc, 19, skip_flag)) != base
    assert capture_shape(_edit(doc, 23, row_byte)) != base
    assert capture_shape(_stored("cap2_skip1")) != base


@pytest.mark.parametrize(("args", "message"), [
    (["--out", "/tmp", "--only", "cap9_skip9"], "no such variant: cap9_skip9"),
    (["--only", "cap4_skip1"], "--only needs --out DIR"),
    (["--out", "{a_file}"], "exists and is not a directory"),
])
def test_cli_usage_errors_are_clear(args: list[str], message: str, tmp_path: Path) -> None:
    """Refused before any server starts; the stored oracle is never half-rewritten by --only."""
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    args = [a.format(a_file=a_file) for a in args]
    res = subprocess.run([sys.executable, "-m", "tests.data.oracle.regenerate", *args],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert message in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr


# ---- a real re-run ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def regenerated(mariadb_base: Path) -> Iterator[Path]:
    """The subset recorded into a fresh directory by a fresh primary (as the script does, minus the CLI)."""
    out = mariadb_base / "oracle-regen" / "dump"
    primary = MariaDB.start(mariadb_base / "oracle-regen", "primary", SERVER_ID, *PRIMARY_ARGS,
                            template_dir=mariadb_base / "_template")
    try:
        assert record(primary, out, SUBSET) == SUBSET
    finally:
        primary.stop()
    yield out


@pytest.mark.mariadb
def test_regenerated_binlog_files_match_stored(regenerated: Path) -> None:
    for f in (FILE1, FILE2, FILE3):
        assert binlog_shape((regenerated / f).read_bytes()) == binlog_shape((ORACLE / f).read_bytes()), f
    stored = show_binlog_events_shape((ORACLE / "show_binlog_events.txt").read_text())
    assert show_binlog_events_shape((regenerated / "show_binlog_events.txt").read_text()) == stored
    assert (regenerated / FILE1).read_bytes() != (ORACLE / FILE1).read_bytes()  # a new recording, not a copy


@pytest.mark.mariadb
@pytest.mark.parametrize("name", SUBSET)
def test_regenerated_capture_matches_stored(regenerated: Path, name: str) -> None:
    new = capture_shape(json.loads((regenerated / f"{name}.json").read_text()))
    old = capture_shape(_stored(name))
    assert (regenerated / f"{name}.raw").read_bytes() != b""
    assert new == old, _first_difference(old, new)


def _first_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    for key in old:
        if key == "events":
            for i, (a, b) in enumerate(zip(old[key], new.get(key, []), strict=False)):
                if a != b:
                    return f"event {i}:\n stored      {a}\n regenerated {b}"
            return f"event count: stored {len(old[key])}, regenerated {len(new.get(key, []))}"
        if old[key] != new.get(key):
            return f"{key}: stored {old[key]!r}, regenerated {new.get(key)!r}"
    return "?"


@pytest.fixture(scope="module")
def binlogd_on_regenerated(regenerated: Path, mariadb_base: Path) -> Iterator[Binlogd]:
    """binlogd serving the regenerated files 1 and 2: what the primary had while the file-1 captures ran."""
    files = mariadb_base / "oracle-regen" / "served"
    files.mkdir()
    for f in (FILE1, FILE2):
        shutil.copy(regenerated / f, files / f)
    server = Binlogd.start(["--binlog-dir", str(files), "--server-id", str(SERVER_ID), "--compat", "mariadb"],
                           log_path=mariadb_base / "oracle-regen" / "binlogd.log")
    yield server
    server.stop()


def _diff(expected: bytes, got: bytes) -> str:
    ep, gp = split_packets(expected), split_packets(got)
    for i, (a, b) in enumerate(zip(ep, gp, strict=False)):
        if a != b:
            return f"packet {i}: expected seq {a.seq} {a.payload.hex()}\n          got seq {b.seq} {b.payload.hex()}"
    return f"packet count: expected {len(ep)}, got {len(gp)}"


@pytest.mark.mariadb
@pytest.mark.parametrize("name", SUBSET)
def test_binlogd_serves_regenerated_byte_for_byte(regenerated: Path, binlogd_on_regenerated: Binlogd,
                                                  name: str) -> None:
    doc = json.loads((regenerated / f"{name}.json").read_text())
    expected = (regenerated / f"{name}.raw").read_bytes()
    server = binlogd_on_regenerated
    cap = raw_dump(server.host, server.port, doc["session_statements"], bytes.fromhex(doc["com_binlog_dump_hex"]),
                   bytes.fromhex(doc["com_register_slave_hex"]))
    assert cap.raw == expected, _diff(expected, cap.raw)
    assert cap.end == doc["end"]["kind"]
    assert cap.register_reply == bytes.fromhex(doc["register_response_hex"])
