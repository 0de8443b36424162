"""The server's TLS: MariaDB's `--ssl-cert`, `--ssl-key`, `--ssl-ca` loaded into one `ssl.SSLContext`.

Why checked at start-up (server/startup.py's rule): a missing file or a key that does not match the certificate
would otherwise surface only at the first client's handshake, after binlogd had written a new binlog file. Each
failure is one line naming the option and the file.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from .startup import StartupError

TLS_HANDSHAKE_TIMEOUT = 10.0  # seconds, like MariaDB's connect_timeout: a stalled hello costs one connection


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path | None = None  # None: the key is in the certificate file (as MariaDB and OpenSSL accept)
    ca: Path | None = None  # verifies client certificates when a client sends one


def _readable(path: Path, option: str) -> None:
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as e:
        raise StartupError(f"{option} {path}: cannot read it: {e.strerror}") from None


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """The context every TLS connection uses, or a StartupError that says which file is wrong and why."""
    _readable(files.cert, "--ssl-cert")
    if files.key is not None:
        _readable(files.key, "--ssl-key")
    if files.ca is not None:
        _readable(files.ca, "--ssl-ca")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # MariaDB 10.11's default tls_version is TLSv1.2,TLSv1.3
    try:
        ctx.load_cert_chain(str(files.cert), str(files.key) if files.key is not None else None)
    except ssl.SSLError as e:
        key = files.key or files.cert
        if "KEY_VALUES_MISMATCH" in str(e):
            raise StartupError(f"--ssl-key {key} does not match the certificate in --ssl-cert {files.cert}") from None
        raise StartupError(f"--ssl-cert {files.cert} / --ssl-key {key}: not a PEM certificate and its private key "
                           f"({e.reason or e})") from None
    if files.ca is not None:
        try:
            ctx.load_verify_locations(cafile=str(files.ca))
        except ssl.SSLError as e:
            raise StartupError(f"--ssl-ca {files.ca}: no PEM CA certificate in it ({e.reason or e})") from None
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is checked when sent, as MariaDB does
    return ctx


def tls_status(transport: object) -> tuple[str, str]:
    """(Ssl_cipher, Ssl_version) of a connection, as SHOW STATUS shows them; ('', '') in clear text."""
    get = getattr(transport, "get_extra_info", None)
    obj = get("ssl_object") if get is not None else None
    if obj is None:
        return "", ""
    cipher = obj.cipher()
    return (cipher[0] if cipher else ""), (obj.version() or "")
