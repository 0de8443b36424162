"""The standalone primary's schema catalogue: the databases, tables and columns its logged DDL created.

binlogd stores no rows, but the replicas that apply its binlog do, and they stop on a statement their schema
refuses (1146, 1054, 1364...). So before a statement is logged it is checked here against the schema the binlog
itself built, and refused with the error a MariaDB 10.11 primary gives (nothing is logged). What cannot be checked
exactly (joins, subqueries, expressions, DDL sqlglot does not model) is accepted as before: a false refusal is
worse than a replica error the client could also get from a real primary. A table whose columns are no longer
known (CREATE TABLE ... SELECT, an ALTER this module does not model) keeps its name but loses its column checks.

Only logged DDL changes the catalogue (`SET sql_log_bin=0` DDL does not): it models what the replicas have.
Names follow lower_case_table_names=0 (Linux): databases and tables are case-sensitive, columns are not.

Persistence (`SchemaStore`, writer thread): a JSON snapshot beside the binlog, `<basename>.schema`, holds the
catalogue as of the start of one binlog file; it is rewritten (write, fsync, rename, fsync the directory) each
time a file is started, so it always names a file that PURGE cannot remove (the active one or a later one). At
start, after crash recovery has cut the binlog back to its last whole group, the snapshot is loaded and the DDL
of that file and the ones after it is replayed through the same `Catalogue.apply` code. Why this and not a replay
of the whole binlog: PURGE BINARY LOGS deletes the DDL of purged files, and replaying only one run's files keeps
the start fast; why not a snapshot per DDL: the binlog is already the crash-safe record, so the snapshot needs no
crash guarantee of its own beyond the atomic rename.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from binlogd.protocol.constants import ER_BAD_DB_ERROR, ER_BAD_FIELD_ERROR, ER_BAD_TABLE_ERROR, ER_NO_SUCH_TABLE
from sqlglot import exp

from ..sql_surface import SqlError
from ..sysvars import default_collation as _default_collation

log = logging.getLogger("binlogd.standalone")

ER_DB_CREATE_EXISTS = 1007
ER_DB_DROP_EXISTS = 1008
ER_TABLE_EXISTS_ERROR = 1050
ER_DUP_FIELDNAME = 1060
ER_CANT_DROP_FIELD_OR_KEY = 1091
ER_FIELD_SPECIFIED_TWICE = 1110
ER_WRONG_VALUE_COUNT_ON_ROW = 1136
ER_BAD_NULL_ERROR = 1048
ER_NO_DEFAULT_FOR_FIELD = 1364

SYSTEM_DATABASES = frozenset({"information_schema", "mysql", "performance_schema", "sys"})


def default_collation(charset: str) -> str:
    """A character set's default collation (latin1 -> latin1_swedish_ci); unknown sets keep a guess."""
    try:
        return _default_collation(charset)
    except KeyError:
        return f"{charset}_general_ci"


def charset_options(props: Iterable[tuple[str, str]], charset: str, collation: str) -> tuple[str, str]:
    """(charset, collation) after CHARACTER SET / COLLATE options, MariaDB's way: a charset alone brings its default
    collation, a collation alone its charset."""
    given_cs = given_coll = None
    for kind, value in props:
        if kind == "charset":
            given_cs = value.lower()
        else:
            given_coll = value.lower()
    if given_cs is None and given_coll is None:
        return charset, collation
    cs = given_cs or (given_coll or "").split("_")[0]
    return cs, given_coll or default_collation(cs)


def no_such_table(db: str, name: str) -> SqlError:
    return SqlError(ER_NO_SUCH_TABLE, f"Table '{db}.{name}' doesn't exist")


def unknown_column(name: str, clause: str) -> SqlError:
    return SqlError(ER_BAD_FIELD_ERROR, f"Unknown column '{name}' in '{clause}'")


@dataclass
class Column:
    name: str
    type: str  # as SHOW CREATE TABLE / DESCRIBE print it: int(11), varchar(10), bigint(20) unsigned
    nullable: bool = True
    default: str | None = None  # the DEFAULT as SHOW CREATE TABLE prints it ('x', 3, NULL); None: no default
    auto_increment: bool = False
    generated: bool = False
    key: str = ""  # DESCRIBE's Key: PRI / UNI / MUL
    charset: str | None = None  # a CHARACTER SET / COLLATE of its own (None: the table's)
    collation: str | None = None

    @property
    def needs_value(self) -> bool:
        """NOT NULL without a default: an INSERT must give it (1364 in strict mode)."""
        return (not self.nullable and self.default is None and not self.auto_increment and not self.generated
                and not self.type.startswith("timestamp"))


@dataclass
class Table:
    name: str
    columns: list[Column] | None  # None: not known (no column checks)
    keys: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (PRIMARY|UNIQUE|KEY, name, columns)
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_general_ci"

    def column(self, name: str) -> Column | None:
        n = name.lower()
        for c in self.columns or ():
            if c.name.lower() == n:
                return c
        return None


