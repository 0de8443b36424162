"""WL40 table filters of `binlogd show`: --do-db, --ignore-db, --do-table, --ignore-table, --wild-do-table,
--wild-ignore-table, decided as a real MariaDB 10.11 replica with the matching replicate-* options decides
(protocol/repl_filters.py, the rules the applier uses too), so that replaying the filtered text gives the tables
such a replica ends with.

* Statement events: the tables the statement changes, from the Tables_info event before it when there is one
  (binlogd --binlog-with-tables-info), else from its parsed SQL (`protocol.tables_info`, the seed's rules: CREATE
  TABLE ... LIKE/SELECT decide on the new table, a RENAME chain on the tables that exist before or after it), the
  default database for the database rules. The User_var / Intvar / Rand / Tables_info events of a left-out
  statement are left out with it (they are held until their statement is decided).
* Row events: the database and table of their Table_map, so a table renamed into a filtered name is filtered from
  then on. Transaction keywords, GTIDs, XIDs and the file's own events are always kept.
* A kept statement whose default database was never created (its CREATE DATABASE left out) is printed without
  `use`: a replica runs it without that database (its names are qualified, or it would fail there too), while
  the mariadb client's `use` would stop the replay.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from binlogd.protocol.constants import (
    INTVAR_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    STMT_END_F,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
)
from binlogd.protocol.events import QueryBody, RowsBody, TableMapBody, UnknownBody
from binlogd.protocol.repl_filters import (
    ConfiguredBy,
    FilterError,
    FilterSet,
    FilterType,
    Rule,
    check_value,
    is_ddl_db,
    updated_tables,
)
from binlogd.protocol.tables_info import TABLES_INFO_EVENT, TableName, TablesInfoError, parse_tables_info

from .reader import Item
from .text import is_trans_keyword

__all__ = ["FilterError", "TableFilter", "add_filter_options", "table_filter_of"]

OPTIONS: dict[str, FilterType] = {
    "do_db": FilterType.DO_DB,
    "ignore_db": FilterType.IGNORE_DB,
    "do_table": FilterType.DO_TABLE,
    "ignore_table": FilterType.IGNORE_TABLE,
    "wild_do_table": FilterType.WILD_DO_TABLE,
    "wild_ignore_table": FilterType.WILD_IGNORE_TABLE,
}
_HELD_TYPES = frozenset({USER_VAR_EVENT, INTVAR_EVENT, RAND_EVENT, TABLES_INFO_EVENT})


def add_filter_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "table filters (seed WL40)",
        "Each may be repeated; evaluated as a MariaDB 10.11 replica evaluates the replicate-* option of the same\n"
        "name: statements by their default database and the tables they change, row events by their table.")
    g.add_argument("--do-db", action="append", default=[], metavar="DB")
    g.add_argument("--ignore-db", action="append", default=[], metavar="DB")
    g.add_argument("--do-table", action="append", default=[], metavar="DB.TABLE")
    g.add_argument("--ignore-table", action="append", default=[], metavar="DB.TABLE")
    g.add_argument("--wild-do-table", action="append", default=[], metavar="DB%.TABLE%")
    g.add_argument("--wild-ignore-table", action="append", default=[], metavar="DB%.TABLE%")


def table_filter_of(args: argparse.Namespace) -> TableFilter | None:
    """The filter the options describe (None without filter options); FilterError for a malformed value."""
    fs = FilterSet()
    for dest, ftype in OPTIONS.items():
        values = [check_value(ftype, v) for v in getattr(args, dest)]
        if values:
            fs.rules[ftype] = Rule(ftype, tuple(values), ConfiguredBy.STARTUP_OPTIONS)
    return TableFilter(fs) if fs.rules else None


@dataclass
class TableFilter:
    """Feed items in order; `feed` returns the items it can decide now, each with whether it is kept."""

    rules: FilterSet
    _held: list[Item] = field(default_factory=list)
    _tables_info: list[TableName] | None = None
    _maps: dict[int, bool] = field(default_factory=dict)
    dropped_dbs: set[bytes] = field(default_factory=set)  # databases whose CREATE DATABASE was left out

    def feed(self, item: Item, allowed: bool = True) -> list[tuple[Item, bool]]:
        """`allowed` False: the ranges already left this item out (it is passed for order and --output-binlog)."""
        t = item.event.header.type_code
        if t in _HELD_TYPES and allowed:
            if t == TABLES_INFO_EVENT and isinstance(item.event.body, UnknownBody):
                try:
                    self._tables_info = list(parse_tables_info(item.event.body.raw).relative)
                except ValueError:
                    self._tables_info = None
            self._held.append(item)
            return []
        keep = allowed and self._keep(item)
        out = [(held, keep) for held in self._held] if t in (QUERY_EVENT, QUERY_COMPRESSED_EVENT) else \
            [(held, True) for held in self._held]
        self._held.clear()
        if t in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            self._tables_info = None
        out.append((item, keep))
        return out

    def flush(self) -> list[tuple[Item, bool]]:
        out = [(held, True) for held in self._held]
        self._held.clear()
        return out

    def _keep(self, item: Item) -> bool:
        body = item.event.body
        t = item.event.header.type_code
        if isinstance(body, QueryBody) and t in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            return self._keep_statement(body)
        if t == TABLE_MAP_EVENT and isinstance(body, TableMapBody):
            keep = self.rules.apply_row_event(body.db.decode("utf-8", "replace"),
                                              body.table.decode("utf-8", "replace"))
            self._maps[body.table_id] = keep
            return keep
        if isinstance(body, RowsBody):
            keep = self._maps.get(body.table_id, True)
            if body.flags & STMT_END_F:
                self._maps.clear()
            return keep
        return True

    def _keep_statement(self, body: QueryBody) -> bool:
        if is_trans_keyword(body.query, True):
            return True
        sql = body.query.decode("utf-8", "replace")
        try:
            tables = updated_tables(sql, self._tables_info)
        except (TablesInfoError, ValueError):
            tables = self._tables_info or []
        db = body.db.decode("utf-8", "replace") or None
        ddl_db = is_ddl_db(body.query)
        keep = self.rules.apply_statement(db, tables, ddl_db)
        if ddl_db and body.query.lstrip()[:6].upper() == b"CREATE":
            (self.dropped_dbs.discard if keep else self.dropped_dbs.add)(body.db)
        return keep
