"""What a client statement is to the standalone primary: logged (DML, DDL), a binlog command, or none of ours.

sqlglot (which mysql-mimic brings) parses the statements binlogd logs, to refuse invalid SQL with MariaDB's
1064 before anything is written and to find what the statement reads: user variables (USER_VAR events),
RAND() without a seed (RAND event), LAST_INSERT_ID() (INTVAR event), the clock (time zone / microseconds status
variables) and unqualified table names (1046 without a default database); the same parse gives the schema
catalogue what it checks (DDL trees, DML plans cached by statement shape: `schema.py`). Everything that is not a
write goes to the read-only SQL surface (`server.sql_surface`), which answers or refuses it exactly as before.

Refused writes (1235 "This version of binlogd doesn't yet support ..."): temporary tables (they live in the
replica's applier thread and need per-thread state binlogd does not keep), LOAD DATA (file events), and, through
the SQL surface, accounts and privileges (GRANT, REVOKE, CREATE/DROP/ALTER/RENAME USER, roles), views, triggers,
stored routines and events (their DEFINER needs an account database), XA, savepoints, LOCK TABLES, HANDLER, CALL.
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass

import sqlglot
from binlogd.protocol.constants import ER_NO_DB_ERROR, ER_PARSE_ERROR
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..sql_surface import SqlError, not_supported
from .schema import DmlPlan, dml_plan

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to Command" is expected for some DDL

# literals (strings, numbers) and, kept verbatim, quoted identifiers: a statement's shape is its text with every
# literal replaced by a placeholder of its kind (statements with comments are not shaped). Every branch starts with
# the one character class, so the regex engine skips the characters that cannot start a literal in C (the number's
# "no word character before it" is the lookbehind over two characters); tests/test_standalone_units.py checks it
# against the plain alternation it replaces.
# A number right after a word character, `$`, `@` (a user variable `@1`) or `.` (a column `t.1e5`) is part of a
# name, not a literal.
_LITERAL = re.compile(r"[`'\"\d.](?:(?<=`)(?:[^`]|``)*`|(?<=')(?:[^'\\]|\\[\s\S]|'')*'|"
                      r"(?<=\")(?:[^\"\\]|\\[\s\S]|\"\")*\"|(?<![\w$@.].)(?:(?<=0)x[0-9a-fA-F]+|"
                      r"(?<=\d)\d*(?:\.\d*)?(?:[eE][+-]?\d+)?|(?<=\.)\d+(?:[eE][+-]?\d+)?)(?![\w$]))")
# The same shape without a Python call per literal, for text without backquotes (whose names `_LITERAL` keeps
# verbatim): strings become \x01, then numbers \x02 (`_LITERAL`'s branches; tests/test_standalone_units.py checks
# that the two give the same shape with the markers mapped). Text holding a marker is not shaped.
_STRING = re.compile(r"['\"](?:(?<=')(?:[^'\\]|\\[\s\S]|'')*'|(?<=\")(?:[^\"\\]|\\[\s\S]|\"\")*\")")
_NUMBER = re.compile(r"[\d.](?<![\w$@.].)(?:(?<=0)x[0-9a-fA-F]+|(?<=\d)\d*(?:\.\d*)?(?:[eE][+-]?\d+)?|"
                     r"(?<=\.)\d+(?:[eE][+-]?\d+)?)(?![\w$])")
_QUOTED_VAR = re.compile(r"@['\"]")  # @'name': a user variable whose name is quoted like a string


def _shape_of(m: re.Match[str]) -> str:
    text = m.group(0)
    first = text[0]
    if first == "`":
        return text
    return "'?'" if first in "'\"" else "0"


# statement shape -> (user_vars, uses_rand, uses_last_insert_id, uses_clock, schema plan); event loop only
_SHAPES: dict[tuple[bool, bool, str], tuple[tuple[str, ...], bool, bool, bool, DmlPlan | None]] = {}
_SHAPES_MAX = 4096
_SYNTAX = ("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server "
           "version for the right syntax to use near '{near}' at line {line}")


class Kind(enum.Enum):
    DML = "dml"  # INSERT / REPLACE / UPDATE / DELETE: part of a transaction
    DDL = "ddl"  # table-level DDL: a standalone group
    DB_DDL = "db_ddl"  # CREATE / ALTER / DROP DATABASE: a standalone group logged with the database as db
    FLUSH_LOGS = "flush_logs"  # FLUSH [BINARY] LOGS: rotate
    PURGE = "purge"  # PURGE BINARY LOGS TO / BEFORE
    BEGIN = "begin"  # BEGIN / START TRANSACTION (the SQL surface checks the syntax)
    COMMIT = "commit"
    ROLLBACK = "rollback"
    USE = "use"
    OTHER = "other"  # everything else: the SQL surface


@dataclass(frozen=True, slots=True)
class Statement:
    kind: Kind
    sql: str
    user_vars: tuple[str, ...] = ()  # lower-case names, first reference first
    uses_rand: bool = False  # RAND() without a seed
    uses_last_insert_id: bool = False  # LAST_INSERT_ID() without an argument
    uses_clock: bool = False  # NOW(), CURRENT_TIMESTAMP, UNIX_TIMESTAMP(), ...
    database: str | None = None  # DB_DDL: the database; USE: the new default
    ddl_xid: bool = False  # table DDL that MariaDB logs with Q_XID
    thread_specific: bool = False  # DROP TABLE / DROP DATABASE: header flag THREAD_SPECIFIC
    purge_to: str | None = None
    purge_before: str | None = None
    tree: exp.Expression | None = None  # DDL: the parse, for the schema catalogue (server/standalone/schema.py)
    plan: DmlPlan | None = None  # DML: what the schema check needs (cached with the statement's shape)


_COMMENT = re.compile(r"\s+|--[ \t][^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*(?![!M])[\s\S]*?\*/")
_WORD = re.compile(r"[A-Za-z_]+")
_DML_VERB = re.compile(r"(?:INSERT|REPLACE|UPDATE|DELETE)(?![A-Za-z_])", re.I)  # words[0] of a DML statement
_CLOCK = frozenset({"NOW", "CURRENT_TIMESTAMP", "SYSDATE", "CURDATE", "CURRENT_DATE", "CURTIME", "CURRENT_TIME",
                    "LOCALTIME", "LOCALTIMESTAMP", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "UNIX_TIMESTAMP",
                    "FROM_UNIXTIME"})
_CLOCK_NODES = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.UnixToTime, exp.TimeToUnix, exp.StrToUnix)
_DB_WORDS = frozenset({"DATABASE", "SCHEMA"})
_TABLE_DDL = {("CREATE", "TABLE"), ("ALTER", "TABLE"), ("DROP", "TABLE"), ("RENAME", "TABLE"), ("CREATE", "INDEX"),
              ("DROP", "INDEX"), ("CREATE", "SEQUENCE"), ("DROP", "SEQUENCE"), ("ALTER", "SEQUENCE"),
              ("TRUNCATE", "TABLE")}
_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$\x80-\U0010ffff]+)"
_PURGE = re.compile(
    r"PURGE\s+(?:BINARY|MASTER)\s+LOGS\s+(TO|BEFORE)\s+(?:'((?:[^'\\]|\\.|'')*)'|\"([^\"]*)\")\s*;?\s*$", re.I | re.S)
_DB_NAME = re.compile(rf"(?:CREATE|DROP|ALTER)\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?({_IDENT})", re.I)


def _strip(sql: str) -> str:
    """The statement without leading whitespace and comments, and without trailing ';' / whitespace."""
    i = 0
    while True:
        m = _COMMENT.match(sql, i)
        if m is None or m.end() == i:
            break
        i = m.end()
    return sql[i:].rstrip().rstrip(";").rstrip()


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def syntax_error(sql: str, pos: int) -> SqlError:
    """MariaDB's 1064 for an error at character `pos` of `sql` (its line number, 80 characters of context)."""
    pos = max(0, min(pos, len(sql)))
    return SqlError(ER_PARSE_ERROR, _SYNTAX.format(near=sql[pos : pos + 80], line=sql.count("\n", 0, pos) + 1))


