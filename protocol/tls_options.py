"""TLS for binlogd's outgoing links (the relay's upstream, the applier's channels): URL options named like the
mariadb client's, one rule for both.

    mysql://repl@10.0.0.5:3306?ssl-ca=/etc/ssl/ca.pem&ssl-verify=1

`ssl=1` encrypts without checking the server (MASTER_SSL=1 alone); `ssl-ca`, `ssl-cert`, `ssl-key` imply it;
`ssl-verify=1` also checks the certificate chain and that it names the host (MASTER_SSL_VERIFY_SERVER_CERT=1;
the system's CAs when no ssl-ca is given).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

TLS_PARAMS = ("ssl", "ssl-ca", "ssl-cert", "ssl-key", "ssl-verify")
_TRUE, _FALSE = ("1", "on", "true", "yes"), ("0", "off", "false", "no")


@dataclass(frozen=True, slots=True)
class TlsOptions:
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify: bool = False

    def context(self) -> ssl.SSLContext:
        """The client context; ValueError naming the option and file that cannot be used."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.check_hostname = self.verify
        ctx.verify_mode = ssl.CERT_REQUIRED if self.verify else ssl.CERT_NONE
        try:
            if self.ca is not None:
                ctx.load_verify_locations(cafile=self.ca)
            elif self.verify:
                ctx.load_default_certs()
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"ssl-ca {self.ca}: {getattr(e, 'strerror', None) or e}") from None
        if self.cert is not None:
            try:
                ctx.load_cert_chain(self.cert, self.key)
            except (OSError, ssl.SSLError) as e:
                raise ValueError(f"ssl-cert {self.cert} / ssl-key {self.key or self.cert}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
        return ctx


def _flag(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE or v == "":
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{name}={value!r}: expected 1 or 0")


def tls_from_params(params: Mapping[str, str]) -> TlsOptions | None:
    """The TLS options among a URL's query parameters (None: clear text); ValueError says which is wrong. The
    files are loaded once here so that a bad path fails at start, not at the first connect."""
    if not any(k in params for k in TLS_PARAMS):
        return None
    for k in ("ssl-ca", "ssl-cert", "ssl-key"):
        if k in params and not params[k]:
            raise ValueError(f"{k}= needs a file")
    on = _flag("ssl", params["ssl"]) if "ssl" in params else True
    verify = _flag("ssl-verify", params["ssl-verify"]) if "ssl-verify" in params else False
    if not on:
        if len([k for k in params if k in TLS_PARAMS]) > 1:
            raise ValueError("ssl=0 with other ssl options")
        return None
    if "ssl-key" in params and "ssl-cert" not in params:
        raise ValueError("ssl-key without ssl-cert")
    opts = TlsOptions(params.get("ssl-ca"), params.get("ssl-cert"), params.get("ssl-key"), verify)
    opts.context()
    return opts


def ssl_status_columns(tls: TlsOptions | None) -> dict[str, str]:
    """SHOW SLAVE STATUS's Master_SSL_* for a link with these ssl-* options (None: clear text), as MASTER_SSL=1,
    MASTER_SSL_CA/CERT/KEY and MASTER_SSL_VERIFY_SERVER_CERT show them (the relay's upstream, an applier channel)."""
    return {
        "Master_SSL_Allowed": "No" if tls is None else "Yes",
        "Master_SSL_CA_File": (tls and tls.ca) or "",
        "Master_SSL_Cert": (tls and tls.cert) or "",
        "Master_SSL_Key": (tls and tls.key) or "",
        "Master_SSL_Verify_Server_Cert": "Yes" if tls is not None and tls.verify else "No",
    }
