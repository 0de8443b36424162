"""Which events `binlogd show` prints: --start/--stop-position, --start/--stop-datetime, --start/--stop-gtid and
--skip-flagged, decided event by event in the order they are read (mariadb-binlog's process_event rules).

* positions: --start-position applies to the first file (its FDE is still read and printed), --stop-position to
  the last: reading stops at the first event starting at or after it;
* datetimes: events before --start-datetime are skipped until the first one at or after it (then everything is
  printed, as mariadb-binlog does for logs whose timestamps go back and forth); reading stops at the first event
  at or after --stop-datetime;
* GTIDs (also mariadb-binlog's GTID form of --start/--stop-position, with the same result): --start-gtid
  D-S-N[,...] is a replica-style position (groups up to and including N in domain D are left out, and Rotates
  before the first printed group); --stop-gtid D-S-N[,...] stops after the group of that GTID (inclusive) once
  every listed domain reached it;
* --skip-flagged leaves out events flagged 0x8000 (skip_replication), which are whole groups: what a replica with
  replicate_events_marked_for_skip=FILTER_ON_SLAVE applies is what is left.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from binlogd.protocol.constants import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    LOG_EVENT_SKIP_REPLICATION_F,
    ROTATE_EVENT,
)
from binlogd.protocol.events import GtidBody
from binlogd.protocol.gtid import Gtid

from .reader import Item


class Verdict(enum.Enum):
    PRINT = "print"
    SKIP = "skip"
    STOP = "stop"


@dataclass
class Ranges:
    """The range options; `decide` is called once per event in reading order."""

    last_file: str | None = None  # where --stop-position applies; None (reading from a server): every file
    first_file: str | None = None
    start_position: int = 4  # only when the reader does not seek there itself (--output-binlog reads everything)
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    start_gtid: dict[int, Gtid] = field(default_factory=dict)
    stop_gtid: dict[int, Gtid] = field(default_factory=dict)
    skip_flagged: bool = False
    _in_skipped_group: bool = False
    _stop_reached: set[int] = field(default_factory=set)
    _stop_after_group: bool = False
    _gtid_started: bool = False

    def decide(self, item: Item) -> Verdict:
        h = item.event.header
        fde = h.type_code == FORMAT_DESCRIPTION_EVENT
        if item.pos < self.start_position and item.file == self.first_file and not fde:
            return Verdict.SKIP
        if self.start_datetime is not None and not fde:
            if h.timestamp < self.start_datetime:
                return Verdict.SKIP
            self.start_datetime = None
        if self.stop_datetime is not None and h.timestamp >= self.stop_datetime:
            return Verdict.STOP
        in_last = self.last_file is None or item.file == self.last_file
        if self.stop_position is not None and in_last and item.pos >= self.stop_position:
            return Verdict.STOP
        if h.type_code == GTID_EVENT and isinstance(item.event.body, GtidBody):
            if self._stop_after_group:
                return Verdict.STOP
            g = item.event.body
            start = self.start_gtid.get(g.domain_id)
            self._in_skipped_group = start is not None and g.seq_no <= start.seq
            self._gtid_started = self._gtid_started or not self._in_skipped_group
            stop = self.stop_gtid.get(g.domain_id)
            if stop is not None and g.seq_no >= stop.seq and not self._in_skipped_group:
                self._stop_reached.add(g.domain_id)
                if self._stop_reached >= set(self.stop_gtid):
                    self._stop_after_group = True
        elif fde or not self._in_group_event(item):
            self._in_skipped_group = False
            if h.type_code == ROTATE_EVENT and self.start_gtid and not self._gtid_started:
                return Verdict.SKIP  # as mariadb-binlog: a Rotate before the start GTID is not printed
        if self._in_skipped_group:
            return Verdict.SKIP
        if self.skip_flagged and h.flags & LOG_EVENT_SKIP_REPLICATION_F:
            return Verdict.SKIP
        return Verdict.PRINT

    @staticmethod
    def _in_group_event(item: Item) -> bool:
        """Events that belong to the group their GTID opened (everything but file-level events)."""
        return item.event.header.type_code not in (ROTATE_EVENT, GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT)
