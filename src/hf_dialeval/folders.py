"""Writing a folder whole: an export (what ``push_to_hub.py`` uploads) appears complete or not at all, and replaces
the earlier one in one step. A run that trains owns its folder instead (:mod:`hf_dialeval.output_folder`)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing_folder(folder: Path) -> Iterator[Path]:
    """A scratch folder that replaces ``folder`` whole once the block has filled it: an interrupted run leaves the
    earlier folder (or none), never a half-written one, and no file of an earlier run stays beside the new ones."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}.") as scratch:
        built = Path(scratch, folder.name)
        built.mkdir()
        yield built
        if folder.exists():
            os.replace(folder, Path(scratch, "replaced"))  # removed with the scratch folder
        os.replace(built, folder)
