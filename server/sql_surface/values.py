"""Values as MariaDB prints and carries them (doubles, decimals, hex literals)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any


class _Hex(bytes):
    """A hex or bit literal: a binary string that is a number in arithmetic (0x41 + 0 = 65)."""


_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1
_NUM_PREFIX = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_DBL_MAX = 1.7976931348623157e308


def _to_text(v: Any) -> str:
    """MariaDB's string form of a value (CONCAT, SHOW WARNINGS, error messages)."""
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return _double_text(v)
    if isinstance(v, Decimal):
        return _decimal_text(v)
    return str(v)


def _double_text(v: float) -> str:
    """Shortest round-trip text like MariaDB's my_gcvt: '1e20', '0.0015', '1.2345678901234568e17'."""
    if v == 0:
        return "0"
    d = Decimal(repr(v))
    exp10 = d.adjusted()
    if -7 <= exp10 < 15:
        text = format(d, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{'-' if v < 0 else ''}{mant}e{exp10}"


def _decimal_text(v: Decimal) -> str:
    return format(v, "f")


class DecimalText(str):
    """A DECIMAL value's text: a str that remembers it was a decimal (standalone USER_VAR events type it)."""

    __slots__ = ()


def _out(v: Any) -> Any:
    """A value as rows and user variables carry it (str | int | float | bytes | None): decimals as MariaDB's
    text, hex literals as plain bytes."""
    if isinstance(v, Decimal):
        return _decimal_text(v)
    if isinstance(v, DecimalText):
        return str(v)
    if isinstance(v, _Hex):
        return bytes(v)
    if isinstance(v, bool):
        return int(v)
    return v


def _sort_key(v: Any) -> Any:
    if v is None:
        return (0, "")
    if isinstance(v, int | float | Decimal):
        return (1, v)
    return (2, _to_text(v).casefold())
