"""What each dump connection was sent, read from binlogd's audit ledger (docs/ledger.md), for test assertions.

The ledger is the server's own account, written as the bytes reach the socket, so a test can assert on holes,
dummies and positions without decoding the stream itself. Plain JSON reading: no Spark involved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Run:
    """One ledger decision record: ``count`` consecutive events of ``file`` [start, end) given ``action``."""

    action: str  # sent, hole, dummy, begin, fake, error
    why: str | None  # skip_replication, capability, gtid_start, rotate, position_sync, or None
    file: str
    start: int
    end: int
    count: int
    policy: int = 0  # of a `sent` run: events a type rule of the connection withheld or rewrote


@dataclass
class DumpConnection:
    """One COM_BINLOG_DUMP as the ledger tells it."""

    conn: int
    server_id: int
    capability: int
    skip_replication: bool
    peer: str
    start_file: str
    start_pos: int
    runs: list[Run] = field(default_factory=list)
    closed: bool = False
    close_reason: str | None = None  # eof, client_gone, killed, error, shutdown
    error_code: int | None = None
    error: str | None = None
    events_sent: int | None = None  # the dump's own packet counter (close record): what it framed
    bytes_sent: int | None = None  # bytes really written to the socket
    faults: list[dict[str, Any]] = field(default_factory=list)  # `fault` records (--faults), in stream order
    transcode: str | None = None  # checksum transcoding: strip_crc, add_crc or None (docs/transcode.md)

    def fault(self, action: str) -> dict[str, Any] | None:
        """The first `fault` record with ``action`` (``match``, ``close_after_events``, ``error_1236``, ...): where
        the client's stream really was when the fault acted (``events``, ``bytes``, ``file``, ``pos``)."""
        return next((f for f in self.faults if f.get("action") == action), None)

    def count(self, action: str, why: str | None = None) -> int:
        """Events given ``action`` (optionally for reason ``why``); `sent` leaves out the runs' policy events."""
        return sum(r.count - (r.policy if r.action == "sent" else 0) for r in self.runs
                   if r.action == action and (why is None or r.why == why))

    @property
    def sent(self) -> int:
        """Events sent as stored (fake ROTATE / GTID_LIST not included: see ``count('fake')``)."""
        return self.count("sent")

    @property
    def holes(self) -> int:
        return self.count("hole")

    @property
    def dummies(self) -> int:
        return self.count("dummy")

    @property
    def policy(self) -> int:
        """Events a type rule of the connection withheld or rewrote inside runs of sends (docs/ledger.md)."""
        return sum(r.policy for r in self.runs if r.action == "sent")

    def positions(self, action: str, why: str | None = None) -> list[tuple[str, int, int]]:
        """(file, start, end) of every run given ``action`` (and ``why``), in stream order."""
        return [(r.file, r.start, r.end) for r in self.runs if r.action == action and (why is None or r.why == why)]


def _records(ledger_dir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(ledger_dir.glob("ledger.*.jsonl")):
        data = path.read_bytes()
        for line in data.split(b"\n")[:-1]:  # a last line without its newline is still being written
            if line:
                out.append(json.loads(line))
    return out


def read_connections(ledger_dir: Path | str) -> list[DumpConnection]:
    """Every dump connection in the ledger directory, in the order they started."""
    conns: dict[int, DumpConnection] = {}
    for rec in _records(Path(ledger_dir)):
        kind, cid = rec.get("r"), int(rec.get("conn", 0))
        if kind == "conn":
            conns[cid] = DumpConnection(
                conn=cid, server_id=int(rec.get("server_id") or 0), capability=int(rec.get("capability") or 0),
                skip_replication=bool(rec.get("skip_replication")), peer=str(rec.get("peer") or ""),
                start_file=str(rec.get("start_file") or ""), start_pos=int(rec.get("start_pos") or 0),
                transcode=rec.get("transcode"))
        elif cid in conns and kind == "ev":
            if rec.get("action") == "error":
                conns[cid].error_code, conns[cid].error = rec.get("code"), rec.get("message")
            conns[cid].runs.append(Run(str(rec["action"]), rec.get("why"), str(rec.get("file") or ""),
                                       int(rec.get("start") or 0), int(rec.get("end") or 0),
                                       int(rec.get("count") or 0), int(rec.get("policy") or 0)))
        elif cid in conns and kind == "fault":
            conns[cid].faults.append(rec)
        elif cid in conns and kind == "close":
            c = conns[cid]
            c.closed, c.close_reason = True, rec.get("reason")
            if rec.get("error_code") is not None:  # a dump killed by a newer one (4052)
                c.error_code, c.error = rec.get("error_code"), rec.get("error")
            c.events_sent, c.bytes_sent = rec.get("events"), rec.get("bytes")
    return list(conns.values())
