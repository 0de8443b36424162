"""Real clients against binlogd, each compared with a real MariaDB 10.11 primary serving the same files.

No mocks: the real `mariadb-binlog` (raw and text, with and without --stop-never), python-mysql-replication
1.0.17's BinLogStreamReader (and its second "ctl" connection), the `mariadb` command-line client and a real
MariaDB replica (for SHOW SLAVE HOSTS).

The oracle: `make_primary_from_binlogs` starts a real mariadbd over copies of the same binlog files. It adds
one file of its own at startup (Format_desc, Gtid_list, Binlog_checkpoint); everything that comes from that
extra file is removed from its answers before comparing, nothing else.

Two sets of files are served:
* the project's oracle binlogs (shared/oracle/mariadb-10.11/dump/mysql-bin.000001/2; the second one still has
  the FDE "in use" flag);
* a larger set generated here by a real primary: four files (rotation), ROW and STATEMENT transactions, some
  with @@skip_replication=1, and one 20 MiB row, so one Write_rows event is larger than 16 MiB and must be
  split over several MySQL packets. The primary is killed with SIGKILL at the end, so its last file keeps the
  FDE in-use flag too.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.commands import build_binlog_dump, build_register_slave
from binlogd.protocol.gtid import peek_gtid
from pymysqlreplication import BinLogStreamReader

from tests.dumpclient import raw_dump
from tests.harness import Binlogd, MariaDB, find_binary, make_primary_from_binlogs, wait_until
from tests.oracle_data import ORACLE

ORACLE_FILES = ("mysql-bin.000001", "mysql-bin.000002")
FDE_FLAGS_OFFSET = 4 + 17  # low byte of the first event's flags in a binlog file
LOG_EVENT_BINLOG_IN_USE_F = 0x01
GTID_EVENT = 162
MAX_PACKET = 0xFFFFFF
REPL_SESSION = ["SET @master_binlog_checksum='CRC32'", "SET @mariadb_slave_capability=4"]
SKIP_ON = "/*!50521 SET skip_replication=1*//*!*/;"
SKIP_OFF = "/*!50521 SET skip_replication=0*//*!*/;"
BIG_ROW = 20 * 1024 * 1024

# python-mysql-replication 1.0.17 opens its ctl connection with pymysql's deprecated `db=` argument
pytestmark = pytest.mark.filterwarnings("ignore:'db' is deprecated:DeprecationWarning")

GENERATE = f"""
CREATE DATABASE g;
CREATE TABLE g.t (id INT PRIMARY KEY, v LONGBLOB, n INT) ENGINE=InnoDB;
INSERT INTO g.t VALUES (1, 'row one', 1), (2, 'row two', 2);
SET skip_replication=1;
INSERT INTO g.t VALUES (3, 'skipped row', 3);
UPDATE g.t SET n=30 WHERE id=3;
SET skip_replication=0;
FLUSH BINARY LOGS;
SET SESSION binlog_format=STATEMENT;
INSERT INTO g.t VALUES (4, 'statement format', 4);
UPDATE g.t SET n=n+1 WHERE id<3;
SET skip_replication=1;
INSERT INTO g.t VALUES (5, 'skipped statement', 5);
CREATE TABLE g.skipped_ddl (x INT);
SET skip_replication=0;
SET SESSION binlog_format=ROW;
BEGIN;
INSERT INTO g.t VALUES (6, 'multi-statement trx', 6);
DELETE FROM g.t WHERE id=4;
COMMIT;
FLUSH BINARY LOGS;
INSERT INTO g.t VALUES (100, REPEAT('x', {BIG_ROW}), 100);
FLUSH BINARY LOGS;
SET skip_replication=1;
INSERT INTO g.t VALUES (8, 'skipped in the last file', 8);
SET skip_replication=0;
INSERT INTO g.t VALUES (7, 'in the last file', 7);
"""


# ---- the served file sets ---------------------------------------------------------------------------------


@dataclass
class Served:
    """One set of binlog files, served by a real primary and by binlogd (default policy and --compat mariadb)."""

    dir: Path
    files: list[str]
    real: MariaDB
    extra: list[str]  # files only the real primary has (the one it opened at startup)
    servers: dict[str, Binlogd] = field(default_factory=dict)

    def data(self, name: str) -> bytes:
        return (self.dir / name).read_bytes()

    def check_logs(self) -> None:
        for name, s in self.servers.items():
            log = s.log_text()
            assert "Traceback" not in log, f"traceback in binlogd ({name}) log:\n{log[log.index('Traceback') - 300:]}"


def _stop_all(served: Served) -> None:
    for s in served.servers.values():
        with contextlib.suppress(Exception):
            s.stop()
    with contextlib.suppress(Exception):
        served.real.stop()


def _serve(base: Path, name: str, d: Path, files: list[str], mariadb_base: Path,
           real_args: tuple[str, ...] = ()) -> Served:
    real = make_primary_from_binlogs(base, f"{name}-real", 1, [d / f for f in files],
                                     extra_args=real_args, template_dir=mariadb_base / "_template")
    extra = [n for n, _ in real.binary_logs() if n not in files]
    assert extra, "the real primary was expected to open a file of its own"
    served = Served(d, files, real, extra)
    try:
        for policy in ("binlogd", "mariadb"):
            served.servers[policy] = Binlogd.start(
                ["--binlog-dir", str(d), "--server-id", "1", "--compat", policy],
                log_path=base / f"{name}-binlogd-{policy}.log")
    except BaseException:
        _stop_all(served)
        raise
    return served


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path,
           mariadb_binaries: dict[str, str]) -> Iterator[Served]:
    if not ORACLE.is_dir():
        pytest.fail(f"oracle binlogs missing at {ORACLE}")
    d = tmp_path_factory.mktemp("oracle-binlogs")
    for n in ORACLE_FILES:
        shutil.copyfile(ORACLE / n, d / n)
    base = _subdir(mariadb_base, "clients-oracle")
    served = _serve(base, "o", d, list(ORACLE_FILES), mariadb_base)
    yield served
    _stop_all(served)


def _subdir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir(exist_ok=True)
    return d


def _generate(base: Path, mariadb_base: Path, out: Path) -> list[str]:
    gen = MariaDB.start(base, "gen", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", "--max-allowed-packet=1G",
                        template_dir=mariadb_base / "_template")
    try:
        gen.execute(GENERATE)
        names = [n for n, _ in gen.binary_logs()]
        last = names[-1]

        def checkpointed() -> bool:  # the Binlog_checkpoint of the last rotation is written asynchronously
            rows = gen.query(f"SHOW BINLOG EVENTS IN '{last}'")
            return any(r[2] == "Binlog_checkpoint" and r[5] == last for r in rows)

        wait_until(checkpointed, 10, message="Binlog_checkpoint in the last file")
    finally:
        gen.kill9()  # a crash: the last file keeps LOG_EVENT_BINLOG_IN_USE_F in its FDE
    for n in names:
        shutil.copyfile(gen.datadir / n, out / n)
    return names


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path,
              mariadb_binaries: dict[str, str]) -> Iterator[Served]:
    base = _subdir(mariadb_base, "clients-gen")
    d = tmp_path_factory.mktemp("generated-binlogs")
    files = _generate(base, mariadb_base, d)
    assert len(files) == 4, files
    assert (d / files[-1]).read_bytes()[FDE_FLAGS_OFFSET] & LOG_EVENT_BINLOG_IN_USE_F
    assert max(e.length for e in scan((d / files[2]).read_bytes()).events) > MAX_PACKET
    served = _serve(base, "g", d, files, mariadb_base, real_args=("--max-allowed-packet=1G",))
    yield served
    _stop_all(served)


# ---- helpers ----------------------------------------------------------------------------------------------


def _bin(name: str) -> str:
    path = find_binary(name) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found")
    return path


def mariadb_binlog(port: int, *args: str, cwd: Path | None = None, timeout: float = 60
                   ) -> subprocess.CompletedProcess[bytes]:
    cmd = [_bin("mariadb-binlog"), "--no-defaults", "--read-from-remote-server", "--host=127.0.0.1",
           f"--port={port}", "--user=root", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, check=False)


def mariadb_cli(port: int, sql: str) -> tuple[int, str, str]:
    res = subprocess.run([_bin("mariadb"), "--no-defaults", "-h127.0.0.1", f"-P{port}", "-uroot", "--batch",
                          "-e", sql], capture_output=True, text=True, timeout=30, check=False)
    return res.returncode, res.stdout, res.stderr


def without_in_use(data: bytes) -> bytes:
    """The file as a primary sends it: FDE flag 0x01 cleared (its CRC is computed with the flag clear)."""
    out = bytearray(data)
    out[FDE_FLAGS_OFFSET] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
    return bytes(out)


_FAKE_ROTATE = re.compile(r"^#\d{6}\s+\d{1,2}:\d\d:\d\d server id \d+\s+end_log_pos 0\b.*\tRotate to (\S+)\s+pos: \d+$")


def drop_files(text: str, names: list[str]) -> str:
    """mariadb-binlog text without the sections of `names` (each starts with `# at N` + a fake Rotate to it)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        m = _FAKE_ROTATE.match(line.rstrip("\n"))
        if m:
            skipping = m.group(1) in names
            if skipping and out and out[-1].startswith("# at "):
                out.pop()
        elif line.rstrip("\n") == "DELIMITER ;":  # the trailer after the last file
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out)


