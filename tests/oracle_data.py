"""Where the MariaDB 10.11 oracle lives: `shared/` beside the repository (as in CI), or $BINLOGD_ORACLE_DIR.

Tests that compare against it fail (never skip) when it is missing: a missing oracle is a broken setup.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ORACLE = Path(os.environ.get("BINLOGD_ORACLE_DIR") or REPO_ROOT.parent / "shared" / "oracle" / "mariadb-10.11" / "dump")


def oracle_dir() -> Path:
    if not (ORACLE / "mysql-bin.000001").is_file():
        pytest.fail(f"MariaDB oracle not found at {ORACLE} (shared/ must sit beside the repository, or set "
                    "BINLOGD_ORACLE_DIR)", pytrace=False)
    return ORACLE
