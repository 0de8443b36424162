"""Property tests: the event decoders and `describe` either decode or raise EventDecodeError, quickly.

Inputs are random bytes, random bodies behind a well-formed header for every type code 0..255, and
mutations (bit flips, truncation, corrupted length fields, overwritten bytes) of real MariaDB 10.11
events. A binlog server reads files and streams it does not control, so no other exception type may
escape and no call may take long. Hypothesis' example database is off so runs leave no files behind.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import pytest
from binlogd.protocol.constants import (
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_EXTRA_MULTI_ENGINE_E1,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEADER_LEN,
    QUERY_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
)
from binlogd.protocol.describe import describe, describe_raw, format_decimal
from binlogd.protocol.events import (
    BODY_DECODERS,
    EventDecodeError,
    EventHeader,
    GtidBody,
    QueryBody,
    TableMapBody,
    UserVarBody,
    XaId,
    build_event,
    decompress_payload,
    encode_gtid,
    encode_query,
    encode_table_map,
    encode_user_var,
    fde_checksum_alg,
    iter_binlog,
    parse_annotate_rows,
    parse_append_block,
    parse_binlog_checkpoint,
    parse_event,
    parse_execute_load_query,
    parse_file_id,
    parse_format_description,
    parse_gtid,
    parse_gtid_list,
    parse_header,
    parse_heartbeat,
    parse_incident,
    parse_intvar,
    parse_query,
    parse_query_compressed,
    parse_rand,
    parse_rotate,
    parse_rows,
    parse_start_encryption,
    parse_start_v3,
    parse_status_vars,
    parse_table_map,
    parse_user_var,
    parse_xa_prepare,
    parse_xid,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle_data import ORACLE

FUZZ = settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SLOW_CALL_S = 1.0
ALGS = (0, 1, 255)


def _checked(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a decoder: it may succeed or raise EventDecodeError, nothing else, and must return quickly."""
    start = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    except EventDecodeError:
        return None
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < SLOW_CALL_S, f"{getattr(fn, '__name__', fn)} took {elapsed:.2f}s"


def _all_entry_points(event: bytes) -> None:
    """Every whole-event entry point, under every checksum algorithm a file can declare."""
    _checked(parse_header, event)
    _checked(fde_checksum_alg, event)
    for alg in ALGS:
        _checked(parse_event, event, alg)
        _checked(parse_event, event, alg, verify_crc=True)
        _checked(describe, event, alg)


def _real_events() -> list[tuple[bytes, int]]:
    events: list[tuple[bytes, int]] = []
    for n in (1, 2, 3):
        path = ORACLE / f"mysql-bin.00000{n}"
        if not path.is_file():
            pytest.fail(f"oracle binlog missing: {path}")
        alg = 1
        for _, ev in iter_binlog(path.read_bytes()):
            if ev[4] == FORMAT_DESCRIPTION_EVENT:
                alg = fde_checksum_alg(ev)
            events.append((ev, alg))
    from test_events import REAL_EVENTS  # the other kinds of real events (user vars, XA, compressed, ...)

    events += [(bytes.fromhex(h), alg) for h, alg, _, _ in REAL_EVENTS]
    return events


REAL = _real_events()
real_event = st.sampled_from(REAL)


def test_the_corpus_is_diverse() -> None:
    """Guard against the mutation tests silently running on a tiny or one-type corpus."""
    assert len(REAL) > 100
    assert len({ev[4] for ev, _ in REAL}) >= 15


# --- random bytes ---------------------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=64), st.integers(-5, 80))
def test_parse_header_on_random_bytes(data: bytes, offset: int) -> None:
    header = _checked(parse_header, data, offset)
    if header is not None:
        assert isinstance(header, EventHeader)
        assert offset >= 0 and offset + HEADER_LEN <= len(data)


@FUZZ
@given(st.binary(max_size=300))
def test_whole_event_entry_points_on_random_bytes(data: bytes) -> None:
    _all_entry_points(data)


EDGE_BODIES = (b"", b"\0", bytes(6), bytes(13), bytes(19), bytes(40), b"\xff" * 40, b"\xfb" * 12, bytes(range(64)))


def test_every_type_code_with_edge_bodies() -> None:
    for type_code in range(256):
        for body in EDGE_BODIES:
            for flags, checksum in ((0, True), (0x0080, True), (0x0008, False)):
                _all_entry_points(build_event(type_code=type_code, body=body, checksum=checksum, flags=flags))


