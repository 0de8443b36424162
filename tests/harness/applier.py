"""The `binlogd-apply` process for tests: started with its output in a log file, stopped by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.harness import REPO_ROOT

__all__ = ["ApplierProc", "running_applier"]


class ApplierProc:
    """`python -m applier.cli ARGS` with its output in a log file; stopped (by PID) at the end of the test."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ApplierProc:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "binlogd.applier.cli", *self.args], cwd=REPO_ROOT,
                                         env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive:
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextlib.contextmanager
def running_applier(args: list[str], log_path: Path) -> Iterator[ApplierProc]:
    """An `ApplierProc` started for the `with` block and stopped after it, also on failures."""
    p = ApplierProc(args, log_path).start()
    try:
        yield p
    finally:
        p.stop()
