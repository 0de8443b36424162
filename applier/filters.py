"""Replication filters: global and per-channel (seed WL#7361), evaluated like a MariaDB 10.11 replica.

Names part A uses: `FilterType`, `FilterSet.rewrite_db`, `FilterSet.apply_statement`,
`FilterSet.apply_row_event`, `FilterRegistry.from_options`, `.for_channel`, `.change`, `.add_channel`,
`.remove_channel`, `.applier_filters_rows`, `.global_filters_rows`; errors `FilterError`, `UnknownChannel`.

The rules themselves (FilterType, Rule, FilterSet, updated_tables, ...) are in protocol/repl_filters.py, shared
with `binlogd show`; this module keeps the per-channel registry.
"""

from __future__ import annotations

import logging
import threading

from binlogd.protocol.repl_filters import (
    TABLE_TYPES,
    ConfiguredBy,
    FilterError,
    FilterSet,
    FilterType,
    Rule,
    check_value,
    parse_rewrite,
    updated_tables,
    wild_regex,
)

__all__ = [
    "TABLE_TYPES", "ConfiguredBy", "FilterError", "FilterRegistry", "FilterSet", "FilterType", "Rule",
    "UnknownChannel", "check_value", "parse_rewrite", "split_channel", "updated_tables", "wild_regex",
]


class UnknownChannel(KeyError):
    """A channel name the registry does not hold."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def split_channel(value: str) -> tuple[str | None, str]:
    """WL#7361 startup value `[channel:]rule`: the first colon separates; no colon -> global (None)."""
    chan, sep, rest = value.partition(":")
    if not sep:
        return None, value
    return chan, rest


class FilterRegistry:
    """Global filters plus one FilterSet per channel, with WL#7361's copy rules.

    A channel holds its own rules of each type; a type it has none of is copied from the global rules
    when the channel is created (startup or `add_channel`), keeping the global rule's CONFIGURED_BY.
    Changes replace whole types; an empty list removes that type's rule.
    """

    def __init__(self, log: logging.Logger | None = None) -> None:
        self.log = log or logging.getLogger("binlogd.apply.filters")
        self.global_set = FilterSet()
        self.channels: dict[str, FilterSet] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_options(
        cls, options: list[tuple[FilterType, str]], channels: list[str], log: logging.Logger | None = None
    ) -> FilterRegistry:
        """Startup options (`--replicate-do-db=[channel:]db`, one rule per option, in order).

        Raises FilterError for a malformed rule. A rule for a channel that is not configured is
        discarded with a warning (WL#7361), as is the whole value of an empty rule.
        """
        reg = cls(log)
        glob: dict[FilterType, list[str]] = {}
        per: dict[str, dict[FilterType, list[str]]] = {c: {} for c in channels}
        for ftype, raw in options:
            chan, rule = split_channel(raw)
            value = check_value(ftype, rule)
            if chan is None:
                glob.setdefault(ftype, []).append(value)
            elif chan in per:
                per[chan].setdefault(ftype, []).append(value)
            else:
                reg.log.warning(
                    "There are per-channel replication filter(s) configured for channel '%s' which does not "
                    "exist. The filter(s) have been discarded: --%s=%s",
                    chan, ftype.option, raw,
                )
        for ftype, values in glob.items():
            reg.global_set.rules[ftype] = Rule(ftype, tuple(values), ConfiguredBy.STARTUP_OPTIONS)
        for chan in channels:
            fs = FilterSet()
            for ftype, values in per[chan].items():
                fs.rules[ftype] = Rule(ftype, tuple(values), ConfiguredBy.STARTUP_OPTIONS_FOR_CHANNEL)
            reg._fill_from_global(fs)
            reg.channels[chan] = fs
        return reg

    def _fill_from_global(self, fs: FilterSet) -> None:
        for ftype in FilterType:
            g = self.global_set.rules.get(ftype)
            if g is not None and ftype not in fs.rules:
                fs.rules[ftype] = g.copy()

    def for_channel(self, name: str) -> FilterSet:
        try:
            return self.channels[name]
        except KeyError:
            raise UnknownChannel(name) from None

    def add_channel(self, name: str) -> None:
        """A new channel (or one re-created after RESET SLAVE ALL): copies every global type."""
        with self._lock:
            if name not in self.channels:
                fs = FilterSet()
                self._fill_from_global(fs)
                self.channels[name] = fs

    def remove_channel(self, name: str) -> None:
        """RESET SLAVE ALL [FOR CHANNEL]: the channel's filters go with it; the global ones stay."""
        with self._lock:
            if self.channels.pop(name, None) is None:
                raise UnknownChannel(name)

    def change(self, channel: str | None, changes: dict[FilterType, list[str]]) -> None:
        """CHANGE REPLICATION FILTER: replace only the listed types.

        `channel=None` (no FOR CHANNEL) changes the global rules and every channel's rules of those
        types (CONFIGURED_BY CHANGE_REPLICATION_FILTER); a channel name changes that channel only.
        REPLICATE_REWRITE_DB values are `from->to` strings. Validates everything before changing anything.
        """
        checked = {t: tuple(check_value(t, v) for v in vals) for t, vals in changes.items()}
        with self._lock:
            if channel is None:
                targets, by = [self.global_set, *self.channels.values()], ConfiguredBy.CHANGE_REPLICATION_FILTER
            elif channel in self.channels:
                targets, by = [self.channels[channel]], ConfiguredBy.CHANGE_REPLICATION_FILTER_FOR_CHANNEL
            else:
                raise UnknownChannel(channel)
            for fs in targets:
                for ftype, values in checked.items():
                    if values:
                        fs.rules[ftype] = Rule(ftype, values, by)
                    else:
                        fs.rules.pop(ftype, None)

    # -- performance_schema rows ------------------------------------------------------------------

    def applier_filters_rows(self) -> list[tuple]:
        """P_S replication_applier_filters rows.

        (CHANNEL_NAME, FILTER_NAME, FILTER_RULE, CONFIGURED_BY, ACTIVE_SINCE, COUNTER)
        """
        with self._lock:
            return [
                (chan, r.ftype.value, r.text, r.configured_by.value, r.active_since, r.counter)
                for chan, fs in self.channels.items()
                for t in FilterType
                if (r := fs.rules.get(t)) is not None
            ]

    def global_filters_rows(self) -> list[tuple]:
        """replication_applier_global_filters: (FILTER_NAME, FILTER_RULE, CONFIGURED_BY, ACTIVE_SINCE)."""
        with self._lock:
            return [
                (r.ftype.value, r.text, r.configured_by.value, r.active_since)
                for t in FilterType
                if (r := self.global_set.rules.get(t)) is not None
            ]
