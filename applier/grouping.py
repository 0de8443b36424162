"""Grouped commits: consecutive source transactions of a batch committed as ONE target transaction (issue 20).

Per 1-row source transaction the target paid a statement parse, a commit and a share of a round trip, the applier
a position row; a replica's SQL thread pays a commit only. When the worker has a backlog (a batch of queued
groups, `TargetSession.apply_many`), a run of consecutive transactions that are row statements only (TABLE_MAPs
and rows events, each statement ending with STMT_END_F) goes as `BEGIN; BINLOG '<their events, unchanged>
<the position row of the last one as events>'; COMMIT`: the changes of the whole run and the position after it
commit together or not at all, so the position stays crash-safe (a kill -9 leaves the run whole or absent).

A run never waits for more transactions: it is cut from what is already queued, so a lone transaction (an idle
channel) is applied at once, as before. It ends at a transaction that is anything else (DDL, statements,
ROLLBACK, a position-only group, one whose tables the filters drop or rename: boundaries, applied as before), at
a change of the skip_replication flag or of the source's FORMAT_DESCRIPTION event, and at `JOIN_GROUPS`
transactions or `JOIN_BYTES` of events. Filters and skip modes are decided per source transaction as before.

Not when the target keeps the source's GTIDs (a target with a binlog): a target transaction carries one GTID,
so each source transaction stays its own there. An error inside a run rolls the run back; the batch's fallback
then applies its transactions one by one, so the error names the transaction that failed (as for a lone one).

Names: `JOIN_GROUPS`, `JOIN_BYTES`, `joinable`, `Run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar

from binlogd.protocol.constants import HEADER_LEN, STMT_END_F, TABLE_MAP_EVENT

JOIN_GROUPS: Final = 64  # source transactions per target transaction at most
JOIN_BYTES: Final = 1 << 20  # events per target transaction at most (base64: 1.4 MiB, max_allowed_packet 16 MiB)
_FLAGS_AT: Final = HEADER_LEN + 6  # rows events: table id (6 bytes), then the flags (u16)


class Group(Protocol):
    """What grouping reads of `applier.apply.Group` (a protocol: apply.py imports this module)."""

    transactional: bool
    rollback: bool
    flagged: bool
    fde: bytes | None

    @property
    def events(self) -> Sequence[object]: ...

    @property
    def raws(self) -> Sequence[bytes]: ...


def joinable(g: Group) -> bool:
    """A transaction of whole row statements only (every event kept as bytes: TABLE_MAPs and rows events), the
    last one ending its statement, with the source's FDE for the BINLOG statement."""
    if not (g.transactional and g.events and g.fde is not None) or g.rollback:
        return False
    raws = g.raws
    if not all(raws):
        return False
    last = raws[-1]
    return last[4] != TABLE_MAP_EVENT and len(last) > _FLAGS_AT and bool(last[_FLAGS_AT] & STMT_END_F)


G = TypeVar("G", bound=Group)


@dataclass(slots=True)
class Run(Generic[G]):
    """Consecutive joinable transactions being collected for one target transaction."""

    groups: list[G] = field(default_factory=list)
    size: int = 0  # bytes of their events

    def fits(self, g: G, size: int) -> bool:
        """`g` may join: same FDE and skip flag as the run, within the bounds."""
        if not self.groups:
            return True
        first = self.groups[0]
        return (len(self.groups) < JOIN_GROUPS and self.size + size <= JOIN_BYTES and g.fde is first.fde
                and g.flagged == first.flagged)

    def add(self, g: G, size: int) -> None:
        self.groups.append(g)
        self.size += size

    def take(self) -> list[G]:
        groups, self.groups, self.size = self.groups, [], 0
        return groups


__all__ = ["JOIN_BYTES", "JOIN_GROUPS", "Run", "joinable"]
