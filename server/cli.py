"""`binlogd`: the command line. `binlogd serve --help` explains every option."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from binlogd.protocol.binlog_file import basename_problem
from binlogd.protocol.decision import Compat
from binlogd.server import event_loop

if TYPE_CHECKING:
    from binlogd.protocol.tls_options import TlsOptions

    from .app import ServeConfig
    from .relay.upstream import UpstreamURL
    from .replica_filters import Assignments
    from .tls import TlsFiles

MODES = """\
`binlogd serve` has three modes, one per source of the binlog it serves:
  standalone (default)  binlogd serve [--datadir ./var]
                        a primary whose only product is its binlog: clients write SQL, binlogd logs it
  relay                 binlogd serve --upstream mysql://USER@HOST:PORT --datadir DIR
                        a replica of a real primary that stores its binlog files byte for byte and serves them
  directory             binlogd serve --binlog-dir DIR
                        serves existing binlog files read-only
"""

DESCRIPTION = f"""\
A MariaDB/MySQL binlog server: real replicas, mariadb-binlog and CDC clients connect with COM_BINLOG_DUMP, and
each connection's SET skip_replication=1 and @mariadb_slave_capability are honoured as a MariaDB 10.11 primary
honours them.

{MODES}
`binlogd serve --help` lists the options of each mode.
"""

EPILOG = """\
examples:
  binlogd serve --datadir ./var --port 3307
      standalone: write with any client (mariadb -h127.0.0.1 -P3307 -uroot), every statement that changes data
      or schema is logged to ./var/mysql-bin.NNNNNN in statement format for replicas to apply
  BINLOGD_UPSTREAM_PASSWORD=secret binlogd serve --upstream mysql://repl@10.0.0.5:3306 --datadir /var/lib/binlogd \\
      --server-id 100
      relay: replicate that primary, keep its binlog files (same names and positions) in the datadir and serve
      them; SHOW SLAVE STATUS / STOP SLAVE / START SLAVE on binlogd (docs/relay.md). The password may also come
      from --upstream-password-file FILE; in the URL it works but ps shows it to every local user
  binlogd serve --binlog-dir /var/lib/mysql-binlogs --port 3307 --server-id 100
      directory: serve existing MariaDB binlog files (NAME.000001 ... plus NAME.index) read-only
  then, on a MariaDB replica:
      CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3307, MASTER_USER='root', MASTER_PASSWORD='',
                       MASTER_USE_GTID=slave_pos;
      SET GLOBAL replicate_events_marked_for_skip=FILTER_ON_MASTER;  -- optional: binlogd filters 0x8000 events
      START SLAVE;
  or read it like a primary:
      mariadb-binlog --read-from-remote-server -h127.0.0.1 -P3307 -uroot --raw --to-last-log mysql-bin.000001

exit status: 0 after a clean shutdown (SIGTERM, SIGINT); 2 when binlogd cannot start (bad options, port in use,
datadir locked by another binlogd, unreadable files): one line on stderr says why. Those checks run before
binlogd writes anything.
"""

SERVE_USAGE = """\
binlogd serve [common options] [--datadir DIR] [standalone options] [ledger options]
       binlogd serve --upstream mysql://USER@HOST:PORT --datadir DIR [common options] [relay options] ...
       binlogd serve --binlog-dir DIR [common options] [ledger options]"""

UPSTREAM_PASSWORD_ENV = "BINLOGD_UPSTREAM_PASSWORD"
DEFAULT_DATADIR = Path("var")
DEFAULT_MAX_BINLOG_SIZE = 1 << 30
DEFAULT_UPSTREAM_HEARTBEAT = 30.0
DEFAULT_UPSTREAM_RETRY_MAX = 30.0
DEFAULT_LEDGER_MAX_SIZE = 64 << 20

log = logging.getLogger("binlogd")


class UsageError(Exception):
    """Options that contradict each other or a mode; the message is the one line printed (exit status 2)."""


def _positive(v: str) -> int:
    n = int(v)
    if n <= 0 or n > 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"must be between 1 and {0xFFFFFFFF}")
    return n


def _max_connections(v: str) -> int:
    n = int(v)
    if not 10 <= n <= 100000:
        raise argparse.ArgumentTypeError("must be between 10 and 100000 (MariaDB's max_connections range)")
    return n


def _port(v: str) -> int:
    n = int(v)
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (0-65535)")
    return n


@dataclass(frozen=True)
class _Upstream:
    """--upstream: the URL without its query, and the TLS options of its query (protocol/tls_options.py)."""

    url: UpstreamURL
    tls: TlsOptions | None


def _upstream_url(v: str) -> _Upstream:
    from urllib.parse import parse_qs

    from binlogd.protocol.tls_options import TLS_PARAMS, tls_from_params

    from .passwords import mask_url_password
    from .relay.upstream import parse_upstream_url

    base, _, query = v.partition("?")
    try:
        url = parse_upstream_url(base)
        params = {k: vals[-1] for k, vals in parse_qs(query, keep_blank_values=True).items()}
        unknown = sorted(set(params) - set(TLS_PARAMS))
        if unknown:
            raise ValueError(f"unknown URL parameter {unknown[0]!r} (known: {', '.join(TLS_PARAMS)})")
        return _Upstream(url, tls_from_params(params))
    except ValueError as e:
        msg = str(e)
        raise argparse.ArgumentTypeError(msg if mask_url_password(base) in msg or "://" in msg
                                         else f"{mask_url_password(base)!r}: {msg}") from None


def _size(v: str) -> int:
    """A byte size: 4096, 512K, 64M, 1G."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", v, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {v!r} (examples: 1048576, 512K, 64M, 1G)")
    n = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]
    if n < 1024:
        raise argparse.ArgumentTypeError("must be at least 1024 bytes")
    return n


