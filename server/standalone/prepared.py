"""SQL-level prepared statements of the standalone primary: PREPARE / EXECUTE ... USING / DEALLOCATE PREPARE.

MariaDB logs an executed prepared statement in STATEMENT format as its text with every `?` replaced by the
parameter's value as a literal (Item_param::query_val_str): strings quoted with backslash escapes, numbers and
decimals as their text, NULL. binlogd does the same substitution and runs the result as if the client had sent it,
so the binlog holds what a MariaDB primary writes (tests/test_prepared_binlog.py compares both). Statements are
kept per connection (WriteSession.prepared), as MariaDB keeps them per THD.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binlogd.protocol.sqlserver import sql_literal

from ..sql_surface import SqlError
from ..sql_surface.values import DecimalText, _double_text
from .classify import syntax_error

ER_UNKNOWN_STMT_HANDLER = 1243
ER_WRONG_ARGUMENTS = 1210
ER_UNSUPPORTED_PS = 1295
MAX_PREPARED = 16382  # MariaDB's max_prepared_stmt_count default

_SPACE = " \t\n\r\v\f"
_NAME = r"(`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_PREPARE = re.compile(rf"PREPARE\s+{_NAME}\s+FROM\s+(?:'((?:[^'\\]|\\[\s\S]|'')*)'|@([A-Za-z0-9_$.]+))\s*$",
                      re.I | re.S)
_EXECUTE = re.compile(rf"EXECUTE\s+{_NAME}(?:\s+USING\s+([\s\S]+))?$", re.I)
_DEALLOCATE = re.compile(rf"(?:DEALLOCATE|DROP)\s+PREPARE\s+{_NAME}\s*$", re.I)
_VERB = re.compile(r"(?:PREPARE|EXECUTE|DEALLOCATE|DROP\s+PREPARE)\b", re.I)
# a USING item: a user variable, a number, NULL or a quoted string (MariaDB takes any expression; these are what
# clients send)
_ITEM = re.compile(r"\s*(?:@([A-Za-z0-9_$.]+)|([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(NULL)|"
                   r"'((?:[^'\\]|\\[\s\S]|'')*)')\s*(,|$)", re.I)
_UNESCAPE = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
# the `?` placeholders of a statement: outside quotes, comments are not looked at (as mimic's COM_STMT_PREPARE)
_QUOTED_OR_MARK = re.compile(r"'(?:[^'\\]|\\[\s\S]|'')*'|\"(?:[^\"\\]|\\[\s\S]|\"\")*\"|`(?:[^`]|``)*`|(\?)")


@dataclass(frozen=True, slots=True)
class Prepared:
    text: str
    params: int


def is_prepared_statement_command(text: str) -> bool:
    """PREPARE / EXECUTE / DEALLOCATE PREPARE (text without leading comments)."""
    return _VERB.match(text) is not None


def _name(raw: str) -> str:
    return (raw[1:-1].replace("``", "`") if raw.startswith("`") else raw).lower()


def _unquote(body: str) -> str:
    return re.sub(r"\\([\s\S])|''", lambda m: "'" if m.group(1) is None else _UNESCAPE.get(m.group(1), m.group(1)),
                  body)


def literal(value: object) -> str:
    """A parameter's value as MariaDB writes it into the logged statement."""
    if isinstance(value, DecimalText):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    return sql_literal(value)


def placeholders(text: str) -> list[int]:
    """Positions of the statement's `?` placeholders."""
    return [m.start(1) for m in _QUOTED_OR_MARK.finditer(text) if m.group(1) is not None]


def _body(text: str, user_vars: dict[str, object]) -> tuple[str, str]:
    """PREPARE name FROM 'text' | @var: (lower-case name, statement text)."""
    m = _PREPARE.match(text)
    if m is None:
        raise syntax_error(text, len(text))
    if m.group(2) is not None:
        body = _unquote(m.group(2))
    else:
        v = user_vars.get(m.group(3).lower())
        body = v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else ("NULL" if v is None else str(v))
    if is_prepared_statement_command(body.lstrip()):
        raise SqlError(ER_UNSUPPORTED_PS, "This command is not supported in the prepared statement protocol yet")
    return _name(m.group(1)), body


def prepare(text: str, registry: dict[str, Prepared], user_vars: dict[str, object]) -> None:
    """PREPARE: kept in the session's registry (a new PREPARE of a name replaces the old)."""
    name, body = _body(text, user_vars)
    if name not in registry and len(registry) >= MAX_PREPARED:
        raise SqlError(1461, f"Can't create more than max_prepared_stmt_count statements (current value: "
                       f"{MAX_PREPARED})")
    registry[name] = Prepared(body, len(placeholders(body)))


def command_text(sql: str) -> str:
    """A PREPARE / EXECUTE / DEALLOCATE command without surrounding whitespace and trailing ';'."""
    return sql.strip(_SPACE).rstrip(";").rstrip(_SPACE)


def statement_to_check(sql: str, registry: dict[str, Prepared], user_vars: dict[str, object]) -> str | None:
    """What a command needs privileges for (server/privileges.py): the prepared text for PREPARE, the bound
    statement for EXECUTE, nothing for DEALLOCATE; any other statement itself."""
    if not is_prepared_statement_command(sql.lstrip(_SPACE)):
        return sql
    text = command_text(sql)
    verb = text[:7].upper()
    if verb.startswith("PREPARE"):
        return _body(text, user_vars)[1]
    if verb.startswith("EXECUTE"):
        return bind(text, registry, user_vars)
    return None


def deallocate(text: str, registry: dict[str, Prepared]) -> None:
    m = _DEALLOCATE.match(text)
    if m is None:
        raise syntax_error(text, len(text))
    if registry.pop(_name(m.group(1)), None) is None:
        raise SqlError(ER_UNKNOWN_STMT_HANDLER,
                       f"Unknown prepared statement handler ({m.group(1)}) given to DEALLOCATE PREPARE")


def bind(text: str, registry: dict[str, Prepared], user_vars: dict[str, object]) -> str:
    """EXECUTE name [USING ...]: the statement to run, its parameters inlined as literals."""
    m = _EXECUTE.match(text)
    if m is None:
        raise syntax_error(text, len(text))
    stmt = registry.get(_name(m.group(1)))
    if stmt is None:
        raise SqlError(ER_UNKNOWN_STMT_HANDLER, f"Unknown prepared statement handler ({m.group(1)}) given to EXECUTE")
    values = _using(m.group(2) or "", user_vars, text)
    if len(values) != stmt.params:
        raise SqlError(ER_WRONG_ARGUMENTS, "Incorrect arguments to EXECUTE")
    out, last = [], 0
    for pos, value in zip(placeholders(stmt.text), values, strict=True):
        out += [stmt.text[last:pos], value]
        last = pos + 1
    out.append(stmt.text[last:])
    return "".join(out)


def _using(items: str, user_vars: dict[str, object], text: str) -> list[str]:
    """The USING list's values as literals (user variables read from the session)."""
    values: list[str] = []
    pos = 0
    items = items.rstrip()
    while pos < len(items):
        m = _ITEM.match(items, pos)
        if m is None:
            raise syntax_error(text, len(text) - len(items) + pos)
        var, number, null, string = m.group(1, 2, 3, 4)
        if var is not None:
            values.append(literal(user_vars.get(var.lower())))
        elif number is not None:
            values.append(number)
        elif null is not None:
            values.append("NULL")
        else:
            values.append(literal(_unquote(string)))
        pos = m.end()
    return values
