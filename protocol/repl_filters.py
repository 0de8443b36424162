"""Replication filter rules evaluated as a MariaDB 10.11 replica evaluates them: pure code shared by the
applier (binlogd-apply, per-channel filters of seed WL#7361) and `binlogd show` (table filters of seed WL40).

Evaluation follows MariaDB's `sql/rpl_filter.cc` and its callers (the reference our comparison tests
run against), which is MySQL's documented order ("How Servers Evaluate Replication Filtering Rules"):

* the database is first rewritten (`replicate_rewrite_db`, first matching pair), and every rule below
  sees the rewritten name;
* database level (`db_ok`): no do/ignore-db rules -> go on; no database -> go on; do-db rules present ->
  only listed databases go on (ignore-db is then not consulted); else ignore-db rules drop listed ones.
  Statement events test the *default* database (`USE`), row events the table's database;
* CREATE/ALTER/DROP DATABASE (statement events whose default database is the database they name,
  `is_ddl_db`) also test the named database against the do/ignore-db rules and against the wild-table
  rules as `db.` (MariaDB's `db_ok_with_wild_table`: `db1.%` means "everything touching db1");
* table level (`tables_ok`), only when a table rule exists and the statement names tables: for each
  updated table in order: do-table match -> apply; ignore-table match -> skip; wild-do match -> apply;
  wild-ignore match -> skip; no match for any table -> skip if a do-table or wild-do-table rule exists,
  else apply.

Where MariaDB differs from MySQL 8's manual (and we follow MariaDB): database names are compared
exactly (strcmp) while table rules are case-insensitive (MariaDB hashes and matches them with the
utf8 general collation); a statement without default database passes the database level;
multi-table statements are decided by the first table that matches a rule.

Hit counters (P_S `COUNTER`): each `apply_*` call adds one to the counter of the filter type that
decided it (including a do-list that did not list the name), and one to REWRITE_DB when it rewrote.
`rewrite_db()` alone does not count, so callers may use it freely to name the target database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class FilterType(StrEnum):
    """The seven filter types, valued as MySQL's FILTER_NAME / CHANGE REPLICATION FILTER keyword."""

    DO_DB = "REPLICATE_DO_DB"
    IGNORE_DB = "REPLICATE_IGNORE_DB"
    DO_TABLE = "REPLICATE_DO_TABLE"
    IGNORE_TABLE = "REPLICATE_IGNORE_TABLE"
    WILD_DO_TABLE = "REPLICATE_WILD_DO_TABLE"
    WILD_IGNORE_TABLE = "REPLICATE_WILD_IGNORE_TABLE"
    REWRITE_DB = "REPLICATE_REWRITE_DB"

    @property
    def option(self) -> str:
        """The startup option / MariaDB variable stem: `replicate-do-db`."""
        return self.value.lower().replace("_", "-")

    @property
    def status_column(self) -> str:
        """The SHOW SLAVE STATUS column (MariaDB spelling)."""
        return _STATUS_COLUMNS[self]

    @classmethod
    def from_name(cls, name: str) -> FilterType:
        """Accept `REPLICATE_DO_DB`, `replicate-do-db`, `replicate_do_db` or `do_db`."""
        key = name.strip().upper().replace("-", "_")
        if not key.startswith("REPLICATE_"):
            key = "REPLICATE_" + key
        return cls(key)


_STATUS_COLUMNS = {
    FilterType.REWRITE_DB: "Replicate_Rewrite_DB",
    FilterType.DO_DB: "Replicate_Do_DB",
    FilterType.IGNORE_DB: "Replicate_Ignore_DB",
    FilterType.DO_TABLE: "Replicate_Do_Table",
    FilterType.IGNORE_TABLE: "Replicate_Ignore_Table",
    FilterType.WILD_DO_TABLE: "Replicate_Wild_Do_Table",
    FilterType.WILD_IGNORE_TABLE: "Replicate_Wild_Ignore_Table",
}
TABLE_TYPES = (FilterType.DO_TABLE, FilterType.IGNORE_TABLE, FilterType.WILD_DO_TABLE, FilterType.WILD_IGNORE_TABLE)


