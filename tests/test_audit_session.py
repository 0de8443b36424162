"""The driver JVM's class archive (spark_analytics/session.py): a one-audit process writes it at its JVM's exit, the
next session's JVM maps it; a damaged archive is never put in place (a JVM that maps one dies). And the settings of
a small input's session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

pytestmark = pytest.mark.timeout(900)

SESSION = """
import sys
from pyspark import SparkContext
from binlogd.spark_analytics import session
spark = session.build_session("local[1]", make_class_archive=sys.argv[1] == "make")
assert spark.range(5).count() == 5
maps = open(f"/proc/{SparkContext._gateway.proc.pid}/maps").read()
print("ARCHIVE", session.class_archive_path())
print("MAPPED" if str(session.class_archive_path()) in maps else "NOT MAPPED")
session.close_session(spark)
"""


def _session(cache: Path, mode: str) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    out = subprocess.run([sys.executable, "-c", SESSION, mode], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_first_run_writes_the_archive_the_next_session_maps_it(tmp_path: Path) -> None:
    first = _session(tmp_path, "make")
    archive = Path(first.split("ARCHIVE ", 1)[1].split()[0])
    assert archive.parent == tmp_path / "binlogd"
    assert "NOT MAPPED" in first  # there was none to map
    assert archive.is_file() and archive.stat().st_size > 1 << 20
    assert [p.name for p in archive.parent.iterdir()] == [archive.name]  # the partial file was renamed, none left
    second = _session(tmp_path, "use")
    assert "\nMAPPED" in second and f"ARCHIVE {archive}" in second
    # what a JVM killed while writing it leaves: close_session's check refuses it (a JVM mapping it would die)
    from binlogd.spark_analytics import session

    assert session._archive_maps(archive)
    torn = tmp_path / "torn.jsa"
    torn.write_bytes(archive.read_bytes()[: 1 << 20])
    assert not session._archive_maps(torn)


def test_archives_of_other_installs_are_pruned_the_used_ones_kept(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each environment with its own pyspark gets its own archive (170-190 MB): a new one leaves the KEEP_ARCHIVES last
    used in the cache, a session that maps one marks it used."""
    from binlogd.spark_analytics import session

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(session.ARCHIVE_ENV, raising=False)
    mine = session.class_archive_path()
    assert mine is not None and mine.parent == tmp_path / "binlogd"
    mine.parent.mkdir(parents=True)
    others = [mine.parent / f"spark-classes-{i:016x}.jsa" for i in range(5)]
    for i, p in enumerate([mine, *others]):  # this environment's the oldest
        p.write_bytes(b"archive")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    opts, partial = session._archive_options(make=False)
    assert opts.startswith(f"-XX:SharedArchiveFile={mine} ") and partial is None
    new = mine.parent / "spark-classes-ffffffffffffffff.jsa"
    new.write_bytes(b"archive")
    session._prune_archives(new)
    assert session.KEEP_ARCHIVES == 3
    assert sorted(p.name for p in mine.parent.iterdir()) == sorted([new.name, mine.name, others[-1].name])


def test_archive_off_and_keyed_by_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from binlogd.spark_analytics import session

    path = session.class_archive_path(tmp_path)
    assert path is not None and path.parent == tmp_path and path.suffix == ".jsa"
    monkeypatch.setenv(session.ARCHIVE_ENV, "0")
    assert session.class_archive_path(tmp_path) is None


SMALL = """
from binlogd.spark_analytics import session
spark = session.build_session("local[1]", input_size=1 << 20)
print("PAGE", spark.sparkContext.getConf().get("spark.buffer.pageSize"))
print("OPTS", spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
"""


