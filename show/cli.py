"""`binlogd show`: the options (mariadb-binlog's names where it has them) and the run.

Exit status: 0 printed everything asked for; 1 a file or stream could not be read on (one line on stderr names the
file and the position of the bad event); 2 bad options.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from binlogd.protocol.constants import STMT_END_F
from binlogd.protocol.events import EventDecodeError, RowsBody
from binlogd.protocol.gtid import Gtid, GtidError, parse_gtid_list
from binlogd.protocol.tls_options import TlsOptions, tls_from_params

from .filters import FilterError, TableFilter, add_filter_options, table_filter_of
from .progress import Progress
from .ranges import Ranges, Verdict
from .reader import Item, ReadError, RemoteSource, env_password, read_file, read_remote
from .text import Printer

USAGE = """\
binlogd show [options] FILE...
       binlogd show --read-from-remote-server -h HOST [-P PORT] [-u USER] [-p[PASSWORD]] [options] LOGNAME"""

DESCRIPTION = """\
Print binlog events as text that replays into the mariadb client, as mariadb-binlog does: BINLOG base64 blocks
for row events, the session state each statement needs, ANNOTATE_ROWS and Tables_info events as comments. The
skip flag (SET skip_replication=1, seed WL#234) is printed whenever it changes, so replaying keeps it on the same
events; --skip-flagged leaves flagged groups out. Table filters (seed WL40) work on statements (Tables_info events
when present, else the parsed SQL) and on row events, with RENAME and CREATE ... LIKE/SELECT followed."""


class UsageError(Exception):
    """Bad options; the message is the one line printed (exit status 2)."""


def _datetime(text: str) -> int:
    """A local date and time (`2026-11-25 10:00:00`, as mariadb-binlog) to a UNIX timestamp."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y%m%d%H%M%S"):
        try:
            return int(datetime.strptime(text.strip(), fmt).timestamp())
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"Incorrect date and time argument: {text} (use 'YYYY-MM-DD HH:MM:SS')")


def _gtids(text: str) -> dict[int, Gtid]:
    try:
        return parse_gtid_list(text)
    except GtidError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e} (use DOMAIN-SERVER-SEQ[,...])") from None


def _position(text: str) -> int | dict[int, Gtid]:
    """A byte position, or (as mariadb-binlog 10.11 accepts) a GTID list meaning --start-gtid/--stop-gtid."""
    if "-" in text:
        return _gtids(text)
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a position: {text!r}") from None
    if not 4 <= n <= 0xFFFFFFFFFFFFFFFF:
        raise argparse.ArgumentTypeError("positions start at 4 (after the \\xfebin magic)")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlogd show", usage=USAGE, description=DESCRIPTION, add_help=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--help", action="help", help="show this help and exit")
    p.add_argument("files", nargs="*", metavar="FILE", help="binlog files, or with -R the first log name")
    src = p.add_argument_group("remote server (-R)")
    src.add_argument("-R", "--read-from-remote-server", action="store_true", dest="remote",
                     help="read the binlog from a server (MariaDB, MySQL or binlogd) with COM_BINLOG_DUMP")
    src.add_argument("-h", "--host", default="127.0.0.1")
    src.add_argument("-P", "--port", type=int, default=3306)
    src.add_argument("-u", "--user", default="root")
    src.add_argument("-p", "--password", nargs="?", const="", default=None,
                     help="password (else $MYSQL_PWD, else empty)")
    src.add_argument("--ssl", action="store_true", help="encrypt the connection (TLS) without checking the server")
    src.add_argument("--ssl-ca", metavar="FILE", help="CA file (implies --ssl)")
    src.add_argument("--ssl-cert", metavar="FILE", help="client certificate (implies --ssl)")
    src.add_argument("--ssl-key", metavar="FILE", help="client key (with --ssl-cert)")
    src.add_argument("--ssl-verify-server-cert", action="store_true",
                     help="check the server's certificate chain and that it names the host (implies --ssl)")
    src.add_argument("-t", "--to-last-log", action="store_true",
                     help="with -R: go on with the files after the named one up to the last")
    src.add_argument("--stop-never", action="store_true",
                     help="with -R: wait for new events at the end instead of stopping (implies --to-last-log)")
    src.add_argument("--stop-never-slave-server-id", type=int, default=65535, metavar="N",
                     help="server_id registered with --stop-never (default 65535)")
    rng = p.add_argument_group("ranges")
    rng.add_argument("-j", "--start-position", type=_position, default=4, metavar="N",
                     help="start at position N of the first file (its Format_description event is still read); "
                     "a GTID list here means --start-gtid, as in mariadb-binlog")
    rng.add_argument("--stop-position", type=_position, default=None, metavar="N",
                     help="stop at the first event at or after position N of the last file; a GTID list here "
                     "means --stop-gtid")
    rng.add_argument("--start-datetime", type=_datetime, default=None, metavar="DATETIME",
                     help="start at the first event at or after this local time")
    rng.add_argument("--stop-datetime", type=_datetime, default=None, metavar="DATETIME",
                     help="stop at the first event at or after this local time")
    rng.add_argument("--start-gtid", type=_gtids, default=None, metavar="D-S-N[,...]",
                     help="leave out the groups up to and including these GTIDs (a replica-style position)")
    rng.add_argument("--stop-gtid", type=_gtids, default=None, metavar="D-S-N[,...]",
                     help="stop after the group of these GTIDs")
    out = p.add_argument_group("output")
    out.add_argument("-v", "--verbose", action="count", default=0,
                     help="row events also as ### pseudo-SQL; -vv adds the column types")
    out.add_argument("--skip-flagged", action="store_true",
                     help="leave out events flagged by SET skip_replication=1 (what a FILTER_ON_SLAVE replica "
                     "applies)")
    out.add_argument("--skip-annotate-row-events", action="store_true", help="do not print Annotate_rows events")
    out.add_argument("-f", "--force-read", action="store_true",
                     help="go on past events that cannot be read (bad CRC, unknown type), as mariadb-binlog does")
    out.add_argument("-r", "--result-file", type=Path, default=None, metavar="FILE", help="write the text here")
    out.add_argument("--output-binlog", type=Path, default=None, metavar="FILE",
                     help="also write the filtered events as a binlog file, left-out events replaced by "
                     "same-length dummies so positions stay valid")
    out.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                     help="progress on stderr (auto: only when stderr is a terminal)")
    add_filter_options(p)
    return p