class ConfiguredBy(StrEnum):
    STARTUP_OPTIONS = "STARTUP_OPTIONS"
    STARTUP_OPTIONS_FOR_CHANNEL = "STARTUP_OPTIONS_FOR_CHANNEL"
    CHANGE_REPLICATION_FILTER = "CHANGE_REPLICATION_FILTER"
    CHANGE_REPLICATION_FILTER_FOR_CHANNEL = "CHANGE_REPLICATION_FILTER_FOR_CHANNEL"


class FilterError(ValueError):
    """A rule value that cannot be a rule of its type (a table rule without a dot, a rewrite without `->`)."""


def wild_regex(pattern: str) -> re.Pattern[str]:
    """MariaDB's my_wildcmp as a regex: `%` any run, `_` one char, backslash escapes; case-insensitive."""
    out: list[str] = []
    it = iter(pattern)
    for ch in it:
        if ch == "\\":
            nxt = next(it, None)
            out.append(re.escape(nxt if nxt is not None else "\\"))
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def parse_rewrite(value: str) -> tuple[str, str]:
    """`from->to` (spaces around the names allowed, as MariaDB trims them)."""
    src, sep, dst = value.partition("->")
    src, dst = src.strip(), dst.strip()
    if not sep or not src or not dst:
        raise FilterError(f"Bad syntax in replicate-rewrite-db - missing '->'! ({value!r})")
    return src, dst


def check_value(ftype: FilterType, value: str) -> str:
    """Validate one rule value of `ftype`; return it normalised (stripped)."""
    v = value.strip()
    if not v:
        raise FilterError(f"empty value for {ftype.option}")
    if ftype is FilterType.REWRITE_DB:
        src, dst = parse_rewrite(v)
        return f"{src}->{dst}"
    if ftype in TABLE_TYPES and "." not in v:
        kind = "'db_pattern.table_pattern'" if ftype.name.startswith("WILD") else "'db_name.table_name'"
        raise FilterError(f"Supplied filter list contains a value which is not in the required format {kind}: {v!r}")
    return v


@dataclass(eq=False)
class Rule:
    """One filter type's rules in one FilterSet, with its P_S bookkeeping."""

    ftype: FilterType
    values: tuple[str, ...]
    configured_by: ConfiguredBy
    active_since: datetime = field(default_factory=datetime.now)
    counter: int = 0

    def __post_init__(self) -> None:
        t = self.ftype
        self._exact: frozenset[str] = frozenset()
        self._wild: tuple[re.Pattern[str], ...] = ()
        self._pairs: tuple[tuple[str, str], ...] = ()
        if t in (FilterType.DO_DB, FilterType.IGNORE_DB):
            self._exact = frozenset(self.values)
        elif t in (FilterType.DO_TABLE, FilterType.IGNORE_TABLE):
            self._exact = frozenset(v.casefold() for v in self.values)
        elif t in (FilterType.WILD_DO_TABLE, FilterType.WILD_IGNORE_TABLE):
            self._wild = tuple(wild_regex(v) for v in self.values)
        else:
            self._pairs = tuple(parse_rewrite(v) for v in self.values)

    def copy(self, configured_by: ConfiguredBy | None = None) -> Rule:
        """A fresh rule with the same values (own counter, active from now)."""
        return Rule(self.ftype, self.values, configured_by or self.configured_by)

    def has_db(self, db: str) -> bool:
        return db in self._exact

    def has_table(self, key: str) -> bool:
        return key.casefold() in self._exact

    def wild_match(self, key: str) -> bool:
        return any(p.fullmatch(key) for p in self._wild)

    def rewrite(self, db: str) -> str | None:
        for src, dst in self._pairs:
            if src == db:
                return dst
        return None

    @property
    def text(self) -> str:
        """FILTER_RULE of P_S (MySQL spelling: rewrite pairs as `(from,to)`)."""
        if self.ftype is FilterType.REWRITE_DB:
            return ",".join(f"({s},{d})" for s, d in self._pairs)
        return ",".join(self.values)

    @property
    def status_text(self) -> str:
        """The SHOW SLAVE STATUS column value (MariaDB spelling: rewrite pairs as `from->to`)."""
        return ",".join(self.values)


