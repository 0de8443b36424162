"""binlogd-audit on a real Spark standalone cluster: a master and two workers started from the pip-installed
PySpark's own `spark-class` (org.apache.spark.deploy.master.Master / worker.Worker) on loopback ports; the audit
with `--master spark://127.0.0.1:PORT` writes the same summary.json as in local mode (timings and the generation
time aside). The inputs are reached from the executors by path (one machine: a shared filesystem)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oracle_data import oracle_dir
from tests.test_audit import Scenario, run_scenario

pytestmark = pytest.mark.mariadb
VOLATILE = ("generated_at", "seconds", "step_seconds")


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _env() -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def _logged(path: Path, pattern: str, procs: list[subprocess.Popen[bytes]], deadline: float) -> str:
    """The first group of `pattern` once the daemon's log shows it: the ports it really bound (asked for port 0, it
    picks free ones itself, so no other process can take them between our choice and its bind)."""
    while time.monotonic() < deadline:
        m = re.search(pattern, path.read_text(errors="replace"))
        if m:
            return m.group(1)
        assert all(p.poll() is None for p in procs), path.read_text()[-2000:]
        time.sleep(0.2)
    raise AssertionError(f"{path.name}: no {pattern!r} in 120 s: {path.read_text()[-2000:]}")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[str]:
    """A standalone master and two one-core workers; yields the master URL. Every port is the daemons' own choice
    (port 0), read back from their logs; the master's REST server (a fixed port, 6066) is off."""
    spark_class = str(_spark_home() / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    env = dict(_env(), SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")

    def start(name: str, *args: str) -> Path:
        log = logs / f"{name}.log"
        with log.open("wb") as out:
            procs.append(subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                          cwd=tmp_path))
        return log

    try:
        deadline = time.monotonic() + 120
        master = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                       "--webui-port", "0")
        url = _logged(master, r"Starting Spark master at (spark://\S+)", procs, deadline)
        ui = _logged(master, r"Successfully started service 'MasterUI' on port (\d+)", procs, deadline)
        for i in range(2):
            work = tmp_path / f"work{i}"
            work.mkdir()
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                  "--memory", "1g", "--webui-port", "0", "--work-dir", str(work))
        alive = 0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    state = json.loads(r.read())
                assert state.get("url") == url, state  # the master we started answers on that port
                alive = state.get("aliveworkers", 0)
            except (OSError, ValueError):  # not up yet (or an HTML page while its UI starts)
                alive = 0
            if alive == 2:
                break
            assert all(p.poll() is None for p in procs), [(f.name, f.read_text()[-2000:]) for f in logs.iterdir()]
            time.sleep(0.5)
        assert alive == 2, [(f.name, f.read_text()[-2000:]) for f in logs.iterdir()]
        yield url
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture
def scenario(tmp_path: Path, mariadb_base: Path, mariadb_binaries: dict[str, str]) -> Scenario:
    binlogs = tmp_path / "binlogs"
    binlogs.mkdir()
    files = ["mysql-bin.000001", "mysql-bin.000002"]
    for f in files:
        shutil.copy(oracle_dir() / f, binlogs / f)
    (binlogs / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in files))
    return run_scenario(tmp_path, binlogs, mariadb_base / "_template", with_replica=False)


def _audit(sc: Scenario, out: Path, master: str) -> tuple[int, dict, str]:
    exe = Path(sys.executable).parent / "binlogd-audit"
    r = subprocess.run([str(exe), "--binlog-dir", str(sc.binlog_dir), "--ledger", str(sc.ledger_dir), "--out",
                        str(out), "--master", master, "--quiet"], env=_env(), capture_output=True, text=True,
                       timeout=900)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return r.returncode, summary, r.stdout + r.stderr


@pytest.mark.timeout(900)  # two whole audits in a row (cluster, then local[2]): 139 s on CI, 300 s under heavy load
def test_standalone_cluster_gives_the_local_summary(cluster: str, scenario: Scenario, tmp_path: Path) -> None:
    rc_c, on_cluster, out_c = _audit(scenario, tmp_path / "cluster", cluster)
    assert rc_c == 0, out_c
    rc_l, local, out_l = _audit(scenario, tmp_path / "local", "local[2]")
    assert rc_l == 0, out_l
    for s in (on_cluster, local):
        for k in VOLATILE:
            s.pop(k)
    assert on_cluster == local
    assert on_cluster["consistent"] is True and len(on_cluster["connections"]) == 6
    # Spark's log went to the file, not the terminal
    assert "NativeCodeLoader" not in out_c and "log4j" not in out_c and "setLogLevel" not in out_c, out_c
    assert (tmp_path / "cluster" / "spark.log").exists()
