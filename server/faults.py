"""Fault injection for dump streams (`binlogd serve --faults FILE`): a testing tool, never for production.

A `Fault` names one dump connection (by the replica's server_id or by the order of COM_BINLOG_DUMPs since the
set was loaded) and what happens to its stream; `server/fault_writer.py` carries it out. The file is a JSON list
of faults (`FaultSet.to_json()`); `FaultFile` re-reads it when it changes (writers replace it atomically), so a
test can change faults while binlogd runs. A bad file keeps the previous set.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

log = logging.getLogger("binlogd.faults")

MAX_SERVER_ID = 0xFFFFFFFF
MAX_HEARTBEAT_S = 4294967.0  # MariaDB's MASTER_HEARTBEAT_PERIOD limit
MAX_ERROR_TEXT = 512  # MariaDB's MYSQL_ERRMSG_SIZE

# the fields that act on the bytes of the stream (need the fault writer); heartbeat_s only changes the period
STREAM_FIELDS = ("close_after_events", "close_after_bytes", "corrupt_crc_of_event", "stall_seconds", "error_1236",
                 "throttle_bytes_per_s", "internal_error_after_events")


@dataclass(frozen=True)
class Fault:
    """One fault. Event counts are of the event packets sent on the connection, 1-based, the fake ROTATE, the
    FDE, fake GTID_LISTs and heartbeats included (a dump from the start of a file: event 1 is the fake ROTATE,
    2 the FDE, 3 the first stored event after it). Several actions of one fault apply together."""

    server_id: int | None = None  # the COM_BINLOG_DUMP's server_id
    connection: int | None = None  # the Nth COM_BINLOG_DUMP since the set was loaded (1-based)
    close_after_events: int | None = None  # close the connection after N event packets
    close_after_bytes: int | None = None  # close after N bytes of the stream (packet headers included)
    corrupt_crc_of_event: int | None = None  # flip the last byte (the CRC32's) of event packet K
    stall_seconds: float | None = None  # send nothing for T seconds ...
    stall_after_events: int = 0  # ... after N event packets
    error_1236: str | None = None  # end with ERR 1236 and this text ...
    error_after_events: int = 0  # ... after N event packets
    throttle_bytes_per_s: int | None = None  # at most B bytes per second
    heartbeat_s: float | None = None  # heartbeat period instead of the client's (0: none)
    internal_error_after_events: int | None = None  # a bug's stand-in: raise after N event packets
    times: int | None = None  # how many matching dumps it applies to (None: every one)

    def __post_init__(self) -> None:
        if (self.server_id is None) == (self.connection is None):
            raise ValueError("server_id / connection: exactly one of them must be set")
        _int("server_id", self.server_id, 0, MAX_SERVER_ID)
        _int("connection", self.connection, 1)
        _int("close_after_events", self.close_after_events, 0)
        _int("close_after_bytes", self.close_after_bytes, 0)
        _int("corrupt_crc_of_event", self.corrupt_crc_of_event, 1)
        _num("stall_seconds", self.stall_seconds, 0, 86400.0, low_open=True)
        _int("stall_after_events", self.stall_after_events, 0, required=True)
        if self.error_1236 is not None:
            if not isinstance(self.error_1236, str):
                raise ValueError(f"error_1236: must be a string, not {type(self.error_1236).__name__}")
            if len(self.error_1236.encode()) > MAX_ERROR_TEXT:
                raise ValueError(f"error_1236: at most {MAX_ERROR_TEXT} bytes")
        _int("error_after_events", self.error_after_events, 0, required=True)
        _int("throttle_bytes_per_s", self.throttle_bytes_per_s, 1)
        _num("heartbeat_s", self.heartbeat_s, 0, MAX_HEARTBEAT_S)
        _int("times", self.times, 1)
        _int("internal_error_after_events", self.internal_error_after_events, 0)
        if self.stall_after_events and self.stall_seconds is None:
            raise ValueError("stall_after_events: needs stall_seconds")
        if self.error_after_events and self.error_1236 is None:
            raise ValueError("error_after_events: needs error_1236")
        if not self.streams and self.heartbeat_s is None:
            raise ValueError("fault: no action given (close_after_events, close_after_bytes, corrupt_crc_of_event, "
                             "stall_seconds, error_1236, throttle_bytes_per_s, internal_error_after_events "
                             "or heartbeat_s)")

    @property
    def streams(self) -> bool:
        """It acts on the stream's bytes (else it only changes the heartbeat period)."""
        return any(getattr(self, f) is not None for f in STREAM_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """The fields that differ from their defaults (the file's form)."""
        d = asdict(self)
        return {f.name: d[f.name] for f in fields(self) if d[f.name] != f.default}

    @classmethod
    def from_dict(cls, d: Any, where: str = "fault") -> Fault:
        if not isinstance(d, dict):
            raise ValueError(f"{where}: must be a JSON object, not {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        for k in d:
            if k not in names:
                raise ValueError(f"{where}: unknown field {k!r} (known: {', '.join(sorted(names))})")
        try:
            return cls(**d)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


def _int(name: str, v: object, lo: int, hi: int | None = None, required: bool = False) -> None:
    if v is None and not required:
        return
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name}: must be an integer, not {v!r}")
    if v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name}: must be >= {lo}{f' and <= {hi}' if hi is not None else ''}, not {v}")


