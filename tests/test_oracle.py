"""binlogd against the bytes a real MariaDB 10.11.19 primary sent (shared/oracle/mariadb-10.11/dump).

Each capture is replayed: same binlog files, same session statements, the same COM_REGISTER_SLAVE and
COM_BINLOG_DUMP bytes. With `--compat mariadb` every stream must be identical byte for byte. With the
default policy the only difference allowed is binlogd's documented extension: for capability < 2 and
`SET skip_replication=1`, each withheld event becomes a same-length dummy; the expected bytes are
derived here from the capture and the binlog file with the test's own dummy builder. The other extension: a
client that never set @master_binlog_checksum gets CRC32 files without CRCs (server/transcode.py) where MariaDB
answers 1236; its expected bytes are derived from the capture of the same dump with @master_binlog_checksum='NONE'.
"""

from __future__ import annotations

import itertools
import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from binlogd.testing import Binlogd
from tests.dumpclient import raw_dump, split_packets
from tests.oracle_data import ORACLE

CAPTURES = sorted(p.stem for p in ORACLE.glob("*.json"))
FILE3 = [c for c in CAPTURES if c.startswith("file3_")]
HEARTBEAT = ["cap4_block_hb1s"]
PLAIN = [c for c in CAPTURES if c not in FILE3 and c not in HEARTBEAT]


def _load(name: str) -> tuple[dict, bytes]:
    return json.loads((ORACLE / f"{name}.json").read_text()), (ORACLE / f"{name}.raw").read_bytes()


@pytest.fixture(scope="module")
def oracle_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not ORACLE.is_dir():
        pytest.fail(f"oracle captures missing at {ORACLE}")
    two = tmp_path_factory.mktemp("oracle2")
    three = tmp_path_factory.mktemp("oracle3")
    for n in (1, 2):
        shutil.copy(ORACLE / f"mysql-bin.00000{n}", two)
    for n in (1, 2):
        shutil.copy(ORACLE / f"mysql-bin.00000{n}", three)
    # 000003 was copied after `SET GLOBAL binlog_checksum=CRC32` rotated it: while the file3_* streams were
    # captured it was the active file, without the trailing ROTATE it has now.
    events = _binlog_events(ORACLE / "mysql-bin.000003")
    last_pos, last = events[-1]
    assert last[4] == 4, "expected a trailing ROTATE in the oracle's mysql-bin.000003"
    (three / "mysql-bin.000003").write_bytes((ORACLE / "mysql-bin.000003").read_bytes()[:last_pos])
    return {"two": two, "three": three}


@pytest.fixture(scope="module")
def servers(oracle_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    logs = tmp_path_factory.mktemp("logs")
    started: dict[tuple[str, str], Binlogd] = {}
    for files in ("two", "three"):
        for compat in ("mariadb", "binlogd"):
            started[(files, compat)] = Binlogd.start(
                ["--binlog-dir", str(oracle_dirs[files]), "--server-id", "1", "--compat", compat],
                log_path=logs / f"{files}-{compat}.log",
            )
    yield started
    for s in started.values():
        s.stop()


def _replay(server: Binlogd, meta: dict, idle: float = 3.0, max_seconds: float | None = None):
    reg = bytes.fromhex(meta["com_register_slave_hex"]) if meta.get("com_register_slave_hex") else None
    return raw_dump(server.host, server.port, meta["session_statements"], bytes.fromhex(meta["com_binlog_dump_hex"]),
                    reg, idle_timeout=idle, max_seconds=max_seconds)


def _diff(expected: bytes, got: bytes) -> str:
    ep, gp = split_packets(expected), split_packets(got)
    for i, (a, b) in enumerate(zip(ep, gp, strict=False)):
        if a != b:
            return f"packet {i}: expected seq {a.seq} {a.payload.hex()}\n          got seq {b.seq} {b.payload.hex()}"
    return f"packet count: expected {len(ep)}, got {len(gp)}"


@pytest.mark.parametrize("name", PLAIN + FILE3)
def test_compat_mariadb_is_byte_identical(name: str, servers) -> None:
    meta, expected = _load(name)
    server = servers[("three" if name in FILE3 else "two", "mariadb")]
    cap = _replay(server, meta)
    assert cap.raw == expected, _diff(expected, cap.raw)
    assert cap.end == meta["end"]["kind"]


# ---- the default policy: the dummy extension, derived independently from capture + binlog -------------

def _dummy(ev: bytes, crc: bool) -> bytes:
    """MariaDB's dummy_event algorithm, written out again here so the server's copy is checked."""
    ev = bytearray(ev)
    data_len = len(ev) - (4 if crc else 0)
    flags = (struct.unpack_from("<H", ev, 17)[0] & ~0x04) | 0x08
    struct.pack_into("<H", ev, 17, flags)
    orig = ev[4]
    if data_len < 34:
        ev[4] = 14
        n = data_len - 24
        body = struct.pack("<I", n) + b"!dummyvar"[:n] + b"\x01"
    else:
        ev[4] = 2
        text = f"# Dummy event replacing event type {orig} that slave cannot handle.".encode()
        room = data_len - 33
        body = bytes(14) + text[:room].ljust(room, b" ")
    ev[19:data_len] = body
    if crc:
        struct.pack_into("<I", ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])) & 0xFFFFFFFF)
    return bytes(ev)


