"""binlogd as a test harness: build binlogs from Python, serve them, inject faults, run real MariaDB peers.

The process control here (private MariaDB instances, binlogd subprocesses) is the one harness: the pytest plugin,
the project's own tests and its benchmarks all use it.
"""

from .binlogd_server import Binlogd, BinlogdStartError
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
