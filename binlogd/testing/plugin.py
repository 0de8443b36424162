"""The binlogd pytest plugin: binlogd servers, binlog files built from Python, faults and real MariaDB peers.

Loaded by pytest whenever binlogd is installed (entry point ``pytest11``). Every fixture puts its files in a short
per-test directory under /tmp (unix socket paths are limited to 107 bytes), picks free loopback ports and stops
what it started by PID at teardown, so tests run under pytest-xdist (``-n 2``) with nothing shared. A failing
test's report gets the tail of every log its servers wrote. Module imports stay light: nothing here starts or
imports anything heavy until a fixture is used (the plugin costs pytest's start-up a few milliseconds).

Guide with a ten-line first example: docs/testing.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .builder import BinlogBuilder
    from .mariadb import MariaDB
    from .servers import BinlogdFactory, MariaDBFactory, Server

_reported_key = pytest.StashKey[list[Any]]()
_failed_key = pytest.StashKey[bool]()
_kept_key = pytest.StashKey[list[Path]]()
_test_counter = itertools.count(1)

KEEP_ENV = "BINLOGD_KEEP_TMP"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_kept_key] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """A failing test's report gets each of its servers' log tails (and a replica's SHOW SLAVE STATUS).

    Runs before fixture teardown, so the servers are still up and can be asked.
    """
    report = yield
    if report.failed:
        item.stash[_failed_key] = True
        if report.when in ("setup", "call"):
            for server in item.stash.get(_reported_key, []):
                with contextlib.suppress(Exception):
                    report.sections.append(server.diagnostics())
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    kept = config.stash.get(_kept_key, [])
    if kept:
        terminalreporter.write_sep("-", "binlogd: test directories kept for inspection")
        for d in kept:
            terminalreporter.write_line(str(d))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .mariadb import kill_all_live

    leftovers = kill_all_live()  # fixtures stop everything; this catches servers started outside them
    if leftovers:
        print(f"\nbinlogd: killed leftover server processes {leftovers}")


def report_on_failure(request: pytest.FixtureRequest, server: Any) -> None:
    """Attach ``server.diagnostics()`` to the report of the test that ``request`` belongs to, should it fail."""
    request.node.stash.setdefault(_reported_key, []).append(server)


# ---- directories ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def binlogd_base_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A short, unique directory under /tmp for everything this test session (or xdist worker) starts.

    Removed at the end, unless a test failed or BINLOGD_KEEP_TMP=1 (its path is then printed in the summary).
    """
    from .mariadb import kill_all_live

    base = Path(tempfile.mkdtemp(prefix="binlogd-t-", dir="/tmp"))
    yield base
    kill_all_live()
    if os.environ.get(KEEP_ENV) == "1" or request.session.testsfailed > 0:
        request.config.stash[_kept_key].append(base)
    else:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def binlogd_test_dir(request: pytest.FixtureRequest, binlogd_base_dir: Path) -> Iterator[Path]:
    """This test's own directory: removed when the test passed, kept (with the session's) when it failed."""
    short = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:32]
    d = binlogd_base_dir / f"{next(_test_counter):03d}-{short}"
    d.mkdir()
    yield d
    if not request.node.stash.get(_failed_key, False) and os.environ.get(KEEP_ENV) != "1":
        shutil.rmtree(d, ignore_errors=True)


# ---- binlogd ----------------------------------------------------------------------------------------------------