@dataclass(eq=False)
class FilterSet:
    """One channel's effective rules (or the global ones): at most one Rule per FilterType."""

    rules: dict[FilterType, Rule] = field(default_factory=dict)

    def get(self, ftype: FilterType) -> Rule | None:
        return self.rules.get(ftype)

    def values(self, ftype: FilterType) -> list[str]:
        r = self.rules.get(ftype)
        return list(r.values) if r else []

    @property
    def table_rules_on(self) -> bool:
        return any(t in self.rules for t in TABLE_TYPES)

    def status_columns(self) -> dict[str, str]:
        """The seven Replicate_* columns of SHOW SLAVE STATUS, in MariaDB's column order."""
        return {t.status_column: (self.rules[t].status_text if t in self.rules else "") for t in _STATUS_COLUMNS}

    # -- evaluation -------------------------------------------------------------------------------

    def rewrite_db(self, db: str | None) -> str | None:
        """The database name on the target (first matching rewrite pair); no counting."""
        r = self.rules.get(FilterType.REWRITE_DB)
        if db is None or r is None:
            return db
        new = r.rewrite(db)
        return db if new is None else new

    def _rewrite_counted(self, db: str | None) -> str | None:
        r = self.rules.get(FilterType.REWRITE_DB)
        if db is None or r is None:
            return db
        new = r.rewrite(db)
        if new is None:
            return db
        r.counter += 1
        return new

    def _db_ok(self, db: str | None) -> tuple[bool, FilterType | None]:
        do, ign = self.rules.get(FilterType.DO_DB), self.rules.get(FilterType.IGNORE_DB)
        if (do is None and ign is None) or db is None:
            return True, None
        if do is not None:
            return do.has_db(db), FilterType.DO_DB
        assert ign is not None
        if ign.has_db(db):
            return False, FilterType.IGNORE_DB
        return True, None

    def _db_ok_with_wild_table(self, db: str) -> tuple[bool, FilterType | None]:
        key = db + "."
        wdo, wign = self.rules.get(FilterType.WILD_DO_TABLE), self.rules.get(FilterType.WILD_IGNORE_TABLE)
        if wdo is not None and wdo.wild_match(key):
            return True, FilterType.WILD_DO_TABLE
        if wign is not None and wign.wild_match(key):
            return False, FilterType.WILD_IGNORE_TABLE
        if wdo is not None:
            return False, FilterType.WILD_DO_TABLE
        return True, None

    def _tables_ok(self, db: str | None, tables: Iterable[tuple[str | None, str]]) -> tuple[bool, FilterType | None]:
        do = self.rules.get(FilterType.DO_TABLE)
        ign = self.rules.get(FilterType.IGNORE_TABLE)
        wdo = self.rules.get(FilterType.WILD_DO_TABLE)
        wign = self.rules.get(FilterType.WILD_IGNORE_TABLE)
        for tdb, table in tables:
            key = f"{tdb if tdb is not None else (db or '')}.{table}"
            if do is not None and do.has_table(key):
                return True, FilterType.DO_TABLE
            if ign is not None and ign.has_table(key):
                return False, FilterType.IGNORE_TABLE
            if wdo is not None and wdo.wild_match(key):
                return True, FilterType.WILD_DO_TABLE
            if wign is not None and wign.wild_match(key):
                return False, FilterType.WILD_IGNORE_TABLE
        if do is not None:
            return False, FilterType.DO_TABLE
        if wdo is not None:
            return False, FilterType.WILD_DO_TABLE
        return True, None

    def _count(self, decided: tuple[bool, FilterType | None]) -> bool:
        ok, ftype = decided
        if ftype is not None:
            self.rules[ftype].counter += 1
        return ok

    def apply_statement(
        self, default_db: str | None, tables: list[tuple[str | None, str]], is_ddl_db: bool = False
    ) -> bool:
        """Should a statement event be applied?

        `default_db` is the Query event's database as the source wrote it (this method rewrites it);
        `tables` are the tables the statement *changes* (MariaDB ignores read-only tables here), as
        `(db or None for the default database, table)`, from `protocol.tables_info.tables_of_statement`
        or a tables-info event. `is_ddl_db`: CREATE/ALTER/DROP DATABASE, whose event database is the
        database named by the statement. Transaction keywords (BEGIN, COMMIT...) are never filtered:
        callers do not ask.
        """
        if not self.rules:
            return True
        db = self._rewrite_counted(default_db)
        decided = self._db_ok(db)
        if decided[0] and is_ddl_db and default_db is not None:
            # MariaDB re-checks the statement's own (not rewritten) database name, and the wild-table rules
            decided = self._db_ok(default_db)
            if decided[0]:
                decided = self._db_ok_with_wild_table(default_db)
        if decided[0] and tables and self.table_rules_on:
            decided = self._tables_ok(db, tables)
        return self._count(decided)

    def apply_row_event(self, db: str, table: str) -> bool:
        """Should the rows of this TABLE_MAP (source names; rewritten here) be applied?"""
        if not self.rules:
            return True
        tdb = self._rewrite_counted(db)
        decided = self._db_ok(tdb)
        if decided[0] and self.table_rules_on:
            decided = self._tables_ok(tdb, [(tdb, table)])
        return self._count(decided)


