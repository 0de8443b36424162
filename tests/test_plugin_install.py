"""binlogd as a user installs it: a fresh virtualenv, `pip install` of the repository (not editable), examples/
copied to a directory outside the repository and run there with `pytest -n 2`.

Checks what issue 11 asks of the product: only the ``binlogd.`` namespace is installed (``import server`` fails),
the plugin loads without pyspark and costs pytest's start-up well under 0.5 s, ``pytest --fixtures`` documents every
fixture, the console scripts run, and the examples pass against real MariaDB and binlogd processes.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import REPO_ROOT

pytestmark = pytest.mark.mariadb  # the examples start MariaDB replicas

PLUGIN_FIXTURES = ("binlogd_base_dir", "binlogd_test_dir", "binlogd_factory", "binlogd_server",
                   "binlogd_session_server", "binlog_builder", "mariadb_factory", "mariadb_primary", "mariadb_replica")
USER_PACKAGES = ("pytest", "pytest-xdist", "mysql-replication==1.0.17")


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV", "PYTHON"))}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv with the repository pip-installed from a copy of its tracked files (no tests/ in it)."""
    base = tmp_path_factory.mktemp("user")
    src = base / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and not name.startswith(("tests/", "benchmarks/", "examples/")) and (REPO_ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, src / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = _run([str(venv / "bin" / "pip"), "install", "-q", str(src), *USER_PACKAGES], cwd=base)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    yield venv


def test_only_the_namespace_is_installed(user_venv: Path, tmp_path: Path) -> None:
    py = str(user_venv / "bin" / "python")
    for name in ("server", "protocol", "applier", "spark_analytics", "show", "tests"):
        r = _run([py, "-c", f"import {name}"], cwd=tmp_path)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, (name, r.stdout, r.stderr)
    probe = ("import sys, binlogd.server.cli, binlogd.protocol.events, binlogd.applier.cli, binlogd.testing.plugin, "
             "binlogd.testing.builder; print('pyspark' in sys.modules)")
    r = _run([py, "-c", probe], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr
    for script in ("binlogd", "binlogd-apply", "binlogd-audit"):
        r = _run([str(user_venv / "bin" / script), "--help"], cwd=tmp_path)
        assert r.returncode == 0 and "usage" in r.stdout.lower(), (script, r.stderr)


def test_fixtures_are_listed_with_docstrings(user_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n")
    r = _run([str(user_venv / "bin" / "python"), "-m", "pytest", "--fixtures", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    section = r.stdout.split("fixtures defined from binlogd.testing.plugin", 1)[1].split("fixtures defined from", 1)[0]
    lines = section.splitlines()
    for name in PLUGIN_FIXTURES:
        i = next((k for k, line in enumerate(lines) if line.startswith(name + " ")), None)
        assert i is not None, f"{name} not listed:\n{section}"
        assert lines[i + 1].startswith("    ") and len(lines[i + 1].strip()) > 20, f"{name} has no docstring"


def test_plugin_costs_pytest_start_under_half_a_second(user_venv: Path, tmp_path: Path) -> None:
    """Median CPU time (user + sys of the pytest process) of a one-test run with the plugin loaded vs disabled
    (-p no:binlogd). CPU, not wall: on a loaded machine the wall time of a start-up swings by more than the bound."""
    (tmp_path / "test_one.py").write_text("def test_one() -> None:\n    pass\n")
    base = [str(user_venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]

    def median(extra: list[str]) -> float:
        times = []
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = _run(base + extra, cwd=tmp_path)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            assert r.returncode == 0, r.stdout + r.stderr
        return statistics.median(times)

    with_plugin, without = median([]), median(["-p", "no:binlogd"])
    print(f"pytest start: {with_plugin:.3f} CPU-s with the plugin, {without:.3f} CPU-s without")
    assert without > 0.05  # (the child's CPU was counted)
    assert with_plugin - without < 0.5


def test_examples_pass_outside_the_repository(user_venv: Path, tmp_path: Path) -> None:
    for f in (REPO_ROOT / "examples").glob("*.py"):
        shutil.copy2(f, tmp_path / f.name)
    r = _run([str(user_venv / "bin" / "python"), "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
              "-W", "ignore::DeprecationWarning"], cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and " failed" not in r.stdout and " error" not in r.stdout


def test_audit_report_templates_installed_and_missing_libraries_named(user_venv: Path, tmp_path: Path) -> None:
    """The report's Jinja2 templates are package data of a non-editable install; without the `spark` extra
    (jinja2, plotly) binlogd-audit says what to install, exit 2, no traceback."""
    probe = ("from importlib.resources import files; t = files('binlogd.spark_analytics') / 'templates'; "
             "print((t / 'report.html.j2').is_file(), (t / 'report.css').is_file())")
    r = _run([str(user_venv / "bin" / "python"), "-c", probe], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split() == ["True", "True"], r.stdout + r.stderr
    (tmp_path / "b").mkdir()
    (tmp_path / "l").mkdir()
    r = _run([str(user_venv / "bin" / "binlogd-audit"), "--binlog-dir", "b", "--ledger", "l", "--out", "o"],
             cwd=tmp_path)
    assert r.returncode == 2 and "the HTML report needs" in r.stderr and "pip install 'binlogd[spark]'" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o").exists(), r.stderr