@settings(max_examples=1500, deadline=None, database=None)
@given(
    type_code=st.integers(0, 255),
    body=st.binary(max_size=120),
    flags=st.sampled_from([0, 0x0008, 0x0080, 0x8000, 0x0001, 0xFFFF]),
    log_pos=st.sampled_from([0, 4, 1000, 2**32 - 1]),
    checksum=st.booleans(),
)
def test_every_type_code_with_random_bodies(type_code: int, body: bytes, flags: int, log_pos: int,
                                            checksum: bool) -> None:
    event = build_event(type_code=type_code, body=body, checksum=checksum, flags=flags, log_pos=log_pos)
    parsed = _checked(parse_event, event, 1 if checksum else 0, verify_crc=True)
    if parsed is not None:
        assert parsed.header.type_code == type_code and parsed.header.event_length == len(event)
    _all_entry_points(event)


BODY_FUNCTIONS: list[Callable[[bytes], Any]] = [
    parse_format_description,
    parse_start_v3,
    parse_rotate,
    parse_query,
    parse_query_compressed,
    parse_execute_load_query,
    parse_xid,
    parse_gtid,
    parse_gtid_list,
    parse_binlog_checkpoint,
    parse_annotate_rows,
    parse_user_var,
    parse_intvar,
    parse_rand,
    parse_table_map,
    parse_start_encryption,
    parse_incident,
    parse_append_block,
    parse_file_id,
    parse_xa_prepare,
    parse_status_vars,
    decompress_payload,
    lambda b: parse_heartbeat(b, 0),
    lambda b: parse_heartbeat(b, 4),
    lambda b: parse_rows(b, 23),
    lambda b: parse_rows(b, 30),
    lambda b: parse_rows(b, 169),
]


@pytest.mark.parametrize("decoder", BODY_FUNCTIONS, ids=lambda f: getattr(f, "__name__", "lambda"))
@FUZZ
@given(body=st.binary(max_size=200))
def test_every_body_decoder_on_random_bytes(decoder: Callable[[bytes], Any], body: bytes) -> None:
    _checked(decoder, body)


@FUZZ
@given(st.sampled_from(sorted(BODY_DECODERS)), st.binary(max_size=200), st.integers(0, 2**32 - 1))
def test_body_decoder_table_on_random_bytes(type_code: int, body: bytes, log_pos: int) -> None:
    header = EventHeader(0, type_code, 1, HEADER_LEN + len(body), log_pos, 0)
    _checked(BODY_DECODERS[type_code], body, header)


@FUZZ
@given(st.integers(0, 255), st.integers(0, 255), st.binary(max_size=40))
def test_decimal_formatting_on_random_input(precision: int, scale: int, data: bytes) -> None:
    text = _checked(format_decimal, precision, scale, data)
    if text is not None:
        assert text.lstrip("-")[0].isdigit()


# --- mutations of real events ---------------------------------------------------------------------------


@FUZZ
@given(real_event, st.data())
def test_bit_flips_in_real_events(sample: tuple[bytes, int], data: st.DataObject) -> None:
    event, _ = sample
    mutated = bytearray(event)
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(mutated) - 1))
        mutated[index] ^= 1 << data.draw(st.integers(0, 7))
    _all_entry_points(bytes(mutated))


@FUZZ
@given(real_event, st.data())
def test_truncated_real_events(sample: tuple[bytes, int], data: st.DataObject) -> None:
    event, _ = sample
    cut = event[: data.draw(st.integers(0, len(event) - 1))]
    _all_entry_points(cut)
    if len(cut) >= HEADER_LEN:  # the length field made consistent: the body itself is short now
        _all_entry_points(cut[:9] + struct.pack("<I", len(cut)) + cut[13:])


@FUZZ
@given(real_event, st.integers(0, 2**32 - 1), st.booleans())
def test_corrupt_event_length_field(sample: tuple[bytes, int], length: int, resize: bool) -> None:
    event, _ = sample
    mutated = event[:9] + struct.pack("<I", length) + event[13:]
    if resize and length < 4096:
        mutated = (mutated + bytes(length))[:length]
    _all_entry_points(mutated)


