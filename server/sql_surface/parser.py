"""The recursive-descent parser for the MariaDB subset binlogd serves (expressions, SELECT, SET items)."""

from __future__ import annotations

from typing import Any, NoReturn

from binlogd.protocol import constants as C

from .. import sysvars as SV
from .errors import SqlError, _parse_error, not_supported
from .lexer import _Tok, _words
from .nodes import _Assign, _Case, _Col, _Func, _Item, _Lit, _Node, _Op, _Row, _Select, _Subq, _SVar, _UVar

# Words that cannot be a column alias without AS (MariaDB reserved words that may follow a select item).
_RESERVED = frozenset(_words("""
ACCESSIBLE ADD ALL ALTER ANALYZE AND AS ASC ASENSITIVE BEFORE BETWEEN BIGINT BINARY BLOB BOTH BY CALL
CASCADE CASE CHANGE CHAR CHARACTER CHECK COLLATE COLUMN CONDITION CONSTRAINT CONTINUE CONVERT CREATE CROSS
CURRENT_DATE CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR DATABASE DATABASES DAY_HOUR
DAY_MICROSECOND DAY_MINUTE DAY_SECOND DEC DECIMAL DECLARE DEFAULT DELAYED DELETE DELETE_DOMAIN_ID DESC
DESCRIBE DETERMINISTIC DISTINCT DISTINCTROW DIV DO_DOMAIN_IDS DOUBLE DROP DUAL EACH ELSE ELSEIF ENCLOSED
ESCAPED EXCEPT EXISTS EXIT EXPLAIN FALSE FETCH FLOAT FLOAT4 FLOAT8 FOR FORCE FOREIGN FROM FULLTEXT GENERAL
GRANT GROUP HAVING HIGH_PRIORITY HOUR_MICROSECOND HOUR_MINUTE HOUR_SECOND IF IGNORE IGNORE_DOMAIN_IDS
IGNORE_SERVER_IDS IN INDEX INFILE INNER INOUT INSENSITIVE INSERT INT INT1 INT2 INT3 INT4 INT8 INTEGER
INTERSECT INTERVAL INTO IS ITERATE JOIN KEY KEYS KILL LEADING LEAVE LEFT LIKE LIMIT LINEAR LINES LOAD
LOCALTIME LOCALTIMESTAMP LOCK LONG LONGBLOB LONGTEXT LOOP LOW_PRIORITY MASTER_HEARTBEAT_PERIOD
MASTER_SSL_VERIFY_SERVER_CERT MATCH MAXVALUE MEDIUMBLOB MEDIUMINT MEDIUMTEXT MIDDLEINT MINUTE_MICROSECOND
MINUTE_SECOND MOD MODIFIES NATURAL NOT NO_WRITE_TO_BINLOG NULL NUMERIC OFFSET ON OPTIMIZE OPTION OPTIONALLY
OR ORDER OUT OUTER OUTFILE OVER PAGE_CHECKSUM PARSE_VCOL_EXPR PARTITION POSITION PRECISION PRIMARY PROCEDURE
PURGE RANGE READ READS READ_WRITE REAL RECURSIVE REF_SYSTEM_ID REFERENCES REGEXP RELEASE RENAME REPEAT
REPLACE REQUIRE RESIGNAL RESTRICT RETURN RETURNING REVOKE RIGHT RLIKE ROW_NUMBER ROWS SCHEMA SCHEMAS
SECOND_MICROSECOND SELECT SENSITIVE SEPARATOR SET SHOW SIGNAL SLOW SMALLINT SPATIAL SPECIFIC SQL
SQL_BIG_RESULT SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT SQLEXCEPTION SQLSTATE SQLWARNING SSL STARTING
STATS_AUTO_RECALC STATS_PERSISTENT STATS_SAMPLE_PAGES STRAIGHT_JOIN TABLE TERMINATED THEN TINYBLOB TINYINT
TINYTEXT TO TRAILING TRIGGER TRUE UNDO UNION UNIQUE UNLOCK UNSIGNED UPDATE USAGE USE USING UTC_DATE UTC_TIME
UTC_TIMESTAMP VALUES VARBINARY VARCHAR VARCHARACTER VARYING WHEN WHERE WHILE WINDOW WITH WRITE XOR
YEAR_MONTH ZEROFILL
"""))

