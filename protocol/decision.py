"""The per-event decision: what one replica connection gets for one binlog event.

This module is the only place that holds the rules (MariaDB 10.11 `send_event_to_slave`, as captured
in shared/oracle, plus binlogd's documented extension). `decide()` is the readable reference;
`DecisionTable` is `decide()` evaluated once per connection for all 256 type codes so the dump loop
does one list lookup per event.

Rules, for an event that is not part of a GTID-start group being skipped:

=====================================  ======  ======  ======  ======  ======
event                                  cap 0   cap 1   cap 2   cap 3   cap 4
=====================================  ======  ======  ======  ======  ======
flag 0x8000 and SET skip_replication=1 DUMMY*  DUMMY*  HOLE    HOLE    HOLE
ANNOTATE_ROWS, dump flag 2 unset       DUMMY   SEND    HOLE    HOLE    HOLE
ANNOTATE_ROWS, dump flag 2 set         SEND    SEND    SEND    SEND    SEND
GTID of a transaction                  BEGIN   BEGIN   BEGIN   BEGIN   SEND
GTID of a standalone event             DUMMY   DUMMY   HOLE    HOLE    SEND
GTID_LIST                              DUMMY   DUMMY   HOLE    HOLE    SEND
BINLOG_CHECKPOINT                      DUMMY   DUMMY   HOLE    SEND    SEND
TABLES_INFO (159), not asked for       DUMMY   DUMMY   HOLE    HOLE    HOLE
TABLES_INFO, @binlogd_send_tables_info SEND    SEND    SEND    SEND    SEND
rejected by the replica's table filter DUMMY   DUMMY   HOLE    HOLE    HOLE**
anything else                          SEND    SEND    SEND    SEND    SEND
=====================================  ======  ======  ======  ======  ======

`*` binlogd's extension (seed MDEV-225's principle): replicas below TOLERATE_HOLES mis-compute
positions over holes, so they get a same-length dummy. MariaDB 10.11 leaves a hole there; the
`mariadb` compatibility policy reproduces that byte for byte.

TABLES_INFO is binlogd's own ignorable event (protocol/tables_info.py, `--binlog-with-tables-info`).
Every reader may skip it, but only a client that asked for it (`SET @binlogd_send_tables_info=1` before
COM_BINLOG_DUMP) gets it; the others get what they get for any event they cannot use. MariaDB never
writes it, so both compatibility policies treat it alike.

Table filters (binlogd's, per replica: replicate-* rules bound to its user or server_id, or set by a CDC client;
`protocol.table_filter` says which events a rule rejects, and why): a rejected event follows the capability rule
for what a replica cannot use. `**` a GTID replica gets a same-length dummy for the rejected statement of a
standalone group (DDL), so its GTID is applied as an empty group and the replica's GTID position stays continuous;
in a transaction the GTID (or its BEGIN) and the XID / COMMIT are never rejected, so a transaction whose every
statement is rejected reaches the replica as an empty transaction, as a replica applying the same filters itself
commits it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .constants import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CAP_ANNOTATE,
    CAP_BINLOG_CHECKPOINT,
    CAP_GTID,
    CAP_TOLERATE_HOLES,
    GTID_EVENT,
    GTID_LIST_EVENT,
)
from .table_filter import WATCHED_TYPES
from .tables_info import TABLES_INFO_EVENT


class Action(IntEnum):
    SEND = 0  # the stored bytes, unchanged
    HOLE = 1  # nothing; the next event's log_pos jumps over it
    DUMMY = 2  # same-length USER_VAR/QUERY no-op
    BEGIN = 3  # GTID rewritten into a same-length `BEGIN` QUERY
    PEEK_GTID = 4  # table-only: depends on the GTID's FL_STANDALONE bit
    PEEK_TABLES = 5  # table-only: the connection's table filter must look at the event
    RENAME = 6  # sent with its database renamed (replicate-rewrite-db)


class Compat(IntEnum):
    BINLOGD = 0  # default: dummies instead of holes for capability < 2 on skip_replication
    MARIADB = 1  # exactly what MariaDB 10.11 sends


@dataclass(frozen=True, slots=True)
class ReplicaPolicy:
    """The per-connection inputs of the decision (all known once COM_BINLOG_DUMP arrives)."""

    capability: int  # @mariadb_slave_capability, clamped to 0..4 (absent = 0)
    skip_replication: bool  # the dump session ran SET skip_replication=1
    send_annotate: bool  # COM_BINLOG_DUMP flag BINLOG_SEND_ANNOTATE_ROWS_EVENT
    compat: Compat = Compat.BINLOGD
    send_tables_info: bool = False  # the dump session ran SET @binlogd_send_tables_info=1
    table_filters: bool = False  # the connection has replicate-* table filters (protocol/table_filter.py)


def clamp_capability(value: object) -> int:
    """MariaDB reads the user variable with val_int(); absent or junk means 0, anything above means 4."""
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0
    return max(0, min(CAP_GTID, n))


# Which rule withheld or replaced an event (the audit ledger's `why`, docs/ledger.md).
WHY_SKIP = "skip_replication"  # flag 0x8000 on a SET skip_replication=1 session
WHY_CAPABILITY = "capability"  # the replica's capability (or dump flags) cannot take the event as stored
_SENT: tuple[Action, str | None] = (Action.SEND, None)


def explain(type_code: int, flags: int, standalone: bool, policy: ReplicaPolicy,
            table_rule: str | None = None) -> tuple[Action, str | None]:
    """The rule for one event (see the module table) and why (None for SEND). `standalone`: for a GTID event its
    FL_STANDALONE bit; for another event, that it is the statement of a standalone group. `table_rule`: the
    replicate-* option that rejected the event (the why of a table-filter decision)."""
    cap = policy.capability
    if policy.skip_replication and flags & 0x8000:
        if cap < CAP_TOLERATE_HOLES and policy.compat is Compat.BINLOGD:
            return Action.DUMMY, WHY_SKIP
        return Action.HOLE, WHY_SKIP
    if table_rule is not None:
        hole = cap >= CAP_TOLERATE_HOLES and not (cap >= CAP_GTID and standalone)
        return (Action.HOLE if hole else Action.DUMMY), table_rule
    if type_code == TABLES_INFO_EVENT and not policy.send_tables_info:
        return (Action.HOLE if cap >= CAP_TOLERATE_HOLES else Action.DUMMY), WHY_CAPABILITY
    if type_code == ANNOTATE_ROWS_EVENT:
        if policy.send_annotate or cap == CAP_ANNOTATE:
            return _SENT
        return (Action.DUMMY if cap < CAP_ANNOTATE else Action.HOLE), WHY_CAPABILITY
    if type_code == GTID_EVENT:
        if cap >= CAP_GTID:
            return _SENT
        if not standalone:
            return Action.BEGIN, WHY_CAPABILITY
        return (Action.HOLE if cap >= CAP_TOLERATE_HOLES else Action.DUMMY), WHY_CAPABILITY
    if (type_code == GTID_LIST_EVENT and cap < CAP_GTID) or (
        type_code == BINLOG_CHECKPOINT_EVENT and cap < CAP_BINLOG_CHECKPOINT
    ):
        return (Action.HOLE if cap >= CAP_TOLERATE_HOLES else Action.DUMMY), WHY_CAPABILITY
    return _SENT


def decide(type_code: int, flags: int, standalone: bool, policy: ReplicaPolicy) -> Action:
    """The rule for one event (see the module table). `standalone` matters only for GTID events."""
    return explain(type_code, flags, standalone, policy)[0]


class DecisionTable:
    """`decide()` precomputed for one policy: `normal[type]`, `flagged[type]` (header flag 0x8000 set).

    Entries are `PEEK_GTID` where the answer depends on the GTID's standalone bit; then
    `gtid_standalone` / `gtid_transaction` (and their flagged twins) hold the two answers.
    """

    __slots__ = ("by_type_and_skip_flag", "flagged", "gtid", "normal", "policy", "reasons")

    def __init__(self, policy: ReplicaPolicy) -> None:
        self.policy = policy
        self.gtid: dict[tuple[bool, bool], Action] = {}
        tables: list[list[Action]] = []
        for flagged in (False, True):
            flags = 0x8000 if flagged else 0
            row: list[Action] = []
            for t in range(256):
                a, b = decide(t, flags, False, policy), decide(t, flags, True, policy)
                if a == b:
                    row.append(a)
                else:
                    row.append(Action.PEEK_GTID)
                    self.gtid[(flagged, False)] = a
                    self.gtid[(flagged, True)] = b
            if policy.table_filters:  # what the skip rule does not take, the table filter must look at
                for t in WATCHED_TYPES:
                    if explain(t, flags, False, policy)[1] != WHY_SKIP:
                        row[t] = Action.PEEK_TABLES
            tables.append(row)
        self.normal, self.flagged = tables
        # one list for the hot loop: index = type | 0x100 when header flag 0x8000 is set
        self.by_type_and_skip_flag = [*self.normal, *self.flagged]
        # the audit ledger's `why`, same index plus 0x200 for a standalone GTID
        self.reasons = [explain(i & 0xFF, 0x8000 if i & 0x100 else 0, bool(i & 0x200), policy)[1]
                        for i in range(0x400)]

    def why(self, type_code: int, flags: int, standalone: bool) -> str | None:
        """The rule behind `lookup()`'s answer (None for SEND), for the audit ledger."""
        return self.reasons[type_code | (flags >> 7 & 0x100) | (0x200 if standalone else 0)]

    def lookup(self, type_code: int, flags: int, standalone: bool) -> Action:
        """Same answer as `decide()`; used by slow paths and by the tests that prove the equivalence."""
        flagged = bool(flags & 0x8000)
        a = (self.flagged if flagged else self.normal)[type_code]
        if a is Action.PEEK_GTID:
            return self.gtid[(flagged, standalone)]
        if a is Action.PEEK_TABLES:  # the answer without a table filter's verdict
            return decide(type_code, flags, standalone, self.policy)
        return a
