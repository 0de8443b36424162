"""Tables-info: which tables a statement touches, and the ignorable binlog event that carries the list.

Seed WL#40 ("add table names to the binlog", MariaDB worklog 40, option 2.5 `--binlog-with-tables-info`)
wanted statement-format events to say which tables they change, so that tools without a SQL parser
(mariadb-binlog filters, replica-side table filters) can filter them. WL#40 extended the Query event
itself; binlogd instead writes a separate event *before* each statement's QUERY event, marked
ignorable (MySQL WL#4033, header flag LOG_EVENT_IGNORABLE_F 0x80), so that every existing reader skips
it without knowing it: a real MariaDB replica's IO thread drops ignorable events before the relay log,
`mariadb-binlog` prints them as "# Ignorable event type 159".

Two public parts, both pure:

* `tables_of_statement(sql, default_db)`: the (db, table) pairs of one SQL statement, by the seed's
  rules (see the function). Also used by the applier for replication filters of statement events.
* the event codec: `TablesInfoBody`, `encode_tables_info` / `parse_tables_info`, and
  `tables_info_event` building a whole event through `protocol.events.build_event`.

Type code. MySQL uses codes 0..42 (42 = GTID_TAGGED_LOG_EVENT, 8.4) and grows upwards from there;
MariaDB starts its own at 160 (MARIA_EVENTS_BEGIN) and uses 160..172 (172 = PARTIAL_ROW_DATA_EVENT,
MariaDB 12.3, MDEV-32570), also growing upwards. Appending 172 to the FDE would collide with 12.3, and
173 is the very next code MariaDB will hand out. 159 is the top of the gap 43..159 that MariaDB's enum
leaves for MySQL (MYSQL_EVENTS_END .. MARIA_EVENTS_BEGIN), the code MySQL would reach last: no MariaDB
or MySQL version uses it. A MariaDB reader rejects any type above the FDE's number of event types
(log_event.cc read_log_event), so the type must be inside the FDE's post-header array: it is (the
10.11 array has 171 entries), and a writer with the option *declares* it by writing its post-header
length (6) into entry 159, where MariaDB writes 0 (`declare_in_fde`). Readers that know nothing about
the event still skip it by its length.

Layout (little-endian):

  post-header (6 bytes)  u8 version (1), u8 flags (0, reserved), u32 table_count
  body                   u8 default_db_len, default_db (the statement's current database, may be empty)
                         table_count x { u8 db_len, db, u8 table_len, table }   db_len 0 = the default db

The post-header is 6 bytes rather than 2 so that the smallest event (no default db, no tables) still
has the 25 data bytes MariaDB's same-length dummy needs (capability < 2 replicas get a dummy).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import construct as cs
import sqlglot
from binlogd.protocol.constants import LOG_EVENT_IGNORABLE_F
from binlogd.protocol.events import (
    MARIADB_10_11_POST_HEADER_LENGTHS,
    EventDecodeError,
    FormatDescriptionBody,
    build_event,
)
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

log = logging.getLogger("binlogd.tables_info")

TABLES_INFO_EVENT: Final = 159
TABLES_INFO_HEADER_LEN: Final = 6  # the post-header length declared in the FDE
TABLES_INFO_VERSION: Final = 1
TABLES_INFO_NAME: Final = "Tables_info"  # SHOW BINLOG EVENTS Event_type

TableName = tuple[str | None, str]  # (database or None when unqualified without a default database, table)


class TablesInfoError(ValueError):
    """The statement cannot be parsed, or its tables cannot be known from its text."""


# --- which tables a statement touches --------------------------------------------------------------------

_DIALECT: Final = MySQL()
_NO_TABLE_KINDS: Final = frozenset({"DATABASE", "SCHEMA", "FUNCTION", "PROCEDURE", "USER", "ROLE"})


def tables_of_statement(sql: str, default_db: str | None) -> list[TableName]:
    """The tables one statement reads or writes, in order of first mention, without duplicates.

    Unqualified names are resolved to `default_db` (None when there is none). Rules (seed WL#40):

    * DML (INSERT/REPLACE/UPDATE/DELETE, also multi-table forms, joins, subqueries, INSERT ... SELECT):
      every base table named anywhere in the statement; CTE names and aliases are not tables.
    * CREATE TABLE ... LIKE src / ... SELECT ...: the new table, then the sources.
    * RENAME TABLE chains: the tables that exist before or after the statement. A name that is created
      by one step and renamed away by a later one (the `tmp` of t1->tmp, t2->t1, tmp->t2) is not listed.
    * ALTER TABLE t ... RENAME [TO] u: t and u. DROP TABLE / TRUNCATE: the tables listed.
    * CREATE/DROP INDEX: the table. Views count as tables (a view is in the table namespace). The parent
      table of a FOREIGN KEY ... REFERENCES is not listed.
    * Statements without tables (CREATE/DROP DATABASE, SET, BEGIN, ...) give an empty list.

    Raises TablesInfoError for text that is not one parseable statement.
    """
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise TablesInfoError("empty statement")
    text = _MODIFIERS.sub(r"\1", text, count=1)
    verb = text.split(None, 1)[0].upper()
    if verb in ("RENAME", "REPLACE"):  # sqlglot's MySQL dialect parses neither (it would warn and give up)
        return _tables_of_command(exp.Command(this=verb, expression=exp.Literal.string(text[len(verb):])),
                                  default_db)
    try:
        parsed = [e for e in sqlglot.parse(text, dialect=_DIALECT) if e is not None]
    except SqlglotError as e:
        raise TablesInfoError(f"cannot parse statement: {str(e).splitlines()[0]}") from None
    if len(parsed) != 1:
        raise TablesInfoError(f"expected one statement, got {len(parsed)}")
    return tables_of_expression(parsed[0], default_db)


# DML modifiers that change no table (sqlglot's MySQL grammar knows only some of them): dropped before parsing
_MODIFIERS: Final = re.compile(
    r"^(INSERT|REPLACE|UPDATE|DELETE)(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|QUICK|IGNORE)\b)+", re.I)


def tables_of_expression(tree: exp.Expression, default_db: str | None) -> list[TableName]:
    """`tables_of_statement` for a statement sqlglot already parsed (MySQL dialect): callers that
    classify the statement anyway parse it once."""
    if isinstance(tree, exp.Command):
        return _tables_of_command(tree, default_db)
    if isinstance(tree, exp.Create | exp.Drop) and str(tree.args.get("kind") or "").upper() in _NO_TABLE_KINDS:
        return []
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind") or "").upper() == "INDEX":
        on = tree.args.get("cluster")
        target = on.this if isinstance(on, exp.OnProperty) else None
        return _unique(_qualify(t, default_db) for t in [target] if isinstance(t, exp.Table))
    return _unique(_qualify(t, default_db) for t in _base_tables(tree))


def _base_tables(tree: exp.Expression) -> list[exp.Table]:
    """Every exp.Table node naming a real table: not a CTE, not an alias reference, not JSON_TABLE(), not the
    parent of a FOREIGN KEY (MariaDB's replication filters do not count it among the statement's tables)."""
    tables: list[exp.Table] = []
    ctes: set[str] = set()
    for node in tree.find_all(exp.Table, exp.CTE):  # one walk: this runs for every logged statement
        if isinstance(node, exp.CTE):
            ctes.add(node.alias_or_name)
        elif isinstance(node.this, exp.Identifier) and node.name and not node.find_ancestor(exp.Reference):
            tables.append(node)
    skip: set[int] = set()
    if isinstance(tree, exp.Delete):  # DELETE a, b FROM t1 AS a JOIN t2 AS b: a and b are aliases
        aliases = {t.alias for t in tables if t.alias}
        skip = {id(t) for t in tree.args.get("tables") or [] if not t.db and t.name in aliases}
    out = [t for t in tables if id(t) not in skip and (t.db or t.name not in ctes)]
    return sorted(out, key=_position)


def _position(t: exp.Table) -> int:
    """Source order: sqlglot keeps token positions on identifiers; the DFS order breaks ties."""
    meta = t.this.meta if isinstance(t.this, exp.Identifier) else {}
    return int(meta.get("start", 0))


def _qualify(t: exp.Table, default_db: str | None) -> TableName:
    return (t.db or default_db, t.name)


def _unique(names: Iterable[TableName]) -> list[TableName]:
    return list(dict.fromkeys(names))


def _tables_of_command(tree: exp.Command, default_db: str | None) -> list[TableName]:
    """sqlglot's MySQL dialect leaves RENAME TABLE and REPLACE unparsed (exp.Command)."""
    verb = str(tree.this).upper()
    rest = tree.expression.name if isinstance(tree.expression, exp.Literal) else ""
    if verb == "REPLACE":  # same grammar as INSERT
        try:
            insert = sqlglot.parse_one("INSERT " + rest, dialect=_DIALECT)
        except SqlglotError as e:
            raise TablesInfoError(f"cannot parse REPLACE: {str(e).splitlines()[0]}") from None
        return tables_of_expression(insert, default_db)
    if verb == "RENAME":
        return _rename_chain(_rename_pairs(rest), default_db)
    raise TablesInfoError(f"cannot tell the tables of a {verb} statement")


def _rename_pairs(rest: str) -> list[tuple[TableName, TableName]]:
    """Parse `TABLE[S] [IF EXISTS] a [WAIT n|NOWAIT] TO b [, c TO d ...]` (MariaDB's RENAME TABLE)."""
    try:
        tokens = [t for t in _DIALECT.tokenize(rest) if t.token_type != TokenType.SEMICOLON]
    except SqlglotError as e:
        raise TablesInfoError(f"cannot parse RENAME TABLE: {e}") from None
    words = [(t.token_type, t.text) for t in tokens]
    i = 0

    def word(k: int) -> str:
        return words[k][1].upper() if k < len(words) and words[k][0] != TokenType.IDENTIFIER else ""

    def name() -> TableName:
        nonlocal i
        parts: list[str] = []
        while True:
            if i >= len(words) or words[i][0] in (TokenType.COMMA, TokenType.DOT):
                raise TablesInfoError("RENAME TABLE: table name expected")
            parts.append(words[i][1])
            i += 1
            if i < len(words) and words[i][0] == TokenType.DOT:
                i += 1
                continue
            break
        if len(parts) > 2:
            raise TablesInfoError(f"RENAME TABLE: bad name {'.'.join(parts)!r}")
        return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])

    if word(i) not in ("TABLE", "TABLES"):
        raise TablesInfoError("only RENAME TABLE names tables")
    i += 1
    if word(i) == "IF" and word(i + 1) == "EXISTS":
        i += 2
    pairs = []
    while True:
        src = name()
        if word(i) == "WAIT":
            i += 2
        elif word(i) == "NOWAIT":
            i += 1
        if word(i) != "TO":
            raise TablesInfoError("RENAME TABLE: TO expected")
        i += 1
        pairs.append((src, name()))
        if i == len(words):
            return pairs
        if words[i][0] != TokenType.COMMA:
            raise TablesInfoError(f"RENAME TABLE: unexpected {words[i][1]!r}")
        i += 1


