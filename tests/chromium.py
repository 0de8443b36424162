"""Headless Chromium (Debian's /usr/bin/chromium, `make test` installs it) for looking at generated pages: a
screenshot and the DOM after the page's scripts ran, with no driver. The flags keep it off this closed network
(docs: /work/.library/env/machines/python.md) and give a PNG of exactly the window size."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--virtual-time-budget=15000")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              timeout=timeout, check=False)


def screenshot(page: Path, png: Path, width: int, height: int, timeout: float = 180) -> None:
    r = _run([f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri()], timeout)
    assert png.is_file(), f"chromium made no screenshot (exit {r.returncode}): {r.stderr.decode()[-2000:]}"


def dump_dom(page: Path, timeout: float = 180) -> str:
    r = _run(["--window-size=1280,1000", "--dump-dom", page.resolve().as_uri()], timeout)
    assert r.returncode == 0 and r.stdout, f"chromium --dump-dom failed ({r.returncode}): {r.stderr.decode()[-2000:]}"
    return r.stdout.decode()


def _unfilter(raw: bytes, width: int, height: int, bpp: int) -> np.ndarray:
    """PNG scanline filters undone (RFC 2083 6.6): Sub and Up vectorised, Average and Paeth per byte."""
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if ftype == 0:
            cur = line
        elif ftype == 1:
            cur = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif ftype == 2:
            cur = (line + prev) % 256
        else:
            cur_l, p, ln = [0] * stride, prev.tolist(), line.tolist()
            for i in range(stride):
                a = cur_l[i - bpp] if i >= bpp else 0
                b = p[i]
                if ftype == 3:
                    cur_l[i] = (ln[i] + (a + b) // 2) & 255
                else:
                    c = p[i - bpp] if i >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    cur_l[i] = (ln[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = np.array(cur_l, dtype=np.int64)
        out[y] = cur
        prev = cur
    return out


def read_png(path: Path) -> np.ndarray:
    """An 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) as a (height, width, channels) array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    p, idat, hdr = 8, [], None
    while p < len(data):
        (n,), kind = struct.unpack_from(">I", data, p), data[p + 4 : p + 8]
        body = data[p + 8 : p + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack_from(">I", data, p + 8 + n)[0], f"{path}: bad {kind} CRC"
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        p += 12 + n
    assert hdr is not None, f"{path}: no IHDR"
    width, height, depth, color, _, _, interlace = hdr
    assert depth == 8 and color in (2, 6) and interlace == 0, f"{path}: unexpected PNG format {hdr}"
    bpp = 3 if color == 2 else 4
    return _unfilter(zlib.decompress(b"".join(idat)), width, height, bpp).reshape(height, width, bpp)
