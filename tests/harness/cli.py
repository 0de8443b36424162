"""The binlogd CLI as a short-lived process, for tests of command lines that must end (refusals, help)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from tests.harness import REPO_ROOT


def run_cli(*args: str, env: Mapping[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`python -m binlogd.server.cli ARGS`; a process that keeps running instead of exiting fails the test.

    $BINLOGD_UPSTREAM_PASSWORD of the test run is not passed on (a test sets it through ``env`` when it means to).
    """
    full_env = {k: v for k, v in os.environ.items() if k != "BINLOGD_UPSTREAM_PASSWORD"}
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "binlogd.server.cli", *args]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env=full_env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"binlogd {' '.join(args)} kept running instead of exiting:\n{err}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