def _parse(sql: str) -> exp.Expression:
    try:
        trees = [t for t in sqlglot.parse(sql, read="mysql") if t is not None]
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        line, col = int(err.get("line", 1) or 1), int(err.get("col", 0) or 0)
        starts = [0] + [m.end() for m in re.finditer("\n", sql)]
        raise syntax_error(sql, starts[min(line, len(starts)) - 1] + col) from None
    except TokenError:
        raise syntax_error(sql, 0) from None
    except RecursionError:  # nesting deeper than Python's stack: MariaDB's parser stack overflows too
        raise SqlError(ER_PARSE_ERROR, _SYNTAX.replace("You have an error in your SQL syntax; check the manual that "
                       "corresponds to your MariaDB server version for the right syntax to use", "memory exhausted")
                       .format(near=sql[:80], line=1)) from None
    if len(trees) != 1:
        raise syntax_error(sql, sql.find(";") + 1 if ";" in sql else len(sql))
    return trees[0]


def _reads(tree: exp.Expression) -> tuple[tuple[str, ...], bool, bool, bool]:
    names: list[str] = []
    rand = last_id = clock = False
    for node in tree.walk(bfs=False):  # depth first: textual order, the order MariaDB logs user variables in
        if isinstance(node, exp.Parameter):
            name = node.name.lower()
            if name and name not in names:
                names.append(name)
        elif isinstance(node, exp.Rand):
            rand = rand or node.this is None
        elif isinstance(node, exp.Anonymous):
            fname = str(node.this).upper()
            if fname == "LAST_INSERT_ID" and not node.expressions:
                last_id = True
            clock = clock or fname in _CLOCK
        elif isinstance(node, _CLOCK_NODES) or (isinstance(node, exp.Func) and node.sql_name() in _CLOCK):
            clock = True
    return tuple(names), rand, last_id, clock


