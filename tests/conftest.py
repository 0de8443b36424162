"""Shared pytest fixtures: private real MariaDB servers and binlogd subprocesses, torn down by PID.

* ``mariadb_base`` (session): one unique directory under /tmp for everything this run starts. It is
  short on purpose (unix socket paths are limited to 107 bytes) and removed at the end unless a test
  failed or BINLOGD_KEEP_TMP=1 (then its path is printed in the summary).
* ``harness_dir`` (function): this test's own directory inside it.
* ``mariadb`` (function): a :class:`MariaDBFactory`; ``mariadb("primary", 1, "--log-bin=mysql-bin")``
  starts an instance; all instances of the test are stopped (SIGTERM by PID) when it ends, pass or fail.
* ``binlogd`` (function): a :class:`BinlogdFactory` for ``python -m server.cli serve``; same guarantee.

Tests that use ``mariadb`` / ``mariadb_binaries`` get the ``mariadb`` marker automatically (deselect
them with ``-m 'not mariadb'``). If the MariaDB binaries are missing, those tests FAIL (setup error)
instead of being skipped: CI installs MariaDB, so a missing binary is a broken environment, and a
silently skipped end-to-end suite would look green.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Binlogd, MariaDB, find_binary, kill_all_live, make_primary_from_binlogs

MARIADB_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb-binlog")
MARIADB_FIXTURES = frozenset({"mariadb", "mariadb_binaries"})

_servers_key = pytest.StashKey[list[Any]]()
_failed_key = pytest.StashKey[bool]()
_kept_dirs_key = pytest.StashKey[list[Path]]()
_test_counter = itertools.count(1)


# ---- marker ------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mariadb: needs real MariaDB 10.11 binaries (mariadbd, mariadb-binlog)")
    config.stash[_kept_dirs_key] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if MARIADB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.mariadb)


def _missing_binaries() -> list[str]:
    return [b for b in MARIADB_BINARIES if find_binary(b) is None]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("mariadb") is not None:
        missing = _missing_binaries()
        if missing:
            pytest.fail(
                f"MariaDB binaries not found: {', '.join(missing)} (looked on PATH and in /usr/sbin). "
                "These tests need a real MariaDB 10.11: apt-get install -y mariadb-server mariadb-client "
                "(or `make mariadb`). Not skipping on purpose: CI must have them.",
                pytrace=False,
            )


# ---- diagnostics on failure ---------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """On failure, append each server's log tail (and replica status) to the report.

    Runs before fixture teardown, so the servers are still up and can be asked.
    """
    report = yield
    if report.failed:
        item.stash[_failed_key] = True
    if report.failed and report.when in ("setup", "call"):
        for server in item.stash.get(_servers_key, []):
            with contextlib.suppress(Exception):
                report.sections.append(_diagnostics(server))
    return report


def _diagnostics(server: Any) -> tuple[str, str]:
    if hasattr(server, "error_log_tail"):  # a MariaDB (duck-typed: robust to a second import path)
        text = f"{server!r}\n--- {server.error_log} (this run, tail) ---\n{server.error_log_tail()}"
        if server.is_running:
            try:
                status = server.slave_status()
                if status:
                    text += "\n--- SHOW SLAVE STATUS ---\n" + MariaDB.format_slave_status(status)
            except Exception as e:
                text += f"\n--- SHOW SLAVE STATUS failed: {e!r}"
        return (f"mariadbd {server.name}", text)
    return (f"binlogd :{server.port}", f"{server!r}\n--- {server.log_path} (tail) ---\n{server.log_tail()}")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    kept = config.stash.get(_kept_dirs_key, [])
    if kept:
        terminalreporter.write_sep("-", "harness directories kept for inspection")
        for d in kept:
            terminalreporter.write_line(str(d))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Fixtures stop everything; this only catches servers started outside them and never stopped.
    leftovers = kill_all_live()
    if leftovers:
        print(f"\nharness: killed leftover server processes {leftovers}")


# ---- directories --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def mariadb_base(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A unique, short directory under /tmp for this test session's servers."""
    base = Path(tempfile.mkdtemp(prefix="binlogd-t-", dir="/tmp"))
    yield base
    kill_all_live()
    keep = os.environ.get("BINLOGD_KEEP_TMP") == "1" or request.session.testsfailed > 0
    if keep:
        request.config.stash[_kept_dirs_key].append(base)
    else:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def harness_dir(request: pytest.FixtureRequest, mariadb_base: Path) -> Iterator[Path]:
    """This test's directory: removed when the test passed, kept (with the session dir) when it failed."""
    short = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:32]
    d = mariadb_base / f"{next(_test_counter):03d}-{short}"
    d.mkdir()
    yield d
    failed = request.node.stash.get(_failed_key, False)
    if not failed and os.environ.get("BINLOGD_KEEP_TMP") != "1":
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def mariadb_binaries() -> dict[str, str]:
    """Paths of the MariaDB programs (the marker hook has already failed the test if one is missing)."""
    missing = _missing_binaries()
    if missing:
        pytest.fail(f"MariaDB binaries not found: {', '.join(missing)}", pytrace=False)
    return {b: str(find_binary(b)) for b in MARIADB_BINARIES}


