"""The process list: SHOW [FULL] PROCESSLIST, COM_PROCESS_INFO, KILL and COM_PROCESS_KILL, as MariaDB 10.11 answers.

Recorded from a real 10.11 (tests/test_processlist.py compares the two servers):
- a user with PROCESS sees every connection, others only their own; a dump shows as `Binlog Dump`, an idle
  client as `Sleep`, a client still logging in as `unauthenticated user` / `Connect` / `login`;
- `KILL [HARD|SOFT] [CONNECTION] id` closes that connection without a packet to it (an idle client sees the socket
  close, `mariadb-binlog` "Lost connection", a replica's IO thread reconnects); of the caller's own id it answers
  1927 and closes;
- `KILL QUERY id` of a dump ends the dump as at its end (EOF: `mariadb-binlog --stop-never` exits 0); binlogd's
  other statements end before a KILL could land, so it answers OK for them; of the caller's own id: 1317;
- `KILL QUERY ID n`: 1957 (binlogd keeps no query ids); `KILL USER name`: every connection of that user, the
  caller's included (it closes after the OK), OK with their count;
- an unknown id is 1094; another user's connection without CONNECTION ADMIN 1095.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from binlogd.protocol.accounts import Priv

from .sql_surface import SqlError

ER_NO_SUCH_THREAD = 1094
ER_KILL_DENIED_ERROR = 1095
ER_QUERY_INTERRUPTED = 1317
ER_CONNECTION_KILLED = 1927
ER_NO_SUCH_QUERY = 1957

STATE_DUMP_WAITING = "Master has sent all binlog to slave; waiting for more updates"
STATE_DUMP_SENDING = "Sending binlog event to slave"


@dataclass(slots=True)
class ProcessRow:
    """One connection as SHOW PROCESSLIST shows it (`since`: monotonic start of its current command)."""

    id: int
    user: str
    host: str
    db: str | None
    command: str
    since: float
    state: str
    info: str | None


class Process(Protocol):
    """What the process list needs of a connection (server/connection.py ReplicationConnection)."""

    connection_id: int

    def process_row(self) -> ProcessRow: ...
    def process_privileges(self) -> Priv: ...
    def process_user(self) -> str | None: ...
    def kill_connection(self) -> None: ...
    def kill_query(self) -> None: ...
    def end_after_reply(self) -> None: ...


@dataclass(frozen=True)
class KillRequest:
    """A parsed KILL statement: `target` is the id expression's text, or the user name for KILL USER."""

    query: bool
    query_id: bool
    user: bool
    target: str


_KILL = re.compile(r"\s*KILL(?:\s+(?:HARD|SOFT)\b)?(?:\s+(CONNECTION|QUERY)\b)?(?:\s+(ID)\b)?(?:\s+(USER)\b)?"
                   r"\s*(.*?)[\s;]*\Z", re.IGNORECASE | re.DOTALL)
_INT = re.compile(r"[+-]?\d+\Z")


def kill_request(sql: str) -> KillRequest | None:
    """KILL's parts, None for any other statement (only a statement that starts with the word KILL)."""
    head = sql.lstrip()[:5]
    if head[:4].upper() != "KILL" or (len(head) == 5 and not head[4].isspace()):
        return None
    m = _KILL.match(sql)
    if m is None:
        return None
    kind, qid, user, rest = m.groups()
    query = kind is not None and kind.upper() == "QUERY"
    if qid is not None and not query:  # `ID` outside KILL QUERY ID is an expression naming a column
        raise SqlError(1054, f"Unknown column '{qid}' in 'KILL'", "42S22")
    if not rest:
        raise SqlError(1064, "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB "
                       f"server version for the right syntax to use near '{rest[:80]}' at line 1", "42000")
    return KillRequest(query=query, query_id=qid is not None, user=user is not None, target=rest)


def literal_id(text: str) -> int | None:
    """The id when it is a plain integer literal (the common case: no evaluation needed)."""
    return thread_id(int(text)) if _INT.match(text) else None


