"""COM_STMT_EXECUTE's parameter values read as MariaDB 10.11 reads them (sql_prepare.cc), not as mysql-mimic does.

mimic reads a string parameter's length-encoded length and takes that many bytes: with a length past the packet's
end (`fc ffff`, `fe ff..ff`) it returns what is left, or fails (an 8-byte length overflows) and the client got
1210. MariaDB never fails there: a length it cannot read in full counts as 0 without being consumed, an
`fe` length uses only its low 4 bytes, and a value longer than the bytes left is the empty string (the length is
consumed, the bytes are not: the next parameter starts right after the length). A parameter with no byte left at
all is 1210. Checked against a real MariaDB 10.11 in tests/test_bad_input_mariadb.py. Sans-IO.
"""

from __future__ import annotations

import io
from typing import Any

from mysql_mimic.charset import CharacterSet
from mysql_mimic.packets import _read_param_type, _read_param_value
from mysql_mimic.results import NullBitmap
from mysql_mimic.types import Capabilities, ColumnType, read_str_len, read_uint_1

# the parameter types whose value is a length-encoded string (MariaDB: set_param_str)
STRING_TYPES = frozenset({ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.BLOB,
                          ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB})


class MissingParameter(ValueError):
    """A parameter has no byte left in the packet (MariaDB: 1210)."""


def param_length(data: bytes, pos: int) -> tuple[int, int]:
    """MariaDB's get_param_length: (length, position after it). A length whose bytes are not all in the packet
    reads as 0 and nothing is consumed; `fe` takes 9 bytes but only the low 4 count; 251 and 255 read as `fe`."""
    left = len(data) - pos
    if left < 1:
        return 0, pos
    first = data[pos]
    if first < 251:
        return first, pos + 1
    if left < 3:
        return 0, pos
    if first == 252:
        return int.from_bytes(data[pos + 1:pos + 3], "little"), pos + 3
    if left < 4:
        return 0, pos
    if first == 253:
        return int.from_bytes(data[pos + 1:pos + 4], "little"), pos + 4
    if left < 5:
        return 0, pos
    return int.from_bytes(data[pos + 1:pos + 5], "little"), pos + 9


def param_string(data: bytes, pos: int) -> tuple[bytes, int]:
    """A string parameter's bytes and the position after them: empty when the length runs past the packet."""
    length, pos = param_length(data, pos)
    if length > len(data) - pos:
        return b"", pos
    return data[pos:pos + length], pos + length


def read_execute_params(data: bytes, pos: int, count: int, capabilities: Capabilities, charset: CharacterSet,
                        buffers: dict[int, bytearray] | None) -> list[Any]:
    """The `count` parameter values of a COM_STMT_EXECUTE payload (after the command byte) from `pos` (the null
    bitmap): None for NULL, a long-data buffer when one was sent, else the value in the packet."""
    if not count:
        return []
    reader = io.BytesIO(data)
    reader.seek(pos)
    nulls = NullBitmap.from_buffer(reader, count)
    if not read_uint_1(reader):  # (a struct.error when missing: 1210)
        raise MissingParameter("new-params-bound flag clear: no parameter types")
    types = []
    for _ in range(count):
        types.append(_read_param_type(reader))
        if Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities:
            read_str_len(reader)  # a statement parameter's (empty) name
    values: list[Any] = []
    for i, (kind, unsigned) in enumerate(types):
        if nulls.is_flipped(i):
            values.append(None)
        elif buffers and i in buffers:
            values.append(charset.decode(buffers[i]))
        elif reader.tell() >= len(data):
            raise MissingParameter(f"no data for parameter {i}")
        elif kind in STRING_TYPES:
            value, end = param_string(data, reader.tell())
            reader.seek(end)
            values.append(charset.decode(value))
        else:
            values.append(_read_param_value(charset, reader, kind, unsigned))
    return values
