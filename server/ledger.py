"""The audit ledger's writer: JSON Lines files of every dump's decisions (format: docs/ledger.md).

Dumps run on the event loop and must never touch a file there, so they hand finished batches of records to a
dedicated writer thread through a bounded queue: `put_records()` / `put_dict()` never block and never drop; a dump
that finds the queue over its limit awaits `wait_room()` (back-pressure: the dump waits rather than records being
lost). The thread numbers the records (`seq`, so the numbering is the file order), formats them, appends them and
flushes after every batch, so the files are readable while being written. Files rotate by size. At startup the
newest files are read backwards to continue the `seq` and `conn` numbering; a torn last record is reported and left
in place, and writing continues in a new file.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger("binlogd.ledger")

DEFAULT_MAX_SIZE = 64 << 20
MIN_MAX_SIZE = 1024
FILE_RE = re.compile(r"^ledger\.(\d{6,})\.jsonl$")
_SEQ_RE = re.compile(rb'"seq":(\d+)')
_CONN_RE = re.compile(rb'"conn":(\d+)')

# One `ev` record as the dump builds it: (file, start, end, count, length, action, why, type, flags, gtid,
# sent_length, policy), a plain tuple whose string and nullable values are already JSON text (`jstr(file)`, `jstr(why)`,
# `jstr(gtid)`, an int or NULL for type/flags): the event loop pays for little more than its creation, and the
# writer formats a whole batch with C-level iteration (one `%` per record, no Python code per record).
EvRecord = tuple[str, int, int, int, int, str, str, "int | str", "int | str", str, int, int]
NULL = "null"
# an `ev` line: the head (made per batch: `_EV_HEAD % (conn, ts)` leaves the seq's %d), then the record's fields
_EV_HEAD = '{"r":"ev","seq":%%d,"conn":%d,"ts_us":%d,'
_EV_BODY = ('"file":%s,"start":%d,"end":%d,"count":%d,"length":%d,"action":"%s","why":%s,"type":%s,"flags":%s,'
            '"gtid":%s,"sent_length":%d,"policy":%d}\n')


class LedgerError(Exception):
    """The ledger directory cannot be used (not a directory, not writable, unreadable files)."""


def file_name(n: int) -> str:
    return f"ledger.{n:06d}.jsonl"


def now_us() -> int:
    return time.time_ns() // 1000


@lru_cache(maxsize=4096)
def _js(s: str) -> str:
    return json.dumps(s)


def jstr(s: str | None) -> str:
    """A string value of an `EvRecord` as JSON text (null for None)."""
    return NULL if s is None else _js(s)


@lru_cache(maxsize=1024)
def _ev_body(r: EvRecord) -> str:
    """An `ev` record's fields as JSON text, made once for the equal records of many connections (the dumps a
    fan-out served one transaction to hand over the same record: formatting it per connection was most of the
    ledger writer's time, 11 µs per record)."""
    return _EV_BODY % r


SHORT_BATCH = 2  # records up to which a batch's lines reuse formatted records (a dump following the end hands one)


def ev_lines(first_seq: int, conn: int, ts: int, records: list[EvRecord] | tuple[EvRecord, ...]) -> Iterator[str]:
    """The JSON lines of a batch of `ev` records numbered from `first_seq`. A short batch reuses the formatted
    fields of an equal record (`_ev_body`); a long one (a catch-up's, records all different) is formatted in bulk
    (map/zip/count and tuple concatenation run in C: 1.9 µs per record, 3.5 through the cache)."""
    head = _EV_HEAD % (conn, ts)
    count = itertools.count(first_seq)
    if len(records) <= SHORT_BATCH:
        return map(str.__add__, map(head.__mod__, count), map(_ev_body, records))
    return map((head + _EV_BODY).__mod__, map(tuple.__add__, zip(count), records))


def ev_line(seq: int, conn: int, ts: int, r: EvRecord) -> str:
    return next(ev_lines(seq, conn, ts, (r,)))


def dict_line(kind: str, seq: int, conn: int, ts: int, body: dict[str, Any]) -> str:
    return json.dumps({"r": kind, "seq": seq, "conn": conn, "ts_us": ts, **body}, separators=(",", ":")) + "\n"


# --- startup: reading what is there ----------------------------------------------------------------------------

def _lines_backwards(path: Path, block: int = 1 << 20) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) of every line of `path`, last first (the last may lack a newline)."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        carry = b""
        pos = end
        while pos > 0:
            n = min(block, pos)
            pos -= n
            f.seek(pos)
            buf = f.read(n) + carry
            parts = buf.split(b"\n")
            carry = parts[0]
            off = pos + len(parts[0]) + 1
            rest = []
            for part in parts[1:]:
                rest.append((off, part))
                off += len(part) + 1
            for item in reversed(rest):
                if item[0] < end:  # the empty piece after a final newline is not a line
                    yield item
        if carry:
            yield 0, carry


@dataclass
class Torn:
    file: str
    offset: int
    size: int
    seq: int | None


