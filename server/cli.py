"""`binlogd`: the command line. `binlogd serve --help` explains every option."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import sys
from pathlib import Path

from binlogd.protocol.decision import Compat

EPILOG = """\
examples:
  binlogd serve --datadir ./var --port 3307
      a standalone primary: write with any client (mariadb -h127.0.0.1 -P3307 -uroot), every statement that
      changes data or schema is logged to ./var/mysql-bin.NNNNNN in statement format for replicas to apply
  binlogd serve --upstream mysql://repl:secret@10.0.0.5:3306 --datadir /var/lib/binlogd --server-id 100
      relay mode: replicate that primary, keep its binlog files (same names and positions) in the datadir and
      serve them; SHOW SLAVE STATUS / STOP SLAVE / START SLAVE on binlogd (docs/relay.md)
  binlogd serve --binlog-dir /var/lib/mysql-binlogs --port 3307 --server-id 100
      serve existing MariaDB binlog files (NAME.000001 ... plus NAME.index) read-only on 127.0.0.1:3307
  then, on a MariaDB replica:
      CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3307, MASTER_USER='root', MASTER_PASSWORD='',
                       MASTER_USE_GTID=slave_pos;
      SET GLOBAL replicate_events_marked_for_skip=FILTER_ON_MASTER;  -- optional: binlogd filters 0x8000 events
      START SLAVE;
  or read it like a primary:
      mariadb-binlog --read-from-remote-server -h127.0.0.1 -P3307 -uroot --raw --to-last-log mysql-bin.000001
"""


def _positive(v: str) -> int:
    n = int(v)
    if n <= 0 or n > 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"must be between 1 and {0xFFFFFFFF}")
    return n


def _port(v: str) -> int:
    n = int(v)
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (0-65535)")
    return n


def _upstream_url(v: str) -> tuple[str, str, str, int]:
    from .relay.upstream import parse_upstream_url

    try:
        return parse_upstream_url(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size(v: str) -> int:
    """A byte size: 4096, 512K, 64M, 1G."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", v, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {v!r} (examples: 1048576, 512K, 64M, 1G)")
    n = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]
    if n < 1024:
        raise argparse.ArgumentTypeError("must be at least 1024 bytes")
    return n