def flagged_gtids(served: Served) -> dict[str, bool]:
    """GTID -> whether its event carries LOG_EVENT_SKIP_REPLICATION_F (0x8000), from the served files."""
    out: dict[str, bool] = {}
    for name in served.files:
        data = served.data(name)
        for ev in scan(data).events:
            if ev.type_code == GTID_EVENT:
                d, s, n, _ = peek_gtid(data, ev.pos)
                out[f"{d}-{s}-{n}"] = bool(ev.flags & 0x8000)
    return out


def check_skip_replication_lines(text: str, flagged: dict[str, bool]) -> None:
    """Every GTID is printed under the skip_replication state its event has; the SET lines come first."""
    assert any(flagged.values()) and SKIP_ON in text
    state = False
    seen = 0
    for line in text.split("\n"):
        if line == SKIP_ON:
            state = True
        elif line == SKIP_OFF:
            state = False
        m = re.search(r"\tGTID (\d+-\d+-\d+)\b", line)
        if m and m.group(1) in flagged:
            assert state == flagged[m.group(1)], f"GTID {m.group(1)} printed with skip_replication={int(state)}"
            seen += 1
    assert seen == len(flagged), (seen, len(flagged))


@dataclass
class Packet:
    seq: int
    chunks: int
    payload: bytes