# ---- factories ----------------------------------------------------------------------------------


class MariaDBFactory:
    """Starts MariaDB instances for one test and stops them all (reverse order) at its end.

    Thread-safe, so a test may start several instances in parallel from a thread pool.
    """

    def __init__(self, base_dir: Path, template_dir: Path, registry: list[Any]) -> None:
        self.base_dir = base_dir
        self.template_dir = template_dir
        self.instances: list[MariaDB] = []
        self._registry = registry
        self._lock = threading.Lock()

    def _track(self, inst: MariaDB) -> MariaDB:
        with self._lock:
            self.instances.append(inst)
            self._registry.append(inst)
        return inst

    def __call__(
        self,
        name: str,
        server_id: int,
        *extra_args: str,
        datadir_setup: Any = None,
        port: int | None = None,
    ) -> MariaDB:
        """MariaDB.start in this test's directory (datadir copied from the session template)."""
        return self._track(
            MariaDB.start(
                self.base_dir,
                name,
                server_id,
                *extra_args,
                datadir_setup=datadir_setup,
                port=port,
                template_dir=self.template_dir,
            )
        )

    def primary(self, name: str = "primary", server_id: int = 1, *extra_args: str) -> MariaDB:
        """A primary with a ROW binary log named mysql-bin (the project's usual oracle setup)."""
        return self(name, server_id, "--log-bin=mysql-bin", "--binlog-format=ROW", *extra_args)

    def primary_from_binlogs(
        self,
        name: str,
        server_id: int,
        binlog_files: Sequence[Path],
        basename: str = "mysql-bin",
        extra_args: Sequence[str] = (),
    ) -> MariaDB:
        """make_primary_from_binlogs in this test's directory."""
        return self._track(
            make_primary_from_binlogs(
                self.base_dir,
                name,
                server_id,
                binlog_files,
                basename,
                extra_args=extra_args,
                template_dir=self.template_dir,
            )
        )

    def stop_all(self) -> None:
        """Stop every instance, replicas first, each group in reverse start order; raise the first error.

        Replicas first: a replica whose primary vanished is busy reconnecting, and the primary's
        shutdown would otherwise also have to end live dump threads.
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


@pytest.fixture
def mariadb(
    request: pytest.FixtureRequest, harness_dir: Path, mariadb_base: Path, mariadb_binaries: dict[str, str]
) -> Iterator[MariaDBFactory]:
    """Factory for private MariaDB instances; everything it started is stopped by PID afterwards."""
    registry = request.node.stash.setdefault(_servers_key, [])
    factory = MariaDBFactory(harness_dir, mariadb_base / "_template", registry)
    try:
        yield factory
    finally:
        factory.stop_all()


class BinlogdFactory:
    """Starts binlogd subprocesses for one test and stops them all at its end."""

    def __init__(self, base_dir: Path, registry: list[Any]) -> None:
        self.base_dir = base_dir
        self.servers: list[Binlogd] = []
        self._registry = registry
        self._lock = threading.Lock()
        self._n = itertools.count(1)

    def __call__(self, args: Sequence[str] = (), port: int | None = None, **kw: Any) -> Binlogd:
        """Binlogd.start(args, port, log_path=<test dir>/binlogd-N.log, **kw)."""
        log_path = self.base_dir / f"binlogd-{next(self._n)}.log"
        server = Binlogd.start(list(args), port, log_path=log_path, **kw)
        with self._lock:
            self.servers.append(server)
            self._registry.append(server)
        return server

    def stop_all(self) -> None:
        for server in reversed(self.servers):
            server.stop()


@pytest.fixture
def binlogd(request: pytest.FixtureRequest, harness_dir: Path) -> Iterator[BinlogdFactory]:
    """Factory for ``python -m server.cli serve`` subprocesses; all are stopped afterwards."""
    registry = request.node.stash.setdefault(_servers_key, [])
    factory = BinlogdFactory(harness_dir, registry)
    try:
        yield factory
    finally:
        factory.stop_all()
