"""Freed memory handed back to the system (:mod:`hf_dialeval.freed_memory`)."""

from __future__ import annotations

import gc
import os
import sys

import pytest

from hf_dialeval.freed_memory import trim_freed_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
                                reason="glibc's allocator only")


def resident_mb() -> float:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_trimming_hands_back_pages_freed_below_a_block_still_held() -> None:
    blocks = [bytearray(100_000) for _ in range(2_000)]  # 200 MB of heap blocks, each below glibc's mmap threshold
    held = bytearray(100_000)  # allocated above them: freeing them cannot shrink the heap from its top
    del blocks
    gc.collect()
    freed = resident_mb()
    trim_freed_memory()
    assert freed - resident_mb() > 150
    assert len(held) == 100_000