def reassemble(raw: bytes) -> list[Packet]:
    """Logical packets of a raw server->client stream; payloads of 0xFFFFFF continue in the next packet."""
    out: list[Packet] = []
    p, cur, first_seq, chunks, expect = 0, bytearray(), -1, 0, None
    while p + 4 <= len(raw):
        (w,) = struct.unpack_from("<I", raw, p)
        n, seq = w & 0xFFFFFF, w >> 24
        assert p + 4 + n <= len(raw), "stream ends inside a packet"
        if expect is not None:
            assert seq == expect, f"sequence id {seq}, expected {expect}"
        expect = (seq + 1) & 0xFF
        if chunks == 0:
            first_seq = seq
        cur += raw[p + 4 : p + 4 + n]
        chunks += 1
        p += 4 + n
        if n < MAX_PACKET:
            out.append(Packet(first_seq, chunks, bytes(cur)))
            cur, chunks = bytearray(), 0
    assert p == len(raw) and chunks == 0, "trailing bytes"
    return out


def is_fake_rotate_to(payload: bytes, name: str) -> bool:
    ev = payload[1:]
    return payload[:1] == b"\x00" and ev[4] == 4 and struct.unpack_from("<I", ev, 13)[0] == 0 and name.encode() in ev


# ---- mariadb-binlog --raw ---------------------------------------------------------------------------------


def _raw_copy(port: int, first: str, out: Path) -> dict[str, bytes]:
    out.mkdir()
    res = mariadb_binlog(port, "--raw", "--to-last-log", first, cwd=out)
    assert res.returncode == 0, res.stderr.decode()
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_raw_to_last_log_copies_are_identical(oracle: Served, policy: str, tmp_path: Path) -> None:
    got = _raw_copy(oracle.servers[policy].port, oracle.files[0], tmp_path / "binlogd")
    assert sorted(got) == oracle.files
    for name in oracle.files:
        served = oracle.data(name)
        assert got[name] == without_in_use(served), name
        assert verify(got[name]).crc_failures == []
    assert oracle.data("mysql-bin.000002")[FDE_FLAGS_OFFSET] & 1, "the oracle's 000002 should still be 'in use'"
    # and exactly what the real primary gives for the same files
    real = _raw_copy(oracle.real.port, oracle.files[0], tmp_path / "real")
    assert {n: real[n] for n in oracle.files} == got
    oracle.check_logs()


@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_raw_copy_of_generated_binlogs_with_a_20_mib_event(generated: Served, policy: str, tmp_path: Path) -> None:
    got = _raw_copy(generated.servers[policy].port, generated.files[0], tmp_path / "binlogd")
    assert sorted(got) == generated.files
    for name in generated.files:
        assert got[name] == without_in_use(generated.data(name)), name
    big = max(scan(got[generated.files[2]]).events, key=lambda e: e.length)
    assert big.length > MAX_PACKET
    real = _raw_copy(generated.real.port, generated.files[0], tmp_path / "real")
    assert all(real[n] == got[n] for n in generated.files)
    generated.check_logs()


@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_event_over_16_mib_is_split_into_packets_like_mariadb(generated: Served, policy: str) -> None:
    """The raw dump stream of the file holding the 20 MiB event: packet framing (0xFFFFFF chunks, rising
    sequence ids) checked, the event intact, and the whole stream identical to the real primary's."""
    name = generated.files[2]
    dump = build_binlog_dump(4, 1 | 2, 0, name)
    ours = raw_dump("127.0.0.1", generated.servers[policy].port, REPL_SESSION, dump, idle_timeout=10)
    theirs = raw_dump("127.0.0.1", generated.real.port, REPL_SESSION, dump, idle_timeout=10)
    assert ours.end == theirs.end == "EOF"
    mine, real = reassemble(ours.raw), reassemble(theirs.raw)
    data = generated.data(name)
    big = max(scan(data).events, key=lambda e: e.length)
    split = [p for p in mine if p.chunks > 1]
    assert len(split) == 1
    assert split[0].chunks == (big.length + 1) // MAX_PACKET + 1
    assert split[0].payload == b"\x00" + data[big.pos : big.end]
    # identical to MariaDB up to where it goes on with the file it created itself
    assert mine[-1].payload[:1] == b"\xfe"
    assert real[: len(mine) - 1] == mine[:-1]
    assert is_fake_rotate_to(real[len(mine) - 1].payload, generated.extra[0])
    generated.check_logs()


# ---- mariadb-binlog text ----------------------------------------------------------------------------------


TEXT_VARIANTS = [
    pytest.param((), id="first_file"),
    pytest.param(("--to-last-log",), id="to_last_log"),
    pytest.param(("--to-last-log", "-v", "--base64-output=decode-rows"), id="decode_rows"),
    pytest.param(("--start-position=873",), id="start_position"),
    pytest.param(("--start-position=0-1-5", "--to-last-log"), id="gtid_start_position"),
]