_DELETE = re.compile(r"DELETE\s+(?:(?:LOW_PRIORITY|QUICK|IGNORE)\s+)*(?:FROM\b|[\s\S]+?\b(?:FROM|USING)\b)", re.I)


_MODIFIERS = re.compile(
    r"^(INSERT|REPLACE|UPDATE|DELETE)((?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|QUICK|IGNORE)\b)*)", re.I)


def _for_sqlglot(text: str) -> str:
    """The statement as sqlglot's MySQL grammar takes it, same length (error positions stay right): REPLACE parsed
    as INSERT, the priority / IGNORE modifiers (which change nothing binlogd extracts) blanked."""
    m = _MODIFIERS.match(text)
    if m is None or (not m.group(2) and m.group(1)[0] in "IUDiud"):  # (no copy for what sqlglot takes as it is)
        return text
    verb = "INSERT " if m.group(1).upper() == "REPLACE" else m.group(1)
    return verb + " " * len(m.group(2)) + text[m.end() :]


def _check_dml_shape(tree: exp.Expression, text: str) -> None:
    """What sqlglot's lenient parser lets through but MariaDB's grammar refuses (1064 at the end of the text)."""
    bad = False
    if isinstance(tree, exp.Update):
        bad = not tree.expressions
    elif isinstance(tree, exp.Insert):
        src = tree.expression
        bad = src is None or (isinstance(src, exp.Values) and bool(src.alias))
    elif isinstance(tree, exp.Delete):
        bad = _DELETE.match(text) is None
    bad = bad or any(not s.expressions for s in tree.find_all(exp.Select))
    if bad:
        raise syntax_error(text, len(text))


def _needs_db(tree: exp.Expression) -> bool:
    """Does the statement name a table without a database (1046 when there is no default database)?"""
    tables = list(tree.find_all(exp.Table))
    # CTE names and aliases (the targets of a multi-table DELETE) are not tables of a database
    local = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)} | {t.alias.lower() for t in tables if t.alias}
    return any(t.name and not t.db and t.name.lower() not in local for t in tables)


def _rename_needs_db(text: str) -> bool:
    body = re.sub(r"^RENAME\s+TABLES?\s+", "", text, flags=re.I)
    for part in re.split(r"\s*,\s*|\s+TO\s+", body, flags=re.I):
        if part and not re.fullmatch(rf"{_IDENT}\s*\.\s*{_IDENT}", part.strip()):
            return True
    return False


