"""Column definitions for the binlog builder, written the way a test author thinks of them: SQL column text.

`column("id INT UNSIGNED PRIMARY KEY")` -> a `ColumnDef` for protocol/row_encode.py. The grammar is the column part
of CREATE TABLE for the types the builder encodes (MariaDB 10.11 defaults: utf8mb4 for character columns, DATETIME
and TIME without fractional seconds, DECIMAL(10,0), CHAR(1)):

    NAME TYPE[(N[,M])] [UNSIGNED] [CHARACTER SET cs] [NOT NULL | NULL] [PRIMARY KEY]

TYPE: TINYINT SMALLINT MEDIUMINT INT INTEGER BIGINT FLOAT DOUBLE DECIMAL NUMERIC VARCHAR CHAR VARBINARY BINARY
TINYTEXT TEXT MEDIUMTEXT LONGTEXT TINYBLOB BLOB MEDIUMBLOB LONGBLOB DATE DATETIME TIMESTAMP TIME.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from binlogd.protocol.row_encode import (
    COLLATIONS,
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
    ColumnDef,
)

_INTS: Final = {"TINYINT": T_TINY, "SMALLINT": T_SHORT, "MEDIUMINT": T_INT24, "INT": T_LONG, "INTEGER": T_LONG,
                "BIGINT": T_LONGLONG}
_BLOBS: Final = {"TINY": 1, "": 2, "MEDIUM": 3, "LONG": 4}
_TEMPORAL: Final = {"DATETIME": T_DATETIME2, "TIMESTAMP": T_TIMESTAMP2, "TIME": T_TIME2}
_CHARSETS: Final = {name: cid for cid, (name, _, _) in COLLATIONS.items()} | {"utf8": 33}
_COLUMN: Final = re.compile(
    r"^\s*(?P<name>`[^`]+`|\w+)\s+(?P<type>[A-Za-z]+)\s*(?:\(\s*(?P<n>\d+)\s*(?:,\s*(?P<m>\d+)\s*)?\))?"
    r"(?P<rest>.*)$", re.S)
_OPTION: Final = re.compile(
    r"\s*(?:(?P<unsigned>UNSIGNED)|(?:CHARACTER\s+SET|CHARSET)\s+(?P<cs>\w+)|(?P<notnull>NOT\s+NULL)|(?P<null>NULL)"
    r"|(?P<pk>PRIMARY\s+KEY))", re.I)


def column(text: str) -> ColumnDef:
    """Parse one column definition; ValueError (naming the column) for what the builder cannot encode."""
    m = _COLUMN.match(text)
    if m is None:
        raise ValueError(f"column {text!r}: expected 'NAME TYPE[(N[,M])] [options]'")
    name, kind = m["name"].strip("`"), m["type"].upper()
    n = int(m["n"]) if m["n"] is not None else None
    mm = int(m["m"]) if m["m"] is not None else None
    opts = {"unsigned": False, "cs": None, "nullable": True, "pk": False}
    rest, pos = m["rest"], 0
    while rest[pos:].strip():
        o = _OPTION.match(rest, pos)
        if o is None:
            raise ValueError(f"column {name!r}: cannot read {rest[pos:].strip()!r}")
        if o["unsigned"]:
            opts["unsigned"] = True
        elif o["cs"]:
            opts["cs"] = o["cs"].lower()
        elif o["notnull"]:
            opts["nullable"] = False
        elif o["pk"]:
            opts["pk"], opts["nullable"] = True, False
        pos = o.end()

    def build(type_code: int, length: int = 0, scale: int = 0, collation: int = 45) -> ColumnDef:
        return ColumnDef(name, type_code, length, scale, bool(opts["unsigned"]), bool(opts["nullable"]),
                         bool(opts["pk"]), collation)

    def charset(binary: bool) -> int:
        if binary:
            if opts["cs"] not in (None, "binary"):
                raise ValueError(f"column {name!r}: a binary type has no character set")
            return 63
        cs = opts["cs"] or "utf8mb4"
        if cs not in _CHARSETS:
            raise ValueError(f"column {name!r}: character set {cs!r} is not one of {', '.join(sorted(_CHARSETS))}")
        return _CHARSETS[cs]

    if opts["unsigned"] and kind not in (*_INTS, "FLOAT", "DOUBLE", "DECIMAL", "NUMERIC"):
        raise ValueError(f"column {name!r}: UNSIGNED applies to numeric types only")
    if kind in _INTS:
        return build(_INTS[kind])
    if kind in ("FLOAT", "DOUBLE"):
        return build(T_FLOAT if kind == "FLOAT" else T_DOUBLE)
    if kind in ("DECIMAL", "NUMERIC"):
        p, s = n if n is not None else 10, mm or 0
        if not 1 <= p <= 65 or s > 38 or s > p:
            raise ValueError(f"column {name!r}: DECIMAL({p},{s}) is not a valid precision and scale")
        return build(T_NEWDECIMAL, p, s)
    if kind in ("VARCHAR", "VARBINARY", "CHAR", "BINARY"):
        binary = kind in ("VARBINARY", "BINARY")
        length = n if n is not None else (1 if kind in ("CHAR", "BINARY") else None)
        if length is None:
            raise ValueError(f"column {name!r}: {kind} needs a length")
        col = build(T_VARCHAR if kind.startswith("VAR") else T_STRING, length, collation=charset(binary))
        limit = 65535 if col.type == T_VARCHAR else 1020  # CHAR: 255 characters of at most 4 bytes
        if col.max_bytes > limit or (col.type == T_STRING and length > 255):
            raise ValueError(f"column {name!r}: {kind}({length}) is too long")
        return col
    for prefix, pack in _BLOBS.items():
        if kind in (f"{prefix}TEXT", f"{prefix}BLOB"):
            return build(T_BLOB, pack, collation=charset(kind.endswith("BLOB")))
    if kind == "DATE":
        return build(T_DATE)
    if kind in _TEMPORAL:
        fsp = n or 0
        if fsp > 6:
            raise ValueError(f"column {name!r}: {kind}({fsp}): fractional seconds go up to 6")
        return build(_TEMPORAL[kind], fsp)
    raise ValueError(f"column {name!r}: type {kind} is not supported by the builder")


def columns(specs: Sequence[str | ColumnDef]) -> tuple[ColumnDef, ...]:
    """Parse each text spec (ColumnDefs pass through); column names must be unique."""
    out = tuple(s if isinstance(s, ColumnDef) else column(s) for s in specs)
    names = [c.name.lower() for c in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"columns: {', '.join(sorted(dup))} given more than once")
    return out
