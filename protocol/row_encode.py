"""Python values -> row-based replication bytes, as MariaDB 10.11 writes them (TABLE_MAP, rows events v1).

Pure code. A `ColumnDef` says what a table column is in the binlog (type code, field metadata, signedness,
collation); `table_map_body` and `rows_data` turn column definitions and Python values into the bodies that
`protocol.events.encode_table_map` / `encode_rows` frame. Byte layouts follow MariaDB's Field::pack and
Table_map_log_event (field metadata, optional metadata of binlog_row_metadata=MINIMAL|FULL) and are checked
byte for byte against a real 10.11 primary in tests/test_builder.py.

A value that does not fit its column raises ValueError naming the column: nothing is truncated or rounded
silently (a test that scripts an impossible value wants to hear about it, not read a different one back).
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Final

from binlogd.protocol.column_types import (
    T_BLOB,
    T_DATE,
    T_DATETIME2,
    T_DOUBLE,
    T_FLOAT,
    T_INT24,
    T_LONG,
    T_LONGLONG,
    T_NEWDECIMAL,
    T_SHORT,
    T_STRING,
    T_TIME2,
    T_TIMESTAMP2,
    T_TINY,
    T_VARCHAR,
)
from binlogd.protocol.events import TableMapBody, packed_int

INT_BYTES: Final = {T_TINY: 1, T_SHORT: 2, T_INT24: 3, T_LONG: 4, T_LONGLONG: 8}
NUMERIC_TYPES: Final = frozenset({*INT_BYTES, T_FLOAT, T_DOUBLE, T_NEWDECIMAL})
CHARACTER_TYPES: Final = frozenset({T_VARCHAR, T_STRING, T_BLOB})

# collation id -> (charset name, bytes per character at most, Python codec)
COLLATIONS: Final[dict[int, tuple[str, int, str | None]]] = {
    8: ("latin1", 1, "latin1"),
    33: ("utf8mb3", 3, "utf-8"),
    45: ("utf8mb4", 4, "utf-8"),
    63: ("binary", 1, None),
}

# Table_map flags and rows-event flags MariaDB writes
TM_BIT_LEN_EXACT_F: Final = 1
STMT_END_F: Final = 1

# optional metadata field types (binlog_row_metadata, MySQL WL#4618 as MariaDB 10.5+ writes it)
OM_SIGNEDNESS: Final = 1
OM_DEFAULT_CHARSET: Final = 2
OM_COLUMN_CHARSET: Final = 3
OM_COLUMN_NAME: Final = 4
OM_SIMPLE_PRIMARY_KEY: Final = 8
ROW_METADATA_MODES: Final = ("NO_LOG", "MINIMAL", "FULL")

_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
TIME_MAX_SECONDS: Final = 838 * 3600 + 59 * 60 + 59  # TIME's range is +-838:59:59.999999
TIMESTAMP_MAX: Final = 0x7FFFFFFF  # 2038-01-19 03:14:07 UTC


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column as the binlog sees it.

    `length`: characters for VARCHAR/CHAR, the pack length (1-4 bytes of length prefix) for BLOB/TEXT,
    precision for DECIMAL, fsp for DATETIME/TIMESTAMP/TIME. `scale`: DECIMAL's digits after the point.
    `collation`: for character columns (63 = binary: VARBINARY, BINARY, BLOB).
    """

    name: str
    type: int
    length: int = 0
    scale: int = 0
    unsigned: bool = False
    nullable: bool = True
    primary: bool = False
    collation: int = 45

    @property
    def metadata(self) -> bytes:
        """The column's field metadata in TABLE_MAP (Field::save_field_metadata)."""
        t = self.type
        if t == T_FLOAT:
            return b"\x04"
        if t == T_DOUBLE:
            return b"\x08"
        if t == T_NEWDECIMAL:
            return bytes((self.length, self.scale))
        if t == T_VARCHAR:
            return self.max_bytes.to_bytes(2, "little")
        if t == T_STRING:
            n = self.max_bytes  # CHAR over 255 bytes: the high length bits ride in the real-type byte
            return bytes((T_STRING ^ ((n & 0x300) >> 4), n & 0xFF))
        if t in (T_BLOB, T_DATETIME2, T_TIMESTAMP2, T_TIME2):
            return bytes((self.length,))
        return b""

    @property
    def max_bytes(self) -> int:
        """Bytes a CHAR/VARCHAR value may take (characters times the charset's widest character)."""
        return self.length * COLLATIONS[self.collation][1]


