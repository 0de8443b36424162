"""Private, throw-away MariaDB 10.11 servers for tests.

Every instance is a real ``mariadbd`` child process with its own datadir, socket, pid file and a free
loopback TCP port, started with ``--no-defaults`` so that no my.cnf on the machine can change what a
test sees. Instances are torn down by PID (SIGTERM, then wait), never by name: other people's servers
on the same machine are never touched.

Why things are the way they are (measured on MariaDB 10.11.19, Debian 12, see the project report):

* ``mariadb-install-db`` costs 0.3-0.9 s (up to ~2 s on a loaded machine), copying an installed
  datadir ~0.15 s. :meth:`MariaDB.start` therefore accepts a ``template_dir``: the system tables are
  installed there once and each new instance gets a copy. Without it, each datadir is installed fresh.
* As root, ``mariadbd`` refuses to run without ``--user=root``.
* ``free_port()`` can race (another process may take the port before ``mariadbd`` binds it), so a
  start with an automatically chosen port that dies with "Address already in use" is retried on a new
  port, and readiness is only accepted from a server whose ``@@datadir`` is ours (a foreign server that
  happens to own the port would otherwise answer ``SELECT 1``).
* A dead ``mariadbd`` that is not our child stays a zombie until PID 1 reaps it (here every ~2 s), so
  "exited" means "gone from /proc or in state Z"; our own children are reaped with ``waitpid``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import pymysql
from pymysql.constants import CLIENT

__all__ = [
    "HarnessError",
    "MariaDB",
    "MariaDBStartError",
    "SlaveWaitError",
    "binlog_datadir_setup",
    "find_binary",
    "free_port",
    "kill_all_live",
    "listens_on",
    "make_primary_from_binlogs",
    "pid_exited",
    "wait_until",
]

T = TypeVar("T")

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
# Unix socket paths are limited to 108 bytes including the NUL (sun_path).
MAX_SOCKET_PATH = 107

# Same small-footprint InnoDB settings as shared/tools/mdb.sh: 16M redo log, 64M buffer pool, no
# doublewrite, lazy log flush. A 1M temporary tablespace avoids writing 12M of ibtmp1 at each start.
INNODB_ARGS: tuple[str, ...] = (
    "--innodb-log-file-size=16M",
    "--innodb-buffer-pool-size=64M",
    "--innodb-flush-log-at-trx-commit=2",
    "--skip-innodb-doublewrite",
    "--innodb-temp-data-file-path=ibtmp1:1M:autoextend",
)
INSTALL_DB_ARGS: tuple[str, ...] = (
    "--no-defaults",
    "--user=root",
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
    "--innodb-log-file-size=16M",
)

SkipMode = Literal["REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER"]
UseGtid = Literal["slave_pos", "current_pos", "no"]
_SKIP_MODES = ("REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER")
_USE_GTID = ("slave_pos", "current_pos", "no")


class HarnessError(RuntimeError):
    """The test environment (not the code under test) did not behave: a server did not start, etc."""


class MariaDBStartError(HarnessError):
    """mariadbd died or did not accept connections in time; the message carries the error.log tail."""

    def __init__(self, message: str, *, port_in_use: bool = False) -> None:
        super().__init__(message)
        self.port_in_use = port_in_use


class SlaveWaitError(HarnessError):
    """A replica did not reach the wanted position (timeout or a stopped replication thread)."""

    def __init__(self, message: str, status: dict[str, Any]) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------------
# small helpers


def find_binary(name: str) -> str | None:
    """Path of a MariaDB program, or None.

    PATH first; then the sbin directories, because Debian installs ``mariadbd`` in /usr/sbin, which
    is not on a non-root user's PATH (CI runs as root, where it is).
    """
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"):
        p = Path(d, name)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _require_binary(name: str) -> str:
    path = find_binary(name)
    if path is None:
        raise HarnessError(
            f"{name} not found on PATH (nor in /usr/sbin): install MariaDB 10.11 "
            "(apt-get install -y mariadb-server mariadb-client, or `make mariadb`)"
        )
    return path


_ports_lock = threading.Lock()
_ports_handed_out: dict[int, float] = {}
_PORT_QUARANTINE = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now.

    The kernel picks it (bind to port 0). A port handed out by this process in the last minute is not
    handed out again, so parallel starts in one test run never get the same port; other processes can
    still take it before our server binds, which the start functions handle by retrying.
    """
    with _ports_lock:
        now = time.monotonic()
        for p, t in list(_ports_handed_out.items()):
            if now - t > _PORT_QUARANTINE:
                del _ports_handed_out[p]
        for _ in range(50):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((HOST, 0))
                port = int(s.getsockname()[1])
            if port not in _ports_handed_out:
                _ports_handed_out[port] = now
                return port
    raise HarnessError("could not find a free loopback port")


