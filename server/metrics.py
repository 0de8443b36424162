"""`binlogd serve`'s Prometheus metrics (docs/operations.md), read from the live state at scrape time.

Nothing is counted for the metrics on the dump's per-event path: the collector reads each running dump's
`DumpStats` (which the dump keeps anyway for its log line and the ledger's close record), the store, the relay's
`RelayStatus`, the ledger's queue and the binlog writer's commit counters when Prometheus asks. The scrape runs on
the event loop (binlogd.metrics.http), so it sees a consistent state without locks.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from binlogd.metrics.http import MetricsServer
from binlogd.metrics.registry import endpoint_registry

from .binlog.store import StoreError
from .binlog.writer import BinlogWriter
from .dump import DumpStream
from .ledger import Ledger
from .primary import Primary
from .relay.status import RelayStatus

if TYPE_CHECKING:
    from .relay.upstream import UpstreamRelay
    from .standalone.source import StandaloneSource

log = logging.getLogger("binlogd.metrics")

REPLICA_LABELS = ("server_id", "user", "peer")
_FILE_NUMBER = re.compile(r"\.(\d+)$")
IO_STATES = ("Yes", "Connecting", "No")  # Slave_IO_Running's three values


@dataclass
class ServerState:
    """What the collector reads; the parts a mode does not have are None (wired in server/app.py)."""

    primary: Primary
    mode: str  # standalone | relay | directory
    connections_total: Callable[[], int]  # connections accepted since start (MariaDB `Connections`)
    ledger: Ledger | None = None
    writer: BinlogWriter | None = None  # standalone and relay: the binlog writer (commits, fsyncs)
    transactions: Callable[[], int] | None = None  # standalone: event groups committed (MariaDB `Binlog_commits`)
    relay: RelayStatus | None = None


def replica_labels(dump: DumpStream) -> tuple[str, str, str]:
    info = dump.ledger_info
    return str(dump.p.replica_server_id), str(info.get("user") or ""), str(info.get("peer") or "")


def bytes_behind(dump: DumpStream, ends: dict[str, int], order: list[str]) -> int:
    """Binlog bytes from the dump's read position to the end of the last file (`ends`: readable end per file).
    A dump whose file is not known yet (a GTID start being resolved) is behind by all of them, not by none: it
    has not been sent anything, and a scrape must not show it caught up."""
    if dump.file not in ends:
        return sum(ends.values())
    i = order.index(dump.file)
    return max(0, ends[dump.file] - dump.pos) + sum(ends[n] for n in order[i + 1:])


class BinlogdCollector(Collector):
    def __init__(self, state: ServerState, clock: Callable[[], float] = time.monotonic) -> None:
        self.s = state
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        store = self.s.primary.store
        try:
            names = store.files()
            ends = {n: store.end_of(n) for n in names}
        except (OSError, StoreError):
            names, ends = [], {}
        yield from self._server()
        yield from self._binlog(names, ends)
        yield from self._replicas(names, ends)
        if self.s.relay is not None:
            yield from self._relay(self.s.relay)

    def _server(self) -> Iterator[Metric]:
        s, p = self.s, self.s.primary
        yield InfoMetricFamily("binlogd", "binlogd's version and mode", value={"version": p.version, "mode": s.mode})
        yield GaugeMetricFamily("binlogd_uptime_seconds", "Seconds since the server started (MariaDB Uptime)",
                                value=time.monotonic() - p.started)
        yield GaugeMetricFamily("binlogd_threads_connected", "Client connections open now, replicas included "
                                "(MariaDB Threads_connected)", value=p.threads_connected())
        yield CounterMetricFamily("binlogd_connections", "Client connections accepted since start (MariaDB "
                                  "Connections)", value=s.connections_total())
        if s.ledger is not None:
            yield GaugeMetricFamily("binlogd_ledger_queue_depth", "Audit ledger records queued, not yet written",
                                    value=s.ledger.pending)
            yield GaugeMetricFamily("binlogd_ledger_queue_limit", "Queue depth over which dumps wait for the "
                                    "ledger writer (back-pressure)", value=s.ledger.queue_limit)
            yield CounterMetricFamily("binlogd_ledger_records_written", "Audit ledger records written since start",
                                      value=s.ledger.records_written)
        if s.writer is not None:
            yield CounterMetricFamily("binlogd_binlog_group_commits", "Binlog commits made durable and visible to "
                                      "dumps, each of one or more event groups (MariaDB Binlog_group_commits, DDL "
                                      "included)", value=s.writer.group_commits)
            yield CounterMetricFamily("binlogd_binlog_fsyncs", "fdatasync calls at binlog commits "
                                      "(--sync-binlog)", value=s.writer.fsyncs)
        if s.transactions is not None:
            yield CounterMetricFamily("binlogd_binlog_commits", "Event groups written to the binlog (MariaDB "
                                      "Binlog_commits, DDL included)", value=s.transactions())

    def _binlog(self, names: list[str], ends: dict[str, int]) -> Iterator[Metric]:
        yield GaugeMetricFamily("binlogd_binlog_files", "Binlog files in the index", value=len(names))
        yield GaugeMetricFamily("binlogd_binlog_size_bytes", "Bytes in all binlog files (readable ends)",
                                value=sum(ends.values()))
        if not names:
            return
        last = names[-1]
        m = _FILE_NUMBER.search(last)
        yield GaugeMetricFamily("binlogd_binlog_end_position", "Readable end of the last binlog file (SHOW MASTER "
                                "STATUS Position)", value=ends[last])
        yield GaugeMetricFamily("binlogd_binlog_file_number", "Number of the last binlog file (000012 -> 12)",
                                value=int(m.group(1)) if m else 0)
        yield InfoMetricFamily("binlogd_binlog", "The last binlog file (SHOW MASTER STATUS File)",
                               value={"file": last})

    def _replicas(self, names: list[str], ends: dict[str, int]) -> Iterator[Metric]:
        dumps = sorted(self.s.primary.readers, key=lambda d: d.ledger_info.get("thread_id") or 0)  # type: ignore
        now = self.clock()
        fams = {
            "events": CounterMetricFamily("binlogd_replica_events_sent", "Events sent to the replica, fake ROTATE/"
                                          "GTID_LIST, dummies and BEGINs included, heartbeats not",
                                          labels=REPLICA_LABELS),
            "bytes": CounterMetricFamily("binlogd_replica_sent_bytes", "Bytes written to the replica's socket",
                                         labels=REPLICA_LABELS),
            "holes": CounterMetricFamily("binlogd_replica_holes", "Events left out of the replica's stream (holes)",
                                         labels=REPLICA_LABELS),
            "dummies": CounterMetricFamily("binlogd_replica_dummies", "Events replaced by same-length dummies",
                                           labels=REPLICA_LABELS),
            "begins": CounterMetricFamily("binlogd_replica_begins", "GTID events rewritten into same-length BEGIN "
                                          "queries (replicas below capability 4)", labels=REPLICA_LABELS),
            "heartbeats": CounterMetricFamily("binlogd_replica_heartbeats", "Heartbeat events sent",
                                              labels=REPLICA_LABELS),
            "behind": GaugeMetricFamily("binlogd_replica_behind_bytes", "Binlog bytes between the dump's read "
                                        "position and the end of the last file", labels=REPLICA_LABELS),
            "age": GaugeMetricFamily("binlogd_replica_last_event_age_seconds", "Seconds since the last event was "
                                     "written to the replica (since the dump started when none was)",
                                     labels=REPLICA_LABELS),
        }
        for d in dumps:
            lv = replica_labels(d)
            st = d.stats
            fams["events"].add_metric(lv, st.events_sent - st.heartbeats)
            fams["bytes"].add_metric(lv, st.bytes_sent)
            fams["holes"].add_metric(lv, st.holes)
            fams["dummies"].add_metric(lv, st.dummies)
            fams["begins"].add_metric(lv, st.begins)
            fams["heartbeats"].add_metric(lv, st.heartbeats)
            fams["behind"].add_metric(lv, bytes_behind(d, ends, names))
            fams["age"].add_metric(lv, now - (st.last_event_at if st.last_event_at is not None else st.started_at))
        yield GaugeMetricFamily("binlogd_replicas_connected", "Dump connections (COM_BINLOG_DUMP) running",
                                value=len(dumps))
        yield from fams.values()

    def _relay(self, r: RelayStatus) -> Iterator[Metric]:
        state = GaugeMetricFamily("binlogd_relay_upstream_io_running", "Slave_IO_Running of the upstream "
                                  "connection: 1 for the current value of `state`", labels=("state",))
        for v in IO_STATES:
            state.add_metric((v,), 1 if r.io_running == v else 0)
        yield state
        yield GaugeMetricFamily("binlogd_relay_upstream_up", "1 while connected to the upstream and reading "
                                "(Slave_IO_Running=Yes)", value=1 if r.io_running == "Yes" else 0)
        behind = r.seconds_behind()
        if behind is not None:  # NULL while not connected: no sample (alert on binlogd_relay_upstream_up)
            yield GaugeMetricFamily("binlogd_relay_seconds_behind_master", "Seconds_Behind_Master of the upstream "
                                    "connection", value=behind)
        yield GaugeMetricFamily("binlogd_relay_read_master_log_pos", "Read_Master_Log_Pos: end of the last event "
                                "received", value=r.read_pos)
        yield GaugeMetricFamily("binlogd_relay_exec_master_log_pos", "Exec_Master_Log_Pos: end of the last event "
                                "stored and published", value=r.stored_pos)
        yield CounterMetricFamily("binlogd_relay_events_stored", "Upstream events stored (Executed_log_entries)",
                                  value=r.events_stored)
        yield CounterMetricFamily("binlogd_relay_groups_stored", "Upstream event groups stored: transactions and "
                                  "each event outside one (binlogd's Slave_Transactional_Groups)",
                                  value=r.groups_stored)
        yield CounterMetricFamily("binlogd_relay_heartbeats", "Heartbeats received from the upstream "
                                  "(Slave_received_heartbeats)", value=r.heartbeats)
        yield CounterMetricFamily("binlogd_relay_reconnects", "Reconnections to the upstream", value=r.reconnects)
        yield GaugeMetricFamily("binlogd_relay_last_io_errno", "Last_IO_Errno (0: no error)", value=r.last_io_errno)


class _Counted(Protocol):
    @property
    def connections_total(self) -> int: ...


def metrics_state(primary: Primary, server: _Counted, ledger: Ledger | None, relay: UpstreamRelay | None,
                  standalone: StandaloneSource | None) -> ServerState:
    """What each mode has to show: the writer and commit count of standalone and relay, the relay's status."""
    state = ServerState(primary, "directory", lambda: server.connections_total, ledger)
    if relay is not None:
        status = relay.status
        state.mode, state.writer, state.relay = "relay", relay.storage.w, status
    elif standalone is not None:
        files = standalone.files
        state.mode, state.writer = "standalone", standalone.writer
        state.transactions = lambda: files.groups_committed
    return state


async def start_metrics(socks: list[socket.socket], state: ServerState) -> MetricsServer:
    """Serve `state`'s metrics (and the fed ones, binlogd.metrics.registry) on `socks` (bound at start-up)."""
    server = MetricsServer(endpoint_registry([BinlogdCollector(state)]))
    await server.serve_sockets(socks)
    addr = socks[0].getsockname()
    log.info("metrics: Prometheus text on http://%s:%d/metrics", addr[0], addr[1])
    return server