def _num(name: str, v: object, lo: float, hi: float, low_open: bool = False) -> None:
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"{name}: must be a number of seconds, not {v!r}")
    if v < lo or (low_open and v == lo) or v > hi:
        raise ValueError(f"{name}: must be {'>' if low_open else '>='} {lo:g} and <= {hi:g}, not {v}")


class FaultSet(list[Fault]):
    """The faults of one file, in order: a dump gets the first that matches it and has uses left."""

    def to_json(self) -> str:
        return json.dumps([f.to_dict() for f in self], indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> FaultSet:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON: {e}") from None
        if not isinstance(data, list):
            raise ValueError(f"must be a JSON list of faults, not {type(data).__name__}")
        return cls(Fault.from_dict(d, f"fault {i + 1}") for i, d in enumerate(data))


def load_faults(path: str | os.PathLike[str]) -> FaultSet:
    """The set in `path` (OSError when unreadable, ValueError naming the field when invalid)."""
    return FaultSet.from_json(Path(path).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Match:
    """The fault a dump got: `dump` is its number since the set was loaded."""

    fault: Fault
    index: int  # 1-based, in the file
    dump: int
    by: str  # "server_id" or "connection"


class FaultFile:
    """The set in `--faults FILE`, re-read when the file's inode, size or mtime change.

    `check()` (stat, and a read when changed; for a worker thread) returns what the file holds now; `match()` (on
    the event loop) installs it and picks the dump's fault. A missing file is an empty set; a bad one keeps the
    previous set and is logged once per version. Dump numbers and `times` count from each successful load.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.faults = FaultSet()
        self._sig: tuple[int, int, int] | None = None
        self._left: list[int | None] = []
        self._dumps = 0

    def check(self) -> tuple[tuple[int, int, int] | None, FaultSet | str | None]:
        """(signature, new set / error text / None when unchanged)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None, None if self._sig is None else FaultSet()
        except OSError as e:
            return self._sig, f"cannot stat: {e.strerror}"
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == self._sig:
            return sig, None
        try:
            return sig, load_faults(self.path)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            return sig, str(e)

    def install(self, sig: tuple[int, int, int] | None, new: FaultSet | str | None) -> None:
        if new is None or sig == self._sig:
            return
        self._sig = sig
        if isinstance(new, str):
            log.error("faults file %s: %s; keeping the previous set (%d fault(s))", self.path, new, len(self.faults))
            return
        self.faults = new
        self._left = [f.times for f in new]
        self._dumps = 0
        log.warning("faults file %s: loaded %d fault(s) (testing tool): %s", self.path, len(new),
                    "; ".join(json.dumps(f.to_dict(), separators=(",", ":")) for f in new) or "none")

    def match(self, server_id: int) -> Match | None:
        """Count this dump and return the first fault that applies to it (one use of its `times`)."""
        self._dumps += 1
        for i, f in enumerate(self.faults):
            left = self._left[i]
            if left == 0:
                continue
            if f.server_id is not None and f.server_id != server_id:
                continue
            if f.connection is not None and f.connection != self._dumps:
                continue
            if left is not None:
                self._left[i] = left - 1
            return Match(f, i + 1, self._dumps, "server_id" if f.server_id is not None else "connection")
        return None
