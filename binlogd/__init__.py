"""binlogd: a MariaDB/MySQL binlog server with per-replica filtering, an audit ledger, an applier and a test harness.

The repository keeps its folders (``protocol/``, ``server/``, ``applier/``, ``spark_analytics/``) and installs them
under this one namespace (``binlogd.protocol``, ``binlogd.server``, ...), so installing binlogd next to a user's code
never claims generic top-level names such as ``server`` or ``protocol``.
"""

from __future__ import annotations

__version__ = "0.1.0"