def _rename_chain(pairs: Sequence[tuple[TableName, TableName]], default_db: str | None) -> list[TableName]:
    """Sources that existed before the statement, then targets that still exist after it."""
    listed: list[TableName] = []
    created: list[TableName] = []  # names made by an earlier step of this statement, still present
    for raw_src, raw_dst in pairs:
        src = (raw_src[0] or default_db, raw_src[1])
        dst = (raw_dst[0] or default_db, raw_dst[1])
        if src in created:
            created.remove(src)  # an intermediate name renamed away again
        else:
            listed.append(src)
        created.append(dst)
    return _unique([*listed, *created])


# --- the event ---------------------------------------------------------------------------------------------

_NAME8 = cs.PascalString(cs.Int8ul, "utf8")
_TABLES_INFO = cs.Struct(
    "version" / cs.Int8ul,
    "flags" / cs.Int8ul,
    "count" / cs.Int32ul,
    "default_db" / _NAME8,
    "tables" / cs.Array(cs.this.count, cs.Struct("db" / _NAME8, "table" / _NAME8)),
    cs.Terminated,
)


@dataclass(frozen=True, slots=True)
class TablesInfoBody:
    """The decoded event. `tables` are resolved: a db_len 0 entry carries `default_db` (None if empty).

    `relative` is the same list as written: None for the db_len 0 (default database) entries, for consumers that
    resolve unqualified names themselves (a replica applying replicate-rewrite-db resolves them to the rewritten
    database, as MariaDB does). The list names every table the statement touches, read-only ones included (the
    seed's rule); MariaDB's replication table filters look only at the tables a statement changes.
    """

    default_db: str | None
    tables: tuple[TableName, ...]
    version: int = TABLES_INFO_VERSION
    flags: int = 0
    relative: tuple[TableName, ...] = ()


