"""Where the MariaDB 10.11 oracle lives: tests/data/oracle/dump in the repository, or $BINLOGD_ORACLE_DIR.

The captures are data from a real MariaDB 10.11.19 primary (tests/data/oracle/README.md says what each file holds and
how `tests/data/oracle/regenerate.py` records them anew). Tests that compare against them fail (never skip) when they
are missing: a missing oracle is a broken checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ORACLE = Path(os.environ.get("BINLOGD_ORACLE_DIR") or REPO_ROOT / "tests" / "data" / "oracle" / "dump")


def oracle_dir() -> Path:
    if not (ORACLE / "mysql-bin.000001").is_file():
        pytest.fail(f"MariaDB oracle not found at {ORACLE} (tests/data/oracle/dump in the repository, or set "
                    "BINLOGD_ORACLE_DIR)", pytrace=False)
    return ORACLE