def _on_off(v: str) -> bool:
    """A MariaDB boolean option value: ON/OFF, 1/0, TRUE/FALSE (any case)."""
    u = v.upper()
    if u in ("ON", "1", "TRUE"):
        return True
    if u in ("OFF", "0", "FALSE"):
        return False
    raise argparse.ArgumentTypeError(f"expected ON or OFF, not {v!r}")


def _ms(v: str) -> int:
    """Milliseconds, 0 to 4294967295 (rpl_semi_sync_master_timeout's range)."""
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, not {v!r}") from None
    if not 0 <= n <= 4294967295:
        raise argparse.ArgumentTypeError(f"{n} is out of range 0..4294967295")
    return n


def _basename(v: str) -> str:
    """The writer's basename rule, checked before anything is written."""
    problem = basename_problem(v)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return v


def _domain_id(v: str) -> int:
    n = int(v)
    if not 0 <= n <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"must be between 0 and {0xFFFFFFFF}")
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
    return (getattr(args, "datadir", None) or DEFAULT_DATADIR) / "ledger"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlogd", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="log verbosity (default INFO; also accepted after the command)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    s = sub.add_parser("serve", help="serve binlogs to replicas (standalone, relay or directory mode)",
                       description=MODES, usage=SERVE_USAGE, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_serve_options(s)
    _add_option_file_options(s)
    sub.add_parser("show", add_help=False, help="print binlog files or a server's binlog as text that replays into "
                   "the mariadb client (`binlogd show --help`)")
    pw = sub.add_parser("passwd", help="write a users-file line (the password as MariaDB's native hash)",
                        description="Read a password (twice from a terminal, else the first line of stdin) and "
                        "print the users-file line USER[@HOST]:*HASH [GRANT ...] [REQUIRE SSL]; with --users FILE, "
                        "replace that account's line in FILE or append it. The clear-text password is written "
                        "nowhere. A running binlogd reads the file again on SIGHUP.")
    pw.add_argument("account", metavar="USER[@HOST]", help="user name and MariaDB host pattern (default %%)")
    pw.add_argument("--grant", metavar="PRIVS", help="comma-separated privileges: REPLICATION SLAVE, REPLICATION "
                    "CLIENT (BINLOG MONITOR), SLAVE MONITOR, REPLICATION MASTER ADMIN, WRITE, RELOAD, BINLOG ADMIN, "
                    "USAGE, ALL (default: ALL)")
    pw.add_argument("--require-ssl", action="store_true", help="the account may log in over TLS only (default off)")
    pw.add_argument("--ed25519", action="store_true",
                    help="store the password as MariaDB's ed25519 public key (IDENTIFIED VIA ed25519) instead of a "
                    "mysql_native_password hash (default off)")
    pw.add_argument("--users", type=Path, metavar="FILE", help="users file to update (default: print the line)")
    d = sub.add_parser("demo-dir", help="write a small demo binlog directory (for `binlogd serve --binlog-dir`)",
                       description="Write mysql-bin.000001, mysql-bin.000002 and mysql-bin.index into DIR: what a "
                       "MariaDB 10.11 primary (server_id 1, STATEMENT format, CRC32) writes for a small session on "
                       "demo.items, including a transaction and a DDL under SET skip_replication=1. A DIR that "
                       "already holds exactly these files is left as it is.")
    d.add_argument("dir", type=Path, metavar="DIR", help="target directory (created if missing; must be empty)")
    d.add_argument("--force", action="store_true",
                   help="write into a non-empty DIR, replacing its mysql-bin.* files")
    return p


def _add_serve_options(s: argparse.ArgumentParser) -> None:
    """`serve`'s options in one group per mode. Mode-specific options default to None so that `main` can tell
    an option given for the wrong mode (an error) from one left at its default."""
    c = s.add_argument_group("common options (every mode)")
    c.add_argument("--port", type=_port, default=3307, help="TCP port to listen on (default 3307)")
    c.add_argument("--bind-address", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)")
    c.add_argument("--server-id", type=_positive, default=1, metavar="N",
                   help="this primary's server_id: replicas refuse one equal to their own; in relay mode also the "
                   "id binlogd registers with upstream, which must differ from the upstream's (default 1)")
    c.add_argument("--users", type=Path, metavar="FILE",
                   help="users file, lines USER:PASSWORD or USER:*NATIVEHASH (# starts a comment); default: only "
                   "root with an empty password, and only from loopback")
    c.add_argument("--ssl-cert", type=Path, metavar="FILE",
                   help="TLS: this server's certificate (PEM), MariaDB's option; clients may then upgrade with "
                   "CLIENT_SSL (mariadb --ssl, MASTER_SSL=1). Checked at start: a missing file or a key that does "
                   "not match stops binlogd before it writes anything (default: none, clear text only)")
    c.add_argument("--ssl-key", type=Path, metavar="FILE",
                   help="TLS: the certificate's private key (PEM; default: read from --ssl-cert's file)")
    c.add_argument("--ssl-ca", type=Path, metavar="FILE",
                   help="TLS: CA certificates (PEM) that verify a client certificate when a client sends one (default: "
                   "none, client certificates are not checked)")
    c.add_argument("--require-secure-transport", action="store_true",
                   help="refuse clear-text logins with 1045 Access denied, as MariaDB's require_secure_transport "
                   "does (needs --ssl-cert; default off)")
    c.add_argument("--compat", choices=["binlogd", "mariadb"], default="binlogd",
                   help="binlogd (default): events filtered by skip_replication become same-length dummies for "
                   "replicas with capability < 2, and replicas' positions are moved over trailing filtered "
                   "events; mariadb: reproduce MariaDB 10.11 byte for byte (holes)")
    c.add_argument("--basename", type=_basename, metavar="NAME",
                   help="binlog base name, NAME of NAME.000001 (default mysql-bin when binlogd writes; with "
                   "--binlog-dir, needed only when the directory holds several)")
    c.add_argument("--gtid-domain-id", type=_domain_id, default=0, metavar="N",
                   help="@@gtid_domain_id reported, and the domain of the GTIDs the standalone primary writes "
                   "(default 0)")
    # per-replica table filters (server/replica_filters.py)
    c.add_argument("--replica-filter", action="append", default=[], metavar="SERVER_ID:replicate-OPTION=VALUE[,...]",
                   help="filter the dumps of the replica with this server_id as MariaDB's replicate-OPTION would on "
                   "the replica (do-table, ignore-table, wild-do-table, wild-ignore-table, do-db, ignore-db, "
                   "rewrite-db), e.g. 3:replicate-wild-do-table=shop.%%; repeatable (default: none). Users get "
                   "filters in the users file, CDC clients with SET @binlogd_replicate_do_table='db.t1,...' "
                   "(README: table filters)")
    c.add_argument("--log-level", default=argparse.SUPPRESS, choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="log verbosity (default INFO)")
    c.add_argument("--event-loop", choices=list(event_loop.CHOICES), default=None,
                   help="the asyncio event loop: uvloop (libuv, faster per packet) or asyncio's own; auto: uvloop "
                   "when installed (the default)")
    c.add_argument("--send-thread", action=argparse.BooleanOptionalAction, default=None,
                   help="while several dumps run, copy their big writes into the sockets on a second thread "
                   "without the GIL (server/dump/sender.py, a C extension), so the event loop frames the next "
                   "dump meanwhile: the default when the extension is built (2 C readers of 2 KB rows: 1.69x "
                   "MariaDB's rate against 1.21x on the loop alone; benchmarks/README.md). --no-send-thread: every "
                   "write on the loop")
    c.add_argument("--command-path", choices=["fast", "stream"], default="fast",
                   help="standalone: how client commands are read; fast (the default): DML, SET and transaction "
                   "control answered straight from the socket's protocol, everything else by the stream path; "
                   "stream: every command by the stream path (for comparisons; the binlog is the same)")
    c.add_argument("--max-connections", type=_max_connections, default=None, metavar="N",
                   help="client connections at once, 10-100000 (default 151, MariaDB's); one more is kept for an "
                   "account with ALL privileges; beyond: ERR 1040 Too many connections")

    st = s.add_argument_group(
        "standalone mode (the default: neither --upstream nor --binlog-dir)",
        "Clients write SQL; every change of data or schema is logged in statement format (docs/standalone.md).\n"
        "--datadir and --sync-binlog serve relay mode too.")
    st.add_argument("--datadir", type=Path, default=None, metavar="DIR",
                    help="where binlogd writes its binlog files, index and ledger, standalone and relay modes "
                    "(default ./var; created if missing; one binlogd per datadir: DIR/binlogd.lock)")
    st.add_argument("--max-binlog-size", type=_size, default=None, metavar="SIZE",
                    help="start a new binlog file once the current one reaches SIZE, 4096 to 1G; a transaction is "
                    "never split (default 1G, like MariaDB's max_binlog_size)")
    st.add_argument("--sync-binlog", type=int, default=None, metavar="N",
                    help="standalone and relay modes: fsync the binlog every N commits (group commits, as MariaDB's "
                    "sync_binlog counts them: a batch of groups stored at once) before acknowledging (standalone) "
                    "or serving them; 1: every commit survives a power loss (default 0: leave it to the OS, which "
                    "survives kill -9)")
    st.add_argument("--binlog-with-tables-info", action="store_true", default=None,
                    help="precede every statement's Query event with an ignorable Tables_info event listing the "
                    "tables it touches (seed WL#40; replicas skip it, clients that SET @binlogd_send_tables_info=1 "
                    "get it; startup only; default off; docs/tables-info.md)")

    r = s.add_argument_group(
        "relay mode (--upstream)",
        "Replicate a real MariaDB/MySQL primary into --datadir (with --sync-binlog, above) and serve its files\n"
        "under the same names and positions (docs/relay.md). The upstream password is the first of:\n"
        "  the URL's (works, but ps shows it to every local user: a warning is logged)\n"
        "  the first line of --upstream-password-file FILE\n"
        f"  ${UPSTREAM_PASSWORD_ENV}\n"
        "  empty")
    r.add_argument("--upstream", type=_upstream_url, metavar="mysql://USER[:PASSWORD]@HOST[:PORT][?TLS]",
                   help="the primary to replicate (port default 3306, user default root; %%-escapes allowed: "
                   "%%40 for @). TLS: ?ssl-ca=FILE&ssl-verify=1 (also ssl=1, ssl-cert, ssl-key; default clear "
                   "text), as MASTER_SSL_CA / MASTER_SSL_VERIFY_SERVER_CERT")
    r.add_argument("--upstream-password-file", type=Path, metavar="FILE",
                   help="read the upstream password from FILE's first line (line ending stripped) instead of "
                   "putting it in the URL")
    r.add_argument("--upstream-heartbeat", type=float, default=None, metavar="SECONDS",
                   help="heartbeat period asked of the upstream; no event or heartbeat for twice as long means "
                   f"the connection is dead (default {DEFAULT_UPSTREAM_HEARTBEAT:g}, like MariaDB's "
                   "slave_net_timeout/2)")
    r.add_argument("--upstream-retry-max", type=float, default=None, metavar="SECONDS",
                   help="reconnect attempts back off exponentially from 0.1 s up to this "
                   f"(default {DEFAULT_UPSTREAM_RETRY_MAX:g})")
    r.add_argument("--upstream-use-gtid", action="store_true", default=None,
                   help="resume with the stored GTID position (like MASTER_USE_GTID=slave_pos: the upstream checks "
                   "that binlogd's history is in its binlog) instead of the stored file/pos (default off); the "
                   "files stay byte-identical either way")

    ss = s.add_argument_group(
        "semi-synchronous replication (MariaDB's names; docs/semisync.md)",
        "Replicas that SET rpl_semi_sync_slave_enabled=ON get the semi-sync header in every mode.")
    ss.add_argument("--rpl-semi-sync-master-enabled", type=_on_off, nargs="?", const=True, default=None,
                    metavar="ON|OFF", help="standalone mode: a commit's OK waits for one semi-sync replica's ack "
                    "of its group (or the timeout; then asynchronous until a replica catches up) (default OFF)")
    ss.add_argument("--rpl-semi-sync-master-timeout", type=_ms, default=None, metavar="MS",
                    help="standalone mode: how long a commit waits for an ack (default 10000)")
    ss.add_argument("--rpl-semi-sync-slave-enabled", type=_on_off, nargs="?", const=True, default=None,
                    metavar="ON|OFF", help="relay mode: ask a semi-sync upstream for semi-sync and acknowledge "
                    "each group it asks about once stored (fsynced with --sync-binlog=1) (default OFF)")

    dg = s.add_argument_group("directory mode (--binlog-dir)",
                              "Serve existing binlog files read-only; nothing is written there.")
    dg.add_argument("--binlog-dir", type=Path, metavar="DIR",
                    help="directory with binlog files NAME.NNNNNN (from any MariaDB/MySQL 5.6+ server) and "
                    "optionally NAME.index; growth by an external writer is picked up")
    dg.add_argument("--binlog-row-metadata", choices=["NO_LOG", "MINIMAL", "FULL"], default=None,
                    help="@@binlog_row_metadata reported to clients, in directory and relay modes: what the server "
                    "that wrote the row events used. CDC clients such as python-mysql-replication take column names "
                    "and signedness from TABLE_MAP events only when it is FULL (default NO_LOG, MariaDB's default)")

    lg = s.add_argument_group(
        "audit ledger (every mode)",
        "One JSON line per dump connection, per decision run and per dump end, in ledger.NNNNNN.jsonl files\n"
        "(docs/ledger.md; `binlogd-audit` checks it). One binlogd per ledger directory (binlogd.lock).")
    led = lg.add_mutually_exclusive_group()
    led.add_argument("--ledger", type=Path, metavar="DIR",
                     help="ledger directory (default DATADIR/ledger in standalone and relay modes; off with "
                     "--binlog-dir unless given)")
    led.add_argument("--no-ledger", action="store_true", help="write no audit ledger")
    lg.add_argument("--ledger-max-size", type=_size, default=None, metavar="SIZE",
                    help="start a new ledger file when the current one would exceed SIZE (default 64M)")

    mt = s.add_argument_group("metrics (every mode)", "Prometheus text on http://ADDR:PORT/metrics "
                              "(docs/operations.md lists every metric).")
    mt.add_argument("--metrics-port", type=_port, default=None, metavar="PORT",
                    help="serve Prometheus metrics on this TCP port (default: off)")
    mt.add_argument("--metrics-address", default=None, metavar="ADDR",
                    help="address of the metrics port (default 127.0.0.1)")
    _add_expiry_options(s)

    ft = s.add_argument_group(
        "fault injection (a testing tool: never in production)",
        "Break chosen dump streams on purpose to test replicas and CDC clients (docs/testing.md).")
    ft.add_argument("--faults", type=Path, metavar="FILE",
                    help="JSON list of faults (binlogd.testing.faults.write_faults), each for one replica "
                    "server_id or the Nth dump: close after N events or bytes, corrupt event K's CRC, stall, "
                    "ERR 1236, throttle, heartbeat period. Re-read when it changes (replace it atomically); a "
                    "bad file keeps the previous set; a missing file is an empty set (default: no fault injection)")


# --- binlog expiry and ledger retention (server/expiry.py, server/ledger_retention.py) ---------------------------
def _expire_seconds(v: str) -> int:
    from .expiry import MAX_EXPIRE_SECONDS

    n = int(v)
    if not 0 <= n <= MAX_EXPIRE_SECONDS:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_EXPIRE_SECONDS} (99 days)")
    return n