async def _remote_items(args: argparse.Namespace) -> AsyncIterator[Item]:
    src = RemoteSource(host=args.host, port=args.port, user=args.user,
                       password=args.password if args.password is not None else (env_password() or ""),
                       file=args.files[0] if args.files else "", start=args.start_position,
                       to_last_log=args.to_last_log, stop_never=args.stop_never,
                       server_id=args.stop_never_slave_server_id if args.stop_never else 0,
                       gtid=",".join(str(g) for g in args.start_gtid.values()) if args.start_gtid else None,
                       tls=args.tls)
    async for item in read_remote(src, force=args.force_read):
        yield item


def _tls(args: argparse.Namespace) -> TlsOptions | None:
    """The --ssl* options as the replication client's TLS settings (protocol/tls_options.py's one rule)."""
    params = {k: v for k, v in (("ssl-ca", args.ssl_ca), ("ssl-cert", args.ssl_cert), ("ssl-key", args.ssl_key))
              if v is not None}
    if args.ssl:
        params["ssl"] = "1"
    if args.ssl_verify_server_cert:
        params["ssl-verify"] = "1"
    if params and not args.remote:
        raise UsageError("the --ssl options are for --read-from-remote-server")
    try:
        return tls_from_params(params)
    except ValueError as e:
        raise UsageError(f"--{e}") from None


def _check(args: argparse.Namespace) -> None:
    args.tls = _tls(args)
    for opt in ("start", "stop"):
        value = getattr(args, f"{opt}_position")
        if isinstance(value, dict):  # mariadb-binlog's GTID form of --start/--stop-position
            if getattr(args, f"{opt}_gtid") is not None:
                raise UsageError(f"--{opt}-position GTID and --{opt}-gtid both given")
            setattr(args, f"{opt}_gtid", value)
            setattr(args, f"{opt}_position", 4 if opt == "start" else None)
    if args.remote:
        if len(args.files) != 1:
            raise UsageError("with --read-from-remote-server give one log name (the first file to read)")
        if args.output_binlog is not None:
            raise UsageError("--output-binlog writes from local files (fetch them first, e.g. mariadb-binlog -R "
                             "--raw)")
    else:
        if not args.files:
            raise UsageError("no binlog file given (binlogd show FILE..., or -R for a server)")
        if args.output_binlog is not None and args.force_read:
            raise UsageError("--output-binlog keeps every position: it cannot go on past unreadable events "
                             "(--force-read)")
        for opt in ("to_last_log", "stop_never"):
            if getattr(args, opt):
                raise UsageError(f"--{opt.replace('_', '-')} needs --read-from-remote-server")


