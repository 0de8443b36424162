"""MariaDB's `ed25519` authentication: the client (`client_ed25519`) signs the server's 32-byte nonce with the
password itself as the secret key (SHA-512 of the password of any length, as in MariaDB's crypto_sign); the
server keeps only the public key (`ed25519_password('...')`, base64) and verifies the signature.

Pure Python (RFC 8032's reference arithmetic): no crypto package is installed in the project's environment, and
one signature per login costs a few milliseconds. Sans-IO.
"""

from __future__ import annotations

import hashlib

PLUGIN = "client_ed25519"
NONCE_BYTES = 32

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)


def _add(p: _Point, q: _Point) -> _Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _mul(s: int, p: _Point) -> _Point:
    q: _Point = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def _base() -> _Point:
    y = 4 * pow(5, _P - 2, _P) % _P
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    if x & 1:
        x = _P - x
    return x, y, 1, x * y % _P


_G = _base()


def _encode(p: _Point) -> bytes:
    zinv = pow(p[2], _P - 2, _P)
    x, y = p[0] * zinv % _P, p[1] * zinv % _P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _decode(b: bytes) -> _Point | None:
    """The point of a 32-byte encoding, None for bytes that encode none (RFC 8032 section 5.1.3)."""
    y = int.from_bytes(b, "little")
    sign_bit, y = y >> 255, y & ((1 << 255) - 1)
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if x2 == 0:
        if sign_bit:
            return None
        return 0, y, 1, 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    if (x * x - x2) % _P:
        return None
    if (x & 1) != sign_bit:
        x = _P - x
    return x, y, 1, x * y % _P


def _same(p: _Point, q: _Point) -> bool:
    return (p[0] * q[2] - q[0] * p[2]) % _P == 0 and (p[1] * q[2] - q[1] * p[2]) % _P == 0


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public`'s Ed25519 signature of `message` (RFC 8032 section 5.1.7)."""
    if len(public) != 32 or len(signature) != 64:
        return False
    a, r = _decode(public), _decode(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _L:
        return False
    k = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % _L
    return _same(_mul(s, _G), _add(r, _mul(k, a)))


def sign(secret: bytes, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of `message` with `secret` as the key seed (RFC 8032 section 5.1.6)."""
    h = hashlib.sha512(secret).digest()
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    public = _encode(_mul(a, _G))
    r = int.from_bytes(hashlib.sha512(h[32:] + message).digest(), "little") % _L
    big_r = _encode(_mul(r, _G))
    k = int.from_bytes(hashlib.sha512(big_r + public + message).digest(), "little") % _L
    return big_r + ((r + k * a) % _L).to_bytes(32, "little")


def public_key(secret: bytes) -> bytes:
    """The 32-byte public key of `secret` (what MariaDB stores, base64 without padding, as the account's
    authentication_string: `SELECT ed25519_password('...')`)."""
    h = hashlib.sha512(secret).digest()
    return _encode(_mul(int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254), _G))


def auth_response(password: str, nonce: bytes) -> bytes:
    """What a client sends for client_ed25519: the signature of the server's nonce with the password."""
    return sign(password.encode(), nonce[:NONCE_BYTES])
