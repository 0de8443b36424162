"""The statement dispatcher: verb -> handler, USE and transactions, refusals (1235 / 1064), and execute()."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from binlogd.protocol import constants as C

from .errors import SqlError, _parse_error, not_supported
from .lexer import _lex, _version_id, _words
from .parser import _Parser
from .results import Ok, ResultSet
from .select import SelectStatements
from .server_view import ServerView
from .session import SessionState, change_database
from .setvars import SetStatements
from .show import ShowStatements


class _Stmt(SelectStatements, SetStatements, ShowStatements):
    """One statement: parse, check, execute. Collects warnings for SHOW WARNINGS."""

    # --- entry
    def run(self) -> ResultSet | Ok:
        toks = _lex(self.sql, _version_id(self.server.version),
                    backslash_escapes="NO_BACKSLASH_ESCAPES" not in self.modes,
                    ansi_quotes="ANSI_QUOTES" in self.modes, hidden=self.hidden)
        if not self.sql:
            raise SqlError(C.ER_EMPTY_QUERY, "Query was empty")
        if toks[0].kind == "EOF":
            return Ok()  # only comments: MariaDB answers OK
        p = _Parser(self.sql, toks, pipes_as_concat="PIPES_AS_CONCAT" in self.modes)
        self.p = p
        first = p.peek()
        if first.kind != "ID":
            if first.kind == "OP" and first.text == "(":
                raise not_supported("parenthesised query")
            p.fail()
        verb = first.text.upper()
        handler = _VERBS.get(verb)
        if handler is None:
            return self.other(verb)
        p.next()
        return handler(self, p)


    # --- USE, transactions
    def do_use(self, p: _Parser) -> Ok:
        name = p.ident_any()
        p.finish()
        change_database(self.session, name)
        return Ok()

    def do_begin(self, p: _Parser) -> Ok:
        p.accept_kw("WORK")
        p.finish()
        self.session.in_transaction = True
        return Ok()

    def do_start(self, p: _Parser) -> Ok:
        if p.accept_kw("TRANSACTION") is None:
            done = self.slave_control(p, True)
            if done is not None:
                return done
            w = p.peek()
            if p.is_kw(w, "SLAVE", "REPLICA", "ALL"):
                raise not_supported(f"START {w.text.upper()}")
            p.fail()
        if not p.at_end():
            while True:
                if p.accept_kw("READ"):
                    p.expect_kw("ONLY", "WRITE")
                else:
                    p.expect_kw("WITH")
                    p.expect_kw("CONSISTENT")
                    p.expect_kw("SNAPSHOT")
                if not p.accept_op(","):
                    break
        p.finish()
        self.session.in_transaction = True
        return Ok()

    def do_commit(self, p: _Parser) -> Ok:
        verb = p.toks[p.i - 1].text.upper()
        p.accept_kw("WORK")
        if verb == "ROLLBACK" and p.is_kw(p.peek(), "TO"):
            raise not_supported("ROLLBACK TO SAVEPOINT")
        chain = False
        if p.accept_kw("AND"):
            no = p.accept_kw("NO") is not None
            p.expect_kw("CHAIN")
            chain = not no
        if p.accept_kw("NO"):
            p.expect_kw("RELEASE")
        elif p.accept_kw("RELEASE"):
            raise not_supported(f"{verb} ... RELEASE")
        p.finish()
        self.session.in_transaction = chain
        return Ok()

    # --- statements binlogd does not do
    def do_table_statement(self, p: _Parser) -> NoReturn:
        """INSERT/REPLACE/UPDATE/DELETE/TRUNCATE: MariaDB's table errors (no table exists here)."""
        verb = p.toks[p.i - 1].text.upper()
        p.accept_kw("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "QUICK")
        p.accept_kw("QUICK")
        p.accept_kw("IGNORE")
        if verb in ("INSERT", "REPLACE"):
            p.accept_kw("INTO")
        elif verb == "DELETE":
            p.expect_kw("FROM")
        elif verb == "TRUNCATE":
            p.accept_kw("TABLE")
        db, name = p.table_ref()
        dbn = self.table_db(db)
        if dbn.lower() == "information_schema":
            raise SqlError(C.ER_DBACCESS_DENIED_ERROR,
                           f"Access denied for user '{self.session.user}'@'{self.session.host}' to database "
                           f"'information_schema'")
        raise SqlError(C.ER_NO_SUCH_TABLE, f"Table '{dbn}.{name}' doesn't exist")

    def other(self, verb: str) -> ResultSet | Ok:
        p = self.p
        if verb == "STOP":
            at = p.i
            p.next()
            done = self.slave_control(p, False)
            if done is not None:
                return done
            p.i = at
        if verb not in _UNSUPPORTED_VERBS:
            p.fail()
        words = [p.next().text.upper()]
        t = p.peek()
        while len(words) < 3 and p.peek().kind == "ID" and p.peek().text.upper() in _VERB_WORDS:
            words.append(p.next().text.upper())
        if verb in ("CREATE", "ALTER", "DROP") and p.is_kw(t, "TABLE", "INDEX", "VIEW", "TRIGGER") and \
                self.session.database is None:
            # CREATE TABLE t ... without a database: MariaDB checks the database first
            rest = p.toks[p.i :]
            while rest and p.is_kw(rest[0], "IF", "NOT", "EXISTS"):
                rest = rest[1:]
            if not (len(rest) > 1 and rest[1].kind == "OP" and rest[1].text == "."):
                raise SqlError(C.ER_NO_DB_ERROR, "No database selected")
        raise not_supported(" ".join(words))




_UNSUPPORTED_VERBS = frozenset(_words("""
ALTER ANALYZE BACKUP BINLOG CACHE CALL CHANGE CHECK CHECKSUM CREATE DEALLOCATE DESC DESCRIBE DROP EXECUTE
EXPLAIN FLUSH GET GRANT HANDLER HELP INSTALL KILL LOAD LOCK OPTIMIZE PREPARE PURGE RELEASE RENAME REPAIR
RESET RESIGNAL REVOKE SAVEPOINT SHUTDOWN SIGNAL STOP UNINSTALL UNLOCK VALUES WITH XA
"""))


# words that belong to the name of an unsupported statement in its 1235 message (FLUSH LOGS, CHANGE MASTER TO)
_VERB_WORDS = frozenset(_words("""
ALL BINARY BINLOG CONNECTION DATABASE DIAGNOSTICS ENGINE ERROR EVENT FUNCTION GENERAL HOSTS INDEX LOGS
MASTER NO_WRITE_TO_BINLOG PLUGIN PRIVILEGES PROCEDURE QUERY RELAY REPLICA REPLICAS ROLE SCHEMA SEQUENCE
SERVER SLAVE SLAVES SLOW STATUS TABLE TABLES TEMPORARY TO TRIGGER USER VIEW LOCAL
"""))


_VERBS: dict[str, Callable[[_Stmt, _Parser], ResultSet | Ok]] = {
    "SELECT": _Stmt.do_select,
    "DO": _Stmt.do_do,
    "SET": _Stmt.do_set,
    "SHOW": _Stmt.do_show,
    "USE": _Stmt.do_use,
    "BEGIN": _Stmt.do_begin,
    "START": _Stmt.do_start,
    "COMMIT": _Stmt.do_commit,
    "ROLLBACK": _Stmt.do_commit,
    "INSERT": _Stmt.do_table_statement,
    "REPLACE": _Stmt.do_table_statement,
    "UPDATE": _Stmt.do_table_statement,
    "DELETE": _Stmt.do_table_statement,
    "TRUNCATE": _Stmt.do_table_statement,
    "DESCRIBE": _Stmt.do_describe,
    "DESC": _Stmt.do_describe,
    "EXPLAIN": _Stmt.do_describe,
}



def execute(sql: str, session: SessionState, server: ServerView) -> ResultSet | Ok:
    """Run one statement for `session`; raises SqlError with MariaDB's number and text.

    Multi-statement strings are refused like MariaDB does without CLIENT_MULTI_STATEMENTS (1064 near the
    second statement). SHOW WARNINGS state follows MariaDB: an error or a warning replaces the list, a
    statement that reads a table clears it, other statements leave it alone.
    """
    st = _Stmt(sql, session, server)
    try:
        result = st.run()
    except SqlError as e:
        session.diagnostics = [*st.warnings, ("Error", e.code, e.message)]
        raise
    except RecursionError:  # an expression nested deeper than Python's stack (MariaDB: parser stack)
        err = _parse_error(st.sql, len(st.sql), "memory exhausted")
        session.diagnostics = [("Error", err.code, err.message)]
        raise err from None
    if st.warnings or st.clears_diagnostics:
        session.diagnostics = list(st.warnings)
    if isinstance(result, ResultSet | Ok):
        result.warnings = len(st.warnings)
    return result