def _proc_state(pid: int) -> str | None:
    """The State letter from /proc/PID/status, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1]
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def pid_exited(pid: int, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """True once ``pid`` has exited.

    For our own child (``proc`` given) ``Popen.poll()`` reaps it. For anything else, a zombie
    (state Z) counts as exited: its parent (often PID 1, which reaps lazily) may not have collected it.
    """
    if proc is not None:
        return proc.poll() is not None
    state = _proc_state(pid)
    if state is None:
        return True
    if state == "Z":
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        return True
    return False


def _listen_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP ``port`` (IPv4 and IPv6), from /proc/net/tcp{,6}."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(parts[9])
        except OSError:
            continue
    return inodes


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (via /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
    return out


def listens_on(pid: int, port: int) -> bool:
    """True if ``pid`` (or a child of it) holds a listening socket on ``port``.

    Used so that readiness is never concluded from somebody else's server that owns the port, and
    so that nothing connects before the server listens.
    """
    inodes = _listen_inodes(port)
    if not inodes:
        return False
    wanted = {f"socket:[{i}]" for i in inodes}
    for p in _process_tree(pid):
        fd_dir = f"/proc/{p}/fd"
        with contextlib.suppress(OSError):
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    if os.readlink(f"{fd_dir}/{fd}") in wanted:
                        return True
    return False


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    interval: float = 0.02,
    message: str | Callable[[], str] = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy and return that value.

    Raises TimeoutError with ``message`` (a callable is evaluated only on timeout, so it can gather
    expensive diagnostics).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise TimeoutError(f"timed out after {timeout:.1f} s waiting for {text}")
        time.sleep(interval)


def _tail(path: Path, offset: int = 0, lines: int = 40) -> str:
    """The last ``lines`` lines of ``path`` written after byte ``offset`` (this run's part only)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return f"<{path} does not exist>"
    text = data.decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])


def connect_tcp(host: str, port: int, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    """A pymysql connection to a harness server: root without a password, autocommit, plaintext (``kw`` overrides).

    pymysql >= 1.2 defaults to "preferred" TLS and builds an SSL context per connect (~40 ms of CA loading here); the
    private servers have no TLS unless a test gives it, and plaintext keeps packet captures readable.
    """
    params: dict[str, Any] = {"host": host, "port": port, "user": "root", "password": "", "autocommit": True,
                              "connect_timeout": 5, "ssl_disabled": True}
    params.update(kw)
    return pymysql.connect(**params)


def _quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# Best-effort cleanup if a test process exits without running fixture teardown (e.g. sys.exit in a
# helper script). Fixtures stop instances themselves; this only catches leftovers.
_live_lock = threading.Lock()
_live: dict[int, Callable[[], None]] = {}


def _register_live(pid: int, killer: Callable[[], None]) -> None:
    with _live_lock:
        _live[pid] = killer


def _unregister_live(pid: int) -> None:
    with _live_lock:
        _live.pop(pid, None)


def kill_all_live() -> list[int]:
    """SIGKILL every server process started by this harness that is still registered; return PIDs."""
    with _live_lock:
        items = list(_live.items())
    for _, killer in items:
        with contextlib.suppress(Exception):
            killer()
    return [pid for pid, _ in items]


atexit.register(kill_all_live)


# --------------------------------------------------------------------------------------------------
# datadir creation


# mariadb-install-db runs of concurrent test sessions (pytest-xdist workers, two checkouts) are serialised
# machine-wide: concurrent bootstraps sometimes failed on each other's temporary files in /tmp.
INSTALL_DB_LOCK = Path(tempfile.gettempdir()) / "binlogd-mariadb-install-db.lock"


def _install_db(datadir: Path, log: Path) -> None:
    """Run mariadb-install-db into ``datadir`` (which must not exist yet), one run at a time on this machine.

    With a private tmpdir: the bootstrap's temporary tables in a shared /tmp failed about one run in three while
    other servers ran ("Unknown table 'mysql.tmp_...'", or an install without a root account).
    """
    tmpdir = datadir.parent / f"{datadir.name}.tmpdir"
    tmpdir.mkdir(parents=True, exist_ok=True)
    cmd = [_require_binary("mariadb-install-db"), *INSTALL_DB_ARGS, f"--datadir={datadir}", f"--tmpdir={tmpdir}"]
    env = dict(os.environ, TMPDIR=str(tmpdir))
    with open(log, "wb") as out, open(INSTALL_DB_LOCK, "a") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False, env=env).returncode
    shutil.rmtree(tmpdir, ignore_errors=True)
    if rc != 0:
        raise HarnessError(f"mariadb-install-db failed (exit {rc}):\n{_tail(log)}")


