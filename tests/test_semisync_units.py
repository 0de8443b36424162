"""Semi-sync without servers: the wire codec (protocol/semisync.py) and the primary's rules (server/semisync.py):
which events ask for an ack, what an ack releases, the timeout switching to asynchronous and the catch-up back ON."""

from __future__ import annotations

import asyncio
import time

import pytest
from binlogd.protocol.semisync import (
    SYNC_HEADER,
    SYNC_HEADER_ACK,
    Ack,
    SemiSyncError,
    ack_packet,
    event_prefix,
    parse_ack,
    split_event_packet,
)
from binlogd.server.semisync import SemiSyncMaster

F = "mysql-bin.000001"


def test_codec_round_trip() -> None:
    assert event_prefix(False) == SYNC_HEADER == b"\x00\xef\x00"
    assert event_prefix(True) == SYNC_HEADER_ACK == b"\x00\xef\x01"
    ack, ev = split_event_packet(b"\x00\xef\x01EVENT")
    assert ack is True and bytes(ev) == b"EVENT"
    assert split_event_packet(b"\x00\xef\x00E")[0] is False
    assert ack_packet(F, 0x0102) == b"\xef\x02\x01" + bytes(6) + F.encode()  # slave_reply: no trailing NUL
    assert parse_ack(ack_packet(F, 1234)) == Ack(F, 1234)
    assert parse_ack(b"\x01") is None  # COM_QUIT: the replica is going away


@pytest.mark.parametrize(("payload", "message"), [
    (b"\x00\x00\x00E", "Missing magic number for semi-sync packet, packet len: 4"),
    (b"\x00\xef", "Missing magic number for semi-sync packet, packet len: 2"),
])
def test_event_packet_without_magic(payload: bytes, message: str) -> None:
    with pytest.raises(SemiSyncError, match=message):
        split_event_packet(payload)


@pytest.mark.parametrize(("payload", "message"), [
    (b"", "magic number error"), (b"\x02", "magic number error"), (b"\xef\x00", "packet is too small"),
    (b"\xef" + bytes(8) + b"x" * 512, "file length too large"), (b"\xef" + bytes(8), "bad binlog file name"),
    (b"\xef" + bytes(8) + b"../x", "bad binlog file name"),
])
def test_bad_acks(payload: bytes, message: str) -> None:
    with pytest.raises(SemiSyncError, match=message):
        parse_ack(payload)


def test_only_the_waited_for_group_end_asks_and_an_ack_releases_up_to_it() -> None:
    async def go() -> None:
        m = SemiSyncMaster(enabled=True, timeout_ms=5000)
        m.add_client()
        m.written(F, [300, 500])
        assert not m.needs_ack(F, 250) and m.needs_ack(F, 300) and m.needs_ack(F, 500)
        waits = [asyncio.create_task(m.wait(F, 300)), asyncio.create_task(m.wait(F, 500))]
        await asyncio.sleep(0.01)
        assert m.status()["wait_sessions"] == 2
        m.reply(2, F, 300)
        await asyncio.sleep(0.01)
        assert waits[0].done() and not waits[1].done()
        assert not m.needs_ack(F, 300)  # already acked
        m.reply(2, F, 500)
        await asyncio.wait_for(waits[1], 1)
        st = m.status()
        assert st["yes_tx"] == 2 and st["no_tx"] == 0 and st["get_ack"] == 2 and st["request_ack"] == 2
        assert st["wait_sessions"] == 0 and st["tx_waits"] == 2

    asyncio.run(go())


def test_timeout_switches_off_then_a_caught_up_replica_switches_on() -> None:
    async def go() -> None:
        m = SemiSyncMaster(enabled=True, timeout_ms=200)
        m.add_client()
        m.written(F, [300])
        t0 = time.monotonic()
        await m.wait(F, 300)
        assert 0.19 <= time.monotonic() - t0 < 2
        st = m.status()
        assert st["status"] == "OFF" and st["no_tx"] == 1 and st["no_times"] == 1 and st["yes_tx"] == 0
        m.written(F, [400])
        t0 = time.monotonic()
        await m.wait(F, 400)  # asynchronous now: no wait
        assert time.monotonic() - t0 < 0.1 and m.status()["no_tx"] == 2
        # while OFF every event from the newest commit on asks, so a replica that has it says so
        assert not m.needs_ack(F, 300) and m.needs_ack(F, 400)
        m.reply(2, F, 300)  # behind the newest commit: still OFF
        assert m.status()["status"] == "OFF"
        m.dump_start(F, 400)  # a replica (re)starting its dump at the newest commit has it: ON again
        assert m.status()["status"] == "ON" and m.status()["get_ack"] == 1  # (a start is not an ack received)
        m.written(F, [600])
        task = asyncio.create_task(m.wait(F, 600))
        await asyncio.sleep(0.01)
        m.reply(2, F, 600)
        await asyncio.wait_for(task, 1)
        assert m.status()["yes_tx"] == 1

    asyncio.run(go())


def test_disabled_master_never_waits_nor_asks() -> None:
    async def go() -> None:
        m = SemiSyncMaster(enabled=False)
        m.written(F, [300])
        assert not m.needs_ack(F, 300)
        await asyncio.wait_for(m.wait(F, 300), 0.1)
        assert m.status()["status"] == "OFF" and m.status()["no_tx"] == 0

    asyncio.run(go())
