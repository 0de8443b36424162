"""protocol/dump_runs.py and GroupTracker.feed_run: whole reads of dump packets checked at once give exactly what the
per-event rules give (real binlog events from the oracle binlogs, framed as a 10.11 primary frames them)."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest
from binlogd.protocol.binlog_file import fde_checksum_alg
from binlogd.protocol.connection import ClientConfig, ReplicationClient, ReplicationError
from binlogd.protocol.constants import (
    BINLOG_CHECKSUM_ALG_CRC32,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    QUERY_EVENT,
    XID_EVENT,
)
from binlogd.protocol.dump_runs import MIN_PACKETS, crcs_ok, first_bad_crc, scan_packets, scan_packets_py
from binlogd.protocol.events import iter_binlog
from binlogd.protocol.groups import TRANSACTION_EDGES, GroupTracker
from binlogd.protocol.gtid import BinlogState, Gtid
from binlogd.protocol.packets import frame
from hypothesis import given, settings
from hypothesis import strategies as st

ORACLE = Path(__file__).parent / "data" / "oracle"


@pytest.fixture(scope="module")
def events() -> list[bytes]:
    """The events of the oracle's real MariaDB 10.11 binlogs with CRC32 (two workloads), file after file."""
    out: list[bytes] = []
    for f in (*sorted(ORACLE.glob("dump/mysql-bin.0*")), *sorted(ORACLE.glob("multidomain/dump/mysql-bin.0*"))):
        evs = [bytes(ev) for _, ev in iter_binlog(f.read_bytes())]
        if fde_checksum_alg(evs[0]) == BINLOG_CHECKSUM_ALG_CRC32:
            out.extend(evs)
    assert len(out) > 4 * MIN_PACKETS
    return out


def _packets(evs: list[bytes], seq: int = 1) -> bytes:
    out = bytearray()
    for ev in evs:
        seq = frame(b"\0" + ev, seq, out)
    return bytes(out)


def _plain(events: list[bytes]) -> list[bytes]:
    return [e for e in events if e[4] != FORMAT_DESCRIPTION_EVENT]


def test_a_read_of_plain_packets_is_one_run(events: list[bytes]) -> None:
    evs = _plain(events)
    data = _packets(evs, seq=250)  # the sequence id wraps at 255
    res = scan_packets(data, 250, crc=True)
    assert res.run is not None and res.packets == len(evs) and res.used == len(data)
    assert res.run.data == b"".join(evs)
    assert res.run.ends.tolist() == np.cumsum([len(e) for e in evs]).tolist()


def test_what_needs_the_per_event_rules_ends_the_run(events: list[bytes]) -> None:
    evs = _plain(events)
    k = MIN_PACKETS + 5
    data = _packets(evs)
    assert scan_packets(data[:-3], 1, True).packets == len(evs) - 1  # torn last packet: left for the next read
    assert scan_packets(data, 2, True).run is None  # wrong sequence id from the start
    corrupt = bytearray(data)
    at = len(_packets(evs[:k])) + 4 + 1 + 25  # a byte inside event k's body
    corrupt[at] ^= 0x40
    res = scan_packets(bytes(corrupt), 1, True)
    assert res.packets == k and res.run is not None and res.run.data == b"".join(evs[:k])
    assert scan_packets(bytes(corrupt), 1, False).packets == len(evs)  # no checksums: nothing to see
    fde = next(e for e in events if e[4] == FORMAT_DESCRIPTION_EVENT)
    assert scan_packets(_packets([*evs[:k], fde, *evs[k:]]), 1, True).packets == k
    err = bytearray()
    frame(b"\xff\x00\x00boom", 1 + k, err)
    assert scan_packets(_packets(evs[:k]) + bytes(err), 1, True).packets == k
    bad_len = bytearray(_packets(evs))  # event k's header length one more than its packet's
    p = len(_packets(evs[:k])) + 5 + 9
    bad_len[p : p + 4] = (int.from_bytes(bad_len[p : p + 4], "little") + 1).to_bytes(4, "little")
    assert scan_packets(bytes(bad_len), 1, True).packets == k
    # too few for numpy: per event (the C walk, when built, takes them: tests/test_dumpscan_native.py)
    assert scan_packets_py(_packets(evs[: MIN_PACKETS - 1]), 1, True).run is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=19, max_size=300), min_size=1, max_size=80), st.data())
