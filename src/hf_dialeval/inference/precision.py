"""What the CPU offers for lower precision. Where the CPU has no bf16 instructions torch emulates bf16, and scoring
under bf16 autocast ran 2.7-3.6x slower than fp32 (an avx512f CPU without them,
``benchmarks/scale/results/cpu-without-bf16/``). Torch-free, so the command line can import it."""

from __future__ import annotations

import functools
from pathlib import Path

from hf_dialeval.errors import OptionError

#: The CPU features (as ``/proc/cpuinfo`` names them) that compute bf16 natively: x86's AVX-512 BF16 and AMX, and
#: Arm's BF16 extension.
BF16_INSTRUCTIONS = ("avx512_bf16", "amx_bf16", "amx_tile", "bf16")


#: The precisions a model metric computes in (``--dtype``, ``dtype=``): short name -> the torch dtype's name.
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def precision_name(dtype: object) -> str:
    """The short name of a precision given as a short name (``bf16``), a dtype name (``bfloat16``) or a torch dtype;
    anything else is a one-line :class:`~hf_dialeval.errors.OptionError` naming the choices (checked before any model loads)."""
    text = str(dtype).removeprefix("torch.")
    for name, dtype_name in PRECISIONS.items():
        if text in (name, dtype_name):
            return name
    raise OptionError(f"dtype {dtype!r} is not a precision a metric computes in: use one of {list(PRECISIONS)}")


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
