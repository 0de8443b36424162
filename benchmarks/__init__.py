"""Benchmarks for binlogd (run from the repository root: ``python -m benchmarks.dump_throughput``)."""

from pathlib import Path

# The repository root: where ``-m benchmarks...`` modules are found and results are written.
REPO_ROOT = Path(__file__).resolve().parents[1]
