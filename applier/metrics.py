"""`binlogd-apply --metrics-port`: each channel's state as Prometheus metrics (docs/operations.md), read at scrape
time from what SHOW ALL SLAVES STATUS and P_S replication_applier_filters show, so the two never disagree and
applying pays nothing for them."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from binlogd.metrics.http import MetricsServer
from binlogd.metrics.registry import endpoint_registry

from .runner import Applier

log = logging.getLogger("binlogd.apply.metrics")

CH = ("channel",)
_RUNNING = ("Yes", "Connecting", "No")
_GROUP_KINDS = (("Slave_DDL_Groups", "ddl"), ("Slave_Transactional_Groups", "transactional"),
                ("Slave_Non_Transactional_Groups", "non_transactional"))


class ApplierCollector(Collector):
    def __init__(self, applier: Applier) -> None:
        self.applier = applier

    def collect(self) -> Iterator[Metric]:
        rows = self.applier.status_rows()
        io = GaugeMetricFamily("binlogd_apply_slave_io_running", "Slave_IO_Running: 1 for the channel's current "
                               "value of `state`", labels=("channel", "state"))
        sql = GaugeMetricFamily("binlogd_apply_slave_sql_running", "Slave_SQL_Running (1 Yes, 0 No)", labels=CH)
        behind = GaugeMetricFamily("binlogd_apply_seconds_behind_master", "Seconds_Behind_Master (no sample while "
                                   "NULL: a side stopped)", labels=CH)
        groups = CounterMetricFamily("binlogd_apply_transactions", "Event groups the channel applied, by kind "
                                     "(Slave_DDL_Groups, Slave_Transactional_Groups, Slave_Non_Transactional_Groups)",
                                     labels=("channel", "kind"))
        entries = CounterMetricFamily("binlogd_apply_executed_events", "Events the SQL side took (Executed_log_"
                                      "entries)", labels=CH)
        rows_applied = CounterMetricFamily("binlogd_apply_rows", "Rows applied to the target", labels=CH)
        skipped = CounterMetricFamily("binlogd_apply_skipped_events", "Events dropped by the skip mode (flagged "
                                      "0x8000) or unknown-but-ignorable", labels=("channel", "reason"))
        heartbeats = CounterMetricFamily("binlogd_apply_heartbeats", "Heartbeats received (Slave_received_"
                                         "heartbeats)", labels=CH)
        retried = CounterMetricFamily("binlogd_apply_retried_transactions", "Retried_transactions", labels=CH)
        read_pos = GaugeMetricFamily("binlogd_apply_read_master_log_pos", "Read_Master_Log_Pos", labels=CH)
        exec_pos = GaugeMetricFamily("binlogd_apply_exec_master_log_pos", "Exec_Master_Log_Pos", labels=CH)
        io_err = GaugeMetricFamily("binlogd_apply_last_io_errno", "Last_IO_Errno (0: no error)", labels=CH)
        sql_err = GaugeMetricFamily("binlogd_apply_last_sql_errno", "Last_SQL_Errno (0: no error)", labels=CH)
        for st in rows:
            ch = str(st["Connection_name"])
            for v in _RUNNING:
                io.add_metric((ch, v), 1 if st["Slave_IO_Running"] == v else 0)
            sql.add_metric((ch,), 1 if st["Slave_SQL_Running"] == "Yes" else 0)
            if st["Seconds_Behind_Master"] is not None:
                behind.add_metric((ch,), st["Seconds_Behind_Master"])
            for column, kind in _GROUP_KINDS:
                groups.add_metric((ch, kind), st[column])
            entries.add_metric((ch,), st["Executed_log_entries"])
            rows_applied.add_metric((ch,), st["Rows_Applied"])
            skipped.add_metric((ch, "flagged"), st["Events_Skipped_Flagged"])
            skipped.add_metric((ch, "ignorable"), st["Events_Skipped_Ignorable"])
            heartbeats.add_metric((ch,), st["Slave_received_heartbeats"])
            retried.add_metric((ch,), st["Retried_transactions"])
            read_pos.add_metric((ch,), st["Read_Master_Log_Pos"])
            exec_pos.add_metric((ch,), st["Exec_Master_Log_Pos"])
            io_err.add_metric((ch,), st["Last_IO_Errno"])
            sql_err.add_metric((ch,), st["Last_SQL_Errno"])
        yield GaugeMetricFamily("binlogd_apply_channels", "Channels configured", value=len(rows))
        yield from (io, sql, behind, groups, entries, rows_applied, skipped, heartbeats, retried, read_pos, exec_pos,
                    io_err, sql_err)
        yield self._filters()

    def _filters(self) -> Metric:
        """P_S replication_applier_filters.COUNTER per rule: the events (statements, row events) the rule decided."""
        fam = CounterMetricFamily("binlogd_apply_filter_events", "Events a replication filter rule decided "
                                  "(P_S replication_applier_filters COUNTER), per channel and rule",
                                  labels=("channel", "filter_name", "filter_rule"))
        for chan, name, rule, _by, _since, counter in self.applier.filters.applier_filters_rows():
            fam.add_metric((chan, name, rule), counter)
        return fam


async def start_metrics(applier: Applier, host: str, port: int) -> MetricsServer:
    """Serve the applier's metrics on host:port (OSError when it cannot listen)."""
    socks: list[socket.socket] = MetricsServer.bind(host, port)
    server = MetricsServer(endpoint_registry([ApplierCollector(applier)]))
    await server.serve_sockets(socks)
    log.info("metrics: Prometheus text on http://%s:%d/metrics", host, socks[0].getsockname()[1])
    return server