@dataclass
class Database:
    name: str
    tables: dict[str, Table] = field(default_factory=dict)
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_general_ci"


# ---------------------------------------------------------------------------------------------- DML plans


@dataclass(frozen=True, slots=True)
class DmlPlan:
    """What the schema check of one DML shape needs, extracted from the classifier's parse (cached with it).

    `rows`: INSERT ... VALUES, per row one marker per value: 'v' a value, 'n' the NULL literal, 'd' DEFAULT.
    `refs`: (qualifier, column, clause) references of a single-table statement, checked only when `exact`."""

    target: tuple[str | None, str] | None  # (db or None for the default database, table)
    tables: tuple[tuple[str | None, str], ...] = ()  # every other table the statement reads
    columns: tuple[str, ...] | None = None  # INSERT's column list
    rows: tuple[str, ...] = ()  # INSERT VALUES markers, one string per row
    select_width: int | None = None  # INSERT ... SELECT without '*': the number of values per row
    refs: tuple[tuple[str | None, str, str], ...] = ()
    exact: bool = False  # single table, no subquery: column references can be resolved
    aliases: tuple[str, ...] = ()


def _value_marker(e: exp.Expression) -> str:
    if isinstance(e, exp.Null):
        return "n"
    if isinstance(e, exp.Var) and e.name.upper() == "DEFAULT":
        return "d"
    if isinstance(e, exp.Column) and not e.table and e.name.upper() == "DEFAULT":
        return "d"
    return "v"


def _table_key(t: exp.Table) -> tuple[str | None, str]:
    return (t.db or None, t.name)


def _column_refs(node: exp.Expression, clause: str) -> list[tuple[str | None, str, str]]:
    """The column references under `node` (the DEFAULT keyword, which sqlglot reads as a column, is not one)."""
    return [(c.table or None, c.name, clause) for c in node.find_all(exp.Column)
            if not (c.name.upper() == "DEFAULT" and not c.this.args.get("quoted") and not c.table)]


def dml_plan(tree: exp.Expression) -> DmlPlan | None:
    """The plan of an INSERT / UPDATE / DELETE tree, or None when nothing about it can be checked."""
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    if isinstance(tree, exp.Insert):
        target = tree.this
        cols: tuple[str, ...] | None = None
        if isinstance(target, exp.Schema):
            cols = tuple(i.name for i in target.expressions)
            target = target.this
        if not isinstance(target, exp.Table) or not target.name:
            return None
        src = tree.expression
        rows: list[str] = []
        width: int | None = None
        if isinstance(src, exp.Values):
            for row in src.expressions:
                items = row.expressions if isinstance(row, exp.Tuple) else [row]
                rows.append("".join(_value_marker(i) for i in items))
        elif isinstance(src, exp.Select) and not any(isinstance(e, exp.Star) or
                                                     (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                                                     for e in src.expressions):
            width = len(src.expressions)
        read = [t for t in (src.find_all(exp.Table) if src is not None else ()) if t.name and t.name not in ctes]
        local = {t.alias for t in read if t.alias}
        others = tuple(_table_key(t) for t in read if t.db or t.name not in local)
        return DmlPlan(target=_table_key(target), tables=others, columns=cols, rows=tuple(rows), select_width=width)
    if isinstance(tree, exp.Update | exp.Delete):
        tables = [t for t in tree.find_all(exp.Table) if t.name and t.name not in ctes]
        aliases = tuple(t.alias for t in tables if t.alias)
        exact = (len(tables) == 1 and tree.find(exp.Subquery, exp.Exists, exp.Join) is None
                 and not list(tree.find_all(exp.Select)) and not tree.args.get("using")
                 and tree.this is tables[0])
        refs: list[tuple[str | None, str, str]] = []
        if exact:
            if isinstance(tree, exp.Update):
                for a in tree.expressions:
                    if isinstance(a, exp.EQ) and isinstance(a.this, exp.Column):
                        refs += _column_refs(a, "SET")
            for clause, name in (("where", "WHERE"), ("order", "ORDER BY")):
                node = tree.args.get(clause)
                if node is not None:
                    refs += _column_refs(node, name)
        keys = tuple(_table_key(t) for t in tables if t.db or t.name not in aliases)  # not a multi-DELETE alias
        return DmlPlan(target=_table_key(tables[0]) if exact else None, tables=keys, refs=tuple(refs), exact=exact,
                       aliases=aliases)
    return None


# ---------------------------------------------------------------------------------------------- types

_INT_WIDTH = {"TINYINT": (4, 3), "SMALLINT": (6, 5), "MEDIUMINT": (9, 8), "INT": (11, 10), "BIGINT": (20, 20)}
_UNSIGNED = {"UTINYINT": "TINYINT", "USMALLINT": "SMALLINT", "UMEDIUMINT": "MEDIUMINT", "UINT": "INT",
             "UBIGINT": "BIGINT"}
_NAMES = {"TIMESTAMPTZ": "timestamp", "TIMESTAMPLTZ": "timestamp", "TIMESTAMP": "timestamp", "DOUBLE": "double",
          "FLOAT": "float", "DATE": "date", "TEXT": "text", "TINYTEXT": "tinytext", "MEDIUMTEXT": "mediumtext",
          "LONGTEXT": "longtext", "BLOB": "blob", "TINYBLOB": "tinyblob", "MEDIUMBLOB": "mediumblob",
          "LONGBLOB": "longblob", "JSON": "longtext", "BOOLEAN": "tinyint(1)"}


def _params(dt: exp.DataType) -> list[str]:
    return [p.sql("mysql") for p in dt.expressions]


def type_text(dt: exp.DataType, unsigned_flag: bool, zerofill: bool) -> str:
    """A column type the way SHOW CREATE TABLE prints it (int -> int(11), decimal -> decimal(10,0))."""
    name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    params = _params(dt)
    unsigned = unsigned_flag or zerofill or name in _UNSIGNED
    base = _UNSIGNED.get(name, name)
    if base in _INT_WIDTH:
        width = params[0] if params else str(_INT_WIDTH[base][1 if unsigned else 0])
        out = f"{base.lower()}({width})"
    elif base == "SERIAL":
        return "bigint(20) unsigned"
    elif base == "DECIMAL":
        p = params + ["10", "0"][len(params):] if len(params) < 2 else params
        out = f"decimal({p[0]},{p[1]})"
    elif base in ("CHAR", "BINARY"):
        out = f"{base.lower()}({params[0] if params else 1})"
    elif base == "YEAR":
        out = "year(4)"
    elif base in ("ENUM", "SET"):
        out = f"{base.lower()}({','.join(params)})"
    elif base in _NAMES and not params:
        out = _NAMES[base]
    elif base in _NAMES:
        out = f"{_NAMES[base]}({','.join(params)})"
    else:
        out = dt.sql("mysql").lower()
    if unsigned and base in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "DECIMAL", "DOUBLE", "FLOAT"):
        out += " unsigned"
    if zerofill:
        out += " zerofill"
    return out


