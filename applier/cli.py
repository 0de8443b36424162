"""`binlogd-apply`: a replica process applying one or more sources (channels) to a MariaDB/MySQL target.

Bad options end with a one-line message and exit status 2 (argparse's convention); `--help` teaches.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from binlogd.gil import shorten_switch_interval
from binlogd.optionfiles import OptionFileError, expand

from .config import (
    FILTER_OPTIONS,
    ApplierConfig,
    ConfigError,
    parse_channel,
    parse_endpoint,
    parse_filter_option,
    parse_skip_mode,
)

DESCRIPTION = """\
Apply the binlogs of one or more primaries (real MariaDB/MySQL or binlogd) to a target MariaDB/MySQL server,
like a multi-source MariaDB replica: one channel per source, each with its own position (stored in the target in
the same transaction as the changes it applies: binlogd_apply.channel_position) and its own replication filters.
"""

EPILOG = """\
channels:
  --channel NAME=mysql://USER@HOST:PORT[?gtid=slave_pos|no&heartbeat=S&retry=S&server_id=N&PASSWORD]
      NAME '' (written --channel =mysql://...) is the default channel. gtid=slave_pos (the default) connects with
      the stored GTID position (MASTER_USE_GTID=slave_pos); gtid=no uses the stored file/position. A channel
      with no stored position starts at the beginning of the source's first binlog. heartbeat (default 5 s) is
      MASTER_HEARTBEAT_PERIOD, retry (default 1 s) MASTER_CONNECT_RETRY.

passwords (--target and every --channel URL; at most one of them per URL, none: an empty password):
  ?password_file=PATH   the first line of PATH (line ending stripped)
  ?password_env=NAME    the value of the environment variable NAME
  mysql://USER:PASS@... works too, but ps and /proc/PID/cmdline show it to every local user: a warning is logged
  Passwords appear in no log line, error message or SHOW SLAVE STATUS.

filters (seed WL#7361; repeat an option for several rules, each applies to statement and row events):
  --replicate-do-db=[CHANNEL:]DB          --replicate-ignore-db=[CHANNEL:]DB
  --replicate-do-table=[CHANNEL:]DB.T     --replicate-ignore-table=[CHANNEL:]DB.T
  --replicate-wild-do-table=[CHANNEL:]DB%.T%   --replicate-wild-ignore-table=[CHANNEL:]DB%.T%
  --replicate-rewrite-db=[CHANNEL:]FROM->TO
  Without a CHANNEL: prefix a rule is global; a channel without rules of a type copies the global ones. The
  first colon separates the channel (a rule for an unknown channel is discarded with a warning).

events marked for skip (seed WL234, flag 0x8000 set by SET skip_replication=1 on the source):
  REPLICATE         apply them, with skip_replication=1 on the target session (the target's binlog keeps the flag)
  FILTER_ON_SLAVE   the applier drops them (not counted against sql_slave_skip_counter)
  FILTER_ON_MASTER  ask the source not to send them (SET skip_replication=1); drop them locally too if it ignores it

examples:
  TARGET_PW=secret binlogd-apply --target 'mysql://root@127.0.0.1:3306?password_env=TARGET_PW' \\
      --channel '=mysql://repl@10.0.0.5:3306?password_file=/etc/binlogd/repl.pw'
  binlogd-apply --target mysql://root@127.0.0.1:3306 \\
      --channel a=mysql://root@10.0.0.5:3306 --channel 'b=mysql://root@10.0.0.6:3306?gtid=no' \\
      --replicate-do-db=a:sales --replicate-rewrite-db='b:crm->crm_b' \\
      --replicate-events-marked-for-skip=FILTER_ON_SLAVE --admin-port 3390
  then: mariadb -h127.0.0.1 -P3390 -uroot -e "SHOW ALL SLAVES STATUS\\G"
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlogd-apply", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, metavar="URL",
                   help="the server to apply to: mysql://USER@HOST:PORT[?password_file=PATH|password_env=NAME] "
                        "(see 'passwords' below; needs SUPER or BINLOG ADMIN for SET skip_replication, and CREATE "
                        "on binlogd_apply)")
    p.add_argument("--channel", action="append", required=True, metavar="NAME=URL",
                   help="a source (repeat for multi-source); see 'channels' below")
    for opt in FILTER_OPTIONS:
        p.add_argument(f"--{opt}", action="append", default=[], metavar="[CHANNEL:]RULE", dest=opt.replace("-", "_"),
                       help=argparse.SUPPRESS)
    p.add_argument("--replicate-events-marked-for-skip", default="REPLICATE", metavar="MODE",
                   help="REPLICATE (default), FILTER_ON_SLAVE or FILTER_ON_MASTER; see below")
    p.add_argument("--server-id", type=int, default=1001, metavar="N",
                   help="server_id the applier registers with on every source (default 1001; must differ from "
                        "the sources' own and from other replicas')")
    p.add_argument("--admin-port", type=int, metavar="P",
                   help="serve the admin SQL port (SHOW SLAVE STATUS, START/STOP SLAVE, CHANGE REPLICATION "
                        "FILTER, ...) on 127.0.0.1:P")
    p.add_argument("--admin-bind", default="127.0.0.1", metavar="ADDR", help="address of the admin port")
    p.add_argument("--admin-users", type=Path, metavar="FILE",
                   help="accounts that may log in to the admin port, in binlogd's users-file format (`binlogd "
                        "passwd` writes a line); default: root without a password, from loopback only")
    p.add_argument("--metrics-port", type=int, metavar="P",
                   help="serve Prometheus metrics of every channel on http://127.0.0.1:P/metrics "
                        "(docs/operations.md)")
    p.add_argument("--metrics-address", default=None, metavar="ADDR", help="address of the metrics port")
    p.add_argument("--no-start", action="store_true",
                   help="do not start the channels (start them with START SLAVE on the admin port)")
    p.add_argument("--parallel-apply", type=int, default=1, metavar="N",
                   help="target sessions per channel (default 1): consecutive row transactions run on N sessions "
                        "at once and commit in the source's order, each with its position (like MariaDB's "
                        "slave_parallel_threads=N, optimistic); statements and DDL run alone")
    p.add_argument("--parallel-min-bytes", type=int, default=1024, metavar="B",
                   help="with --parallel-apply: row transactions with less rows data than B bytes (default 1024) "
                        "stay on one session, which sends up to 192 of them per round trip")
    p.add_argument("--row-apply", default="binlog", choices=["binlog", "sql"],
                   help="row events on a MariaDB target: 'binlog' (default) sends them unchanged in BINLOG "
                        "statements, applied by the target itself (needs SUPER or BINLOG REPLAY); 'sql' decodes "
                        "them into INSERT/UPDATE/DELETE (always so on MySQL targets)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    of = p.add_argument_group("option files (MariaDB's my.cnf conventions; first on the command line)",
                              "The [binlogd-apply] group's options (names without --) go before the command "
                              "line's; none is read unless named.")
    of.add_argument("--defaults-file", metavar="FILE", help="read only FILE")
    of.add_argument("--defaults-extra-file", metavar="FILE", help="read FILE after --defaults-file")
    of.add_argument("--no-defaults", action="store_true", help="read no option file (the default)")
    of.add_argument("--print-defaults", action="store_true", help="print the options the files give and exit")
    return p


def config_from_args(args: argparse.Namespace) -> ApplierConfig:
    target = parse_endpoint(args.target, "--target")
    channels = [parse_channel(c) for c in args.channel]
    names = [c.name for c in channels]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"--channel: channel name {sorted(dup)[0]!r} given twice")
    filters: list[tuple[str, str]] = []
    for opt in FILTER_OPTIONS:
        for value in getattr(args, opt.replace("-", "_")):
            filters.append(parse_filter_option(opt, value))
    if not 1 <= args.server_id < 1 << 32:
        raise ConfigError("--server-id must be in 1..4294967295")
    if args.admin_port is not None and not 0 <= args.admin_port <= 65535:
        raise ConfigError("--admin-port must be a TCP port (0-65535)")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise ConfigError("--metrics-port must be a TCP port (0-65535)")
    if args.metrics_address is not None and args.metrics_port is None:
        raise ConfigError("--metrics-address without --metrics-port: there is no metrics port to bind")
    if args.admin_users is not None and args.admin_port is None:
        raise ConfigError("--admin-users without --admin-port: there is no admin port to log in to")
    if not 1 <= args.parallel_apply <= 64:
        raise ConfigError("--parallel-apply must be in 1..64")
    if args.parallel_min_bytes < 0:
        raise ConfigError("--parallel-min-bytes must be 0 or more")
    return ApplierConfig(target, channels, filters, parse_skip_mode(args.replicate_events_marked_for_skip),
                         args.admin_port, args.admin_bind, args.server_id, args.admin_users, args.metrics_port,
                         args.metrics_address or "127.0.0.1",
                         parallel_apply=args.parallel_apply, parallel_min_bytes=args.parallel_min_bytes,
                         row_apply=args.row_apply)


def _ordered_filter_options(argv: Sequence[str]) -> list[str]:
    """The filter options in command-line order (argparse groups them by option; WL#7361 keeps the order)."""
    out = []
    for a in argv:
        name = a.split("=", 1)[0].lstrip("-")
        if name in FILTER_OPTIONS:
            out.append(name)
    return out


async def run(cfg: ApplierConfig, start: bool = True) -> int:
    from .filters import FilterError
    from .runner import Applier

    try:
        applier = Applier(cfg)
    except (FilterError, ValueError) as e:
        print(f"binlogd-apply: {e}", file=sys.stderr)
        return 2
    admin = None
    if cfg.admin_port is not None:
        from binlogd.protocol.accounts import AccountsIdentityProvider, UsersFileError

        from .admin import start_admin

        try:
            accounts = AccountsIdentityProvider.from_file(cfg.admin_users) if cfg.admin_users else None
        except UsersFileError as e:
            print(f"binlogd-apply: --admin-users: {e}", file=sys.stderr)
            return 2
        try:
            admin = await start_admin(applier, cfg.admin_port, cfg.admin_bind, accounts)
        except OSError as e:
            print(f"binlogd-apply: cannot listen on {cfg.admin_bind}:{cfg.admin_port}: {e.strerror}", file=sys.stderr)
            return 2
    metrics = None
    if cfg.metrics_port is not None:
        from .metrics import start_metrics

        try:
            metrics = await start_metrics(applier, cfg.metrics_address, cfg.metrics_port)
        except OSError as e:
            print(f"binlogd-apply: --metrics-port: cannot listen on {cfg.metrics_address}:{cfg.metrics_port}: "
                  f"{e.strerror}", file=sys.stderr)
            if admin is not None:
                admin.close()
            return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    if start:
        await applier.start_all()
    logging.getLogger("binlogd.apply").info("binlogd-apply: %d channel(s) -> %s", len(applier.channels), cfg.target)
    await stop.wait()
    if admin is not None:
        admin.close()
    if metrics is not None:
        metrics.close()
    await applier.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:  # option files first ([binlogd-apply]; binlogd/optionfiles.py): the command line's options win
        expanded = expand(argv, parser, "binlogd-apply", "binlogd-apply")
    except OptionFileError as e:
        print(f"binlogd-apply: {e}", file=sys.stderr)
        return 2
    if expanded is None:
        return 0
    argv = expanded
    args = parser.parse_args(argv)
    if args.defaults_file or args.defaults_extra_file or args.no_defaults or args.print_defaults:
        parser.error("--defaults-file, --defaults-extra-file, --no-defaults and --print-defaults come first "
                     "(as in MariaDB)")
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = config_from_args(args)
    except ConfigError as e:
        parser.error(str(e))
    # keep the filter rules in command-line order across option types
    order = _ordered_filter_options(argv)
    if order:
        by_kind: dict[str, list[tuple[str, str]]] = {}
        for kind, value in cfg.filters:
            by_kind.setdefault(kind, []).append((kind, value))
        cfg.filters = [by_kind[FILTER_OPTIONS[o]].pop(0) for o in order if by_kind.get(FILTER_OPTIONS[o])]
    # the event loop (reading sources) and each channel's worker thread (one round trip to the target after
    # another) share the GIL: with the default 5 ms switch interval a worker whose answer has arrived waits up to
    # 5 ms for a busy reader to let go, per round trip (measured: 8.5 ms per sendall of a 64-group batch)
    shorten_switch_interval()
    try:
        return asyncio.run(run(cfg, start=not args.no_start))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