_SELECT_OPTIONS = frozenset({"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN",
                             "SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_CACHE",
                             "SQL_NO_CACHE", "SQL_CALC_FOUND_ROWS"})
_CMP_OPS = frozenset({"=", "<=>", ">=", ">", "<=", "<", "<>", "!="})
# binary operator -> precedence (higher binds tighter); prefix NOT sits at 4, comparisons at 5
_P_NOT = 4
_P_CMP = 5
_BIN_PREC = {"OR": 1, "||": 1, "XOR": 2, "AND": 3, "&&": 3, "|": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
             "*": 10, "/": 10, "%": 10, "DIV": 10, "MOD": 10, "^": 11}
_MAX_DEPTH = 64
# functions usable without parentheses (SQL-standard niladic forms)
_NILADIC = frozenset({"CURRENT_USER", "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME",
                      "LOCALTIMESTAMP", "UTC_TIMESTAMP", "UTC_DATE", "UTC_TIME"})


class _Parser:
    def __init__(self, sql: str, toks: list[_Tok], pipes_as_concat: bool = False) -> None:
        self.sql = sql
        self.toks = toks
        self.i = 0
        self.depth = 0
        self.pipes_as_concat = pipes_as_concat

    # --- token helpers
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    @staticmethod
    def is_kw(t: _Tok, *words: str) -> bool:
        return t.kind == "ID" and t.text.upper() in words

    def accept_kw(self, *words: str) -> str | None:
        t = self.peek()
        if self.is_kw(t, *words):
            self.i += 1
            return t.text.upper()
        return None

    def expect_kw(self, *words: str) -> str:
        w = self.accept_kw(*words)
        if w is None:
            self.fail()
        return w

    def accept_op(self, *ops: str) -> str | None:
        t = self.peek()
        if t.kind == "OP" and t.text in ops:
            self.i += 1
            return t.text
        return None

    def expect_op(self, op: str) -> None:
        if self.accept_op(op) is None:
            self.fail()

    def fail(self, t: _Tok | None = None) -> NoReturn:
        t = t or self.peek()
        raise _parse_error(self.sql, t.pos)

    def at_end(self) -> bool:
        t = self.peek()
        return t.kind == "EOF" or (t.kind == "OP" and t.text == ";")

    def finish(self) -> None:
        """End of statement: trailing ';' are fine, a second statement is not (no CLIENT_MULTI_STATEMENTS)."""
        while self.accept_op(";"):
            pass
        if self.peek().kind != "EOF":
            self.fail()

    def ident(self) -> str:
        """An identifier (bare or `quoted`)."""
        t = self.peek()
        if t.kind == "QID" or (t.kind == "ID" and t.text.upper() not in _RESERVED):
            self.i += 1
            return str(t.value)
        self.fail()

    def name_or_string(self) -> str:
        """Charset/collation/database names: identifier, `quoted` or 'string'."""
        t = self.peek()
        if t.kind in ("ID", "QID", "STR"):
            self.i += 1
            return str(t.value)
        self.fail()

    def table_ref(self) -> tuple[str | None, str]:
        first = self.ident_any()
        if self.accept_op("."):
            return first, self.ident_any()
        return None, first

    def ident_any(self) -> str:
        """Identifier where reserved words are allowed after a dot or as table names in practice."""
        t = self.peek()
        if t.kind in ("ID", "QID"):
            self.i += 1
            return str(t.value)
        self.fail()

    def int_literal(self) -> int:
        t = self.peek()
        if t.kind == "NUM" and isinstance(t.value, int):
            self.i += 1
            return t.value
        self.fail()

    # --- expressions
    def expr(self, min_prec: int = 0) -> _Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _parse_error(self.sql, self.peek().pos, "memory exhausted")
        try:
            return self._expr(min_prec)
        finally:
            self.depth -= 1

    def _expr(self, min_prec: int) -> _Node:
        t = self.peek()
        if self.is_kw(t, "NOT") and min_prec <= _P_NOT:
            self.i += 1
            arg = self.expr(_P_NOT)
            left: _Node = _Op(t.pos, arg.end, "NOT", arg)
        else:
            left = self.unary()
        # assignment to a user variable binds loosest and to the right: @a := @b := 3
        if isinstance(left, _UVar) and min_prec == 0 and self.accept_op(":="):
            value = self.expr(0)
            return _Assign(left.start, value.end, left.name, value)
        while True:
            t = self.peek()
            word = t.text.upper() if t.kind == "ID" else (t.text if t.kind == "OP" else None)
            if word is None:
                return left
            if word == "||" and self.pipes_as_concat:
                word = "CONCAT||"
            if word == "CONCAT||" and min_prec < 11:
                self.i += 1
                right = self.expr(11)
                left = _Func(left.start, right.end, "CONCAT", [left, right])
                continue
            if min_prec < _P_CMP and (word in _CMP_OPS or word in ("IS", "LIKE", "IN", "BETWEEN", "NOT")):
                new = self.predicate(left)
                if new is None:
                    return left
                left = new
                continue
            prec = _BIN_PREC.get(word)
            if prec is None or prec <= min_prec:
                return left
            self.i += 1
            right = self.expr(prec)
            op = {"||": "OR", "&&": "AND", "MOD": "%"}.get(word, word)
            left = _Op(left.start, right.end, op, left, right)

    def predicate(self, left: _Node) -> _Node | None:
        t = self.next()
        word = t.text.upper() if t.kind == "ID" else t.text
        if word in _CMP_OPS:
            right = self.expr(_P_CMP)
            return _Op(left.start, right.end, "<>" if word == "!=" else word, left, right)
        if word == "IS":
            neg = self.accept_kw("NOT") is not None
            what = self.expect_kw("NULL", "TRUE", "FALSE", "UNKNOWN")
            return _Op(left.start, self.toks[self.i - 1].end, "IS", left, extra=what, neg=neg)
        neg = False
        if word == "NOT":
            nt = self.peek()
            if not self.is_kw(nt, "LIKE", "IN", "BETWEEN"):
                self.i -= 1
                return None
            word = self.next().text.upper()
            neg = True
        if word == "LIKE":
            pat = self.expr(_P_CMP + 1)
            esc = None
            if self.accept_kw("ESCAPE"):
                esc = self.unary()
            end = (esc or pat).end
            return _Op(left.start, end, "LIKE", left, pat, extra=esc, neg=neg)
        if word == "IN":
            self.expect_op("(")
            if self.is_kw(self.peek(), "SELECT"):
                raise not_supported("IN (subquery)")
            items = [self.expr()]
            while self.accept_op(","):
                items.append(self.expr())
            close = self.peek()
            self.expect_op(")")
            return _Op(left.start, close.end, "IN", left, extra=items, neg=neg)
        # BETWEEN
        lo = self.expr(_P_CMP + 1)
        self.expect_kw("AND")
        hi = self.expr(_P_CMP + 1)
        return _Op(left.start, hi.end, "BETWEEN", left, lo, extra=hi, neg=neg)

    def unary(self) -> _Node:
        t = self.peek()
        if t.kind == "OP" and t.text in ("-", "+", "~", "!"):
            self.i += 1
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise _parse_error(self.sql, self.peek().pos, "memory exhausted")
            try:
                arg = self.unary()
            finally:
                self.depth -= 1
            if t.text == "+":
                return _Op(t.pos, arg.end, "+u", arg)
            return _Op(t.pos, arg.end, {"-": "NEG", "~": "~", "!": "NOT"}[t.text], arg)
        if self.is_kw(t, "BINARY") and self.peek(1).kind != "OP":
            self.i += 1
            return self.unary()
        node = self.primary()
        while self.accept_kw("COLLATE"):
            name_tok = self.peek()
            coll = self.name_or_string()
            if SV.collation(coll) is None:
                raise SqlError(C.ER_UNKNOWN_COLLATION, f"Unknown collation: '{coll}'")
            node = _Op(node.start, name_tok.end, "COLLATE", node)
        return node

    def primary(self) -> _Node:
        t = self.next()
        k = t.kind
        if k == "NUM":
            return _Lit(t.pos, t.end, t.value)
        if k == "HEX":
            return _Lit(t.pos, t.end, t.value)
        if k == "STR":
            return self.string_rest(t.pos, t.value, t.end)
        if k == "UVAR":
            return _UVar(t.pos, t.end, str(t.value).lower())
        if k == "SVAR":
            scope, name, component = t.value
            return _SVar(t.pos, t.end, scope, name, component)
        if k == "OP" and t.text == "@":
            self.fail()  # '@ a': MariaDB complains at the name
        if k == "OP" and t.text == "(":
            if self.is_kw(self.peek(), "SELECT"):
                self.i += 1
                sel = self.select_body(nested=True)
                close = self.peek()
                self.expect_op(")")
                return _Subq(t.pos, close.end, sel)
            items = [self.expr()]
            while self.accept_op(","):
                items.append(self.expr())
            close = self.peek()
            self.expect_op(")")
            if len(items) == 1:
                return _Op(t.pos, close.end, "()", items[0])  # the span keeps the parentheses
            return _Row(t.pos, close.end, items)
        if k == "QID":
            return self.column_rest(t, str(t.value))
        if k == "ID":
            word = t.text.upper()
            if word == "NULL":
                return _Lit(t.pos, t.end, None)
            if word in ("TRUE", "FALSE"):
                return _Lit(t.pos, t.end, 1 if word == "TRUE" else 0)
            if word == "CASE":
                return self.case(t)
            if word.startswith("_") and self.peek().kind == "STR" and SV.charset(word[1:]) is not None:
                s = self.next()
                value: Any = s.value.encode("utf-8", "surrogateescape") if word == "_BINARY" else s.value
                return self.string_rest(t.pos, value, s.end)
            if self.peek().kind == "OP" and self.peek().text == "(":
                return self.call(t, t.text, None)
            if word in _NILADIC:
                return _Func(t.pos, t.end, t.text, [], parens=False)
            if word in ("INTERVAL", "EXISTS", "ROW", "DEFAULT", "MATCH", "CAST", "CONVERT"):
                raise not_supported(word)
            if word in _RESERVED:
                self.fail(t)
            return self.column_rest(t, t.text)
        self.fail(t)

    def string_rest(self, start: int, value: Any, end: int) -> _Lit:
        """Adjacent string literals concatenate: 'a' 'b' is 'ab' (and names the column 'ab')."""
        while self.peek().kind == "STR":
            s = self.next()
            value = value + (s.value.encode() if isinstance(value, bytes) else s.value)
            end = s.end
        return _Lit(start, end, value, is_string=True)

    def column_rest(self, t: _Tok, name: str) -> _Node:
        if self.accept_op("."):
            second = self.peek()
            if second.kind in ("ID", "QID"):
                self.i += 1
                if self.peek().kind == "OP" and self.peek().text == "(" and second.kind == "ID":
                    return self.call(second, second.text, name, start=t.pos)
                if self.accept_op("."):
                    third = self.peek()
                    if third.kind not in ("ID", "QID"):
                        self.fail()
                    self.i += 1
                    return _Col(t.pos, third.end, str(third.value), f"{name}.{second.value}")
                return _Col(t.pos, second.end, str(second.value), name)
            if second.kind == "OP" and second.text == "*":
                self.fail(second)
            self.fail()
        return _Col(t.pos, t.end, name, None)

    def call(self, t: _Tok, name: str, qual: str | None, start: int | None = None) -> _Node:
        self.expect_op("(")
        args: list[_Node] = []
        if self.is_kw(self.peek(), "DISTINCT", "ALL"):
            raise not_supported(f"{name.upper()}(DISTINCT ...)")
        if not (self.peek().kind == "OP" and self.peek().text == ")"):
            if self.peek().kind == "OP" and self.peek().text == "*":
                raise not_supported(f"{name.upper()}(*)")
            args.append(self.expr())
            while self.accept_op(","):
                args.append(self.expr())
        close = self.peek()
        self.expect_op(")")
        return _Func(t.pos if start is None else start, close.end, name, args, qual)

    def case(self, t: _Tok) -> _Node:
        base = None if self.is_kw(self.peek(), "WHEN") else self.expr()
        whens: list[tuple[_Node, _Node]] = []
        while self.accept_kw("WHEN"):
            cond = self.expr()
            self.expect_kw("THEN")
            whens.append((cond, self.expr()))
        if not whens:
            self.fail()
        default = self.expr() if self.accept_kw("ELSE") else None
        end = self.peek()
        self.expect_kw("END")
        return _Case(t.pos, end.end, base, whens, default)

    # --- SELECT
    def select_body(self, nested: bool = False) -> _Select:
        while self.accept_kw(*_SELECT_OPTIONS):
            pass
        items = [self.select_item()]
        while self.accept_op(","):
            items.append(self.select_item())
        sel = _Select(items)
        self.select_tail(sel)
        if nested and sel.unsupported:
            raise not_supported(sel.unsupported)
        return sel

    def select_item(self) -> _Item:
        t = self.peek()
        if t.kind == "OP" and t.text == "*":
            self.i += 1
            return _Item(None, None, t.pos, t.end)
        if t.kind in ("ID", "QID") and self.peek(1).kind == "OP" and self.peek(1).text == "." and \
                self.peek(2).kind == "OP" and self.peek(2).text == "*":
            self.i += 3
            return _Item(None, None, t.pos, self.toks[self.i - 1].end, star_qual=str(t.value))
        e = self.expr()
        alias = None
        if self.accept_kw("AS"):
            a = self.peek()
            if a.kind not in ("ID", "QID", "STR") or (a.kind == "ID" and a.text.upper() in _RESERVED):
                self.fail()
            self.i += 1
            alias = str(a.value)
        else:
            a = self.peek()
            if a.kind in ("QID", "STR") or (a.kind == "ID" and a.text.upper() not in _RESERVED):
                self.i += 1
                alias = str(a.value)
        return _Item(e, alias, e.start, e.end)

    def select_tail(self, sel: _Select) -> None:
        if self.accept_kw("INTO"):
            sel.into = self.into_list()
        if self.accept_kw("FROM"):
            if self.accept_kw("DUAL"):
                pass
            else:
                db, name = self.table_ref()
                alias = None
                nxt = self.peek()
                has_alias = nxt.kind == "QID" or (nxt.kind == "ID" and nxt.text.upper() not in _RESERVED)
                if self.accept_kw("AS") or has_alias:
                    alias = self.ident()
                sel.table = (db, name, alias)
                if self.peek().kind == "OP" and self.peek().text == ",":
                    sel.unsupported = "SELECT from several tables"
                    self.skip_rest()
                    return
                if self.is_kw(self.peek(), "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN"):
                    sel.unsupported = "JOIN"
                    self.skip_rest()
                    return
        if self.accept_kw("WHERE"):
            sel.where = self.expr()
        for clause in ("GROUP", "HAVING", "WINDOW"):
            if self.is_kw(self.peek(), clause):
                sel.unsupported = f"SELECT ... {clause}"
                self.skip_rest()
                return
        if self.accept_kw("ORDER"):
            self.expect_kw("BY")
            while True:
                e = self.expr()
                desc = self.accept_kw("ASC", "DESC") == "DESC"
                sel.order.append((e, desc))
                if not self.accept_op(","):
                    break
        if self.accept_kw("LIMIT"):
            first = self.int_literal()
            if self.accept_op(","):
                sel.limit = (first, self.int_literal())
            elif self.accept_kw("OFFSET"):
                sel.limit = (self.int_literal(), first)
            else:
                sel.limit = (0, first)
        for clause in ("UNION", "EXCEPT", "INTERSECT", "PROCEDURE"):
            if self.is_kw(self.peek(), clause):
                sel.unsupported = f"SELECT ... {clause}"
                self.skip_rest()
                return
        if self.is_kw(self.peek(), "FOR", "LOCK"):
            self.next()
            if self.accept_kw("UPDATE") is None:
                self.expect_kw("IN")
                self.expect_kw("SHARE")
                self.expect_kw("MODE")
        if self.accept_kw("INTO"):
            if sel.into is not None:
                self.fail(self.toks[self.i - 1])
            sel.into = self.into_list()

    def into_list(self) -> list[str]:
        if self.peek().kind != "UVAR":
            raise not_supported("SELECT ... INTO " + self.peek().text.upper())
        names = [str(self.next().value).lower()]
        while self.accept_op(","):
            t = self.peek()
            if t.kind != "UVAR":
                self.fail()
            self.i += 1
            names.append(str(t.value).lower())
        return names

    def skip_rest(self) -> None:
        """Past a clause binlogd does not evaluate (it reports 1235 after the table checks)."""
        depth = 0
        while not self.at_end():
            t = self.peek()
            if t.kind == "OP" and t.text == "(":
                depth += 1
            elif t.kind == "OP" and t.text == ")":
                if depth == 0:
                    return  # the end of an enclosing subquery
                depth -= 1
            self.i += 1
