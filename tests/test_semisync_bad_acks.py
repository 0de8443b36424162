"""Bad semi-sync input to binlogd as a semi-sync primary: malformed packets, a wrong magic byte, an oversized packet
and an ack for a position it never asked about are logged and ignored. The dump keeps streaming, the waiting
commit is not released by a bogus ack (it still waits), and the real ack then releases it at once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

from binlogd.protocol.connection import ClientConfig, ReplicationClient, split_run
from binlogd.protocol.packets import frame

TIMEOUT_MS = 20000


def _status(server) -> dict[str, str]:
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master%'")
        return {str(k): str(v) for k, v in cur.fetchall()}


def _raw(client: ReplicationClient, payload: bytes) -> None:
    out = bytearray()
    frame(payload, 0, out)
    client._writer.write(out)


async def _acked_end(runs: AsyncIterator[tuple[bytes, bool]]) -> int:
    """Read the dump up to the next event that asks for an ack; its end position (the log_pos in its header)."""
    while True:
        run, ack = await asyncio.wait_for(runs.__anext__(), 30)
        if ack:
            return int.from_bytes(split_run(run)[-1][13:17], "little")


def _writes(server, sqls: list[str], took: list[float], done: threading.Event) -> threading.Thread:
    def run() -> None:
        with server.connect(autocommit=True) as c, c.cursor() as cur:
            for sql in sqls:
                t0 = time.monotonic()
                cur.execute(sql)
                took.append(time.monotonic() - t0)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    return t


def _binlog_file(server) -> str:
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        return str(cur.fetchone()[0])


async def _scenario(server) -> dict[str, object]:
    client = await ReplicationClient.connect(ClientConfig(host=server.host, port=server.port, server_id=55,
                                                          semi_sync=True, read_timeout=30))
    await client.start_dump("", 4)
    assert client.semi_sync  # binlogd offered semi-sync and took @rpl_semi_sync_slave
    runs = client.runs_with_acks()
    file = await asyncio.to_thread(_binlog_file, server)
    took: list[float] = []
    schema_done = threading.Event()
    schema = _writes(server, ["CREATE DATABASE s", "CREATE TABLE s.t (id INT PRIMARY KEY)"], took, schema_done)
    for _ in range(2):
        client.send_ack(file, await _acked_end(runs))
    await asyncio.to_thread(schema.join, 10)
    # bad input: empty, wrong magic, too short, a NUL or a too long file name, COM_QUIT, a 70000-byte packet
    for bad in (b"", b"\x00" + bytes(20), b"\xef\x01\x02", b"\xef" + bytes(8), b"\xef" + bytes(8) + b"a\0b",
                b"\xef" + bytes(8) + b"x" * 600, b"\x01", b"\xef" + bytes(70000)):
        _raw(client, bad)
    done = threading.Event()
    writer = _writes(server, ["INSERT INTO s.t VALUES (1)"], took, done)
    end = await _acked_end(runs)  # the dump still streams
    client.send_ack(file, end + 1000)  # never sent
    client.send_ack("mysql-bin.999999", end)  # never sent either
    await asyncio.sleep(1.0)
    still_waiting = not done.is_set()
    client.send_ack(file, end)  # the real one
    released = await asyncio.to_thread(done.wait, 10)
    await asyncio.to_thread(writer.join, 10)
    await client.close()
    return {"still_waiting": still_waiting, "released": released, "took": took}


def test_bad_acks_are_logged_and_ignored(binlogd, harness_dir: Path) -> None:
    server = binlogd(["--datadir", str(harness_dir / "data"), "--no-ledger", "--rpl-semi-sync-master-enabled",
                      "--rpl-semi-sync-master-timeout", str(TIMEOUT_MS)])
    r = asyncio.run(_scenario(server))
    assert r["still_waiting"] is True, r  # the bogus acks released nothing
    took = r["took"]
    assert r["released"] is True and isinstance(took, list) and len(took) == 3, r
    assert max(took) < TIMEOUT_MS / 1000 / 2, r  # every commit released by its ack, none by the timeout
    st = _status(server)
    assert st["Rpl_semi_sync_master_yes_tx"] == "3" and st["Rpl_semi_sync_master_no_tx"] == "0", st
    assert st["Rpl_semi_sync_master_get_ack"] == "3" and st["Rpl_semi_sync_master_status"] == "ON", st
    log = server.log_text()
    for text in ("Read semi-sync reply magic number error", "Read semi-sync reply length error: packet is too small",
                 "Read semi-sync reply binlog file length too large", "bad binlog file name",
                 "the replica's IO thread has stopped (COM_QUIT)",
                 "ignored a 70001-byte packet from the replica (not an ack)",
                 "ack for mysql-bin.999999:", "a position this dump did not ask about (ignored)"):
        assert text in log, text
    assert "Traceback" not in log
