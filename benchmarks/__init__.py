"""Benchmarks for binlogd (run from the repository root: ``python -m benchmarks.dump_throughput``)."""