def _name8(name: str) -> bytes:
    raw = name.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"cannot encode tables info: name of {len(raw)} bytes (at most 255): {name[:40]!r}...")
    return bytes((len(raw),)) + raw


def encode_tables_info(tables: Sequence[TableName], default_db: str | None) -> bytes:
    """Post-header + body. A table in `default_db` (or with db None) is written with db_len 0.

    Built by hand (this runs for every logged statement; construct's build costs ~50 µs); tests check it is
    byte-identical to `_TABLES_INFO.build`, the layout's reference."""
    out = [TABLES_INFO_VERSION.to_bytes(1, "little"), b"\0", len(tables).to_bytes(4, "little"),
           _name8(default_db or "")]
    for db, table in tables:
        if not table or db == "":
            raise ValueError(f"table names and database names must not be empty: {(db, table)!r}")
        out.append(_name8("" if db is None or db == default_db else db))
        out.append(_name8(table))
    return b"".join(out)


def parse_tables_info(body: bytes) -> TablesInfoBody:
    """Decode the event body (after the 19-byte header, without the CRC)."""
    try:
        raw = _TABLES_INFO.parse(body)
    except (cs.ConstructError, UnicodeDecodeError) as e:
        raise EventDecodeError(f"Tables_info: {e}".replace("\n", " ")) from None
    if raw.version != TABLES_INFO_VERSION:
        raise EventDecodeError(f"Tables_info: unknown version {raw.version}")
    default = raw.default_db or None
    tables = tuple((t.db or default, t.table) for t in raw.tables)
    relative = tuple((t.db or None, t.table) for t in raw.tables)
    return TablesInfoBody(default, tables, raw.version, raw.flags, relative)