def classify(sql: str, default_db: str | None) -> Statement:
    """Classify one statement; raises SqlError (1064, 1046, 1235) for what must not be logged."""
    text = _strip(sql)
    if _DML_VERB.match(text) is not None:  # the write load's statements: routed as below, without the word scan
        return _dml(text, sql, default_db)
    words = [w.upper() for w in _WORD.findall(text[:120])[:4]]
    if not words or not text[:1].isalpha():
        return Statement(Kind.OTHER, sql)
    verb = words[0]
    second = words[1] if len(words) > 1 else ""
    if verb in ("BEGIN", "START") and (verb == "BEGIN" or second == "TRANSACTION"):
        return Statement(Kind.BEGIN, sql)
    if verb in ("COMMIT", "ROLLBACK"):
        return Statement(Kind.COMMIT if verb == "COMMIT" else Kind.ROLLBACK, sql)
    if verb == "USE":
        m = re.fullmatch(rf"USE\s+({_IDENT})", text, re.I | re.S)
        if m is None:
            return Statement(Kind.OTHER, sql)  # the SQL surface reports the syntax error
        return Statement(Kind.USE, sql, database=_unquote(m.group(1)))
    if verb == "FLUSH":
        rest = [w for w in words[1:] if w not in ("NO_WRITE_TO_BINLOG", "LOCAL")]
        if rest[:2] == ["BINARY", "LOGS"] or rest == ["LOGS"]:
            if re.fullmatch(r"FLUSH\s+(?:(?:NO_WRITE_TO_BINLOG|LOCAL)\s+)?(?:BINARY\s+)?LOGS", text, re.I):
                return Statement(Kind.FLUSH_LOGS, sql)
            raise syntax_error(text, len(text))
        return Statement(Kind.OTHER, sql)
    if verb == "PURGE" and second in ("BINARY", "MASTER"):
        m = _PURGE.fullmatch(text)
        if m is None:
            if re.match(r"PURGE\s+(?:BINARY|MASTER)\s+LOGS\s+BEFORE\s", text, re.I):
                raise not_supported("PURGE BINARY LOGS BEFORE with an expression (give a 'YYYY-MM-DD hh:mm:ss' string)")
            raise syntax_error(text, len(text))
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if m.group(1).upper() == "TO":
            return Statement(Kind.PURGE, sql, purge_to=value)
        return Statement(Kind.PURGE, sql, purge_before=value)
    if verb in ("INSERT", "REPLACE", "UPDATE", "DELETE"):
        return _dml(text, sql, default_db)
    if verb in ("CREATE", "ALTER", "DROP"):
        objects = [w for w in words[1:] if w not in ("OR", "REPLACE", "UNIQUE", "FULLTEXT", "SPATIAL", "ONLINE",
                                                      "IGNORE")]
        what = objects[0] if objects else ""
        if what == "TEMPORARY":
            raise not_supported(f"{verb} TEMPORARY TABLE (binlogd keeps no per-connection tables)")
        if what in _DB_WORDS:
            m = _DB_NAME.match(text)
            if m is not None:
                db = _unquote(m.group(1))
            elif verb == "ALTER" and default_db is not None:
                db = default_db
            elif verb == "ALTER":
                raise SqlError(ER_NO_DB_ERROR, "No database selected")
            else:
                raise syntax_error(text, len(text))
            if verb != "ALTER":
                _parse(text)
            return Statement(Kind.DB_DDL, sql, database=db, ddl_xid=verb == "DROP", thread_specific=verb == "DROP")
        if (verb, what) in _TABLE_DDL:
            return _table_ddl(text, sql, verb, what, default_db)
        return Statement(Kind.OTHER, sql)
    if verb in ("RENAME", "TRUNCATE") and (verb == "TRUNCATE" or second == "TABLE"):
        return _table_ddl(text, sql, verb, "TABLE", default_db)
    return Statement(Kind.OTHER, sql)


ShapeKey = tuple[bool, bool, str]
ShapeInfo = tuple[tuple[str, ...], bool, bool, bool, DmlPlan | None]


def _shape_key(src: str, default_db: str | None) -> ShapeKey | None:
    """The shape cache's key of a DML text as sqlglot takes it; None for text that is not shaped (a comment mark,
    a quoted user variable name, a control character the markers use)."""
    if "--" in src or "#" in src or "/*" in src or ("@" in src and _QUOTED_VAR.search(src) is not None):
        return None
    if "`" in src:
        return default_db is None, False, _LITERAL.sub(_shape_of, src)
    if "\x01" in src or "\x02" in src:
        return None
    return default_db is None, True, _NUMBER.sub("\x02", _STRING.sub("\x01", src))