def _fail(col: ColumnDef, value: object, why: str) -> ValueError:
    return ValueError(f"column {col.name!r}: {value!r} {why}")


# --- one value ------------------------------------------------------------------------------------------


def _int(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, int):
        raise _fail(col, v, "is not an int")
    size = INT_BYTES[col.type]
    lo, hi = (0, (1 << 8 * size) - 1) if col.unsigned else (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1)
    if not lo <= v <= hi:
        raise _fail(col, v, f"is out of range [{lo}, {hi}] for a {size}-byte {'un' if col.unsigned else ''}signed int")
    return v.to_bytes(size, "little", signed=not col.unsigned)


def _float(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise _fail(col, v, "is not a float")
    f = float(v)
    if math.isnan(f) or math.isinf(f):
        raise _fail(col, v, "is not a finite number (MariaDB stores no NaN or infinity)")
    try:
        return struct.pack("<f" if col.type == T_FLOAT else "<d", f)
    except OverflowError:
        raise _fail(col, v, "is out of range for FLOAT") from None


def decimal_bytes(col: ColumnDef, v: object) -> bytes:
    """MariaDB's binary DECIMAL (decimal2bin): 9-digit groups big-endian, sign by inverting, top bit flipped."""
    try:
        d = Decimal(v) if isinstance(v, int | str) else v
    except InvalidOperation:
        raise _fail(col, v, "is not a number") from None
    if not isinstance(d, Decimal) or not d.is_finite():
        raise _fail(col, v, "is not a finite Decimal, int or numeric str")
    precision, scale = col.length, col.scale
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    if exp >= 0:
        int_digits, frac_digits = text + "0" * exp, ""
    else:
        int_digits, frac_digits = text[:exp] or "0", text[exp:].rjust(-exp, "0")
    int_digits = int_digits.lstrip("0")
    frac_digits = frac_digits.rstrip("0")
    if len(int_digits) > precision - scale or len(frac_digits) > scale:
        raise _fail(col, v, f"does not fit DECIMAL({precision},{scale})")
    intg = precision - scale
    int_digits = int_digits.rjust(intg, "0")
    frac_digits = frac_digits.ljust(scale, "0")
    out = bytearray()
    head = intg % 9
    if head:
        out += int(int_digits[:head]).to_bytes(_DIG2BYTES[head], "big")
    for i in range(head, intg, 9):
        out += int(int_digits[i : i + 9]).to_bytes(4, "big")
    full = scale - scale % 9
    for i in range(0, full, 9):
        out += int(frac_digits[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_digits[full:]).to_bytes(_DIG2BYTES[scale % 9], "big")
    if sign and any(digits):
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


def _text(col: ColumnDef, v: object) -> bytes:
    """The bytes of a character value: str in the column's charset, or bytes as given."""
    codec = COLLATIONS[col.collation][2]
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    if isinstance(v, str):
        if codec is None:
            raise _fail(col, v[:40], "is a str for a binary column (give bytes)")
        try:
            data = v.encode(codec)
        except UnicodeEncodeError:
            raise _fail(col, v[:40], f"cannot be encoded in {COLLATIONS[col.collation][0]}") from None
        if col.type != T_BLOB and len(v) > col.length:
            raise _fail(col, v[:40], f"has {len(v)} characters; the column holds {col.length}")
        return data
    raise _fail(col, v, "is not a str or bytes")


def _string(col: ColumnDef, v: object) -> bytes:
    data = _text(col, v)
    if col.type == T_STRING:
        data = data.rstrip(b" " if col.collation != 63 else b"\0")  # Field_string::pack drops the padding
    if len(data) > col.max_bytes:
        raise _fail(col, data[:40], f"is {len(data)} bytes; the column holds {col.max_bytes}")
    return (len(data).to_bytes(1 if col.max_bytes < 256 else 2, "little")) + data


def _blob(col: ColumnDef, v: object) -> bytes:
    data = _text(col, v)
    if len(data) >= 1 << (8 * col.length):
        raise _fail(col, data[:40], f"is {len(data)} bytes; a {col.length}-byte length prefix holds less")
    return len(data).to_bytes(col.length, "little") + data


def _frac(col: ColumnDef, v: object, usec: int) -> bytes:
    fsp = col.length
    if usec % 10 ** (6 - fsp):
        raise _fail(col, v, f"has more fractional digits than the column's {fsp}")
    n = (fsp + 1) // 2
    return (usec // (10000, 100, 1)[n - 1]).to_bytes(n, "big") if n else b""


def _date(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, dt.date) or isinstance(v, dt.datetime):
        raise _fail(col, v, "is not a datetime.date")
    return (v.day | v.month << 5 | v.year << 9).to_bytes(3, "little")


def _datetime(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, dt.datetime) or v.tzinfo is not None:
        raise _fail(col, v, "is not a naive datetime.datetime")
    ymd = ((v.year * 13 + v.month) << 5) | v.day
    hms = v.hour << 12 | v.minute << 6 | v.second
    return ((ymd << 17 | hms) + 0x8000000000).to_bytes(5, "big") + _frac(col, v, v.microsecond)


def _timestamp(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, dt.datetime) or v.tzinfo is None:
        raise _fail(col, v, "is not a timezone-aware datetime.datetime (TIMESTAMP is stored in UTC)")
    delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    sec = delta.days * 86400 + delta.seconds
    if not 0 < sec <= TIMESTAMP_MAX and not (sec == 0 and delta.microseconds == 0):
        raise _fail(col, v, "is outside TIMESTAMP's range 1970-01-01 00:00:01 .. 2038-01-19 03:14:07 UTC")
    return sec.to_bytes(4, "big") + _frac(col, v, delta.microseconds)


def _time(col: ColumnDef, v: object) -> bytes:
    if not isinstance(v, dt.timedelta):
        raise _fail(col, v, "is not a datetime.timedelta")
    total_us = v // dt.timedelta(microseconds=1)
    neg = total_us < 0
    sec, usec = divmod(abs(total_us), 1_000_000)
    if sec > TIME_MAX_SECONDS:
        raise _fail(col, v, "is outside TIME's range -838:59:59 .. 838:59:59")
    _frac(col, v, usec)  # the precision check
    h, rem = divmod(sec, 3600)
    packed = ((h << 12 | (rem // 60) << 6 | rem % 60) << 24) + usec
    nr = -packed if neg else packed
    fsp = col.length
    if fsp >= 5:
        return (nr + 0x800000000000).to_bytes(6, "big")
    intpart = (nr >> 24) + 0x800000  # sql/compat56.cc my_time_packed_to_binary: floor shift, C remainder
    frac = abs(nr) % (1 << 24) * (-1 if neg else 1)
    if fsp in (1, 2):
        return intpart.to_bytes(3, "big") + (int(frac / 10000) & 0xFF).to_bytes(1, "big")
    if fsp in (3, 4):
        return intpart.to_bytes(3, "big") + (int(frac / 100) & 0xFFFF).to_bytes(2, "big")
    return intpart.to_bytes(3, "big")


def encode_value(col: ColumnDef, value: object) -> bytes:
    """One non-NULL value as Field::pack writes it into a row image."""
    t = col.type
    if t in INT_BYTES:
        return _int(col, value)
    if t in (T_FLOAT, T_DOUBLE):
        return _float(col, value)
    if t == T_NEWDECIMAL:
        return decimal_bytes(col, value)
    if t in (T_VARCHAR, T_STRING):
        return _string(col, value)
    if t == T_BLOB:
        return _blob(col, value)
    if t == T_DATE:
        return _date(col, value)
    if t == T_DATETIME2:
        return _datetime(col, value)
    if t == T_TIMESTAMP2:
        return _timestamp(col, value)
    if t == T_TIME2:
        return _time(col, value)
    raise ValueError(f"column {col.name!r}: type code {t} is not supported by the encoder")


# --- images, TABLE_MAP, rows ------------------------------------------------------------------------------


def _bitmap(bits: Sequence[bool], pad: bool = False) -> bytes:
    """Bit i = bits[i], least significant bit first; `pad` sets the unused high bits of the last byte."""
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b:
            out[i >> 3] |= 1 << (i & 7)
    if pad and len(bits) % 8:
        out[-1] |= 0xFF << (len(bits) % 8) & 0xFF
    return bytes(out)


def row_image(columns: Sequence[ColumnDef], row: Sequence[object]) -> bytes:
    """NULL bitmap + the packed non-NULL values of one full row image."""
    if len(row) != len(columns):
        raise ValueError(f"row {tuple(row)!r}: {len(row)} values for {len(columns)} columns")
    values = bytearray()
    for col, v in zip(columns, row, strict=True):
        if v is None:
            if not col.nullable:
                raise ValueError(f"column {col.name!r}: NULL in a NOT NULL column")
            continue
        values += encode_value(col, v)
    return _bitmap([v is None for v in row], pad=True) + bytes(values)  # pack_row leaves the unused bits set


def rows_data(columns: Sequence[ColumnDef], images: Sequence[Sequence[object]], *, update: bool = False) -> bytes:
    """The data part of a v1 rows event with every column present (binlog_row_image=FULL): column count,
    columns-present bitmap (twice for UPDATE: before and after), then the images (UPDATE: before, after...)."""
    n = len(columns)
    present = _bitmap([True] * n)
    head = packed_int(n) + present + (present if update else b"")
    return head + b"".join(row_image(columns, img) for img in images)


def _optional_metadata(columns: Sequence[ColumnDef], mode: str) -> bytes:
    """binlog_row_metadata=MINIMAL: signedness and charsets; FULL adds column names and the primary key."""
    if mode == "NO_LOG":
        return b""

    def field(code: int, value: bytes) -> bytes:
        return bytes((code,)) + packed_int(len(value)) + value

    out = bytearray()
    numeric = [c for c in columns if c.type in NUMERIC_TYPES]
    if numeric:
        bits = [c.unsigned for c in numeric]
        signed = bytearray((len(bits) + 7) // 8)  # most significant bit first
        for i, b in enumerate(bits):
            if b:
                signed[i >> 3] |= 0x80 >> (i & 7)
        out += field(OM_SIGNEDNESS, bytes(signed))
    chars = [c.collation for c in columns if c.type in CHARACTER_TYPES]
    if chars:
        default = max(set(chars), key=lambda x: (chars.count(x), -chars.index(x)))
        by_default = packed_int(default) + b"".join(
            packed_int(i) + packed_int(c) for i, c in enumerate(chars) if c != default)
        by_column = b"".join(packed_int(c) for c in chars)
        out += (field(OM_DEFAULT_CHARSET, by_default) if len(by_default) <= len(by_column)
                else field(OM_COLUMN_CHARSET, by_column))
    if mode == "FULL":
        names = [c.name.encode() for c in columns]
        out += field(OM_COLUMN_NAME, b"".join(packed_int(len(n)) + n for n in names))
        pk = [i for i, c in enumerate(columns) if c.primary]
        if pk:
            out += field(OM_SIMPLE_PRIMARY_KEY, b"".join(packed_int(i) for i in pk))
    return bytes(out)


def table_map_body(table_id: int, db: str, table: str, columns: Sequence[ColumnDef],
                   row_metadata: str = "FULL") -> TableMapBody:
    """The TABLE_MAP of `db.table` with these columns (flags TM_BIT_LEN_EXACT_F, as MariaDB writes it)."""
    if row_metadata not in ROW_METADATA_MODES:
        raise ValueError(f"row_metadata={row_metadata!r}: one of {', '.join(ROW_METADATA_MODES)}")
    if not columns:
        raise ValueError(f"table {db}.{table}: no columns")
    for name, what in ((db, "db"), (table, "table")):
        if not name or len(name.encode()) > 64 or "\0" in name:
            raise ValueError(f"{what}={name!r}: 1 to 64 bytes without NUL")
    return TableMapBody(
        table_id=table_id, flags=TM_BIT_LEN_EXACT_F, db=db.encode(), table=table.encode(),
        column_count=len(columns), column_types=bytes(c.type for c in columns),
        metadata=b"".join(c.metadata for c in columns), null_bitmap=_bitmap([c.nullable for c in columns]),
        optional_metadata=_optional_metadata(columns, row_metadata))
