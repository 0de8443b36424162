"""Unit tests of the sans-IO core: framing, commands, rewrites, GTID text, file scanning, the decision table."""

from __future__ import annotations

import contextlib
import itertools
import struct
import zlib

import pytest
from binlogd.protocol.binlog_file import BinlogFormatError, scan, verify
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.commands import (
    CommandError,
    build_binlog_dump,
    build_register_slave,
    parse_binlog_dump,
    parse_binlog_dump_gtid,
    parse_register_slave,
)
from binlogd.protocol.constants import MAX_PACKET_PAYLOAD
from binlogd.protocol.decision import Action, Compat, DecisionTable, ReplicaPolicy, clamp_capability, decide
from binlogd.protocol.gtid import BinlogState, Gtid, GtidError, parse_gtid_list
from binlogd.protocol.packets import PacketError, PacketReader, eof_packet, err_packet, frame, ok_packet, parse_err
from binlogd.protocol.rewrite import (
    RewriteError,
    begin_event,
    dummy_event,
    fake_gtid_list,
    fake_rotate,
    fix_fde,
    heartbeat,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle_data import ORACLE


# --- framing ---------------------------------------------------------------------------------------------
def test_frame_small_and_seq_wraps() -> None:
    out = bytearray()
    seq = 254
    for _ in range(3):
        seq = frame(b"abc", seq, out)
    assert seq == 1
    assert out[:4] == bytes((3, 0, 0, 254)) and out[7:11] == bytes((3, 0, 0, 255)) and out[14:18] == bytes((3, 0, 0, 0))


@pytest.mark.parametrize(
    "size", [MAX_PACKET_PAYLOAD - 1, MAX_PACKET_PAYLOAD, MAX_PACKET_PAYLOAD + 5, 2 * MAX_PACKET_PAYLOAD]
)
def test_large_payload_split_and_reassembled(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    out = bytearray()
    nxt = frame(payload, 250, out)
    chunks = size // MAX_PACKET_PAYLOAD + 1
    assert nxt == (250 + chunks) % 256
    r = PacketReader(expected_seq=250)
    # feed in odd pieces to exercise partial headers
    for i in range(0, len(out), 1_000_003):
        r.feed(bytes(out[i : i + 1_000_003]))
    assert r.next_packet() == payload
    assert r.next_packet() is None


def test_reader_refuses_out_of_order() -> None:
    r = PacketReader(expected_seq=0)
    r.feed(struct.pack("<I", 3 | (5 << 24)) + b"abc")
    with pytest.raises(PacketError):
        r.next_packet()


def test_generic_packets() -> None:
    assert ok_packet() == bytes.fromhex("00000002000000")
    assert eof_packet() == bytes.fromhex("fe00000200")
    e = parse_err(err_packet(1236, "boom"))
    assert (e.code, e.sqlstate, e.message) == (1236, "HY000", "boom")


# --- commands (bytes seen on the wire from a real 10.11 replica) -------------------------------------------
def test_register_slave_from_real_replica() -> None:
    cmd = parse_register_slave(bytes.fromhex("15020000000000002681000000000000000000"))
    assert (cmd.server_id, cmd.host, cmd.port, cmd.rank, cmd.master_id) == (2, "", 33062, 0, 0)
    assert parse_register_slave(build_register_slave(7, "h", "u", "p", 3306)).host == "h"


@pytest.mark.parametrize("bad", ["15", "1502000000", "150200000009", "15020000000000002681"])
def test_register_slave_malformed(bad: str) -> None:
    with pytest.raises(CommandError):
        parse_register_slave(bytes.fromhex(bad))


def test_binlog_dump_from_real_replica() -> None:
    cmd = parse_binlog_dump(bytes.fromhex("12900400000000020000006d7973716c2d62696e2e303030303031"))
    assert (cmd.pos, cmd.flags, cmd.server_id, cmd.file) == (1168, 0, 2, "mysql-bin.000001")
    # python-mysql-replication sends the name as 4 NULs: MariaDB reads it with strlen -> ''
    assert parse_binlog_dump(build_binlog_dump(4, 2, 9, "\0\0\0\0")).file == ""
    short = parse_binlog_dump(b"\x12\x04\x00")  # the bytes past the end read as zeros (MariaDB reads stale ones)
    assert (short.pos, short.flags, short.server_id, short.file) == (4, 0, 0, "")
    with pytest.raises(CommandError):
        parse_binlog_dump(build_binlog_dump(4, 0, 1, "x" * 600))


def test_binlog_dump_gtid_parse() -> None:
    data = struct.pack("<BHII", 0x1E, 0, 5, 3) + b"abc" + struct.pack("<QI", 4, 2) + b"zz"
    cmd = parse_binlog_dump_gtid(data)
    assert (cmd.server_id, cmd.file, cmd.pos, cmd.gtid_data) == (5, "abc", 4, b"zz")
    with pytest.raises(CommandError):
        parse_binlog_dump_gtid(data[:9])


# --- rewrites (examples recorded from the real primary) ---------------------------------------------------
def test_dummy_of_empty_gtid_list_is_user_var() -> None:
    orig = bytes.fromhex("df32026ba3010000001d0000001d01000000000000000000009a062835")
    assert dummy_event(orig, True).hex() == "df32026b0e010000001d0000001d0100000800010000002101d7dda3db"


def test_gtid_to_begin() -> None:
    orig = bytes.fromhex("df32026ba2010000002a000000a102000008000300000000000000000000000c0000000000006c258d71")
    assert begin_event(orig, True).hex() == (
        "df32026b02010000002a000000a102000008000000000000000000000000000000424547494e169125e3"
    )


def test_begin_refuses_other_lengths_and_dummy_refuses_tiny() -> None:
    ev = fake_rotate(1, 4, "x", True)
    with pytest.raises(RewriteError):
        begin_event(ev, True)
    with pytest.raises(RewriteError):
        dummy_event(ev[:28], True)  # data_len 24 < 25


def test_dummy_query_text_truncated_and_padded() -> None:
    for size in (38, 46, 73, 124):
        ev = bytes(9) + struct.pack("<IIH", size, 77, 0x8004) + bytes(size - 19)
        ev = bytearray(ev)
        ev[4] = 160
        d = dummy_event(bytes(ev), True)
        assert len(d) == size and d[4] == 2 and crc_ok(d)
        assert struct.unpack_from("<H", d, 17)[0] == 0x8008  # 0x04 cleared, 0x08 set, 0x8000 kept
        text = d[33 : size - 4]
        assert text == b"# Dummy event replacing event type 160 that slave cannot handle."[: size - 37].ljust(
            size - 37, b" "
        )


def test_fake_rotate_as_captured() -> None:
    assert fake_rotate(1, 4, "mysql-bin.000001", True).hex() == (
        "0000000004010000002f00000000000000200004000000000000006d7973716c2d62696e2e3030303030311f0eac68"
    )


def test_fde_fixups_keep_crc_valid() -> None:
    data = (ORACLE / "mysql-bin.000002").read_bytes()
    (n,) = struct.unpack_from("<I", data, 13)
    fde = data[4 : 4 + n]
    assert fde[17] & 1  # copied while active: in-use flag set
    assert crc_ok(fde)  # CRC computed as if the flag were clear
    plain = fix_fde(fde, False, False, 1)
    assert plain[17] & 1 == 0 and plain[19:] == fde[19:] and crc_ok(plain)
    zeroed = fix_fde(fde, True, True, 1)
    assert struct.unpack_from("<I", zeroed, 13)[0] == 0 and struct.unpack_from("<I", zeroed, 19 + 52)[0] == 0
    assert crc_ok(zeroed)


def test_heartbeat_and_fake_gtid_list() -> None:
    hb = heartbeat(1, "mysql-bin.000002", 624, True)
    assert struct.unpack_from("<IBIIIH", hb) == (0, 27, 1, len(hb), 624, 0) and crc_ok(hb)
    big = heartbeat(1, "f", 1 << 33, False)
    assert struct.unpack_from("<I", big, 13)[0] == 0 and struct.unpack_from("<Q", big, 19)[0] == 1 << 33
    gl = fake_gtid_list(1, 1111, [Gtid(0, 1, 4)], True)
    assert gl[4] == 163 and struct.unpack_from("<H", gl, 17)[0] == 0x20 and crc_ok(gl)
    assert len(fake_gtid_list(1, 5, [], False)) == 19 + 6  # empty list padded for dummies


# --- GTID ---------------------------------------------------------------------------------------------------
def test_gtid_list_parsing() -> None:
    assert parse_gtid_list(" 0-1-5, 1-2-7") == {0: Gtid(0, 1, 5), 1: Gtid(1, 2, 7)}
    assert parse_gtid_list("") == {}
    with pytest.raises(GtidError):
        parse_gtid_list("0-1")
    with pytest.raises(GtidError) as ei:
        parse_gtid_list("0-1-1,0-2-2")
    assert ei.value.duplicate_domain


def test_binlog_state_orders_last_gtid_last() -> None:
    s = BinlogState()
    for g in (Gtid(0, 2, 5), Gtid(0, 1, 6), Gtid(1, 1, 1), Gtid(0, 2, 7), Gtid(0, 1, 8)):
        s.update(g)
    assert s.as_list() == [Gtid(0, 2, 7), Gtid(0, 1, 8), Gtid(1, 1, 1)]
    assert s.current_pos() == [Gtid(0, 1, 8), Gtid(1, 1, 1)]


# --- file scanning --------------------------------------------------------------------------------------------
def test_scan_detects_torn_tail() -> None:
    data = (ORACLE / "mysql-bin.000001").read_bytes()
    full = scan(data)
    assert not full.torn and full.end == len(data)
    cut = scan(data[:-7])
    assert cut.torn and cut.end == full.events[-1].pos
    rep = verify(data)
    assert rep.crc_failures == [] and rep.torn_bytes == 0
    broken = bytearray(data)
    broken[400] ^= 0xFF
    assert verify(bytes(broken)).crc_failures
    with pytest.raises(BinlogFormatError):
        scan(data[:4] + struct.pack("<IBIIIH", 0, 2, 1, 3, 0, 0))  # length 3 < 19


# --- the decision table ------------------------------------------------------------------------------------------
POLICIES = [
    ReplicaPolicy(c, s, a, m)
    for c, s, a, m in itertools.product(range(5), (False, True), (False, True), (Compat.BINLOGD, Compat.MARIADB))
]


@pytest.mark.parametrize("policy", POLICIES, ids=str)
def test_table_equals_decide(policy: ReplicaPolicy) -> None:
    t = DecisionTable(policy)
    for typ, flags, standalone in itertools.product(range(256), (0, 0x8000, 0x8008), (False, True)):
        assert t.lookup(typ, flags, standalone) == decide(typ, flags, standalone, policy)


# The observed MariaDB 10.11 matrix (observed-mariadb-10.11.md section 4), capability 0..4.
S, H, D, B = Action.SEND, Action.HOLE, Action.DUMMY, Action.BEGIN
OBSERVED = {
    ("annotate", False): [D, S, H, H, H],
    ("annotate", True): [S, S, S, S, S],
    ("gtid_trx", False): [B, B, B, B, S],
    ("gtid_standalone", False): [D, D, H, H, S],
    ("gtid_list", False): [D, D, H, H, S],
    ("checkpoint", False): [D, D, H, S, S],
    ("query", False): [S, S, S, S, S],
}
KIND = {
    "annotate": (160, False),
    "gtid_trx": (162, False),
    "gtid_standalone": (162, True),
    "gtid_list": (163, False),
    "checkpoint": (161, False),
    "query": (2, False),
}


@pytest.mark.parametrize(("kind", "annot"), list(OBSERVED))
def test_matrix_matches_mariadb(kind: str, annot: bool) -> None:
    typ, standalone = KIND[kind]
    for cap in range(5):
        pol = ReplicaPolicy(cap, False, annot, Compat.MARIADB)
        assert decide(typ, 0, standalone, pol) == OBSERVED[(kind, annot)][cap], (kind, cap)
        # skip_replication: a flagged event is a hole in MariaDB for every capability ...
        assert decide(typ, 0x8000, standalone, ReplicaPolicy(cap, True, annot, Compat.MARIADB)) == H
        # ... and binlogd's extension gives capability < 2 a same-length dummy instead
        want = D if cap < 2 else H
        assert decide(typ, 0x8000, standalone, ReplicaPolicy(cap, True, annot, Compat.BINLOGD)) == want
        # a flagged event on a session without skip_replication follows the normal rules
        assert decide(typ, 0x8000, standalone, pol) == OBSERVED[(kind, annot)][cap]


@pytest.mark.parametrize(("raw", "cap"), [(None, 0), ("4", 4), (7, 4), (-3, 0), ("junk", 0), (2.9, 2)])
def test_capability_clamped(raw: object, cap: int) -> None:
    assert clamp_capability(raw) == cap


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_command_parsers_never_raise_unexpected(data: bytes) -> None:
    for prefix, fn in (
        (b"\x12", parse_binlog_dump),
        (b"\x15", parse_register_slave),
        (b"\x1e", parse_binlog_dump_gtid),
    ):
        with contextlib.suppress(CommandError):
            fn(prefix + data)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=19, max_size=300), st.booleans())
def test_rewrites_never_raise_unexpected(ev: bytes, crc: bool) -> None:
    for fn in (dummy_event, begin_event):
        try:
            out = fn(ev, crc)
        except RewriteError:
            continue
        assert len(out) == len(ev)
        if crc:
            assert zlib.crc32(out[:-4]) & 0xFFFFFFFF == struct.unpack_from("<I", out, len(out) - 4)[0]