def test_small_input_session_pages_and_metaspace(tmp_path: Path) -> None:
    """A small one-audit session (the CLI's, `input_size` known): 1 MB memory pages (not a page sized from the heap
    for every sort and aggregate's first row) and a first metaspace threshold above what loading Spark takes."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    out = subprocess.run([sys.executable, "-c", SMALL], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "PAGE 1m" in out.stdout, out.stdout
    assert "-XX:MetaspaceSize=128m" in out.stdout and "-XX:TieredStopAtLevel=1" in out.stdout, out.stdout


LARGE = """
from pathlib import Path
from binlogd.spark_analytics import session
import sys
spark = session.build_session("local[1]", input_size=session.C1_INPUT_BYTES + 1, log_file=Path(sys.argv[1]))
jvm = spark.sparkContext._jvm
args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print("ARGS", " ".join(a for a in args if "Compiler" in a or "Tiered" in a))
path = next(a.split("=", 1)[1] for a in args if a.startswith("-XX:CompilerDirectivesFile="))
print("LEFT", Path(path).exists())
print("SUM", spark.range(1000).selectExpr("sum(id)").first()[0])
print("MEMORY", spark.sparkContext.getConf().get("spark.driver.memory"), session.large_driver_memory())
"""


def test_large_input_session_keeps_c2_off_the_planning_code(tmp_path: Path) -> None:
    """A large one-audit session (above C1_INPUT_BYTES): C2 kept, except for the code that only builds plans and
    tasks (`session.C2_EXCLUDED`), as HotSpot compiler directives the JVM parsed at its start; their file is removed
    once the JVM is up, and the session runs jobs."""
    from binlogd.spark_analytics import session

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    log = tmp_path / "out" / "spark.log"
    out = subprocess.run([sys.executable, "-c", LARGE, str(log)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "-XX:CompilerDirectivesFile=" in out.stdout and "TieredStopAtLevel" not in out.stdout, out.stdout
    assert "LEFT False" in out.stdout and "SUM 499500" in out.stdout, out.stdout
    # HotSpot's line as it parsed the file at its start (a file it cannot parse stops the JVM), in the VM's log
    # beside Spark's, not on the terminal (the CLI's progress bar)
    jvm_said = session.jvm_output_path(log).read_text()
    assert "1 compiler directives added" in jvm_said
    assert "directives added" not in out.stdout + out.stderr, out.stdout + out.stderr
    # the JVM's own warnings too (Spark 4 adds its incubator vector module: the module system warns on stderr)
    assert "WARNING" not in out.stderr, out.stderr
    assert "Using incubator modules" in jvm_said, jvm_said
    # the larger heap (no `--driver-memory` given)
    (memory,) = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("MEMORY")]
    assert memory[0] == memory[1], memory
    (directive,) = json.loads(session.compiler_directives())
    assert directive == {"match": list(session.C2_EXCLUDED), "c2": {"Exclude": True}}


@pytest.mark.parametrize(("gib", "memory"), [(1, "2g"), (8, "2g"), (16, "4g"), (24, "6g"), (512, "6g")])
def test_large_driver_memory_is_a_quarter_of_the_machine(monkeypatch: pytest.MonkeyPatch, gib: int,
                                                        memory: str) -> None:
    """A large audit's driver heap: 6g, at most a quarter of the machine's memory, at least the default 2g."""
    from binlogd.spark_analytics import session

    monkeypatch.setattr(session.os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096,
                                                             "SC_PHYS_PAGES": gib * (1 << 30) // 4096}[name])
    assert session.large_driver_memory() == memory


@pytest.mark.parametrize(("master", "cores"), [
    (None, 4), ("local", 1), ("local[1]", 1), ("local[2]", 2), ("local[16]", 4), ("local[*]", 4),
    ("local[3,2]", 3), ("local[*,4]", 4), ("local-cluster[2,1,1024]", 2), ("local-cluster[x]", 4),
    ("spark://127.0.0.1:7077", 4), ("local[0]", 4), ("local[x]", 4)])
def test_master_cores(monkeypatch: pytest.MonkeyPatch, master: str | None, cores: int) -> None:
    """The work an audit does beside Spark (staging, record probes) keeps to a local master's task slots, at most
    the cores the process may run on."""
    from binlogd.spark_analytics import session

    monkeypatch.setattr(session, "usable_cores", lambda: 4)
    assert session.master_cores(master) == cores


def test_usable_cores_follow_the_affinity() -> None:
    """Under `taskset -c 0` the process may use one core, whatever the machine has."""
    code = "from binlogd.spark_analytics.session import usable_cores; print(usable_cores())"
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "1"


LOOKUPS = """
from py4j.clientserver import ClientServerConnection
from binlogd.spark_analytics import session
spark = session.build_session("local[1]", register_source=False)
from pyspark.sql import functions as F
sent = []
send = ClientServerConnection.send_command
ClientServerConnection.send_command = lambda self, command: sent.append(command[:1]) or send(self, command)
F.col("id")
first = len(sent)
sent.clear()
F.col("id")
calls = [c for c in sent if c != "m"]  # "m": py4j telling the JVM of objects Python collected, at any time
print("ROUND TRIPS", first, len(calls), calls.count("r"))
print("ROWS", [r[0] for r in spark.range(3).select((F.col("id") * F.lit(2)).alias("x")).collect()])
"""


def test_lookups_kept_one_round_trip_per_function() -> None:
    """`F.col` is one round trip once its class and method were looked up: not three (`jvm_lookups`), nor six
    (PySpark 4's call-site context, off in `session.DEFAULTS`); the plans built so give the same rows."""
    out = subprocess.run([sys.executable, "-c", LOOKUPS], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    trips = next(line.split()[2:] for line in out.stdout.splitlines() if line.startswith("ROUND TRIPS"))
    assert trips[1:] == ["1", "0"], out.stdout
    assert "ROWS [0, 2, 4]" in out.stdout