def test_run_crc_check_equals_per_event_checks(bodies: list[bytes], data: st.DataObject) -> None:
    evs = [b + zlib.crc32(b).to_bytes(4, "little") for b in bodies]
    run = b"".join(evs)
    ends = np.cumsum([len(e) for e in evs])
    assert crcs_ok(run, ends) and first_bad_crc(run, ends) == len(evs)
    i = data.draw(st.integers(0, len(evs) - 1))
    bit = data.draw(st.integers(0, len(evs[i]) * 8 - 1))
    start = int(ends[i - 1]) if i else 0
    bad = bytearray(run)
    bad[start + bit // 8] ^= 1 << (bit % 8)
    assert not crcs_ok(bytes(bad), ends) and first_bad_crc(bytes(bad), ends) == i


def _feed_each(evs: list[bytes], tracker: GroupTracker) -> tuple[int, int]:
    last = groups = 0
    last = -1
    for i, ev in enumerate(evs):
        if tracker.feed(ev):
            last, groups = i, groups + 1
    return last, groups


def _synthetic_groups(events: list[bytes]) -> list[bytes]:
    """Real events in orders the demo binlog may not have: standalone groups, BEGIN .. COMMIT, events outside."""
    by_type: dict[int, list[bytes]] = {}
    for e in events:
        by_type.setdefault(e[4], []).append(e)
    gtids = by_type[GTID_EVENT]
    standalone = [g for g in gtids if g[19 + 12] & 1]
    queries = by_type[QUERY_EVENT]
    rng = random.Random(7)
    out = list(events)
    for _ in range(300):
        i = rng.randrange(len(out))
        pick = rng.choice([*standalone[:3], *queries[:20], *by_type[XID_EVENT][:3], *gtids[:5]])
        out.insert(i, pick)
    return out


def test_feed_run_equals_feed_per_event(events: list[bytes]) -> None:
    for evs in (events, _synthetic_groups(events)):
        for cut in (0, 1, 2, 3, 5, 8, 13, 21):
            a, b = GroupTracker(), GroupTracker()
            assert _feed_each(evs[:cut], a) == _feed_each(evs[:cut], b)  # same state at the run's start
            run = evs[cut:]
            data = b"".join(run)
            ends = np.cumsum([len(e) for e in run]).tolist()
            edges = [i for i, e in enumerate(run) if e[4] in TRANSACTION_EDGES]
            assert b.feed_run(data, ends, edges) == _feed_each(run, a) and a.state == b.state


def _row_transactions(events: list[bytes]) -> list[list[bytes]]:
    """The oracle's GTID .. XID transactions without a QUERY event (row format), each a list of events."""
    out, cur = [], None
    for e in events:
        if e[4] == GTID_EVENT:
            cur = [e] if not e[19 + 12] & 1 else None
        elif cur is not None:
            cur.append(e)
            if e[4] == QUERY_EVENT:
                cur = None
            elif e[4] == XID_EVENT:
                out.append(cur)
                cur = None
    return out


@pytest.mark.parametrize("shape", ["whole", "open_end", "event_between", "standalone", "inside"])
def test_feed_run_of_row_transactions(events: list[bytes], shape: str) -> None:
    """Runs of row-format transactions (edges GTID, XID, ...: the walk looks at nothing else), also starting inside
    one or ending in one, and runs just off that shape, equal feed() event by event."""
    txns = _row_transactions(events)
    assert len(txns) >= 4
    run = [e for t in txns for e in t]
    outside = GroupTracker()
    if shape == "open_end":
        run = run + txns[0][:2]
    elif shape == "event_between":
        checkpoint = next(e for e in events if e[4] == 161)  # BINLOG_CHECKPOINT: a group of its own
        run = [*run[: len(txns[0])], checkpoint, *run[len(txns[0]) :]]
    elif shape == "standalone":
        ddl = next(e for e in events if e[4] == GTID_EVENT and e[19 + 12] & 1)
        run = [ddl, next(e for e in events if e[4] == QUERY_EVENT), *run]
    elif shape == "inside":
        outside.feed(run[0])  # the run starts inside a transaction: after its GTID
        run = run[1:]
    a, b = GroupTracker(), GroupTracker()
    a.state = b.state = outside.state
    ends = np.cumsum([len(e) for e in run]).tolist()
    edges = [i for i, e in enumerate(run) if e[4] in TRANSACTION_EDGES]
    assert b.feed_run(b"".join(run), ends, edges) == _feed_each(run, a) and a.state == b.state


def test_scan_of_real_binlog_files(events: list[bytes]) -> None:
    """The oracle files as a primary streams them: FDEs cut the scan, each piece after them scans whole."""
    pieces: list[list[bytes]] = [[]]
    for e in events:
        if e[4] == FORMAT_DESCRIPTION_EVENT:
            pieces.append([])
        else:
            pieces[-1].append(e)
    for piece in pieces:
        if len(piece) >= MIN_PACKETS:
            res = scan_packets(_packets(piece), 1, True)
            assert res.run is not None and res.run.data == b"".join(piece)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 2**64 - 1)), max_size=40),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 2**64 - 1)), max_size=5))
