"""RelayStorage fed whole runs (`EventRun`: events and their ends, as `ReplicationClient.event_runs()` hands them over)
stores, publishes and counts exactly what it does fed the same events without their ends (the one-by-one walk);
a run it cannot take whole (a gap, a heartbeat, a ROTATE) goes the one-by-one way with its errors (real writer,
a real MariaDB 10.11 binlog)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from binlogd.protocol.constants import BIN_LOG_HEADER_SIZE, FLAGS_OFFSET, HEARTBEAT_LOG_EVENT, ROTATE_EVENT
from binlogd.protocol.dump_runs import MIN_PACKETS, EventRun
from binlogd.protocol.events import build_event, iter_binlog
from binlogd.protocol.rewrite import fix_fde
from binlogd.server.binlog.writer import BinlogWriter
from binlogd.server.relay.status import RelayStatus
from binlogd.server.relay.storage import RelayError, RelayStorage

SOURCE = Path(__file__).parent / "data" / "oracle" / "dump" / "mysql-bin.000001"
NAME = SOURCE.name


def _fake_rotate(pos: int) -> bytes:
    body = pos.to_bytes(8, "little") + NAME.encode()
    return build_event(type_code=ROTATE_EVENT, body=body, server_id=1, log_pos=0, flags=0x20, checksum=True)


def _storage(tmp: Path, sub: str) -> RelayStorage:
    w = BinlogWriter(tmp / sub, "mysql-bin")
    w.recover()
    st = RelayStorage(w, RelayStatus("h", 1, "u", 1, 1.0))
    st.begin(1)
    return st


def _run(evs: list[bytes]) -> EventRun:
    return EventRun(b"".join(evs), np.cumsum([len(e) for e in evs], dtype=np.int64))


def _stored(st: RelayStorage) -> bytes:
    data = bytearray((st.w.directory / NAME).read_bytes())
    data[BIN_LOG_HEADER_SIZE + FLAGS_OFFSET] &= ~1  # the active file's in-use flag
    return bytes(data)


def _summary(st: RelayStorage) -> tuple[object, ...]:
    s = st.status
    return (st.w.committed, st.w.end, st.end, st.complete, len(st.buf), s.events_stored, s.groups_stored,
            s.gtid_io_pos, s.stored_pos, st.last_ts, st.tracker.state, list(st._pending_gtids))


@pytest.mark.parametrize("pieces", [1, 3])
@pytest.mark.parametrize("cut", [3, 4, 5, 7, 11])
def test_whole_runs_store_what_the_walk_stores(tmp_path: Path, cut: int, pieces: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    assert events[-1][4] == ROTATE_EVENT and len(events) - 1 - cut >= MIN_PACKETS
    head, body = [_fake_rotate(4), *events[:cut]], events[cut:-1]  # FDE, GTID_LIST, ...; the closing ROTATE apart
    whole = 0
    store_stretch = RelayStorage._store_stretch

    def counting(self: RelayStorage, *args: object) -> None:
        nonlocal whole
        whole += 1
        store_stretch(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RelayStorage, "_store_stretch", counting)
    walk, runs = _storage(tmp_path, "walk"), _storage(tmp_path, "runs")
    walk.feed([b"".join(head)])
    runs.feed([b"".join(head)])
    # the same bytes in the same batches: without ends, and as whole runs (a batch of several is joined first)
    walk.feed([b"".join(body)])
    step = len(body) // pieces + 1
    runs.feed([_run(body[k : k + step]) for k in range(0, len(body), step)])
    assert whole == 1
    assert _summary(runs) == _summary(walk)
    walk.feed([events[-1]])
    runs.feed([events[-1]])
    assert _stored(runs) == _stored(walk) == SOURCE.read_bytes()
    assert _summary(runs) == _summary(walk)


def test_an_unfinished_group_at_the_end_of_a_run_waits(tmp_path: Path) -> None:
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    st = _storage(tmp_path, "r")
    st.feed([_fake_rotate(4) + b"".join(events[:3])])
    body = events[3:-1]
    # cut inside a transaction: the GTID of the last group is read but not part of the state yet
    cut = max(i for i, e in enumerate(body[: MIN_PACKETS + 8]) if e[4] == 162) + 1
    st.feed([_run(body[:cut])])
    committed = st.w.committed
    assert st.w.store.end_of(NAME) == committed < st.end and st._pending_gtids
    st.feed([_run(body[cut:])])
    assert st.w.committed > committed and not st._pending_gtids


def test_a_run_it_cannot_take_whole_goes_one_by_one(tmp_path: Path) -> None:
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    src = SOURCE.read_bytes()
    heartbeat = build_event(type_code=HEARTBEAT_LOG_EVENT, body=NAME.encode(), server_id=1, log_pos=0, flags=0x20,
                            checksum=True)
    st = _storage(tmp_path, "hb")
    st.feed([_fake_rotate(4) + b"".join(events[:3])])
    body = events[3:-1]
    st.feed([_run([*body[:20], heartbeat, *body[20:]])])
    assert st.status.heartbeats == 1 and st.status.events_stored == len(body) + 1  # + the head's BINLOG_CHECKPOINT
    gap = _storage(tmp_path, "gap")
    gap.feed([_fake_rotate(4) + b"".join(events[:3])])
    with pytest.raises(RelayError, match="stored file ends at"):
        gap.feed([_run([*body[:30], *body[31:]])])
    gap.abort()
    kept = gap.w.committed
    assert gap.w.store.end_of(NAME) == kept and src[:kept] == _stored(gap)[:kept]
    assert kept > BIN_LOG_HEADER_SIZE + sum(len(e) for e in events[:3])


def test_a_gtid_start_resending_the_file_in_one_run(tmp_path: Path) -> None:
    """A GTID-started dump re-sends the active file from its start: in one run with its ends, the duplicates are
    skipped one by one and what follows them is stored as a stretch; the file equals the source."""
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    st = _storage(tmp_path, "g")
    st.feed([_fake_rotate(4) + b"".join(events[:12])])
    cut = st.w.committed
    st.abort()
    st.begin(1, gtid=True)
    fde = fix_fde(events[0], zero_log_pos=True, zero_created=True, checksum_alg=1)
    st.feed([_run([_fake_rotate(4), fde, *events[1:]])])
    assert st.w.committed > cut and st.status.groups_stored > 0
    assert _stored(st) == SOURCE.read_bytes()


def test_sync_binlog_counts_commits_not_groups(tmp_path: Path) -> None:
    """--sync-binlog N fsyncs at every N-th commit, as MariaDB's sync_binlog counts binlog group commits: a batch of
    many whole groups is one commit (docs/relay.md)."""
    w = BinlogWriter(tmp_path / "d", "mysql-bin", sync_binlog=2)
    w.recover()
    st = RelayStorage(w, RelayStatus("h", 1, "u", 1, 1.0))
    st.begin(1)
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    st.feed([_fake_rotate(4), *events[:3]])
    body = events[3:-1]
    step = len(body) // 4 + 1
    for k in range(0, len(body), step):
        st.feed([b"".join(body[k : k + step])])
    assert st.status.groups_stored > w.group_commits >= 4
    assert w.fsyncs == w.group_commits // 2


def test_only_small_plain_appends_are_stored_on_the_loop(tmp_path: Path) -> None:
    """`appends_only` (the relay stores such a batch on the event loop, not in the writer thread) holds exactly for
    batches that append plain events or heartbeats to the active file within the limit, with sync_binlog 0 and no
    file change pending: a new file (fake ROTATE, FDE), a real ROTATE, a torn header, fsync and size stay threaded."""
    events = [bytes(e) for _, e in iter_binlog(SOURCE.read_bytes())]
    heartbeat = build_event(type_code=HEARTBEAT_LOG_EVENT, body=NAME.encode(), server_id=1, log_pos=0, flags=0x20,
                            checksum=True)
    st = _storage(tmp_path, "a")
    head = [_fake_rotate(4), *events[:3]]
    assert not st.appends_only([b"".join(head)], 1 << 20)  # no file yet: the FDE creates it
    st.feed([b"".join(head)])
    body = events[3:-1]
    assert st.appends_only([_run(body[:10]), b"".join(body[10:20]), heartbeat], 1 << 20)
    size = sum(len(e) for e in body[:10])
    assert st.appends_only([_run(body[:10])], size) and not st.appends_only([_run(body[:10])], size - 1)
    assert not st.appends_only([_run(body[:10]), events[-1]], 1 << 20)  # the closing ROTATE
    assert not st.appends_only([_fake_rotate(4)], 1 << 20)
    assert not st.appends_only([b"".join(body[:2])[:-3]], 1 << 20)  # a torn event: refused in the thread
    # what is stored on the loop is what the thread stores: the file equals the source
    for k in range(0, len(body), 7):
        run = _run(body[k : k + 7])
        assert st.appends_only([run], 1 << 20)
        st.feed([run])
    st.feed([events[-1]])
    assert _stored(st) == SOURCE.read_bytes()
    w = BinlogWriter(tmp_path / "s", "mysql-bin", sync_binlog=1)
    w.recover()
    synced = RelayStorage(w, RelayStatus("h", 1, "u", 1, 1.0))
    synced.begin(1)
    synced.feed([b"".join(head)])
    assert not synced.appends_only([_run(body[:10])], 1 << 20)
