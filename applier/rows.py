"""A tight decoder for row events as MariaDB 10.11 writes them: TABLE_MAP field metadata and row images.

`protocol/events.py` splits TABLE_MAP and rows events into their header parts (`TableMapBody`, `RowsBody`);
this module reads what is inside: per-column metadata (`TableMap`) and the before/after images of every row
(`decode_rows`). It is sans-IO and works on bytes with `struct.unpack_from` and `int.from_bytes`, because it
runs once per row on the applier's hot path.

Values come out as the Python values pymysql turns into the right SQL literal:

* integers (signed as stored; pass `unsigned` flags to get unsigned values, as the target's column
  definitions say: MariaDB's default `binlog_row_metadata=NO_LOG` does not carry signedness),
  YEAR, BIT, ENUM (its index) and SET (its bitmask) as `int`;
* DECIMAL as `decimal.Decimal` (exact), FLOAT/DOUBLE as `float`;
* DATE/TIME/DATETIME[2] as text ('2024-01-31 12:00:00.123456', zero dates included, negative times too);
  TIMESTAMP[2] as UTC text (the applier sets `time_zone='+00:00'` for row events);
* character and binary strings, BLOB/TEXT (JSON is a LONGTEXT in MariaDB) and GEOMETRY as `bytes`
  (the column's charset is the target's business: `apply.py` decodes by the target column's charset).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from binlogd.protocol.column_types import (
    T_BIT,
    T_BLOB,
    T_BLOB_COMPRESSED,
    T_DATE,
    T_DATETIME,
    T_DATETIME2,
    T_DOUBLE,
    T_ENUM,
    T_FLOAT,
    T_GEOMETRY,
    T_INT24,
    T_JSON,
    T_LONG,
    T_LONG_BLOB,
    T_LONGLONG,
    T_MEDIUM_BLOB,
    T_NEWDATE,
    T_NEWDECIMAL,
    T_NULL,
    T_SET,
    T_SHORT,
    T_STRING,
    T_TIME,
    T_TIME2,
    T_TIMESTAMP,
    T_TIMESTAMP2,
    T_TINY,
    T_TINY_BLOB,
    T_VAR_STRING,
    T_VARCHAR,
    T_VARCHAR_COMPRESSED,
    T_YEAR,
)
from binlogd.protocol.constants import (
    COMPRESSED_ROWS_TYPES,
    DELETE_ROWS_TYPES,
    UPDATE_ROWS_TYPES,
    WRITE_ROWS_TYPES,
)
from binlogd.protocol.events import EventDecodeError, TableMapBody, decompress_payload

_META_1: Final = frozenset({T_FLOAT, T_DOUBLE, T_BLOB, T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB, T_GEOMETRY, T_JSON,
                            T_TIMESTAMP2, T_DATETIME2, T_TIME2, T_BLOB_COMPRESSED})
_META_2: Final = frozenset({T_VARCHAR, T_VAR_STRING, T_STRING, T_NEWDECIMAL, T_BIT, T_ENUM, T_SET,
                            T_VARCHAR_COMPRESSED})
INT_SIZES: Final = {T_TINY: 1, T_SHORT: 2, T_INT24: 3, T_LONG: 4, T_LONGLONG: 8}


_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_F = struct.Struct("<f")
_D = struct.Struct("<d")


@dataclass(frozen=True, slots=True)
class Column:
    """One TABLE_MAP column: its binlog type (the real type for CHAR/ENUM/SET) and decoded metadata."""

    type: int
    meta: int = 0  # length bytes, fsp, max length, pack length
    meta2: int = 0  # decimal scale, bit count in the last byte


@dataclass(frozen=True, slots=True)
class TableMap:
    table_id: int
    db: str
    table: str
    columns: tuple[Column, ...]


def decode_table_map(body: TableMapBody) -> TableMap:
    """Column types and field metadata of a TABLE_MAP (MariaDB Table_map_log_event::save_field_metadata)."""
    md = body.metadata
    p = 0
    cols: list[Column] = []
    try:
        for t in body.column_types:
            if t in _META_1:
                cols.append(Column(t, md[p]))
                p += 1
            elif t in _META_2:
                b0, b1 = md[p], md[p + 1]
                p += 2
                if t == T_STRING:
                    if b0 & 0x30 != 0x30:  # CHAR longer than 255: the high length bits ride in the type byte
                        real, length = b0 | 0x30, b1 | (((b0 & 0x30) ^ 0x30) << 4)
                    else:
                        real, length = b0, b1
                    cols.append(Column(real, length))
                elif t in (T_VARCHAR, T_VAR_STRING, T_VARCHAR_COMPRESSED):
                    cols.append(Column(t, b0 | b1 << 8))
                elif t == T_NEWDECIMAL:
                    cols.append(Column(t, b0, b1))  # precision, scale
                elif t == T_BIT:
                    cols.append(Column(t, b1, b0))  # whole bytes, bits in the last byte
                else:  # ENUM/SET as their own type: pack length
                    cols.append(Column(t, b1))
            else:
                cols.append(Column(t))
    except IndexError:
        raise EventDecodeError(f"Table_map {body.db!r}.{body.table!r}: field metadata too short") from None
    return TableMap(body.table_id, body.db.decode("utf-8", "replace"), body.table.decode("utf-8", "replace"),
                    tuple(cols))


# --- temporal helpers -------------------------------------------------------------------------------------


def _frac(buf: bytes, p: int, fsp: int) -> tuple[int, int]:
    """Big-endian fractional part of a *2 temporal type -> (microseconds, bytes used)."""
    n = (fsp + 1) // 2
    if not n:
        return 0, 0
    v = int.from_bytes(buf[p : p + n], "big")
    return v * (10000, 100, 1)[n - 1], n


def _fmt_frac(usec: int, fsp: int) -> str:
    return f".{usec:06d}"[: fsp + 1] if fsp else ""


def _time2(buf: bytes, p: int, fsp: int) -> tuple[str, int]:
    """TIME2 (MySQL 5.6 format, sql-common/my_time.c my_time_packed_from_binary)."""
    if fsp in (1, 2):
        intpart = int.from_bytes(buf[p : p + 3], "big") - 0x800000
        frac = buf[p + 3]
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100
        packed, n = (intpart << 24) + frac * 10000, 4
    elif fsp in (3, 4):
        intpart = int.from_bytes(buf[p : p + 3], "big") - 0x800000
        frac = int.from_bytes(buf[p + 3 : p + 5], "big")
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x10000
        packed, n = (intpart << 24) + frac * 100, 5
    elif fsp in (5, 6):
        packed, n = int.from_bytes(buf[p : p + 6], "big") - 0x800000000000, 6
    else:
        packed, n = (int.from_bytes(buf[p : p + 3], "big") - 0x800000) << 24, 3
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    hms, usec = packed >> 24, packed & 0xFFFFFF
    h, m, s = (hms >> 12) & 0x3FF, (hms >> 6) & 0x3F, hms & 0x3F
    return f"{sign}{h:02d}:{m:02d}:{s:02d}{_fmt_frac(usec, fsp)}", n


def _datetime2(buf: bytes, p: int, fsp: int) -> tuple[str, int]:
    intpart = int.from_bytes(buf[p : p + 5], "big") - 0x8000000000
    usec, n = _frac(buf, p + 5, fsp)
    ymd, hms = intpart >> 17, intpart & 0x1FFFF
    ym = ymd >> 5
    y, mo, d = ym // 13, ym % 13, ymd & 0x1F
    return (f"{y:04d}-{mo:02d}-{d:02d} {hms >> 12:02d}:{(hms >> 6) & 0x3F:02d}:{hms & 0x3F:02d}"
            f"{_fmt_frac(usec, fsp)}", 5 + n)


def _utc_text(sec: int, usec: int, fsp: int) -> str:
    if sec == 0 and usec == 0:
        return "0000-00-00 00:00:00" + _fmt_frac(0, fsp)
    days, rem = divmod(sec, 86400)
    y, mo, d = _civil_from_days(days)
    return f"{y:04d}-{mo:02d}-{d:02d} {rem // 3600:02d}:{rem // 60 % 60:02d}:{rem % 60:02d}{_fmt_frac(usec, fsp)}"


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """Days since 1970-01-01 -> (y, m, d) (H. Hinnant's algorithm; no datetime object per value)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return intg // 9 * 4 + _DIG2BYTES[intg % 9] + scale // 9 * 4 + _DIG2BYTES[scale % 9]


def decode_decimal(buf: bytes, p: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """MySQL binary DECIMAL (strings/decimal.c bin2decimal): sign-flipped, base-1e9 big-endian groups."""
    intg = precision - scale
    size = decimal_size(precision, scale)
    raw = bytearray(buf[p : p + size])
    if len(raw) != size:
        raise EventDecodeError("decimal value truncated")
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    q = 0
    parts: list[str] = []
    lead = _DIG2BYTES[intg % 9]
    if lead:
        parts.append(str(int.from_bytes(raw[:lead], "big")))
        q = lead
    for _ in range(intg // 9):
        parts.append(f"{int.from_bytes(raw[q : q + 4], 'big'):09d}")
        q += 4
    frac: list[str] = []
    for _ in range(scale // 9):
        frac.append(f"{int.from_bytes(raw[q : q + 4], 'big'):09d}")
        q += 4
    tail = _DIG2BYTES[scale % 9]
    if tail:
        frac.append(f"{int.from_bytes(raw[q : q + tail], 'big'):0{scale % 9}d}")
    text = ("-" if negative else "") + ("".join(parts).lstrip("0") or "0") + ("." + "".join(frac) if frac else "")
    return Decimal(text), size


# --- one value -------------------------------------------------------------------------------------------


def _value(col: Column, buf: bytes, p: int, unsigned: bool) -> tuple[Any, int]:
    """Decode one non-NULL value at buf[p:] -> (value, bytes used)."""
    t = col.type
    size = INT_SIZES.get(t)
    if size is not None:
        return int.from_bytes(buf[p : p + size], "little", signed=not unsigned), size
    if t in (T_VARCHAR, T_VAR_STRING, T_STRING):
        if col.meta > 255:
            n = buf[p] | buf[p + 1] << 8
            return buf[p + 2 : p + 2 + n], 2 + n
        n = buf[p]
        return buf[p + 1 : p + 1 + n], 1 + n
    if t in (T_BLOB, T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB, T_GEOMETRY, T_JSON):
        lb = col.meta
        n = int.from_bytes(buf[p : p + lb], "little")
        return buf[p + lb : p + lb + n], lb + n
    if t == T_NEWDECIMAL:
        return decode_decimal(buf, p, col.meta, col.meta2)
    if t == T_DATETIME2:
        return _datetime2(buf, p, col.meta)
    if t == T_TIMESTAMP2:
        usec, n = _frac(buf, p + 4, col.meta)
        return _utc_text(int.from_bytes(buf[p : p + 4], "big"), usec, col.meta), 4 + n
    if t == T_TIME2:
        return _time2(buf, p, col.meta)
    if t in (T_DATE, T_NEWDATE):
        v = int.from_bytes(buf[p : p + 3], "little")
        return f"{v >> 9:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}", 3
    if t == T_DOUBLE:
        return _D.unpack_from(buf, p)[0], 8
    if t == T_FLOAT:
        return _F.unpack_from(buf, p)[0], 4
    if t == T_YEAR:
        return (buf[p] + 1900 if buf[p] else 0), 1
    if t in (T_ENUM, T_SET):
        return int.from_bytes(buf[p : p + col.meta], "little"), col.meta
    if t == T_BIT:
        n = col.meta + (1 if col.meta2 else 0)
        return int.from_bytes(buf[p : p + n], "big"), n
    if t == T_TIMESTAMP:
        return _utc_text(int.from_bytes(buf[p : p + 4], "little"), 0, 0), 4
    if t == T_DATETIME:
        v = int.from_bytes(buf[p : p + 8], "little")
        d, tm = divmod(v, 1000000)
        return f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} {tm // 10000:02d}:{tm // 100 % 100:02d}:" \
               f"{tm % 100:02d}", 8
    if t == T_TIME:
        v = int.from_bytes(buf[p : p + 3], "little", signed=True)
        sign, v = ("-" if v < 0 else ""), abs(v)
        return f"{sign}{v // 10000:02d}:{v // 100 % 100:02d}:{v % 100:02d}", 3
    if t == T_NULL:
        return None, 0
    raise EventDecodeError(f"column type {t} is not supported by the applier (compressed or pre-5.0 column)")


Reader = Callable[[bytes, int], tuple[Any, int]]


def _reader(col: Column, unsigned: bool) -> Reader:
    """A decoder specialised for one column (the hot path: no type dispatch per value)."""
    t = col.type
    size = INT_SIZES.get(t)
    if size is not None:
        signed = not unsigned
        return lambda b, p: (int.from_bytes(b[p : p + size], "little", signed=signed), size)
    if t in (T_VARCHAR, T_VAR_STRING, T_STRING) and col.meta <= 255:
        return lambda b, p: (b[p + 1 : p + 1 + b[p]], 1 + b[p])
    if t == T_DOUBLE:
        return lambda b, p: (_D.unpack_from(b, p)[0], 8)
    return lambda b, p: _value(col, b, p, unsigned)


def readers(tm: TableMap, unsigned: Sequence[bool] = ()) -> list[Reader]:
    """Per-column decoders for `decode_rows`; build once per TABLE_MAP and target table."""
    return [_reader(c, unsigned[i] if i < len(unsigned) else False) for i, c in enumerate(tm.columns)]


# --- rows ----------------------------------------------------------------------------------------------------


def _bits(bitmap: bytes, n: int) -> list[int]:
    return [i for i in range(n) if bitmap[i >> 3] >> (i & 7) & 1]


def _image(
    tm: TableMap, present: Sequence[int], rd: Sequence[Reader], buf: bytes, p: int
) -> tuple[dict[int, Any], int]:
    nbytes = (len(present) + 7) // 8
    nulls = buf[p : p + nbytes]
    if len(nulls) != nbytes:
        raise EventDecodeError("row image truncated in its NULL bitmap")
    p += nbytes
    row: dict[int, Any] = {}
    for k, i in enumerate(present):
        if nulls[k >> 3] >> (k & 7) & 1:
            row[i] = None
            continue
        row[i], n = rd[i](buf, p)
        p += n
    if p > len(buf):
        raise EventDecodeError(f"row image of {tm.db}.{tm.table} runs past the end of the event")
    return row, p


@dataclass(frozen=True, slots=True)
class RowsChange:
    """Decoded rows event: kind 'write'|'update'|'delete' and (before, after) images keyed by column index."""

    kind: str
    rows: list[tuple[dict[int, Any] | None, dict[int, Any] | None]]


def decode_rows(
    tm: TableMap, type_code: int, data: bytes, unsigned: Sequence[bool] = (), rd: Sequence[Reader] | None = None
) -> RowsChange:
    """`data` is `RowsBody.data` (width, column bitmaps, rows); `rd` from `readers(tm, unsigned)` when cached.

    Raises EventDecodeError on malformed input.
    """
    if rd is None:
        rd = readers(tm, unsigned)
    try:
        width = data[0]
        p = 1
        if width >= 251:
            size = {252: 2, 253: 3, 254: 8}[width]
            width = int.from_bytes(data[1 : 1 + size], "little")
            p = 1 + size
        if width != len(tm.columns):
            raise EventDecodeError(f"rows event for {tm.db}.{tm.table} has {width} columns, its Table_map "
                                   f"{len(tm.columns)}")
        nb = (width + 7) // 8
        before_cols = _bits(data[p : p + nb], width)
        p += nb
        after_cols = before_cols
        if type_code in UPDATE_ROWS_TYPES:
            after_cols = _bits(data[p : p + nb], width)
            p += nb
        buf = bytes(data[p:])
        if type_code in COMPRESSED_ROWS_TYPES:
            buf = decompress_payload(buf, "compressed rows")
        rows: list[tuple[dict[int, Any] | None, dict[int, Any] | None]] = []
        q = 0
        if type_code in WRITE_ROWS_TYPES:
            kind = "write"
            while q < len(buf):
                after, q = _image(tm, before_cols, rd, buf, q)
                rows.append((None, after))
        elif type_code in DELETE_ROWS_TYPES:
            kind = "delete"
            while q < len(buf):
                before, q = _image(tm, before_cols, rd, buf, q)
                rows.append((before, None))
        elif type_code in UPDATE_ROWS_TYPES:
            kind = "update"
            while q < len(buf):
                before, q = _image(tm, before_cols, rd, buf, q)
                after, q = _image(tm, after_cols, rd, buf, q)
                rows.append((before, after))
        else:
            raise EventDecodeError(f"event type {type_code} is not a rows event")
    except (IndexError, KeyError, struct.error) as e:
        raise EventDecodeError(f"rows event for {tm.db}.{tm.table} malformed: {e!r}") from None
    return RowsChange(kind, rows)
