"""What the CPU offers for lower precision. Where the CPU has no bf16 instructions torch emulates bf16, and scoring
under bf16 autocast ran 2.7-3.6x slower than fp32 (an avx512f CPU without them,
``benchmarks/scale/results/cpu-without-bf16/``). Torch-free, so the command line can import it."""

from __future__ import annotations

import functools
from pathlib import Path

#: The CPU features (as ``/proc/cpuinfo`` names them) that compute bf16 natively: x86's AVX-512 BF16 and AMX, and
#: Arm's BF16 extension.
BF16_INSTRUCTIONS = ("avx512_bf16", "amx_bf16", "amx_tile", "bf16")


class SlowPrecisionWarning(UserWarning):
    """A precision asked for where it runs slower than fp32: bf16 on a CPU without bf16 instructions."""


@functools.lru_cache(maxsize=1)
def cpu_bf16_instructions() -> tuple[str, ...] | None:
    """The bf16 instructions this machine's CPU reports in ``/proc/cpuinfo`` (empty: none); ``None`` where there is
    no ``/proc/cpuinfo`` to read (not Linux), so nothing is known."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return None
    flags = set(cpuinfo.read_text(encoding="utf-8", errors="replace").split())
    return tuple(name for name in BF16_INSTRUCTIONS if name in flags)
