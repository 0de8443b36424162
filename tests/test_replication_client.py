"""protocol.connection.ReplicationClient against a real MariaDB 10.11 primary and against binlogd.

A real primary is the reference: what the client yields must be the primary's binlog files byte for byte
(fake/artificial events aside, positions checked through log_pos), and binlogd serving the oracle files
must give the client the same stream as a real primary serving copies of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.connection import (
    ClientConfig,
    ReplicationClient,
    ReplicationError,
    native_password_scramble,
    split_run,
)
from binlogd.protocol.constants import (
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    ROTATE_EVENT,
)
from binlogd.protocol.events import parse_event, parse_header

from tests.oracle_data import oracle_dir

BIG = 17 * 1024 * 1024  # one row event larger than a 16 MiB packet: exercises reassembly
PART1 = """
CREATE DATABASE d;
CREATE TABLE d.t (id INT PRIMARY KEY, v LONGBLOB) ENGINE=MyISAM;
CREATE TABLE d.i (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO d.t VALUES (1, 'a');
SET skip_replication=1;
INSERT INTO d.t VALUES (2, 'skipped');
BEGIN; INSERT INTO d.i VALUES (1); INSERT INTO d.i VALUES (2); COMMIT;
SET skip_replication=0;
BEGIN; INSERT INTO d.i VALUES (3); COMMIT;
"""
PART2 = f"""
INSERT INTO d.t VALUES (3, REPEAT('x', {BIG}));
FLUSH BINARY LOGS;
INSERT INTO d.t VALUES (4, 'after rotate');
SET skip_replication=1;
INSERT INTO d.t VALUES (5, 'skipped at the end');
"""

Loc = tuple[str, int]  # (binlog file, start position)


def run(coro_fn: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
    """Run one async scenario with a hard bound, so a hang fails instead of stalling the suite."""
    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await coro_fn()
    return asyncio.run(bounded())


async def dump(cfg: ClientConfig, file: str, pos: int, non_blocking: bool = True,
               stop: Callable[[list[bytes]], bool] | None = None) -> list[bytes]:
    client = await ReplicationClient.connect(cfg)
    out: list[bytes] = []
    try:
        await client.start_dump(file, pos, non_blocking)
        async for ev in client.events():
            out.append(ev)
            if stop is not None and stop(out):
                break
    finally:
        await client.close()
    return out


def locate(events: list[bytes], files: dict[str, bytes]) -> list[Loc]:
    """Check every non-fake event against the file bytes (start = log_pos - length); return where each was."""
    cur = ""
    seen: list[Loc] = []
    for ev in events:
        h = parse_header(ev)
        assert h.event_length == len(ev)
        if h.type_code == ROTATE_EVENT and (h.flags & LOG_EVENT_ARTIFICIAL_F or h.log_pos == 0):
            cur = ev[19 + 8 : -4].decode()
            continue
        if h.type_code == HEARTBEAT_LOG_EVENT or h.flags & LOG_EVENT_ARTIFICIAL_F:
            continue
        data = files[cur]
        if h.type_code == FORMAT_DESCRIPTION_EVENT:
            fde = bytearray(data[4 : 4 + len(ev)])
            fde[17] &= 0xFE  # the in-use flag is cleared before sending; the CRC ignores it
            if ev != bytes(fde):  # GTID / pos > 4 starts: `created` (and log_pos) zeroed, CRC recomputed
                assert ev[71:75] == b"\0" * 4 and ev[:9] == fde[:9], f"FDE of {cur}"
                assert ev[19:71] == fde[19:71] and ev[75:-4] == fde[75:-4], f"FDE of {cur}"
            seen.append((cur, 4))
            continue
        start = h.log_pos - h.event_length
        assert ev == data[start : h.log_pos], f"event at {cur}:{start} differs from the file"
        seen.append((cur, start))
    return seen


def file_events(files: dict[str, bytes], keep: Callable[[int], bool] = lambda flags: True) -> list[Loc]:
    return [(name, e.pos) for name, data in files.items() for e in scan(data).events if keep(e.flags)]


def wait_checkpointed(primary: Any) -> None:
    """Wait for the BINLOG_CHECKPOINT naming the active file: written asynchronously after a rotation."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        name = primary.binary_logs()[-1][0]
        data = (primary.datadir / name).read_bytes()
        if any(e.type_code == BINLOG_CHECKPOINT_EVENT and name.encode() in data[e.pos : e.end]
               for e in scan(data).events):
            return
        time.sleep(0.05)
    raise AssertionError("no binlog checkpoint for the active file")


def test_scramble_matches_mysql_native_password() -> None:
    # PASSWORD('s3cret') is '*' + hex(SHA1(SHA1(pw))); the server checks SHA1(nonce + that) XOR reply.
    nonce = bytes(range(20))
    reply = native_password_scramble("s3cret", nonce)
    stage2 = hashlib.sha1(hashlib.sha1(b"s3cret").digest()).digest()
    x = hashlib.sha1(nonce + stage2).digest()
    assert hashlib.sha1(bytes(a ^ b for a, b in zip(reply, x, strict=True))).digest() == stage2
    assert native_password_scramble("", nonce) == b""


def test_against_real_primary(mariadb) -> None:
    primary = mariadb.primary("primary", 1, "--max-allowed-packet=64M", "--binlog-annotate-row-events=ON")
    primary.execute(PART1)
    mid = primary.query("SELECT @@gtid_binlog_pos")[0][0]
    primary.execute(PART2)
    primary.query("CREATE USER repl@'127.0.0.1' IDENTIFIED BY 's3cret'")
    primary.query("GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'")
    wait_checkpointed(primary)
    names = [f for f, _ in primary.binary_logs()]
    assert len(names) == 2
    files = {f: (primary.datadir / f).read_bytes() for f in names}
    end_file, end_pos = primary.master_status()

    def cfg(**kw: Any) -> ClientConfig:
        return ClientConfig(host=primary.host, port=primary.port, server_id=50, **kw)

    async def scenarios() -> None:
        # file/pos, everything, with a password-protected user (scramble checked by the real server)
        evs = await dump(cfg(user="repl", password="s3cret"), names[0], 4)
        assert max(len(e) for e in evs) > BIG
        assert locate(evs, files) == file_events(files)
        # FILTER_ON_MASTER: the flagged events never arrive, everything else does
        evs = await dump(cfg(skip_replication=True), names[0], 4)
        assert not any(parse_header(e).flags & LOG_EVENT_SKIP_REPLICATION_F for e in evs)
        assert locate(evs, files) == file_events(files, lambda f: not f & LOG_EVENT_SKIP_REPLICATION_F)
        # GTID from the beginning ('' state) and from the middle
        evs = await dump(cfg(gtid=""), "", 4)
        assert locate(evs, files) == file_events(files)
        evs = await dump(cfg(gtid=mid), "", 4)
        seq = int(mid.split("-")[2])
        first = files[names[0]]
        gtid_pos = next(e.pos for e in scan(first).events if e.type_code == GTID_EVENT and parse_event(
            first[e.pos : e.end], BINLOG_CHECKSUM_ALG_CRC32).body.seq_no == seq + 1)
        full = file_events(files)
        suffix = full[full.index((names[0], gtid_pos)):]
        seen = locate(evs, files)
        assert seen[-len(suffix):] == suffix  # every group after `mid`, and nothing of the groups before it
        types = {e.pos: e.type_code for e in scan(first).events}
        assert {types[p] for _, p in seen[: -len(suffix)]} == {FORMAT_DESCRIPTION_EVENT, GTID_LIST_EVENT,
                                                              BINLOG_CHECKPOINT_EVENT}
        # heartbeats while idle at the end of a blocking dump (read timeout = 2 x period does not fire)
        t0 = time.monotonic()
        evs = await dump(cfg(heartbeat_s=0.5), end_file, end_pos, non_blocking=False,
                         stop=lambda seen: sum(parse_header(e).type_code == HEARTBEAT_LOG_EVENT for e in seen) >= 2)
        assert 0.8 < time.monotonic() - t0 < 4
        # errors: access denied (retryable), unknown file (fatal 1236)
        with pytest.raises(ReplicationError) as ei:
            await ReplicationClient.connect(cfg(user="repl", password="wrong"))
        assert ei.value.code == 1045 and not ei.value.fatal
        with pytest.raises(ReplicationError) as ei:
            await dump(cfg(), "mysql-bin.999999", 4)
        assert ei.value.code == 1236 and ei.value.fatal
        # a session query works on the same client code path
        client = await ReplicationClient.connect(cfg())
        try:
            assert await client.query("SELECT 1, NULL, 'x'") == [("1", None, "x")]
            with pytest.raises(ReplicationError) as ei:
                await client.query("SELEC nonsense")
            assert ei.value.code == 1064 and not ei.value.fatal
        finally:
            await client.close()

    run(scenarios, timeout=30)


def _oracle_copy(dest: Path) -> list[Path]:
    files = []
    for n in (1, 2):
        src = oracle_dir() / f"mysql-bin.00000{n}"
        shutil.copy(src, dest / src.name)
        files.append(dest / src.name)
    return files


def test_binlogd_stream_equals_real_primary(mariadb, binlogd, harness_dir: Path) -> None:
    d = harness_dir / "binlogs"
    d.mkdir()
    files = _oracle_copy(d)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    real = mariadb.primary_from_binlogs("real", 1, files)

    async def scenarios() -> None:
        for gtid in (None, ""):
            ours = await dump(ClientConfig(host=server.host, port=server.port, server_id=60, gtid=gtid),
                              files[0].name, 4)  # non-blocking: ends at EOF
            theirs = await dump(ClientConfig(host=real.host, port=real.port, server_id=60, gtid=gtid),
                                files[0].name, 4)
            assert len(ours) > 60
            assert ours == theirs[: len(ours)]  # the real primary goes on into the file it opened at start
        # binlogd's heartbeats pass the client's CRC check too
        hb = await dump(ClientConfig(host=server.host, port=server.port, server_id=61, heartbeat_s=0.3),
                        files[-1].name, 4, non_blocking=False,
                        stop=lambda seen: parse_header(seen[-1]).type_code == HEARTBEAT_LOG_EVENT)
        assert parse_header(hb[-1]).event_length == len(hb[-1])
        # blocking at binlogd's end without heartbeats: the read timeout fires, retryable
        t0 = time.monotonic()
        with pytest.raises(ReplicationError) as ei:
            await dump(ClientConfig(host=server.host, port=server.port, server_id=61, read_timeout=0.3),
                       files[-1].name, 4, non_blocking=False)
        assert not ei.value.fatal and time.monotonic() - t0 < 2

    run(scenarios)


async def _cutting_proxy(upstream: tuple[str, int], after_dump: int) -> tuple[asyncio.Server, int]:
    """A TCP proxy that drops both sides `after_dump` bytes into the dump stream (mid-packet)."""
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection(*upstream)
        dumping = asyncio.Event()

        async def up() -> None:
            while data := await cr.read(65536):
                if data[4:5] == b"\x12":  # COM_BINLOG_DUMP
                    dumping.set()
                sw.write(data)

        async def down() -> None:
            sent = 0
            while data := await sr.read(512):
                if dumping.is_set():
                    if sent + len(data) >= after_dump:
                        cw.write(data[: after_dump - sent])
                        return
                    sent += len(data)
                cw.write(data)

        up_task = asyncio.create_task(up())
        try:
            await down()
        finally:
            up_task.cancel()
            with contextlib.suppress(BaseException):
                await up_task
            cw.close()
            sw.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


def test_server_closing_mid_stream_raises_quickly(binlogd, harness_dir: Path) -> None:
    d = harness_dir / "binlogs"
    d.mkdir()
    files = _oracle_copy(d)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])

    async def scenario() -> None:
        srv, port = await _cutting_proxy((server.host, server.port), after_dump=1000)
        try:
            got: list[bytes] = []
            t0 = time.monotonic()
            with pytest.raises(ReplicationError) as ei:
                got = []
                client = await ReplicationClient.connect(ClientConfig(host="127.0.0.1", port=port, server_id=62))
                await client.start_dump(files[0].name, 4, non_blocking=False)  # blocking, no read timeout
                async for ev in client.events():
                    got.append(ev)
            assert ei.value.code == 2013 and not ei.value.fatal
            assert time.monotonic() - t0 < 2
            assert 0 < sum(len(e) + 5 for e in got) < 1000  # some whole events, then the cut one
        finally:
            srv.close()
            await srv.wait_closed()

    run(scenario)


