"""Progress of a long read on stderr (rich), only when stderr is a terminal unless asked otherwise: the text on
stdout stays exactly the dump."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


class Progress:
    """Bytes read over the total size of the files; a no-op when off."""

    def __init__(self, mode: str, total: int) -> None:
        self.enabled = mode == "on" or (mode == "auto" and sys.stderr.isatty())
        self._bar: Any = None
        self._task: Any = None
        self._done_before = 0
        self._current = 0
        if self.enabled and total > 0:
            from rich.progress import BarColumn, DownloadColumn, TextColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                     transient=True, console=_stderr_console(force=mode == "on"))
            self._task = self._bar.add_task("reading", total=total)
            self._bar.start()

    def file(self, path: Path) -> None:
        self._done_before += self._current
        self._current = 0
        if self._bar is not None:
            self._bar.update(self._task, description=path.name)

    def advance(self, pos: int, size: int) -> None:
        self._current = pos
        if self._bar is not None:
            self._bar.update(self._task, completed=self._done_before + pos)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stderr_console(force: bool) -> Any:
    from rich.console import Console

    return Console(file=sys.stderr, force_terminal=force or None)
