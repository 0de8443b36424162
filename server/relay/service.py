"""Relay mode assembled: recover the stored binlog, then run the upstream connection that extends it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from binlogd.server.binlog.writer import BinlogWriter
from binlogd.server.heap import keep_freed_buffers

from .status import RelayStatus
from .storage import RelayStorage
from .upstream import UpstreamConfig, UpstreamRelay

log = logging.getLogger("binlogd.relay")


async def open_relay(cfg: UpstreamConfig, datadir: Path, basename: str, sync_binlog: int = 0) -> UpstreamRelay:
    """Recover `datadir` (crash rule 4 of `server.binlog.writer`: what was never published is cut) and start the
    upstream IO.

    The store dump streams read is `relay.storage.w.store`; it may still be empty (no file until the upstream's
    first FDE arrives).
    """
    keep_freed_buffers()  # the relay's reads come and go in buffers of hundreds of KiB (server/heap.py)
    writer = await asyncio.to_thread(BinlogWriter, datadir, basename, sync_binlog)
    report = await asyncio.to_thread(writer.recover)
    writer.store.bind_loop(asyncio.get_running_loop())
    if report.file is None:
        log.info("relay: %s holds no binlog yet; starting from the upstream's first binlog file", datadir)
    else:
        cut = (f", cut {report.truncated_bytes} byte(s) of an unfinished group at {report.truncated_from}"
               if report.truncated_bytes else "")
        log.info("relay: recovered %s, resuming at %s:%d%s", datadir, report.file, report.last_end, cut)
    status = RelayStatus(host=cfg.host, port=cfg.port, user=cfg.user, connect_retry=int(cfg.retry_max_s),
                         heartbeat_s=cfg.heartbeat_s, tls=cfg.tls)
    storage = RelayStorage(writer, status, report.state)
    status.stored_bytes = sum(_size(datadir / n) for n in writer.files())
    relay = UpstreamRelay(cfg, storage, status)
    relay.start()
    return relay


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0
