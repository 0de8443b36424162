"""The SparkSession of the audit: `local[*]` on this machine by default, any `--master` URL otherwise.

Defaults are sized for a small machine (2 cores, 24 GiB): a 2 GiB driver (it is also the executor in local
mode), few shuffle partitions (the data per connection is small after the first aggregation), no UI. Python
workers run the same interpreter as the driver so they import `protocol/` and `spark_analytics/` from the same
environment (PYSPARK_PYTHON). On a cluster, ship the project (`spark-submit --py-files`, see docs/audit.md).
"""

from __future__ import annotations

import os
import sys
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
}


def build_session(master: str | None = None, app_name: str = "binlogd-audit", conf: dict[str, str] | None = None
                  ) -> Any:
    """A SparkSession with the binlog data source registered (getOrCreate: one per process)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from .binlog_source import register

    builder = SparkSession.builder.appName(app_name)
    # under spark-submit (the JVM launched this driver: PYSPARK_GATEWAY_PORT) its --master applies
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or DEFAULT_MASTER)
    for k, v in {**DEFAULTS, **(conf or {})}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
