"""Where metrics live: one registry per exposed endpoint, built from live-state collectors plus `FED`.

Most of binlogd's metrics are read from live state at scrape time by a custom collector (server/metrics.py,
applier/metrics.py), so hot paths pay nothing. A feature whose events leave no state to read (a semi-sync ack
received, a file expired) feeds a counter here instead:

    from binlogd.metrics.registry import counter
    ACKS = counter("binlogd_rpl_semi_sync_master_acks_total", "Semi-sync acks received from replicas")
    ACKS.inc()

`counter()` / `gauge()` return the existing metric when the name is already registered (modules may be
imported twice in tests), and every endpoint built with `endpoint_registry()` exposes them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

FED = CollectorRegistry(auto_describe=True)  # metrics incremented where things happen (process-wide)
_fed: dict[str, Counter | Gauge] = {}
_lock = threading.Lock()


def counter(name: str, documentation: str, labelnames: Sequence[str] = ()) -> Counter:
    """The process-wide counter `name` (created once); `name` without the `_total` suffix is accepted too."""
    key = name.removesuffix("_total")
    with _lock:
        m = _fed.get(key)
        if m is None:
            m = _fed[key] = Counter(key, documentation, labelnames, registry=FED)
        if not isinstance(m, Counter):
            raise ValueError(f"metric {name} is already registered as a gauge")
        return m


def gauge(name: str, documentation: str, labelnames: Sequence[str] = ()) -> Gauge:
    """The process-wide gauge `name` (created once)."""
    with _lock:
        m = _fed.get(name)
        if m is None:
            m = _fed[name] = Gauge(name, documentation, labelnames, registry=FED)
        if not isinstance(m, Gauge):
            raise ValueError(f"metric {name} is already registered as a counter")
        return m


class _Fed(Collector):
    """Forwards `FED` into an endpoint's registry (so each endpoint also has its own live collectors)."""

    def collect(self) -> Iterator[Metric]:
        yield from FED.collect()


def endpoint_registry(collectors: Iterable[Collector]) -> CollectorRegistry:
    """A registry for one HTTP endpoint: `collectors` (read live state at scrape time) plus the fed metrics."""
    reg = CollectorRegistry(auto_describe=False)
    for c in collectors:
        reg.register(c)
    reg.register(_Fed())
    return reg
