"""Checksum transcoding per replica (server/transcode.py), with real clients and a real MariaDB 10.11.

The oracle is a twin: the builder writes the same events (same timestamps) once with CRC32 and once with NONE.
The stream binlogd transcodes from one twin must be, byte for byte, the stream it sends as stored from the other
(positions included: the stream's positions are those of the file written with the client's algorithm), for
every start position a client saw, with holes and dummies. A real MariaDB 10.11 over the same files gives what
`--compat mariadb` must give.
"""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.events import UnknownBody, fde_checksum_alg, parse_event, parse_header

from binlogd.testing.builder import BinlogBuilder
from tests.dumpclient import DumpCapture, raw_dump
from tests.harness import find_binary

TS = 1_700_000_000
COLS = ["id INT", "v VARCHAR(20)"]
NON_AWARE: list[str] = []  # an old client: never sets @master_binlog_checksum
ADD = ["SET @master_binlog_checksum='CRC32'", "SET @binlogd_add_checksums=1"]


def _twin(d: Path, checksum: str) -> BinlogBuilder:
    """Two files: DDL, row and statement transactions, a skip_replication group, a ROTATE."""
    b = BinlogBuilder(d, checksum=checksum, timestamp=TS)  # type: ignore[arg-type]
    b.statement("CREATE DATABASE db")
    b.statement("CREATE TABLE db.t (id INT PRIMARY KEY, v VARCHAR(20))", "db")
    with b.transaction() as t:
        t.insert("db", "t", COLS, [(1, "one"), (2, "two")])
    with b.transaction(skip_replication=True) as t:
        t.query("INSERT INTO t VALUES (3, 'flagged')", "db")
    with b.transaction() as t:
        t.query("UPDATE t SET v='x' WHERE id=1", "db")
    b.rotate()
    with b.transaction() as t:
        t.insert("db", "t", COLS, [(4, "four")])
    b.statement("DROP TABLE db.t", "db")
    b.close()
    return b


@pytest.fixture
def twins(binlogd_test_dir: Path) -> tuple[Path, Path]:
    crc, none = binlogd_test_dir / "crc32", binlogd_test_dir / "none"
    _twin(crc, "CRC32")
    _twin(none, "NONE")
    return crc, none


def _dump(server, session: list[str], pos: int = 4, file: str = "mysql-bin.000001", capability: int | None = None,
          skip: bool = False, sid: int = 0) -> DumpCapture:
    st = list(session)
    if capability is not None:
        st.append(f"SET @mariadb_slave_capability={capability}")
    if skip:
        st.append("SET skip_replication=1")
    cmd = b"\x12" + struct.pack("<IHI", pos, 0, sid) + file.encode()  # server_id 0: non-blocking, EOF at the end
    return raw_dump(server.host, server.port, st, cmd, idle_timeout=5.0)


def _fde_slot_masked(cap: DumpCapture) -> bytes:
    """The raw stream with the CRC slot of FDEs saying NONE masked: MariaDB leaves the stored slot of a NONE file's
    FDE as it was when it zeroes the FDE's log_pos for a start > 4; a stripped FDE gets the CRC of the FDE as sent.
    No client reads that slot (the algorithm says NONE); everything else must be equal byte for byte."""
    out = bytearray(cap.raw)
    p = 0
    while p + 4 <= len(out):
        n = int.from_bytes(out[p : p + 3], "little")
        ev = out[p + 5 : p + 4 + n]
        if n > 24 and out[p + 4] == 0 and ev[4] == 15 and ev[-5] == 0:
            out[p + 4 + n - 4 : p + 4 + n] = b"...."
        p += 4 + n
    return bytes(out)


def _conn_records(server) -> list[dict[str, object]]:
    """The ledger's `conn` records (docs/ledger.md), oldest first."""
    recs = [json.loads(ln) for f in sorted(Path(server.ledger_dir).glob("ledger.*.jsonl"))
            for ln in f.read_text().splitlines() if ln.strip()]
    return [r for r in recs if r.get("r") == "conn"]