def _expire_days(v: str) -> int:
    """--expire-logs-days (fractions allowed, as in MariaDB 10.11) in seconds: the two options are aliases."""
    d = float(v)
    if not 0 <= d <= 99:
        raise argparse.ArgumentTypeError("must be between 0 and 99")
    return round(d * 86400)


def _retention(v: str) -> int:
    n = int(v)
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (0: keep every ledger file)")
    return n


def _add_expiry_options(s: argparse.ArgumentParser) -> None:
    ex = s.add_argument_group(
        "binlog expiry (standalone and relay modes) and ledger retention",
        "Checked at start, at each new binlog file and periodically. A file a connected replica is reading, and\n"
        "every file after it, waits for the next check (logged); the active file is never removed.")
    ex.add_argument("--binlog-expire-logs-seconds", dest="binlog_expire_logs_seconds", type=_expire_seconds,
                    default=None, metavar="N",
                    help="remove binlog files last written more than N seconds ago, as MariaDB's "
                    "binlog_expire_logs_seconds (0-8553600; default 0: never). Alias of --expire-logs-days: the last "
                    "one given wins")
    ex.add_argument("--expire-logs-days", dest="binlog_expire_logs_seconds", type=_expire_days, default=None,
                    metavar="DAYS", help="the same in days, fractions allowed (MariaDB's expire_logs_days, 0-99; "
                    "default 0: never)")
    ex.add_argument("--ledger-retention-seconds", type=_retention, default=None, metavar="N",
                    help="remove audit-ledger files last written more than N seconds ago, except the one being "
                    "written and those the audit of a binlog file still present needs (default 0: keep all)")