def thread_id(value: object) -> int:
    """An id expression's value as MariaDB reads it: NULL and non-numeric text 0, decimals rounded, negative
    numbers as unsigned 64-bit."""
    if value is None:
        return 0
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, str):
        m = re.match(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)", value)
        value = float(m.group(0)) if m else 0
    if isinstance(value, float):
        value = int(value + 0.5) if value >= 0 else -int(-value + 0.5)
    n = int(value)  # type: ignore[call-overload]
    return n % (1 << 64)


def user_name(target: str) -> str:
    """KILL USER's name without quotes or host part ('u'@'%' and u both name user u)."""
    name = target.split("@", 1)[0].strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"`":
        name = name[1:-1]
    return name


class ProcessList:
    """Every connection of the server (handshake, command phase, dumps), by connection id."""

    def __init__(self, connections: Mapping[int, Process]) -> None:
        self._connections = connections

    def rows(self, viewer_id: int) -> list[tuple[object, ...]]:
        """The connections `viewer_id` may see, in id order: (Id, User, Host, db, Command, seconds in the command
        as a float, State, Info). SHOW PROCESSLIST and information_schema.PROCESSLIST shape them
        (server/sql_surface)."""
        viewer = self._connections.get(viewer_id)
        sees_all = viewer is None or Priv.PROCESS in viewer.process_privileges()
        me = None if viewer is None else viewer.process_user()
        now = time.monotonic()
        out: list[tuple[object, ...]] = []
        for conn in sorted(list(self._connections.values()), key=lambda c: c.connection_id):
            if not sees_all and conn.process_user() != me:
                continue
            r = conn.process_row()
            out.append((r.id, r.user, r.host, r.db, r.command, max(0.0, now - r.since), r.state, r.info))
        return out

    def _target(self, killer_id: int, target: int) -> tuple[Process, Process]:
        killer = self._connections[killer_id]
        conn = self._connections.get(target)
        if conn is None:
            raise SqlError(ER_NO_SUCH_THREAD, f"Unknown thread id: {target}", "HY000")
        if (Priv.CONNECTION_ADMIN not in killer.process_privileges()
                and conn.process_user() != killer.process_user()):
            raise SqlError(ER_KILL_DENIED_ERROR, f"You are not owner of thread {target}", "HY000")
        return killer, conn

    def kill(self, killer_id: int, target: int, query: bool) -> None:
        """KILL [QUERY] target, asked by connection `killer_id` (raises MariaDB's error)."""
        killer, conn = self._target(killer_id, target)
        if conn is killer:
            if query:
                raise SqlError(ER_QUERY_INTERRUPTED, "Query execution was interrupted", "70100")
            killer.end_after_reply()
            raise SqlError(ER_CONNECTION_KILLED, "Connection was killed", "70100")
        if query:
            conn.kill_query()
        else:
            conn.kill_connection()

    def kill_user(self, killer_id: int, user: str, query: bool) -> int:
        """KILL [QUERY] USER name: how many connections were killed, the caller's own included (it closes after
        the OK). Without CONNECTION ADMIN another user's connections are 1095 for a caller with PROCESS, who can
        see them, and silently left alone for one without, as MariaDB's kill_threads_for_user does."""
        killer = self._connections[killer_id]
        privs = killer.process_privileges()
        victims = [c for c in list(self._connections.values()) if c.process_user() == user]
        if Priv.CONNECTION_ADMIN not in privs and user != killer.process_user():
            if victims and Priv.PROCESS in privs:
                raise SqlError(ER_KILL_DENIED_ERROR, f"Operation KILL USER failed for {user}@%", "HY000")
            return 0
        for conn in victims:
            if conn is killer:
                if not query:
                    killer.end_after_reply()
            elif query:
                conn.kill_query()
            else:
                conn.kill_connection()
        return len(victims)