def tables_info_event(
    tables: Sequence[TableName],
    default_db: str | None,
    *,
    checksum: bool,
    server_id: int,
    timestamp: int = 0,
    log_pos: int = 0,
    flags: int = 0,
) -> bytes:
    """The whole event (header with LOG_EVENT_IGNORABLE_F added to `flags`, body, CRC when `checksum`)."""
    return build_event(
        type_code=TABLES_INFO_EVENT, body=encode_tables_info(tables, default_db), checksum=checksum,
        timestamp=timestamp, server_id=server_id, log_pos=log_pos, flags=flags | LOG_EVENT_IGNORABLE_F,
    )


# --- the single-table DML fast path ---------------------------------------------------------------------------
# Most logged statements are `INSERT INTO t ... VALUES`, `UPDATE t SET ... WHERE`, `DELETE FROM t WHERE` with
# literals. For those the table is the name after the verb, and a full sqlglot parse (~0.5 ms, the largest cost
# of `--binlog-with-tables-info`) is not needed. The fast path answers only when, outside string literals, the
# statement has no comment, no second statement, no other place a table can be named (SELECT, JOIN, FROM after
# the target, USING, WITH, TABLE, a comma-separated target list) and the name is not a keyword; otherwise None
# and the parser decides. It does not validate the statement: it is for text the classifier already accepted.