def _boundaries(path: Path) -> list[int]:
    """Every event end of a file (the positions a client sees and may resume at), the FDE's first."""
    data = path.read_bytes()
    return [e.end for e in scan(data).events]


def _check_stream(cap: DumpCapture, crc: bool) -> None:
    """What an old client checks: every event decodes, has (or lacks) a valid CRC, and, within a file, starts where
    the one before ended (no holes for capability 0): log_pos = previous log_pos + event_length."""
    assert cap.end == "EOF", cap.error
    prev = None
    alg = int(crc)  # the first fake ROTATE: the client's own algorithm
    for ev in cap.events:
        h = parse_header(ev)
        assert h.event_length == len(ev)
        if h.type_code == 15:
            alg = fde_checksum_alg(ev)
            assert alg == int(crc)
        body = parse_event(ev, alg, verify_crc=True).body  # every body decodes, CRCs (if any) verified
        assert not isinstance(body, UnknownBody), h
        if crc:
            assert crc_ok(ev), h
        elif h.type_code != 15:  # an FDE always carries its CRC slot
            assert not crc_ok(ev), h
        if h.type_code == 4 and h.log_pos == 0:  # fake ROTATE: a new file
            prev = None
            continue
        if h.type_code == 15:
            prev = h.log_pos if h.log_pos else None
            continue
        if prev is not None:
            assert h.log_pos == prev + h.event_length, (h, prev)
        prev = h.log_pos


@pytest.mark.parametrize("capability,skip", [(0, False), (0, True), (4, False), (4, True)])
def test_strip_for_non_aware_client_equals_none_twin(binlogd, twins, capability: int, skip: bool) -> None:
    """A non-aware client of a CRC32 binlog gets exactly what binlogd sends from the NONE twin to an aware client
    (holes for capability 4 + skip, dummies for capability 0 + skip), at every start position it saw."""
    crc_dir, none_dir = twins
    a, b = binlogd.serve(crc_dir), binlogd.serve(none_dir)
    whole = _dump(a, NON_AWARE, capability=capability, skip=skip)
    _check_stream(whole, crc=False) if capability == 0 else None
    assert whole.end == "EOF", whole.error
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        for pos in [4, *_boundaries(none_dir / name)]:
            got = _dump(a, NON_AWARE, pos, name, capability, skip)
            want = _dump(b, ["SET @master_binlog_checksum='NONE'"], pos, name, capability, skip)
            assert want.end == "EOF", (name, pos, want.error)
            assert _fde_slot_masked(got) == _fde_slot_masked(want), (name, pos)
    conn = _conn_records(a)[0]
    assert conn["transcode"] == "strip_crc" and not conn["checksum"]
    assert {c.transcode for c in a.connections()} == {"strip_crc"}  # the harness's view of the ledger
    close = next(c for c in a.connections() if c.closed)
    assert close.bytes_sent == len(whole.raw)  # what the client got, not the file's bytes


def test_add_checksums_equals_crc32_twin(binlogd, twins) -> None:
    """@binlogd_add_checksums=1 with @master_binlog_checksum='CRC32': a NONE binlog is sent as its CRC32 twin."""
    crc_dir, none_dir = twins
    a, b = binlogd.serve(none_dir), binlogd.serve(crc_dir)
    _check_stream(_dump(a, ADD, capability=0), crc=True)
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        for pos in [4, *_boundaries(crc_dir / name)]:
            got = _dump(a, ADD, pos, name, 4, True)
            want = _dump(b, ADD[:1], pos, name, 4, True)
            assert want.end == "EOF", (name, pos, want.error)
            assert got.raw == want.raw, (name, pos)
    assert _conn_records(a)[0]["transcode"] == "add_crc"