@pytest.mark.parametrize("args", TEXT_VARIANTS)
@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_text_matches_real_primary(oracle: Served, policy: str, args: tuple[str, ...]) -> None:
    ours = mariadb_binlog(oracle.servers[policy].port, *args, oracle.files[0])
    theirs = mariadb_binlog(oracle.real.port, *args, oracle.files[0])
    assert ours.returncode == theirs.returncode == 0, ours.stderr.decode()
    assert ours.stderr == theirs.stderr
    text = ours.stdout.decode()
    assert text == drop_files(theirs.stdout.decode(), oracle.extra)
    assert "Rotate to mysql-bin.000002" in text
    printed = _flagged_from(oracle, text)
    if "--to-last-log" in args and not any(a.startswith("--start-position") for a in args):
        assert printed == flagged_gtids(oracle)
    check_skip_replication_lines(text, printed)
    oracle.check_logs()


def _flagged_from(served: Served, text: str) -> dict[str, bool]:
    """The GTIDs a partial read printed."""
    printed = set(re.findall(r"\tGTID (\d+-\d+-\d+)\b", text))
    return {g: f for g, f in flagged_gtids(served).items() if g in printed}


@pytest.mark.parametrize("args", [pytest.param(("--to-last-log",), id="to_last_log"),
                                  pytest.param(("--to-last-log", "-v", "--base64-output=decode-rows"), id="decode")])
def test_text_of_generated_binlogs_matches_real_primary(generated: Served, args: tuple[str, ...]) -> None:
    ours = mariadb_binlog(generated.servers["binlogd"].port, *args, generated.files[0])
    theirs = mariadb_binlog(generated.real.port, *args, generated.files[0])
    assert ours.returncode == theirs.returncode == 0, ours.stderr.decode()
    text = ours.stdout.decode()
    assert text == drop_files(theirs.stdout.decode(), generated.extra)
    check_skip_replication_lines(text, flagged_gtids(generated))
    assert "INSERT INTO g.t VALUES (4, 'statement format', 4)" in text  # a statement-format event
    generated.check_logs()


def _stop_never(port: int, first: str, out: Path, done_marker: str, settle: float = 1.0) -> str:
    """`mariadb-binlog --stop-never` (unbuffered) until its output contains `done_marker` and has stopped
    growing for `settle` s; then it is killed (it never ends by itself)."""
    cmd = ["stdbuf", "-o0", _bin("mariadb-binlog"), "--no-defaults", "--read-from-remote-server",
           "--host=127.0.0.1", f"--port={port}", "--user=root", "--stop-never", "--to-last-log", first]
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        last_size, last_change = -1, time.monotonic()
        while True:
            assert proc.poll() is None, f"mariadb-binlog --stop-never exited ({proc.returncode}):\n{out.read_text()}"
            size = out.stat().st_size
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif done_marker in out.read_text() and time.monotonic() - last_change >= settle:
                break
            assert time.monotonic() < deadline, f"--stop-never output never settled:\n{out.read_text()[-2000:]}"
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait(10)
    return out.read_text()


@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_text_stop_never_matches_real_primary(oracle: Served, policy: str, tmp_path: Path) -> None:
    last_checkpoint = "\tBinlog checkpoint mysql-bin.000002"
    ours = _stop_never(oracle.servers[policy].port, oracle.files[0], tmp_path / "ours.txt", last_checkpoint)
    theirs = _stop_never(oracle.real.port, oracle.files[0], tmp_path / "theirs.txt",
                         f"\tBinlog checkpoint {oracle.extra[-1]}")
    assert ours == drop_files(theirs, oracle.extra)
    assert ours.rstrip().endswith(last_checkpoint.strip()), ours[-300:]
    check_skip_replication_lines(ours, flagged_gtids(oracle))
    # the blocking dump (server_id 1, flags 2) ended when the client was killed; binlogd noticed
    server = oracle.servers[policy]
    conn_id = re.findall(r"\[conn (\d+) sid 1 [^\]]*\] COM_BINLOG_DUMP [^\n]*flags=2 ", server.log_text())[-1]
    wait_until(lambda: re.search(rf"\[conn {conn_id} sid 1 [^\]]*\] dump ended", server.log_text()), 10,
               message="binlogd logging the end of the --stop-never dump")
    oracle.check_logs()


# ---- python-mysql-replication ----------------------------------------------------------------------------


CTL_CHECKED: dict[int, bool] = {}


def _check_ctl(stream: BinLogStreamReader) -> bool:
    """The library's second ("ctl") connection, opened for the table maps, is up and answers queries."""
    assert stream._BinLogStreamReader__connected_ctl  # type: ignore[attr-defined]
    ctl = stream._ctl_connection
    assert "MariaDB" in ctl.get_server_info()  # how the library tells MariaDB from MySQL
    with ctl.cursor() as cur:
        cur.execute("SHOW VARIABLES LIKE 'BINLOG_ROW_METADATA'")
        assert cur.fetchone()["Variable_name"].lower() == "binlog_row_metadata"
        cur.execute("SELECT 1 AS one")
        assert cur.fetchone() == {"one": 1}
    return True