def _default_text(e: exp.Expression) -> str:
    if isinstance(e, exp.Null):
        return "NULL"
    if isinstance(e, exp.Literal) and e.is_string:
        return "'" + e.this.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal):
        return "-" + e.this.this
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.CurrentTimestamp):
        return "current_timestamp()"
    return e.sql("mysql").lower()


_NUMERIC = re.compile(r"^'?(-?\d+(?:\.\d*)?)'?$")


def _typed_default(ctype: str, default: str | None) -> str | None:
    """A numeric column's DEFAULT as MariaDB stores it: unquoted, decimals to the column's scale (1.5 -> 1.50)."""
    if default is None or not ctype.startswith(("tinyint", "smallint", "mediumint", "int", "bigint", "decimal")):
        return default
    m = _NUMERIC.match(default)
    if m is None:
        return default
    value = m.group(1)
    scale = re.match(r"decimal\(\d+,(\d+)\)", ctype)
    if scale is not None:
        digits = int(scale.group(1))
        whole, _, frac = value.partition(".")
        return whole + ("." + (frac + "0" * digits)[:digits] if digits else "")
    return value


def column_of(cd: exp.ColumnDef) -> tuple[Column, list[tuple[str, str, list[str]]]]:
    """A column definition and the keys it declares inline (PRIMARY KEY, UNIQUE)."""
    kind = cd.args.get("kind")
    constraints = [c.kind for c in cd.constraints if isinstance(c, exp.ColumnConstraint)]
    unsigned = any(isinstance(k, exp.Var) and k.name.upper() == "UNSIGNED" for k in constraints)
    zerofill = any(isinstance(k, exp.ZeroFillColumnConstraint) for k in constraints)
    if isinstance(kind, exp.DataType):
        ctype = type_text(kind, unsigned, zerofill)
        serial = kind.this == exp.DataType.Type.SERIAL
    else:
        ctype, serial = "unknown", False
    col = Column(cd.name, ctype)
    keys: list[tuple[str, str, list[str]]] = []
    explicit_null = False
    if serial:
        col.nullable, col.auto_increment = False, True
        keys.append(("UNIQUE", cd.name, [cd.name]))
    for k in constraints:
        if isinstance(k, exp.NotNullColumnConstraint):
            if k.args.get("allow_null"):
                explicit_null = True
            else:
                col.nullable = False
        elif isinstance(k, exp.DefaultColumnConstraint):
            col.default = _default_text(k.this)
        elif isinstance(k, exp.AutoIncrementColumnConstraint):
            col.auto_increment = True
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            col.nullable = False
            keys.append(("PRIMARY", "PRIMARY", [cd.name]))
        elif isinstance(k, exp.UniqueColumnConstraint):
            keys.append(("UNIQUE", cd.name, [cd.name]))
        elif isinstance(k, exp.ComputedColumnConstraint):
            col.generated = True
        elif isinstance(k, exp.CharacterSetColumnConstraint):
            col.charset = k.this.name.lower()
            col.collation = col.collation or default_collation(col.charset)
        elif isinstance(k, exp.CollateColumnConstraint):
            col.collation = k.this.name.lower()
            col.charset = col.charset or col.collation.split("_")[0]
    del explicit_null
    col.default = _typed_default(ctype, col.default)
    if col.nullable and col.default is None and not col.generated:
        col.default = "NULL"
    if col.default == "NULL" and not col.nullable:
        col.default = None  # NOT NULL DEFAULT NULL: MariaDB refuses it at CREATE (1067); keep the column strict
    return col, keys


