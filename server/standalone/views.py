"""The standalone schema as a MariaDB 10.11 primary with BLACKHOLE tables shows it: SHOW CREATE TABLE / DATABASE,
DESCRIBE, and the rows of information_schema.SCHEMATA / TABLES / COLUMNS. Pure functions over the catalogue
(`schema.py`); the SQL surface (`server/sql_surface.py`) parses the statements and filters the rows.

binlogd stores no rows, so every table is shown with ENGINE=BLACKHOLE, the engine whose tables behave as
binlogd's do (writes accepted and logged, nothing read back). Compared with a real 10.11 in
tests/test_standalone_schema_views.py.
"""

from __future__ import annotations

import re
from typing import Any

from .schema import Catalogue, Column, Database, Table

ENGINE = "BLACKHOLE"

SCHEMATA_COLUMNS = ["CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME", "DEFAULT_COLLATION_NAME",
                    "SQL_PATH", "SCHEMA_COMMENT"]
TABLES_COLUMNS = ["TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE", "VERSION", "ROW_FORMAT",
                  "TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH", "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE",
                  "AUTO_INCREMENT", "CREATE_TIME", "UPDATE_TIME", "CHECK_TIME", "TABLE_COLLATION", "CHECKSUM",
                  "CREATE_OPTIONS", "TABLE_COMMENT", "MAX_INDEX_LENGTH", "TEMPORARY"]
COLUMNS_COLUMNS = ["TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION",
                   "COLUMN_DEFAULT", "IS_NULLABLE", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH",
                   "CHARACTER_OCTET_LENGTH", "NUMERIC_PRECISION", "NUMERIC_SCALE", "DATETIME_PRECISION",
                   "CHARACTER_SET_NAME", "COLLATION_NAME", "COLUMN_TYPE", "COLUMN_KEY", "EXTRA", "PRIVILEGES",
                   "COLUMN_COMMENT", "IS_GENERATED", "GENERATION_EXPRESSION"]
DESCRIBE_COLUMNS = ["Field", "Type", "Null", "Key", "Default", "Extra"]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def show_create_database(d: Database) -> str:
    return (f"CREATE DATABASE {quote(d.name)} /*!40100 DEFAULT CHARACTER SET {d.charset} COLLATE {d.collation} */")


def _column_line(c: Column) -> str:
    out = f"  {quote(c.name)} {c.type}"
    if c.charset is not None:
        out += f" CHARACTER SET {c.charset} COLLATE {c.collation}"
    if not c.nullable:
        out += " NOT NULL"
    elif c.type.startswith("timestamp"):
        out += " NULL"
    if c.default is not None:
        out += f" DEFAULT {c.default}"
    if c.auto_increment:
        out += " AUTO_INCREMENT"
    return out


def show_create_table(t: Table) -> str:
    """SHOW CREATE TABLE's text (the table's columns must be known)."""
    lines = [_column_line(c) for c in t.columns or ()]
    for kind, name, cols in t.keys:
        names = ",".join(quote(c) for c in cols)
        if kind == "PRIMARY":
            lines.append(f"  PRIMARY KEY ({names})")
        elif kind == "UNIQUE":
            lines.append(f"  UNIQUE KEY {quote(name)} ({names})")
        else:
            lines.append(f"  KEY {quote(name)} ({names})")
    return (f"CREATE TABLE {quote(t.name)} (\n" + ",\n".join(lines) +
            f"\n) ENGINE={ENGINE} DEFAULT CHARSET={t.charset} COLLATE={t.collation}")


def _plain_default(c: Column) -> str | None:
    """DESCRIBE's Default: the value without quotes; NULL (SQL NULL) for none or DEFAULT NULL."""
    if c.default is None or c.default == "NULL":
        return None
    d = c.default
    if d.startswith("'") and d.endswith("'"):
        return d[1:-1].replace("''", "'").replace("\\\\", "\\")
    return d


def describe_rows(t: Table) -> list[tuple[Any, ...]]:
    return [(c.name, c.type, "YES" if c.nullable else "NO", c.key, _plain_default(c),
             "auto_increment" if c.auto_increment else "") for c in t.columns or ()]