def test_positions_not_in_the_stream_are_refused(binlogd, twins) -> None:
    """A start position inside an event of the transcoded stream, or past its end, is 1236 (no event starts
    there); the file's own positions are not the client's."""
    crc_dir, _ = twins
    a = binlogd.serve(crc_dir)
    ends = _boundaries(crc_dir / "mysql-bin.000001")
    file_end = ends[-1]
    for pos in (ends[2] + 1, file_end):  # file_end: past the stripped stream's end (3 x 4 bytes shorter at least)
        cap = _dump(a, NON_AWARE, pos)
        assert cap.error is not None and cap.error[0] == 1236, (pos, cap.end)
        assert cap.error[1].startswith("Client requested master to start replication from impossible position")


def test_heartbeat_and_fake_rotate_positions(binlogd, twins) -> None:
    """A blocking non-aware client: the fake ROTATE names its start and heartbeats the end of the stream, both in
    the stream's coordinates (the NONE twin's)."""
    crc_dir, none_dir = twins
    a = binlogd.serve(crc_dir)
    name = "mysql-bin.000002"
    start = _boundaries(none_dir / name)[3]
    st = ["SET @master_heartbeat_period=200000000"]  # 0.2 s
    cmd = b"\x12" + struct.pack("<IHI", start, 0, 77) + name.encode()
    cap = raw_dump(a.host, a.port, st, cmd, idle_timeout=5.0, max_seconds=1.5)
    evs = [(parse_header(e), e) for e in cap.events]
    rot = evs[0][1]
    assert evs[0][0].type_code == 4 and struct.unpack_from("<Q", rot, 19)[0] == start
    beats = [h for h, _ in evs if h.type_code == 27]
    assert beats and all(h.log_pos == (none_dir / name).stat().st_size for h in beats)
    assert all(len(e) == h.event_length for h, e in evs)


def test_compat_mariadb_refuses_like_mariadb(binlogd, mariadb, twins) -> None:
    """--compat mariadb: a non-aware client of a CRC32 binlog gets MariaDB's own 1236, byte for byte; a client
    that asked for CRC32 from a NONE binlog gets it without CRCs from both (MariaDB never adds them)."""
    crc_dir, none_dir = twins
    files = [crc_dir / "mysql-bin.000001", crc_dir / "mysql-bin.000002"]
    real = mariadb.primary_from_binlogs("crc", 1, files)
    ours = binlogd.serve(crc_dir, ["--compat", "mariadb"])
    want = _dump(real, NON_AWARE)
    got = _dump(ours, NON_AWARE)
    assert want.error is not None and want.error[0] == 1236
    assert got.packets[-1].payload == want.packets[-1].payload
    assert "Slave can not handle replication events with the checksum" in want.error[1]
    # ADD without the binlogd variable on a NONE binlog: MariaDB sends the events as stored
    real_none = mariadb.primary_from_binlogs("none", 1, [none_dir / "mysql-bin.000001"],
                                             extra_args=["--binlog-checksum=NONE"])
    for server in (real_none, binlogd.serve(none_dir, ["--compat", "mariadb"])):
        cap = _dump(server, ADD, capability=4)
        assert cap.end == "EOF", cap.error
        assert not any(crc_ok(e) for e in cap.events if e[4] not in (4, 15)), server  # no CRCs added


@pytest.mark.parametrize("session,text", [
    (["SET @binlogd_add_checksums=1"], "@binlogd_add_checksums=1 needs @master_binlog_checksum='CRC32'"),
    (["SET @master_binlog_checksum='NONE'", "SET @binlogd_add_checksums=1"], "needs @master_binlog_checksum"),
    (["SET @master_binlog_checksum='CRC32'", "SET @binlogd_add_checksums='yes'"],
     "Variable 'binlogd_add_checksums' can't be set to the value of 'yes' (0 or 1)"),
    (["SET @master_binlog_checksum='CRC32'", "SET @binlogd_add_checksums=2"], "to the value of '2'"),
])
def test_bad_add_checksums(binlogd, twins, session: list[str], text: str) -> None:
    """Bad @binlogd_add_checksums: a clear 1236 before any event, and binlogd keeps serving."""
    a = binlogd.serve(twins[1])
    cap = _dump(a, session)
    assert cap.error is not None and cap.error[0] == 1236 and text in cap.error[1], cap.error
    assert len(cap.packets) == 1
    assert _dump(a, ["SET @master_binlog_checksum='CRC32'", "SET @binlogd_add_checksums=0"]).end == "EOF"