def _dropped(drop: exp.Drop) -> list[exp.Expression]:
    """The tables / columns a DROP names (sqlglot keeps them under 'tables' or 'expressions')."""
    return list(drop.args.get("tables") or drop.args.get("expressions") or [])


def _key_name(keys: list[tuple[str, str, list[str]]], first: str) -> str:
    names = {k[1].lower() for k in keys}
    name, n = first, 2
    while name.lower() in names:
        name, n = f"{first}_{n}", n + 1
    return name


def _index_keys(e: exp.Expression, keys: list[tuple[str, str, list[str]]]) -> None:
    """Table-level PRIMARY KEY / UNIQUE / KEY definitions (unnamed keys get MariaDB's name: the first column)."""
    if isinstance(e, exp.PrimaryKey):
        keys.insert(0, ("PRIMARY", "PRIMARY", [c.name for c in e.expressions]))
    elif isinstance(e, exp.UniqueColumnConstraint | exp.IndexColumnConstraint):
        inner = e.this if isinstance(e, exp.UniqueColumnConstraint) else e
        cols_src = inner.expressions if isinstance(inner, exp.Schema) else e.expressions
        cols = [c.name for c in cols_src]
        if not cols:
            return
        given = inner.this.name if isinstance(inner, exp.Schema) and isinstance(inner.this, exp.Expression) else \
            (e.this.name if isinstance(e, exp.IndexColumnConstraint) and isinstance(e.this, exp.Expression) else "")
        kind = "UNIQUE" if isinstance(e, exp.UniqueColumnConstraint) else "KEY"
        keys.append((kind, given or _key_name(keys, cols[0]), cols))


def _mark_keys(t: Table) -> None:
    """DESCRIBE's Key column: PRI for primary key columns, UNI for single-column unique keys, MUL else."""
    for c in t.columns or ():
        c.key = ""
    keys = t.keys
    if not any(k[0] == "PRIMARY" for k in keys):  # the first UNIQUE over NOT NULL columns acts as the primary key
        first = next((k for k in keys if k[0] == "UNIQUE" and all(
            (c := t.column(n)) is not None and not c.nullable for n in k[2])), None)
        if first is not None:
            keys = [("PRIMARY", first[1], first[2]), *(k for k in keys if k is not first)]
    for kind, _name, cols in keys:
        first = t.column(cols[0]) if cols else None
        if kind == "PRIMARY":
            for n in cols:
                c = t.column(n)
                if c is not None:
                    c.key, c.nullable = "PRI", False
                    if c.default == "NULL":
                        c.default = None
        elif first is not None and not first.key:
            first.key = "UNI" if kind == "UNIQUE" and len(cols) == 1 else "MUL"


# ---------------------------------------------------------------------------------------------- the catalogue

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$\x80-\U0010ffff]+)"
_QNAME = rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?"
_RENAME = re.compile(r"RENAME\s+TABLES?\s+(.*)$", re.I | re.S)
_PAIR = re.compile(rf"\s*{_QNAME}\s+TO\s+{_QNAME}\s*(?:,|$)", re.I | re.S)
_ALTER_NAME = re.compile(rf"ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?{_QNAME}", re.I)
_CREATE_NAME = re.compile(rf"CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(IF\s+NOT\s+EXISTS\s+)?{_QNAME}", re.I)
_INDEX_ON = re.compile(rf"\bON\s+{_QNAME}", re.I)
_DB_OPTION = re.compile(r"\b(?:(CHARACTER\s+SET|CHARSET)\s*=?\s*([\w`'\"]+)|COLLATE\s*=?\s*([\w`'\"]+))", re.I)


def _unq(s: str | None) -> str | None:
    if s is None:
        return None
    return s[1:-1].replace("``", "`") if s.startswith("`") else s


def _qname(a: str, b: str | None) -> tuple[str | None, str]:
    return (_unq(a), _unq(b)) if b is not None else (None, _unq(a) or "")  # type: ignore[return-value]


