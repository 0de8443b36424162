"""Test harness: private real MariaDB servers and the binlogd server as subprocesses.

Import as ``from harness import MariaDB, Binlogd`` (tests/ is on sys.path because tests/conftest.py
lives there without an __init__.py). Fixtures wrapping these live in tests/conftest.py.
"""

from .binlogd import REPO_ROOT, Binlogd, BinlogdStartError
from .mariadb import (
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