# --- option files (binlogd/optionfiles.py) --------------------------------------------------------------------
def _add_option_file_options(s: argparse.ArgumentParser) -> None:
    """Listed for --help; they are taken off the front of the command line before parsing (main)."""
    of = s.add_argument_group(
        "option files (MariaDB's my.cnf conventions; first, right after `serve`)",
        "The [binlogd] group's options (names as below without --) go before the command line's, which wins.\n"
        "binlogd reads no option file unless named here.")
    of.add_argument("--defaults-file", metavar="FILE", help="read only FILE (default: none)")
    of.add_argument("--defaults-extra-file", metavar="FILE", help="read FILE after --defaults-file (default: none)")
    of.add_argument("--no-defaults", action="store_true", default=None, help="read no option file (the default)")
    of.add_argument("--print-defaults", action="store_true", default=None,
                    help="print the options the files give and exit (default off)")


def _serve_options_parser() -> argparse.ArgumentParser:
    """`serve`'s options alone: what an option file's [binlogd] lines are checked against."""
    p = argparse.ArgumentParser(add_help=False)
    _add_serve_options(p)
    return p


def _with_option_files(argv: list[str]) -> list[str] | int:
    """`serve ARGS` with the option files' [binlogd] options in front, or an exit status (printed, or refused)."""
    from binlogd.optionfiles import OptionFileError, expand

    at = argv.index("serve") + 1
    try:
        expanded = expand(argv[at:], _serve_options_parser(), "binlogd", "binlogd")
    except OptionFileError as e:
        print(f"binlogd: {e}", file=sys.stderr)
        return 2
    return 0 if expanded is None else [*argv[:at], *expanded]


