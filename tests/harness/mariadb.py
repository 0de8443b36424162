"""Moved to binlogd.testing.mariadb (transitional alias while imports are rewritten)."""

import sys

from binlogd.testing import mariadb as _moved

sys.modules[__name__] = _moved
