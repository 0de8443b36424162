"""Test harness: private real MariaDB servers and the binlogd server as subprocesses.

Import as ``from tests.harness import MariaDB, Binlogd`` (pyproject's ``pythonpath = ["."]`` puts the
repository root on sys.path). Do not also import it as plain ``harness`` (possible because tests/ has no
__init__.py): that would load a second copy of the modules. Fixtures live in tests/conftest.py.
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
