"""SELECT / DO: result sets from expressions, information_schema and the standalone schema catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from binlogd.protocol import constants as C

from ..replica_filters import check_session_var
from .base import StatementBase
from .errors import SqlError, not_supported
from .lexer import _words
from .nodes import _Case, _Col, _Item, _Lit, _Node, _Op, _Select
from .parser import _Parser
from .results import Ok, ResultSet
from .values import _out, _sort_key, _to_text

# information_schema tables binlogd answers (columns: VARIABLE_NAME, VARIABLE_VALUE)
_IS_VARIABLE_TABLES = {"GLOBAL_VARIABLES": ("VARIABLES", "GLOBAL"), "SESSION_VARIABLES": ("VARIABLES", "SESSION"),
                       "GLOBAL_STATUS": ("STATUS", "GLOBAL"), "SESSION_STATUS": ("STATUS", "SESSION")}


_IS_TABLES = frozenset(_words("""
ALL_PLUGINS APPLICABLE_ROLES CHARACTER_SETS CHECK_CONSTRAINTS CLIENT_STATISTICS COLLATIONS
COLLATION_CHARACTER_SET_APPLICABILITY COLUMNS COLUMN_PRIVILEGES ENABLED_ROLES ENGINES EVENTS FILES
GEOMETRY_COLUMNS GLOBAL_STATUS GLOBAL_VARIABLES INDEX_STATISTICS KEYWORDS KEY_CACHES KEY_COLUMN_USAGE
OPTIMIZER_TRACE PARAMETERS PARTITIONS PLUGINS PROCESSLIST PROFILING REFERENTIAL_CONSTRAINTS ROUTINES
SCHEMATA SCHEMA_PRIVILEGES SESSION_STATUS SESSION_VARIABLES SPATIAL_REF_SYS SQL_FUNCTIONS STATISTICS
SYSTEM_VARIABLES TABLES TABLESPACES TABLE_CONSTRAINTS TABLE_PRIVILEGES TABLE_STATISTICS TRIGGERS
USER_PRIVILEGES USER_STATISTICS USER_VARIABLES VIEWS THREAD_POOL_GROUPS THREAD_POOL_QUEUES THREAD_POOL_STATS
THREAD_POOL_WAITS
"""))


# information_schema.PROCESSLIST's columns (MariaDB 10.11's)
_IS_PROCESSLIST = _words("""ID USER HOST DB COMMAND TIME STATE INFO TIME_MS STAGE MAX_STAGE PROGRESS MEMORY_USED
MAX_MEMORY_USED EXAMINED_ROWS QUERY_ID INFO_BINARY TID""")
_IS_PROCESSLIST_DECIMALS = {"time_ms": "decimal(22,3)", "progress": "decimal(7,3)"}

# information_schema tables the standalone primary fills from its schema catalogue (server/standalone/views.py)
_SCHEMA_TABLES = frozenset({"SCHEMATA", "TABLES", "COLUMNS"})


class SelectStatements(StatementBase):
    """SELECT and DO."""

    def do_select(self, p: _Parser) -> ResultSet | Ok:
        sel = p.select_body()
        p.finish()
        res = self.run_select(sel)
        if sel.into is not None:
            if len(sel.into) != len(res.columns):
                raise SqlError(C.ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                               "The used SELECT statements have a different number of columns")
            if len(res.rows) > 1:
                raise SqlError(C.ER_TOO_MANY_ROWS, "Result consisted of more than one row")
            if not res.rows:
                self.warnings.append(("Warning", C.ER_SP_FETCH_NO_DATA,
                                      "No data - zero rows fetched, selected, or processed"))
                return Ok(0)
            for name, v in zip(sel.into, res.rows[0], strict=True):
                check_session_var(name, v)
                self.session.user_vars[name] = v
            return Ok(1)
        return res

    def run_select(self, sel: _Select, nested: bool = False) -> ResultSet:
        ev = self.ev
        saved_row, saved_clause = ev.row, ev.clause
        try:
            if sel.table is not None:
                return self.select_from_table(sel)
            if sel.unsupported:
                raise not_supported(sel.unsupported)
            if any(it.expr is None for it in sel.items):
                raise SqlError(C.ER_NO_TABLES_USED, "No tables used")
            ev.row = None
            columns = [self.column_name(it) for it in sel.items]
            if sel.where is not None:
                ev.clause = "WHERE"
                if not ev.truth(ev.ev(sel.where)):
                    return ResultSet(columns, [])
            ev.clause = "SELECT"
            row = tuple(_out(ev.ev(it.expr)) for it in sel.items if it.expr is not None)
            for e, _ in sel.order:
                ev.clause = "ORDER BY"
                if not (isinstance(e, _Lit) and isinstance(e.value, int)):
                    ev.ev(e)
            rows = [row]
            if sel.limit is not None:
                off, cnt = sel.limit
                rows = rows[off : off + cnt]
            return ResultSet(columns, rows)
        finally:
            ev.row, ev.clause = saved_row, saved_clause

    def column_name(self, it: _Item) -> str:
        """MariaDB's auto-name: a literal is named by itself ('a' -> a, (1) -> 1, +5 -> 5), a column by its
        name, anything else by its text as typed (`@@GLOBAL.gtid_domain_id`, `UNIX_TIMESTAMP()`)."""
        if it.alias is not None:
            return it.alias
        e = it.expr
        while isinstance(e, _Op) and e.op in ("()", "+u"):
            e = e.left
        if isinstance(e, _Lit):
            return _to_text(e.value) if e.is_string else self.source(e.start, e.end)
        if isinstance(e, _Col):
            return e.name
        return self.source(it.start, it.end)

    def source(self, start: int, end: int) -> str:
        """The statement text between two offsets as MariaDB's preprocessed query shows it."""
        parts: list[str] = []
        pos = start
        for a, b in self.hidden:
            if b <= pos or a >= end:
                continue
            parts.append(self.sql[pos:a])
            pos = max(pos, b)
        parts.append(self.sql[pos:end])
        return "".join(parts)

    def table_db(self, db: str | None) -> str:
        if db is None:
            if self.session.database is None:
                raise SqlError(C.ER_NO_DB_ERROR, "No database selected")
            return self.session.database
        return db

    def select_from_table(self, sel: _Select) -> ResultSet:
        assert sel.table is not None
        db_given, name, alias = sel.table
        db = self.table_db(db_given)
        self.clears_diagnostics = True
        cat = self.catalogue()
        quals = {name.lower(), (alias or "").lower()}
        if db.lower() != "information_schema":
            table = cat.table(db, name) if cat is not None else None
            if table is None:
                raise SqlError(C.ER_NO_SUCH_TABLE, f"Table '{db}.{name}' doesn't exist")
            if table.columns is None or sel.unsupported:
                raise not_supported(sel.unsupported or "SELECT from a table whose columns binlogd no longer knows "
                                    "(CREATE TABLE ... SELECT or an ALTER it does not model)")
            # a table of the standalone primary: no rows, as from a BLACKHOLE table (names are still checked)
            res = self.select_rows(sel, [c.name for c in table.columns], [], quals)
            types = {c.name.lower(): c.type for c in table.columns}
            res.types = []
            for it in sel.items:
                if it.expr is None:
                    res.types += [c.type for c in table.columns]
                else:
                    res.types.append(types.get(it.expr.name.lower()) if isinstance(it.expr, _Col) else None)
            return res
        key = name.upper()
        if key not in _IS_TABLES and not key.startswith("INNODB_"):
            raise SqlError(C.ER_UNKNOWN_TABLE, f"Unknown table '{name}' in information_schema")
        if cat is not None and key in _SCHEMA_TABLES and not sel.unsupported:
            from ..standalone.views import INFORMATION_SCHEMA

            names, rows_of = INFORMATION_SCHEMA[key]
            return self.select_rows(sel, names, rows_of(cat), quals)
        if key == "PROCESSLIST" and not sel.unsupported:
            res = self.select_rows(sel, _IS_PROCESSLIST, self.processlist_rows(), quals)
            res.types = []  # the DECIMAL columns keep their type (their values travel as text)
            for it in sel.items:
                if it.expr is None:
                    res.types += [_IS_PROCESSLIST_DECIMALS.get(n.lower()) for n in _IS_PROCESSLIST]
                else:
                    name = it.expr.name.lower() if isinstance(it.expr, _Col) else ""
                    res.types.append(_IS_PROCESSLIST_DECIMALS.get(name))
            return res
        if key not in _IS_VARIABLE_TABLES or sel.unsupported:
            raise not_supported(sel.unsupported or f"SELECT from information_schema.{key}")
        what, scope = _IS_VARIABLE_TABLES[key]
        pairs = self.variable_rows(what, scope)
        source = [{"variable_name": n.upper(), "variable_value": v} for n, v in pairs]
        return self.select_rows(sel, ["VARIABLE_NAME", "VARIABLE_VALUE"], source, quals)

    def processlist_rows(self) -> list[dict[str, Any]]:
        """information_schema.PROCESSLIST: the process list's connections (server/processlist.py). binlogd keeps no
        stages, query ids, per-connection memory or OS thread ids: those columns are 0."""
        out = []
        me = self.session.connection_id
        for r in self.server.processlist(me):
            info = r[7]
            assert isinstance(r[5], float) and (info is None or isinstance(info, str))
            out.append({"id": r[0], "user": r[1], "host": r[2], "db": r[3], "command": r[4], "time": int(r[5]),
                        "state": "Filling schema table" if r[0] == me else r[6], "info": info,
                        "time_ms": f"{r[5] * 1000:.3f}", "stage": 0, "max_stage": 0, "progress": "0.000",
                        "memory_used": 0, "max_memory_used": 0, "examined_rows": 0, "query_id": 0,
                        "info_binary": None if info is None else info.encode(), "tid": 0})
        return out

    def catalogue(self) -> Any:
        """The standalone primary's schema catalogue (server/standalone/schema.py), None in the other modes."""
        return getattr(self.server, "schema", None)

    def select_rows(self, sel: _Select, names: list[str], source: list[dict[str, Any]],
                    quals: set[str]) -> ResultSet:
        """SELECT items / WHERE / ORDER BY / LIMIT over one table's rows (dicts keyed by lower-case column name)."""
        ev = self.ev
        known = {n.lower() for n in names}
        columns: list[str] = []
        exprs: list[_Node | None] = []
        for it in sel.items:
            if it.expr is None:
                if it.star_qual is not None and it.star_qual.lower() not in quals:
                    raise SqlError(C.ER_BAD_TABLE_ERROR, f"Unknown table '{it.star_qual}'")
                columns += names
                exprs += [_Col(0, 0, n, None) for n in names]
            else:
                columns.append(self.column_name(it))
                exprs.append(it.expr)
        self.check_columns(exprs, quals, "SELECT", known)
        if sel.where is not None:
            self.check_columns([sel.where], quals, "WHERE", known)
        aliases = {it.alias.lower() for it in sel.items if it.alias is not None}
        for e, _desc in sel.order:
            if not (isinstance(e, _Lit) and isinstance(e.value, int)):
                self.check_columns([e], quals, "ORDER BY", known | aliases)
        rows: list[tuple[tuple[Any, ...], list[Any]]] = []
        for r in source:
            ev.row = r
            if sel.where is not None:
                ev.clause = "WHERE"
                if not ev.truth(ev.ev(sel.where)):
                    continue
            ev.clause = "SELECT"
            values = tuple(_out(ev.ev(e)) for e in exprs if e is not None)
            keys: list[Any] = []
            for e, _desc in sel.order:
                if isinstance(e, _Lit) and isinstance(e.value, int):
                    idx = e.value - 1
                    if not 0 <= idx < len(values):
                        raise SqlError(C.ER_BAD_FIELD_ERROR, f"Unknown column '{e.value}' in 'ORDER BY'")
                    keys.append(values[idx])
                else:
                    ev.clause = "ORDER BY"
                    keys.append(ev.ev(e))
            rows.append((values, keys))
        for k in range(len(sel.order) - 1, -1, -1):
            desc = sel.order[k][1]
            rows.sort(key=lambda rk, k=k: (rk[1][k] is not None, _sort_key(rk[1][k])), reverse=desc)
        out = [v for v, _ in rows]
        if sel.limit is not None:
            off, cnt = sel.limit
            out = out[off : off + cnt]
        return ResultSet(columns, out)

    def check_columns(self, exprs: Sequence[_Node | None], quals: set[str], clause: str, known: set[str]) -> None:
        """Unknown columns are an error even when no row is read (MariaDB resolves names first)."""
        stack = [e for e in exprs if e is not None]
        while stack:
            e = stack.pop()
            if isinstance(e, _Col):
                if e.name.lower() not in known:
                    raise SqlError(C.ER_BAD_FIELD_ERROR, f"Unknown column '{e.name}' in '{clause}'")
                if e.qual is not None and e.qual.lower() not in quals and \
                        e.qual.lower().split(".")[-1] not in quals:
                    raise SqlError(C.ER_BAD_FIELD_ERROR,
                                   f"Unknown column '{e.qual}.{e.name}' in '{clause}'")
            for attr in ("left", "right", "expr", "base", "default"):
                child = getattr(e, attr, None)
                if isinstance(child, _Node):
                    stack.append(child)
            for attr in ("args", "items"):
                stack.extend(getattr(e, attr, None) or [])
            if isinstance(e, _Op) and isinstance(e.extra, list):
                stack.extend(e.extra)
            elif isinstance(e, _Op) and isinstance(e.extra, _Node):
                stack.append(e.extra)
            if isinstance(e, _Case):
                for c, v in e.whens:
                    stack += [c, v]

    def do_do(self, p: _Parser) -> Ok:
        exprs = [p.expr()]
        while p.accept_op(","):
            exprs.append(p.expr())
        p.finish()
        for e in exprs:
            self.ev.ev(e)
        return Ok()
