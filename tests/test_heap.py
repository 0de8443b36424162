"""server/heap.py: glibc accepts the relay's malloc settings (a value it refuses, such as an mmap threshold above
its 32 MiB maximum, would leave the relay paying page faults per read without a word)."""

from __future__ import annotations

import platform

import pytest
from binlogd.server.heap import keep_freed_buffers


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_accepts_the_settings() -> None:
    assert keep_freed_buffers() is True
