"""The lexer: MariaDB tokens (strings, numbers, @vars, executable comments) with its bounds on size and nesting."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from binlogd.protocol import constants as C

from .errors import SqlError, _parse_error
from .values import _U64, _Hex

_SPACE = " \t\n\r\v\f"


def _trim_query(sql: str) -> str:
    """What MariaDB's alloc_query() keeps: no leading whitespace, no trailing ';' or whitespace."""
    return sql.lstrip(_SPACE).rstrip(_SPACE + ";")


def _words(text: str) -> list[str]:
    return text.split()



_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_OPS3 = ("<=>",)
_OPS2 = (":=", "<=", ">=", "<>", "!=", "<<", ">>", "&&", "||")
_NUM_RE = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _is_id_char(c: str) -> bool:
    return c in _ID_CHARS or ord(c) >= 0x80


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