def _tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """--ssl-cert/--ssl-key/--ssl-ca; the files themselves are read by the start-up checks (server/tls.py)."""
    from .tls import TlsFiles

    if args.ssl_cert is None:
        for opt in ("ssl_key", "ssl_ca"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt.replace('_', '-')} without --ssl-cert: TLS needs a server certificate")
        if args.require_secure_transport:
            raise UsageError("--require-secure-transport without --ssl-cert: no client could log in")
        return None
    return TlsFiles(args.ssl_cert, args.ssl_key, args.ssl_ca)


def _check_modes(args: argparse.Namespace) -> None:
    """Refuse options that contradict each other or do nothing in the chosen mode (UsageError)."""
    relay, directory = args.upstream is not None, args.binlog_dir is not None
    if relay and directory:
        raise UsageError("--upstream (relay mode) and --binlog-dir (serve a directory) exclude each other; "
                         "the relay writes into --datadir")
    if directory and args.datadir is not None:
        raise UsageError("--binlog-dir (serve a directory read-only) and --datadir (where binlogd writes) exclude "
                         "each other")
    if not relay:
        for opt in ("upstream_password_file", "upstream_heartbeat", "upstream_retry_max", "upstream_use_gtid"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt.replace('_', '-')} is for relay mode (--upstream)")
    if relay or directory:
        for opt in ("binlog_with_tables_info", "max_binlog_size"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt.replace('_', '-')} is for the standalone primary (it writes the binlog); "
                                 "--binlog-dir and --upstream serve files binlogd does not write")
    if relay or directory:
        for opt in ("rpl_semi_sync_master_enabled", "rpl_semi_sync_master_timeout"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt.replace('_', '-')} is for the standalone primary (its commits wait for "
                                 "acks); in every mode semi-sync replicas get the semi-sync header")
    if not relay and args.rpl_semi_sync_slave_enabled is not None:
        raise UsageError("--rpl-semi-sync-slave-enabled is for relay mode (--upstream)")
    if not (relay or directory) and args.binlog_row_metadata is not None:
        raise UsageError("--binlog-row-metadata is for the modes that serve row events others wrote (--binlog-dir, "
                         "--upstream); the standalone primary logs statements")
    if directory and args.sync_binlog is not None:
        raise UsageError("--sync-binlog is for the modes that write a binlog (standalone, relay), not --binlog-dir")
    if args.metrics_address is not None and args.metrics_port is None:
        raise UsageError("--metrics-address without --metrics-port: there is no metrics port to bind")
    if directory and args.binlog_expire_logs_seconds is not None:
        raise UsageError("--binlog-expire-logs-seconds / --expire-logs-days are for the modes that write a binlog "
                         "(standalone, relay), not --binlog-dir")
    if args.no_ledger and args.ledger_retention_seconds is not None:
        raise UsageError("--ledger-retention-seconds with --no-ledger: there is no ledger to expire")
    if args.no_ledger and args.ledger_max_size is not None:
        raise UsageError("--ledger-max-size with --no-ledger: there is no ledger to size")
    if args.max_binlog_size is not None and not 4096 <= args.max_binlog_size <= DEFAULT_MAX_BINLOG_SIZE:
        raise UsageError("--max-binlog-size must be between 4096 and 1G")
    if args.sync_binlog is not None and args.sync_binlog < 0:
        raise UsageError("--sync-binlog must be >= 0")
    for opt in ("upstream_heartbeat", "upstream_retry_max"):
        v = getattr(args, opt)
        if v is not None and not 0 < v < 1e7:
            raise UsageError(f"--{opt.replace('_', '-')} must be > 0 seconds")