@pytest.mark.parametrize("value", ["'FOO'", "''", "1", "NULL", "'none'", "'NON'"])
def test_bad_master_binlog_checksum_as_mariadb(binlogd, mariadb, twins, value: str) -> None:
    """@master_binlog_checksum with a value that is no algorithm: what MariaDB 10.11 answers, byte for byte."""
    files = [twins[0] / "mysql-bin.000001"]
    real = mariadb.primary_from_binlogs("bad", 1, files)
    ours = binlogd.serve(twins[0], ["--compat", "mariadb"])
    st = [f"SET @master_binlog_checksum={value}", "SET @mariadb_slave_capability=4"]
    want, got = _dump(real, st, 4, "mysql-bin.000001"), _dump(ours, st, 4, "mysql-bin.000001")
    # the first file only (MariaDB's own file follows): everything up to the first real ROTATE/end
    n = len(_boundaries(twins[0] / "mysql-bin.000001")) + 1
    assert [p.payload for p in got.packets[:n]] == [p.payload for p in want.packets[:n]]


def test_mariadb_binlog_reads_transcoded_stream(binlogd, twins, tmp_path: Path) -> None:
    """mariadb-binlog -R (checksum-aware: it sets @master_binlog_checksum='NONE', so binlogd sends CRC32 files as
    stored) prints the same from binlogd serving the CRC32 twin as it prints reading that file locally. It cannot
    be made non-aware nor set @binlogd_add_checksums (it has no --init-command), so the transcoded streams of the
    raw client are written back as files: the stripped one is the NONE twin byte for byte, the added one the CRC32
    twin, and mariadb-binlog --verify-binlog-checksum prints each as it prints its twin."""
    crc_dir, none_dir = twins
    a = binlogd.serve(crc_dir)
    exe = find_binary("mariadb-binlog")
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        remote = subprocess.run([exe, "-R", "-h", a.host, "-P", str(a.port), "-uroot", name], capture_output=True,
                                text=True, timeout=60, check=True).stdout
        local = subprocess.run([exe, str(crc_dir / name)], capture_output=True, text=True, timeout=60,
                               check=True).stdout
        assert "CRC32 0x" in local and _body(remote) == _body(local)
    for server, session, twin in ((a, NON_AWARE, none_dir), (binlogd.serve(none_dir), ADD, crc_dir)):
        cap = _dump(server, session, capability=4)
        files: list[bytearray] = []
        for ev in cap.events:
            if ev[4] == 4 and parse_header(ev).log_pos == 0:
                files.append(bytearray(b"\xfebin"))
            else:
                files[-1] += ev
        for i, data in enumerate(files, 1):
            orig = (twin / f"mysql-bin.00000{i}").read_bytes()
            data[4 + 17] = orig[4 + 17]  # the FDE's in-use flag (cleared when sent)
            assert bytes(data) == orig, (twin, i)
            out = tmp_path / f"{twin.name}.00000{i}"
            out.write_bytes(data)
            got_text = subprocess.run([exe, "-c", str(out)], capture_output=True, text=True, timeout=60,
                                      check=True).stdout
            want_text = subprocess.run([exe, "-c", str(twin / f"mysql-bin.00000{i}")], capture_output=True,
                                       text=True, timeout=60, check=True).stdout
            assert got_text == want_text
            assert ("CRC32 0x" in got_text) == (twin == crc_dir)