_FIRST_TABLE_ONLY = re.compile(r"^\s*(?:/\*.*?\*/\s*)*(?:INSERT|REPLACE|CREATE|LOAD)\b", re.IGNORECASE | re.DOTALL)
_MULTI_TABLE_DML = re.compile(r"^\s*(?:/\*.*?\*/\s*)*(?:UPDATE|DELETE)\b", re.IGNORECASE | re.DOTALL)


def updated_tables(sql: str, tables: list[tuple[str | None, str]] | None = None) -> list[tuple[str | None, str]]:
    """The tables a statement changes, for `FilterSet.apply_statement`; unqualified names stay None.

    MariaDB's table rules only look at the tables a statement updates: the target of INSERT/REPLACE
    ... SELECT, CREATE TABLE ... LIKE/SELECT and LOAD DATA, the tables a multi-table UPDATE assigns to
    and a multi-table DELETE deletes from, not the tables they only read. Unqualified names are left
    as None so that `apply_statement` resolves them to the *rewritten* default database, as MariaDB
    does. `tables`, when given, is the statement's full table list from a tables-info event (no parse then,
    except for a multi-table UPDATE/DELETE). Raises `protocol.tables_info.TablesInfoError` for text it cannot parse.
    """
    if tables is None:
        # sqlglot is imported only by callers that parse; a simple single-table DML needs no parse (~0.5 ms)
        from binlogd.protocol.tables_info import simple_dml_tables, tables_of_statement

        tables = simple_dml_tables(sql, None)
        if tables is None:
            tables = tables_of_statement(sql, None)
    if len(tables) > 1 and _FIRST_TABLE_ONLY.match(sql):
        return tables[:1]
    if len(tables) > 1 and _MULTI_TABLE_DML.match(sql):
        targets = _multi_table_targets(sql)
        if targets:
            return [t for t in tables if t in targets] or tables
    return tables


def _multi_table_targets(sql: str) -> set[tuple[str | None, str]] | None:
    """The changed tables of a multi-table UPDATE/DELETE, or None when the text does not say (an
    unqualified SET column: MariaDB resolves it through the schema, which a parser cannot)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, dialect="mysql")
    except SqlglotError:
        return None
    listed_ids = {id(t) for t in tree.args.get("tables") or []}
    named = [t for t in tree.find_all(exp.Table) if t.name and id(t) not in listed_ids]
    by_name: dict[str, tuple[str | None, str]] = {t.alias: (t.db or None, t.name) for t in named if t.alias}
    for t in named:
        by_name.setdefault(t.name, (t.db or None, t.name))
    refs: list[tuple[str | None, str]] = []
    if isinstance(tree, exp.Update):
        for assignment in tree.expressions:
            col = assignment.this if isinstance(assignment, exp.EQ) else None
            if not isinstance(col, exp.Column) or not col.table:
                return None
            refs.append((col.text("db") or None, col.table))
    elif isinstance(tree, exp.Delete):
        listed = tree.args.get("tables")
        if listed:
            refs = [(t.db or None, t.name) for t in listed if isinstance(t, exp.Table)]
        elif tree.args.get("using") and isinstance(tree.this, exp.Table):
            refs = [(tree.this.db or None, tree.this.name)]
        else:
            return None
    else:
        return None
    out: set[tuple[str | None, str]] = set()
    for db, name in refs:
        out.add((db, name) if db else by_name.get(name, (None, name)))
    return out


_DDL_DB = re.compile(rb"^\s*(?:/\*.*?\*/\s*)*(?:CREATE|ALTER|DROP)\s+(?:DATABASE|SCHEMA)\b", re.IGNORECASE | re.DOTALL)


def is_ddl_db(query: bytes) -> bool:
    """CREATE/ALTER/DROP DATABASE: statements whose event database is the one they name (`apply_statement`'s
    `is_ddl_db`)."""
    return bool(_DDL_DB.match(query))