@dataclass
class Resume:
    """What the existing files say: where numbering continues and where to write."""

    next_file: int  # number of the file to append to (created if missing)
    seq: int  # last record number used
    conn: int  # largest connection number used
    torn: Torn | None
    records_seen: int  # complete records read while looking (diagnostics)


def scan_directory(directory: Path) -> Resume:
    """Read the newest files backwards until the last record number and the largest connection number are known."""
    numbered = sorted((int(m.group(1)), p) for p in directory.iterdir()
                      if (m := FILE_RE.match(p.name)) and p.is_file())
    if not numbered:
        return Resume(1, 0, 0, None, 0)
    last_seq: int | None = None
    conn = 0
    torn: Torn | None = None
    seen = 0
    newest_num = numbered[-1][0]
    for num, path in reversed(numbered):
        is_newest = num == newest_num
        first_line = True
        size = path.stat().st_size
        for off, line in _lines_backwards(path):
            last_line = first_line
            first_line = False
            complete = off + len(line) < size  # followed by a newline
            rec: dict[str, Any] | None = None
            if line.strip():
                try:
                    obj = json.loads(line)
                    rec = obj if isinstance(obj, dict) else None
                except ValueError:
                    rec = None
            if rec is None or not complete:
                if not line.strip() and complete:
                    continue
                if is_newest and last_line:
                    m, c = _SEQ_RE.search(line), _CONN_RE.search(line)
                    torn = Torn(path.name, off, size - off, int(m.group(1)) if m else None)
                    if c:
                        conn = max(conn, int(c.group(1)))
                else:
                    log.warning("ledger: %s has an unreadable line at offset %d (%d bytes); ignored", path.name,
                                off, len(line))
                continue
            seen += 1
            if last_seq is None and isinstance(rec.get("seq"), int):
                last_seq = rec["seq"]
            if isinstance(rec.get("conn"), int):
                conn = max(conn, rec["conn"])
            if rec.get("r") == "conn" and last_seq is not None:
                break  # connection numbers only grow: the newest `conn` record holds the largest
        else:
            continue
        break
    seq = max(last_seq or 0, torn.seq if torn and torn.seq is not None else 0)
    next_file = newest_num + 1 if torn is not None else newest_num
    return Resume(next_file, seq, conn, torn, seen)


# --- the writer ---------------------------------------------------------------------------------------------------