def test_state_update_all_equals_update_one_by_one(gtids: list[tuple[int, int, int]],
                                                   before: list[tuple[int, int, int]]) -> None:
    a, b = BinlogState(), BinlogState()
    for g in before:
        a.update(Gtid(*g))
        b.update(Gtid(*g))
    for g in gtids:
        a.update(Gtid(*g))
    b.update_all([g[0] for g in gtids], [g[1] for g in gtids], [g[2] for g in gtids])
    assert a.as_list() == b.as_list() and a.current_pos() == b.current_pos()
    assert a._by_domain == b._by_domain and list(a._by_domain) == list(b._by_domain)
    assert [list(m) for m in a._by_domain.values()] == [list(m) for m in b._by_domain.values()]
    assert list(a._last.items()) == list(b._last.items())


def _client() -> ReplicationClient:
    """A client's dump-phase state without a socket: `_split` is pure over the bytes it is given."""
    client = ReplicationClient(ClientConfig(host="127.0.0.1", port=1, server_id=9), None, None)  # type: ignore[arg-type]
    client._packets.expected_seq = 1
    client._alg = BINLOG_CHECKSUM_ALG_CRC32
    return client


def test_split_of_a_long_read_with_a_corrupt_event(events: list[bytes]) -> None:
    """Through the client: the events before a corrupted one come as a run with their ends, then the same 1743 error
    the per-event path gives; an FDE inside a long read is taken one by one and the scan resumes after it."""
    evs = _plain(events)
    k = MIN_PACKETS + 3
    data = bytearray(_packets(evs))
    data[len(_packets(evs[:k])) + 5 + 30] ^= 1
    run, used, stop = _client()._split(bytes(data))
    assert isinstance(stop, ReplicationError) and stop.code == 1743
    assert run.data == b"".join(evs[:k]) and run.ends.tolist() == np.cumsum([len(e) for e in evs[:k]]).tolist()
    fde = next(e for e in events if e[4] == FORMAT_DESCRIPTION_EVENT)
    with_fde = [*evs[:k], fde, *evs[k:]]
    whole = _packets(with_fde)
    run, used, stop = _client()._split(whole)
    assert stop is None and used == len(whole) and run.data == b"".join(with_fde)
    assert run.ends.tolist() == np.cumsum([len(e) for e in with_fde]).tolist()
