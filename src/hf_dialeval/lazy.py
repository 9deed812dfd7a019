"""Lazy package attributes (PEP 562), as transformers' own packages do: ``import hf_dialeval`` and the CLI
start without importing torch; a public name imports its module on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose public name ``n`` lives in the module ``exports[n]``
    (relative to ``package`` when it starts with a dot, as in an import statement)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    def __dir__() -> list[str]:
        return sorted({*exports, *importlib.import_module(package).__dict__})

    return __getattr__, __dir__
