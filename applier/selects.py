"""The SELECTs a client or a health check sends to the admin port, answered as MariaDB answers them.

`SELECT 1`, `SELECT 'x'`, `SELECT NULL`, `SELECT @@version`, `SELECT @@global.server_id, @@hostname`,
`SELECT VERSION()`, `SELECT DATABASE()`, optionally `FROM DUAL`, `AS alias` and `LIMIT n` (the mariadb CLI
sends `select @@version_comment limit 1`). Column names are the items as typed (`@@GLOBAL.server_id`, `1`), a
string literal's column its text, as MariaDB names them. Anything else is not evaluated: `None` is returned
and the caller answers 1235; an unknown @@variable is 1193 "Unknown system variable", as on MariaDB.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

_SELECT = re.compile(r"SELECT\s+(.+?)(?:\s+FROM\s+DUAL)?(?:\s+LIMIT\s+\d+)?", re.I | re.S)
_ITEM = re.compile(
    r"\s*(?:(?P<int>-?\d+)|(?P<dec>-?\d+\.\d*)|'(?P<str>(?:[^'\\]|\\.|'')*)'|(?P<null>NULL)"
    r"|(?P<var>@@(?:(?:GLOBAL|SESSION|LOCAL)\.)?(?P<name>\w+))|(?P<func>(?P<fname>\w+)\s*\(\s*\)))"
    r"(?:\s+(?:AS\s+)?(?:`(?P<qalias>(?:[^`]|``)+)`|(?P<alias>\w+)))?\s*(?:,|$)", re.I | re.S)
_COMMENTS = re.compile(r"/\*(?!!).*?\*/", re.S)  # `/* ping */ SELECT 1`; not MariaDB's executable /*! */
_FUNCTIONS = {"VERSION": "version", "DATABASE": None, "SCHEMA": None}


class UnknownVariable(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def evaluate_select(text: str, variable: Callable[[str], Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]] | None:
    """(columns, [row]) for a SELECT of literals, @@variables and the functions above; None for anything else.

    `variable(name)` returns a system variable's value (name lower-cased) or raises UnknownVariable."""
    m = _SELECT.fullmatch(_COMMENTS.sub(" ", text).strip())
    if m is None:
        return None
    items, pos, body = [], 0, m.group(1)
    while pos < len(body):
        it = _ITEM.match(body, pos)
        if it is None or it.end() == pos:
            return None
        pos = it.end()
        items.append(it)
    if not items or body.rstrip().endswith(","):
        return None
    columns: list[str] = []
    row: list[Any] = []
    for it in items:
        if it.group("int") is not None:
            value: Any = int(it.group("int"))
        elif it.group("dec") is not None:
            value = Decimal(it.group("dec"))
        elif it.group("str") is not None:
            value = re.sub(r"\\(.)|''", lambda s: s.group(1) or "'", it.group("str"))
        elif it.group("null") is not None:
            value = None
        elif it.group("var") is not None:
            value = variable(it.group("name").lower())
        else:
            fname = it.group("fname").upper()
            if fname not in _FUNCTIONS:
                return None
            var = _FUNCTIONS[fname]
            value = variable(var) if var is not None else None
        name = it.group("var") or it.group("func") or it.group("int") or it.group("dec") or it.group("null")
        if it.group("str") is not None:
            name = value
        alias = it.group("qalias") or it.group("alias")
        columns.append(alias.replace("``", "`") if alias else name)
        row.append(value)
    return tuple(columns), [tuple(row)]
