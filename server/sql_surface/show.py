"""SHOW and DESCRIBE: variables, status, binary logs and events, slave status, the standalone schema."""

from __future__ import annotations

from typing import Any

from binlogd.protocol import constants as C

from .. import sysvars as SV
from ..sysvars import Scope
from .base import StatementBase
from .errors import SqlError, not_supported
from .lexer import _words
from .like import like_match
from .nodes import _Node
from .parser import _Parser
from .results import Ok, ResultSet
from .values import _to_text

_SLAVE_STATUS_COLUMNS = _words("""
Slave_IO_State Master_Host Master_User Master_Port Connect_Retry Master_Log_File Read_Master_Log_Pos
Relay_Log_File Relay_Log_Pos Relay_Master_Log_File Slave_IO_Running Slave_SQL_Running Replicate_Do_DB
Replicate_Ignore_DB Replicate_Do_Table Replicate_Ignore_Table Replicate_Wild_Do_Table
Replicate_Wild_Ignore_Table Last_Errno Last_Error Skip_Counter Exec_Master_Log_Pos Relay_Log_Space
Until_Condition Until_Log_File Until_Log_Pos Master_SSL_Allowed Master_SSL_CA_File Master_SSL_CA_Path
Master_SSL_Cert Master_SSL_Cipher Master_SSL_Key Seconds_Behind_Master Master_SSL_Verify_Server_Cert
Last_IO_Errno Last_IO_Error Last_SQL_Errno Last_SQL_Error Replicate_Ignore_Server_Ids Master_Server_Id
Master_SSL_Crl Master_SSL_Crlpath Using_Gtid Gtid_IO_Pos Replicate_Do_Domain_Ids Replicate_Ignore_Domain_Ids
Parallel_Mode SQL_Delay SQL_Remaining_Delay Slave_SQL_Running_State Slave_DDL_Groups
Slave_Non_Transactional_Groups Slave_Transactional_Groups Replicate_Rewrite_DB
""")


# SHOW PROCESSLIST (rows: server/processlist.py); Progress is MariaDB's DOUBLE with 3 decimals
PROCESSLIST_COLUMNS = ["Id", "User", "Host", "db", "Command", "Time", "State", "Info", "Progress"]
PROCESSLIST_TYPES: list[str | None] = ["bigint(21)", "varchar(128)", "varchar(64)", "varchar(64)", "varchar(16)",
                                       "int(7)", "varchar(30)", "varchar(100)", "double"]
PROCESSLIST_INFO = 100  # SHOW PROCESSLIST without FULL cuts Info here

_ALL_SLAVES_STATUS_COLUMNS = ["Connection_name", "Slave_SQL_State", *_SLAVE_STATUS_COLUMNS,
                              "Retried_transactions", "Max_relay_log_size", "Executed_log_entries",
                              "Slave_received_heartbeats", "Slave_heartbeat_period", "Gtid_Slave_Pos"]


_SORTED_SYSVARS = sorted(SV.SYSVARS)


_SHOW_KNOWN = frozenset(_words("""
AUTHORS CHARACTER CHARSET CLIENT_STATISTICS COLLATION COLUMNS CONTRIBUTORS CREATE ENGINE ENGINES ERRORS
EVENTS EXPLAIN FIELDS FULL FUNCTION GRANTS INDEX INDEXES INDEX_STATISTICS KEYS LOCALES OPEN PACKAGE PLUGINS
PRIVILEGES PROCEDURE PROCESSLIST PROFILE PROFILES QUERY_RESPONSE_TIME RELAYLOG STORAGE TABLE TABLES
TABLE_STATISTICS TRIGGERS USER_STATISTICS WSREP_MEMBERSHIP WSREP_STATUS
"""))

# what EXPLAIN / DESCRIBE explain when it is not a table (binlogd: 1235, as before)
_EXPLAINABLE = frozenset({"SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE", "EXTENDED", "PARTITIONS", "FORMAT",
                          "ANALYZE", "FOR", "WITH", "VALUES", "TABLE"})


