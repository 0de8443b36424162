"""Dumps in the same state share one framing of each chunk (FrameCache); the bytes must not change."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from binlogd.protocol.decision import Compat
from binlogd.server.binlog.store import BinlogStore
from binlogd.server.dump import DumpParams, DumpStream, frames_of

from tests.dumpclient import MemorySink
from tests.oracle_data import oracle_dir


def _params(capability: int, skip: bool, seq_file: str = "mysql-bin.000001") -> DumpParams:
    return DumpParams(file=seq_file, pos=4, flags=1, replica_server_id=9, capability=capability,
                      skip_replication=skip, checksum_aware=True, first_rotate_crc=True, compat=Compat.BINLOGD)


async def _dump(store: BinlogStore, params: DumpParams, seq: int = 1) -> bytes:
    sink = MemorySink()
    await DumpStream(store, sink, 1, params, seq=seq).run()
    return bytes(sink.data)


def test_same_state_shares_framing_and_bytes(tmp_path: Path) -> None:
    for n in ("mysql-bin.000001", "mysql-bin.000002"):
        shutil.copy(oracle_dir() / n, tmp_path / n)
    shared = BinlogStore(tmp_path)

    async def run() -> None:
        for cap, skip in ((4, False), (4, True), (0, True), (2, False)):
            fresh = await _dump(BinlogStore(tmp_path), _params(cap, skip))  # a store of its own: no sharing
            hits = frames_of(shared).hits
            first = await _dump(shared, _params(cap, skip))
            second = await _dump(shared, _params(cap, skip))
            assert first == second == fresh
            assert frames_of(shared).hits > hits  # the second dump reused the first one's packets
        # another sequence id or policy is another key: no wrong reuse
        misses = frames_of(shared).misses
        other_seq = await _dump(shared, _params(4, False), seq=2)
        assert frames_of(shared).misses > misses
        assert other_seq != await _dump(shared, _params(4, False))

    asyncio.run(run())