def test_crc_mismatch_is_reported(binlogd, harness_dir: Path) -> None:
    """A binlog file with one flipped byte inside an event, served by binlogd (which, like MariaDB without
    master_verify_checksum, sends stored bytes as they are): fatal 1743, like the 10.11 IO thread."""
    d = harness_dir / "corrupt"
    d.mkdir()
    data = bytearray((oracle_dir() / "mysql-bin.000001").read_bytes())
    victim = next(e for e in scan(bytes(data)).events if e.type_code == 2)  # the first QUERY event
    data[victim.pos + 40] ^= 0xFF
    (d / "mysql-bin.000001").write_bytes(bytes(data))
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])

    async def scenario() -> None:
        with pytest.raises(ReplicationError) as ei:
            await dump(ClientConfig(host=server.host, port=server.port, server_id=63, read_timeout=5),
                       "mysql-bin.000001", 4)
        assert ei.value.code == 1743 and ei.value.fatal

    run(scenario)


def test_bytes_arriving_while_a_run_is_consumed_are_not_left_waiting(mariadb) -> None:
    """A blocking dump without heartbeats: events the primary sends while the consumer still holds the previous
    run are yielded at once, not when the next event (or heartbeat) arrives. (The dump receiver once counted them
    as a torn packet and waited for more: a semi-sync ack request sat in its buffer until the commit timed out.)"""
    primary = mariadb.primary("late", 1)
    primary.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)")
    end_file, end_pos = primary.master_status()

    async def scenario() -> list[int]:
        client = await ReplicationClient.connect(ClientConfig(host=primary.host, port=primary.port, server_id=51))
        try:
            await client.start_dump(end_file, 4, non_blocking=False)
            runs = client.event_runs()
            while True:  # up to the primary's end
                run, _ = await asyncio.wait_for(runs.__anext__(), 10)
                if end_pos in [int.from_bytes(e[13:17], "little") for e in split_run(run.data)]:
                    break
            # the generator is suspended on that run: the next write lands in the receiver's buffer meanwhile
            await asyncio.to_thread(primary.execute, "INSERT INTO d.t VALUES (1)")
            await asyncio.sleep(1.0)
            run, _ = await asyncio.wait_for(runs.__anext__(), 5)  # no further event comes to push it out
            return [parse_header(e).type_code for e in split_run(run.data)]
        finally:
            await client.close()

    types = run(scenario)
    assert types and types[0] == GTID_EVENT, types
