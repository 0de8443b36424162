"""The binlog data source's decoder and its splits: reading a file in ranges (any split size, any number of
partitions) gives exactly the rows of a whole-file read, for binlogs built from a real MariaDB 10.11 binlog (the
oracle's transactions: ROW + annotate, DDL, user variables, skip_replication groups) with events over 16 MiB, with
checksum CRC32 and NONE; a corrupt CRC in the middle and a torn last event show the same with any split.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from binlogd.spark_analytics.binlog_source import iter_file_batches, iter_split_batches, plan_splits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle_data import oracle_dir
from tests.test_audit import file_events

# Spark under load: a 300 s timeout inside a py4j call leaves the module's shared session unusable for the rest
pytestmark = pytest.mark.timeout(900)

_U32 = struct.Struct("<I")
BIG = 17 << 20  # an event larger than 16 MiB (a MariaDB packet's payload limit: split on the wire)


def _oracle_events() -> tuple[list[bytes], list[bytes]]:
    data = (oracle_dir() / "mysql-bin.000001").read_bytes()
    evs = [data[s : s + n] for s, n, _, _ in file_events(oracle_dir() / "mysql-bin.000001")]
    return evs[:3], [e for e in evs[3:] if e[4] != 4]  # header (FDE, GTID_LIST, CHECKPOINT); groups, no ROTATE


def _big_query(template: bytes, size: int) -> bytes:
    """The oracle's `CREATE DATABASE d` QUERY with its statement padded by a comment to `size` bytes."""
    ev = bytearray(template)
    pad = size - len(ev)
    body = ev[:-4] + b" /*" + b"x" * (pad - 5) + b"*/" + ev[-4:]
    return bytes(body)


def build_binlog(path: Path, repeats: int, checksum: bool = True, big_every: int = 0) -> None:
    """The oracle's groups `repeats` times (fresh GTID seqs), positions and CRCs fixed; `big_every` > 0 puts a
    >16 MiB QUERY group every that many repeats; checksum False writes an FDE announcing NONE and no CRCs."""
    header, groups = _oracle_events()
    create = next(e for e in groups if b"CREATE DATABASE d" in e)
    gtid_of_create = groups[groups.index(create) - 1]
    buf = bytearray(b"\xfebin")
    seq = 0

    def put(ev: bytes, is_fde: bool = False) -> None:
        nonlocal seq
        e = bytearray(ev)
        if not checksum and not is_fde:
            e = e[:-4]
        _U32.pack_into(e, 9, len(e))
        if is_fde and not checksum:
            e[-5] = 0  # checksum algorithm NONE (the FDE keeps its CRC field)
        pos = len(buf)
        _U32.pack_into(e, 13, pos + len(e))
        if e[4] == 162:
            seq += 1
            struct.pack_into("<Q", e, 19, seq)
        if checksum or is_fde:
            e[-4:] = _U32.pack(zlib.crc32(bytes(e[:-4])))
        buf.extend(e)

    for i, ev in enumerate(header):
        put(ev, is_fde=i == 0)
    for r in range(repeats):
        for ev in groups:
            put(ev)
        if big_every and r % big_every == big_every - 1:
            put(gtid_of_create)
            put(_big_query(create, BIG))
    path.write_bytes(bytes(buf))


_WHOLE: dict[Path, pa.Table] = {}


def whole(path: Path) -> pa.Table:
    if path not in _WHOLE:
        _WHOLE[path] = pa.Table.from_batches(list(iter_file_batches(path, 3)))
    return _WHOLE[path]


def in_splits(path: Path, split_bytes: int) -> tuple[pa.Table, int]:
    splits = plan_splits(path, 3, None, split_bytes)
    return pa.concat_tables([pa.Table.from_batches(list(iter_split_batches(s)), schema=whole_schema())
                             for s in splits]), len(splits)


def whole_schema() -> pa.Schema:
    from binlogd.spark_analytics.binlog_source import arrow_schema

    return arrow_schema()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = Path(tmp_path_factory.mktemp("source"))
    out = {"crc": d / "crc.000001", "none": d / "none.000001", "big": d / "big.000001"}
    build_binlog(out["crc"], 200)
    build_binlog(out["none"], 200, checksum=False)
    build_binlog(out["big"], 40, big_every=15)
    return out


