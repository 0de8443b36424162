"""The SparkSession of the audit: `local[*]` on this machine by default, any `--master` URL otherwise.

Defaults are sized for a small machine (2 cores, 24 GiB): a 2 GiB driver (it is also the executor in local
mode), few shuffle partitions (the data per connection is small after the first aggregation), no UI. Python
workers run the same interpreter as the driver so they import `protocol/` and `spark_analytics/` from the same
environment (PYSPARK_PYTHON). On a cluster, ship the project (`spark-submit --py-files`, see docs/audit.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local[*]"
DEFAULTS: dict[str, str] = {
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    # the audit's plans are wide (a union of findings per check): their text, built for every adaptive re-plan,
    # must not grow without bound in the driver's heap
    "spark.sql.maxPlanStringLength": "65536",
    # PySpark 4 wraps every function of pyspark.sql.functions and every Column method to send the Python call site
    # to the JVM (for the "DataFrame query context" of error messages): five more round trips around the one that
    # does the work, on each of the tens of thousands of calls that build the audit's plans
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
# A small one-audit run (the CLI) is mostly JVM warm-up: the C2 compiler's work never pays back within it.
# Measured on a 20 000-event audit through the CLI (benchmarks/README.md, "Audit scale"): 77-91 -> 53-63 CPU
# seconds with C1 only. Inputs above C1_INPUT_BYTES keep C2, and so do sessions that run many audits (tests):
# test_audit.py took 299 s with C2, 329 s with C1.
SMALL_INPUT_BYTES = 32 << 20
# MetaspaceSize: the first metaspace threshold (21 MB by default) is crossed while the audit loads Spark's classes,
# and the collection it triggers is a full one (0.3-0.65 s on this machine, the small audit's only full GC with the
# page size below)
SMALL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:MetaspaceSize=128m"
# C1 pays at 1 M events too (72 MB of binlog and ledger): 279 -> 180 CPU s for the in-process audit, the C2
# compiler threads' work not paid back within a 3-minute run (benchmarks/README.md, "seventh session"). Above this
# size (10 M events: 0.7 GB) not measured: C2 kept.
C1_INPUT_BYTES = 256 << 20
# Above C1_INPUT_BYTES C2 compiles the audit's hot loops (Spark's generated stage code, the Parquet reader, the hash
# maps), but not the code that only builds them: Janino compiling the generated Java, ANTLR, ASM, the Java
# serialization of tasks, class loading, Scala reflection. Those methods stay at C1's optimized tier. A JFR profile
# of the 10 M-event audit: 75.8 CPU s of C2 compilation, 27 of them on these packages (Janino alone 13.1). Same
# code, alternating in-process pairs at 10 M: 70.6 / 76.6 s and 77.5 / 81.8 s, JVM 105.5 / 121.6 and 117.8 / 126.7
# CPU s (benchmarks/README.md, "sixteenth session").
C2_EXCLUDED = ("org/codehaus/*.*", "org/antlr/*.*", "jdk/internal/org/objectweb/*.*", "org/apache/xbean/*.*",
               "java/io/ObjectInputStream*.*", "java/io/ObjectOutputStream*.*", "java/io/ObjectStreamClass*.*",
               "jdk/internal/loader/*.*", "scala/reflect/*.*")


def compiler_directives() -> str:
    """The HotSpot compiler directives (JEP 165) that keep C2 off C2_EXCLUDED: JSON with quoted keys."""
    import json

    return json.dumps([{"match": list(C2_EXCLUDED), "c2": {"Exclude": True}}])


def large_jvm_options(directory: Path) -> str:
    """The driver JVM options of a large one-audit run: the compiler directives, written to a file in `directory`
    (read once, as the JVM starts). HotSpot prints a line as it reads them: on stderr, not on the caller's stdout
    (with a log file, `build_session` sends the JVM's stderr there)."""
    path = Path(directory) / "c2-directives.json"
    path.write_text(compiler_directives())
    return f"-XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesFile={path} -XX:+DisplayVMOutputToStderr"


def jvm_output_path(log_file: Path) -> Path:
    """Where the driver JVM's own stdout and stderr go when Spark's log goes to `log_file`."""
    return Path(f"{Path(log_file).resolve()}.jvm.log")


def _launch_gateway(master: str, app_name: str, settings: dict[str, str], out: Path) -> None:
    """Start the driver JVM as `getOrCreate` would (pyspark's `launch_gateway`, the same options), with its stdout and
    stderr in `out`: the lines the JVM itself prints (the module system's warning about Spark's incubator module,
    HotSpot's notes) are not the CLI's output and broke into its progress bar. `getOrCreate` then uses this JVM. A
    JVM that does not start raises with what it said."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf().setMaster(master).setAppName(app_name)
    for k, v in settings.items():
        conf.set(k, v)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with out.open("ab") as f:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": f, "stderr": f})
    except Exception as e:
        said = out.read_text(errors="replace").strip()[-2000:] if out.is_file() else ""
        raise RuntimeError(f"{e} The JVM said ({out}): {said}" if said else str(e)) from e
    SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm


# Above C1_INPUT_BYTES the driver (the executor too, in local mode) gets a larger heap: with 2g the 10 M-event audit
# collected garbage for seconds more. CLI pairs at 10 M, alternating: 64.3 / 71.9 s and 66.2 / 74.2 s with 6g /
# 2g (benchmarks/README.md, "sixteenth session"). At most a quarter of the machine's memory, at least 2g.
LARGE_DRIVER_MEMORY_GB = 6


def large_driver_memory() -> str:
    """The driver memory of a large one-audit run (`--driver-memory` overrides it): LARGE_DRIVER_MEMORY_GB, at most
    a quarter of the machine's physical memory, at least DEFAULTS' 2g."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not known on this platform
        return DEFAULTS["spark.driver.memory"]
    return f"{max(2, min(LARGE_DRIVER_MEMORY_GB, (total // 4) >> 30))}g"


# A small audit's time is Spark jobs and stages, not rows. Adaptive execution runs every shuffle stage as a job of
# its own and re-plans the whole query after each (the findings of checks 1-5 are one wide plan); without it and
# with 2 shuffle partitions (the machine's cores), the 20 000-event audit ran 59 jobs, 118 stages, 384 tasks
# instead of 92, 138 and 1 005 (benchmarks/README.md, "third session"). Large inputs keep AQE: its coalescing and
# join choice pay there.
# Code generation off as well: with few rows, generating and compiling (Janino) Java for every operator and
# expression costs more than interpreting them. A JFR profile of the small audit (benchmarks/README.md, "ninth
# session") had 48 % of the task threads' samples and 24 % of the driver thread's in code generation; with both
# settings the JVM's CPU fell from 27.6-28.0 s to 21.7-25.6 s (three pairs), whole-stage codegen off alone to
# 24.4-25.3 s. `factoryMode` is an internal setting (Spark's tests use it): a Spark that ignores it generates code
# as before, with the same results.
# Memory pages of 1 MB: Spark sizes a task's Tungsten pages from the heap (driver memory / cores / 16, up to 64 MB:
# 32 MB with 2g, 64 MB with 6g), and every sort, hash aggregate and broadcast relation allocates a whole page (a
# zeroed long[]) for its first row. A JFR allocation profile of the small audit (3 397 events, 6g): 1.5 GB of such
# pages (sorts 832 MB, aggregates 514 MB, broadcasts 128 MB) of 2.6 GB allocated, ~400 MB of them live at its end;
# 14 young and full GCs (8.7 s of pauses at load 11) against 11 and 2.3 s with 1 MB pages.
SMALL_INPUT_SETTINGS = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "2",
                        "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                        "spark.buffer.pageSize": "1m"}


# Class-data sharing: a driver JVM's start is mostly loading and verifying Spark's ~30 000 classes from 280 jars.
# A dynamic archive of the classes an audit loaded (JDK 13+), mapped at the next start, halved a cold
# `getOrCreate()` + `range(1).count()` on this machine: 19-21 -> 9-10 s wall, 16-21 -> 7-9 CPU s
# (benchmarks/README.md, "fourth session"). The CLI writes it once (on its first run's JVM exit) under the user's
# cache directory; every session whose driver JVM matches it uses it. BINLOGD_AUDIT_CLASS_ARCHIVE=0 turns it off.
ARCHIVE_ENV = "BINLOGD_AUDIT_CLASS_ARCHIVE"
# the JVM's notes about classes it cannot archive (signed jars, generated classes) or an archive it cannot use (it
# then loads classes from the jars as without one) are not the audit's output
_ARCHIVE_LOG = "-Xlog:cds=off,cds+dynamic=off"


def _spark_jars() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = str(Path(pyspark.__file__).parent)
    jars = Path(home) / "jars"
    return jars if jars.is_dir() else None


def _java() -> Path | None:
    """The java that pyspark's launcher runs (JAVA_HOME's, else the PATH's)."""
    java = (Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else None
    found = str(java) if java and java.exists() else shutil.which("java")
    return Path(found).resolve() if found else None


def class_archive_path(cache_dir: Path | None = None) -> Path | None:
    """Where the class archive of this driver JVM (the java that pyspark runs, Spark's jars) lives; None when off
    or neither is found. The name changes with either, so an archive never meets a classpath it was not made for:
    the JVM rejects a mismatched one, but a truncated one crashes it (hence `close_session`'s rename)."""
    if os.environ.get(ARCHIVE_ENV, "1") == "0":
        return None
    jars, java_real = _spark_jars(), _java()
    if jars is None or java_real is None:
        return None
    key = f"{java_real}:{java_real.stat().st_mtime_ns}:{jars.resolve()}:{jars.stat().st_mtime_ns}"
    cache = cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "binlogd"
    return cache / f"spark-classes-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _archive_options(make: bool) -> tuple[str, Path | None]:
    """(driver JVM options, the file a JVM writes at its exit that `close_session` renames into place or None)."""
    path = class_archive_path()
    if path is None:
        return "", None
    if path.is_file():
        with contextlib.suppress(OSError):  # its mtime says when it was last used (`_prune_archives`)
            os.utime(path)
        return f"-XX:SharedArchiveFile={path} {_ARCHIVE_LOG}", None
    if not make:
        return "", None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return "", None
    for old in path.parent.glob(f"{path.name}.*"):  # left by a run that was killed before close_session
        try:
            if time.time() - old.stat().st_mtime > 3600:
                old.unlink()
        except OSError:
            pass
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    return f"-XX:ArchiveClassesAtExit={partial} {_ARCHIVE_LOG}", partial


_pending_archive: list[Path] = []


def close_session(spark: Any) -> None:
    """End a one-audit process's session. When its JVM is writing the class archive (the first CLI run), end the
    JVM and wait for it: the archive is renamed into place only once the JVM exited cleanly, so no session maps a
    half-written one (a truncated archive crashes the JVM that maps it). Otherwise nothing: the JVM ends with the
    process, as it always did."""
    if not _pending_archive:
        return
    partial = _pending_archive.pop()
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    rc = None
    if proc is not None and proc.stdin is not None:
        proc.stdin.close()  # the gateway JVM exits at EOF on its stdin (Spark's shutdown hook stops the context)
        try:
            rc = proc.wait(timeout=300)
        except subprocess.TimeoutExpired:  # a slow dump leaves no archive: the next run makes one
            rc = None
    final = partial.with_name(partial.name.rsplit(".", 1)[0])
    if rc == 0 and partial.is_file() and _archive_maps(partial):
        os.replace(partial, final)
        _prune_archives(final)
    else:
        partial.unlink(missing_ok=True)


# class archives kept in the cache directory: each Python environment with its own pyspark (a venv, a fresh clone)
# gets its own (170-190 MB), which nothing else removes
KEEP_ARCHIVES = 3


def _prune_archives(keep: Path) -> None:
    """Remove the archives beside `keep` but the KEEP_ARCHIVES - 1 last used (mtime: made, or touched when a session
    maps it). One removed is made again by the next run that needs it; a JVM mapping it keeps its mapping."""
    def used(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    others = sorted((p for p in keep.parent.glob("spark-classes-*.jsa") if p != keep), key=used, reverse=True)
    for old in others[KEEP_ARCHIVES - 1:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _archive_maps(archive: Path) -> bool:
    """Whether a JVM starts with `archive`: a JVM given a damaged one dies (SIGBUS), one made for other jars only
    ignores it."""
    java = _java()
    if java is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:  # the dying JVM's hs_err file goes there, not to the cwd
        try:
            return subprocess.run([str(java), f"-XX:SharedArchiveFile={archive}", _ARCHIVE_LOG,
                                   f"-XX:ErrorFile={tmp}/hs_err.log", "-version"], cwd=tmp, capture_output=True,
                                  timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


LOG4J2 = """\
# binlogd-audit: Spark's and the JVM's log lines go to a file, not the terminal (they broke the progress bar)
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n
"""


def quiet_logging(log_file: Path) -> str:
    """Write a log4j2 configuration sending every Spark/JVM log line to `log_file`; the driver JVM option that
    uses it (it must be given before the JVM starts, hence a spark.driver.extraJavaOptions entry)."""
    log_file = log_file.resolve()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    props = log_file.with_suffix(".log4j2.properties")
    props.write_text(LOG4J2.format(path=log_file))
    return f"-Dlog4j2.configurationFile=file:{props}"


def _import_worker_modules(rows: Any) -> Any:
    from binlogd.protocol import checksum, rewrite  # noqa: F401  (what check 3's rebuild imports)

    return iter(())


def start_python_workers(spark: Any) -> None:
    """Start Spark's Python worker daemon now, without waiting for it: the first Python task of a JVM (check 3's
    rebuild, in the findings job) otherwise waits 2.3-3.8 s for the daemon to start and import, at the end of the
    audit. Started early it comes up on the core that the driver's planning leaves idle, and the reused worker is
    ready when the task comes (a second one is a fork of the daemon). An asynchronous job of the JVM (`countAsync`):
    no Python thread, its result is not needed. One task: it holds a task slot while the daemon starts (two held
    both of local[2]'s slots, and the connection step's job waited for them; `run_audit` starts it after the
    policy-run step's jobs, before checks 1-5, which mostly plan)."""
    rdd = spark.sparkContext.parallelize(range(1), 1).mapPartitions(_import_worker_modules)
    rdd._jrdd.countAsync()


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (taskset, a container's cpuset), not the machine's count
    (`os.cpu_count`)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call on this platform
        return os.cpu_count() or 1


def master_cores(master: str | None) -> int:
    """The cores an audit under `master` may use on this machine for the work it does beside Spark (staging the
    events, placing the records): Spark's task slots of a local master (`local` 1, `local[N]` / `local[N,F]` N,
    `local[*]` and `local-cluster[n,c,m]` n*c, at most the usable cores), all usable cores otherwise (the default
    master `local[*]`; a cluster's executors run elsewhere). A user who gives `local[1]` asks for one core."""
    have = usable_cores()
    m = (master or DEFAULT_MASTER).strip()
    if m == "local":
        return 1
    if m.startswith("local-cluster[") and m.endswith("]"):
        try:
            n, c, _ = (int(x) for x in m[len("local-cluster["):-1].split(","))
        except ValueError:
            return have
        return max(1, min(have, n * c))
    if m.startswith("local[") and m.endswith("]"):
        slots = m[len("local["):-1].split(",")[0].strip()
        if slots.isdigit() and int(slots) > 0:
            return min(have, int(slots))
    return have


def input_bytes(*paths: Path) -> int:
    """Bytes of the files under `paths` (the audit's inputs): what the session is sized by."""
    total = 0
    for p in paths:
        p = Path(p)
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(q.stat().st_size for q in p.iterdir() if q.is_file())
    return total


_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def _add_java_options(settings: dict[str, str], options: str, unless: tuple[str, ...] = ()) -> bool:
    """Append `options` to the driver JVM's options in `settings`, unless they already name one of `unless` (the
    caller set that option itself); whether they were appended."""
    have = settings.get(_JAVA_OPTIONS, "")
    if any(u in have for u in unless):
        return False
    settings[_JAVA_OPTIONS] = (have + " " + options).strip()
    return True


def build_session(master: str | None = None, app_name: str = "binlogd-audit", conf: dict[str, str] | None = None,
                  log_file: Path | None = None, input_size: int | None = None, make_class_archive: bool = False,
                  register_source: bool = True) -> Any:
    """A SparkSession with the binlog data source registered (getOrCreate: one per process); with `log_file`
    Spark's own log goes there instead of the terminal, and the JVM's own stdout and stderr to `jvm_output_path`.
    `input_size` (bytes, see `input_bytes`) of a one-audit process (the CLI): at most C1_INPUT_BYTES starts the
    driver JVM with C1 only (above, C2 off the code that only builds the plans and tasks: `large_jvm_options`, and
    `large_driver_memory` unless `conf` sets it), at most SMALL_INPUT_BYTES plans without adaptive execution
    (SMALL_INPUT_SETTINGS). None (not known; a session that runs many audits, e.g. a test module's): C2 kept, it
    pays back over the later audits. `register_source` False: the data source is registered when an audit first
    reads with it (`run_audit`), not here."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from .jvm_lookups import keep_lookups

    keep_lookups()

    builder = SparkSession.builder.appName(app_name)
    # under spark-submit (the JVM launched this driver: PYSPARK_GATEWAY_PORT) its --master applies
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or DEFAULT_MASTER)
    settings = {**DEFAULTS, **(conf or {})}
    large = input_size is not None and input_size > C1_INPUT_BYTES
    if input_size is not None and not large:
        _add_java_options(settings, SMALL_JVM_OPTIONS, unless=("TieredStopAtLevel",))
    if input_size is not None and input_size <= SMALL_INPUT_BYTES:
        settings = {**settings, **{k: v for k, v in SMALL_INPUT_SETTINGS.items() if k not in (conf or {})}}
    if large and "spark.driver.memory" not in (conf or {}):
        settings["spark.driver.memory"] = large_driver_memory()
    from pyspark import SparkContext

    # a JVM already running (getOrCreate in a process that had a session) is not started again: no archive to make,
    # no directives file for it to read and no JVM to launch (under spark-submit the JVM was started before this
    # process: its options are spark-submit's)
    launching = SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    directives = None
    if large and launching and "CompilerDirectivesFile" not in settings.get(_JAVA_OPTIONS, ""):
        directives = tempfile.TemporaryDirectory(prefix="binlogd-audit-jvm-")
        _add_java_options(settings, large_jvm_options(Path(directives.name)))
    archive_opts, partial = _archive_options(make_class_archive and launching)
    if archive_opts and _add_java_options(settings, archive_opts,
                                          unless=("SharedArchiveFile", "ArchiveClassesAtExit")) \
            and partial is not None:
        _pending_archive.append(partial)
    if log_file is not None:
        _add_java_options(settings, quiet_logging(log_file))
    for k, v in settings.items():
        builder = builder.config(k, v)
    try:
        if log_file is not None and launching:
            _launch_gateway(master or DEFAULT_MASTER, app_name, settings, jvm_output_path(log_file))
        spark = builder.getOrCreate()
    finally:
        if directives is not None:  # read by the JVM as it started
            directives.cleanup()
    spark.sparkContext.setLogLevel("ERROR")
    if register_source:  # imported here: the data source's modules are not needed to start the JVM
        from .binlog_source import register

        register(spark)
    return spark