def dml_shape(sql: str, default_db: str | None) -> ShapeKey | None:
    """The shape key of a DML statement as `classify` computes it (same strip, verb and normalisation), None when
    it is not DML or not shaped. For the standalone source's per-session cache of ready statements
    (`StandaloneSource.start`): a key it has seen there needs no classification at all."""
    text = _strip(sql)
    if _DML_VERB.match(text) is None:
        return None
    return _shape_key(_for_sqlglot(text), default_db)


def shape_info(key: ShapeKey) -> ShapeInfo | None:
    """What the shape cache holds for `key` (a shape `classify` accepted), else None."""
    return _SHAPES.get(key)


def _dml(text: str, sql: str, default_db: str | None) -> Statement:
    """DML, through a cache of statement shapes: the tokens with literal values left out decide validity and
    everything extracted, so a stream of same-shaped statements (the usual write load) is parsed once."""
    src = _for_sqlglot(text)
    key = _shape_key(src, default_db)
    if key is not None:
        hit = _SHAPES.get(key)
        if hit is not None:
            return Statement(Kind.DML, sql, *hit[:4], plan=hit[4])
    tree = _parse(src)
    if not isinstance(tree, exp.Insert | exp.Update | exp.Delete):
        raise syntax_error(text, 0)
    _check_dml_shape(tree, text)
    if default_db is None and _needs_db(tree):
        raise SqlError(ER_NO_DB_ERROR, "No database selected")
    names, rand, last_id, clock = _reads(tree)
    plan = dml_plan(tree)
    if key is not None:
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.pop(next(iter(_SHAPES)))
        _SHAPES[key] = (names, rand, last_id, clock, plan)
    return Statement(Kind.DML, sql, user_vars=names, uses_rand=rand, uses_last_insert_id=last_id, uses_clock=clock,
                     plan=plan)


def _table_ddl(text: str, sql: str, verb: str, what: str, default_db: str | None) -> Statement:
    tree = _parse(text)
    if isinstance(tree, exp.Command):  # syntax sqlglot does not model (RENAME TABLE, some ALTERs): MariaDB checks
        needs_db = _rename_needs_db(text) if verb == "RENAME" else False
    elif isinstance(tree, exp.Drop) and str(tree.args.get("kind")).upper() == "INDEX":
        on = tree.args.get("cluster")  # DROP INDEX i ON t: `i` is an index, only `t` names a table
        needs_db = on is not None and _needs_db(on)
    else:
        needs_db = _needs_db(tree)
    if default_db is None and needs_db:
        raise SqlError(ER_NO_DB_ERROR, "No database selected")
    names, rand, last_id, clock = _reads(tree)
    return Statement(Kind.DDL, sql, user_vars=names, uses_rand=rand, uses_last_insert_id=last_id, uses_clock=clock,
                     ddl_xid=verb != "TRUNCATE", thread_specific=verb == "DROP" and what == "TABLE", tree=tree)


ER_OPTION_PREVENTS_STATEMENT = 1290
READ_ONLY_TEXT = "The MariaDB server is running with the --read-only option so it cannot execute this statement"
# statements MariaDB marks CF_CHANGES_DATA that the classifier leaves to the SQL surface (accounts, views, routines)
_OTHER_WRITES = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "GRANT", "REVOKE"})


def refuse_if_write(sql: str, default_db: str | None) -> None:
    """Read-only modes (`--binlog-dir`, relay): a write gets MariaDB's 1290, as a `read_only=1` server answers a
    user without READ ONLY ADMIN. The statement is parsed first (1064 / 1046 come before 1290, as in MariaDB,
    whose parser runs before the read-only check in mysql_execute_command)."""
    stmt = classify(sql, default_db)
    write = stmt.kind in (Kind.DML, Kind.DDL, Kind.DB_DDL)
    if not write and stmt.kind is Kind.OTHER:
        words = _WORD.findall(_strip(sql)[:40])
        write = bool(words) and words[0].upper() in _OTHER_WRITES
    if write:
        raise SqlError(ER_OPTION_PREVENTS_STATEMENT, READ_ONLY_TEXT)
