"""Which asyncio event loop `binlogd serve` runs on: uvloop (libuv, in C) when it is installed, else asyncio's own.

Why: binlogd serves every client from one event-loop thread, and on the standalone write path about half of the
server's CPU per statement went to the loop's stream and transport machinery (benchmarks/README.md,
`standalone_writes`); uvloop does that work in C. `--event-loop asyncio` keeps the standard loop (e.g. to compare).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
CHOICES = ("auto", "uvloop", "asyncio")


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolve(choice: str | None) -> str:
    """`auto` (or None): uvloop when importable, else asyncio. `uvloop` without the package raises ValueError."""
    if choice in (None, "auto"):
        return "uvloop" if uvloop_available() else "asyncio"
    if choice == "uvloop" and not uvloop_available():
        raise ValueError("--event-loop uvloop: the uvloop package is not installed (pip install uvloop)")
    if choice not in CHOICES:
        raise ValueError(f"--event-loop: {choice!r} is not one of {', '.join(CHOICES)}")
    return choice


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory asyncio.Runner uses for the resolved loop `name` (None: asyncio's default)."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop  # type: ignore[no-any-return]
    return None


def run(main: Coroutine[Any, Any, T], name: str) -> T:
    """asyncio.run(main) on the loop `name` (see `resolve`)."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(main)
