"""Factories that start binlogd servers and MariaDB instances for one test and stop them all at its end.

The plugin's fixtures and the project's own conftest use these; each started server is handed to ``on_start``
(the plugin attaches its log tail to a failing test's report).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .binlogd_server import Binlogd
from .faults import Fault, write_faults
from .ledger_view import DumpConnection, read_connections
from .mariadb import HarnessError, MariaDB, make_primary_from_binlogs, wait_until

OnStart = Callable[[Any], None]


class Server(Binlogd):
    """A binlogd started by :class:`BinlogdFactory`: the process plus where its datadir, ledger and faults are."""

    datadir: Path | None = None
    binlog_dir: Path | None = None  # the directory it serves (its datadir in standalone and relay modes)
    ledger_dir: Path | None = None
    faults_path: Path | None = None
    mode: str = "custom"

    def execute(self, sql: str) -> list[list[tuple[Any, ...]]]:
        """Run ``;``-separated statements on one connection; the rows of each statement that returned any."""
        conn = self.connect()
        try:
            out: list[list[tuple[Any, ...]]] = []
            with conn.cursor() as cur:
                for stmt in _split_statements(sql):
                    cur.execute(stmt)
                    if cur.description is not None:
                        out.append(list(cur.fetchall()))
            return out
        finally:
            conn.close()

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """One statement with pymysql parameters; its rows."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args or None)
                return list(cur.fetchall()) if cur.description is not None else []
        finally:
            conn.close()

    def master_status(self) -> tuple[str, int]:
        """(File, Position) of SHOW MASTER STATUS: where a replica that has everything stands."""
        rows = self.query("SHOW MASTER STATUS")
        if not rows:
            raise HarnessError(f"{self!r}: SHOW MASTER STATUS is empty")
        return str(rows[0][0]), int(rows[0][1])

    def connections(self, at_least: int = 0, timeout: float = 10.0) -> list[DumpConnection]:
        """Every dump connection so far (open and closed), from the audit ledger, in the order they started.
        The ledger's thread writes a dump's records a moment after the dump hands them over, so a dump that began
        just before the client's last read may not be there yet: ``at_least=N`` waits (up to ``timeout`` s) until
        N connections are."""
        ledger = self.ledger_dir
        if ledger is None:
            raise HarnessError(f"{self!r} runs without a ledger (started with custom arguments)")
        if at_least <= 0:
            return read_connections(ledger)
        return wait_until(lambda: c if len(c := read_connections(ledger)) >= at_least else None, timeout, 0.02,
                          lambda: f"{at_least} dump connection(s) in the ledger of {self!r} "
                                  f"({len(read_connections(ledger))} there)")

    def wait_for_clients(self, n: int, timeout: float = 10.0) -> list[DumpConnection]:
        """Wait until ``n`` dump connections are open at once; return them."""
        return wait_until(lambda: (c := [x for x in self.connections() if not x.closed]) and len(c) >= n and c,
                          timeout, 0.02, f"{n} open dump connection(s) on {self!r}")

    def inject(self, *faults: Fault) -> None:
        """Replace the server's fault set (``binlogd.testing.faults.Fault``); dump connections from now on get it."""
        if self.faults_path is None:
            raise HarnessError(f"{self!r} runs without a faults file (started with custom arguments)")
        write_faults(self.faults_path, list(faults))

    def clear_faults(self) -> None:
        """No faults for the dump connections that start from now on."""
        self.inject()


def _split_statements(sql: str) -> list[str]:
    """Statements of a script split at ``;`` outside quotes (enough for test scripts)."""
    out, cur, quote = [], [], ""
    for ch in sql:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch == ";":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


