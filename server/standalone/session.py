"""Per-connection write state of the standalone primary.

The flags MariaDB keeps per session (skip_replication, sql_log_bin, autocommit, the default database, user
variables, sql_mode, charsets...) live in the SQL surface's `SessionState`, which validates and answers them
(`SELECT @@skip_replication`, the 1929 / 1238 / 1694 errors). This holds what only a writer needs: the open
transaction's events, its xid, the RAND seeds a client set, LAST_INSERT_ID() when it is known, the connection's
handshake collation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .logger import Ev, Group, QueryContext
from .prepared import Prepared


@dataclass
class WriteSession:
    thread_id: int  # the connection id: the Query events' thread_id
    handshake_collation: int = 45  # collation id the client sent in its handshake (utf8mb4_general_ci by default)
    events: list[Ev] = field(default_factory=list)  # the open transaction's events, in statement order
    xid: int | None = None  # query id of the transaction's first logged statement
    statements: list[str] = field(default_factory=list)
    # LAST_INSERT_ID(): 0 on a new connection; unknown (None) once the session inserted (an auto-increment id may
    # have been generated, and binlogd has no table to know it)
    last_insert_id: int | None = 0
    # the last QueryContext built for a statement that does not read the clock, with what it was built from
    # (the session's SET variables, database): the next statement of an unchanged session reuses it
    context_cache: tuple[object, QueryContext] | None = None
    prepared: dict[str, Prepared] = field(default_factory=dict)  # SQL PREPARE name -> statement (lower-case names)
    # autocommit DML shapes this session logged -> their Query body up to the text, valid while `ready_stamp` (the
    # session's SET variables, database and the catalogue's epoch) is unchanged (StandaloneSource.start)
    ready: dict[tuple[bool, bool, str], bytes] = field(default_factory=dict)
    ready_stamp: tuple[dict[str, object], str | None, int] | None = None

    @property
    def in_trx(self) -> bool:
        return bool(self.events)

    def add(self, events: list[Ev], query_id: int, sql: str) -> None:
        """Buffer a statement of the open transaction (written at COMMIT, dropped at ROLLBACK)."""
        if self.xid is None:
            self.xid = query_id
        self.events.extend(events)
        self.statements.append(sql)

    def take(self, timestamp: int, skip: bool) -> Group | None:
        """The open transaction as a group to commit (None when it logged nothing); the buffer is emptied."""
        if not self.events:
            self.discard()
            return None
        g = Group(ddl=False, events=self.events, timestamp=timestamp, skip=skip, xid=self.xid, info=self.statements)
        self.events, self.xid, self.statements = [], None, []
        return g

    def discard(self) -> None:
        self.events, self.xid, self.statements = [], None, []