class Catalogue:
    """Databases -> tables -> columns. Used from one thread (the event loop's copy, or the writer thread's)."""

    def __init__(self) -> None:
        self.dbs: dict[str, Database] = {}

    # --- persistence
    def to_json(self) -> dict[str, Any]:
        return {"databases": [asdict(d) for d in self.dbs.values()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Catalogue:
        cat = cls()
        for d in data.get("databases", []):
            db = Database(d["name"], {}, d.get("charset", "utf8mb4"), d.get("collation", "utf8mb4_general_ci"))
            for name, t in d["tables"].items():
                cols = None if t["columns"] is None else [Column(**c) for c in t["columns"]]
                db.tables[name] = Table(t["name"], cols, [(k[0], k[1], list(k[2])) for k in t["keys"]],
                                        t.get("charset", "utf8mb4"), t.get("collation", "utf8mb4_general_ci"))
            cat.dbs[db.name] = db
        return cat

    def clone(self) -> Catalogue:
        c = Catalogue()
        c.dbs = copy.deepcopy(self.dbs)
        return c

    # --- lookups
    def table(self, db: str, name: str) -> Table | None:
        d = self.dbs.get(db)
        return None if d is None else d.tables.get(name)

    def _db(self, db: str | None, default_db: str | None) -> str:
        return db if db is not None else (default_db or "")

    def _require_db(self, db: str) -> Database:
        d = self.dbs.get(db)
        if d is None:
            raise SqlError(ER_BAD_DB_ERROR, f"Unknown database '{db}'")
        return d

    def _require_table(self, db: str, name: str) -> Table | None:
        """The table (None for a system database's tables, which binlogd does not model); 1146 when missing."""
        if db.lower() in SYSTEM_DATABASES:
            return None
        t = self.table(db, name)
        if t is None:
            raise no_such_table(db, name)
        return t

    # --- DML
    def check_dml(self, plan: DmlPlan, default_db: str | None, strict: bool) -> None:
        """Refuse what MariaDB 10.11 refuses before changing a row (1146, 1054, 1136, 1110, 1364, 1048)."""
        target: Table | None = None
        if plan.target is not None:
            target = self._require_table(self._db(plan.target[0], default_db), plan.target[1])
        for db, name in plan.tables:
            if plan.target is not None and (db, name) == plan.target:
                continue
            self._require_table(self._db(db, default_db), name)
        if target is None or target.columns is None:
            return
        if plan.exact:
            quals = {target.name, *plan.aliases}
            for qual, col, clause in plan.refs:
                if (qual is not None and qual not in quals) or target.column(col) is None:
                    raise unknown_column(f"{qual}.{col}" if qual else col, clause)
            return
        self._check_insert(plan, target, strict)

    def _check_insert(self, plan: DmlPlan, t: Table, strict: bool) -> None:
        assert t.columns is not None
        if plan.columns is None:
            given = list(t.columns)
        else:
            given = []
            seen: set[str] = set()
            for name in plan.columns:
                c = t.column(name)
                if c is None:
                    raise unknown_column(name, "INSERT INTO")
                if c.name.lower() in seen:
                    raise SqlError(ER_FIELD_SPECIFIED_TWICE, f"Column '{c.name}' specified twice")
                seen.add(c.name.lower())
                given.append(c)
        widths = [len(r) for r in plan.rows] if plan.rows else \
            ([plan.select_width] if plan.select_width is not None else [])
        for n, width in enumerate(widths, 1):
            if plan.columns is None and width == 0 and plan.rows:
                continue  # INSERT INTO t VALUES (): every column takes its default
            if width != len(given):
                raise SqlError(ER_WRONG_VALUE_COUNT_ON_ROW, f"Column count doesn't match value count at row {n}")
        if not strict:
            return
        listed = {c.name.lower() for c in given}
        rows = plan.rows if plan.rows else ("v" * len(given),)
        for row in rows:
            if not row:
                missing = [c for c in t.columns if c.needs_value]
            else:
                missing = [c for c in t.columns if c.needs_value and c.name.lower() not in listed]
                missing += [c for c, m in zip(given, row, strict=True) if m == "d" and c.needs_value]
            if missing:
                raise SqlError(ER_NO_DEFAULT_FOR_FIELD, f"Field '{missing[0].name}' doesn't have a default value")
            for c, m in zip(given, row, strict=False):
                if m == "n" and c.needs_value:
                    raise SqlError(ER_BAD_NULL_ERROR, f"Column '{c.name}' cannot be null")

    # --- DDL
    def create_database(self, name: str, if_not_exists: bool, replace: bool = False,
                        options: Iterable[tuple[str, str]] = ()) -> list[str]:
        if name in self.dbs or name.lower() in SYSTEM_DATABASES:
            if if_not_exists:
                return [f"Can't create database '{name}'; database exists"]
            if not replace:
                raise SqlError(ER_DB_CREATE_EXISTS, f"Can't create database '{name}'; database exists")
        cs, coll = charset_options(options, "utf8mb4", "utf8mb4_general_ci")
        self.dbs[name] = Database(name, {}, cs, coll)
        return []

    def drop_database(self, name: str, if_exists: bool) -> list[str]:
        if name not in self.dbs:
            if name.lower() in SYSTEM_DATABASES:
                return []
            if if_exists:
                return [f"Can't drop database '{name}'; database doesn't exist"]
            raise SqlError(ER_DB_DROP_EXISTS, f"Can't drop database '{name}'; database doesn't exist")
        del self.dbs[name]
        return []

    def apply_ddl(self, tree: exp.Expression, text: str, default_db: str | None) -> list[str]:
        """Check one table DDL statement and apply it; SqlError leaves the catalogue as it was. Returns the notes
        MariaDB gives (IF [NOT] EXISTS on something that is / is not there)."""
        if isinstance(tree, exp.Create) and str(tree.args.get("kind")).upper() == "TABLE":
            return self._create_table(tree, text, default_db)
        if isinstance(tree, exp.Drop) and str(tree.args.get("kind")).upper() in ("TABLE", "SEQUENCE"):
            return self._drop_tables(tree, default_db)
        if isinstance(tree, exp.TruncateTable):
            for t in tree.expressions:
                if isinstance(t, exp.Table):
                    self._require_table(self._db(t.db or None, default_db), t.name)
            return []
        if isinstance(tree, exp.Alter):
            return self._alter(tree, default_db)
        head = text.lstrip()[:20].upper()
        if head.startswith("RENAME"):
            return self._rename(text, default_db)
        if head.startswith("ALTER"):  # syntax sqlglot does not model: the table must exist, its columns blur
            m = _ALTER_NAME.match(text.lstrip())
            if m is not None:
                db, name = _qname(m.group(1), m.group(2))
                t = self._require_table(self._db(db, default_db), name)
                if t is not None and " IF EXISTS " not in text[:60].upper():
                    t.columns = None
            return []
        if (isinstance(tree, exp.Create) and str(tree.args.get("kind")).upper() == "INDEX") or \
                (isinstance(tree, exp.Drop) and str(tree.args.get("kind")).upper() == "INDEX"):
            m = _INDEX_ON.search(text)
            if m is not None:
                db, name = _qname(m.group(1), m.group(2))
                self._require_table(self._db(db, default_db), name)
            return []
        if head.startswith("CREATE"):
            m = _CREATE_NAME.match(text.lstrip())
            if m is not None:  # CREATE TABLE sqlglot does not model: the name is known, the columns are not
                db, name = _qname(m.group(2), m.group(3))
                return self._add_table(self._db(db, default_db), Table(name, None), bool(m.group(1)),
                                       text.lstrip()[:30].upper().startswith("CREATE OR REPLACE"))
        return []

    def _add_table(self, db: str, t: Table, if_not_exists: bool, replace: bool) -> list[str]:
        if db.lower() in SYSTEM_DATABASES:
            return []
        d = self._require_db(db)
        if t.name in d.tables and not replace:
            if if_not_exists:
                return [f"Table '{t.name}' already exists"]
            raise SqlError(ER_TABLE_EXISTS_ERROR, f"Table '{t.name}' already exists")
        d.tables[t.name] = t
        return []

    def _create_table(self, tree: exp.Create, text: str, default_db: str | None) -> list[str]:
        target = tree.this
        schema = target if isinstance(target, exp.Schema) else None
        table = schema.this if schema is not None else target
        if not isinstance(table, exp.Table):
            return []
        db = self._db(table.db or None, default_db)
        like = next((p for p in (tree.args.get("properties") or exp.Properties()).expressions
                     if isinstance(p, exp.LikeProperty)), None)
        if like is not None and isinstance(like.this, exp.Table):
            src = self._require_table(self._db(like.this.db or None, default_db), like.this.name)
            new = copy.deepcopy(src) if src is not None else Table(table.name, None)
            new.name = table.name
        elif schema is not None and tree.expression is None:
            cols: list[Column] = []
            keys: list[tuple[str, str, list[str]]] = []
            for e in schema.expressions:
                if isinstance(e, exp.ColumnDef):
                    col, inline = column_of(e)
                    if any(c.name.lower() == col.name.lower() for c in cols):
                        raise SqlError(ER_DUP_FIELDNAME, f"Duplicate column name '{col.name}'")
                    cols.append(col)
                    for k in inline:
                        if k[0] == "PRIMARY":
                            keys.insert(0, k)
                        else:
                            keys.append((k[0], _key_name(keys, k[1]), k[2]))
                else:
                    _index_keys(e, keys)
            d = self.dbs.get(db)
            props = [("charset" if isinstance(p, exp.CharacterSetProperty) else "collate", p.this.name)
                     for p in (tree.args.get("properties") or exp.Properties()).expressions
                     if isinstance(p, exp.CharacterSetProperty | exp.CollateProperty)]
            cs, coll = charset_options(props, d.charset if d else "utf8mb4", d.collation if d else "utf8mb4_general_ci")
            new = Table(table.name, cols, keys, cs, coll)
            for c in cols:
                if c.charset == cs and c.collation == coll:
                    c.charset = c.collation = None
            _mark_keys(new)
        else:
            new = Table(table.name, None)  # CREATE TABLE ... SELECT: the columns come from the data
        return self._add_table(db, new, bool(tree.args.get("exists")), bool(tree.args.get("replace")))

    def _drop_tables(self, tree: exp.Drop, default_db: str | None) -> list[str]:
        names = [(self._db(t.db or None, default_db), t.name) for t in _dropped(tree) if isinstance(t, exp.Table)]
        missing = [f"{db}.{n}" for db, n in names if db.lower() not in SYSTEM_DATABASES and self.table(db, n) is None]
        if missing and not tree.args.get("exists"):
            raise SqlError(ER_BAD_TABLE_ERROR, f"Unknown table '{','.join(missing)}'")
        for db, n in names:
            d = self.dbs.get(db)
            if d is not None:
                d.tables.pop(n, None)
        return [f"Unknown table '{m}'" for m in missing]

    def _rename(self, text: str, default_db: str | None) -> list[str]:
        m = _RENAME.match(text.strip())
        if m is None:
            return []
        body = m.group(1)
        pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
        pos = 0
        while pos < len(body):
            pm = _PAIR.match(body, pos)
            if pm is None:
                return []  # WAIT / NOWAIT or a shape not modelled: accept
            a, b = _qname(pm.group(1), pm.group(2)), _qname(pm.group(3), pm.group(4))
            pairs.append(((self._db(a[0], default_db), a[1]), (self._db(b[0], default_db), b[1])))
            pos = pm.end()
        work = {db: dict(d.tables) for db, d in self.dbs.items()}
        for (sdb, sname), (ddb, dname) in pairs:
            if SYSTEM_DATABASES & {sdb.lower(), ddb.lower()}:
                return []
            src = work.get(sdb, {}).get(sname)
            if src is None:
                raise no_such_table(sdb, sname)
            if ddb not in work:
                raise SqlError(ER_BAD_DB_ERROR, f"Unknown database '{ddb}'")
            if dname in work[ddb]:
                raise SqlError(ER_TABLE_EXISTS_ERROR, f"Table '{dname}' already exists")
            del work[sdb][sname]
            moved = copy.copy(src)
            moved.name = dname
            work[ddb][dname] = moved
        for db, tables in work.items():
            self.dbs[db].tables = tables
        return []

    def _alter(self, tree: exp.Alter, default_db: str | None) -> list[str]:
        table = tree.this
        if not isinstance(table, exp.Table):
            return []
        db = self._db(table.db or None, default_db)
        if db.lower() in SYSTEM_DATABASES:
            return []
        t = self.table(db, table.name)
        if t is None:
            if tree.args.get("exists"):
                return [f"Unknown table '{db}.{table.name}'"]
            raise no_such_table(db, table.name)
        new = copy.deepcopy(t)
        rename_to: tuple[str, str] | None = None
        for a in tree.args.get("actions") or []:
            if isinstance(a, exp.AlterRename) and isinstance(a.this, exp.Table):
                rename_to = (self._db(a.this.db or None, db), a.this.name)
            elif new.columns is None:
                continue
            elif isinstance(a, exp.ColumnDef):
                col, inline = column_of(a)
                if new.column(col.name) is not None:
                    if a.args.get("exists"):
                        continue
                    raise SqlError(ER_DUP_FIELDNAME, f"Duplicate column name '{col.name}'")
                self._place(new, col, a.args.get("position"))
                new.keys += inline
            elif isinstance(a, exp.Drop) and str(a.args.get("kind")).upper() == "COLUMN":
                for c in _dropped(a):
                    if new.column(c.name) is None:
                        if a.args.get("exists"):
                            continue
                        raise SqlError(ER_CANT_DROP_FIELD_OR_KEY,
                                       f"Can't DROP COLUMN `{c.name}`; check that it exists")
                    new.columns = [x for x in new.columns if x.name.lower() != c.name.lower()]
                    new.keys = [(k, n, [x for x in cols if x.lower() != c.name.lower()])
                                for k, n, cols in new.keys]
                    new.keys = [k for k in new.keys if k[2]]
            elif isinstance(a, exp.ModifyColumn) and isinstance(a.this, exp.ColumnDef):
                old_name = a.args["rename_from"].name if a.args.get("rename_from") else a.this.name
                old = new.column(old_name)
                if old is None:
                    raise unknown_column(old_name, table.name)
                col, _ = column_of(a.this)
                if col.name.lower() != old_name.lower() and new.column(col.name) is not None:
                    raise SqlError(ER_DUP_FIELDNAME, f"Duplicate column name '{col.name}'")
                i = new.columns.index(old)
                new.columns[i] = col
                new.keys = [(k, n, [col.name if x.lower() == old_name.lower() else x for x in cols])
                            for k, n, cols in new.keys]
            elif isinstance(a, exp.AlterColumn):
                c = new.column(a.this.name)
                if c is None:
                    raise unknown_column(a.this.name, table.name)
                if a.args.get("default") is not None:
                    c.default = _default_text(a.args["default"])
                elif a.args.get("drop"):
                    c.default = None
            elif isinstance(a, exp.DropPrimaryKey):
                new.keys = [k for k in new.keys if k[0] != "PRIMARY"]
            elif isinstance(a, exp.AddConstraint):
                for e in a.expressions:
                    _index_keys(e, new.keys)
            else:
                new.columns = None  # an action this module does not model: stop checking the columns
        if new.columns is not None:
            _mark_keys(new)
        d = self.dbs[db]
        if rename_to is not None and rename_to != (db, t.name):
            ddb = self.dbs.get(rename_to[0])
            if ddb is None:
                raise SqlError(ER_BAD_DB_ERROR, f"Unknown database '{rename_to[0]}'")
            if rename_to[1] in ddb.tables:
                raise SqlError(ER_TABLE_EXISTS_ERROR, f"Table '{rename_to[1]}' already exists")
            del d.tables[t.name]
            new.name = rename_to[1]
            ddb.tables[new.name] = new
        else:
            d.tables[t.name] = new
        return []

    @staticmethod
    def _place(t: Table, col: Column, position: exp.Expression | None) -> None:
        assert t.columns is not None
        if isinstance(position, exp.ColumnPosition):
            where = str(position.args.get("position") or "").upper()
            if where == "FIRST":
                t.columns.insert(0, col)
                return
            after = position.this
            if isinstance(after, exp.Expression):
                ref = t.column(after.name)
                if ref is None:
                    raise unknown_column(after.name, t.name)
                t.columns.insert(t.columns.index(ref) + 1, col)
                return
        t.columns.append(col)


# ---------------------------------------------------------------------------------------------- persistence


class SchemaStore:
    """The snapshot file `<basename>.schema` beside the binlog (see the module docstring). Writer thread only."""

    def __init__(self, directory: Path, basename: str) -> None:
        self.path = directory / f"{basename}.schema"

    def load(self) -> tuple[str | None, Catalogue]:
        """(the binlog file the snapshot is the start of, the catalogue); (None, empty) without a snapshot."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None, Catalogue()
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("schema snapshot %s unreadable (%s): rebuilding from the binlog", self.path, e)
            return None, Catalogue()
        return str(data["file"]), Catalogue.from_json(data)

    def save(self, file: str, cat: Catalogue) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"file": file, **cat.to_json()}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replay(cat: Catalogue, statements: Iterable[tuple[str, str | None]]) -> int:
    """Apply logged statements (text, the Query's db) to `cat` through the classifier; returns the DDL count.
    A statement the catalogue refuses (a binlog written before the catalogue existed) is logged and skipped."""
    from .classify import Kind, classify

    n = 0
    for sql, db in statements:
        try:
            stmt = classify(sql, db or None)
            if stmt.kind in (Kind.DDL, Kind.DB_DDL):
                n += 1
                apply_statement(cat, stmt, db or None)
        except SqlError as e:
            log.warning("schema replay: %r not applied: %s", sql[:200], e)
        except Exception:  # a statement this module mis-handles must not stop the server or its writer
            log.exception("schema replay: %r not applied", sql[:200])
    return n


def apply_statement(cat: Catalogue, stmt: Any, default_db: str | None) -> list[str]:
    """Check and apply one classified DDL statement (the one rule, for live statements and replay alike)."""
    from .classify import Kind

    if stmt.kind is Kind.DB_DDL:
        text = stmt.sql.lstrip().upper()
        words = text.split()
        if words and words[0] == "CREATE":
            options = [("charset" if m.group(1) else "collate", m.group(2) or m.group(3))
                       for m in _DB_OPTION.finditer(stmt.sql)]
            return cat.create_database(stmt.database, "IF NOT EXISTS" in " ".join(words[:6]), "OR REPLACE" in
                                       " ".join(words[:3]), [(k, v.strip("`'\"")) for k, v in options])
        if words and words[0] == "DROP":
            return cat.drop_database(stmt.database, "IF EXISTS" in " ".join(words[:5]))
        return []
    if stmt.tree is None:
        return []
    return cat.apply_ddl(stmt.tree, stmt.sql, default_db)