def _body(text: str) -> list[str]:
    """mariadb-binlog output without the fake ROTATE a remote read prints first (and its `# at 4`)."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if "end_log_pos 0 " in ln and "Rotate to" in ln:
            return lines[:i] + lines[i + 2 :]
    return lines


def _big_twin(d: Path, checksum: str, blobs: list[int]) -> BinlogBuilder:
    b = BinlogBuilder(d, checksum=checksum, timestamp=TS)  # type: ignore[arg-type]
    b.statement("CREATE TABLE db.big (id INT PRIMARY KEY, b LONGBLOB)", "db")
    for i, n in enumerate(blobs):
        with b.transaction() as t:
            t.insert("db", "big", ["id INT", "b LONGBLOB"], [(i, b"x" * n)])
    b.close()
    return b


def test_events_across_the_16mib_packet_limit(binlogd, binlogd_test_dir: Path) -> None:
    """Rows events of 17 MiB, and one whose packet is 0xFFFFFD bytes without its CRC and 0x1000001 with it: the
    stage re-frames them (one packet more or less) and both directions still equal the twin byte for byte."""
    probe = _big_twin(binlogd_test_dir / "probe", "NONE", [1000])
    rows_len = next(e.end - e.start for e in probe.written if e.type_code == 23)
    edge = 1000 + (0xFFFFFF - 3 - rows_len)  # the NONE event is 0xFFFFFF - 3 bytes, its packet 0xFFFFFD
    crc_dir, none_dir = binlogd_test_dir / "big-crc", binlogd_test_dir / "big-none"
    _big_twin(crc_dir, "CRC32", [17 << 20, edge])
    twin = _big_twin(none_dir, "NONE", [17 << 20, edge])
    assert 0xFFFFFF - 3 in [e.end - e.start for e in twin.written]
    a, b = binlogd.serve(crc_dir), binlogd.serve(none_dir)
    got, want = _dump(a, NON_AWARE, capability=4), _dump(b, ["SET @master_binlog_checksum='NONE'"], capability=4)
    assert got.end == want.end == "EOF" and _fde_slot_masked(got) == _fde_slot_masked(want)
    got, want = _dump(b, ADD, capability=4), _dump(a, ADD[:1], capability=4)
    assert got.end == want.end == "EOF" and got.raw == want.raw
    assert len(got.packets) == len(_dump(b, ADD[:1], capability=4).packets) + 1  # the edge event: 1 packet -> 2


def test_corrupt_crc_is_not_stripped_silently(binlogd, twins) -> None:
    """Stripping a CRC that fails would hide the damage from the client: binlogd stops with MariaDB's text for a
    checksum failure (master_verify_checksum) at the event's coordinates; an aware client gets it as stored."""
    crc_dir, _ = twins
    path = crc_dir / "mysql-bin.000001"
    data = bytearray(path.read_bytes())
    ev = next(e for e in scan(data).events if e.type_code == 2 and b"UPDATE" in data[e.pos : e.end])
    data[ev.end - 10] ^= 0xFF  # inside the statement text
    path.write_bytes(bytes(data))
    a = binlogd.serve(crc_dir)
    cap = _dump(a, NON_AWARE, capability=4)
    assert cap.error == (1236, f"event read from binlog did not pass crc check; the first event 'mysql-bin.000001' "
                               f"at 4, the last event read from 'mysql-bin.000001' at {ev.pos}, the last byte read "
                               f"from 'mysql-bin.000001' at {ev.end}."), cap.error
    assert all(parse_header(e).log_pos < ev.end for e in cap.events[2:])  # nothing from the damaged event on
    aware = _dump(a, ["SET @master_binlog_checksum='CRC32'"], capability=4)
    assert aware.end == "EOF" and any(e == bytes(data[ev.pos : ev.end]) for e in aware.events)


