"""The applier process: its channels, the shared skip mode and skip counter, the filters, start/stop/reset.

Part B's admin port (`applier/admin.py`) drives it through these names: `Applier` with `config`, `channels:
dict[str, Channel]`, `filters: FilterRegistry`, `skip_mode`, `skip_counter`, `set_skip_mode(mode)`, async
`start_channel(name)`, `stop_channel(name)`, `reset_channel(name, all)`, `start_all()`, `stop_all()`,
`close()`, `filters_for(name)`; errors are `ApplierError(code, message)` with MariaDB's codes and texts.
"""

from __future__ import annotations

import logging
from typing import Any

from .channel import Channel
from .config import SKIP_MODES, ApplierConfig
from .filters import FilterRegistry, FilterSet, FilterType

log = logging.getLogger("binlogd.apply")

ER_SLAVE_MUST_STOP = 1198
ER_SLAVE_NOT_RUNNING = 1199
ER_MASTER_INFO = 1201
ER_WRONG_VALUE_FOR_VAR = 1231


class ApplierError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Applier:
    def __init__(self, config: ApplierConfig, filters: FilterRegistry | None = None) -> None:
        self.config = config
        self.skip_mode = config.skip_mode
        self.skip_counter = 0
        names = [c.name for c in config.channels]
        if filters is None:
            opts = [(FilterType.from_name(kind), value) for kind, value in config.filters]
            filters = FilterRegistry.from_options(opts, names, log)
        self.filters = filters
        self.channels: dict[str, Channel] = {c.name: Channel(c, self) for c in config.channels}

    def filters_for(self, name: str) -> FilterSet | None:
        try:
            return self.filters.for_channel(name)
        except KeyError:
            return None

    def channel(self, name: str) -> Channel:
        ch = self.channels.get(name)
        if ch is None:
            raise ApplierError(ER_MASTER_INFO, f"There is no master connection '{name}'")
        return ch

    def set_skip_mode(self, mode: str) -> None:
        """SET GLOBAL replicate_events_marked_for_skip: refused while any channel runs (as MariaDB does)."""
        mode = mode.upper()
        if mode not in SKIP_MODES:
            raise ApplierError(ER_WRONG_VALUE_FOR_VAR,
                               f"Variable 'replicate_events_marked_for_skip' can't be set to the value of '{mode}'")
        running = [c.name for c in self.channels.values() if c.running]
        if running:
            raise ApplierError(ER_SLAVE_MUST_STOP, f"This operation cannot be performed as you have a running slave "
                                                   f"'{running[0]}'; run STOP SLAVE '{running[0]}' first")
        self.skip_mode = mode

    async def start_channel(self, name: str) -> None:
        await self.channel(name).start()

    async def stop_channel(self, name: str) -> None:
        await self.channel(name).stop()

    async def reset_channel(self, name: str, all: bool = False) -> None:
        """RESET SLAVE [ALL]: forget the position; ALL also forgets the channel (its filters: the caller's)."""
        ch = self.channel(name)
        if ch.running:
            raise ApplierError(ER_SLAVE_MUST_STOP, f"This operation cannot be performed as you have a running slave "
                                                   f"'{name}'; run STOP SLAVE '{name}' first")
        await ch.reset()
        if all:
            await ch.close()
            del self.channels[name]

    async def start_all(self) -> None:
        for ch in self.channels.values():
            await ch.start()

    async def stop_all(self) -> None:
        for ch in self.channels.values():
            await ch.stop()

    async def close(self) -> None:
        for ch in list(self.channels.values()):
            await ch.close()

    def status_rows(self) -> list[dict[str, Any]]:
        return [ch.status() for ch in self.channels.values()]