def _upstream_password(args: argparse.Namespace) -> str:
    """The URL's password, else --upstream-password-file's first line, else $BINLOGD_UPSTREAM_PASSWORD, else ''."""
    from .passwords import URL_PASSWORD_WARNING, PasswordError, password_from_env, read_password_file

    url: UpstreamURL = args.upstream.url
    if url.password is not None and args.upstream_password_file is not None:
        raise UsageError("the upstream password is given twice: in the --upstream URL and --upstream-password-file")
    if url.password is not None:
        if url.password:
            log.warning(URL_PASSWORD_WARNING.format(
                what="--upstream", instead=f"--upstream-password-file or ${UPSTREAM_PASSWORD_ENV}"))
        return url.password
    if args.upstream_password_file is not None:
        try:
            return read_password_file(args.upstream_password_file, "--upstream-password-file")
        except PasswordError as e:
            raise UsageError(str(e)) from None
    return password_from_env(UPSTREAM_PASSWORD_ENV) or ""


def _check_faults(path: Path | None) -> None:
    """--faults FILE given at start must hold a valid set when it exists (later changes are only logged)."""
    if path is None or not path.exists():
        return
    from .faults import load_faults

    try:
        load_faults(path)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"--faults {path}: {e}") from None


def _replica_filters(values: list[str]) -> dict[int, Assignments]:
    from .replica_filters import FilterError, parse_cli

    try:
        return parse_cli(values)
    except FilterError as e:
        raise UsageError(str(e)) from None