@pytest.mark.parametrize("state", ["0-1-2", "0-1-5", "0-1-7"])
def test_gtid_connect_strip_equals_none_twin(binlogd, twins, state: str) -> None:
    """A GTID connect of a non-aware client: the skipped groups, the fake GTID_LIST at the start position and the
    rest, as the NONE twin sends them (the GTID_LIST's log_pos in the stream's coordinates)."""
    crc_dir, none_dir = twins
    a, b = binlogd.serve(crc_dir), binlogd.serve(none_dir)
    st = [f"SET @slave_connect_state='{state}'", "SET @mariadb_slave_capability=4"]
    got = raw_dump(a.host, a.port, st, b"\x12" + struct.pack("<IHI", 4, 1, 9), idle_timeout=5.0)
    want = raw_dump(b.host, b.port, ["SET @master_binlog_checksum='NONE'", *st],
                    b"\x12" + struct.pack("<IHI", 4, 1, 9), idle_timeout=5.0)
    fake_list = any(e[4] == 163 and parse_header(e).flags & 0x20 for e in want.events)
    assert want.end == "EOF" and fake_list == (state != "0-1-5")  # 0-1-5 ends file 1: file 2 starts right there
    assert _fde_slot_masked(got) == _fde_slot_masked(want)


def test_live_non_aware_client_resumes_where_it_saw(binlogd) -> None:
    """A blocking non-aware client of a standalone binlogd (CRC32) while clients write and the binlog rotates: no
    CRCs, positions that chain, heartbeats at the stream's end; reconnecting at any position it saw resumes at
    the very next event it had received."""
    import threading

    server = binlogd.standalone()
    server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)")
    st = ["SET @master_heartbeat_period=300000000"]
    cmd = b"\x12" + struct.pack("<IHI", 4, 0, 41) + b"mysql-bin.000001"
    box: dict[str, DumpCapture] = {}
    th = threading.Thread(target=lambda: box.setdefault("c", raw_dump(server.host, server.port, st, cmd,
                                                                      idle_timeout=5.0, max_seconds=5.0)))
    th.start()
    for i in range(20):
        server.execute(f"INSERT INTO d.t VALUES ({i})" + ("; FLUSH BINARY LOGS" if i in (7, 13) else ""))
    th.join()
    cap = box["c"]
    evs = [(parse_header(e), e) for e in cap.events]
    assert not any(crc_ok(e) for h, e in evs if h.type_code != 15)
    file, seen = "", []  # (file, stream position after the event, the events that followed it)
    prev = None
    for i, (h, e) in enumerate(evs):
        if h.type_code == 4 and h.log_pos == 0:
            file, prev = e[27:].decode(), None
            continue
        if h.type_code == 27:
            assert prev is not None and h.log_pos == prev  # a heartbeat: where the stream stands
            continue
        if prev is not None:
            assert h.log_pos == prev + h.event_length, (file, h)
        prev = h.log_pos
        if h.type_code != 15 and h.type_code != 4:
            seen.append((file, h.log_pos, [x for g, x in evs[i + 1 :] if g.type_code not in (4, 15, 27)]))
    assert len({f for f, _, _ in seen}) == 3 and len(seen) > 40
    for file, pos, after in seen[::7]:
        again = _dump(server, NON_AWARE, pos, file)
        assert again.end == "EOF", (file, pos, again.error)
        assert [e for e in again.events if e[4] not in (4, 15, 27)] == after, (file, pos)


@pytest.mark.parametrize("session,text", [
    (["SET @rpl_semi_sync_slave=1"], "does not transcode checksums for a semi-sync replica"),
    (["SET @binlogd_replicate_rewrite_db='db1->db9'"], "does not transcode checksums for a replica with "
                                                       "replicate-rewrite-db"),
])
def test_transcoding_refused_where_the_stage_cannot_rewrite(binlogd, twins, session: list[str], text: str) -> None:
    """The stage rewrites plain event packets of the file's lengths: a non-aware client that also asked for semi-sync
    headers or a database rename gets a clear 1236 before any event (not a misframed stream); the same client that
    says it reads CRC32 is served."""
    a = binlogd.serve(twins[0])
    cap = _dump(a, session)
    assert cap.error is not None and cap.error[0] == 1236 and text in cap.error[1], cap.error
    assert len(cap.packets) == 1
    served = _dump(a, ["SET @master_binlog_checksum='CRC32'", *session])
    assert served.end == "EOF", served.error
