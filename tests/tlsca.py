"""A throwaway certificate authority for the TLS tests, made at run time with the openssl CLI (no key is
committed): a CA, a server certificate for 127.0.0.1/localhost signed by it, a client certificate, and a second
CA that signed nothing of ours (a client trusting only it must refuse binlogd's certificate)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    dir: Path
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    other_key: Path  # a key that does not match `cert`


def _run(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: Path, name: str) -> tuple[Path, Path]:
    key, crt = d / f"{name}-key.pem", d / f"{name}.pem"
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=binlogd test {name}",
         "-keyout", key, "-out", crt, cwd=d)
    return crt, key


def _leaf(d: Path, name: str, ca: Path, ca_key: Path, san: str) -> tuple[Path, Path]:
    key, csr, crt, ext = d / f"{name}-key.pem", d / f"{name}.csr", d / f"{name}.pem", d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n")
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", key, "-out", csr, cwd=d)
    _run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
         "-extfile", ext, "-out", crt, cwd=d)
    return crt, key


def make_certs(directory: Path) -> Certs:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _ca(d, "ca")
    cert, key = _leaf(d, "server", ca, ca_key, "IP:127.0.0.1,DNS:localhost")
    client_cert, client_key = _leaf(d, "client", ca, ca_key, "DNS:client")
    other_ca, other_key = _ca(d, "other-ca")
    return Certs(d, ca, cert, key, client_cert, client_key, other_ca, other_key)
