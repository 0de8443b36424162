"""`-v` / `-vv` text of row events: the `###` pseudo-SQL mariadb-binlog 10.11 prints (log_event_print_value,
print_verbose_one_row in sql/log_event_client.cc), value by value in its formats.

The applier's decoder (applier/rows.py) turns images into values for SQL execution; this module prints them the way
mariadb-binlog does (DATE as 'YYYY:MM:DD', FLOAT as %-20g, TIMESTAMP as seconds, strings with control bytes as \\xNN
and quotes left as they are), so it keeps its own reader: the formats, not the byte layout, are what differ.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from binlogd.protocol.checksum import set_crc
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
    CRC_LEN,
    DELETE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    UPDATE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_EVENT,
    UPDATE_ROWS_EVENT_V1,
    UPDATE_ROWS_TYPES,
    WRITE_ROWS_COMPRESSED_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
    WRITE_ROWS_TYPES,
)
from binlogd.protocol.describe import format_decimal
from binlogd.protocol.events import EventDecodeError, RowsBody, TableMapBody, decompress_payload

ROWS_NAMES: Final = {
    WRITE_ROWS_EVENT_V1: b"Write_rows", WRITE_ROWS_EVENT: b"Write_rows",
    UPDATE_ROWS_EVENT_V1: b"Update_rows", UPDATE_ROWS_EVENT: b"Update_rows",
    DELETE_ROWS_EVENT_V1: b"Delete_rows", DELETE_ROWS_EVENT: b"Delete_rows",
    WRITE_ROWS_COMPRESSED_EVENT_V1: b"Write_compressed_rows", WRITE_ROWS_COMPRESSED_EVENT: b"Write_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: b"Update_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT: b"Update_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT_V1: b"Delete_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT: b"Delete_compressed_rows",
}
_META_1: Final = frozenset({T_FLOAT, T_DOUBLE, T_BLOB, T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB, T_GEOMETRY, T_JSON,
                            T_TIMESTAMP2, T_DATETIME2, T_TIME2, T_BLOB_COMPRESSED})
_META_BE2: Final = frozenset({T_NEWDECIMAL, T_STRING, T_ENUM, T_SET, T_VAR_STRING})
_META_LE2: Final = frozenset({T_VARCHAR, T_VARCHAR_COMPRESSED})
_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


@dataclass(frozen=True, slots=True)
class TableDef:
    """table_def of a Table_map: per column the binlog type, the 16-bit field metadata and nullability."""

    db: bytes
    table: bytes
    types: tuple[int, ...]
    meta: tuple[int, ...]
    nullable: tuple[bool, ...]

    @classmethod
    def of(cls, tm: TableMapBody) -> TableDef:
        md = tm.metadata
        p = 0
        meta: list[int] = []
        for t in tm.column_types:
            if t in _META_1:
                meta.append(md[p] if p < len(md) else 0)
                p += 1
            elif t == T_BIT:
                meta.append((md[p] if p < len(md) else 0) | (md[p + 1] if p + 1 < len(md) else 0) << 8)
                p += 2
            elif t in _META_BE2:
                meta.append((md[p] if p < len(md) else 0) << 8 | (md[p + 1] if p + 1 < len(md) else 0))
                p += 2
            elif t in _META_LE2:
                meta.append((md[p] if p < len(md) else 0) | (md[p + 1] if p + 1 < len(md) else 0) << 8)
                p += 2
            else:
                meta.append(0)
        nullable = tuple(bool(tm.null_bitmap[i >> 3] >> (i & 7) & 1) if (i >> 3) < len(tm.null_bitmap) else False
                         for i in range(tm.column_count))
        return cls(tm.db, tm.table, tuple(tm.column_types), tuple(meta), nullable)

    def type(self, i: int) -> int:
        """table_def::type(): a STRING column's real type (ENUM/SET) from its metadata."""
        t = self.types[i]
        if t == T_STRING and self.meta[i] >> 8 in (T_ENUM, T_SET):
            return self.meta[i] >> 8
        return t


def _quoted(data: bytes) -> bytes:
    """my_b_write_quoted: bytes above 0x1F as they are (quotes too), the others as \\xNN."""
    return b"'" + b"".join(bytes((c,)) if c > 0x1F else b"\\x%02x" % c for c in data) + b"'"