def _stream(port: int, **kw: Any) -> tuple[list[tuple[Any, ...]], BinLogStreamReader]:
    """Every event as (file, class, timestamp, server_id, log_pos, header flags, event_size, rows/query).
    `limit` stops after that many events; `until_file_in` stops after the event that takes the stream into one
    of those files (a blocking stream's end)."""
    limit = kw.pop("limit", None)
    until_file_in: tuple[str, ...] = kw.pop("until_file_in", ())
    settings = {"host": "127.0.0.1", "port": port, "user": "root", "password": "", "read_timeout": 10}
    stream = BinLogStreamReader(connection_settings=settings, server_id=kw.pop("server_id", 101), is_mariadb=True,
                                verify_checksum=True, **kw)
    out: list[tuple[Any, ...]] = []
    for ev in stream:
        pk = ev.packet
        detail: Any = None
        if hasattr(ev, "rows"):
            if not CTL_CHECKED.get(id(stream)):
                CTL_CHECKED[id(stream)] = _check_ctl(stream)
            detail = (ev.schema, ev.table, ev.rows)
        elif hasattr(ev, "query"):
            detail = ev.query
        elif hasattr(ev, "gtid"):
            detail = ev.gtid
        out.append((stream.log_file, type(ev).__name__, pk.timestamp, pk.server_id, pk.log_pos, pk.flags,
                    pk.event_size, detail))
        if limit is not None and len(out) >= limit:
            break
        if stream.log_file in until_file_in:
            break
        if until_file_in and len(out) > 1 and _reconnected([out[0], out[-1]]):
            break  # the first event again: the library reconnected and started over (the caller fails on it)
    return out, stream


def _short(x: Any) -> str:
    r = repr(x)
    return r if len(r) < 300 else f"{r[:150]}...<{len(r)} chars>...{r[-100:]}"