class BinlogdFactory:
    """Starts binlogd servers in ``base_dir`` and stops them all (newest first) in :meth:`stop_all`."""

    def __init__(self, base_dir: Path, on_start: OnStart | None = None) -> None:
        self.base_dir = Path(base_dir)
        self.servers: list[Binlogd] = []
        self._on_start = on_start
        self._lock = threading.Lock()
        self._n = itertools.count(1)

    def __call__(self, args: Sequence[str] = (), port: int | None = None, **kw: Any) -> Binlogd:
        """``binlogd serve ARGS`` as given (log in the test directory); see Binlogd.start for ``kw``."""
        return self._start(Binlogd, list(args), port, **kw)

    def _start(self, cls: type[Binlogd], args: list[str], port: int | None, **kw: Any) -> Any:
        log_path = self.base_dir / f"binlogd-{next(self._n)}.log"
        server = cls.start(args, port, log_path=log_path, **kw)
        with self._lock:
            self.servers.append(server)
        if self._on_start is not None:
            self._on_start(server)
        return server

    def _own_dir(self, prefix: str) -> Path:
        for i in itertools.count(1):
            d = self.base_dir / f"{prefix}{i}"
            with contextlib.suppress(FileExistsError):
                d.mkdir(parents=True)
                return d
        raise AssertionError("unreachable")

    def _managed(self, mode: str, mode_args: list[str], datadir: Path | None, binlog_dir: Path, work: Path,
                 args: Sequence[str], server_id: int, **kw: Any) -> Server:
        ledger, faults = work / "ledger", work / "faults.json"
        write_faults(faults, [])
        full = [*mode_args, "--server-id", str(server_id), "--ledger", str(ledger), "--faults", str(faults), *args]
        server: Server = self._start(Server, full, kw.pop("port", None), **kw)
        server.mode, server.datadir, server.binlog_dir = mode, datadir, binlog_dir
        server.ledger_dir, server.faults_path = ledger, faults
        return server

    def standalone(self, args: Sequence[str] = (), *, server_id: int = 1, **kw: Any) -> Server:
        """A standalone binlogd (writable primary) with a fresh datadir; ``args`` are more ``serve`` options."""
        work = self._own_dir("binlogd-standalone-")
        datadir = work / "data"
        return self._managed("standalone", ["--datadir", str(datadir)], datadir, datadir, work, args, server_id,
                             **kw)

    def serve(self, binlogs: Any, args: Sequence[str] = (), *, server_id: int = 1, **kw: Any) -> Server:
        """binlogd serving a directory of binlog files read-only (``--binlog-dir``): a BinlogBuilder or a path.

        For a builder, @@binlog_row_metadata is reported as the builder wrote it (FULL by default), so CDC clients
        get column names and signedness from its TABLE_MAP events.
        """
        directory = Path(getattr(binlogs, "directory", binlogs))
        work = self._own_dir("binlogd-dir-")
        mode_args = ["--binlog-dir", str(directory)]
        if hasattr(binlogs, "row_metadata") and "--binlog-row-metadata" not in args:
            mode_args += ["--binlog-row-metadata", binlogs.row_metadata]  # what the builder wrote: CDC clients use it
        return self._managed("directory", mode_args, None, directory, work, args, server_id, **kw)

    def relay(self, upstream: Any, args: Sequence[str] = (), *, server_id: int = 11, user: str = "root",
              **kw: Any) -> Server:
        """binlogd replicating ``upstream`` (a MariaDB; anything with host and port) into a fresh datadir."""
        work = self._own_dir("binlogd-relay-")
        datadir = work / "data"
        url = f"mysql://{user}@{upstream.host}:{upstream.port}"
        return self._managed("relay", ["--upstream", url, "--datadir", str(datadir)], datadir, datadir, work, args,
                             server_id, **kw)

    def stop_all(self) -> None:
        for server in reversed(self.servers):
            server.stop()


class MariaDBFactory:
    """Starts MariaDB instances in ``base_dir`` and stops them all (replicas first) in :meth:`stop_all`.

    Thread-safe, so a test may start several instances in parallel from a thread pool. Datadirs are copies of one
    template installed once into ``template_dir``.
    """

    def __init__(self, base_dir: Path, template_dir: Path, on_start: OnStart | None = None) -> None:
        self.base_dir = Path(base_dir)
        self.template_dir = Path(template_dir)
        self.instances: list[MariaDB] = []
        self._on_start = on_start
        self._lock = threading.Lock()
        self._replicas = itertools.count(1)

    def _track(self, inst: MariaDB) -> MariaDB:
        with self._lock:
            self.instances.append(inst)
        if self._on_start is not None:
            self._on_start(inst)
        return inst

    def __call__(self, name: str, server_id: int, *extra_args: str, datadir_setup: Any = None,
                 port: int | None = None) -> MariaDB:
        """A MariaDB named ``name`` with ``server_id`` and extra mariadbd arguments, on a free port."""
        return self._track(MariaDB.start(self.base_dir, name, server_id, *extra_args, datadir_setup=datadir_setup,
                                         port=port, template_dir=self.template_dir))

    def primary(self, name: str = "primary", server_id: int = 1, *extra_args: str) -> MariaDB:
        """A primary with a ROW binary log named mysql-bin."""
        return self(name, server_id, "--log-bin=mysql-bin", "--binlog-format=ROW", *extra_args)

    def replica(self, name: str | None = None, server_id: int | None = None, *extra_args: str) -> MariaDB:
        """A replica-to-be (``replica1``, ``replica2``, ... with server_id 2, 3, ...); see MariaDB.change_master_to."""
        n = next(self._replicas)
        return self(name or f"replica{n}", server_id if server_id is not None else 1 + n, *extra_args)

    def primary_from_binlogs(self, name: str, server_id: int, binlog_files: Sequence[Path],
                             basename: str = "mysql-bin", extra_args: Sequence[str] = ()) -> MariaDB:
        """A primary whose binlog is a copy of ``binlog_files`` (see make_primary_from_binlogs)."""
        return self._track(make_primary_from_binlogs(self.base_dir, name, server_id, binlog_files, basename,
                                                     extra_args=extra_args, template_dir=self.template_dir))

    def stop_all(self) -> None:
        """Stop every instance, replicas first, each group in reverse start order; raise the first error.

        Replicas first: a replica whose primary vanished is busy reconnecting, and the primary's shutdown would
        otherwise also have to end live dump threads.
        """
        order = [i for i in reversed(self.instances) if i.is_replica]
        order += [i for i in reversed(self.instances) if not i.is_replica]
        errors: list[BaseException] = []
        for inst in order:
            try:
                inst.stop()
            except BaseException as e:
                errors.append(e)
                with contextlib.suppress(Exception):
                    inst.kill9()
        if errors:
            raise errors[0]