def test_rows_match_the_files_own_parse(files: dict[str, Path]) -> None:
    """Independent of the decoder: every whole event, with its start, end, type and flags; GTID seqs fresh; CRCs
    valid (null for NONE, except the FDE, always checked); the >16 MiB events whole."""
    for kind, path in files.items():
        t = whole(path)
        mine = file_events(path)
        assert list(zip(t["start"].to_pylist(), t["end"].to_pylist(), t["type"].to_pylist(),
                        t["flags"].to_pylist(), strict=True)) == [(s, s + n, ty, fl) for s, n, ty, fl in mine]
        assert t["ordinal"].to_pylist() == list(range(len(mine)))
        crc = t["crc_ok"].to_pylist()
        assert crc[0] is True and (all(crc) if kind != "none" else set(crc[1:]) == {None})
        seqs = [q for q in t["gtid_seq"].to_pylist() if q is not None]
        assert seqs == list(range(1, len(seqs) + 1))
    big = whole(files["big"])
    assert max(big["length"].to_pylist()) > 16 << 20


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["crc", "none", "big"]), split=st.integers(min_value=2000, max_value=40 << 20))
def test_splits_give_the_rows_of_a_whole_file_read(files: dict[str, Path], kind: str, split: int) -> None:
    path = files[kind]
    parts, n = in_splits(path, split)
    assert parts.equals(whole(path)), (kind, split, n)
    if split < path.stat().st_size // 2:
        assert n > 1  # it really was split


def test_corrupt_crc_and_torn_tail_same_with_any_split(files: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "bad.000001"
    data = bytearray(files["crc"].read_bytes())
    evs = file_events(files["crc"])
    s, n, _, _ = evs[len(evs) // 2]
    data[s + n - 6] ^= 0x01  # one byte of the body of an event in the middle
    data = data[: evs[-1][0] + 10]  # the last event torn
    path.write_bytes(bytes(data))
    ref = whole(path)
    bad = [(r["start"]) for r in ref.select(["start", "crc_ok"]).to_pylist() if r["crc_ok"] is False]
    assert bad == [s]
    assert ref["end"].to_pylist()[-1] == evs[-1][0]  # the torn event is not a row
    for split in (500, 4096, 60_000):
        parts, k = in_splits(path, split)
        assert parts.equals(ref), split
        assert k > 1


def test_spark_partitions_by_offset(files: dict[str, Path], tmp_path: Path) -> None:
    """Through Spark: `split_bytes` makes several partitions of one file, rows identical to one partition."""
    from binlogd.spark_analytics.session import build_session

    spark = build_session("local[2]")
    d = tmp_path / "b"
    d.mkdir()
    (d / "mysql-bin.000001").write_bytes(files["big"].read_bytes())
    one = spark.read.format("binlog").option("split_bytes", str(1 << 40)).load(str(d))
    many = spark.read.format("binlog").option("split_bytes", str(8 << 20)).load(str(d))
    assert one.rdd.getNumPartitions() == 1 and many.rdd.getNumPartitions() > 2
    cols = ["start", "end", "ordinal", "type", "crc_ok", "trx", "group_end", "gtid_seq", "statement"]
    assert one.select(*cols).orderBy("start").collect() == many.select(*cols).orderBy("start").collect()
    with pytest.raises(Exception, match="split_bytes"):
        spark.read.format("binlog").option("split_bytes", "lots").load(str(d)).count()


def test_groups_match_protocol_group_tracker(files: dict[str, Path]) -> None:
    """`group_end` per event equals protocol/groups.py's own GroupTracker fed event by event (independent of the
    vectorised state machine), and every event of a group carries its group's trx."""
    from binlogd.protocol.groups import GroupTracker

    for kind, path in files.items():
        data = path.read_bytes()
        t = whole(path)
        tracker = GroupTracker()
        crc_len = 0 if kind == "none" else 4
        expected = [tracker.feed(data, s, s + n, crc_len) for s, n, _, _ in file_events(path)]
        assert t["group_end"].to_pylist() == expected, kind
        trx = t["trx"].to_pylist()
        opened = [0, *[i + 1 for i, e in enumerate(expected[:-1]) if e]]
        for a in opened:  # a group's events share its first event's trx
            b = expected.index(True, a)
            assert len(set(trx[a : b + 1])) == 1, (kind, a)


_CODES = st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 1, 2, 3, 4, 4, 6]), st.booleans()), max_size=80)


@settings(max_examples=400, deadline=None)
@given(events=_CODES, state=st.sampled_from([0, 1, 2]), carried=st.booleans(), cut=st.integers(0, 80))
def test_vector_groups_equal_the_state_machine(events: list[tuple[int, bool]], state: int, carried: bool,
                                               cut: int) -> None:
    """The numpy state machine gives the loop's answer for any codes (also split into two chunks)."""
    import numpy as np
    from binlogd.spark_analytics.binlog_groups import vector_groups, walk_groups

    code = np.array([c for c, _ in events], dtype=np.int8)
    cont = np.array([k for _, k in events], dtype=bool)
    for a, b in ((0, len(code)), (0, min(cut, len(code))), (min(cut, len(code)), len(code))):
        want = walk_groups(code[a:b], cont[a:b], state, carried)
        got = vector_groups(code[a:b], cont[a:b], state, carried)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist() and got[2] == want[2]