def _ledger_dir(args: argparse.Namespace) -> Path | None:
    """--ledger DIR; by default <datadir>/ledger in the modes with a datadir; off for --binlog-dir (a directory
    that may be read-only) unless --ledger is given."""
    if args.no_ledger:
        return None
    if args.ledger is not None:
        return args.ledger
    if args.binlog_dir is not None:
        return None
    return (getattr(args, "datadir", None) or Path("var")) / "ledger"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="binlogd",
        description="A MariaDB/MySQL binlog server: real replicas and CDC clients connect with COM_BINLOG_DUMP; "
        "each connection's SET skip_replication=1 and @mariadb_slave_capability are honoured.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="log verbosity (default INFO)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve binlogs to replicas", formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=EPILOG)
    s.add_argument("--binlog-dir", type=Path,
                   help="directory with binlog files NAME.NNNNNN and optionally NAME.index (served read-only; "
                   "growth by an external writer is picked up)")
    s.add_argument("--upstream", type=_upstream_url, metavar="mysql://USER:PASSWORD@HOST:PORT",
                   help="relay mode: replicate from this MariaDB/MySQL primary, store its binlog files under the "
                   "same names and positions in --datadir and serve them (see docs/relay.md)")
    s.add_argument("--datadir", type=Path, default=None,
                   help="where binlogd writes its binlog files and index (standalone and relay modes; default "
                   "./var). Without --binlog-dir and --upstream, binlogd is a standalone primary: clients write "
                   "SQL and every change is logged there in statement format (see docs/standalone.md)")
    s.add_argument("--max-binlog-size", type=_size, default=1 << 30, metavar="SIZE",
                   help="standalone mode: start a new binlog file once the current one reaches SIZE (4096 to 1G, "
                   "default 1G, like MariaDB's max_binlog_size; a transaction is never split)")
    s.add_argument("--sync-binlog", type=int, default=0, metavar="N",
                   help="standalone and relay modes: fsync the binlog every N commits (relay: stored event groups) "
                   "before acknowledging (standalone) or serving them (1: every commit survives a power loss; 0, "
                   "the default: leave it to the OS, which survives kill -9)")
    s.add_argument("--binlog-with-tables-info", action="store_true",
                   help="standalone mode, startup only: precede every statement's Query event with an ignorable "
                   "Tables_info event listing the tables it touches (seed WL#40; replicas skip it, clients that "
                   "SET @binlogd_send_tables_info=1 get it; see docs/tables-info.md)")
    s.add_argument("--upstream-heartbeat", type=float, default=30.0, metavar="SECONDS",
                   help="relay mode: heartbeat period asked of the upstream; no event or heartbeat for twice as "
                   "long means the connection is dead (default 30, like MariaDB's slave_net_timeout/2)")
    s.add_argument("--upstream-retry-max", type=float, default=30.0, metavar="SECONDS",
                   help="relay mode: reconnect attempts back off exponentially from 0.1 s up to this (default 30)")
    s.add_argument("--upstream-use-gtid", action="store_true",
                   help="relay mode: resume with the stored GTID position (like MASTER_USE_GTID=slave_pos: the "
                   "upstream checks that binlogd's history is in its binlog) instead of the stored file/pos; the "
                   "files stay byte-identical either way")
    s.add_argument("--port", type=_port, default=3307, help="TCP port (default 3307)")
    s.add_argument("--bind-address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--server-id", type=_positive, default=1,
                   help="this primary's server_id: replicas refuse one equal to their own (default 1)")
    s.add_argument("--users", type=Path, metavar="FILE",
                   help="users file, lines USER:PASSWORD or USER:*NATIVEHASH; without it only root with an empty "
                   "password is accepted, and only from loopback")
    s.add_argument("--compat", choices=["binlogd", "mariadb"], default="binlogd",
                   help="binlogd (default): events filtered by skip_replication become same-length dummies for "
                   "replicas with capability < 2, and replicas' positions are moved over trailing filtered "
                   "events; mariadb: reproduce MariaDB 10.11 byte for byte (holes)")
    s.add_argument("--basename", help="binlog base name when the directory holds several")
    s.add_argument("--gtid-domain-id", type=int, default=0, help="@@gtid_domain_id reported (default 0)")
    led = s.add_mutually_exclusive_group()
    led.add_argument("--ledger", type=Path, metavar="DIR",
                   help="audit ledger directory: one JSON line per dump connection, per decision (runs of events "
                   "sent as stored coalesced) and per dump end, in ledger.NNNNNN.jsonl files (docs/ledger.md; "
                   "`binlogd-audit` checks it). Default: DATADIR/ledger when binlogd has a --datadir; off with "
                   "--binlog-dir unless given")
    s.add_argument("--ledger-max-size", type=_size, default=64 << 20, metavar="SIZE",
                   help="start a new ledger file when the current one would exceed SIZE (default 64M)")
    led.add_argument("--no-ledger", action="store_true", help="write no audit ledger")
    d = sub.add_parser("demo-dir", help="write a small demo binlog directory (for `binlogd serve`)",
                       description="Write mysql-bin.000001, mysql-bin.000002 and mysql-bin.index into DIR: what a "
                       "MariaDB 10.11 primary (server_id 1, STATEMENT format, CRC32) writes for a small session on "
                       "demo.items, including a transaction and a DDL under SET skip_replication=1. A DIR that "
                       "already holds exactly these files is left as it is.")
    d.add_argument("dir", type=Path, metavar="DIR", help="target directory (created if missing; must be empty)")
    d.add_argument("--force", action="store_true",
                   help="write into a non-empty DIR, replacing its mysql-bin.* files")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    if args.command == "serve":
        from .app import ServeConfig, serve
        from .auth import UsersFileError
        from .binlog_writer import BinlogWriteError
        from .ledger import LedgerError
        from .relay.upstream import UpstreamConfig
        from .store import StoreError

        upstream = None
        if args.upstream is not None:
            if args.binlog_dir is not None:
                print("binlogd: --upstream (relay mode) and --binlog-dir (serve a directory) exclude each other; "
                      "the relay writes into --datadir", file=sys.stderr)
                return 2
            if args.upstream_heartbeat <= 0 or args.upstream_retry_max <= 0:
                print("binlogd: --upstream-heartbeat and --upstream-retry-max must be > 0", file=sys.stderr)
                return 2
            user, password, host, port = args.upstream
            upstream = UpstreamConfig(host=host, port=port, user=user, password=password, server_id=args.server_id,
                                      heartbeat_s=args.upstream_heartbeat, retry_max_s=args.upstream_retry_max,
                                      use_gtid=args.upstream_use_gtid)
        standalone = upstream is None and args.binlog_dir is None
        if args.binlog_dir is not None and args.datadir is not None:
            print("binlogd: --binlog-dir (serve a directory read-only) and --datadir (where binlogd writes) exclude "
                  "each other", file=sys.stderr)
            return 2
        if args.binlog_with_tables_info and not standalone:
            print("binlogd: --binlog-with-tables-info is for the standalone primary (it writes the binlog); "
                  "--binlog-dir and --upstream serve files binlogd does not write", file=sys.stderr)
            return 2
        if not 4096 <= args.max_binlog_size <= 1 << 30 or args.sync_binlog < 0:
            print("binlogd: --max-binlog-size must be between 4096 and 1G, --sync-binlog >= 0", file=sys.stderr)
            return 2
        binlog_dir = args.binlog_dir if upstream is None and not standalone else (args.datadir or Path("var"))
        cfg = ServeConfig(binlog_dir=binlog_dir, port=args.port, server_id=args.server_id,
                          bind_address=args.bind_address, users_file=args.users,
                          compat=Compat.MARIADB if args.compat == "mariadb" else Compat.BINLOGD,
                          basename=args.basename, gtid_domain_id=args.gtid_domain_id,
                          upstream=upstream,
                          sync_binlog=args.sync_binlog,
                          standalone=standalone, max_binlog_size=args.max_binlog_size,
                          tables_info=args.binlog_with_tables_info,
                          ledger_dir=_ledger_dir(args), ledger_max_size=args.ledger_max_size)
        try:
            asyncio.run(serve(cfg))
        except (StoreError, UsersFileError, BinlogWriteError, LedgerError) as e:
            print(f"binlogd: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            why = os.strerror(e.errno) if e.errno else str(e)
            print(f"binlogd: cannot listen on {cfg.bind_address}:{cfg.port}: {why}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 0
    elif args.command == "demo-dir":
        from .demo import DemoDirError, write_demo_dir

        try:
            sizes, written = write_demo_dir(args.dir, force=args.force)
        except (DemoDirError, OSError) as e:
            print(f"binlogd: {e}", file=sys.stderr)
            return 2
        listing = ", ".join(f"{name} ({size} bytes)" for name, size in sizes.items())
        print(f"{'wrote' if written else 'already present, unchanged:'} {listing} in {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