def _first_difference(ours: list[tuple[Any, ...]], theirs: list[tuple[Any, ...]]) -> str:
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            fields = [f"  [{j}] binlogd={_short(x)} mariadb={_short(y)}"
                      for j, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
            return f"event {i} differs ({a[1]} at {a[0]}:{a[4]}):\n" + "\n".join(fields)
    n = min(len(ours), len(theirs))
    return f"event counts differ: binlogd {len(ours)}, mariadb {len(theirs)}; first extra: {_short((ours + theirs)[n])}"


def _reconnected(events: list[tuple[Any, ...]]) -> bool:
    """The library silently reconnects (and starts over) after error 2013; it shows as repeated events."""
    keys = [(e[0], e[1], e[4]) for e in events]
    return len(set(keys)) != len(keys)


def _real_stream(served: Served, **kw: Any) -> list[tuple[Any, ...]]:
    """The real primary's events of the served files, read as a *blocking* dump that stops at the rotation into
    the file the primary opened itself.

    Why not non-blocking, as binlogd is read: python-mysql-replication 1.0.17 sends its COM_BINLOG_DUMP with one
    byte more than the packet header declares (seen with tcpdump: length 14, 15 bytes follow). MariaDB never reads
    that byte, and it closes the connection right after a non-blocking dump's EOF; Linux answers a close with
    unread bytes with a RST, and the RST discards what the client has not read yet. With a 20 MiB event still being
    parsed that is the tail of the stream (error 2013, "Connection reset by peer"; the library reconnects and
    starts over), about one run in five on an idle machine, every run on a loaded one. A blocking dump is never
    closed by the primary, so nothing is lost; the events of the served files are the same. (binlogd reads what a
    dumping client sends, so its own non-blocking stream ends with a FIN, never a RST.)"""
    events, stream = _stream(served.real.port, **{**kw, "blocking": True, "until_file_in": tuple(served.extra)})
    stream.close()
    assert not _reconnected(events), "python-mysql-replication had to reconnect to the real primary"
    assert events and events[-1][0] in served.extra, "the real primary's stream ended before its own file"
    return events


def _compare_streams(served: Served, policy: str, **kw: Any) -> list[tuple[Any, ...]]:
    theirs = _real_stream(served, **kw)
    ours, s2 = _stream(served.servers[policy].port, **kw)
    s2.close()
    assert not _reconnected(ours), "python-mysql-replication had to reconnect to binlogd (error 2013)"
    theirs = [e for e in theirs if e[0] not in served.extra]
    assert ours == theirs, _first_difference(ours, theirs)
    if any(e[1].endswith("RowsEvent") for e in ours):
        assert CTL_CHECKED.get(id(s2)), "the ctl connection was not checked"
    served.check_logs()
    return ours


@pytest.mark.parametrize("policy", ["binlogd", "mariadb"])
def test_pymysqlrepl_nonblocking_reads_every_event(oracle: Served, policy: str) -> None:
    events = _compare_streams(oracle, policy, blocking=False)
    assert len(events) > 50 and {e[0] for e in events} == set(oracle.files)
    assert any(e[1] == "WriteRowsEvent" for e in events)


def test_pymysqlrepl_with_annotate_rows(oracle: Served) -> None:
    events = _compare_streams(oracle, "binlogd", blocking=False, annotate_rows_event=True)
    assert any(e[1] == "MariadbAnnotateRowsEvent" for e in events)


def test_pymysqlrepl_auto_position(oracle: Served) -> None:
    """GTID start (SET @slave_connect_state) in the middle of the first file."""
    events = _compare_streams(oracle, "binlogd", blocking=False, auto_position="0-1-5")
    gtids = [e[7] for e in events if e[1] == "MariadbGtidEvent"]
    assert gtids and gtids[0] == "0-1-6"


def test_pymysqlrepl_resume_from_file_and_position(oracle: Served) -> None:
    """is_mariadb=False style resume: COM_BINLOG_DUMP with file/pos (the library ignores them for MariaDB)."""
    kw: dict[str, Any] = {"blocking": False, "resume_stream": True, "log_file": "mysql-bin.000001",
                          "log_pos": 2075}
    settings = {"host": "127.0.0.1", "user": "root", "password": "", "read_timeout": 10}
    results = []
    for port in (oracle.real.port, oracle.servers["binlogd"].port):
        stream = BinLogStreamReader(connection_settings={**settings, "port": port}, server_id=102, **kw)
        try:
            results.append([(stream.log_file, type(ev).__name__, ev.packet.log_pos) for ev in stream])
        finally:
            stream.close()
    theirs_events = [e for e in results[0] if e[0] not in oracle.extra]
    assert results[1] == theirs_events
    assert results[1][0][1] == "RotateEvent" and any(e[2] > 2075 for e in results[1])
    oracle.check_logs()


def test_pymysqlrepl_blocking_with_report_slave(oracle: Served) -> None:
    """A blocking stream that registers itself (COM_REGISTER_SLAVE): every event arrives, the replica is
    listed by SHOW SLAVE HOSTS while it streams, and the server copes when the reader goes away."""
    expected, s0 = _stream(oracle.servers["binlogd"].port, blocking=False)
    s0.close()
    server = oracle.servers["binlogd"]
    events, stream = _stream(server.port, blocking=True, limit=len(expected), server_id=103,
                             report_slave=("pyrepl.example", "ru", "rp", 4321))
    try:
        assert events == expected
        rc, out, err = mariadb_cli(server.port, "SHOW SLAVE HOSTS")
        assert rc == 0, err
        assert "103\tpyrepl.example\t4321\t1" in out.splitlines(), out
    finally:
        stream.close()
    wait_until(lambda: "103\t" not in mariadb_cli(server.port, "SHOW SLAVE HOSTS")[1], 10,
               message="the stopped reader leaves SHOW SLAVE HOSTS")
    oracle.check_logs()


def test_pymysqlrepl_generated_binlogs_with_20_mib_row(generated: Served) -> None:
    events = _compare_streams(generated, "binlogd", blocking=False)
    big = [e for e in events if e[1] == "WriteRowsEvent" and e[6] > MAX_PACKET]
    assert len(big) == 1
    rows = big[0][7][2]
    assert len(rows) == 1 and len(next(v for v in rows[0]["values"].values() if isinstance(v, bytes | str)
                                       and len(v) > 1000)) == BIG_ROW


# ---- the mariadb command-line client --------------------------------------------------------------------


def test_show_master_status(oracle: Served) -> None:
    rc, out, err = mariadb_cli(oracle.servers["binlogd"].port, "SHOW MASTER STATUS")
    assert rc == 0, err
    _, real_out, _ = mariadb_cli(oracle.real.port, "SHOW MASTER STATUS")
    lines = out.splitlines()
    assert lines[0] == real_out.splitlines()[0] == "File\tPosition\tBinlog_Do_DB\tBinlog_Ignore_DB"
    last = oracle.files[-1]
    assert lines[1:] == [f"{last}\t{len(oracle.data(last))}\t\t"]
    oracle.check_logs()


@pytest.mark.parametrize("which", ["oracle", "generated"])
def test_show_binary_logs(which: str, request: pytest.FixtureRequest) -> None:
    served: Served = request.getfixturevalue(which)
    rc, out, err = mariadb_cli(served.servers["binlogd"].port, "SHOW BINARY LOGS")
    assert rc == 0, err
    _, real_out, _ = mariadb_cli(served.real.port, "SHOW BINARY LOGS")
    real_lines = [ln for ln in real_out.splitlines() if ln.split("\t")[0] not in served.extra]
    assert out.splitlines() == real_lines
    assert out.splitlines()[1:] == [f"{n}\t{len(served.data(n))}" for n in served.files]
    served.check_logs()


SHOW_EVENTS = [
    "SHOW BINLOG EVENTS",
    "SHOW BINLOG EVENTS LIMIT 4",
    "SHOW BINLOG EVENTS LIMIT 2, 5",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001'",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000002'",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 873",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 873 LIMIT 3",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 2665 LIMIT 1, 2",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000002' FROM 4",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 3246",
    "show binlog events in 'mysql-bin.000002' limit 100",
]
SHOW_EVENTS_ERRORS = [  # all 1220 with MariaDB's texts
    "SHOW BINLOG EVENTS IN 'mysql-bin.000009'",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 5",
    "SHOW BINLOG EVENTS IN 'mysql-bin.000001' FROM 99999",
]


@pytest.mark.parametrize("sql", SHOW_EVENTS)
def test_show_binlog_events_matches_real_primary(oracle: Served, sql: str) -> None:
    ours = mariadb_cli(oracle.servers["binlogd"].port, sql)
    theirs = mariadb_cli(oracle.real.port, sql)
    assert ours[0] == 0, ours[2]
    assert ours[1].splitlines() == theirs[1].splitlines()  # row by row, header included
    assert ours == theirs
    oracle.check_logs()


def _error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("ERROR ")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("sql", SHOW_EVENTS_ERRORS)
def test_show_binlog_events_errors_match_real_primary(oracle: Served, sql: str) -> None:
    """Same code, SQLSTATE and text (the CLI prints the text as is, so a stray newline shows)."""
    rc, out, err = mariadb_cli(oracle.servers["binlogd"].port, sql)
    real_rc, real_out, real_err = mariadb_cli(oracle.real.port, sql)
    assert rc == real_rc == 1 and out == real_out == ""
    assert _error_line(err) == _error_line(real_err)
    assert err.endswith(_error_line(real_err) + "\n"), f"text after the error message: {err!r}"
    oracle.check_logs()


def _query_packets(port: int, sql: str) -> list[bytes]:
    """Every packet the server answers a COM_QUERY with, up to the ERR or the final EOF."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", read_timeout=10)
    try:
        sock = conn._sock  # type: ignore[attr-defined]
        payload = b"\x03" + sql.encode()
        sock.sendall(struct.pack("<I", len(payload)) + payload)
        out: list[bytes] = []
        buf = b""
        eofs = 0
        while True:
            while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:3], "little"):
                chunk = sock.recv(65536)
                assert chunk, "connection closed"
                buf += chunk
            n = int.from_bytes(buf[:3], "little")
            pkt, buf = buf[4 : 4 + n], buf[4 + n :]
            out.append(pkt)
            if pkt[:1] == b"\xff":
                return out
            if pkt[:1] == b"\xfe" and len(pkt) < 9:
                eofs += 1
                if eofs == 2:
                    return out
    finally:
        with contextlib.suppress(Exception):
            conn._force_close()  # type: ignore[attr-defined]


def _column_name(coldef: bytes) -> str:
    """`name` of a ColumnDefinition41 (the 5th length-encoded string: catalog, schema, table, org_table, name)."""
    p = 0
    for _ in range(4):
        p += 1 + coldef[p]
    return coldef[p + 1 : p + 1 + coldef[p]].decode()


def _shape(packets: list[bytes]) -> list[str]:
    """Packet kinds, column definitions by name (their type details are mysql-mimic's, not compared here)."""
    out = []
    for i, pkt in enumerate(packets):
        if pkt[:1] == b"\xff":
            out.append("ERR")
        elif pkt[:1] == b"\xfe" and len(pkt) < 9:
            out.append("EOF")
        elif i == 0:
            out.append(f"columns={pkt[0]}")
        elif "EOF" not in out:
            out.append(f"column {_column_name(pkt)}")
        else:
            out.append("row")
    return out


@pytest.mark.parametrize("sql", SHOW_EVENTS_ERRORS)
def test_show_binlog_events_error_follows_the_column_metadata(oracle: Served, sql: str) -> None:
    """MariaDB (mysql_show_binlog_events) sends the 6 column definitions + EOF first and the ERR 1220 after
    them; the mariadb CLI shows the difference (it echoes the statement only for an immediate error)."""
    ours = _query_packets(oracle.servers["binlogd"].port, sql)
    theirs = _query_packets(oracle.real.port, sql)
    assert _shape(ours) == _shape(theirs)
    assert ours[-1] == theirs[-1]  # the ERR packet itself


def test_show_binlog_events_of_generated_files(generated: Served) -> None:
    for name in generated.files:
        for sql in (f"SHOW BINLOG EVENTS IN '{name}'", f"SHOW BINLOG EVENTS IN '{name}' LIMIT 1, 3"):
            ours = mariadb_cli(generated.servers["binlogd"].port, sql)
            theirs = mariadb_cli(generated.real.port, sql)
            assert ours == theirs, sql
    generated.check_logs()


@pytest.mark.parametrize("which", ["oracle", "generated"])
def test_select_version_server_id_gtid_binlog_pos(which: str, request: pytest.FixtureRequest) -> None:
    served: Served = request.getfixturevalue(which)
    sql = "SELECT @@version, @@server_id, @@gtid_binlog_pos"
    rc, out, err = mariadb_cli(served.servers["binlogd"].port, sql)
    assert rc == 0, err
    _, real_out, _ = mariadb_cli(served.real.port, sql)
    header, row = out.splitlines()
    real_header, real_row = real_out.splitlines()
    assert header == real_header == "@@version\t@@server_id\t@@gtid_binlog_pos"
    version, server_id, pos = row.split("\t")
    assert re.match(r"10\.\d+\.\d+-MariaDB", version), version
    assert server_id == real_row.split("\t")[1] == "1"
    assert pos == real_row.split("\t")[2] and pos  # the real primary's extra file adds no GTID
    served.check_logs()


def test_unknown_statement_is_a_clear_error(oracle: Served) -> None:
    for sql in ("FROBNICATE THE BINLOG", "SELEC 1"):
        rc, out, err = mariadb_cli(oracle.servers["binlogd"].port, sql)
        real_rc, _, real_err = mariadb_cli(oracle.real.port, sql)
        assert rc == real_rc == 1 and out == ""
        code = re.search(r"ERROR (\d+) \((\w{5})\)", err)
        real_code = re.search(r"ERROR (\d+) \((\w{5})\)", real_err)
        assert code is not None, err
        assert real_code is not None
        assert code.groups() == real_code.groups() == ("1064", "42000")
    oracle.check_logs()


def _slave_hosts(port: int, server_id: int) -> list[list[str]]:
    """SHOW SLAVE HOSTS rows (as text fields) of one server_id."""
    rc, out, err = mariadb_cli(port, "SHOW SLAVE HOSTS")
    assert rc == 0, err
    lines = out.splitlines()
    if lines:
        assert lines[0] == "Server_id\tHost\tPort\tMaster_id", lines[0]
    return [row for row in (ln.split("\t") for ln in lines[1:]) if row[0] == str(server_id)]


def test_show_slave_hosts_with_a_real_replica(oracle: Served, mariadb: Any) -> None:
    """The same real 10.11 replica registers with the real primary, then with binlogd: the same row (without a
    report_host, MariaDB shows the resolved peer host: 'localhost' on loopback)."""
    replica: MariaDB = mariadb("replica", 3)
    rows = {}
    for label, port in (("real", oracle.real.port), ("binlogd", oracle.servers["binlogd"].port)):
        replica.change_master("127.0.0.1", port)
        replica.start_slave()
        try:
            rows[label] = wait_until(lambda p=port: _slave_hosts(p, 3), 15,
                                     message=f"replica listed by SHOW SLAVE HOSTS on {label}")
            status = replica.wait_until(lambda: replica.slave_status().get("Slave_IO_Running") == "Yes"
                                        and replica.slave_status(), 15, message="IO thread running")
            assert status["Last_IO_Errno"] == 0
        finally:
            replica.stop_slave()
            replica.reset_slave()
    # binlogd notices the replica's disconnect at once (MariaDB only when its dump thread next writes)
    wait_until(lambda: _slave_hosts(oracle.servers["binlogd"].port, 3) == [], 10,
               message="replica unlisted on binlogd after STOP SLAVE")
    (real_row,), (our_row,) = rows["real"], rows["binlogd"]
    assert our_row[0] == real_row[0] == "3"
    assert our_row[2:] == real_row[2:] == [str(replica.port), "1"]
    assert our_row[1] == real_row[1] == "localhost"
    oracle.check_logs()


def _register_only(port: int, server_id: int, report_port: int) -> tuple[pymysql.connections.Connection, bytes]:  # type: ignore[type-arg]
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                           read_timeout=10)
    sock = conn._sock  # type: ignore[attr-defined]
    payload = build_register_slave(server_id, "", "", "", report_port)
    sock.sendall(struct.pack("<I", len(payload)) + payload)
    reply = sock.recv(64)
    return conn, reply


def test_registration_without_dump_ends_with_the_connection(oracle: Served) -> None:
    """MariaDB drops a COM_REGISTER_SLAVE entry when its connection ends (THD::unregister_slave), dump or not."""
    for label, port in (("the real primary", oracle.real.port), ("binlogd", oracle.servers["binlogd"].port)):
        conn, reply = _register_only(port, 42, 3399)
        assert reply == bytes.fromhex("0700000100000002000000")
        assert [r[2] for r in _slave_hosts(port, 42)] == ["3399"]
        conn.close()
        wait_until(lambda p=port: _slave_hosts(p, 42) == [], 5,
                   message=f"{label} forgetting a registration whose connection closed")
    oracle.check_logs()


def test_reconnecting_replica_stays_registered(oracle: Served) -> None:
    """A replica reconnects while its old dump still runs: the new dump kills the old one (4052), and SHOW
    SLAVE HOSTS lists the NEW registration (MariaDB's unregister_slave only removes the thread's own entry)."""
    listings = {}
    for label, port in (("real", oracle.real.port), ("binlogd", oracle.servers["binlogd"].port)):
        conns = []
        try:
            for report_port in (1111, 2222):
                conn, reply = _register_only(port, 7, report_port)
                assert reply[4:5] == b"\x00"
                with conn.cursor() as cur:
                    for s in REPL_SESSION:
                        cur.execute(s)
                dump = build_binlog_dump(4, 0, 7, "mysql-bin.000001")
                conn._sock.sendall(struct.pack("<I", len(dump)) + dump)  # type: ignore[attr-defined]
                conns.append(conn)
                time.sleep(0.5)
            listings[label] = _slave_hosts(port, 7)
        finally:
            for c in conns:
                with contextlib.suppress(Exception):
                    c._force_close()  # type: ignore[attr-defined]
    assert [r[2] for r in listings["real"]] == ["2222"]
    assert [(r[0], r[2], r[3]) for r in listings["binlogd"]] == [("7", "2222", "1")]
    oracle.check_logs()
