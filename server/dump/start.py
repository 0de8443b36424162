"""Where a dump starts: a file/position, or a GTID position (the file to read first and the GTID skipper)."""

from __future__ import annotations

from binlogd.protocol import errors
from binlogd.protocol.constants import BIN_LOG_HEADER_SIZE
from binlogd.protocol.gtid import GtidError, parse_gtid_list

from ..binlog.store import BinlogStore, StoreError
from ..gtid_start import (
    GtidSkipper,
    GtidStartError,
    check_start_position,
    drop_reached_until,
    file_acceptable,
)
from ..transcode import map_start
from .params import DumpError, DumpParams


class StartResolution:
    """The start of a DumpStream (mixed into it); runs in a worker thread (index, file heads, GTID state)."""

    p: DumpParams
    store: BinlogStore

    def _resolve_start(self) -> tuple[str, int]:
        p = self.p
        try:
            names = self.store.files()
        except StoreError as e:
            raise DumpError(errors.BINLOG_NOT_OPEN, suffix=False) from e
        if not names:  # a relay that has stored nothing yet (its store allows that): no binlog, as documented
            raise DumpError(errors.BINLOG_NOT_OPEN, suffix=False)
        if p.connect_state is not None:
            return self._resolve_gtid_start(names), BIN_LOG_HEADER_SIZE
        name = p.file or names[0]
        if name not in names:
            raise DumpError(errors.FIRST_LOG_NOT_FOUND, suffix=False)
        self.file = name
        end = self.store.end_of(name)
        pos = p.pos
        if self.tc is not None and pos > BIN_LOG_HEADER_SIZE:  # a position of the transcoded stream
            m = map_start(self.store.path(name), pos, self.tc.target, end)
            self._tc_start = (pos, 0, pos) if m is None else (m[0], m[1], pos)
            pos = -1 if m is None else m[0]
        if pos < BIN_LOG_HEADER_SIZE or pos > end:
            self.last_event_pos = self.last_byte = BIN_LOG_HEADER_SIZE
            self.file = p.file  # MariaDB names the file asked for ('.' when none was), not the one it chose
            raise DumpError(errors.IMPOSSIBLE_POSITION)
        return name, pos

    def _resolve_gtid_start(self, names: list[str]) -> str:
        p = self.p
        try:
            requested = parse_gtid_list(p.connect_state or "")
        except GtidError as e:
            raise DumpError(str(e), e.code, suffix=False) from e
        until = None
        if p.until_state is not None:
            try:
                until = parse_gtid_list(p.until_state)
            except GtidError as e:
                raise DumpError(str(e), e.code, suffix=False) from e  # MariaDB's first error wins: 1941
        binlog = self.store.binlog_state()
        try:
            empty = check_start_position(requested, binlog, p.gtid_ignore_duplicates)
        except GtidStartError as e:
            raise DumpError(e.text(), suffix=False) from e
        fallback = None
        for name in reversed(names):
            head = self.store.head(name)
            if not head.complete:
                # the active file's GTID_LIST is not written yet: an earlier file is acceptable whenever it is
                fallback = name
                continue
            if head.gtid_list is None or file_acceptable(requested, head.gtid_list):
                for g in head.gtid_list or []:
                    if requested.get(g.domain) == g:
                        del requested[g.domain]
                    if until is not None:
                        drop_reached_until(until, g)
                self.skipper = GtidSkipper(dict(requested), p.gtid_strict, empty, until=until)
                self.file = name
                return name
        if fallback is not None:  # nothing earlier: a file that has no GTID_LIST so far is accepted, like MariaDB
            self.skipper = GtidSkipper(dict(requested), p.gtid_strict, empty, until=until)
            self.file = fallback
            return fallback
        raise DumpError(errors.GTID_STATE_NOT_FOUND, suffix=False)
