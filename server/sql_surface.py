"""binlogd's SQL surface: a pure, synchronous evaluator for the statements clients send around a dump.

Why a hand-written lexer/parser and not sqlglot: replicas depend on exact MariaDB answers (column names are
the statement's own text, `SET @master_binlog_checksum= @@global.binlog_checksum` must evaluate the system
variable, `SHOW BINARY LOG STATUS` must fail with 1064 so python-mysql-replication falls back...), and a
general-purpose transpiler normalises exactly the details that matter here. The grammar below is the small
MariaDB subset binlogd serves; everything else is refused with MariaDB's own error where one fits (1064,
1046, 1146, 1193, 1305...) or 1235 "doesn't yet support", never with a silent OK.

Error texts and SQLSTATEs were checked against a MariaDB 10.11.19 server (`perror` and live statements);
see tests/test_sql_surface.py. `execute()` does no I/O: the server's state comes through `ServerView`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any, NoReturn, Protocol

from binlogd.protocol import constants as C

from . import sysvars as SV
from .replica_filters import check_session_var
from .sysvars import Kind, Scope, SysVar

# ------------------------------------------------------------------------------------------------ API


_SQLSTATE: dict[int, str] = {
    C.ER_NO_DB_ERROR: "3D000", C.ER_BAD_DB_ERROR: "42000", C.ER_PARSE_ERROR: "42000",
    C.ER_NOT_SUPPORTED_YET: "42000", C.ER_SP_DOES_NOT_EXIST: "42000", C.ER_WRONG_VALUE_FOR_VAR: "42000",
    C.ER_WRONG_TYPE_FOR_VAR: "42000", C.ER_DBACCESS_DENIED_ERROR: "42000", C.ER_BAD_FIELD_ERROR: "42S22",
    C.ER_EMPTY_QUERY: "42000", C.ER_UNKNOWN_TABLE: "42S02", C.ER_UNKNOWN_CHARACTER_SET: "42000",
    C.ER_NO_SUCH_TABLE: "42S02", C.ER_OPERAND_COLUMNS: "21000", C.ER_SUBQUERY_NO_1_ROW: "21000",
    C.ER_COLLATION_CHARSET_MISMATCH: "42000", C.ER_ILLEGAL_VALUE_FOR_TYPE: "22007",
    C.ER_TOO_BIG_PRECISION: "42000", C.ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT: "42000",
    C.ER_DATA_OUT_OF_RANGE: "22003", C.ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: "21000",
}


class SqlError(Exception):
    """A MariaDB error to send as an ERR packet: number, MariaDB's text, SQLSTATE (derived from the number)."""

    def __init__(self, code: int, message: str, sqlstate: str | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.sqlstate = sqlstate or _SQLSTATE.get(code, "HY000")
        # set when MariaDB sends the error after a result set's column metadata (SHOW BINLOG EVENTS)
        self.after_columns: list[str] | None = None

    def __str__(self) -> str:
        return f"ERROR {self.code} ({self.sqlstate}): {self.message}"


@dataclass
class SessionState:
    """Everything one connection's SQL changes. The dump code reads `user_vars` and `skip_replication`.

    `user_vars` keys are lower-case names without '@' (MariaDB user variables are case-insensitive); values
    are str | int | float | bytes | None. `session_sysvars` holds SET SESSION overrides by lower-case name;
    the flags the dump depends on (skip_replication, autocommit, sql_log_bin) are attributes instead.
    """

    user_vars: dict[str, object] = field(default_factory=dict)
    skip_replication: bool = False
    autocommit: bool = True
    database: str | None = None
    sql_log_bin: bool = True
    session_sysvars: dict[str, object] = field(default_factory=dict)
    in_transaction: bool = False  # after BEGIN / START TRANSACTION until COMMIT / ROLLBACK (the 1929 rule)
    connection_id: int = 0  # CONNECTION_ID()
    user: str = ""  # USER() is user@host
    host: str = "localhost"
    diagnostics: list[tuple[str, int, str]] = field(default_factory=list)  # SHOW WARNINGS (Level, Code, Message)
    status: dict[str, str] = field(default_factory=dict)  # session status set by the connection (Ssl_cipher ...)


class ServerView(Protocol):
    """What the SQL surface needs to know about the running server (implemented by `Primary`).

    Optional extras, read with getattr when present (value or zero-argument callable): `hostname`, `port`,
    `version_comment`, `binlog_format`, `binlog_row_metadata`, `read_only`, `gtid_strict_mode`,
    `gtid_current_pos`, `max_allowed_packet`, `max_binlog_size`, `uptime`, `threads_connected`,
    `threads_running`, `slaves_connected`, and `now()` (epoch seconds, for tests).
    """

    server_id: int
    version: str

    def binlog_checksum(self) -> str: ...
    def gtid_binlog_pos(self) -> str: ...
    def gtid_domain_id(self) -> int: ...
    def binary_logs(self) -> list[tuple[str, int]]: ...
    def master_status(self) -> tuple[str, int] | None: ...
    def slave_hosts(self) -> list[tuple[int, str, int, int]]: ...
    def binlog_events(self, file: str | None, pos: int | None, offset: int,
                      limit: int | None) -> list[tuple[str, int, str, int, int, str]]: ...
    def binlog_gtid_pos(self, file: str, pos: int) -> str | None: ...


@dataclass
class ResultSet:
    """Rows to send; values are None | int | str | float | bytes (decimals and datetimes as MariaDB's text)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    warnings: int = 0
    # per column, its SQL type as SHOW CREATE TABLE prints it (int(11), varchar(10)...) when known: the column
    # metadata of a result set without rows (SELECT from a standalone table); None: inferred from the values
    types: list[str | None] | None = None


@dataclass
class Ok:
    affected_rows: int = 0
    info: str = ""
    warnings: int = 0


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


def leading_words(sql: str, n: int, version: str) -> list[str]:
    """The first `n` keywords of a statement, upper-case, lexed as `execute` lexes it (comments dropped,
    executable comments kept): privilege checks (server/privileges.py) see what the parser will see.
    Stops at the first token that is not a word; [] for text the lexer refuses (execute refuses it too)."""
    try:
        toks = _lex(_trim_query(sql), _version_id(version))
    except SqlError:
        return []
    words: list[str] = []
    for t in toks[:n]:
        if t.kind != "ID":
            break
        words.append(t.text.upper())
    return words


def change_database(session: SessionState, name: str) -> None:
    """USE / COM_INIT_DB: binlogd serves no databases except information_schema (1049 otherwise)."""
    if name.lower() == "information_schema":
        session.database = "information_schema"
        # USE also switches @@character_set_database to the database's (information_schema: utf8mb3)
        session.session_sysvars["character_set_database"] = "utf8mb3"
        session.session_sysvars["collation_database"] = "utf8mb3_general_ci"
        return
    raise SqlError(C.ER_BAD_DB_ERROR, f"Unknown database '{name}'")


def not_supported(what: str) -> SqlError:
    """1235 with binlogd's name: valid SQL that this server does not do."""
    return SqlError(C.ER_NOT_SUPPORTED_YET, f"This version of binlogd doesn't yet support '{what}'")


# ------------------------------------------------------------------------------------------------ errors

_SYNTAX = ("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server "
           "version for the right syntax to use")


def _parse_error(sql: str, pos: int, what: str = _SYNTAX) -> SqlError:
    """ER_PARSE_ERROR '%s near '%-.80T' at line %d': the rest of the query from the failing token.

    %-.80T cuts at 80 characters and marks the cut with '...' (77 + 3), as MariaDB 10.11 prints it.
    """
    near = sql[pos:]
    if len(near) > 80:
        near = near[:77] + "..."
    line = sql.count("\n", 0, pos) + 1
    return SqlError(C.ER_PARSE_ERROR, f"{what} near '{near}' at line {line}")


_SPACE = " \t\n\r\v\f"


def _trim_query(sql: str) -> str:
    """What MariaDB's alloc_query() keeps: no leading whitespace, no trailing ';' or whitespace."""
    return sql.lstrip(_SPACE).rstrip(_SPACE + ";")


def _unknown_sysvar(name: str) -> SqlError:
    return SqlError(C.ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{name}'")


def _wrong_value(name: str, value: object) -> SqlError:
    text = "NULL" if value is None else _to_text(value)
    if len(text) > 200:
        text = text[:197] + "..."
    return SqlError(C.ER_WRONG_VALUE_FOR_VAR, f"Variable '{name}' can't be set to the value of '{text}'")


def _wrong_type(name: str) -> SqlError:
    return SqlError(C.ER_WRONG_TYPE_FOR_VAR, f"Incorrect argument type to variable '{name}'")


def _words(text: str) -> list[str]:
    return text.split()


# ------------------------------------------------------------------------------------------------ lexer

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_OPS3 = ("<=>",)
_OPS2 = (":=", "<=", ">=", "<>", "!=", "<<", ">>", "&&", "||")
_NUM_RE = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _is_id_char(c: str) -> bool:
    return c in _ID_CHARS or ord(c) >= 0x80


class _Hex(bytes):
    """A hex or bit literal: a binary string that is a number in arithmetic (0x41 + 0 = 65)."""


@dataclass(slots=True)
class _Tok:
    kind: str  # ID QID STR NUM HEX UVAR SVAR OP EOF
    text: str  # source text (for ID: as typed)
    value: Any
    pos: int
    end: int


def _version_id(version: str) -> int:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3)) if m else 101100