class Run:
    """One `binlogd show` run: items through the ranges and filters into the printer (and the binlog writer)."""

    def __init__(self, args: argparse.Namespace, out: BinaryIO, table_filter: TableFilter | None) -> None:
        self.args = args
        self.out = out
        self.printer = Printer(out, verbose=args.verbose, skip_annotate=args.skip_annotate_row_events)
        self.ranges = Ranges(
            last_file=None if args.remote else Path(args.files[-1]).name, stop_position=args.stop_position,
            start_datetime=args.start_datetime, stop_datetime=args.stop_datetime,
            start_gtid=args.start_gtid or {}, stop_gtid=args.stop_gtid or {}, skip_flagged=args.skip_flagged)
        self.filter = table_filter
        if table_filter is not None:
            self.printer.missing_dbs = table_filter.dropped_dbs
        self.writer = None
        if args.output_binlog is not None:
            from .output_binlog import BinlogOutput

            self.writer = BinlogOutput(args.output_binlog, several=len(args.files) > 1)
            self.ranges.first_file, self.ranges.start_position = Path(args.files[0]).name, args.start_position
        self.file: str | None = None
        self.current: Item | None = None  # for error messages
        self.stopped = False

    def item(self, item: Item) -> None:
        if self.stopped:
            return
        self.current = item
        verdict = self.ranges.decide(item)
        if verdict is Verdict.STOP:
            self.stopped = True
            return
        allowed = verdict is Verdict.PRINT
        released = self.filter.feed(item, allowed) if self.filter is not None else [(item, allowed)]
        for it, keep in released:
            self._emit(it, keep)

    def _emit(self, item: Item, keep: bool) -> None:
        if self.writer is not None:
            self.writer.add(item, keep)
        if not keep:
            body = item.event.body
            if isinstance(body, RowsBody) and body.flags & STMT_END_F:
                self.printer.end_statement()  # the statement's other tables may have been printed
            return
        if self.file is None or (item.file != self.file and not self.args.remote):
            if self.file is not None:
                self.printer.end_file()
            self.printer.begin_file()
            self.file = item.file
        self.printer.event(item.pos, item.raw, item.event)
        if self.args.stop_never:
            self.out.flush()  # a follower reads each event as it comes

    def finish(self) -> None:
        if self.filter is not None:
            for it, keep in self.filter.flush():
                self._emit(it, keep)
        if self.file is not None:
            self.printer.end_file()
        self.printer.epilogue(gtid_ranges=bool(self.args.start_gtid or self.args.stop_gtid))
        if self.writer is not None:
            self.writer.close()


def _local_items(args: argparse.Namespace, progress: Progress) -> Iterator[Item]:
    for n, name in enumerate(args.files):
        path = Path(name)
        progress.file(path)
        start = args.start_position if n == 0 and args.output_binlog is None else 4  # the writer needs every event
        yield from read_file(path, start=start, force=args.force_read,
                             progress=progress.advance)


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        _check(args)
        table_filter = table_filter_of(args)
    except (UsageError, FilterError) as e:
        print(f"binlogd show: {e}", file=sys.stderr)
        return 2
    try:
        out: BinaryIO = open(args.result_file, "wb") if args.result_file else sys.stdout.buffer  # noqa: SIM115
    except OSError as e:
        print(f"binlogd show: {args.result_file}: {e.strerror or e}", file=sys.stderr)
        return 2
    progress = Progress(args.progress, sum(_size(f) for f in args.files) if not args.remote else 0)
    try:
        run = Run(args, out, table_filter)
    except ReadError as e:
        print(f"binlogd show: {e}", file=sys.stderr)
        return 2
    run.printer.prologue()
    status = 0
    try:
        if args.remote:
            asyncio.run(_drain(_remote_items(args), run))
        else:
            for item in _local_items(args, progress):
                run.item(item)
                if run.stopped:
                    break
    except ReadError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 130
    except BrokenPipeError:
        return 0
    except (EventDecodeError, ValueError, IndexError, struct.error) as e:  # an event the decoders do not expect
        where = f"{run.current.file}: event at position {run.current.pos}" if run.current else "reading"
        print(f"ERROR: {where} cannot be printed: {e}", file=sys.stderr)
        status = 1
    finally:
        progress.close()
        try:
            run.finish()
            out.flush()
        except BrokenPipeError:
            pass
        if out is not sys.stdout.buffer:
            out.close()
    return status


async def _drain(items: AsyncIterator[Item], run: Run) -> None:
    async for item in items:
        run.item(item)
        if run.stopped:
            break


def _size(name: str) -> int:
    try:
        return Path(name).stat().st_size
    except OSError:
        return 0
