"""The SparkSession of the audit: `local[*]` on this machine by default, any `--master` URL otherwise.

Defaults are sized for a small machine (2 cores, 24 GiB): a 2 GiB driver (it is also the executor in local
mode), few shuffle partitions (the data per connection is small after the first aggregation), no UI. Python
workers run the same interpreter as the driver so they import `protocol/` and `spark_analytics/` from the same
environment (PYSPARK_PYTHON). On a cluster, ship the project (`spark-submit --py-files`, see docs/audit.md).
"""

from __future__ import annotations

import os
import sys
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
}
# A small one-audit run (the CLI) is mostly JVM warm-up: the C2 compiler's work never pays back within it.
# Measured on a 20 000-event audit through the CLI (benchmarks/README.md, "Audit scale"): 77-91 -> 53-63 CPU
# seconds with C1 only. Large inputs keep C2 (their hot loops run for minutes), and so do sessions that run many
# audits (tests): test_audit.py took 299 s with C2, 329 s with C1.
SMALL_INPUT_BYTES = 32 << 20
SMALL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
# A small audit's time is Spark jobs and stages, not rows. Adaptive execution runs every shuffle stage as a job of
# its own and re-plans the whole query after each (the findings of checks 1-5 are one wide plan); without it and
# with 2 shuffle partitions (the machine's cores), the 20 000-event audit ran 59 jobs, 118 stages, 384 tasks
# instead of 92, 138 and 1 005 (benchmarks/README.md, "third session"). Large inputs keep AQE: its coalescing and
# join choice pay there.
SMALL_INPUT_SETTINGS = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "2"}


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


def build_session(master: str | None = None, app_name: str = "binlogd-audit", conf: dict[str, str] | None = None,
                  log_file: Path | None = None, input_size: int | None = None) -> Any:
    """A SparkSession with the binlog data source registered (getOrCreate: one per process); with `log_file`
    Spark's own log goes there instead of the terminal. `input_size` (bytes, see `input_bytes`) of a one-audit
    process (the CLI): at most SMALL_INPUT_BYTES starts the driver JVM with C1 only and plans without adaptive
    execution (SMALL_INPUT_SETTINGS). None (not known; a session
    that runs many audits, e.g. a test module's): C2 kept, it pays back over the later audits."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from .binlog_source import register

    builder = SparkSession.builder.appName(app_name)
    # under spark-submit (the JVM launched this driver: PYSPARK_GATEWAY_PORT) its --master applies
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or DEFAULT_MASTER)
    settings = {**DEFAULTS, **(conf or {})}
    if input_size is not None and input_size <= SMALL_INPUT_BYTES and "TieredStopAtLevel" not in settings.get(
            "spark.driver.extraJavaOptions", ""):
        settings["spark.driver.extraJavaOptions"] = (settings.get("spark.driver.extraJavaOptions", "") + " "
                                                     + SMALL_JVM_OPTIONS).strip()
    if input_size is not None and input_size <= SMALL_INPUT_BYTES:
        settings = {**settings, **{k: v for k, v in SMALL_INPUT_SETTINGS.items() if k not in (conf or {})}}
    if log_file is not None:
        settings["spark.driver.extraJavaOptions"] = (settings.get("spark.driver.extraJavaOptions", "") + " "
                                                     + quiet_logging(log_file)).strip()
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