class Ledger:
    """One ledger directory, written by one thread. Create with `open()` (in a thread: it reads files), then
    `start()` on the event loop; `close()` (in a thread) writes what is queued and stops."""

    def __init__(self, directory: Path, max_size: int, resume: Resume, queue_limit: int = 100_000) -> None:
        self.directory = directory
        self.max_size = max_size
        self.queue_limit = queue_limit
        self._seq = resume.seq
        self._conn = resume.conn
        self._num = resume.next_file
        self._f: Any = None
        self._size = 0
        self._items: list[Any] = []
        self._pending = 0  # records queued, not yet written
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None  # the loop's thread (`start`): its hand-overs wake the writer later
        self._notify_due = False  # a deferred wake-up of the writer is scheduled on the loop
        self._room: asyncio.Event | None = None
        self.records_written = 0
        self.error: BaseException | None = None
        self._open = 0  # connections with a number and no `close` record yet
        self._idle: asyncio.Event | None = None

    # --- opening ------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, max_size: int = DEFAULT_MAX_SIZE, queue_limit: int = 100_000) -> Ledger:
        """Check/create the directory, read where numbering continues, open the file to append to."""
        directory = Path(directory).absolute()
        if max_size < MIN_MAX_SIZE:
            raise LedgerError(f"--ledger-max-size must be at least {MIN_MAX_SIZE} bytes")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError as e:
            raise LedgerError(f"ledger directory {directory} is not a directory") from e
        except OSError as e:
            raise LedgerError(f"cannot create ledger directory {directory}: {e.strerror}") from e
        if not directory.is_dir():
            raise LedgerError(f"ledger directory {directory} is not a directory")
        if not os.access(directory, os.W_OK | os.X_OK):
            raise LedgerError(f"ledger directory {directory} is not writable")
        try:
            resume = scan_directory(directory)
        except OSError as e:
            raise LedgerError(f"cannot read ledger directory {directory}: {e}") from e
        if resume.torn is not None:
            t = resume.torn
            log.warning("ledger: %s ends with a torn record (%d bytes at offset %d%s): left in place, continuing "
                        "in %s from seq %d", t.file, t.size, t.offset,
                        f", seq {t.seq}" if t.seq is not None else "", file_name(resume.next_file), resume.seq + 1)
        self = cls(directory, max_size, resume, queue_limit)
        try:
            self._open_file()
        except OSError as e:
            raise LedgerError(f"cannot write ledger file {directory / file_name(self._num)}: {e.strerror}") from e
        log.info("ledger: writing %s (seq continues after %d, connections after %d; max file size %d bytes)",
                 self.current_path, self._seq, self._conn, max_size)
        return self

    @property
    def current_path(self) -> Path:
        return self.directory / file_name(self._num)

    def _open_file(self) -> None:
        if self._f is not None:
            self._f.close()
        self._f = open(self.current_path, "ab")  # noqa: SIM115 - owned by the writer, closed in close()
        self._size = self._f.tell()

    # --- the event loop side -------------------------------------------------------------------------------
    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="ledger-writer", daemon=True)
        self._thread.start()

    def new_conn(self) -> int:
        """The next connection number (event loop only); the connection must end with a `close` record."""
        self._conn += 1
        self._open += 1
        if self._idle is not None:
            self._idle.clear()
        return self._conn

    async def wait_connections_closed(self, timeout: float) -> bool:
        """At shutdown: wait until every numbered connection has written its `close` record."""
        if self._idle is None:
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            log.warning("ledger: %d connection(s) did not write their close record in %.0f s", self._open, timeout)
            return False

    def put_records(self, conn: int, records: list[EvRecord] | tuple[EvRecord, ...]) -> None:
        """Queue `ev` records of one connection (never blocks, never drops; see `full`)."""
        self._put((conn, now_us(), records), len(records))

    def put_dict(self, kind: str, conn: int, body: dict[str, Any]) -> None:
        """Queue a `conn`, `close` or `ev` (error) record given as a dict."""
        self._put((kind, conn, now_us(), body), 1)
        if kind == "close":
            self._open -= 1
            if self._open == 0 and self._idle is not None:
                self._idle.set()

    def _put(self, item: Any, n: int) -> None:
        if self._closing:
            log.error("ledger: record after close, not written: %r", item[:3])
            return
        with self._cond:
            self._items.append(item)
            self._pending += n
            if self._pending > self.queue_limit and self._room is not None:
                self._room.clear()
            if len(self._items) == 1:
                # only when the queue was empty: the writer thread takes the whole list when it runs, and waking
                # it for each of 20 dumps' hand-overs of one transaction made it fight the loop for the GIL.
                # On the loop, the wake-up waits for the loop's next turn: the dumps one change woke all run in
                # this one, writing to their sockets, before the writer takes the GIL to format their records
                if self._loop is not None and threading.get_ident() == self._loop_thread:
                    if not self._notify_due:
                        self._notify_due = True
                        self._loop.call_soon(self._notify)
                else:
                    self._cond.notify()

    def _notify(self) -> None:
        """The deferred wake-up of the writer thread (see `_put`)."""
        self._notify_due = False
        with self._cond:
            self._cond.notify()

    @property
    def pending(self) -> int:
        """Records queued and not yet written (metrics: the queue depth)."""
        return self._pending

    @property
    def full(self) -> bool:
        return self._pending > self.queue_limit

    async def wait_room(self) -> None:
        """Back-pressure: wait until the writer has caught up below half the queue limit."""
        if self._room is not None:
            await self._room.wait()

    def _release(self) -> None:
        if self._room is not None and self._pending <= self.queue_limit // 2:
            self._room.set()

    # --- the writer thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closing:
                    self._cond.wait()
                items, self._items = self._items, []
                if not items and self._closing:
                    return
            try:
                n = self._write(items)
            except Exception as e:  # a full disk must not lose records silently: log, keep them, retry
                self.error = e
                if self._closing:
                    log.error("ledger: write failed at shutdown: %s; %d queued record(s) NOT written", e,
                              self._pending)
                    return
                log.error("ledger: write failed: %s (records kept in memory and retried; dumps wait)", e)
                with self._cond:
                    self._items[:0] = items
                time.sleep(1.0)
                continue
            with self._cond:
                self._pending -= n
                low = self._pending <= self.queue_limit // 2
            if low and self._loop is not None and self._room is not None and not self._room.is_set():
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    self._loop.call_soon_threadsafe(self._release)

    def _write(self, items: list[Any]) -> int:
        """Number, format and append `items`; flush. Returns the records written."""
        out: list[str] = []
        size = self._size
        n = 0
        seq = self._seq
        for item in items:
            if len(item) == 3:
                conn, ts, records = item
                text = "".join(ev_lines(seq + 1, conn, ts, records))
                if size + len(text) <= self.max_size:
                    out.append(text)  # the usual case: the whole batch fits in the current file
                    size += len(text)
                    seq += len(records)
                    n += len(records)
                    continue
                lines = text.splitlines(keepends=True)
                seq += len(records)
            else:
                kind, conn, ts, body = item
                seq += 1
                lines = [dict_line(kind, seq, conn, ts, body)]
            for line in lines:
                b = len(line)  # ASCII: json escapes everything else
                if size + b > self.max_size and size > 0:
                    self._append(out)
                    out = []
                    self._num += 1
                    self._open_file()
                    size = 0
                out.append(line)
                size += b
                n += 1
        self._append(out)
        self._seq = seq
        self._size = size
        self.records_written += n
        return n

    def _append(self, lines: list[str]) -> None:
        if lines:
            self._f.write("".join(lines).encode("ascii"))
        self._f.flush()

    def close(self) -> None:
        """Write everything queued, stop the thread, close the file (blocking: call in a thread)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        elif self._items:
            self._write(self._items)
            self._items = []
        if self._f is not None:
            self._f.close()
            self._f = None
        log.info("ledger: closed after %d records this run; last seq %d in %s", self.records_written, self._seq,
                 self.current_path.name)