# Bounds checked before the parser allocates anything per token: MariaDB's parser runs out of stack ("memory
# exhausted", 1064) on deep nesting and binlogd's stops at _MAX_DEPTH levels (where the parser answers itself, with
# its exact position); parentheses nested past _MAX_NESTING are refused by a scan that stops there instead of
# lexing megabytes first. _MAX_TOKENS: no statement binlogd runs comes near it; a 16 MiB statement would
# otherwise hold millions of token objects.
_MAX_TOKENS = 100_000
_MAX_NESTING = 256
_NESTING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|/\*.*?\*/|#[^\n]*|--[ \t][^\n]*|[()]", re.S)


def _check_nesting(sql: str) -> None:
    """1064 'memory exhausted' at the first parenthesis nested past _MAX_NESTING (quotes and comments skipped);
    cheap for the common statement, which has few parentheses."""
    if sql.count("(") <= _MAX_NESTING:
        return
    depth = 0
    for m in _NESTING.finditer(sql):
        t = m.group()
        if t == "(":
            depth += 1
            if depth > _MAX_NESTING:
                raise _parse_error(sql, m.start(), "memory exhausted")
        elif t == ")":
            depth = max(0, depth - 1)


def _lex(sql: str, version_id: int, backslash_escapes: bool = True, ansi_quotes: bool = False,
         hidden: list[tuple[int, int]] | None = None) -> list[_Tok]:
    """Split a statement into tokens, MariaDB-style: comments dropped, /*!NNNNN ... */ executed when
    NNNNN <= our version (as mysqldump and mariadb-binlog output expect).

    `hidden` receives the spans MariaDB's preprocessed query text leaves out (executable-comment markers,
    skipped versioned comments); column names are built from that text.
    """
    _check_nesting(sql)
    toks: list[_Tok] = []
    hidden = hidden if hidden is not None else []
    n = len(sql)
    i = 0
    in_exec = 0
    while i < n:
        if len(toks) >= _MAX_TOKENS:
            raise _parse_error(sql, i, "memory exhausted")
        c = sql[i]
        if c in " \t\n\r\f\v":
            i += 1
            continue
        start = i
        if c == "#" or (c == "-" and sql.startswith("--", i) and (i + 2 == n or sql[i + 2] <= " ")):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "/" and sql.startswith("/*", i):
            k = i + 2
            executable = mariadb_only = False
            if sql.startswith("!", k):
                executable, k = True, k + 1
            elif sql.startswith("M!", k):
                executable, mariadb_only, k = True, True, k + 2
            if executable:
                m = re.match(r"\d{5,6}", sql[k : k + 6])
                digits = m.group(0) if m else ""
                v = int(digits) if digits else 0
                # a newer server's code, or MySQL >= 5.7 code (5-digit 50700..99999): a plain comment for us
                if v > version_id or (len(digits) == 5 and v >= 50700 and not mariadb_only):
                    j = sql.find("*/", k)
                    if j < 0:
                        raise _parse_error(sql, start)
                    hidden.append((i, j + 2))
                    i = j + 2
                    continue
                in_exec += 1
                i = k + len(digits)
                hidden.append((start, i))
                continue
            j = sql.find("*/", k)
            if j < 0:
                raise _parse_error(sql, start)
            i = j + 2
            continue
        if c == "*" and in_exec and sql.startswith("*/", i):
            in_exec -= 1
            hidden.append((i, i + 2))
            i += 2
            continue
        if c in "'\"" and not (c == '"' and ansi_quotes):
            value, i = _lex_string(sql, i, backslash_escapes)
            toks.append(_Tok("STR", sql[start:i], value, start, i))
            continue
        if c == "`" or (c == '"' and ansi_quotes):
            value, i = _lex_quoted_ident(sql, i)
            toks.append(_Tok("QID", sql[start:i], value, start, i))
            continue
        if c in "xXbB" and i + 1 < n and sql[i + 1] == "'":
            j = sql.find("'", i + 2)
            if j < 0:
                raise _parse_error(sql, start)
            body = sql[i + 2 : j]
            value_b = _hex_or_bits(body, c in "xX")
            if value_b is None:
                raise _parse_error(sql, start)
            i = j + 1
            toks.append(_Tok("HEX", sql[start:i], _Hex(value_b), start, i))
            continue
        if c in "nN" and i + 1 < n and sql[i + 1] == "'":
            value, i = _lex_string(sql, i + 1, backslash_escapes)
            toks.append(_Tok("STR", sql[start:i], value, start, i))
            continue
        if c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit()):
            tok = _lex_number(sql, i)
            if tok is not None:
                toks.append(tok)
                i = tok.end
                continue
        if _is_id_char(c):
            j = i
            while j < n and _is_id_char(sql[j]):
                j += 1
            toks.append(_Tok("ID", sql[i:j], sql[i:j], start, j))
            i = j
            continue
        if c == "@":
            tok = _lex_variable(sql, i)
            if tok is not None:
                toks.append(tok)
                i = tok.end
                continue
        op = next((o for o in (*_OPS3, *_OPS2) if sql.startswith(o, i)), c)
        i += len(op)
        toks.append(_Tok("OP", op, op, start, i))
    toks.append(_Tok("EOF", "", None, n, n))
    return toks


def _lex_string(sql: str, i: int, backslash_escapes: bool) -> tuple[str, int]:
    q = sql[i]
    out: list[str] = []
    j = i + 1
    n = len(sql)
    while j < n:
        c = sql[j]
        if c == "\\" and backslash_escapes and j + 1 < n:
            out.append(_ESCAPES.get(sql[j + 1], sql[j + 1]))
            j += 2
            continue
        if c == q:
            if j + 1 < n and sql[j + 1] == q:
                out.append(q)
                j += 2
                continue
            return "".join(out), j + 1
        out.append(c)
        j += 1
    raise _parse_error(sql, i)


def _lex_quoted_ident(sql: str, i: int) -> tuple[str, int]:
    q = sql[i]
    out: list[str] = []
    j = i + 1
    while j < len(sql):
        if sql[j] == q:
            if j + 1 < len(sql) and sql[j + 1] == q:
                out.append(q)
                j += 2
                continue
            return "".join(out), j + 1
        out.append(sql[j])
        j += 1
    raise _parse_error(sql, i)