@pytest.fixture
def binlogd_factory(request: pytest.FixtureRequest, binlogd_test_dir: Path) -> Iterator[BinlogdFactory]:
    """Starts binlogd servers for this test; all are stopped at its end.

    ``binlogd_factory.standalone()`` (a writable primary), ``.serve(builder_or_dir)`` (``--binlog-dir``),
    ``.relay(primary)`` (``--upstream``); each on a free port with its own datadir, an audit ledger (for
    ``server.connections()``) and a faults file (for ``server.inject(...)``). Extra ``binlogd serve`` options go
    in ``args``. ``binlogd_factory(args)`` starts ``binlogd serve ARGS`` as given.
    """
    from .servers import BinlogdFactory

    factory = BinlogdFactory(binlogd_test_dir, on_start=lambda s: report_on_failure(request, s))
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def binlogd_server(binlogd_factory: BinlogdFactory) -> Server:
    """A standalone binlogd (a primary whose only product is its binlog) on a free port, stopped at teardown.

    Write SQL to it (``binlogd_server.execute("CREATE DATABASE d")``), point replicas and CDC clients at
    ``binlogd_server.host`` / ``.port``, inspect what each got with ``binlogd_server.connections()``.
    """
    return binlogd_factory.standalone()


@pytest.fixture(scope="session")
def _binlogd_session(binlogd_base_dir: Path) -> Iterator[Server]:
    from .servers import BinlogdFactory

    d = binlogd_base_dir / "session-binlogd"
    d.mkdir()
    factory = BinlogdFactory(d)
    try:
        yield factory.standalone()
    finally:
        factory.stop_all()


@pytest.fixture
def binlogd_session_server(request: pytest.FixtureRequest, _binlogd_session: Server) -> Server:
    """One standalone binlogd shared by the whole session (per xdist worker), for tests that need not own one.

    Tests sharing it should use databases of their own; its log tail goes into every failing test's report.
    """
    report_on_failure(request, _binlogd_session)
    return _binlogd_session


@pytest.fixture
def binlog_builder(binlogd_test_dir: Path) -> Iterator[BinlogBuilder]:
    """A :class:`binlogd.testing.builder.BinlogBuilder` writing ``mysql-bin.*`` into a fresh directory.

    Script transactions, statements, row events, flagged and ignorable events, rotations; serve the result with
    ``binlogd_factory.serve(binlog_builder)`` (appending while clients are connected works too). Closed at
    teardown. For other settings (checksum NONE, another basename) build one yourself:
    ``BinlogBuilder(binlogd_test_dir / "b2", checksum="NONE")``.
    """
    from .builder import BinlogBuilder

    builder = BinlogBuilder(binlogd_test_dir / "binlogs")
    try:
        yield builder
    finally:
        builder.close()


# ---- MariaDB --------------------------------------------------------------------------------------------------


@pytest.fixture
def mariadb_factory(request: pytest.FixtureRequest, binlogd_test_dir: Path,
                    binlogd_base_dir: Path) -> Iterator[MariaDBFactory]:
    """Starts private MariaDB 10.11 servers (mariadbd from PATH or /usr/sbin) for this test; stopped at its end.

    ``mariadb_factory.primary()``, ``.replica()``, or ``mariadb_factory(name, server_id, *mariadbd_args)``. A
    missing MariaDB is a clear error naming the Debian packages (apt-get install mariadb-server
    mariadb-client). Datadirs are copies of one installed template per session, so a server starts in ~1 s.
    """
    from .servers import MariaDBFactory

    factory = MariaDBFactory(binlogd_test_dir, binlogd_base_dir / "_template",
                             on_start=lambda s: report_on_failure(request, s))
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def mariadb_primary(mariadb_factory: MariaDBFactory) -> MariaDB:
    """A private MariaDB 10.11 primary (server_id 1, ROW binlog ``mysql-bin``) on a free port."""
    return mariadb_factory.primary()


@pytest.fixture
def mariadb_replica(mariadb_factory: MariaDBFactory) -> MariaDB:
    """A private MariaDB 10.11 replica (server_id 2, not yet replicating) on a free port.

    ``mariadb_replica.change_master_to(binlogd_server, use_gtid="slave_pos", skip_mode="FILTER_ON_MASTER")``
    starts it on any server (binlogd or a MariaDB); then ``.wait_caught_up(timeout)`` and ``.status()``.
    """
    return mariadb_factory.replica()
