"""The project's fixtures: the installed binlogd pytest plugin (binlogd.testing.plugin) under the names its tests use.

* ``mariadb_base`` (session) / ``harness_dir`` (function): the plugin's ``binlogd_base_dir`` / ``binlogd_test_dir``
  (short, unique, under /tmp; kept when a test failed or BINLOGD_KEEP_TMP=1).
* ``mariadb`` (function): the plugin's ``mariadb_factory``; ``mariadb("primary", 1, "--log-bin=mysql-bin")``
  starts an instance; all instances of the test are stopped (SIGTERM by PID) when it ends, pass or fail.
* ``binlogd`` (function): the plugin's ``binlogd_factory``, called with ``binlogd serve`` arguments as given.

The plugin attaches every server's log tail to a failing test's report. Tests that use MariaDB fixtures get the
``mariadb`` marker automatically (deselect them with ``-m 'not mariadb'``). If the MariaDB binaries are missing,
those tests FAIL (setup error) instead of being skipped: CI installs MariaDB, so a missing binary is a broken
environment, and a silently skipped end-to-end suite would look green.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogd.testing import find_binary
from binlogd.testing.mariadb import MariaDB
from binlogd.testing.servers import BinlogdFactory, MariaDBFactory
from tests.harness.applier import ApplierProc

MARIADB_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb-binlog")
MARIADB_FIXTURES = frozenset({"mariadb", "mariadb_binaries", "mariadb_factory", "mariadb_primary", "mariadb_replica"})


# ---- marker ------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mariadb: needs real MariaDB 10.11 binaries (mariadbd, mariadb-binlog)")


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


# ---- the plugin's directories and factories under the names the project's tests use ---------------------------


@pytest.fixture(scope="session")
def mariadb_base(binlogd_base_dir: Path) -> Path:
    """The plugin's per-session directory (binlogd_base_dir)."""
    return binlogd_base_dir


@pytest.fixture
def harness_dir(binlogd_test_dir: Path) -> Path:
    """The plugin's per-test directory (binlogd_test_dir)."""
    return binlogd_test_dir


@pytest.fixture(scope="session")
def mariadb_binaries() -> dict[str, str]:
    """Paths of the MariaDB programs (the marker hook has already failed the test if one is missing)."""
    missing = _missing_binaries()
    if missing:
        pytest.fail(f"MariaDB binaries not found: {', '.join(missing)}", pytrace=False)
    return {b: str(find_binary(b)) for b in MARIADB_BINARIES}


@pytest.fixture
def mariadb(mariadb_factory: MariaDBFactory, mariadb_binaries: dict[str, str]) -> MariaDBFactory:
    """The plugin's mariadb_factory: ``mariadb("primary", 1, "--log-bin=mysql-bin")`` starts an instance."""
    return mariadb_factory


@pytest.fixture
def binlogd(binlogd_factory: BinlogdFactory) -> BinlogdFactory:
    """The plugin's binlogd_factory: ``binlogd(["--binlog-dir", d])`` runs ``binlogd serve`` with those arguments."""
    return binlogd_factory


@pytest.fixture
def applier(harness_dir: Path) -> Iterator[Any]:
    """`applier(target, *args)` starts binlogd-apply; every process is stopped (by PID) after the test."""
    procs: list[ApplierProc] = []

    def start(target: MariaDB, *args: str) -> ApplierProc:
        p = ApplierProc([f"--target=mysql://root@127.0.0.1:{target.port}", *args],
                        harness_dir / f"applier-{len(procs) + 1}.log")
        procs.append(p)
        return p.start()

    yield start
    for p in procs:
        p.stop()