def _bits(data: bytes, nbits: int) -> bytes:
    """my_b_write_bit: b'0101' of the low `nbits` bits, big-endian."""
    total = ((nbits + 7) // 8) * 8
    value = int.from_bytes(data, "big")
    return b"b'" + format(value, f"0{total}b")[total - nbits:].encode() + b"'"


def _int_text(si: int, ui: int) -> bytes:
    return b"%d" % si + (b" (%d)" % ui if si < 0 else b"")


def _frac_usec(buf: bytes, p: int, fsp: int, signed: bool) -> int:
    """The fraction of a *2 temporal value in microseconds (1-2 digits: 1 byte, 3-4: 2 bytes, 5-6: 3 bytes)."""
    n = (fsp + 1) // 2
    if n == 0:
        return 0
    return int.from_bytes(buf[p:p + n], "big", signed=signed) * {1: 10000, 2: 100, 3: 1}[n]


def _fmt_frac(usec: int, fsp: int) -> bytes:
    return b"." + (b"%06d" % usec)[:fsp] if fsp else b""


def _value(t: int, meta: int, buf: bytes, p: int) -> tuple[bytes, int, bytes]:
    """(text, bytes used, typestr) of one non-NULL value at buf[p:] (log_event_print_value)."""
    length = 0
    if t == T_STRING:
        if meta >= 256:
            b0, b1 = meta >> 8, meta & 0xFF
            if b0 & 0x30 != 0x30:
                length, t = b1 | (((b0 & 0x30) ^ 0x30) << 4), b0 | 0x30
            else:
                length = meta & 0xFF
        else:
            length = meta
    if t == T_LONG:
        return _int_text(int.from_bytes(buf[p:p + 4], "little", signed=True),
                         int.from_bytes(buf[p:p + 4], "little")), 4, b"INT"
    if t == T_TINY:
        return _int_text(int.from_bytes(buf[p:p + 1], "little", signed=True), buf[p]), 1, b"TINYINT"
    if t == T_SHORT:
        return _int_text(int.from_bytes(buf[p:p + 2], "little", signed=True),
                         int.from_bytes(buf[p:p + 2], "little")), 2, b"SHORTINT"
    if t == T_INT24:
        return _int_text(int.from_bytes(buf[p:p + 3], "little", signed=True),
                         int.from_bytes(buf[p:p + 3], "little")), 3, b"MEDIUMINT"
    if t == T_LONGLONG:
        return _int_text(int.from_bytes(buf[p:p + 8], "little", signed=True),
                         int.from_bytes(buf[p:p + 8], "little")), 8, b"LONGINT"
    if t == T_NEWDECIMAL:
        prec, scale = meta >> 8, meta & 0xFF
        intg, frac = prec - scale, scale
        size = (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (frac // 9) * 4 + _DIG2BYTES[frac % 9]
        return format_decimal(prec, scale, buf[p:p + size]).encode(), size, b"DECIMAL(%d,%d)" % (prec, scale)
    if t == T_FLOAT:
        return b"%-20g" % struct.unpack_from("<f", buf, p)[0], 4, b"FLOAT"
    if t == T_DOUBLE:
        return b"%-.20g" % struct.unpack_from("<d", buf, p)[0], 8, b"DOUBLE"
    if t == T_BIT:
        nbits = (meta >> 8) * 8 + (meta & 0xFF)
        n = (nbits + 7) // 8
        return _bits(buf[p:p + n], nbits), n, b"BIT(%d)" % nbits
    if t == T_TIMESTAMP:
        return b"%d" % int.from_bytes(buf[p:p + 4], "little"), 4, b"TIMESTAMP"
    if t == T_TIMESTAMP2:
        sec = int.from_bytes(buf[p:p + 4], "big")
        usec = _frac_usec(buf, p + 4, meta, signed=True)
        return b"%d" % sec + _fmt_frac(usec, meta), 4 + (meta + 1) // 2, b"TIMESTAMP(%d)" % meta
    if t == T_DATETIME:
        v = int.from_bytes(buf[p:p + 8], "little")
        d, tm = divmod(v, 1000000)
        return (b"'%04d-%02d-%02d %02d:%02d:%02d'" % (d // 10000, d % 10000 // 100, d % 100, tm // 10000,
                                                       tm % 10000 // 100, tm % 100), 8, b"DATETIME")
    if t == T_DATETIME2:
        n = 5 + (meta + 1) // 2
        packed = int.from_bytes(buf[p:p + 5], "big") - 0x8000000000
        usec = _frac_usec(buf, p + 5, meta, signed=False)
        ymd, hms = packed >> 17, packed & 0x1FFFF
        ym, day = ymd >> 5, ymd & 31
        text = b"%04d-%02d-%02d %02d:%02d:%02d" % (ym // 13, ym % 13, day, hms >> 12, (hms >> 6) & 63, hms & 63)
        return _quoted(text + _fmt_frac(usec, meta)), n, b"DATETIME(%d)" % meta
    if t == T_TIME:
        v = int.from_bytes(buf[p:p + 3], "little", signed=True)
        a = abs(v)
        return b"'%s%02d:%02d:%02d'" % (b"-" if v < 0 else b"", a // 10000, a % 10000 // 100, a % 100), 3, b"TIME"
    if t == T_TIME2:
        return _time2(buf, p, meta)
    if t in (T_NEWDATE, T_DATE):
        v = int.from_bytes(buf[p:p + 3], "little")
        return b"'%04d:%02d:%02d'" % (v >> 9, (v >> 5) & 15, v & 31), 3, b"DATE"
    if t == T_YEAR:
        return b"%04d" % (buf[p] + 1900), 1, b"YEAR"
    if t == T_ENUM:
        n = meta & 0xFF
        if n not in (1, 2):
            raise EventDecodeError(f"!! Unknown ENUM packlen={n}")
        return b"%d" % int.from_bytes(buf[p:p + n], "little"), n, b"ENUM(%d byte%s)" % (n, b"s" if n > 1 else b"")
    if t == T_SET:
        n = meta & 0xFF
        return _bits(buf[p:p + n], n * 8), n, b"SET(%d bytes)" % n
    if t in (T_BLOB, T_BLOB_COMPRESSED):
        if meta not in (1, 2, 3, 4):
            raise EventDecodeError(f"!! Unknown BLOB packlen={meta}")
        n = int.from_bytes(buf[p:p + meta], "little")
        name = (b"TINYBLOB/TINYTEXT", b"BLOB/TEXT", b"MEDIUMBLOB/MEDIUMTEXT", b"LONGBLOB/LONGTEXT")[meta - 1]
        return _quoted(buf[p + meta:p + meta + n]), meta + n, name + (
            b" COMPRESSED" if t == T_BLOB_COMPRESSED else b"")
    if t in (T_VARCHAR, T_VAR_STRING, T_VARCHAR_COMPRESSED):
        text, used = _with_length(buf, p, meta)
        return text, used, b"VARSTRING(%d)%s" % (meta, b" COMPRESSED" if t == T_VARCHAR_COMPRESSED else b"")
    if t == T_STRING:
        text, used = _with_length(buf, p, length)
        return text, used, b"STRING(%d)" % length
    if t == T_GEOMETRY:
        n = int.from_bytes(buf[p:p + 4], "little")
        return _quoted(buf[p + meta:p + meta + n]), meta + n, b"GEOMETRY"
    raise EventDecodeError(f"Don't know how to handle column type: {t} meta: {meta} ({meta:04x})")


def _time2(buf: bytes, p: int, fsp: int) -> tuple[bytes, int, bytes]:
    """TIME2 (my_time_packed_from_binary + TIME_from_longlong_time_packed + my_time_to_str)."""
    nfrac = (fsp + 1) // 2
    if nfrac == 3:
        packed = int.from_bytes(buf[p:p + 6], "big") - 0x800000000000
    else:
        intpart = int.from_bytes(buf[p:p + 3], "big") - 0x800000
        frac = int.from_bytes(buf[p + 3:p + 3 + nfrac], "big") if nfrac else 0
        if intpart < 0 and frac:  # a negative value's fraction is stored as its complement
            intpart += 1
            frac -= 1 << (8 * nfrac)
        packed = (intpart << 24) + frac * (10000 if nfrac == 1 else 100)
    neg = packed < 0
    a = -packed if neg else packed
    hms, usec = a >> 24, a % (1 << 24)
    text = b"%s%02d:%02d:%02d" % (b"-" if neg else b"", (hms >> 12) % (1 << 10), (hms >> 6) & 63, hms & 63)
    return _quoted(text + _fmt_frac(usec, fsp)), 3 + nfrac, b"TIME(%d)" % fsp


def _with_length(buf: bytes, p: int, length: int) -> tuple[bytes, int]:
    if length < 256:
        n = buf[p]
        return _quoted(buf[p + 1:p + 1 + n]), n + 1
    n = int.from_bytes(buf[p:p + 2], "little")
    return _quoted(buf[p + 2:p + 2 + n]), n + 2


def _bitmap(data: bytes, n: int) -> list[bool]:
    return [bool(data[i >> 3] >> (i & 7) & 1) for i in range(n)]


def _one_row(td: TableDef, cols: list[bool], buf: bytes, p: int, prefix: bytes, verbose: int,
             out: list[bytes]) -> int:
    present = sum(cols)
    nulls = buf[p:p + (present + 7) // 8]
    if len(nulls) < (present + 7) // 8:
        raise EventDecodeError("row image truncated in its NULL bitmap")
    q = p + (present + 7) // 8
    out.append(prefix)
    k = 0
    for i in range(len(td.types)):
        if i >= len(cols) or not cols[i]:
            continue
        is_null = bool(nulls[k >> 3] >> (k & 7) & 1)
        t, meta = td.type(i), td.meta[i]
        if is_null:
            text, typestr = b"NULL", _value_typestr(t, meta)
        else:
            text, used, typestr = _value(t, meta, buf, q)
            q += used
            if q > len(buf):
                raise EventDecodeError("row image runs past the end of the event")
        line = b"###   @%d=%s" % (i + 1, text)
        if verbose > 1:
            line += b" /* %s meta=%d nullable=%d is_null=%d */" % (typestr, meta, int(td.nullable[i]), int(is_null))
        out.append(line + b"\n")
        k += 1
    return q


def _value_typestr(t: int, meta: int) -> bytes:
    """The typestr log_event_print_value sets before it sees that the value is NULL."""
    probe = bytearray(70)
    if t == T_NEWDECIMAL:
        probe[0] = 0x80  # a valid zero
    try:
        return _value(t, meta, bytes(probe), 0)[2]
    except (EventDecodeError, IndexError, ValueError, struct.error):
        return b""


def is_compressed(type_code: int) -> bool:
    return type_code in COMPRESSED_ROWS_TYPES


def verbose_rows(type_code: int, body: RowsBody, td: TableDef | None, verbose: int) -> tuple[bytes, int]:
    """The `###` text of one rows event (empty unless `verbose`) and its number of rows (`# Number of rows`)."""
    if td is None:
        return (b"### Row event for unknown table #%d" % body.table_id if verbose else b""), 0
    out: list[bytes] = []
    data = body.data
    width = data[0]
    p = 1
    if width >= 251:
        size = {252: 2, 253: 3, 254: 8}.get(width, 0)
        width = int.from_bytes(data[1:1 + size], "little")
        p = 1 + size
    nb = (width + 7) // 8
    cols = _bitmap(data[p:p + nb], width)
    p += nb
    cols_ai = cols
    if type_code in UPDATE_ROWS_TYPES:
        cols_ai = _bitmap(data[p:p + nb], width)
        p += nb
    buf = data[p:]
    if type_code in COMPRESSED_ROWS_TYPES:
        buf = decompress_payload(buf, "compressed rows")
    name = backtick_pair(td)
    count = 0
    if type_code in WRITE_ROWS_TYPES and not buf:
        return (b"### INSERT INTO %s VALUES ()\n" % name if verbose else b""), 1
    command, clause1, clause2 = (
        (b"INSERT INTO", b"### SET\n", None) if type_code in WRITE_ROWS_TYPES
        else (b"UPDATE", b"### WHERE\n", b"### SET\n") if type_code in UPDATE_ROWS_TYPES
        else (b"DELETE FROM", b"### WHERE\n", None))
    q = 0
    while q < len(buf):
        count += 1
        out.append(b"### %s %s\n" % (command, name))
        q = _one_row(td, cols, buf, q, clause1, verbose, out)
        if clause2 is not None:
            if not any(cols_ai):
                out.append(b"### SET /* no columns */\n")
            else:
                q = _one_row(td, cols_ai, buf, q, clause2, verbose, out)
    return (b"".join(out) if verbose else b""), count


def backtick_pair(td: TableDef) -> bytes:
    return b"`" + td.db.replace(b"`", b"``") + b"`.`" + td.table.replace(b"`", b"``") + b"`"



def uncompressed_rows_event(raw: bytes, body: RowsBody, type_code: int, checksum: bool) -> bytes:
    """row_log_event_uncompress: the event with its rows inflated, the uncompressed type, length and CRC; what
    mariadb-binlog puts in the BINLOG block of a compressed rows event (log_bin_compress=ON)."""
    data = body.data
    width = data[0]
    p = 1 if width < 251 else 1 + {252: 2, 253: 3, 254: 8}.get(width, 0)
    if width >= 251:
        width = int.from_bytes(data[1:p], "little")
    p += ((width + 7) // 8) * (2 if type_code in UPDATE_ROWS_TYPES else 1)
    tail = len(data) - p  # the compressed payload, at the end of the body
    crc = CRC_LEN if checksum else 0
    prefix = raw[:len(raw) - crc - tail]
    out = bytearray(prefix + decompress_payload(data[p:], "compressed rows") + bytes(crc))
    out[4] = _UNCOMPRESSED[type_code]
    out[9:13] = len(out).to_bytes(4, "little")
    if checksum:
        set_crc(out)
    return bytes(out)


_UNCOMPRESSED: Final = {
    WRITE_ROWS_COMPRESSED_EVENT_V1: WRITE_ROWS_EVENT_V1, UPDATE_ROWS_COMPRESSED_EVENT_V1: UPDATE_ROWS_EVENT_V1,
    DELETE_ROWS_COMPRESSED_EVENT_V1: DELETE_ROWS_EVENT_V1, WRITE_ROWS_COMPRESSED_EVENT: WRITE_ROWS_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT: UPDATE_ROWS_EVENT, DELETE_ROWS_COMPRESSED_EVENT: DELETE_ROWS_EVENT,
}