def _binlog_events(path: Path) -> list[tuple[int, bytes]]:
    data = path.read_bytes()
    out, p = [], 4
    while p + 19 <= len(data):
        (n,) = struct.unpack_from("<I", data, p + 9)
        out.append((p, data[p : p + n]))
        p += n
    return out


def _expected_stripped(none_capture: str) -> bytes:
    """What a non-checksum-aware client gets with the default policy: the stream MariaDB sent to a client that said
    'NONE' (CRC32 files as stored), each event without its CRC, its length and log_pos 4 smaller per event of
    the file up to it (not counting the FDE, which keeps its CRC slot, says algorithm 0 and gets a new CRC)."""
    meta, raw = _load(none_capture)
    files = {n: _binlog_events(ORACLE / n) for n in ("mysql-bin.000001", "mysql-bin.000002")}
    buf, seq, cur = bytearray(), 1, None
    for pk in split_packets(raw):
        ev = bytearray(pk.payload[1:])
        if pk.payload[:1] == b"\x00" and ev[4] == 4 and struct.unpack_from("<I", ev, 13)[0] == 0:
            cur = next(n for n in files if ev.endswith(n.encode()) or ev[:-4].endswith(n.encode()))
            if not ev.endswith(cur.encode()):  # a later fake ROTATE has the CRC of the file before
                ev = ev[:-4]
                struct.pack_into("<I", ev, 9, len(ev))
        elif pk.payload[:1] == b"\x00" and ev[4] == 15:
            ev[-5] = 0
            ev[-4:] = struct.pack("<I", zlib.crc32(bytes(ev[:17]) + bytes([ev[17] & 0xFE]) + bytes(ev[18:-4])))
        elif pk.payload[:1] == b"\x00":
            assert cur is not None
            (log_pos,) = struct.unpack_from("<I", ev, 13)
            k = sum(1 for p, e in files[cur] if e[4] != 15 and p + len(e) <= log_pos)
            ev = ev[:-4]
            struct.pack_into("<II", ev, 9, len(ev), log_pos - 4 * k)
        payload = pk.payload[:1] + bytes(ev) if pk.payload[:1] == b"\x00" else pk.payload
        buf += struct.pack("<I", len(payload) | (seq << 24)) + payload
        seq = (seq + 1) & 0xFF
    assert meta["end"]["kind"] == "EOF"
    return bytes(buf)


