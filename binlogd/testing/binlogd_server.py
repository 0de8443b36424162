"""Run binlogd (``python -m binlogd.server.cli serve``) as a subprocess for end-to-end tests.

A subprocess rather than an in-process server: tests then exercise the real CLI, signal handling and
shutdown path, a hung server cannot hang the test process, and kill -9 (crash) tests are possible.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pymysql

from .mariadb import HOST, HarnessError, _register_live, _tail, _unregister_live, connect_tcp, free_port, listens_on

__all__ = ["Binlogd", "BinlogdStartError"]
START_TIMEOUT = 15.0
STOP_GRACE = 5.0


class BinlogdStartError(HarnessError):
    """The server died or did not answer SELECT 1 in time; the message carries the log tail."""

    def __init__(self, message: str, *, port_in_use: bool = False) -> None:
        super().__init__(message)
        self.port_in_use = port_in_use


class Binlogd:
    """One ``binlogd serve`` subprocess. Create with :meth:`start`; always :meth:`stop`."""

    def __init__(self, cmd: list[str], port: int, log_path: Path, proc: subprocess.Popen[bytes]) -> None:
        self.cmd = cmd
        self.host = HOST
        self.port = port
        self.log_path = log_path
        self.pid = proc.pid
        self.start_seconds = 0.0
        self._proc = proc
        self._log_offset = 0

    def __repr__(self) -> str:
        return f"<Binlogd {self.host}:{self.port} pid={self.pid} {'running' if self.is_running else 'stopped'}>"

    @classmethod
    def start(
        cls,
        args: Sequence[str],
        port: int | None = None,
        *,
        log_path: Path,
        timeout: float = START_TIMEOUT,
        env: Mapping[str, str] | None = None,
        user: str = "root",
        password: str = "",
        module: str = "binlogd.server.cli",
        cwd: Path | None = None,
    ) -> Binlogd:
        """Start ``python -m binlogd.server.cli serve --port PORT *args`` and wait until SELECT 1 works.

        stdout and stderr go (appended) to ``log_path``. ``port=None`` picks a free port and retries
        on a new one if the server reports the port in use. ``user``/``password`` are what the
        readiness probe logs in with. ``module`` replaces ``binlogd.server.cli`` (the harness's own tests run
        a stub server with the same command line); ``cwd`` is the process's directory (where ``-m`` finds a module
        that is not installed).
        """
        attempts = 1 if port is not None else 5
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"  # log_text() must see what the server printed
        if env:
            full_env.update(env)
        t0 = time.monotonic()
        for attempt in range(attempts):
            use_port = port if port is not None else free_port()
            cmd = [sys.executable, "-m", module, "serve", "--port", str(use_port), *args]
            offset = log_path.stat().st_size if log_path.exists() else 0
            with open(log_path, "ab") as out:
                proc = subprocess.Popen(
                    cmd,
                    cwd=cwd,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # own process group: stop() signals the whole group
                )
            inst = cls(cmd, use_port, log_path, proc)
            inst._log_offset = offset
            _register_live(proc.pid, inst._emergency_kill)
            try:
                inst._wait_ready(timeout, user, password)
            except BinlogdStartError as e:
                inst.kill9()
                if e.port_in_use and attempt + 1 < attempts:
                    continue
                raise
            inst.start_seconds = time.monotonic() - t0
            return inst
        raise AssertionError("unreachable")

    def _emergency_kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(5)

    def _probe(self, user: str, password: str) -> str | None:
        """None if the server answers SELECT 1 on our port, else why not."""
        # /proc first: no connection attempt (and no "aborted connection" noise in the server log)
        # before the server listens, and never a conclusion from a stranger that owns the port.
        if not listens_on(self.pid, self.port):
            return f"pid {self.pid} does not listen on port {self.port} yet"
        try:
            # autocommit=None: no SET AUTOCOMMIT round trip, the probe sends exactly one query.
            conn = self.connect(user=user, password=password, connect_timeout=2, read_timeout=5, autocommit=None)
        except pymysql.Error as e:
            return f"pymysql connect: {e!r}"
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
                row = cur.fetchone()
            if row is None or int(row[0]) != 1:
                return f"SELECT 1 returned {row!r}"
            return None
        except pymysql.Error as e:
            return f"SELECT 1: {e!r}"
        finally:
            with contextlib.suppress(Exception):
                conn.close()

    def _wait_ready(self, timeout: float, user: str, password: str) -> None:
        deadline = time.monotonic() + timeout
        why = "not probed yet"
        while True:
            if self._wait_exit_unreaped(0):
                rc = self.kill9()  # leftovers of its process group, then reap
                tail = self.log_tail()
                raise BinlogdStartError(
                    f"binlogd exited with {rc} while starting: {' '.join(self.cmd)}\n{self.log_path} tail:\n{tail}",
                    port_in_use="Address already in use" in tail or "Errno 98" in tail,
                )
            why = self._probe(user, password) or ""
            if not why:
                return
            if time.monotonic() >= deadline:
                raise BinlogdStartError(
                    f"binlogd did not answer SELECT 1 on {self.host}:{self.port} within {timeout:.0f} s "
                    f"(last: {why}): {' '.join(self.cmd)}\n{self.log_path} tail:\n{self.log_tail()}"
                )
            time.sleep(0.05)

    # ---- lifecycle ------------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return not self._wait_exit_unreaped(0)

    @property
    def returncode(self) -> int | None:
        """Exit code once stop()/kill9() reaped the process (they return it too), else None."""
        return self._proc.returncode

    def _signal_group(self, sig: int) -> None:
        """Signal the server's process group, but only while its leader is unreaped.

        Once the leader is reaped its PID (= the PGID) may belong to someone else's new process group,
        so a group signal then could hit a stranger.
        """
        if self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _wait_exit_unreaped(self, timeout: float) -> bool:
        """Wait until the leader has exited WITHOUT reaping it (waitid WNOWAIT), keeping the PGID ours."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.returncode is not None:
                return True
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            if info is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def stop(self, grace: float = STOP_GRACE) -> int | None:
        """SIGTERM (to the server's process group), wait ``grace`` s, then SIGKILL. Returns exit code.

        Whatever the server left running in its group is SIGKILLed before the leader is reaped.
        """
        self._signal_group(signal.SIGTERM)
        if not self._wait_exit_unreaped(grace):
            self._signal_group(signal.SIGKILL)
            self._wait_exit_unreaped(10)
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(10)
        _unregister_live(self.pid)
        return self._proc.returncode

    def kill9(self) -> int | None:
        """SIGKILL the whole process group (a crash) and reap."""
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(10)
        _unregister_live(self.pid)
        return self._proc.returncode

    # ---- inspection -----------------------------------------------------------------------------

    def log_text(self) -> str:
        """Everything the server wrote to its log file (all runs that shared ``log_path``)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines this run wrote."""
        return _tail(self.log_path, self._log_offset, lines)

    def diagnostics(self) -> tuple[str, str]:
        """(title, text) for a failing test's report: the log tail of this run."""
        return (f"binlogd :{self.port}", f"{self!r}\n--- {self.log_path} (tail) ---\n{self.log_tail()}")

    def connect(self, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
        """A pymysql connection to the server (root, no password, autocommit; override with ``kw``)."""
        return connect_tcp(self.host, self.port, **kw)