def schemata_rows(cat: Catalogue) -> list[dict[str, Any]]:
    rows = [("information_schema", "utf8mb3", "utf8mb3_general_ci")]
    rows += [(d.name, d.charset, d.collation) for d in sorted(list(cat.dbs.values()), key=lambda d: d.name)]
    return [dict(zip((n.lower() for n in SCHEMATA_COLUMNS), ("def", name, cs, coll, None, ""), strict=True))
            for name, cs, coll in rows]


def _user_tables(cat: Catalogue) -> list[tuple[Database, Table]]:
    return [(d, t) for d in sorted(list(cat.dbs.values()), key=lambda d: d.name)
            for t in sorted(list(d.tables.values()), key=lambda t: t.name)]


def tables_rows(cat: Catalogue) -> list[dict[str, Any]]:
    out = []
    for d, t in _user_tables(cat):
        auto = 1 if any(c.auto_increment for c in t.columns or ()) else None
        values = ("def", d.name, t.name, "BASE TABLE", ENGINE, 10, "Dynamic", 0, 0, 0, 0, 0, 0, auto, None, None,
                  None, t.collation, None, "", "", 0, "N")
        out.append(dict(zip((n.lower() for n in TABLES_COLUMNS), values, strict=True)))
    return out


_TYPE = re.compile(r"([a-z]+)(?:\((.*)\))?")
_INT_PRECISION = {"tinyint": 3, "smallint": 5, "mediumint": 7, "int": 10, "bigint": 19}
_TEXT_LENGTH = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295,
                "tinyblob": 255, "blob": 65535, "mediumblob": 16777215, "longblob": 4294967295}
_CHARSET_BYTES = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "latin1": 1, "binary": 1, "ascii": 1}


def _type_facts(c: Column, t: Table) -> tuple[str, Any, Any, Any, Any, Any, Any, Any]:
    """DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE,
    DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME."""
    m = _TYPE.match(c.type)
    base, args = (m.group(1), m.group(2)) if m else (c.type, None)
    text = base in ("char", "varchar", "enum", "set") or base.endswith("text")
    binary = base in ("binary", "varbinary") or base.endswith("blob")
    length: Any = None
    if base in ("char", "varchar", "binary", "varbinary") and args:
        length = int(args)
    elif base in _TEXT_LENGTH:
        length = _TEXT_LENGTH[base]
    elif base in ("enum", "set") and args:
        items = [s[1:-1] for s in re.findall(r"'(?:[^']|'')*'", args)]
        length = max((len(s) for s in items), default=0) if base == "enum" else \
            sum(len(s) for s in items) + max(0, len(items) - 1)
    octets = None
    if length is not None:
        per_char = 1 if binary else _CHARSET_BYTES.get(c.charset or t.charset, 4)
        octets = length if base in _TEXT_LENGTH else length * per_char  # TEXT / BLOB: both are the byte limit
    precision: Any = None
    scale: Any = None
    if base in _INT_PRECISION:
        precision, scale = _INT_PRECISION[base] + (1 if base == "bigint" and "unsigned" in c.type else 0), 0
    elif base == "decimal" and args:
        p, _, s = args.partition(",")
        precision, scale = int(p), int(s or 0)
    elif base in ("double", "float"):
        precision = 22 if base == "double" else 12
    dt_precision = (int(args) if args else 0) if base in ("datetime", "timestamp", "time") else None
    charset = (c.charset or t.charset) if text else None
    collation = (c.collation or t.collation) if text else None
    return base, length, octets, precision, scale, dt_precision, charset, collation


def columns_rows(cat: Catalogue) -> list[dict[str, Any]]:
    out = []
    for d, t in _user_tables(cat):
        for i, c in enumerate(t.columns or (), 1):
            facts = _type_facts(c, t)
            values = ("def", d.name, t.name, c.name, i, c.default, "YES" if c.nullable else "NO", *facts,
                      c.type, c.key, "auto_increment" if c.auto_increment else "",
                      "select,insert,update,references", "", "NEVER", None)
            out.append(dict(zip((n.lower() for n in COLUMNS_COLUMNS), values, strict=True)))
    return out


INFORMATION_SCHEMA = {"SCHEMATA": (SCHEMATA_COLUMNS, schemata_rows), "TABLES": (TABLES_COLUMNS, tables_rows),
                      "COLUMNS": (COLUMNS_COLUMNS, columns_rows)}