class ShowStatements(StatementBase):
    """SHOW, DESCRIBE / EXPLAIN of a table."""

    def do_show(self, p: _Parser) -> ResultSet:
        t = p.peek()
        scope = None
        kw = p.accept_kw("GLOBAL", "SESSION", "LOCAL")
        if kw is not None:
            scope = "GLOBAL" if kw == "GLOBAL" else "SESSION"
            if not p.is_kw(p.peek(), "VARIABLES", "STATUS"):
                p.fail()
        w = p.accept_kw("VARIABLES", "STATUS")
        if w is not None:
            return self.show_variables(p, w, scope or "SESSION")
        if p.accept_kw("MASTER"):
            if p.accept_kw("STATUS"):
                return self.show_master_status(p)
            if p.accept_kw("LOGS"):
                return self.show_binary_logs(p)
            p.fail()
        if p.accept_kw("BINLOG"):
            if p.accept_kw("STATUS"):
                return self.show_master_status(p)
            if p.accept_kw("EVENTS"):
                return self.show_binlog_events(p)
            p.fail()
        if p.accept_kw("BINARY"):
            p.expect_kw("LOGS")
            return self.show_binary_logs(p)
        if p.accept_kw("SLAVE", "REPLICA"):
            if p.accept_kw("HOSTS"):
                p.finish()
                rows = [tuple(h) for h in self.server.slave_hosts()]
                return ResultSet(["Server_id", "Host", "Port", "Master_id"], rows)
            if p.peek().kind == "STR":
                p.next()
            p.expect_kw("STATUS")
            p.finish()
            return self.slave_status(_SLAVE_STATUS_COLUMNS)
        if p.is_kw(p.peek(), "PROCESSLIST") or (p.is_kw(p.peek(), "FULL") and p.is_kw(p.peek(1), "PROCESSLIST")):
            full = p.accept_kw("FULL") is not None
            p.expect_kw("PROCESSLIST")
            p.finish()
            rows = [(*r[:5], int(r[5]), r[6], r[7] if full or r[7] is None else r[7][:PROCESSLIST_INFO], "0.000")
                    for r in self.server.processlist(self.session.connection_id)]
            return ResultSet(list(PROCESSLIST_COLUMNS), rows, types=list(PROCESSLIST_TYPES))
        if p.accept_kw("ALL"):
            p.expect_kw("SLAVES", "REPLICAS")
            p.expect_kw("STATUS")
            p.finish()
            return self.slave_status(_ALL_SLAVES_STATUS_COLUMNS)
        if p.accept_kw("WARNINGS", "ERRORS") is not None:
            errors_only = p.toks[p.i - 1].text.upper() == "ERRORS"
            limit = self.limit_clause(p)
            p.finish()
            rows = [d for d in self.session.diagnostics if d[0] == "Error" or not errors_only]
            if limit is not None:
                rows = rows[limit[0] : limit[0] + limit[1]]
            return ResultSet(["Level", "Code", "Message"], rows)
        if p.accept_kw("COUNT"):
            p.expect_op("(")
            p.expect_op("*")
            p.expect_op(")")
            which = p.expect_kw("WARNINGS", "ERRORS")
            p.finish()
            var = "warning_count" if which == "WARNINGS" else "error_count"
            return ResultSet([f"@@session.{var}"], [(self.session_bound(var),)])
        if p.accept_kw("DATABASES", "SCHEMAS"):
            return self.show_databases(p)
        cat = self.catalogue()
        if cat is not None:
            shown = self.show_schema(p, cat)
            if shown is not None:
                return shown
        shows_tables = p.is_kw(t, "TABLES") or (p.is_kw(t, "FULL", "OPEN") and p.is_kw(p.peek(1), "TABLES")) or \
            (p.is_kw(t, "TABLE") and p.is_kw(p.peek(1), "STATUS"))
        if shows_tables and self.session.database is None and not self._has_from(p):
            raise SqlError(C.ER_NO_DB_ERROR, "No database selected")
        words = " ".join(tok.text.upper() for tok in p.toks[p.i : p.i + 2] if tok.kind == "ID")
        if not words or p.peek().kind != "ID":
            p.fail()
        if p.is_kw(p.peek(), "BINARY") or p.peek().text.upper() not in _SHOW_KNOWN:
            p.fail()
        raise not_supported(f"SHOW {words}")

    # --- the standalone primary's schema (server/standalone/schema.py, views.py)
    def show_schema(self, p: _Parser, cat: Any) -> ResultSet | None:
        """SHOW [FULL] TABLES, SHOW CREATE TABLE / DATABASE, SHOW [FULL] COLUMNS; None: not one of them."""
        from ..standalone import views

        at = p.i
        self.clears_diagnostics = True  # they read tables: SHOW WARNINGS is reset, as by MariaDB
        full = p.accept_kw("FULL") is not None
        if p.accept_kw("TABLES"):
            db = self.schema_db(p, cat)
            pattern, where = self.like_or_where(p)
            p.finish()
            self.clears_diagnostics = True
            col = f"Tables_in_{db}" + (f" ({pattern})" if pattern is not None else "")
            rows: list[tuple[Any, ...]] = []
            for name in sorted(list(cat.dbs[db].tables) if db in cat.dbs else []):
                if pattern is not None and not like_match(name, pattern):
                    continue
                row = (name, "BASE TABLE") if full else (name,)
                if where is not None and not self.row_matches(where, {col.lower(): name, "table_type": row[-1]}):
                    continue
                rows.append(row)
            return ResultSet([col, "Table_type"] if full else [col], rows)
        if p.accept_kw("COLUMNS", "FIELDS"):
            if full:
                raise not_supported("SHOW FULL COLUMNS")
            p.expect_kw("FROM", "IN")
            db_given, name = p.table_ref()
            if p.accept_kw("FROM", "IN"):
                db_given = p.ident_any()
            pattern, where = self.like_or_where(p)
            p.finish()
            table = self.schema_table(cat, self.table_db(db_given), name)
            rows = []
            for r in views.describe_rows(table):
                if pattern is not None and not like_match(r[0], pattern):
                    continue
                if where is not None and not self.row_matches(
                        where, dict(zip((c.lower() for c in views.DESCRIBE_COLUMNS), r, strict=True))):
                    continue
                rows.append(r)
            return ResultSet(list(views.DESCRIBE_COLUMNS), rows)
        if full:
            p.i = at
            return None
        if p.accept_kw("CREATE"):
            if p.accept_kw("TABLE"):
                db_given, name = p.table_ref()
                p.finish()
                table = self.schema_table(cat, self.table_db(db_given), name)
                return ResultSet(["Table", "Create Table"], [(table.name, views.show_create_table(table))])
            if p.accept_kw("DATABASE", "SCHEMA"):
                if p.accept_kw("IF"):
                    p.expect_kw("NOT")
                    p.expect_kw("EXISTS")
                name = p.ident_any()
                p.finish()
                d = cat.dbs.get(name)
                if d is None:
                    raise SqlError(C.ER_BAD_DB_ERROR, f"Unknown database '{name}'")
                return ResultSet(["Database", "Create Database"], [(d.name, views.show_create_database(d))])
        p.i = at
        return None

    def schema_db(self, p: _Parser, cat: Any) -> str:
        """SHOW TABLES' database: FROM / IN db, else the default one (1046 without; 1049 when unknown)."""
        if p.accept_kw("FROM", "IN"):
            db = p.ident_any()
        elif self.session.database is None:
            raise SqlError(C.ER_NO_DB_ERROR, "No database selected")
        else:
            db = self.session.database
        if db not in cat.dbs:
            raise SqlError(C.ER_BAD_DB_ERROR, f"Unknown database '{db}'")
        return db

    def schema_table(self, cat: Any, db: str, name: str) -> Any:
        table = cat.table(db, name)
        if table is None:
            raise SqlError(C.ER_NO_SUCH_TABLE, f"Table '{db}.{name}' doesn't exist")
        if table.columns is None:
            raise not_supported("a table whose columns binlogd no longer knows (CREATE TABLE ... SELECT or an "
                                "ALTER it does not model)")
        return table

    def do_describe(self, p: _Parser) -> ResultSet | Ok:
        """DESCRIBE / DESC / EXPLAIN tbl [column]: the standalone schema's columns (EXPLAIN of a query: 1235)."""
        cat = self.catalogue()
        verb = p.toks[p.i - 1].text.upper()
        nxt = p.peek()
        if cat is None or (nxt.kind == "ID" and nxt.text.upper() in _EXPLAINABLE) or nxt.kind not in ("ID", "QID"):
            p.i -= 1
            return self.other(verb)
        from ..standalone import views

        self.clears_diagnostics = True
        db_given, name = p.table_ref()
        column = None
        if not p.at_end():
            t = p.next()
            if t.kind not in ("ID", "QID", "STR"):
                p.fail(t)
            column = str(t.value)
        p.finish()
        table = self.schema_table(cat, self.table_db(db_given), name)
        rows = [r for r in views.describe_rows(table) if column is None or like_match(r[0], column)]
        return ResultSet(list(views.DESCRIBE_COLUMNS), rows)

    @staticmethod
    def _has_from(p: _Parser) -> bool:
        return any(p.is_kw(tok, "FROM", "IN") for tok in p.toks[p.i :])

    def limit_clause(self, p: _Parser) -> tuple[int, int] | None:
        if not p.accept_kw("LIMIT"):
            return None
        first = p.int_literal()
        if p.accept_op(","):
            return first, p.int_literal()
        if p.accept_kw("OFFSET"):
            return p.int_literal(), first
        return 0, first

    def like_or_where(self, p: _Parser) -> tuple[str | None, _Node | None]:
        if p.accept_kw("LIKE"):
            t = p.peek()
            if t.kind != "STR":
                p.fail()
            p.next()
            return str(t.value), None
        if p.accept_kw("WHERE"):
            return None, p.expr()
        return None, None

    def variable_rows(self, what: str, scope: str, pattern: str | None = None) -> list[tuple[str, str]]:
        """(name, value as SHOW prints it), sorted; names not matching the LIKE pattern are not evaluated."""
        rows: list[tuple[str, str]] = []
        if what == "STATUS":
            for name, getter in sorted(SV.STATUS_VARS.items(), key=lambda kv: kv[0].lower()):
                if pattern is not None and not like_match(name, pattern):
                    continue
                v = getter(self.server)
                if v is not None:
                    rows.append((name, _to_text(v)))
            for name, value in self.session.status.items():  # per connection: '' in SHOW GLOBAL STATUS
                if pattern is None or like_match(name, pattern):
                    rows.append((name, "" if scope == "GLOBAL" else value))
            return sorted(rows, key=lambda r: r[0].lower())
        for name in _SORTED_SYSVARS:
            if pattern is not None and not like_match(name, pattern):
                continue
            var = SV.SYSVARS[name]
            if scope == "GLOBAL":
                if var.scope is Scope.SESSION_ONLY:
                    continue
                value = var.global_value(self.server)
            else:
                value = self.value_of(var, "global" if var.scope is Scope.GLOBAL else "session")
            rows.append((name, SV.show_text(var, value)))
        return rows

    def show_variables(self, p: _Parser, what: str, scope: str) -> ResultSet:
        pattern, where = self.like_or_where(p)
        p.finish()
        self.clears_diagnostics = True
        rows = self.variable_rows(what, scope, pattern)
        out: list[tuple[Any, ...]] = []
        for name, value in rows:
            if where is not None and not self.row_matches(where, {"variable_name": name, "value": value}):
                continue
            out.append((name, value))
        return ResultSet(["Variable_name", "Value"], out)

    def row_matches(self, where: _Node, row: dict[str, Any]) -> bool:
        ev = self.ev
        saved = ev.row, ev.clause
        ev.row, ev.clause = row, "WHERE"
        try:
            return bool(ev.truth(ev.ev(where)))
        finally:
            ev.row, ev.clause = saved

    def show_databases(self, p: _Parser) -> ResultSet:
        pattern, where = self.like_or_where(p)
        p.finish()
        self.clears_diagnostics = True
        col = "Database" if pattern is None else f"Database ({pattern})"
        rows = []
        cat = self.catalogue()
        user = sorted(d for d in list(cat.dbs)) if cat is not None else []
        for db in ("information_schema", *user):
            if pattern is not None and not like_match(db, pattern):
                continue
            if where is not None and not self.row_matches(where, {"database": db}):
                continue
            rows.append((db,))
        return ResultSet([col], rows)

    def show_master_status(self, p: _Parser) -> ResultSet:
        p.finish()
        ms = self.server.master_status()
        rows = [] if ms is None else [(ms[0], ms[1], "", "")]
        return ResultSet(["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"], rows)

    def show_binary_logs(self, p: _Parser) -> ResultSet:
        p.finish()
        logs = self.server.binary_logs()
        if not logs:
            raise SqlError(C.ER_NO_BINARY_LOGGING, "You are not using binary logging")
        return ResultSet(["Log_name", "File_size"], [tuple(x) for x in logs])

    def show_binlog_events(self, p: _Parser) -> ResultSet:
        file = None
        pos = None
        if p.accept_kw("IN"):
            t = p.peek()
            if t.kind != "STR":
                p.fail()
            p.next()
            file = str(t.value)
        if p.accept_kw("FROM"):
            pos = p.int_literal()
        limit = self.limit_clause(p)
        p.finish()
        offset, count = (0, None) if limit is None else limit
        columns = ["Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info"]
        try:
            rows = self.server.binlog_events(file, pos, offset, count)
        except SqlError as e:  # mysql_show_binlog_events has already sent the metadata when it fails
            e.after_columns = columns
            raise
        return ResultSet(columns, [tuple(r) for r in rows])

    def slave_status(self, columns: list[str]) -> ResultSet:
        """SHOW [ALL] SLAVE[S] STATUS: the relay's upstream connection (relay mode), else no rows."""
        status = getattr(self.server, "slave_status", None)
        row = status() if status is not None else None
        return ResultSet(list(columns), [tuple(row[c] for c in columns)] if row else [])

    def slave_control(self, p: _Parser, start: bool) -> Ok | None:
        """START / STOP SLAVE in relay mode (pause and resume the upstream connection); None when not a relay."""
        control = getattr(self.server, "slave_control", None)
        if control is None or not p.is_kw(p.peek(), "SLAVE", "REPLICA"):
            return None
        p.next()
        if not p.at_end():
            raise not_supported(f"{'START' if start else 'STOP'} SLAVE with options (binlogd relays one upstream "
                                "connection: START SLAVE / STOP SLAVE)")
        if not control(start):
            self.warnings.append(("Note", 1254, "Slave is already running") if start else
                                 ("Note", 1255, "Slave already has been stopped"))
        return Ok()