def _ensure_template(template_dir: Path) -> Path:
    """Install system tables once into ``template_dir/data`` and return that path.

    Safe against concurrent callers in threads and processes (flock); the install goes to a temporary
    directory that is renamed into place, so a half-written template is never copied.
    """
    data = template_dir / "data"
    if (data / "mysql").is_dir():
        return data
    template_dir.mkdir(parents=True, exist_ok=True)
    with open(template_dir / ".lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        try:
            if not (data / "mysql").is_dir():
                tmp = template_dir / f"data.tmp-{os.getpid()}-{threading.get_ident()}"
                shutil.rmtree(tmp, ignore_errors=True)
                _install_db(tmp, template_dir / "install.log")
                os.rename(tmp, data)
        finally:
            fcntl.flock(lockf, fcntl.LOCK_UN)
    return data


# --------------------------------------------------------------------------------------------------
# the server


class MariaDB:
    """One private mariadbd process. Create with :meth:`start`; always :meth:`stop` (fixtures do)."""

    def __init__(
        self,
        base_dir: Path,
        name: str,
        server_id: int,
        extra_args: Sequence[str],
        port: int,
    ) -> None:
        self.name = name
        self.dir = Path(base_dir) / name
        self.datadir = self.dir / "data"
        self.socket = self.dir / "mysqld.sock"
        self.tmpdir = self.dir / "tmp"
        self.pid_file = self.dir / "mariadbd.pid"
        self.error_log = self.dir / "error.log"
        self.stdout_log = self.dir / "stdout.log"
        self.host = HOST
        self.port = port
        self.server_id = server_id
        self.extra_args: list[str] = list(extra_args)
        self.pid: int = 0
        self.start_seconds: float = 0.0  # wall time of the last start (datadir creation + ready)
        self.is_replica = False  # change_master() was called: teardown stops replicas first
        self.master: Any = None  # the server given to change_master_to()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<MariaDB {self.name} {self.host}:{self.port} server_id={self.server_id} pid={self.pid} {state}>"

    # ---- lifecycle ------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        base_dir: Path,
        name: str,
        server_id: int,
        *extra_args: str,
        datadir_setup: Callable[[Path], None] | None = None,
        port: int | None = None,
        template_dir: Path | None = None,
        timeout: float = START_TIMEOUT,
    ) -> MariaDB:
        """Create ``base_dir/name/data`` if absent, run ``datadir_setup(datadir)``, start, wait ready.

        ``port=None`` picks a free port (and retries on another one if it was taken meanwhile); an
        explicit port is used as is. ``template_dir`` (shared by many instances) makes datadir creation
        a copy of a once-installed datadir instead of a mariadb-install-db run.
        """
        t0 = time.monotonic()
        mysqld = _require_binary("mariadbd")
        inst = cls(Path(base_dir), name, server_id, extra_args, port or 0)
        if len(str(inst.socket)) > MAX_SOCKET_PATH:
            raise ValueError(f"socket path too long for a unix socket ({len(str(inst.socket))}): {inst.socket}")
        inst.dir.mkdir(parents=True, exist_ok=True)
        inst.tmpdir.mkdir(exist_ok=True)
        if not (inst.datadir / "mysql").is_dir():
            shutil.rmtree(inst.datadir, ignore_errors=True)
            if template_dir is not None:
                shutil.copytree(_ensure_template(Path(template_dir)), inst.datadir)
            else:
                _install_db(inst.datadir, inst.dir / "install.log")
        if datadir_setup is not None:
            datadir_setup(inst.datadir)
        inst._launch_until_ready(mysqld, auto_port=port is None, timeout=timeout)
        inst.start_seconds = time.monotonic() - t0
        return inst

    def _command(self, mysqld: str) -> list[str]:
        return [
            mysqld,
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",  # private: no name clashes with other servers' temporary files
            f"--socket={self.socket}",
            f"--pid-file={self.pid_file}",
            f"--port={self.port}",
            f"--bind-address={HOST}",
            f"--log-error={self.error_log}",
            f"--server-id={self.server_id}",
            # Relay logs named independently of the hostname (mariadbd warns otherwise once a
            # replica starts); harmless on a primary.
            "--relay-log=relay-bin",
            *INNODB_ARGS,
            *self.extra_args,
        ]

    def _launch_until_ready(self, mysqld: str, *, auto_port: bool, timeout: float) -> None:
        attempts = 5 if auto_port else 1
        for attempt in range(attempts):
            if auto_port:
                self.port = free_port()
            try:
                self._launch(mysqld)
                self._wait_ready(timeout)
                return
            except MariaDBStartError as e:
                if not (e.port_in_use and attempt + 1 < attempts):
                    raise

    def _launch(self, mysqld: str) -> None:
        self._log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        with open(self.stdout_log, "ab") as out:
            # Own session: a Ctrl-C in the terminal reaches pytest only, which then tears down in order.
            self._proc = subprocess.Popen(
                self._command(mysqld),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self._proc.pid
        proc = self._proc
        _register_live(self.pid, lambda: self._emergency_kill(proc))

    @staticmethod
    def _emergency_kill(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)

    def _is_ours(self) -> bool:
        """True once THIS mariadbd accepts SQL on our port.

        /proc first (our PID holds the listening socket), so we never connect to a stranger that owns
        the port (a squatter that never answers would block the probe); then SELECT @@datadir with
        short timeouts as the final word.
        """
        if not listens_on(self.pid, self.port):
            return False
        try:
            conn = self.connect(connect_timeout=1, read_timeout=2, write_timeout=2)
        except pymysql.Error:
            return False
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1, @@datadir")
                row = cur.fetchone()
        except pymysql.Error:
            return False
        finally:
            with contextlib.suppress(Exception):
                conn.close()
        return row is not None and os.path.realpath(str(row[1])) == os.path.realpath(self.datadir)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if pid_exited(self.pid, self._proc):
                rc = self._proc.returncode if self._proc else None
                _unregister_live(self.pid)
                tail = _tail(self.error_log, self._log_offset)
                in_use = "Address already in use" in tail or "Bind on TCP/IP port" in tail
                raise MariaDBStartError(
                    f"mariadbd {self.name} (port {self.port}) exited with {rc} while starting; "
                    f"{self.error_log} tail:\n{tail}",
                    port_in_use=in_use,
                )
            if self._is_ours():
                return
            if time.monotonic() >= deadline:
                tail = _tail(self.error_log, self._log_offset)
                self.kill9()
                raise MariaDBStartError(
                    f"mariadbd {self.name} did not accept connections on {self.host}:{self.port} "
                    f"within {timeout:.0f} s; {self.error_log} tail:\n{tail}"
                )
            time.sleep(0.03)

    def error_log_tail(self, lines: int = 40) -> str:
        """The last lines the current (or last) run wrote to error.log."""
        return _tail(self.error_log, self._log_offset, lines)

    @property
    def is_running(self) -> bool:
        return self.pid != 0 and not pid_exited(self.pid, self._proc)

    def _wait_exit(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not pid_exited(self.pid, self._proc):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM by PID and wait for the exit (clean shutdown, ~25-40 ms); SIGKILL after ``timeout``."""
        if self.pid == 0:
            return
        if not pid_exited(self.pid, self._proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            if not self._wait_exit(timeout):
                warnings.warn(
                    f"mariadbd {self.name} pid {self.pid} ignored SIGTERM for {timeout} s; SIGKILL",
                    stacklevel=2,
                )
                self.kill9()
                return
        _unregister_live(self.pid)

    def kill9(self) -> None:
        """SIGKILL by PID (a crash: the next start runs InnoDB and binlog crash recovery)."""
        if self.pid == 0:
            return
        if not pid_exited(self.pid, self._proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            if not self._wait_exit(10):
                raise HarnessError(f"mariadbd {self.name} pid {self.pid} survived SIGKILL")
        _unregister_live(self.pid)

    def restart(self, extra_args: Sequence[str] | None = None, timeout: float = START_TIMEOUT) -> MariaDB:
        """Stop (if running) and start again on the same port and datadir, optionally with new args."""
        self.stop()
        if extra_args is not None:
            self.extra_args = list(extra_args)
        t0 = time.monotonic()
        mysqld = _require_binary("mariadbd")
        # Same port on purpose: replicas point at it. mariadbd binds with SO_REUSEADDR, so the port of
        # the previous run is immediately reusable; retry briefly in case something grabbed it.
        for attempt in range(3):
            try:
                self._launch(mysqld)
                self._wait_ready(timeout)
                break
            except MariaDBStartError as e:
                if not (e.port_in_use and attempt < 2):
                    raise
                time.sleep(0.5)
        self.start_seconds = time.monotonic() - t0
        return self

    # ---- SQL ------------------------------------------------------------------------------------

    def connect(self, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
        """A new pymysql connection as root over TCP, autocommit on (override anything with ``kw``)."""
        return connect_tcp(self.host, self.port, **kw)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run one statement on a fresh connection and return its rows.

        A fresh connection per call keeps calls independent (session variables such as
        skip_replication do not leak into later calls, restarts need no reconnect logic) and makes the
        helper thread-safe; loopback connects cost ~1 ms. ``args`` are pymysql ``%s`` parameters.
        """
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args if args else None)
                return list(cur.fetchall())
        finally:
            conn.close()

    def execute(self, sql: str) -> list[list[tuple[Any, ...]]]:
        """Run a script of ``;``-separated statements in ONE session; return each statement's rows.

        One session on purpose: ``SET skip_replication=1; INSERT ...`` must apply the SET to the INSERT.
        An error in any statement raises (pymysql reports it when that result is reached).
        """
        conn = self.connect(client_flag=CLIENT.MULTI_STATEMENTS)
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                results = [list(cur.fetchall())]
                while cur.nextset():
                    results.append(list(cur.fetchall()))
                return results
        finally:
            conn.close()

    def master_status(self) -> tuple[str, int]:
        """(File, Position) of SHOW MASTER STATUS: where a replica that has everything stands."""
        rows = self.query("SHOW MASTER STATUS")
        if not rows:
            raise HarnessError(f"{self.name}: SHOW MASTER STATUS is empty (binary log disabled?)")
        return str(rows[0][0]), int(rows[0][1])

    def binary_logs(self) -> list[tuple[str, int]]:
        """SHOW BINARY LOGS as (Log_name, File_size) pairs."""
        return [(str(r[0]), int(r[1])) for r in self.query("SHOW BINARY LOGS")]

    # ---- replica helpers ------------------------------------------------------------------------

    def change_master(
        self,
        host: str,
        port: int,
        user: str = "root",
        password: str = "",
        use_gtid: UseGtid | None = None,
        log_file: str | None = None,
        log_pos: int | None = None,
        heartbeat: float | None = None,
        connect_retry: int = 1,
    ) -> None:
        """CHANGE MASTER TO ... (the replica must be stopped).

        ``use_gtid=None`` means ``no`` when ``log_file`` is given (file/pos replication) and
        ``slave_pos`` (the 10.11 default) otherwise. ``connect_retry=1`` so a replica whose primary is
        not up yet retries every second instead of 60 s.
        """
        if use_gtid is None:
            use_gtid = "no" if log_file is not None else "slave_pos"
        if use_gtid not in _USE_GTID:
            raise ValueError(f"use_gtid must be one of {_USE_GTID}, not {use_gtid!r}")
        parts = ["MASTER_HOST=%s", "MASTER_PORT=%s", "MASTER_USER=%s", "MASTER_PASSWORD=%s"]
        args: list[Any] = [host, int(port), user, password]
        parts.append(f"MASTER_USE_GTID={use_gtid}")
        if log_file is not None:
            parts.append("MASTER_LOG_FILE=%s")
            args.append(log_file)
        if log_pos is not None:
            parts.append("MASTER_LOG_POS=%s")
            args.append(int(log_pos))
        if heartbeat is not None:
            parts.append(f"MASTER_HEARTBEAT_PERIOD={float(heartbeat):.3f}")
        parts.append(f"MASTER_CONNECT_RETRY={int(connect_retry)}")
        self.query("CHANGE MASTER TO " + ", ".join(parts), *args)
        self.is_replica = True

    def set_skip_mode(self, mode: SkipMode) -> None:
        """SET GLOBAL replicate_events_marked_for_skip (MariaDB refuses it while the replica runs)."""
        if mode not in _SKIP_MODES:
            raise ValueError(f"mode must be one of {_SKIP_MODES}, not {mode!r}")
        self.query(f"SET GLOBAL replicate_events_marked_for_skip={mode}")

    def start_slave(self) -> None:
        self.query("START SLAVE")

    def stop_slave(self) -> None:
        """STOP SLAVE (synchronous: both threads have stopped when it returns)."""
        self.query("STOP SLAVE")

    def reset_slave(self, forget_master: bool = True) -> None:
        """RESET SLAVE [ALL]: drop relay logs and position; ALL also forgets the CHANGE MASTER settings."""
        self.query("RESET SLAVE ALL" if forget_master else "RESET SLAVE")

    def slave_status(self) -> dict[str, Any]:
        """SHOW SLAVE STATUS as {column: value}; {} when no replication is configured."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW SLAVE STATUS")
                row = cur.fetchone()
                if row is None:
                    return {}
                names = [d[0] for d in cur.description]
                return dict(zip(names, row, strict=True))
        finally:
            conn.close()

    def gtid_slave_pos(self) -> str:
        return str(self.query("SELECT @@gtid_slave_pos")[0][0])

    @staticmethod
    def format_slave_status(status: dict[str, Any]) -> str:
        return "\n".join(f"  {k}: {v}" for k, v in status.items()) or "  <no replication configured>"

    def wait_slave_pos(
        self, file: str, pos: int, timeout: float = 30.0, *, fail_on_error: bool = True
    ) -> dict[str, Any]:
        """Wait until the replica has read AND executed everything up to ``file``:``pos``.

        Checks Relay_Master_Log_File == file and Exec_Master_Log_Pos == Read_Master_Log_Pos == pos.
        With ``fail_on_error`` a replication thread that stopped with an error ends the wait at once
        (waiting 30 s for a dead SQL thread helps nobody). Raises SlaveWaitError with the full SHOW
        SLAVE STATUS (Last_IO_Error / Last_SQL_Error included). Returns the final status.

        Note: right after CHANGE MASTER TO MASTER_LOG_FILE=f, MASTER_LOG_POS=p the replica already
        reports f:p as read and executed, so waiting for exactly that position proves nothing.
        """
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while True:
            status = self.slave_status()
            if (
                status
                and status.get("Relay_Master_Log_File") == file
                and int(status.get("Exec_Master_Log_Pos") or 0) == pos
                and int(status.get("Read_Master_Log_Pos") or 0) == pos
            ):
                return status
            if fail_on_error and status:
                io_dead = status.get("Slave_IO_Running") == "No" and status.get("Last_IO_Errno")
                sql_dead = status.get("Slave_SQL_Running") == "No" and status.get("Last_SQL_Errno")
                if io_dead or sql_dead:
                    raise SlaveWaitError(
                        f"{self.name}: replication stopped with an error while waiting for {file}:{pos}\n"
                        + self.format_slave_status(status),
                        status,
                    )
            if time.monotonic() >= deadline:
                raise SlaveWaitError(
                    f"{self.name}: replica did not reach {file}:{pos} within {timeout:.1f} s\n"
                    + self.format_slave_status(status),
                    status,
                )
            time.sleep(0.02)

    def change_master_to(
        self,
        server: Any,
        use_gtid: UseGtid | None = None,
        *,
        skip_mode: SkipMode | None = None,
        log_file: str | None = None,
        log_pos: int | None = None,
        heartbeat: float | None = None,
        start: bool = True,
    ) -> None:
        """Replicate from ``server`` (a binlogd or a MariaDB: anything with host, port and master_status()).

        Stops replication if it runs, sets ``replicate_events_marked_for_skip`` when ``skip_mode`` is given, runs
        CHANGE MASTER TO (GTID ``slave_pos`` unless ``log_file`` is given) and, with ``start``, START SLAVE.
        :meth:`wait_caught_up` then waits for that server's current end.
        """
        if self.slave_status():
            self.stop_slave()
        if skip_mode is not None:
            self.set_skip_mode(skip_mode)
        self.change_master(server.host, server.port, use_gtid=use_gtid, log_file=log_file, log_pos=log_pos,
                           heartbeat=heartbeat)
        self.master = server
        if start:
            self.start_slave()

    def status(self) -> dict[str, Any]:
        """SHOW SLAVE STATUS as {column: value} ({} when no replication is configured)."""
        return self.slave_status()

    def wait_caught_up(self, primary: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until this replica has read and executed everything ``primary`` has now (SHOW MASTER STATUS).

        ``primary`` defaults to the server given to :meth:`change_master_to`. Raises SlaveWaitError (with the full
        SHOW SLAVE STATUS) on timeout or when a replication thread stopped with an error.
        """
        primary = primary if primary is not None else self.master
        if primary is None:
            raise HarnessError(f"{self.name}: wait_caught_up needs a primary (or change_master_to first)")
        file, pos = primary.master_status()
        return self.wait_slave_pos(file, pos, timeout)

    def diagnostics(self) -> tuple[str, str]:
        """(title, text) for a failing test's report: the error log tail and, for a replica, SHOW SLAVE STATUS."""
        text = f"{self!r}\n--- {self.error_log} (this run, tail) ---\n{self.error_log_tail()}"
        if self.is_running:
            try:
                status = self.slave_status()
                if status:
                    text += "\n--- SHOW SLAVE STATUS ---\n" + self.format_slave_status(status)
            except Exception as e:
                text += f"\n--- SHOW SLAVE STATUS failed: {e!r}"
        return (f"mariadbd {self.name}", text)

    def wait_until(
        self,
        predicate: Callable[[], T],
        timeout: float = 30.0,
        interval: float = 0.02,
        message: str | Callable[[], str] = "condition",
    ) -> T:
        """Generic poll (see module-level :func:`wait_until`); the message names this instance."""
        msg = message

        def describe() -> str:
            base = msg() if callable(msg) else msg
            return f"{base} on {self.name}"

        return wait_until(predicate, timeout, interval, describe)

    def table_checksums(self, databases: Iterable[str]) -> dict[str, int | None]:
        """{'db.table': CHECKSUM TABLE value} for every base table of ``databases``.

        Equal dicts on primary and replica mean equal contents (and the same set of tables); a table
        that vanished between listing and checksumming yields None.
        """
        dbs = list(databases)
        if not dbs:
            return {}
        marks = ", ".join(["%s"] * len(dbs))
        tables = self.query(
            "SELECT table_schema, table_name FROM information_schema.tables "
            f"WHERE table_type = 'BASE TABLE' AND table_schema IN ({marks}) "
            "ORDER BY table_schema, table_name",
            *dbs,
        )
        if not tables:
            return {}
        names = ", ".join(f"{_quote_ident(s)}.{_quote_ident(t)}" for s, t in tables)
        rows = self.query(f"CHECKSUM TABLE {names}")
        return {str(r[0]): (None if r[1] is None else int(r[1])) for r in rows}


# --------------------------------------------------------------------------------------------------
# a real primary serving copied binlog files

_BINLOG_NAME = r"^{}\.(\d{{6,}})$"


def _validate_binlog_names(binlog_files: Sequence[Path], basename: str) -> list[Path]:
    files = [Path(f) for f in binlog_files]
    if not files:
        raise ValueError("make_primary_from_binlogs needs at least one binlog file")
    pattern = re.compile(_BINLOG_NAME.format(re.escape(basename)))
    numbers = []
    for f in files:
        m = pattern.match(f.name)
        if m is None:
            raise ValueError(
                f"{f.name}: binlog files must be named {basename}.NNNNNN (their names are kept because "
                "the Rotate events inside them name the next file)"
            )
        if not f.is_file():
            raise FileNotFoundError(f)
        numbers.append(int(m.group(1)))
    if numbers != sorted(set(numbers)):
        raise ValueError(f"binlog files must be given in increasing order without duplicates: {numbers}")
    return files


def binlog_datadir_setup(binlog_files: Sequence[Path], basename: str = "mysql-bin") -> Callable[[Path], None]:
    """A ``datadir_setup`` hook that copies binlog files into the datadir and writes the index.

    The index format is what mariadbd itself writes: one ``./<name>`` line per file, each ending in
    a newline. Files are copied with mode 0660 (the oracle copies are read-only; mariadbd only reads
    them, but a read-only file in a datadir surprises people who later wipe or reuse it).
    """
    files = _validate_binlog_names(binlog_files, basename)

    def setup(datadir: Path) -> None:
        index = datadir / f"{basename}.index"
        if index.exists():
            raise HarnessError(
                f"{index} exists already: this datadir has served binlogs before; use restart() to "
                "start it again, or a new instance name for a fresh copy"
            )
        for f in files:
            dst = datadir / f.name
            shutil.copyfile(f, dst)
            os.chmod(dst, 0o660)
        index.write_text("".join(f"./{f.name}\n" for f in files))

    return setup


def make_primary_from_binlogs(
    base_dir: Path,
    name: str,
    server_id: int,
    binlog_files: Sequence[Path],
    basename: str = "mysql-bin",
    *,
    extra_args: Sequence[str] = (),
    template_dir: Path | None = None,
    port: int | None = None,
) -> MariaDB:
    """Start a real MariaDB primary whose binary log consists of copies of ``binlog_files``.

    What happens (MariaDB 10.11.19, measured): mariadbd reads the index, keeps the copied files
    byte-identical (even a copied still-"in use" last file: it runs binlog crash recovery over it,
    logs "Recovering after a crash using mysql-bin", and does not rewrite it) and opens ONE NEW file
    numbered after the last copy, containing only Format_desc, Gtid_list [the GTID state of the
    copies, e.g. 0-1-13] and Binlog_checkpoint (itself); 342 bytes for a one-GTID list. SHOW BINARY
    LOGS lists the copies with their sizes plus the new file; SHOW MASTER STATUS is (new file, its
    size). A replica in file/pos mode from ``<first copy>:4`` gets the copies' events at their
    original positions and ends at SHOW MASTER STATUS.

    The primary has NONE of the data the binlogs describe (nothing is applied to it), and its
    @@gtid_binlog_state is taken from the copies. A replica must not have the server_id found in the
    copied events (it would silently skip them, replicate_same_server_id=0); the primary's own
    server_id does not matter for serving.
    """
    setup = binlog_datadir_setup(binlog_files, basename)
    return MariaDB.start(
        base_dir,
        name,
        server_id,
        f"--log-bin={basename}",
        "--binlog-format=ROW",
        *extra_args,
        datadir_setup=setup,
        template_dir=template_dir,
        port=port,
    )
