"""`binlogd demo-dir`: the demo binlogs are valid, equal what a real MariaDB 10.11 writes for the same
session, replicate correctly from `binlogd serve`, and are readable by mariadb-binlog.

The byte comparison (test_demo_bytes_equal_real_mariadb) runs server.demo.DEMO_SESSION on a private
10.11 (`--log-bin=mysql-bin --binlog-format=STATEMENT`, server_id 1) and compares every event after
normalising only these fields, on both sides:

* header timestamp (wall clock);
* FDE server_version (Debian's binary says '10.11.19-MariaDB-0+deb12u1-log', the demo
  '10.11.19-MariaDB-log': the same NUL-padded 50-byte field, so no length or position changes),
  FDE created (the server start time: compared as zero / non-zero only) and the FDE in-use flag 0x01
  (the real server's active file has it while it runs; the demo files are complete, so it is clear);
* Query thread_id (connection id) and exec_time;
* Xid event values and the Q_XID status variable's value (query ids of a server-global counter that
  other connections, such as the test's own polling, also advance; the demo's are checked separately
  to be increasing);
* the CRC32 (it covers the fields above; both sides' CRCs are verified on their own).

Everything else must be byte-identical: event order, types, lengths, log_pos, server_id, header flags,
GTID bodies (seq_no, domain, flags2), GTID_LIST and BINLOG_CHECKPOINT bodies, every status variable
(codes, order, values), db names, statement texts, USER_VAR and ROTATE bodies.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.constants import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    Q_CATALOG_NZ_CODE,
    Q_CHARSET_CODE,
    Q_FLAGS2_CODE,
    Q_SQL_MODE_CODE,
    Q_XID,
    QUERY_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import (
    FormatDescriptionBody,
    GtidBody,
    GtidListBody,
    QueryBody,
    RotateBody,
    XidBody,
    iter_binlog,
    parse_event,
)
from binlogd.server.cli import main
from binlogd.server.demo import (
    DEMO_ROWS_FLAGGED,
    DEMO_ROWS_UNFLAGGED,
    DEMO_SERVER_VERSION,
    FlushBinaryLogs,
    demo_files,
    demo_session_sql,
    write_demo_dir,
)

from tests.harness import Binlogd, MariaDB

BINLOGS = ["mysql-bin.000001", "mysql-bin.000002"]
VERSION_OFFSET = HEADER_LEN + 2  # FDE server_version: 50 bytes
CREATED_OFFSET = VERSION_OFFSET + 50  # FDE create_timestamp: u32


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo") / "binlogs"
    sizes, written = write_demo_dir(d)
    assert written and list(sizes) == [*BINLOGS, "mysql-bin.index"]
    return d


def _events(data: bytes) -> list[tuple[int, bytes]]:
    return list(iter_binlog(data))


# --- (1) valid files -----------------------------------------------------------------------------------


def test_demo_files_are_valid_binlogs(demo_dir: Path) -> None:
    assert (demo_dir / "mysql-bin.index").read_text() == "./mysql-bin.000001\n./mysql-bin.000002\n"
    assert demo_files() == demo_files(), "the generator must be deterministic"
    all_xids: list[int] = []
    for i, name in enumerate(BINLOGS):
        data = (demo_dir / name).read_bytes()
        rep = verify(data)
        assert (rep.crc_failures, rep.torn_bytes, rep.end, rep.checksum_alg) == ([], 0, len(data), 1)
        res = scan(data)
        assert [r.type_code for r in res.events[:3]] == [FORMAT_DESCRIPTION_EVENT, GTID_LIST_EVENT,
                                                         BINLOG_CHECKPOINT_EVENT]
        for ref in res.events:
            assert ref.log_pos == ref.end and ref.server_id == 1
        evs = [parse_event(ev, 1, verify_crc=True).body for _, ev in _events(data)]
        fde, gtid_list, last = evs[0], evs[1], evs[-1]
        assert isinstance(fde, FormatDescriptionBody) and isinstance(gtid_list, GtidListBody)
        assert not data[4 + 17] & LOG_EVENT_BINLOG_IN_USE_F
        assert fde.server_version == DEMO_SERVER_VERSION
        assert (fde.create_timestamp != 0) == (i == 0)  # the first binlog after the server start
        for body in evs:  # Xid events and the Q_XID of DDL, in binlog order
            if isinstance(body, XidBody):
                all_xids.append(body.xid)
            elif isinstance(body, QueryBody) and isinstance(xid := body.status_vars.get(Q_XID), int):
                all_xids.append(xid)
        if i == 0:
            assert gtid_list.gtids == ()
            assert isinstance(last, RotateBody) and (last.position, last.next_file) == (4, b"mysql-bin.000002")
        else:
            assert gtid_list.gtids == ((0, 1, 7),)
            assert isinstance(last, XidBody)
    assert all_xids == sorted(set(all_xids)), "xids must increase"


# --- (2) the same bytes as a real MariaDB 10.11 ------------------------------------------------------------

_STATUS_SIZES = {Q_FLAGS2_CODE: 4, Q_SQL_MODE_CODE: 8, Q_CHARSET_CODE: 6, Q_XID: 8}


def _normalise(event: bytes) -> bytes:
    """The event without its CRC and with the fields listed in the module docstring neutralised."""
    ev = bytearray(event[:-4])
    ev[0:4] = b"\0\0\0\0"
    kind = ev[4]
    if kind == FORMAT_DESCRIPTION_EVENT:
        ev[17] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
        ev[VERSION_OFFSET:CREATED_OFFSET] = DEMO_SERVER_VERSION.encode().ljust(50, b"\0")
        created = int.from_bytes(ev[CREATED_OFFSET:CREATED_OFFSET + 4], "little")
        ev[CREATED_OFFSET:CREATED_OFFSET + 4] = (1 if created else 0).to_bytes(4, "little")
    elif kind == XID_EVENT:
        ev[HEADER_LEN:HEADER_LEN + 8] = bytes(8)
    elif kind == QUERY_EVENT:
        body = HEADER_LEN
        ev[body:body + 8] = bytes(8)  # thread_id, exec_time
        status_len = int.from_bytes(ev[body + 11:body + 13], "little")
        p, end = body + 13, body + 13 + status_len
        while p < end:
            code = ev[p]
            if code == Q_CATALOG_NZ_CODE:
                p += 2 + ev[p + 1]
                continue
            size = _STATUS_SIZES.get(code)
            assert size is not None, f"unexpected status variable {code} in {parse_event(event, 1)}"
            if code == Q_XID:
                ev[p + 1:p + 1 + size] = bytes(size)
            p += 1 + size
        assert p == end
    return bytes(ev)


def _run_session_on_real_mariadb(m: MariaDB) -> None:
    conn = m.connect(charset="utf8mb4", collation="utf8mb4_general_ci")
    try:
        with conn.cursor() as cur:
            for sql in demo_session_sql():
                cur.execute(sql)
                if sql == FlushBinaryLogs().sql:
                    # as the demo records it: the new file's own checkpoint is written (asynchronously,
                    # once InnoDB made the old file's commits durable) before the next statement
                    def two_checkpoints() -> bool:
                        res = scan((m.datadir / BINLOGS[1]).read_bytes())
                        return sum(r.type_code == BINLOG_CHECKPOINT_EVENT for r in res.events) >= 2

                    m.wait_until(two_checkpoints, timeout=10, interval=0.05, message="second binlog checkpoint")
    finally:
        conn.close()


def test_demo_bytes_equal_real_mariadb(mariadb: Callable[..., MariaDB], demo_dir: Path) -> None:
    real = mariadb("oracle", 1, "--log-bin=mysql-bin", "--binlog-format=STATEMENT",
                   "--innodb-flush-log-at-trx-commit=1")
    _run_session_on_real_mariadb(real)
    logs = real.binary_logs()
    assert [f for f, _ in logs] == BINLOGS
    # read while the server runs (a shutdown would append a STOP event); sizes as the server reports them
    real_files = {f: (real.datadir / f).read_bytes()[:size] for f, size in logs}
    assert real.query("SELECT @@version")[0][0].startswith("10.11.")

    for name in BINLOGS:
        mine = _events((demo_dir / name).read_bytes())
        theirs = _events(real_files[name])
        for label, evs in (("demo", mine), ("real", theirs)):
            assert all(crc_ok(ev) for _, ev in evs), f"{label} {name}: bad CRC"
        assert [(p, ev[4]) for p, ev in mine] == [(p, ev[4]) for p, ev in theirs], f"{name}: event list"
        for (pos, a), (_, b) in zip(mine, theirs, strict=True):
            assert _normalise(a) == _normalise(b), (
                f"{name} at {pos}:\n demo {parse_event(a, 1)}\n real {parse_event(b, 1)}")
    # and the file sizes (the replicas' end positions) are the same
    assert [len((demo_dir / n).read_bytes()) for n in BINLOGS] == [s for _, s in logs]


# --- (3) real replicas of `binlogd serve` ---------------------------------------------------------------------


def test_real_replicas_of_demo_dir(mariadb: Callable[..., MariaDB], binlogd: Callable[..., Binlogd],
                                   demo_dir: Path) -> None:
    server = binlogd(["--binlog-dir", str(demo_dir), "--server-id", "100"])
    with ThreadPoolExecutor(2) as pool:
        fut_r = pool.submit(mariadb, "replicate", 2)
        fut_f = pool.submit(mariadb, "filter", 3)
        rep, flt = fut_r.result(), fut_f.result()
    rep.set_skip_mode("REPLICATE")
    flt.set_skip_mode("FILTER_ON_MASTER")
    rep.change_master(server.host, server.port, use_gtid="no", log_file=BINLOGS[0], log_pos=4)
    flt.change_master(server.host, server.port, use_gtid="slave_pos")
    rep.start_slave()
    flt.start_slave()
    end = len((demo_dir / BINLOGS[-1]).read_bytes())
    for r in (rep, flt):
        st = r.wait_slave_pos(BINLOGS[-1], end, timeout=20)
        assert (st["Slave_IO_Running"], st["Slave_SQL_Running"]) == ("Yes", "Yes"), MariaDB.format_slave_status(st)

    def rows(r: MariaDB) -> list[tuple[int, str]]:
        return [(int(i), str(n)) for i, n in r.query("SELECT id, name FROM demo.items ORDER BY id")]

    def has_flagged_table(r: MariaDB) -> bool:
        return bool(r.query("SELECT COUNT(*) FROM information_schema.tables "
                            "WHERE table_schema='demo' AND table_name='flagged'")[0][0])

    assert rows(rep) == sorted([*DEMO_ROWS_UNFLAGGED, *DEMO_ROWS_FLAGGED])
    assert has_flagged_table(rep)
    assert rows(flt) == list(DEMO_ROWS_UNFLAGGED)
    assert not has_flagged_table(flt)
    assert flt.gtid_slave_pos() == "0-1-8"
    time.sleep(0.2)  # still there a moment later, threads still running
    for r in (rep, flt):
        st = r.slave_status()
        assert (st["Slave_IO_Running"], st["Slave_SQL_Running"]) == ("Yes", "Yes")
        assert (int(st["Read_Master_Log_Pos"]), int(st["Exec_Master_Log_Pos"])) == (end, end)


# --- (4) mariadb-binlog ---------------------------------------------------------------------------------------


def test_mariadb_binlog_reads_demo_files(mariadb_binaries: dict[str, str], demo_dir: Path) -> None:
    proc = subprocess.run([mariadb_binaries["mariadb-binlog"], *(str(demo_dir / n) for n in BINLOGS)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    out = proc.stdout.splitlines()

    def line_of(text: str) -> int:
        hits = [i for i, line in enumerate(out) if text in line]
        assert len(hits) == 1, f"{text!r} found {len(hits)} times"
        return hits[0]

    on, off = line_of("/*!50521 SET skip_replication=1*/"), line_of("/*!50521 SET skip_replication=0*/")
    gtid = {n: line_of(f"GTID 0-1-{n} ") for n in range(1, 9)}
    # the flagged groups are GTIDs 5 (transaction) and 6 (DDL): the SET comes right before 5's header
    assert gtid[4] < on < gtid[5] and gtid[6] < off < gtid[7]
    assert "INSERT INTO demo.items VALUES (3,@fruit)" in proc.stdout and "SET @`fruit`:=_utf8mb4" in proc.stdout
    assert "Rotate to mysql-bin.000002  pos: 4" in proc.stdout
    # the header flags as mariadb-binlog --hexdump shows them: `|08 80` on the 2 flagged GTIDs
    hexdump = subprocess.run([mariadb_binaries["mariadb-binlog"], "--hexdump", str(demo_dir / BINLOGS[0])],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    header_rows = [line for line in hexdump.splitlines() if line.startswith("#") and line.count("|") == 6]
    assert sum(row.endswith("|a2   |01 00 00 00 |2a 00 00 00 |" + row[-18:-6] + "|08 80") for row in header_rows) == 2


def test_flag_bits_in_demo(demo_dir: Path) -> None:
    """Flagged groups: GTID 0x8008, every other event of the group 0x8000; nothing else flagged."""
    evs = [parse_event(ev, 1) for _, ev in _events((demo_dir / BINLOGS[0]).read_bytes())]
    flagged_seq: set[int] = set()
    seq = 0
    for e in evs:
        if isinstance(e.body, GtidBody):
            seq = e.body.seq_no
            if e.header.flags & LOG_EVENT_SKIP_REPLICATION_F:
                assert e.header.flags == 0x8008
                flagged_seq.add(seq)
        elif e.header.type_code in (QUERY_EVENT, XID_EVENT) and seq in flagged_seq:
            assert e.header.flags & LOG_EVENT_SKIP_REPLICATION_F
        else:
            assert not e.header.flags & LOG_EVENT_SKIP_REPLICATION_F
    assert flagged_seq == {5, 6}


# --- (5) the command ------------------------------------------------------------------------------------------


def test_demo_dir_refuses_non_empty_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "binlogs"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    assert main(["demo-dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--force" in err and str(d) in err
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"], "nothing may be written on refusal"

    # the console entry point exits with 2 as well
    proc = subprocess.run([sys.executable, "-m", "binlogd.server.cli", "demo-dir", str(d)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2 and "refusing to write the demo binlogs" in proc.stderr

    (d / "mysql-bin.000007").write_bytes(b"stale")
    assert main(["demo-dir", "--force", str(d)]) == 0
    assert sorted(p.name for p in d.iterdir()) == [*BINLOGS, "mysql-bin.index", "notes.txt"]
    assert all((d / n).read_bytes() == data for n, data in demo_files().items())


def test_demo_dir_new_dir_and_rerun(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "a" / "b"
    assert main(["demo-dir", str(d)]) == 0
    assert "wrote" in capsys.readouterr().out
    # `make run` runs demo-dir every time: a directory holding exactly the demo files is accepted unchanged
    assert main(["demo-dir", str(d)]) == 0
    assert "unchanged" in capsys.readouterr().out
    (d / BINLOGS[1]).write_bytes(b"\xfebin")  # but not a modified one
    assert main(["demo-dir", str(d)]) == 2
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["demo-dir", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
