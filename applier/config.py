"""Option parsing for `binlogd-apply`: the target URL, `--channel NAME=URL[?params]`, filter options, skip mode.

Nothing here touches the network, so that a bad option becomes a `ConfigError` whose text the CLI prints
before exiting with status 2; the only I/O is reading a password from a URL's `password_file=` or
`password_env=` (a password in the URL itself works, but ps shows it to every local user: a warning is logged).
Names used by the rest of the applier: `Endpoint`, `ChannelConfig`, `ApplierConfig`, `SKIP_MODES`,
`FILTER_OPTIONS`, `parse_endpoint`, `parse_channel`, `parse_filter_option`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

from binlogd.protocol.tls_options import TLS_PARAMS, TlsOptions, tls_from_params
from binlogd.server.passwords import (
    URL_PASSWORD_WARNING,
    PasswordError,
    mask_url_password,
    password_from_env,
    read_password_file,
)

SKIP_MODES: Final = ("REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER")

# option name (without the leading dashes) -> FilterType member name of applier/filters.py
FILTER_OPTIONS: Final = {
    "replicate-do-db": "DO_DB",
    "replicate-ignore-db": "IGNORE_DB",
    "replicate-do-table": "DO_TABLE",
    "replicate-ignore-table": "IGNORE_TABLE",
    "replicate-wild-do-table": "WILD_DO_TABLE",
    "replicate-wild-ignore-table": "WILD_IGNORE_TABLE",
    "replicate-rewrite-db": "REWRITE_DB",
}

PASSWORD_PARAMS: Final = ("password_file", "password_env")  # the password without it being in argv
ENDPOINT_PARAMS: Final = (*PASSWORD_PARAMS, *TLS_PARAMS)  # ?ssl-ca=FILE&ssl-verify=1 (protocol/tls_options.py)
CHANNEL_PARAMS: Final = ("gtid", "heartbeat", "retry", "server_id", *ENDPOINT_PARAMS)
DEFAULT_PORT: Final = 3306


log = logging.getLogger("binlogd.apply")


class ConfigError(ValueError):
    """A bad command-line value; the message says which and why (never a password)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int
    user: str = "root"
    password: str = field(default="", repr=False)  # never in a log line or SHOW SLAVE STATUS
    tls: TlsOptions | None = None  # the URL's ssl-* options; None: clear text

    def __str__(self) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """One source. `gtid`: connect with @slave_connect_state (MASTER_USE_GTID=slave_pos) or by file/pos."""

    name: str
    source: Endpoint
    gtid: bool = True
    heartbeat_s: float = 5.0
    retry_s: float = 1.0  # MASTER_CONNECT_RETRY
    server_id: int | None = None  # None: the applier's --server-id


@dataclass
class ApplierConfig:
    target: Endpoint
    channels: list[ChannelConfig]
    filters: list[tuple[str, str]] = field(default_factory=list)  # (FilterType name, "[channel:]value")
    skip_mode: str = "REPLICATE"
    admin_port: int | None = None
    admin_bind: str = "127.0.0.1"
    server_id: int = 1001
    admin_users: Path | None = None  # --admin-users: the admin port's accounts (protocol/accounts.py format)
    metrics_port: int | None = None  # --metrics-port: Prometheus text (applier/metrics.py)
    metrics_address: str = "127.0.0.1"
    parallel_apply: int = 1  # --parallel-apply: target sessions per channel (applier/parallel.py)
    parallel_min_bytes: int = 1024  # --parallel-min-bytes: smaller row transactions stay on one session
    row_apply: str = "binlog"  # --row-apply: row events as BINLOG statements (MariaDB targets) or as SQL


def parse_endpoint(url: str, what: str = "URL", params: dict[str, str] | None = None) -> Endpoint:
    """mysql://USER[:PASS]@HOST[:PORT][?password_file=PATH|password_env=NAME][&ssl-ca=FILE&ssl-verify=1] (user
    defaults to root, port to 3306; %-escapes allowed). `params`: the query already parsed by the caller
    (parse_channel), else only the password and TLS parameters are accepted."""
    base, _, query = url.partition("?")
    shown = mask_url_password(base)
    if params is None:
        params = _query_params(query, what, ENDPOINT_PARAMS)
    try:
        parts = urlsplit(base)
        port = parts.port
    except ValueError as e:
        raise ConfigError(f"{what} {shown!r}: {e}") from None
    if parts.scheme not in ("mysql", "mariadb"):
        raise ConfigError(f"{what} {shown!r}: expected mysql://USER:PASS@HOST:PORT")
    if not parts.hostname:
        raise ConfigError(f"{what} {shown!r}: no host")
    if parts.path not in ("", "/"):
        raise ConfigError(f"{what} {shown!r}: a database path is not allowed")
    url_password = None if parts.password is None else unquote(parts.password)
    try:
        tls = tls_from_params(params)
    except ValueError as e:
        raise ConfigError(f"{what} {shown!r}: {e}") from None
    return Endpoint(parts.hostname, port or DEFAULT_PORT, unquote(parts.username or "root"),
                    _password(url_password, params, what), tls)


