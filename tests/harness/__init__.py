"""The project's tests use the installed harness, binlogd.testing; this adds what only a checkout has.

Import as ``from tests.harness import MariaDB, Binlogd`` (pyproject's ``pythonpath = ["."]`` puts the repository root
on sys.path). Fixtures live in tests/conftest.py.
"""

from pathlib import Path

from binlogd.testing import *  # noqa: F403 - the harness's public names, as binlogd.testing lists them
from binlogd.testing import __all__ as _harness_names

# The repository root: where `python -m tests...` / `-m benchmarks...` modules are found.
REPO_ROOT = Path(__file__).resolve().parents[2]

__all__ = ["REPO_ROOT", *_harness_names]