@FUZZ
@given(real_event, st.data())
def test_overwritten_body_bytes_with_a_valid_crc(sample: tuple[bytes, int], data: st.DataObject) -> None:
    """Corrupt inner length/count fields (0xFF runs, zeros, random) and re-sign, so decoding gets past the CRC."""
    event, alg = sample
    if len(event) <= HEADER_LEN + 4:
        return
    header = parse_header(event)
    has_crc = alg == 1 or header.type_code == FORMAT_DESCRIPTION_EVENT
    body = bytearray(event[HEADER_LEN : len(event) - (4 if has_crc else 0)])
    if not body:
        return
    start = data.draw(st.integers(0, len(body) - 1))
    filler = data.draw(
        st.sampled_from([b"\xff" * 8, b"\x00" * 8, b"\xfe\xff\xff\xff", b"\xfb"]) | st.binary(min_size=1, max_size=8)
    )
    body[start : start + len(filler)] = filler
    rebuilt = build_event(
        timestamp=header.timestamp,
        type_code=header.type_code,
        server_id=header.server_id,
        log_pos=header.log_pos,
        flags=header.flags,
        body=bytes(body),
        checksum=has_crc,
    )
    parsed = _checked(parse_event, rebuilt, alg, verify_crc=True)
    _checked(describe_raw, rebuilt, alg)
    if parsed is not None:
        _checked(describe, rebuilt, alg)


@settings(max_examples=60, deadline=None, database=None)
@given(st.sampled_from([1, 2, 3]), st.data())
def test_corrupted_binlog_files(n: int, data: st.DataObject) -> None:
    raw = bytearray((ORACLE / f"mysql-bin.00000{n}").read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw = raw[: data.draw(st.integers(0, len(raw)))]
    events = _checked(lambda: list(iter_binlog(bytes(raw))))
    for _, ev in events or []:
        _all_entry_points(ev)


# --- valid but unusual bodies: decoding succeeds, so every describe() formatting path runs -------------


@st.composite
def valid_events(draw: st.DrawFn) -> tuple[bytes, int]:
    """A structurally valid event of a kind whose Info depends on many body fields."""
    kind = draw(st.sampled_from(["user_var", "gtid", "query", "table_map"]))
    if kind == "user_var":
        value = draw(st.binary(max_size=2) | st.binary(max_size=12))
        if draw(st.booleans()):  # a DECIMAL-shaped value: precision, scale, digits
            value = bytes([draw(st.integers(0, 70)), draw(st.integers(0, 40))]) + value
        body = encode_user_var(
            UserVarBody(draw(st.binary(max_size=8)), False, draw(st.integers(0, 6)), draw(st.integers(0, 3400)),
                        value, draw(st.none() | st.integers(0, 255)))
        )
        type_code = USER_VAR_EVENT
    elif kind == "gtid":
        flags2 = draw(st.integers(0, 255))
        flags_extra = draw(st.integers(0, 255))
        xa = None
        if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
            xa = XaId(draw(st.integers(0, 2**32 - 1)), draw(st.binary(max_size=64)), draw(st.binary(max_size=64)))
        body = encode_gtid(GtidBody(
            draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 2**32 - 1)), flags2,
            draw(st.integers(0, 2**64 - 1)) if flags2 & FL_GROUP_COMMIT_ID else None, xa, flags_extra,
            draw(st.integers(0, 255)) if flags_extra & FL_EXTRA_MULTI_ENGINE_E1 else None,
            draw(st.integers(0, 2**64 - 1)) if flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1) else None,
        ))
        type_code = GTID_EVENT
    elif kind == "query":
        body = encode_query(QueryBody(
            0, 0, 0, draw(st.binary(max_size=10)), draw(st.binary(max_size=20)),
            {0: draw(st.integers(0, 2**32 - 1))}, draw(st.just(b"") | st.binary(max_size=6).map(b"\xfa".__add__)),
        ))
        type_code = QUERY_EVENT
    else:
        columns = draw(st.integers(0, 20))
        body = encode_table_map(TableMapBody(
            draw(st.integers(0, 2**48 - 1)), draw(st.integers(0, 65535)), draw(st.binary(max_size=10)),
            draw(st.binary(max_size=10)), columns, bytes(columns), b"", bytes((columns + 7) // 8),
        ))
        type_code = TABLE_MAP_EVENT
    checksum = draw(st.booleans())
    flags = draw(st.sampled_from([0, 0x0008, 0x0004]))
    return build_event(type_code=type_code, body=body, checksum=checksum, flags=flags), int(checksum)


@settings(max_examples=400, deadline=None, database=None)
@given(valid_events())
def test_describe_on_valid_unusual_bodies(sample: tuple[bytes, int]) -> None:
    event, alg = sample
    assert parse_event(event, alg, verify_crc=True).header.event_length == len(event)
    result = _checked(describe, event, alg)
    if result is not None:
        assert isinstance(result[1], str)