def _query_params(query: str, what: str, known: tuple[str, ...]) -> dict[str, str]:
    params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True, strict_parsing=False).items()}
    for k in params:
        if k not in known:
            raise ConfigError(f"{what}: unknown parameter {k!r} (known: {', '.join(known)})")
    return params


def _password(in_url: str | None, params: dict[str, str], what: str) -> str:
    """One of: the URL's password (warned about), password_file=PATH's first line, $NAME of password_env=NAME."""
    given = [n for n, present in (("a password in the URL", in_url is not None),
                                   ("password_file=", "password_file" in params),
                                   ("password_env=", "password_env" in params)) if present]
    if len(given) > 1:
        raise ConfigError(f"{what}: the password is given twice ({' and '.join(given)}); give one")
    if "password_file" in params:
        if not params["password_file"]:
            raise ConfigError(f"{what}: password_file= needs a path")
        try:
            return read_password_file(params["password_file"], f"{what}: password_file")
        except PasswordError as e:
            raise ConfigError(str(e)) from None
    if "password_env" in params:
        name = params["password_env"]
        value = password_from_env(name) if name else None
        if value is None:
            raise ConfigError(f"{what}: password_env={name}: the environment variable is not set")
        return value
    if in_url:
        log.warning(URL_PASSWORD_WARNING.format(what=what, instead="?password_file=PATH or ?password_env=NAME"))
    return in_url or ""


def parse_channel(spec: str) -> ChannelConfig:
    """NAME=URL[?gtid=slave_pos|no&heartbeat=S&retry=S&server_id=N&password_file=PATH|password_env=NAME]; an
    empty NAME is the default channel."""
    name, sep, url = spec.partition("=")
    if not sep:
        raise ConfigError(f"--channel {mask_url_password(spec)!r}: expected NAME=mysql://USER@HOST:PORT (NAME may "
                          "be empty)")
    if len(name) > 64:
        raise ConfigError(f"--channel {name[:20]!r}...: channel names are at most 64 characters")
    base, _, query = url.partition("?")
    params = _query_params(query, f"--channel {name!r}", CHANNEL_PARAMS)
    source = parse_endpoint(base, f"--channel {name!r}", params)
    gtid = params.get("gtid", "slave_pos")
    if gtid not in ("slave_pos", "no"):
        raise ConfigError(f"--channel {name!r}: gtid must be slave_pos or no, not {gtid!r}")
    try:
        heartbeat = float(params.get("heartbeat", 5.0))
        retry = float(params.get("retry", 1.0))
        server_id = int(params["server_id"]) if "server_id" in params else None
    except ValueError as e:
        raise ConfigError(f"--channel {name!r}: {e}") from None
    if not 0 < heartbeat <= 4294967 or not 0 < retry <= 86400:
        raise ConfigError(f"--channel {name!r}: heartbeat and retry must be positive seconds")
    if server_id is not None and not 1 <= server_id < 1 << 32:
        raise ConfigError(f"--channel {name!r}: server_id must be in 1..4294967295")
    return ChannelConfig(name, source, gtid == "slave_pos", heartbeat, retry, server_id)


def parse_filter_option(option: str, value: str) -> tuple[str, str]:
    """('replicate-do-db', 'c1:db1') -> ('DO_DB', 'c1:db1'); the channel prefix is FilterRegistry's business."""
    kind = FILTER_OPTIONS.get(option.lstrip("-").replace("_", "-"))
    if kind is None:
        raise ConfigError(f"unknown filter option {option!r}")
    if not value:
        raise ConfigError(f"--{option}: empty value")
    return kind, value


def parse_skip_mode(value: str) -> str:
    mode = value.upper()
    if mode not in SKIP_MODES:
        raise ConfigError(f"--replicate-events-marked-for-skip: {value!r} is not one of {', '.join(SKIP_MODES)}")
    return mode
