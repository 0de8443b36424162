"""Statements sent to the target in one round trip: a multi-statement COM_QUERY, each result read in order.

The applier's cost per group was its round trips (SET, BEGIN, INSERT, position row, COMMIT: one each). Queued
here they go out together. The server stops a multi-statement query at the first statement that fails, so a
server-side error leaves everything after it unexecuted (a COMMIT queued behind a failing INSERT never runs).
A *client-side* check (an UPDATE ... LIMIT 1 must find its row, as the SQL thread's HA_ERR_KEY_NOT_FOUND check)
is only known after the server has run the statements behind it: whoever queues a COMMIT must run the checked
statements first (`checked`).

Names: `Pipeline` (`add`, `chain`, `run`, `clear`, `checked`, `size`), `CONNECTION_LOST`, `RETRYABLE`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pymysql
from binlogd.applier.results import read_result, send_query

ER_LOCK_DEADLOCK: Final = 1213
ER_LOCK_WAIT_TIMEOUT: Final = 1205
RETRYABLE: Final = frozenset({ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT})
CONNECTION_LOST: Final = frozenset({2003, 2006, 2013, 2055})

Check = Callable[[int], None]  # gets the statement's affected (found) rows; raises to stop the group
Fail = Callable[[int, str], Exception]  # (code, message) of the server's error -> the exception to raise
Done = Callable[[], None]  # the statement succeeded (e.g. a group's COMMIT: the group is applied)


def error_code(e: BaseException) -> int:
    args = getattr(e, "args", ())
    return int(args[0]) if args and isinstance(args[0], int) else 1105


def error_message(e: BaseException) -> str:
    args = getattr(e, "args", ())
    return str(args[1]) if len(args) > 1 else str(e)


class Pipeline:
    """Queued statements of one target session (its worker thread's only)."""

    def __init__(self) -> None:
        self._items: list[tuple[bytes, Check | None, Fail | None, Done | None]] = []
        self.size = 0  # bytes queued: the caller runs the queue before it nears max_allowed_packet
        self.checked = False  # a queued statement has a client-side check

    def __len__(self) -> int:
        return len(self._items)

    def add(self, sql: bytes | str, check: Check | None = None, fail: Fail | None = None,
            done: Done | None = None) -> None:
        data = sql.encode("utf-8", "surrogateescape") if isinstance(sql, str) else sql
        self._items.append((data, check, fail, done))
        self.size += len(data) + 1
        self.checked = self.checked or check is not None

    def chain(self) -> bool:
        """Turn a COMMIT queued last into `COMMIT AND CHAIN` (the next transaction starts with it: no BEGIN of
        its own, one statement less per transaction). False when the last statement queued is not a COMMIT."""
        if not self._items or self._items[-1][0] != b"COMMIT":
            return False
        _, check, fail, done = self._items[-1]
        self._items[-1] = (b"COMMIT AND CHAIN", check, fail, done)
        self.size += len(b" AND CHAIN")
        return True

    def clear(self) -> None:
        self._items = []
        self.size = 0
        self.checked = False

    def run(self, conn: Any) -> None:
        """Send everything queued as one query; read every result in order. A server error goes through the
        statement's `fail` (deadlocks, lock wait timeouts and lost connections are raised as they are: the group
        is retried); a failed check is raised once every result is read (the session stays in step)."""
        items = self._items
        if not items:
            return
        self.clear()
        i = 0
        failed: Exception | None = None
        try:
            # one result per statement, read by count: MariaDB's OK of a BINLOG statement lacks the
            # SERVER_MORE_RESULTS_EXISTS flag although the statements behind it run (cursor.nextset would stop)
            send_query(conn, b";".join(item[0] for item in items))
            affected = read_result(conn)
            while True:
                _, check, _, done = items[i]
                if check is not None and failed is None:
                    try:
                        check(affected)
                    except Exception as e:  # raised below, once the remaining results are read
                        failed = e
                if done is not None and failed is None:
                    done()
                i += 1
                if i == len(items):
                    break
                affected = read_result(conn)
            if failed is not None:
                raise failed
        except pymysql.MySQLError as e:
            if failed is not None:  # the first failure is the group's error
                raise failed from None
            code = error_code(e)
            fail = items[i][2] if i < len(items) else None
            if fail is None or code in CONNECTION_LOST or code in RETRYABLE:
                raise
            raise fail(code, error_message(e)) from None
