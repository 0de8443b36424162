"""The project's tests use the installed harness, binlogd.testing; this adds what only a checkout has.

Import as ``from tests.harness import MariaDB, Binlogd`` (pyproject's ``pythonpath = ["."]`` puts the repository root
on sys.path). Fixtures live in tests/conftest.py.
"""

from pathlib import Path

from binlogd.testing import (
    Binlogd,
    BinlogdStartError,
    HarnessError,
    MariaDB,
    MariaDBStartError,
    SlaveWaitError,
    binlog_datadir_setup,
    find_binary,
    free_port,
    kill_all_live,
    make_primary_from_binlogs,
    pid_exited,
    wait_until,
)

# The repository root: where `python -m tests...` / `-m benchmarks...` modules are found.
REPO_ROOT = Path(__file__).resolve().parents[2]

__all__ = [
    "REPO_ROOT",
    "Binlogd",
    "BinlogdStartError",
    "HarnessError",
    "MariaDB",
    "MariaDBStartError",
    "SlaveWaitError",
    "binlog_datadir_setup",
    "find_binary",
    "free_port",
    "kill_all_live",
    "make_primary_from_binlogs",
    "pid_exited",
    "wait_until",
]
