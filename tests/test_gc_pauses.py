"""binlogd/gc_pauses.py: `binlogd serve` freezes its start-up heap out of the cyclic collector once it has started
(a full collection of the imported modules stopped a relay's loop for 70-86 ms; benchmarks/README.md)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from binlogd.server import cli

from binlogd.gc_pauses import freeze_startup_heap


@pytest.fixture
def unfrozen() -> Any:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's heap goes back to the collector


def test_freeze_moves_the_live_heap_out_of_collections(unfrozen: None) -> None:
    assert gc.get_freeze_count() == 0
    n = freeze_startup_heap()
    # (the interpreter and pytest alone hold far more); frozen objects that die leave the count (a temporary of the
    # caller's, another thread's: xdist's), so it may have fallen a little since
    assert 0 <= n - gc.get_freeze_count() < 100 and n > 1000
    assert len(gc.get_objects(2)) < n  # a full collection no longer walks them


def test_serve_freezes_once_it_has_started_not_before(unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    async def serve(cfg: object, ready: asyncio.Event) -> None:
        seen.append(gc.get_freeze_count())  # during start-up: nothing frozen yet
        ready.set()
        for _ in range(3):
            await asyncio.sleep(0)
        seen.append(gc.get_freeze_count())  # serving

    monkeypatch.setattr("binlogd.server.app.serve", serve)
    asyncio.run(cli._serve_frozen(object()))  # type: ignore[arg-type]
    assert seen[0] == 0 and seen[1] > 1000