def serve_config(args: argparse.Namespace) -> ServeConfig:
    """The ServeConfig the options describe, or UsageError; reads only a password file and the faults file."""
    from .app import ServeConfig
    from .relay.upstream import UpstreamConfig

    _check_modes(args)
    _check_faults(args.faults)
    upstream = None
    if args.upstream is not None:
        u: UpstreamURL = args.upstream.url
        upstream = UpstreamConfig(
            host=u.host, port=u.port, user=u.user, password=_upstream_password(args), server_id=args.server_id,
            heartbeat_s=args.upstream_heartbeat or DEFAULT_UPSTREAM_HEARTBEAT,
            retry_max_s=args.upstream_retry_max or DEFAULT_UPSTREAM_RETRY_MAX,
            use_gtid=bool(args.upstream_use_gtid), tls=args.upstream.tls,
            semi_sync=bool(args.rpl_semi_sync_slave_enabled))
    standalone = upstream is None and args.binlog_dir is None
    return ServeConfig(
        binlog_dir=args.binlog_dir if args.binlog_dir is not None else (args.datadir or DEFAULT_DATADIR),
        port=args.port, server_id=args.server_id, bind_address=args.bind_address, users_file=args.users,
        compat=Compat.MARIADB if args.compat == "mariadb" else Compat.BINLOGD,
        basename=args.basename, gtid_domain_id=args.gtid_domain_id, upstream=upstream,
        sync_binlog=args.sync_binlog or 0, standalone=standalone,
        max_binlog_size=args.max_binlog_size or DEFAULT_MAX_BINLOG_SIZE,
        tables_info=bool(args.binlog_with_tables_info),
        ledger_dir=_ledger_dir(args), ledger_max_size=args.ledger_max_size or DEFAULT_LEDGER_MAX_SIZE,
        faults_file=args.faults, binlog_row_metadata=args.binlog_row_metadata or "NO_LOG",
        tls=_tls_files(args), require_secure_transport=args.require_secure_transport,
        metrics_port=args.metrics_port, metrics_address=args.metrics_address or "127.0.0.1",
        rpl_semi_sync_master_enabled=bool(args.rpl_semi_sync_master_enabled),
        rpl_semi_sync_master_timeout=(10000 if args.rpl_semi_sync_master_timeout is None
                                      else args.rpl_semi_sync_master_timeout),
        binlog_expire_logs_seconds=args.binlog_expire_logs_seconds or 0,
        ledger_retention_seconds=args.ledger_retention_seconds or 0,
        replica_filters=_replica_filters(args.replica_filter),
        max_connections=args.max_connections or 151, fast_path=args.command_path == "fast")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["show"]:  # its own parser: mariadb-binlog's options (-h is --host there)
        from binlogd.show.cli import main as show_main

        return show_main(argv[1:])
    parser = build_parser()
    if not argv:
        # like docker and kubectl: a bare invocation asks what this is; nothing went wrong (help on stdout, 0)
        parser.print_help()
        return 0
    if "serve" in argv[:3]:
        expanded = _with_option_files(argv)
        if isinstance(expanded, int):
            return expanded
        argv = expanded
    args = parser.parse_args(argv)
    if args.command == "serve" and (args.defaults_file or args.defaults_extra_file or args.no_defaults
                                    or args.print_defaults):
        print("binlogd: --defaults-file, --defaults-extra-file, --no-defaults and --print-defaults come first, "
              "right after `serve` (as in MariaDB)", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    if args.command == "serve":
        return _serve(args)
    if args.command == "passwd":
        from .passwd import PasswdError, run_passwd

        try:
            print(run_passwd(args.account, args.grant, args.require_ssl, args.users, args.ed25519))
        except PasswdError as e:
            print(f"binlogd passwd: {e}", file=sys.stderr)
            return 2
        return 0
    if args.command == "demo-dir":
        from .demo import DemoDirError, write_demo_dir

        try:
            sizes, written = write_demo_dir(args.dir, force=args.force)
        except (DemoDirError, OSError) as e:
            print(f"binlogd: {e}", file=sys.stderr)
            return 2
        listing = ", ".join(f"{name} ({size} bytes)" for name, size in sizes.items())
        print(f"{'wrote' if written else 'already present, unchanged:'} {listing} in {args.dir}")
    return 0


async def _serve_frozen(cfg: ServeConfig) -> None:
    """`serve(cfg)`, with the start-up heap frozen out of the garbage collector once it has started
    (binlogd/gc_pauses.py: no 45-86 ms full collections of the imported modules while it serves)."""
    from binlogd.gc_pauses import freeze_startup_heap

    from .app import serve

    started = asyncio.Event()

    async def freeze_when_started() -> None:
        await started.wait()
        freeze_startup_heap()

    freezer = asyncio.create_task(freeze_when_started())
    try:
        await serve(cfg, started)
    finally:
        freezer.cancel()


def _serve(args: argparse.Namespace) -> int:
    from binlogd.gil import shorten_switch_interval

    from .auth import UsersFileError
    from .binlog.store import StoreError
    from .binlog.writer import BinlogWriteError
    from .dump.heap import tune_malloc
    from .ledger import LedgerError
    from .startup import StartupError

    try:
        cfg = serve_config(args)
        try:
            loop_name = event_loop.resolve(args.event_loop)
        except ValueError as e:
            raise UsageError(str(e)) from None
        from .dump import sender

        if args.send_thread and not sender.available():
            raise UsageError("--send-thread: the sender thread's extension (server/dump/_sender.c) is not built")
        sender.enabled = sender.available() if args.send_thread is None else args.send_thread
        tune_malloc()  # big framing buffers reused, not faulted in afresh (server/dump/heap.py)
        shorten_switch_interval()  # the loop waits for the GIL at most 0.5 ms behind a worker thread (binlogd/gil.py)
        event_loop.run(_serve_frozen(cfg), loop_name)
    except (UsageError, StartupError, StoreError, UsersFileError, BinlogWriteError, LedgerError) as e:
        print(f"binlogd: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # after start-up: a disk or socket failure no check could foresee
        print(f"binlogd: {e.strerror or e}{f': {e.filename}' if e.filename else ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