_IDENT_RE = r"(?:`(?:[^`]|``)+`|[A-Za-z_$][A-Za-z0-9_$]*)"
_NAME_RE = rf"(?P<a>{_IDENT_RE})(?:\s*\.\s*(?P<b>{_IDENT_RE}))?"
_FAST_HEADS = (
    re.compile(rf"(?:INSERT|REPLACE)(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE))*\s+(?:INTO\s+)?{_NAME_RE}"
               r"\s*(?:\(|VALUES?\b|SET\b)", re.I),
    re.compile(rf"UPDATE(?:\s+(?:LOW_PRIORITY|IGNORE))*\s+{_NAME_RE}\s+SET\b", re.I),
    re.compile(rf"DELETE(?:\s+(?:LOW_PRIORITY|QUICK|IGNORE))*\s+FROM\s+{_NAME_RE}\s*(?:$|WHERE\b|ORDER\b|LIMIT\b)",
               re.I),
)
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_OTHER_TABLES = re.compile(r"/\*|--|#|;|\b(?:SELECT|JOIN|FROM|USING|WITH|TABLE|VALUES\s*\(\s*SELECT)\b", re.I)
_KEYWORDS = frozenset({"SELECT", "VALUES", "VALUE", "SET", "FROM", "WHERE", "INTO", "TABLE", "LOW_PRIORITY",
                       "DELAYED", "HIGH_PRIORITY", "IGNORE", "QUICK", "ORDER", "LIMIT", "JOIN", "USING", "WITH",
                       "DUAL", "DEFAULT", "PARTITION"})


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def _fast_simple_dml(text: str, default_db: str | None) -> list[TableName] | None:
    for head in _FAST_HEADS:
        m = head.match(text)
        if m is not None:
            break
    else:
        return None
    if "\\" in text:  # backslash escapes depend on sql_mode (NO_BACKSLASH_ESCAPES): leave it to the parser
        return None
    rest = _STRINGS.sub("''", text[m.end() :])
    if "'" in rest.replace("''", "") or any(c in rest for c in "\"`\\") or _OTHER_TABLES.search(rest):
        return None
    parts = [p for p in (m.group("a"), m.group("b")) if p is not None]
    if any(not p.startswith("`") and p.upper() in _KEYWORDS for p in parts):
        return None
    names = [_unquote(p) for p in parts]
    return [(names[0], names[1])] if len(names) == 2 else [(default_db, names[0])]


def simple_dml_tables(sql: str, default_db: str | None) -> list[TableName] | None:
    """The table of a simple single-table INSERT/UPDATE/DELETE without parsing (the fast path above), or None when
    the statement needs the parser (`tables_of_statement`)."""
    return _fast_simple_dml(sql.strip().rstrip(";").strip(), default_db)


def tables_info_hook(sql: str, default_db: str | None) -> tuple[int, bytes] | None:
    """The standalone logger's `--binlog-with-tables-info` hook (server/standalone/logger.py TablesInfoHook):
    (type code, body) of the event to write before the statement's Query. `sql` is a statement the standalone
    classifier accepted.

    None (no event) when the tables cannot be told from the text: an event with an empty list would claim
    the statement touches no table, which filters would trust.
    """
    try:
        text = sql.strip().rstrip(";").strip()
        tables = _fast_simple_dml(text, default_db)
        if tables is None:
            tables = tables_of_statement(text, default_db)
        return TABLES_INFO_EVENT, encode_tables_info(tables, default_db)
    except ValueError as e:  # TablesInfoError, or a name too long for the format
        log.warning("no Tables_info event for %.200r: %s", sql, e)
        return None


def declare_post_header_lengths(lengths: bytes = MARIADB_10_11_POST_HEADER_LENGTHS) -> bytes:
    """An FDE post-header table (entry i = type i+1) with entry 159 set to TABLES_INFO_HEADER_LEN, extended with
    zeros first if it is too short: what a writer with `--binlog-with-tables-info` puts in its FDE."""
    out = bytearray(lengths)
    if len(out) < TABLES_INFO_EVENT:
        out.extend(bytes(TABLES_INFO_EVENT - len(out)))
    out[TABLES_INFO_EVENT - 1] = TABLES_INFO_HEADER_LEN
    return bytes(out)


def declare_in_fde(fde: FormatDescriptionBody) -> FormatDescriptionBody:
    """`fde` with the type declared in its post-header table (`declare_post_header_lengths`)."""
    return FormatDescriptionBody(fde.binlog_version, fde.server_version, fde.create_timestamp, fde.header_len,
                                 declare_post_header_lengths(fde.post_header_lengths), fde.checksum_alg)


def format_tables(info: TablesInfoBody) -> str:
    """SHOW BINLOG EVENTS Info: `db`.`t1`, `db`.`t2` (a table without any database: `t1`)."""
    def q(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"
    return ", ".join(q(t) if db is None else f"{q(db)}.{q(t)}" for db, t in info.tables)
