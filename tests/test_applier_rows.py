"""applier/rows.py and applier/config.py without servers: known encodings, and malformed input -> one error type.

The end-to-end comparison with a real replica (tests/test_applier.py) covers every column type as MariaDB
writes it; these tests pin a few encodings worked out by hand from MariaDB's sources and fuzz the decoder.
"""

from __future__ import annotations

import contextlib
from decimal import Decimal

import pytest
from binlogd.applier.config import ConfigError, parse_channel, parse_endpoint
from binlogd.applier.rows import (
    T_DATETIME2,
    T_LONG,
    T_NEWDECIMAL,
    T_STRING,
    T_TIME2,
    T_VARCHAR,
    decode_decimal,
    decode_rows,
    decode_table_map,
)
from binlogd.protocol.constants import UPDATE_ROWS_EVENT, WRITE_ROWS_EVENT
from binlogd.protocol.events import EventDecodeError, TableMapBody
from hypothesis import given, settings
from hypothesis import strategies as st


def _map(types: bytes, meta: bytes) -> TableMapBody:
    return TableMapBody(1, 0, b"d", b"t", len(types), types, meta, b"\xff" * ((len(types) + 7) // 8))


def test_decimal_by_hand() -> None:
    # DECIMAL(10,2) 1234.56: 8 integer digits in 4 bytes (1234), 2 fraction digits in 1 byte (56), sign bit set
    raw = bytes([0x80, 0x00, 0x04, 0xD2, 0x38])
    assert decode_decimal(raw, 0, 10, 2) == (Decimal("1234.56"), 5)
    neg = bytes(b ^ 0xFF for b in raw)  # negative numbers are stored inverted
    assert decode_decimal(neg, 0, 10, 2) == (Decimal("-1234.56"), 5)
    assert decode_decimal(bytes([0x80, 0, 0, 0, 0]), 0, 10, 2) == (Decimal("0.00"), 5)


def test_table_map_metadata() -> None:
    # CHAR(255) utf8mb4 = 1020 bytes: the high bits of the length ride in the type byte (0xFE ^ (0x300 >> 4))
    tm = decode_table_map(_map(bytes([T_LONG, T_STRING, T_VARCHAR, T_NEWDECIMAL, T_TIME2]),
                               bytes([0xFE ^ 0x30, 0xFC, 0x2C, 0x01, 20, 6, 3])))
    assert [(c.type, c.meta, c.meta2) for c in tm.columns] == [
        (T_LONG, 0, 0), (T_STRING, 1020, 0), (T_VARCHAR, 300, 0), (T_NEWDECIMAL, 20, 6), (T_TIME2, 3, 0)]
    with pytest.raises(EventDecodeError):
        decode_table_map(_map(bytes([T_VARCHAR]), b"\x01"))


def test_rows_by_hand() -> None:
    tm = decode_table_map(_map(bytes([T_LONG, T_VARCHAR, T_DATETIME2, T_TIME2]), bytes([10, 0, 0, 0])))
    # DATETIME2(0) 2024-02-29 12:34:56: ((2024*13+2) << 22 | 29 << 17 | 12 << 12 | 34 << 6 | 56) + 0x8000000000
    dt = ((((2024 * 13 + 2) << 5 | 29) << 17) | 12 << 12 | 34 << 6 | 56) + 0x8000000000
    tm2 = (0x800000 - ((1 << 12) | (2 << 6) | 3))  # TIME2(0) -01:02:03
    row = b"\x00" + (-5).to_bytes(4, "little", signed=True) + b"\x02hi" + dt.to_bytes(5, "big") + tm2.to_bytes(3, "big")
    data = b"\x04\x0f" + row + b"\x01" + b"\x03abc" + dt.to_bytes(5, "big") + tm2.to_bytes(3, "big")
    change = decode_rows(tm, WRITE_ROWS_EVENT, data)
    assert change.kind == "write"
    assert change.rows[0][1] == {0: -5, 1: b"hi", 2: "2024-02-29 12:34:56", 3: "-01:02:03"}
    assert change.rows[1][1] == {0: None, 1: b"abc", 2: "2024-02-29 12:34:56", 3: "-01:02:03"}
    assert decode_rows(tm, WRITE_ROWS_EVENT, data, [True, False, False, False]).rows[0][1][0] == 2**32 - 5
    with pytest.raises(EventDecodeError, match="columns"):
        decode_rows(tm, WRITE_ROWS_EVENT, b"\x03\x07" + row)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([WRITE_ROWS_EVENT, UPDATE_ROWS_EVENT]))
def test_fuzz_rows_only_raise_decode_errors(data: bytes, typ: int) -> None:
    tm = decode_table_map(_map(bytes([T_LONG, T_VARCHAR, T_NEWDECIMAL, T_DATETIME2, 252]),
                               bytes([0x2C, 0x01, 12, 4, 6, 2])))
    with contextlib.suppress(EventDecodeError):
        decode_rows(tm, typ, b"\x05\x1f\x1f" + data if typ == UPDATE_ROWS_EVENT else b"\x05\x1f" + data)


def test_config_parsing() -> None:
    assert parse_endpoint("mysql://u:p%40ss@h:3310") .password == "p@ss"
    ch = parse_channel("=mysql://root@127.0.0.1:3307?gtid=no&heartbeat=2")
    assert (ch.name, ch.source.port, ch.gtid, ch.heartbeat_s) == ("", 3307, False, 2.0)
    for bad in ("x", "a=http://h:1", "a=mysql://h:1?gtid=current_pos", "a=mysql://h:1?bogus=1",
                "a=mysql://h:99999", "a=mysql://h:1/db"):
        with pytest.raises(ConfigError):
            parse_channel(bad)
