"""The Spark audit of what each replica was sent (`binlogd-audit`, docs/audit.md).

binlog_source: `spark.read.format("binlog")`; ledger: reading binlogd's ledger; checks: the ten checks;
audit: one run; report: summary.json, report.html, findings.parquet; session: the SparkSession; cli: the command.
"""
