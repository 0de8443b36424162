"""`binlogd-audit`'s start (spark_analytics/cli.py) and the audit's second thread. The JVM is launched before the
audit's modules are imported, so what runs before the launch must stay light; the session is made in another
thread, so the CLI installs the Ctrl-C handler PySpark installs only for a session made in the main thread."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def test_what_runs_before_the_jvm_starts_imports_no_audit_module() -> None:
    """The report-module check and session.py (what `main` runs before it launches the JVM) import neither the
    checks, the data source, protocol/ nor pyspark: those imports (0.5-1.8 s) run while the JVM starts."""
    code = """
import sys
from binlogd.spark_analytics.report import require_report_modules
from binlogd.spark_analytics.session import build_session, close_session, input_bytes
require_report_modules()
print(sorted(m for m in sys.modules if m.startswith(("pyspark", "binlogd.protocol", "binlogd.spark_analytics.checks",
                                                     "binlogd.spark_analytics.binlog_source", "pyarrow"))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_jvm_that_does_not_start_is_named_with_what_it_said(tmp_path: Path) -> None:
    """The driver JVM's own output goes to a file beside spark.log (not the terminal): a JVM that does not start
    (here a bad `--driver-memory`) is exit 2 with its words in the message."""
    (tmp_path / "b").mkdir()
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / "ledger.000001.jsonl").write_text("")
    exe = Path(sys.executable).parent / "binlogd-audit"
    out = subprocess.run([str(exe), "--binlog-dir", str(tmp_path / "b"), "--ledger", str(tmp_path / "l"), "--out",
                          str(tmp_path / "o"), "--quiet", "--driver-memory", "6x"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "could not start Spark" in out.stderr and "Invalid maximum heap size: -Xmx6x" in out.stderr, out.stderr
    assert "spark.log.jvm.log" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_ctrl_c_cancels_the_jobs() -> None:
    from binlogd.spark_analytics.cli import cancel_on_interrupt

    cancelled: list[int] = []

    class Context:
        def cancelAllJobs(self) -> None:
            cancelled.append(1)

    class Session:
        sparkContext: Any = Context()

    before = signal.getsignal(signal.SIGINT)
    try:
        cancel_on_interrupt(Session())
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler) and handler is not before
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGINT, None)
        assert cancelled == [1]
    finally:
        signal.signal(signal.SIGINT, before)


def test_inline_executor_runs_at_submit() -> None:
    """A larger audit's "second thread" (`audit.InlineExecutor`): each call runs at submit, in order, its exception
    raised by result() as a thread's would be."""
    from binlogd.spark_analytics.audit import InlineExecutor

    ran: list[int] = []
    with InlineExecutor() as ex:
        a = ex.submit(lambda: ran.append(1) or 1)
        assert ran == [1] and a.done()
        b = ex.submit(lambda x: 1 // x, 0)
    assert a.result() == 1
    with pytest.raises(ZeroDivisionError):
        b.result()
