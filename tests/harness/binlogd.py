"""Moved to binlogd.testing.binlogd_server (transitional alias while imports are rewritten)."""

import sys

from binlogd.testing import binlogd_server as _moved
from tests.harness import REPO_ROOT

_moved.REPO_ROOT = REPO_ROOT  # type: ignore[attr-defined]
sys.modules[__name__] = _moved
