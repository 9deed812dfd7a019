"""Where the corpora and human-judgement benchmarks live (they are never shipped with the package)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from hf_dialeval.errors import PathError

DATA_DIR_ENV = "HF_DIALEVAL_DATA_DIR"

# A source checkout sits beside ../shared/data; both the working directory and the checkout are tried.
_SOURCE_ROOT = Path(__file__).resolve().parents[3]  # src/hf_dialeval/data/paths.py -> the checkout
_CANDIDATES = (Path("shared/data"), Path("../shared/data"))


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$HF_DIALEVAL_DATA_DIR``, else ``../shared/data``
    next to the working directory or the source checkout. Raises :class:`~hf_dialeval.errors.PathError` saying how to
    set it."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise PathError(
                f"data directory {str(path)!r} does not exist: point --data-dir (or ${DATA_DIR_ENV}) at the folder "
                "that holds benchmarks/ and corpora/"
            )
        return path
    for base in (Path.cwd(), _SOURCE_ROOT):
        for candidate in _CANDIDATES:
            if (base / candidate / "benchmarks").is_dir():
                return (base / candidate).resolve()
    raise PathError(
        f"no data directory found: pass --data-dir (data_dir=...) or set ${DATA_DIR_ENV} to the folder that "
        "holds benchmarks/ and corpora/"
    )


def find_data_dir() -> Path | None:
    """The data directory as :func:`resolve_data_dir` finds it, or ``None`` when there is none."""
    try:
        return resolve_data_dir()
    except PathError:
        return None


@contextlib.contextmanager
def data_files() -> Iterator[None]:
    """Inside (or in a loader it decorates), a file of a corpus or benchmark missing from the data directory fails
    as a :class:`~hf_dialeval.errors.PathError` naming it: the data directory is the user's."""
    try:
        yield
    except FileNotFoundError as missing:
        raise PathError(f"{missing.filename} does not exist: point --data-dir (or ${DATA_DIR_ENV}) at the folder that "
                        "holds benchmarks/ and corpora/ as released") from None
