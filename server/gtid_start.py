"""GTID connect: validate `@slave_connect_state`, choose the start file, skip groups up to the position.

Follows MariaDB's `check_slave_start_position`, `gtid_find_binlog_file` and the GTID branch of
`send_event_to_slave` (dump-protocol.md 6.2 item 2-3, 9.3-9.5). The per-event send rules stay in
`protocol.decision`; this module only says which leading groups the replica already has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogd.protocol import errors
from binlogd.protocol.constants import (
    ER_GTID_POSITION_NOT_FOUND_IN_BINLOG,
    ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2,
    ER_GTID_START_FROM_BINLOG_HOLE,
)
from binlogd.protocol.groups import GroupTracker
from binlogd.protocol.gtid import BinlogState, Gtid
from binlogd.protocol.mariadb_hash import HashedBinlogState


def drop_reached_until(until: dict[int, Gtid], listed: Gtid) -> None:
    """gtid_find_binlog_file: an UNTIL position at or before the start file's GTID_LIST entry is reached already."""
    stop = until.get(listed.domain)
    if stop is not None and stop.server == listed.server and stop.seq <= listed.seq:
        del until[listed.domain]


class GtidStartError(Exception):
    """A GTID start position the binlog cannot serve; `code` is MariaDB's (sent as 1236)."""

    def __init__(self, code: int, gtid: Gtid) -> None:
        self.code = code
        self.gtid = gtid
        super().__init__(self.text())

    def text(self) -> str:
        if self.code == ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2:
            return errors.gtid_diverged(self.gtid)
        if self.code == ER_GTID_START_FROM_BINLOG_HOLE:
            return errors.gtid_start_in_hole(self.gtid)
        return errors.gtid_not_in_binlog(self.gtid)


def check_start_position(requested: dict[int, Gtid], binlog: BinlogState, ignore_duplicates: bool) -> set[int]:
    """Refuse GTIDs the binlog never had; return the domains the binlog does not know yet
    (START_ON_EMPTY_DOMAIN: accepted now, checked again if the domain shows up)."""
    empty: set[int] = set()
    for d, g in requested.items():
        seq = binlog.seq_of(d, g.server)
        if seq is not None and seq >= g.seq:
            continue
        last = binlog.last(d)
        if last is None:
            empty.add(d)
            continue
        if ignore_duplicates and last.seq < g.seq:
            continue
        code = ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2 if last.seq >= g.seq else ER_GTID_POSITION_NOT_FOUND_IN_BINLOG
        raise GtidStartError(code, g)
    return empty


def file_acceptable(requested: dict[int, Gtid], gtid_list: list[Gtid]) -> bool:
    """Can the dump start in a file whose head GTID_LIST is `gtid_list`? (contains_all_slave_gtid)"""
    for i, g in enumerate(gtid_list):
        want = requested.get(g.domain)
        if want is None:
            return False
        if want.server == g.server:
            if want.seq < g.seq:
                return False
            if want.seq == g.seq and any(
                later.domain == g.domain and later.seq > g.seq for later in gtid_list[i + 1 :]
            ):
                return False
    return True


@dataclass
class GtidSkipper:
    """Drops the groups the replica already has; says when the fake GTID_LIST is due."""

    pending: dict[int, Gtid]  # domains whose start position is not reached yet
    strict: bool
    empty_domains: set[int]
    group: GroupTracker = field(default_factory=GroupTracker)  # inside a group being dropped
    fake_list_due: bool = False
    # MariaDB's until_binlog_state: the GTIDs read in this dump while a domain was pending (not the file's
    # GTID_LIST), in MariaDB's HASH order; the fake GTID_LIST sent when a domain reaches its position lists them
    seen: HashedBinlogState = field(default_factory=HashedBinlogState)
    # START SLAVE UNTIL master_gtid_pos (@slave_until_gtid): the domains whose stop position is not reached yet
    # (None: no UNTIL), and once none is left, the group after which the dump stops
    until: dict[int, Gtid] | None = None
    until_group: GroupTracker | None = None

    def __post_init__(self) -> None:
        if self.until is not None and not self.until:  # every stop position is before the start file
            self.until_group = GroupTracker()

    @property
    def reached(self) -> bool:
        """MariaDB's is_pos_reached(): domains unknown to the binlog (START_ON_EMPTY_DOMAIN) do not count."""
        return all(d in self.empty_domains for d in self.pending)

    @property
    def skipping(self) -> bool:
        return self.group.inside

    def on_gtid(self, g: Gtid, ev: bytes | bytearray | memoryview, pos: int, end: int) -> bool:
        """Called for every GTID event (at ev[pos:end]) while domains are pending or an UNTIL is set;
        True = drop this group."""
        self.seen.update(g)
        drop = self._before_start(g)
        if self.until is not None:
            drop = self._after_until(g) or drop
        if drop:
            self.group.feed(ev, pos, end)
        return drop

    def _before_start(self, g: Gtid) -> bool:
        want = self.pending.get(g.domain)
        if want is None:
            return False
        if g.domain in self.empty_domains:
            self.empty_domains.discard(g.domain)
            if want.server != g.server or g.seq < want.seq:
                raise GtidStartError(ER_GTID_POSITION_NOT_FOUND_IN_BINLOG, want)
        drop = g.server != want.server or g.seq <= want.seq
        if g.server == want.server and g.seq >= want.seq:
            if self.strict and g.seq > want.seq:
                raise GtidStartError(ER_GTID_START_FROM_BINLOG_HOLE, want)
            del self.pending[g.domain]
            self.fake_list_due = True
        return drop

    def _after_until(self, g: Gtid) -> bool:
        """MariaDB's UNTIL rule: a domain without a stop position left (reached, or never named) is skipped; the
        group that reaches the last one is the last sent (skipped too when its seq_no is past the stop)."""
        assert self.until is not None
        stop = self.until.get(g.domain)
        if stop is None:
            return True
        if g.server != stop.server or g.seq < stop.seq:
            return False
        del self.until[g.domain]
        if not self.until:
            self.until_group = GroupTracker()  # fed this GTID event by until_reached()
        return g.seq > stop.seq

    def on_gtid_list(self, gtids: list[Gtid]) -> None:
        """A GTID_LIST event read with an UNTIL set: MariaDB reloads its until_binlog_state from it."""
        if self.until is not None:
            self.seen = HashedBinlogState()
            for g in gtids:
                self.seen.update(g)

    def until_reached(self, ev: bytes | bytearray | memoryview, pos: int, end: int, crc_len: int) -> bool:
        """After each event (sent or dropped): True when the UNTIL stop is due now (the last group ended)."""
        return self.until_group is not None and self.until_group.feed(ev, pos, end, crc_len)

    def in_skipped_group(self, ev: bytes | bytearray | memoryview, pos: int, end: int, crc_len: int) -> bool:
        """Called for non-GTID events: True = drop (the event belongs to a group being skipped)."""
        if not self.group.inside:
            return False
        self.group.feed(ev, pos, end, crc_len)
        return True

    @property
    def done(self) -> bool:
        """Nothing left to skip or to check: the dump can leave the per-event GTID path."""
        return not self.pending and not self.group.inside and not self.fake_list_due and self.until is None

    def take_fake_list(self) -> bool:
        if self.fake_list_due and not self.group.inside:
            self.fake_list_due = False
            return True
        return False
