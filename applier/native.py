"""Row events applied by the target itself: `BINLOG '<base64>'` statements, as `mariadb-binlog | mariadb` does.

Decoding row images value by value and writing them back as SQL text was the applier's cost per row (issue 20:
about 30 µs of Python per row change). A MariaDB target decodes and applies the very same events in C when they
come in a BINLOG statement (after the source's FORMAT_DESCRIPTION event, once per session): column types,
signedness, position mapping, MINIMAL images, foreign-key and unique-check flags, 1032/1062 errors with the
server's own texts, all exactly as its replica SQL thread would. The events go unchanged (CRC included).

Only whole statements go into one BINLOG statement (TABLE_MAPs ... the rows event with STMT_END_F), so no table
map outlives its statement in the target session. Statements that need changing (a table the filters drop, a
database `--replicate-rewrite-db` renames) or that are too large for one packet take the SQL path instead
(applier/apply.py), within the same transaction.

MariaDB's OK packet of a BINLOG statement lacks SERVER_MORE_RESULTS_EXISTS in a multi-statement query, although
the statements behind it run: applier/pipeline.py reads one result per statement by count.

Names: `native_fde`, `binlog_sql`, `STATEMENT_BYTES`, `SESSION`.
"""

from __future__ import annotations

import base64
from typing import Final

from binlogd.protocol.constants import HEADER_LEN

STATEMENT_BYTES: Final = 4 << 20  # a statement's events above this go the SQL path (max_allowed_packet: 16 MiB)
# what a BINLOG statement of row events leaves changed in the session (Rows_log_event::do_apply_event sets the
# check options from the event's flags): the applier's cached session state forgets them after one
TOUCHED: Final = ("@@session.foreign_key_checks", "@@session.unique_checks")
# the target's binlog gets the rows, not an ANNOTATE_ROWS holding the base64 text of the BINLOG statement
SESSION: Final = {"@@session.binlog_annotate_row_events": "0"}
_VERSION_AT: Final = HEADER_LEN + 2  # FDE body: binlog version (u16), server version (50 bytes)


def native_fde(raw: bytes) -> bytes | None:
    """The FDE when a MariaDB target can apply the source's row events as they are (a MariaDB or binlogd source
    writing binlog format 4), else None (their rows take the SQL path)."""
    if len(raw) < _VERSION_AT + 50 or int.from_bytes(raw[HEADER_LEN:_VERSION_AT], "little") != 4:
        return None
    return raw if b"MariaDB" in raw[_VERSION_AT:_VERSION_AT + 50] else None


def binlog_sql(events: list[bytes]) -> bytes:
    """One BINLOG statement carrying `events` (whole binlog events, back to back)."""
    return b"BINLOG '" + base64.b64encode(b"".join(events)) + b"'"
