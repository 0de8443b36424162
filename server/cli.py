"""`binlogd`: the command line. `binlogd serve --help` explains every option."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from .decision import Compat

EPILOG = """\
examples:
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
    s.add_argument("--binlog-dir", type=Path, required=True,
                   help="directory with binlog files NAME.NNNNNN and optionally NAME.index (served read-only; "
                   "growth by an external writer is picked up)")
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
        from .store import StoreError

        cfg = ServeConfig(binlog_dir=args.binlog_dir, port=args.port, server_id=args.server_id,
                          bind_address=args.bind_address, users_file=args.users,
                          compat=Compat.MARIADB if args.compat == "mariadb" else Compat.BINLOGD,
                          basename=args.basename, gtid_domain_id=args.gtid_domain_id)
        try:
            asyncio.run(serve(cfg))
        except (StoreError, UsersFileError) as e:
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