def _hex_or_bits(body: str, hex_: bool) -> bytes | None:
    if hex_:
        if len(body) % 2 or any(ch not in "0123456789abcdefABCDEF" for ch in body):
            return None
        return bytes.fromhex(body)
    if any(ch not in "01" for ch in body):
        return None
    if not body:
        return b""
    v = int(body, 2)
    return v.to_bytes((len(body) + 7) // 8, "big")


def _lex_number(sql: str, i: int) -> _Tok | None:
    n = len(sql)
    if sql.startswith(("0x", "0b"), i):
        j = i + 2
        while j < n and _is_id_char(sql[j]):
            j += 1
        b = _hex_or_bits(sql[i + 2 : j], sql[i + 1] == "x")
        if b is not None and j > i + 2:
            return _Tok("HEX", sql[i:j], _Hex(b), i, j)
        return None  # an identifier such as 0xG
    m = _NUM_RE.match(sql, i)
    if m is None:
        return None
    j = m.end()
    if j < n and _is_id_char(sql[j]) and "." not in m.group(0):
        return None  # 1e, 123abc: identifiers may start with digits
    text = m.group(0)
    value: int | Decimal | float
    if m.group(2):
        value = float(text)
        if math.isinf(value):
            raise SqlError(C.ER_ILLEGAL_VALUE_FOR_TYPE, f"Illegal double '{text}' value found during parsing")
    elif "." in text or len(text) > 20:  # a DECIMAL (past BIGINT UNSIGNED: no int() of a huge digit string)
        value = Decimal(text)
    else:
        value = int(text)
        if value > _U64:
            value = Decimal(text)
    return _Tok("NUM", text, value, i, j)


def _lex_variable(sql: str, i: int) -> _Tok | None:
    """@name, @`q`, @'q'; @@name, @@global.name, @@session.name, @@local.name, @@component.name."""
    n = len(sql)
    if sql.startswith("@@", i):
        j = i + 2
        name, j = _lex_name(sql, j)
        if name is None:
            raise _parse_error(sql, j)
        scope: str | None = None
        component: str | None = None
        if j < n and sql[j] == ".":
            k = j + 1
            while k < n and sql[k] in " \t\n\r":
                k += 1
            second, k2 = _lex_name(sql, k)
            if second is None:
                raise _parse_error(sql, k)
            if name.lower() in ("global", "session", "local") and sql[i + 2] != "`":
                scope = name.lower()
            else:
                component = name
            name, j = second, k2
        elif name.lower() in ("global", "session", "local") and sql[i + 2] != "`":
            raise _parse_error(sql, j)
        return _Tok("SVAR", sql[i:j], (scope, name, component), i, j)
    j = i + 1
    if j < n and sql[j] in "`'\"":
        if sql[j] == "`":
            name, j = _lex_quoted_ident(sql, j)
        else:
            name, j = _lex_string(sql, j, True)
        return _Tok("UVAR", sql[i:j], name, i, j)
    k = j
    while k < n and (_is_id_char(sql[k]) or sql[k] == "."):
        k += 1
    if k == j:
        return None
    return _Tok("UVAR", sql[i:k], sql[j:k], i, k)


def _lex_name(sql: str, j: int) -> tuple[str | None, int]:
    if j < len(sql) and sql[j] == "`":
        return _lex_quoted_ident(sql, j)
    k = j
    while k < len(sql) and _is_id_char(sql[k]):
        k += 1
    return (sql[j:k], k) if k > j else (None, j)


# ------------------------------------------------------------------------------------------------ AST


class _Node:
    __slots__ = ("end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end


class _Lit(_Node):
    __slots__ = ("is_string", "value")

    def __init__(self, start: int, end: int, value: Any, is_string: bool = False) -> None:
        super().__init__(start, end)
        self.value = value
        self.is_string = is_string


class _UVar(_Node):
    __slots__ = ("name",)

    def __init__(self, start: int, end: int, name: str) -> None:
        super().__init__(start, end)
        self.name = name


class _SVar(_Node):
    __slots__ = ("component", "name", "scope")

    def __init__(self, start: int, end: int, scope: str | None, name: str, component: str | None) -> None:
        super().__init__(start, end)
        self.scope, self.name, self.component = scope, name, component


class _Col(_Node):
    __slots__ = ("name", "qual")

    def __init__(self, start: int, end: int, name: str, qual: str | None) -> None:
        super().__init__(start, end)
        self.name, self.qual = name, qual


class _Func(_Node):
    __slots__ = ("args", "name", "parens", "qual")

    def __init__(self, start: int, end: int, name: str, args: list[_Node], qual: str | None = None,
                 parens: bool = True) -> None:
        super().__init__(start, end)
        self.name, self.args, self.qual, self.parens = name, args, qual, parens


class _Op(_Node):
    """Unary (right is None) or binary operator; also IS/LIKE/IN/BETWEEN via `op` and `extra`."""

    __slots__ = ("extra", "left", "neg", "op", "right")

    def __init__(self, start: int, end: int, op: str, left: _Node, right: _Node | None = None,
                 extra: Any = None, neg: bool = False) -> None:
        super().__init__(start, end)
        self.op, self.left, self.right, self.extra, self.neg = op, left, right, extra, neg


class _Case(_Node):
    __slots__ = ("base", "default", "whens")

    def __init__(self, start: int, end: int, base: _Node | None, whens: list[tuple[_Node, _Node]],
                 default: _Node | None) -> None:
        super().__init__(start, end)
        self.base, self.whens, self.default = base, whens, default


class _Assign(_Node):
    __slots__ = ("expr", "name")

    def __init__(self, start: int, end: int, name: str, expr: _Node) -> None:
        super().__init__(start, end)
        self.name, self.expr = name, expr


class _Row(_Node):
    __slots__ = ("items",)

    def __init__(self, start: int, end: int, items: list[_Node]) -> None:
        super().__init__(start, end)
        self.items = items


class _Subq(_Node):
    __slots__ = ("select",)

    def __init__(self, start: int, end: int, select: _Select) -> None:
        super().__init__(start, end)
        self.select = select


@dataclass
class _Item:
    expr: _Node | None  # None: '*'
    alias: str | None
    start: int
    end: int
    star_qual: str | None = None


@dataclass
class _Select:
    items: list[_Item]
    table: tuple[str | None, str, str | None] | None = None  # (db, table, alias); None = no table / DUAL
    where: _Node | None = None
    order: list[tuple[_Node, bool]] = field(default_factory=list)
    limit: tuple[int, int] | None = None  # (offset, count)
    into: list[str] | None = None
    unsupported: str | None = None  # a clause we parse past but do not do (reported after table checks)


# ------------------------------------------------------------------------------------------------ parser

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


# ------------------------------------------------------------------------------------------------ values

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


# ------------------------------------------------------------------------------------------------ functions

# MariaDB native functions binlogd does not evaluate: calling one is 1235, not "FUNCTION x does not exist".
_KNOWN_FUNCTIONS = frozenset(_words("""
ACOS ADDDATE ADDTIME AES_DECRYPT AES_ENCRYPT ASCII ASIN ATAN ATAN2 AVG BENCHMARK BIN BINLOG_GTID_POS BIT_AND
BIT_COUNT BIT_LENGTH BIT_OR BIT_XOR CAST CEIL CEILING CHAR CHARSET CHR COERCIBILITY COLLATION COMPRESS CONV
CONVERT CONVERT_TZ COS COT COUNT CRC32 CRC32C DATE DATEDIFF DATE_ADD DATE_FORMAT DATE_SUB DAY DAYNAME
DAYOFMONTH DAYOFWEEK DAYOFYEAR DECODE DEGREES DES_DECRYPT DES_ENCRYPT ELT ENCODE ENCRYPT EXP EXPORT_SET
EXTRACT EXTRACTVALUE FIELD FIND_IN_SET FLOOR FORMAT FORMAT_BYTES FORMAT_PICO_TIME FOUND_ROWS FROM_BASE64
FROM_DAYS FROM_UNIXTIME GET_FORMAT GET_LOCK GREATEST GROUP_CONCAT HEX HOUR INET6_ATON INET6_NTOA INET_ATON
INET_NTOA INSERT INSTR IS_FREE_LOCK IS_IPV4 IS_IPV6 IS_USED_LOCK ISNULL JSON_ARRAY JSON_EXTRACT JSON_OBJECT
JSON_VALUE KDF LAST_DAY LAST_VALUE LEAST LEFT LOAD_FILE LOCATE LOG LOG10 LOG2 LPAD LTRIM MAKEDATE MAKETIME
MAKE_SET MASTER_GTID_WAIT MASTER_POS_WAIT MAX MD5 MICROSECOND MID MIN MINUTE MONTH MONTHNAME NAME_CONST
NATURAL_SORT_KEY NEXTVAL NVL NVL2 OCT OLD_PASSWORD ORD PASSWORD PERIOD_ADD PERIOD_DIFF PI POSITION POW POWER
QUARTER QUOTE RADIANS RAND RANDOM_BYTES RELEASE_ALL_LOCKS RELEASE_LOCK REPEAT REPLACE REVERSE RIGHT ROUND
ROW_COUNT RPAD RTRIM SEC_TO_TIME SECOND SFORMAT SHA SHA1 SHA2 SIGN SIN SLEEP SOUNDEX SPACE SQRT STD STDDEV
STR_TO_DATE STRCMP SUBDATE SUBSTR SUBSTRING SUBSTRING_INDEX SUBTIME SUM SYS_GUID TAN TIME TIMEDIFF TIMESTAMP
TIMESTAMPADD TIMESTAMPDIFF TIME_FORMAT TIME_TO_SEC TO_BASE64 TO_CHAR TO_DAYS TO_SECONDS TRIM TRUNCATE
UNCOMPRESS UNCOMPRESSED_LENGTH UNHEX UPDATEXML UUID UUID_SHORT VALUES VARIANCE VAR_POP VAR_SAMP WEEK WEEKDAY
WEEKOFYEAR WSREP_LAST_SEEN_GTID WSREP_LAST_WRITTEN_GTID WSREP_SYNC_WAIT_UPTO_GTID YEAR YEARWEEK
"""))


def _arity(name: str, args: Sequence[_Node], lo: int, hi: int | None) -> None:
    if len(args) < lo or (hi is not None and len(args) > hi):
        raise SqlError(C.ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT,
                       f"Incorrect parameter count in the call to native function '{name}'")


# ------------------------------------------------------------------------------------------------ evaluator


class _Eval:
    """Evaluates expressions for one statement (NOW() is fixed for the statement, like in MariaDB)."""

    def __init__(self, stmt: _Stmt) -> None:
        self.stmt = stmt
        self.session = stmt.session
        self.server = stmt.server
        self.row: dict[str, Any] | None = None  # column values for SHOW ... WHERE / information_schema
        self.clause = "SELECT"
        self._now: float | None = None

    # --- helpers
    def warn(self, code: int, message: str) -> None:
        self.stmt.warnings.append(("Warning", code, message))

    def now(self) -> float:
        if self._now is None:
            ts = self.session.session_sysvars.get("timestamp")
            if isinstance(ts, int | float) and ts:
                self._now = float(ts)
            else:
                clock = getattr(self.server, "now", None)
                self._now = float(clock()) if callable(clock) else time.time()
        return self._now

    def tz_offset(self, epoch: float) -> int:
        tz = self.stmt.sysvar_session("time_zone")
        parsed = SV.parse_time_zone(str(tz)) if tz is not None else None
        if parsed is None or parsed[1] is None:
            try:
                off = dt.datetime.fromtimestamp(epoch).astimezone().utcoffset()
            except (OverflowError, OSError, ValueError):
                return 0
            return int(off.total_seconds()) if off is not None else 0
        return parsed[1]

    def number(self, v: Any, kind: str = "DOUBLE") -> int | Decimal | float | None:
        """Numeric value of v; strings become doubles (with MariaDB's truncation warning)."""
        if v is None or isinstance(v, int | float | Decimal):
            return v
        if isinstance(v, _Hex):
            return int.from_bytes(v, "big") if v else 0
        s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        m = _NUM_PREFIX.match(s)
        if m is None or s[m.end():].strip():
            shown = s if len(s) <= 128 else s[:125] + "..."
            self.warn(C.ER_TRUNCATED_WRONG_VALUE, f"Truncated incorrect {kind} value: '{shown}'")
        if m is None:
            return 0.0 if kind == "DOUBLE" else Decimal(0)
        if kind == "DECIMAL":
            with localcontext() as ctx:
                ctx.prec = 80
                return Decimal(m.group(0).strip())
        f = float(m.group(0))
        if math.isinf(f):
            return math.copysign(_DBL_MAX, f)
        return f

    def truth(self, v: Any) -> bool | None:
        n = self.number(v)
        return None if n is None else n != 0

    def integer(self, v: Any) -> int | None:
        n = self.number(v)
        if n is None:
            return None
        if isinstance(n, int):
            return n
        if isinstance(n, float) and not math.isfinite(n):
            return 0
        if abs(n) >= _U64:
            return _U64 if n > 0 else _I64_MIN
        with localcontext() as ctx:
            ctx.prec = 100
            return int(Decimal(n).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    # --- dispatch
    def ev(self, node: _Node) -> Any:
        if isinstance(node, _Lit):
            return node.value
        if isinstance(node, _UVar):
            return self.session.user_vars.get(node.name)
        if isinstance(node, _SVar):
            return self.stmt.read_sysvar(node.scope, node.name, node.component)
        if isinstance(node, _Op):
            return self.op(node)
        if isinstance(node, _Func):
            return self.func(node)
        if isinstance(node, _Col):
            return self.column(node)
        if isinstance(node, _Assign):
            v = self.ev(node.expr)
            check_session_var(node.name, _out(v))
            self.session.user_vars[node.name] = _out(v)
            return v
        if isinstance(node, _Case):
            return self.case(node)
        if isinstance(node, _Subq):
            res = self.stmt.run_select(node.select, nested=True)
            if len(res.columns) != 1:
                raise SqlError(C.ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")
            if len(res.rows) > 1:
                raise SqlError(C.ER_SUBQUERY_NO_1_ROW, "Subquery returns more than 1 row")
            return res.rows[0][0] if res.rows else None
        if isinstance(node, _Row):
            raise SqlError(C.ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")
        raise AssertionError(node)  # pragma: no cover

    def column(self, node: _Col) -> Any:
        if self.row is not None and node.name.lower() in self.row:
            return self.row[node.name.lower()]
        if node.qual is not None and self.row is None:
            raise SqlError(C.ER_UNKNOWN_TABLE, f"Unknown table '{node.qual}' in {self.clause}")
        raise SqlError(C.ER_BAD_FIELD_ERROR, f"Unknown column '{node.name}' in '{self.clause}'")

    def case(self, node: _Case) -> Any:
        base = self.ev(node.base) if node.base is not None else None
        for cond, value in node.whens:
            if node.base is None:
                if self.truth(self.ev(cond)):
                    return self.ev(value)
            elif self.compare(base, self.ev(cond)) == 0:
                return self.ev(value)
        return self.ev(node.default) if node.default is not None else None

    # --- operators
    def op(self, node: _Op) -> Any:
        o = node.op
        if o in ("()", "COLLATE"):
            return self.ev(node.left)
        if o in ("AND", "OR", "XOR"):
            return self.logic(o, node)
        a = self.ev(node.left)
        if o == "NOT":
            t = self.truth(a)
            return None if t is None else int(not t)
        if o == "NEG":
            return self.negate(a, node)
        if o == "+u":
            return a
        if o == "~":
            n = self.integer(a)
            return None if n is None else (~n) & _U64
        if o == "IS":
            return self.is_test(a, node)
        if o == "IN":
            return self.in_list(a, node)
        if o == "BETWEEN":
            lo, hi = self.ev(node.right), self.ev(node.extra)  # type: ignore[arg-type]
            c1, c2 = self.compare(a, lo), self.compare(a, hi)
            if c1 is None or c2 is None:
                return None
            return int((c1 >= 0 and c2 <= 0) != node.neg)
        if o == "LIKE":
            return self.like(a, node)
        b = self.ev(node.right)  # type: ignore[arg-type]
        if o in _CMP_OPS:
            if o == "<=>":
                if a is None or b is None:
                    return int(a is None and b is None)
                return int(self.compare(a, b) == 0)
            c = self.compare(a, b)
            if c is None:
                return None
            return int({"=": c == 0, "<>": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[o])
        if o in ("|", "&", "^", "<<", ">>"):
            x, y = self.integer(a), self.integer(b)
            if x is None or y is None:
                return None
            x &= _U64
            if o == "|":
                return x | (y & _U64)
            if o == "&":
                return x & (y & _U64)
            if o == "^":
                return x ^ (y & _U64)
            y &= _U64
            if y >= 64:
                return 0
            return ((x << y) & _U64) if o == "<<" else x >> y
        return self.arith(o, a, b, node)

    def logic(self, o: str, node: _Op) -> Any:
        a = self.truth(self.ev(node.left))
        if o == "AND" and a is False:
            return 0
        if o == "OR" and a is True:
            return 1
        b = self.truth(self.ev(node.right))  # type: ignore[arg-type]
        if o == "AND":
            return 0 if b is False else (None if a is None or b is None else 1)
        if o == "OR":
            return 1 if b is True else (None if a is None or b is None else 0)
        return None if a is None or b is None else int(a != b)

    def is_test(self, a: Any, node: _Op) -> int:
        what = node.extra
        if what in ("NULL", "UNKNOWN"):
            r = a is None
        else:
            t = self.truth(a)
            r = t is not None and t == (what == "TRUE")
        return int(r != node.neg)

    def in_list(self, a: Any, node: _Op) -> Any:
        if a is None:
            return None
        saw_null = False
        for item in node.extra:
            c = self.compare(a, self.ev(item))
            if c is None:
                saw_null = True
            elif c == 0:
                return int(not node.neg)
        return None if saw_null else int(node.neg)

    def like(self, a: Any, node: _Op) -> Any:
        pat = self.ev(node.right)  # type: ignore[arg-type]
        esc_v = self.ev(node.extra) if node.extra is not None else "\\"
        if a is None or pat is None:
            return None
        esc = _to_text(esc_v)[:1] if esc_v is not None else "\\"
        return int(like_match(_to_text(a), _to_text(pat), esc or "\\") != node.neg)

    def compare(self, a: Any, b: Any) -> int | None:
        """-1/0/1 with MariaDB's rules: strings compare case-insensitively, a string against a number as a number."""
        if a is None or b is None:
            return None
        a_str = isinstance(a, str | bytes) and not isinstance(a, _Hex)
        b_str = isinstance(b, str | bytes) and not isinstance(b, _Hex)
        if a_str and b_str:
            if isinstance(a, bytes) or isinstance(b, bytes):
                x = a if isinstance(a, bytes) else a.encode()
                y = b if isinstance(b, bytes) else b.encode()
            else:
                x, y = a.casefold().rstrip(" "), b.casefold().rstrip(" ")
            return (x > y) - (x < y)
        x_n = self.number(a, "DECIMAL" if a_str and not isinstance(b, float) else "DOUBLE")
        y_n = self.number(b, "DECIMAL" if b_str and not isinstance(a, float) else "DOUBLE")
        assert x_n is not None and y_n is not None
        return (x_n > y_n) - (x_n < y_n)

    def negate(self, a: Any, node: _Op) -> Any:
        n = self.number(a)
        if n is None:
            return None
        if isinstance(n, int):
            r = -n
            if r < _I64_MIN:
                return Decimal(r)
            return r
        return -n

    def arith(self, o: str, a: Any, b: Any, node: _Op) -> Any:
        x, y = self.number(a), self.number(b)
        if x is None or y is None:
            return None
        if o in ("/", "DIV", "%") and y == 0:
            self.warn(C.ER_DIVISION_BY_ZERO, "Division by 0")
            return None
        if isinstance(x, float) or isinstance(y, float):
            fx, fy = float(x), float(y)
            if o == "DIV":
                return self.check_int(int(fx / fy), node, x, y)
            r = {"+": lambda: fx + fy, "-": lambda: fx - fy, "*": lambda: fx * fy, "/": lambda: fx / fy,
                 "%": lambda: math.fmod(fx, fy)}[o]()
            if math.isinf(r) or math.isnan(r):
                raise SqlError(C.ER_DATA_OUT_OF_RANGE, f"DOUBLE value is out of range in '{_expr_sql(self, node)}'")
            return r
        if isinstance(x, Decimal) or isinstance(y, Decimal) or o == "/":
            try:
                return self.decimal_arith(o, Decimal(x), Decimal(y), node)
            except InvalidOperation:
                raise SqlError(C.ER_DATA_OUT_OF_RANGE,
                               f"DECIMAL value is out of range in '{_expr_sql(self, node)}'") from None
        assert isinstance(x, int) and isinstance(y, int)
        if o == "+":
            r = x + y
        elif o == "-":
            r = x - y
        elif o == "*":
            r = x * y
        elif o == "DIV":
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        else:  # %
            r = abs(x) % abs(y) * (1 if x >= 0 else -1)
        return self.check_int(r, node, x, y)

    def decimal_arith(self, o: str, dx: Decimal, dy: Decimal, node: _Op) -> Any:
        """Exact decimal arithmetic; '/' gets the dividend's scale + div_precision_increment (7/2 = 3.5000)."""
        with localcontext() as ctx:
            ctx.prec = 80
            if o == "+":
                return dx + dy
            if o == "-":
                return dx - dy
            if o == "*":
                return dx * dy
            if o == "%":
                r = dx.copy_abs() % dy.copy_abs()
                return -r if dx < 0 else r
            if o == "DIV":
                q = int((dx / dy).to_integral_value(rounding=ROUND_DOWN))
                return self.check_int(q, node, q, 0)
            incr = self.stmt.sysvar_session("div_precision_increment")
            scale = max(0, -int(dx.as_tuple().exponent)) + (incr if isinstance(incr, int) else 4)
            return (dx / dy).quantize(Decimal(1).scaleb(-min(scale, 38)), rounding=ROUND_HALF_UP)

    def check_int(self, r: int, node: _Op, x: Any, y: Any) -> int:
        unsigned = (isinstance(x, int) and x > _I64_MAX) or (isinstance(y, int) and y > _I64_MAX)
        if unsigned:
            if not 0 <= r <= _U64:
                raise SqlError(C.ER_DATA_OUT_OF_RANGE,
                               f"BIGINT UNSIGNED value is out of range in '{_expr_sql(self, node)}'")
        elif not _I64_MIN <= r <= _I64_MAX:
            raise SqlError(C.ER_DATA_OUT_OF_RANGE, f"BIGINT value is out of range in '{_expr_sql(self, node)}'")
        return r

    # --- functions
    def func(self, node: _Func) -> Any:
        name = node.name.upper()
        args = node.args
        if node.qual is not None:
            raise SqlError(C.ER_SP_DOES_NOT_EXIST, f"FUNCTION {node.qual}.{node.name} does not exist")
        impl = _FUNCTIONS.get(name)
        if impl is None:
            if name in _KNOWN_FUNCTIONS:
                raise not_supported(f"{name}()")
            db = self.session.database
            shown = f"{db}.{node.name}" if db else node.name
            raise SqlError(C.ER_SP_DOES_NOT_EXIST, f"FUNCTION {shown} does not exist")
        lo, hi, fn = impl
        _arity(node.name, args, lo, hi)
        return fn(self, node, args)


def _expr_sql(ev: _Eval, node: _Node) -> str:
    """MariaDB's printed form of an expression for 1690 messages ('9223372036854775807 + 1')."""
    sql = ev.stmt.sql
    if isinstance(node, _Op) and node.right is not None and node.op not in ("LIKE", "BETWEEN"):
        op = {"%": "%", "DIV": "DIV"}.get(node.op, node.op)
        return f"{_expr_sql(ev, node.left)} {op} {_expr_sql(ev, node.right)}"
    if isinstance(node, _Op) and node.op == "NEG":
        return f"-{_expr_sql(ev, node.left)}"
    return sql[node.start : node.end]


def like_match(s: str, pattern: str, escape: str = "\\") -> bool:
    """SQL LIKE, case-insensitive (MariaDB's default _ci collations).

    Matches the '%'-separated segments left to right (the leftmost fit of each segment is always the best), so
    it runs in about linear time and never backtracks exponentially, whatever a client sends.
    """
    s = s.casefold()
    p = pattern.casefold()
    segments: list[list[str | None]] = [[]]  # None is '_' (any one character)
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == escape and i + 1 < len(p):
            segments[-1].append(p[i + 1])
            i += 2
            continue
        if ch == "%":
            segments.append([])
        else:
            segments[-1].append(None if ch == "_" else ch)
        i += 1
    if len(segments) == 1:
        return len(segments[0]) == len(s) and _seg_at(s, 0, segments[0])
    first, last = segments[0], segments[-1]
    if len(first) + len(last) > len(s) or not _seg_at(s, 0, first) or not _seg_at(s, len(s) - len(last), last):
        return False
    pos, end = len(first), len(s) - len(last)
    for seg in segments[1:-1]:
        found = _seg_find(s, seg, pos, end)
        if found < 0:
            return False
        pos = found + len(seg)
    return True


def _seg_at(s: str, at: int, seg: list[str | None]) -> bool:
    return all(c is None or s[at + k] == c for k, c in enumerate(seg))


def _seg_find(s: str, seg: list[str | None], start: int, end: int) -> int:
    """Leftmost index >= start where seg fits before end, or -1."""
    if not seg:
        return start
    if None not in seg:
        return s.find("".join(seg), start, end)  # type: ignore[arg-type]
    for at in range(start, end - len(seg) + 1):
        if _seg_at(s, at, seg):
            return at
    return -1


# --- function implementations (name -> (min args, max args, fn(ev, node, args)))


def _fn_version(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.server.version


def _fn_database(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.session.database


def _fn_user(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return f"{ev.session.user}@{ev.session.host}"


def _fn_connection_id(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.session.connection_id


def _fn_unix_timestamp(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    if not args:
        return int(ev.now())
    v = ev.ev(args[0])
    if v is None:
        return None
    text = _to_text(v).strip()
    m = re.fullmatch(r"(\d{4})-?(\d{1,2})-?(\d{1,2})(?:[ T]?(\d{1,2}):?(\d{1,2}):?(\d{1,2})(\.\d{1,6})?)?", text)
    if not m:
        return None
    try:
        when = dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4) or 0),
                           int(m.group(5) or 0), int(m.group(6) or 0))
    except ValueError:
        return None
    naive_epoch = (when - dt.datetime(1970, 1, 1)).total_seconds()
    epoch = naive_epoch - ev.tz_offset(naive_epoch)
    if epoch < 0:
        return 0
    frac = m.group(7)
    return Decimal(int(epoch)) + Decimal(frac) if frac else int(epoch)


def _precision(ev: _Eval, node: _Func, args: list[_Node], sql_name: str) -> int:
    if not args:
        return 0
    p = ev.integer(ev.ev(args[0]))
    if p is None or p < 0:
        return 0
    if p > 6:
        raise SqlError(C.ER_TOO_BIG_PRECISION, f"Too big precision specified for '{sql_name}'. Maximum is 6")
    return p


def _datetime_text(epoch: float, offset: int, precision: int, part: str) -> str | None:
    try:
        t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=epoch + offset)
    except OverflowError:
        return None
    if part == "date":
        return t.strftime("%Y-%m-%d")
    text = t.strftime("%H:%M:%S" if part == "time" else "%Y-%m-%d %H:%M:%S")
    if precision:
        text += "." + f"{t.microsecond:06d}"[:precision]
    return text


def _time_func(part: str, utc: bool, sql_name: str) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        p = _precision(ev, node, args, sql_name) if part != "date" else 0
        now = ev.now()
        return _datetime_text(now, 0 if utc else ev.tz_offset(now), p, part)

    return fn


_TIME_FUNCS: dict[str, tuple[int, int, Callable[[_Eval, _Func, list[_Node]], Any]]] = {
    "NOW": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "CURRENT_TIMESTAMP": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "LOCALTIME": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "LOCALTIMESTAMP": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "SYSDATE": (0, 1, _time_func("datetime", False, "sysdate")),
    "UTC_TIMESTAMP": (0, 1, _time_func("datetime", True, "utc_timestamp")),
    "CURDATE": (0, 0, _time_func("date", False, "curdate")),
    "CURRENT_DATE": (0, 0, _time_func("date", False, "curdate")),
    "UTC_DATE": (0, 0, _time_func("date", True, "utc_date")),
    "CURTIME": (0, 1, _time_func("time", False, "curtime")),
    "CURRENT_TIME": (0, 1, _time_func("time", False, "curtime")),
    "UTC_TIME": (0, 1, _time_func("time", True, "utc_time")),
}


def _fn_concat(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    vals = [ev.ev(a) for a in args]
    if any(v is None for v in vals):
        return None
    if any(isinstance(v, bytes) for v in vals):
        return b"".join(v if isinstance(v, bytes) else _to_text(v).encode() for v in vals)
    return "".join(_to_text(v) for v in vals)


def _fn_concat_ws(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    sep = ev.ev(args[0])
    if sep is None:
        return None
    vals = [ev.ev(a) for a in args[1:]]
    return _to_text(sep).join(_to_text(v) for v in vals if v is not None)


def _fn_ifnull(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    v = ev.ev(args[0])
    return ev.ev(args[1]) if v is None else v


def _fn_coalesce(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    for a in args:
        v = ev.ev(a)
        if v is not None:
            return v
    return None


def _fn_nullif(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    a, b = ev.ev(args[0]), ev.ev(args[1])
    return None if ev.compare(a, b) == 0 else a


def _fn_if(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.ev(args[1]) if ev.truth(ev.ev(args[0])) else ev.ev(args[2])


def _fn_case(upper: bool) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        v = ev.ev(args[0])
        if v is None or isinstance(v, bytes):
            return v
        s = _to_text(v)
        return s.upper() if upper else s.lower()

    return fn


def _fn_length(chars: bool) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        v = ev.ev(args[0])
        if v is None:
            return None
        if isinstance(v, bytes):
            return len(v)
        s = _to_text(v)
        return len(s) if chars else len(s.encode("utf-8", "surrogateescape"))

    return fn


def _fn_abs(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    n = ev.number(ev.ev(args[0]))
    return None if n is None else abs(n)


def _fn_binlog_gtid_pos(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    f, p = ev.ev(args[0]), ev.ev(args[1])
    if f is None or p is None:
        return None
    pos = ev.integer(p)
    if pos is None or pos < 0:
        return None
    return ev.server.binlog_gtid_pos(_to_text(f), pos)


def _fn_mod(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.arith("%", ev.ev(args[0]), ev.ev(args[1]), _Op(node.start, node.end, "%", args[0], args[1]))


def _fn_last_insert_id(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    if args:
        raise not_supported("LAST_INSERT_ID(expr)")
    return 0  # binlogd never inserts into a table with AUTO_INCREMENT


_FUNCTIONS: dict[str, tuple[int, int | None, Callable[[_Eval, _Func, list[_Node]], Any]]] = {
    "VERSION": (0, 0, _fn_version),
    "DATABASE": (0, 0, _fn_database),
    "SCHEMA": (0, 0, _fn_database),
    "USER": (0, 0, _fn_user),
    "SESSION_USER": (0, 0, _fn_user),
    "SYSTEM_USER": (0, 0, _fn_user),
    "CURRENT_USER": (0, 0, _fn_user),
    "CONNECTION_ID": (0, 0, _fn_connection_id),
    "UNIX_TIMESTAMP": (0, 1, _fn_unix_timestamp),
    **_TIME_FUNCS,
    "CONCAT": (1, None, _fn_concat),
    "CONCAT_WS": (2, None, _fn_concat_ws),
    "IFNULL": (2, 2, _fn_ifnull),
    "COALESCE": (1, None, _fn_coalesce),
    "NULLIF": (2, 2, _fn_nullif),
    "IF": (3, 3, _fn_if),
    "LOWER": (1, 1, _fn_case(False)),
    "LCASE": (1, 1, _fn_case(False)),
    "UPPER": (1, 1, _fn_case(True)),
    "UCASE": (1, 1, _fn_case(True)),
    "LENGTH": (1, 1, _fn_length(False)),
    "OCTET_LENGTH": (1, 1, _fn_length(False)),
    "CHAR_LENGTH": (1, 1, _fn_length(True)),
    "CHARACTER_LENGTH": (1, 1, _fn_length(True)),
    "ABS": (1, 1, _fn_abs),
    "MOD": (2, 2, _fn_mod),
    "BINLOG_GTID_POS": (2, 2, _fn_binlog_gtid_pos),
    "LAST_INSERT_ID": (0, 1, _fn_last_insert_id),
}


# ------------------------------------------------------------------------------------------------ statements

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
_ALL_SLAVES_STATUS_COLUMNS = ["Connection_name", "Slave_SQL_State", *_SLAVE_STATUS_COLUMNS,
                              "Retried_transactions", "Max_relay_log_size", "Executed_log_entries",
                              "Slave_received_heartbeats", "Slave_heartbeat_period", "Gtid_Slave_Pos"]
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
# information_schema tables the standalone primary fills from its schema catalogue (server/standalone/views.py)
_SCHEMA_TABLES = frozenset({"SCHEMATA", "TABLES", "COLUMNS"})
_BOOL_WORDS = {"ON": 1, "OFF": 0}
_SESSION_BOUND = {"skip_replication", "autocommit", "sql_log_bin", "in_transaction", "warning_count",
                  "error_count"}


@dataclass
class _SetItem:
    """One assignment of a SET statement, checked before any is applied (MariaDB's check/update phases)."""

    kind: str  # 'user' | 'sys' | 'names' | 'charset'
    name: str = ""
    scope: str = "session"
    expr: _Node | None = None  # None with kind 'sys' means DEFAULT
    charset: str | None = None
    collate: str | None = None
    pos: int = 0


class _Stmt:
    """One statement: parse, check, execute. Collects warnings for SHOW WARNINGS."""

    def __init__(self, sql: str, session: SessionState, server: ServerView) -> None:
        # MariaDB's alloc_query() trims leading whitespace and trailing ';' / whitespace before parsing, so
        # error positions and line numbers count from the first real character.
        self.sql = _trim_query(sql)
        self.session = session
        self.server = server
        self.warnings: list[tuple[str, int, str]] = []
        self.clears_diagnostics = False
        self.hidden: list[tuple[int, int]] = []
        modes = str(self.sysvar_session("sql_mode") or "")
        self.modes = set(modes.split(","))
        self.ev = _Eval(self)

    # --- system variables
    def sysvar_session(self, name: str) -> Any:
        """The session value of a BOTH/SESSION_ONLY variable (global value when not overridden)."""
        if name in self.session.session_sysvars:
            return self.session.session_sysvars[name]
        return SV.SYSVARS[name].global_value(self.server)

    def session_bound(self, name: str) -> Any:
        s = self.session
        if name == "skip_replication":
            return int(s.skip_replication)
        if name == "autocommit":
            return int(s.autocommit)
        if name == "sql_log_bin":
            return int(s.sql_log_bin)
        if name == "in_transaction":
            return int(s.in_transaction)
        if name == "warning_count":
            return len(s.diagnostics)
        return sum(1 for d in s.diagnostics if d[0] == "Error")  # error_count

    def value_of(self, var: SysVar, scope: str) -> Any:
        """@@scope.name as SELECT sees it."""
        if scope == "global":
            return var.global_value(self.server)
        if var.name in _SESSION_BOUND:
            return self.session_bound(var.name)
        if var.name == "timestamp":
            ts = self.session.session_sysvars.get("timestamp")
            return float(ts) if isinstance(ts, int | float) and ts else self.ev.now()
        if var.scope is Scope.GLOBAL:
            return var.global_value(self.server)
        return self.sysvar_session(var.name)

    def read_sysvar(self, scope: str | None, name: str, component: str | None = None) -> Any:
        var = SV.lookup(name)
        if var is None:
            raise _unknown_sysvar(name)
        if component is not None:
            raise SqlError(C.ER_VARIABLE_IS_NOT_STRUCT,
                           f"Variable '{var.name}' is not a variable component (can't be used as "
                           f"XXXX.variable_name)")
        if scope == "global" and var.scope is Scope.SESSION_ONLY:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a SESSION variable")
        if scope in ("session", "local") and var.scope is Scope.GLOBAL:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a GLOBAL variable")
        return self.value_of(var, "global" if scope == "global" else "session")

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

    # --- SELECT / DO
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
            from .standalone.views import INFORMATION_SCHEMA

            names, rows_of = INFORMATION_SCHEMA[key]
            return self.select_rows(sel, names, rows_of(cat), quals)
        if key not in _IS_VARIABLE_TABLES or sel.unsupported:
            raise not_supported(sel.unsupported or f"SELECT from information_schema.{key}")
        what, scope = _IS_VARIABLE_TABLES[key]
        pairs = self.variable_rows(what, scope)
        source = [{"variable_name": n.upper(), "variable_value": v} for n, v in pairs]
        return self.select_rows(sel, ["VARIABLE_NAME", "VARIABLE_VALUE"], source, quals)

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

    # --- SET
    def do_set(self, p: _Parser) -> Ok:
        t = p.peek()
        if p.is_kw(t, "TRANSACTION") or (p.is_kw(t, "GLOBAL", "SESSION", "LOCAL") and
                                        p.is_kw(p.peek(1), "TRANSACTION")):
            return self.set_transaction(p)
        if p.is_kw(t, "PASSWORD", "ROLE", "DEFAULT", "STATEMENT"):
            words = "SET " + t.text.upper()
            if p.is_kw(t, "DEFAULT") and p.is_kw(p.peek(1), "ROLE"):
                words = "SET DEFAULT ROLE"
            elif p.is_kw(t, "DEFAULT"):
                p.fail(p.peek(1))
            raise not_supported(words)
        items: list[_SetItem] = []
        scope = "session"
        while True:
            item, scope = self.set_item(p, scope)
            items.append(item)
            if not p.accept_op(","):
                break
        p.finish()
        # check phase: evaluate every right-hand side and validate before changing anything
        planned = [self.check_set_item(it) for it in items]
        for apply in planned:
            apply()
        return Ok()

    def set_item(self, p: _Parser, scope: str) -> tuple[_SetItem, str]:
        t = p.peek()
        if t.kind == "OP" and t.text == "@":
            p.fail(p.peek(1))  # '@ x': MariaDB complains at the name
        if t.kind == "UVAR":
            p.next()
            if p.accept_op("=", ":=") is None:
                p.fail()
            return _SetItem("user", name=str(t.value).lower(), expr=p.expr(), pos=t.pos), scope
        if p.is_kw(t, "NAMES"):
            p.next()
            if p.accept_kw("DEFAULT"):
                return _SetItem("names", charset=None, pos=t.pos), scope
            cs = p.name_or_string()
            coll = p.name_or_string() if p.accept_kw("COLLATE") else None
            return _SetItem("names", charset=cs, collate=coll, pos=t.pos), scope
        if p.is_kw(t, "CHARSET") or (p.is_kw(t, "CHARACTER") and p.is_kw(p.peek(1), "SET")):
            p.next()
            if t.text.upper() == "CHARACTER":
                p.next()
            if p.accept_kw("DEFAULT"):
                return _SetItem("charset", charset=None, pos=t.pos), scope
            return _SetItem("charset", charset=p.name_or_string(), pos=t.pos), scope
        kw = p.accept_kw("GLOBAL", "SESSION", "LOCAL")
        if kw is not None:
            scope = "global" if kw == "GLOBAL" else "session"
            t = p.peek()
        if t.kind == "SVAR":
            p.next()
            vscope, name, component = t.value
            if component is not None:
                raise _unknown_sysvar(name)
            item_scope = "global" if vscope == "global" else ("session" if vscope else scope)
            if kw is not None and vscope is not None:
                p.fail(t)
        elif t.kind in ("ID", "QID"):
            if t.kind == "ID" and t.text.upper() in _RESERVED - {"DEFAULT"}:
                p.fail(t)
            p.next()
            name = str(t.value)
            item_scope = scope
        else:
            p.fail(t)
        if p.accept_op("=", ":=") is None:
            p.fail()
        value_tok = p.peek()
        if p.is_kw(value_tok, "DEFAULT") and self._ends_item(p.peek(1)):
            p.next()
            return _SetItem("sys", name=name, scope=item_scope, expr=None, pos=t.pos), scope
        if value_tok.kind == "ID" and self._ends_item(p.peek(1)) and \
                value_tok.text.upper() not in ("NULL", "TRUE", "FALSE"):
            # SET x = ON / ROW / utf8: a bare word is the value's name
            p.next()
            return _SetItem("sys", name=name, scope=item_scope,
                            expr=_Lit(value_tok.pos, value_tok.end, value_tok.text, is_string=True),
                            pos=t.pos), scope
        return _SetItem("sys", name=name, scope=item_scope, expr=p.expr(), pos=t.pos), scope

    @staticmethod
    def _ends_item(t: _Tok) -> bool:
        return t.kind == "EOF" or (t.kind == "OP" and t.text in (",", ";"))

    def check_set_item(self, it: _SetItem) -> Callable[[], None]:
        ev = self.ev
        ev.clause = "SET"
        s = self.session
        if it.kind == "user":
            assert it.expr is not None
            raw = ev.ev(it.expr)
            value = DecimalText(_decimal_text(raw)) if isinstance(raw, Decimal) else _out(raw)
            check_session_var(it.name, value)  # @binlogd_replicate_*: 1210 for a bad rule (server/replica_filters.py)

            def apply_user() -> None:
                s.user_vars[it.name] = value

            return apply_user
        if it.kind in ("names", "charset"):
            return self.check_names(it)
        var = SV.lookup(it.name)
        if var is None:
            raise _unknown_sysvar(it.name)
        raw = None if it.expr is None else ev.ev(it.expr)
        is_default = it.expr is None
        if var.read_only:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a read only variable")
        if it.scope == "global":
            if var.name == "sql_log_bin":
                raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, "Variable 'sql_log_bin' is a SESSION variable")
            if var.scope is Scope.SESSION_ONLY:
                raise SqlError(C.ER_LOCAL_VARIABLE,
                               f"Variable '{var.name}' is a SESSION variable and can't be used with SET GLOBAL")
        else:
            if var.scope is Scope.GLOBAL:
                raise SqlError(C.ER_GLOBAL_VARIABLE,
                               f"Variable '{var.name}' is a GLOBAL variable and should be set with SET GLOBAL")
            if var.session_read_only:
                raise SqlError(C.ER_VARIABLE_IS_READONLY,
                               f"SESSION variable '{var.name}' is read-only. Use SET GLOBAL to assign the value")
        if is_default:
            value: Any = var.global_value(self.server) if var.scope is not Scope.SESSION_ONLY else var.default
            extra: dict[str, Any] = {}
        else:
            value, extra = self.coerce(var, raw, it.expr)
        if var.name == "skip_replication" and s.in_transaction:
            raise SqlError(C.ER_INSIDE_TRANSACTION_PREVENTS_SWITCH_SKIP_REPLICATION,
                           "Cannot modify @@session.skip_replication inside a transaction")
        if var.name == "sql_log_bin" and s.in_transaction:
            raise SqlError(1694, "Cannot modify @@session.sql_log_bin inside a transaction")
        if it.scope == "global":
            if var.name == "gtid_slave_pos":
                raise not_supported("SET GLOBAL gtid_slave_pos (binlogd is a binlog server, not a replica)")
            raise not_supported(f"SET GLOBAL {var.name} (binlogd's configuration is not changed through SQL)")
        return lambda: self.apply_session(var, value, extra, is_default)

    def apply_session(self, var: SysVar, value: Any, extra: dict[str, Any], is_default: bool) -> None:
        s = self.session
        name = var.name
        if name == "skip_replication":
            s.skip_replication = bool(value)
        elif name == "autocommit":
            if value and not s.autocommit:
                s.in_transaction = False  # switching autocommit on commits the open transaction
            s.autocommit = bool(value)
        elif name == "sql_log_bin":
            s.sql_log_bin = bool(value)
        elif name == "timestamp" and is_default:
            s.session_sysvars.pop("timestamp", None)
        else:
            s.session_sysvars[name] = value
        for k, v in extra.items():
            s.session_sysvars[k] = v

    def coerce(self, var: SysVar, raw: Any, expr: _Node | None) -> tuple[Any, dict[str, Any]]:
        """Validate a SET value the way MariaDB's Sys_var classes do; returns (value, dependent updates)."""
        name = var.name
        kind = var.kind
        is_str = isinstance(raw, str | bytes) and not isinstance(raw, _Hex)
        text = _to_text(raw) if raw is not None else None
        if kind is Kind.BOOL:
            if raw is None:
                raise _wrong_value(name, None)
            if is_str:
                v = _BOOL_WORDS.get(str(text).upper())
                if v is None:
                    raise _wrong_value(name, text)
                return v, {}
            if isinstance(raw, int) and not isinstance(raw, bool):
                if raw in (0, 1):
                    return raw, {}
                raise _wrong_value(name, raw)
            if isinstance(raw, _Hex):
                iv = int.from_bytes(raw, "big") if raw else 0
                if iv in (0, 1):
                    return iv, {}
                raise _wrong_value(name, iv)
            raise _wrong_type(name)
        if kind is Kind.INT:
            if raw is None or is_str or isinstance(raw, float | Decimal):
                raise _wrong_type(name)
            iv = int.from_bytes(raw, "big") if isinstance(raw, _Hex) else int(raw)
            lo = var.min if var.min is not None else 0
            hi = var.max if var.max is not None else _U64
            if not lo <= iv <= hi:
                self.warnings.append(("Warning", C.ER_TRUNCATED_WRONG_VALUE,
                                      f"Truncated incorrect {name} value: '{iv}'"))
                iv = min(max(iv, lo), hi)
            return iv, {}
        if kind is Kind.DOUBLE:
            if raw is None or is_str:
                raise _wrong_type(name)
            fv = float(self.ev.number(raw) or 0)
            lo_f, hi_f = float(var.min or 0), float(var.max if var.max is not None else _DBL_MAX)
            if not lo_f <= fv <= hi_f:
                self.warnings.append(("Warning", C.ER_TRUNCATED_WRONG_VALUE,
                                      f"Truncated incorrect {name} value: '{_to_text(raw)}'"))
                fv = min(max(fv, lo_f), hi_f)
            return fv, {}
        if kind is Kind.ENUM:
            if raw is None:
                raise _wrong_value(name, None)
            if is_str:
                for c in var.choices:
                    if c.upper() == str(text).upper():
                        return c, {}
                raise _wrong_value(name, text)
            if isinstance(raw, int):
                if 0 <= raw < len(var.choices):
                    return var.choices[raw], {}
                raise _wrong_value(name, raw)
            raise _wrong_type(name)
        if kind is Kind.SET:
            if raw is None:
                raise _wrong_value(name, None)
            if isinstance(raw, float | Decimal):
                raise _wrong_type(name)
            try:
                return SV.parse_sql_mode(raw if isinstance(raw, int) else str(text)), {}
            except ValueError as e:
                raise _wrong_value(name, e.args[0]) from None
        if kind is Kind.TIME_ZONE:
            if raw is None:
                raise _wrong_value(name, None)
            if not is_str:
                raise _wrong_type(name)
            tz = SV.parse_time_zone(str(text))
            if tz is None:
                raise SqlError(C.ER_UNKNOWN_TIME_ZONE, f"Unknown or incorrect time zone: '{text}'")
            return tz[0], {}
        if kind is Kind.CHARSET:
            if raw is None:
                if var.nullable:
                    return None, {}
                raise _wrong_value(name, None)
            cs = SV.charset(str(text))
            if cs is None:
                raise SqlError(C.ER_UNKNOWN_CHARACTER_SET, f"Unknown character set: '{text}'")
            if name == "character_set_client" and cs in SV.CLIENT_FORBIDDEN_CHARSETS:
                raise _wrong_value(name, cs)
            extra = {}
            partner = {"character_set_connection": "collation_connection",
                       "character_set_database": "collation_database",
                       "character_set_server": "collation_server"}.get(name)
            if partner:
                extra[partner] = SV.default_collation(cs)
            return cs, extra
        if kind is Kind.COLLATION:
            if raw is None:
                raise _wrong_value(name, None)
            found = SV.collation(str(text))
            if found is None:
                raise SqlError(C.ER_UNKNOWN_COLLATION, f"Unknown collation: '{text}'")
            coll, cs = found
            partner = {"collation_connection": "character_set_connection",
                       "collation_database": "character_set_database",
                       "collation_server": "character_set_server"}[name]
            return coll, {partner: cs}
        # plain strings (init_connect, gtid_slave_pos...)
        if raw is None:
            raise _wrong_value(name, None)
        if not is_str:
            raise _wrong_type(name)
        return str(text), {}

    def check_names(self, it: _SetItem) -> Callable[[], None]:
        """SET NAMES / SET CHARACTER SET: validate like MariaDB (1115, 1231 for ucs2..., 1273, 1253)."""
        s = self.session
        if it.charset is None:  # DEFAULT
            cs = SV.charset(str(SV.SYSVARS["character_set_client"].global_value(self.server))) or "utf8mb4"
        else:
            found = SV.charset(it.charset)
            if found is None:
                raise SqlError(C.ER_UNKNOWN_CHARACTER_SET, f"Unknown character set: '{it.charset}'")
            cs = found
        if cs in SV.CLIENT_FORBIDDEN_CHARSETS:
            raise _wrong_value("character_set_client", cs)
        updates: dict[str, Any] = {"character_set_client": cs, "character_set_results": cs}
        if it.kind == "names":
            coll = SV.default_collation(cs)
            if it.collate is not None:
                found_c = SV.collation(it.collate, cs)
                if found_c is None and SV.is_uca1400_short(it.collate):
                    found_c = (it.collate, "")  # a UCA-14 name that exists, just not for this charset
                if found_c is None:
                    raise SqlError(C.ER_UNKNOWN_COLLATION, f"Unknown collation: '{it.collate}'")
                if found_c[1] != cs:
                    raise SqlError(C.ER_COLLATION_CHARSET_MISMATCH,
                                   f"COLLATION '{it.collate}' is not valid for CHARACTER SET '{cs}'")
                coll = found_c[0]
            updates["character_set_connection"] = cs
            updates["collation_connection"] = coll
        else:
            db_cs = self.sysvar_session("character_set_database")
            db_coll = self.sysvar_session("collation_database")
            updates["character_set_connection"] = db_cs
            updates["collation_connection"] = db_coll
        return lambda: s.session_sysvars.update(updates)

    def set_transaction(self, p: _Parser) -> Ok:
        kw = p.accept_kw("GLOBAL", "SESSION", "LOCAL")
        p.expect_kw("TRANSACTION")
        updates: dict[str, Any] = {}
        while True:
            if p.accept_kw("ISOLATION"):
                p.expect_kw("LEVEL")
                w = p.expect_kw("READ", "REPEATABLE", "SERIALIZABLE")
                if w == "READ":
                    w2 = p.expect_kw("COMMITTED", "UNCOMMITTED")
                    level = f"READ-{w2}"
                elif w == "REPEATABLE":
                    p.expect_kw("READ")
                    level = "REPEATABLE-READ"
                else:
                    level = "SERIALIZABLE"
                updates["tx_isolation"] = level
            else:
                p.expect_kw("READ")
                updates["tx_read_only"] = 1 if p.expect_kw("ONLY", "WRITE") == "ONLY" else 0
            if not p.accept_op(","):
                break
        p.finish()
        if kw == "GLOBAL":
            raise not_supported("SET GLOBAL TRANSACTION (binlogd's configuration is not changed through SQL)")
        if kw is not None:  # SESSION: the session default; without a scope it only concerns the next transaction
            self.session.session_sysvars.update(updates)
        return Ok()

    # --- SHOW
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
        from .standalone import views

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
        from .standalone import views

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


_SORTED_SYSVARS = sorted(SV.SYSVARS)


def _sort_key(v: Any) -> Any:
    if v is None:
        return (0, "")
    if isinstance(v, int | float | Decimal):
        return (1, v)
    return (2, _to_text(v).casefold())


_SHOW_KNOWN = frozenset(_words("""
AUTHORS CHARACTER CHARSET CLIENT_STATISTICS COLLATION COLUMNS CONTRIBUTORS CREATE ENGINE ENGINES ERRORS
EVENTS EXPLAIN FIELDS FULL FUNCTION GRANTS INDEX INDEXES INDEX_STATISTICS KEYS LOCALES OPEN PACKAGE PLUGINS
PRIVILEGES PROCEDURE PROCESSLIST PROFILE PROFILES QUERY_RESPONSE_TIME RELAYLOG STORAGE TABLE TABLES
TABLE_STATISTICS TRIGGERS USER_STATISTICS WSREP_MEMBERSHIP WSREP_STATUS
"""))

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
# what EXPLAIN / DESCRIBE explain when it is not a table (binlogd: 1235, as before)
_EXPLAINABLE = frozenset({"SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE", "EXTENDED", "PARTITIONS", "FORMAT",
                          "ANALYZE", "FOR", "WITH", "VALUES", "TABLE"})

__all__ = ["DecimalText", "Ok", "ResultSet", "ServerView", "SessionState", "SqlError", "change_database", "execute",
           "like_match", "not_supported"]
