"""Scraping binlogd's and binlogd-apply's /metrics in tests, and the metric names the Grafana dashboard uses."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from binlogd.testing.mariadb import HOST

DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "grafana-binlogd.json"
_NAME = re.compile(r"\b(binlogd_[a-z_]+)\b")

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of http://HOST:port/metrics by (name, sorted labels)."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=")
        text = r.read().decode()
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    assert key in samples, f"{name}{labels} not scraped; have {sorted({n for n, _ in samples})}"
    return samples[key]


def replica_series(samples: Samples, name: str) -> dict[str, float]:
    """peer -> value of a per-replica metric."""
    return {dict(lv)["peer"]: v for (n, lv), v in samples.items() if n == name}



def dashboard_metric_names() -> set[str]:
    """Every binlogd metric name a panel's expr of docs/grafana-binlogd.json reads."""
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs
    return {n for e in exprs for n in _NAME.findall(e)}


def scraped_names(samples: Samples) -> set[str]:
    return {n for n, _ in samples}