def _expected_default(meta: dict, raw: bytes) -> bytes:
    """Insert a dummy for every flagged event the capture left out, then renumber the packets."""
    files = {n: dict(_binlog_events(ORACLE / n)) for n in ("mysql-bin.000001", "mysql-bin.000002")}
    packets = split_packets(raw)
    out: list[bytes] = []
    cur_file, pos = None, 0
    for pk in packets:
        if pk.payload[:1] != b"\x00":
            out.append(pk.payload)
            continue
        ev = pk.payload[1:]
        typ, log_pos, flags = ev[4], struct.unpack_from("<I", ev, 13)[0], struct.unpack_from("<H", ev, 17)[0]
        if typ == 4 and flags & 0x20:  # fake rotate: new file, position from its body
            name_with_crc, name_without = ev[27:-4].decode(errors="replace"), ev[27:].decode(errors="replace")
            cur_file = name_with_crc if name_with_crc in files else name_without
            pos = struct.unpack_from("<Q", ev, 19)[0]
            out.append(pk.payload)
            continue
        if typ == 15:
            pos = max(pos, 4 + len(ev))
            out.append(pk.payload)
            continue
        start = log_pos - len(ev)
        assert cur_file is not None
        for p, orig in sorted(files[cur_file].items()):
            if pos <= p < start:
                flagged = struct.unpack_from("<H", orig, 17)[0] & 0x8000
                assert flagged, f"unexpected hole at {cur_file}:{p}"
                out.append(b"\x00" + _dummy(orig, True))
        out.append(pk.payload)
        pos = log_pos
    buf, seq = bytearray(), 1
    for payload in out:
        buf += struct.pack("<I", len(payload) | (seq << 24)) + payload
        seq = (seq + 1) & 0xFF
    return bytes(buf)


@pytest.mark.parametrize("name", PLAIN + FILE3)
def test_default_policy_matches_oracle_or_documented_dummies(name: str, servers) -> None:
    meta, captured = _load(name)
    server = servers[("three" if name in FILE3 else "two", "binlogd")]
    cap = _replay(server, meta)
    capability = meta["settings"]["capability"]
    low_cap = capability in ("unset", "0", "1")
    if meta["settings"]["checksum"] == "unset" and "checksum that master" in meta["end"].get("message", ""):
        expected = _expected_stripped(name.replace("_unset", "_NONE"))
    elif meta["settings"]["skip"] and low_cap and meta["end"]["kind"] == "EOF":
        expected = _expected_default(meta, captured)
        assert expected != captured  # the extension must change something here
    else:
        expected = captured
    assert cap.raw == expected, _diff(expected, cap.raw)


def test_heartbeat_stream(servers) -> None:
    """Blocking dump with a 1 s heartbeat: the events as captured, then heartbeats about every second,
    each byte-identical to the real primary's (timestamp 0, log_pos = end of file, CRC)."""
    meta, captured = _load("cap4_block_hb1s")
    cap = _replay(servers[("two", "mariadb")], meta, idle=5, max_seconds=3.5)
    exp_packets = split_packets(captured)
    hb_expected = [p for p in exp_packets if p.payload[5:6] == b"\x1b"]
    body_expected = [p for p in exp_packets if p.payload[5:6] != b"\x1b"]
    got_hb = [(p, t) for p, t in zip(cap.packets, cap.times, strict=True) if p.payload[5:6] == b"\x1b"]
    got_body = [p for p in cap.packets if p.payload[5:6] != b"\x1b"]
    assert [p.payload for p in got_body] == [p.payload for p in body_expected]
    assert 2 <= len(got_hb) <= 4, got_hb
    assert all(p.payload == hb_expected[0].payload for p, _ in got_hb)
    gaps = [b - a for (_, a), (_, b) in itertools.pairwise(got_hb)]
    assert all(0.8 <= g <= 1.4 for g in gaps), gaps
    assert cap.end == "max_seconds"


def test_register_slave_reply(servers) -> None:
    meta, _ = _load("cap4_skip0")
    cap = _replay(servers[("two", "mariadb")], meta)
    assert cap.register_reply == bytes.fromhex(meta["register_response_hex"])

