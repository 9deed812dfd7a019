"""Rows already read and checked, handed to the readers under a name instead of a file.

``hf-dialeval adapt`` reads the user's data once, holds a share out, and runs each stage (a train command, in this
process) on the rest: the stage is given ``--ratings NAME`` or ``--dialogues NAME``, and
:func:`~hf_dialeval.data.ratings.load_ratings` and :func:`~hf_dialeval.data.dialogues.load_dialogues` return the rows
named so (:func:`rows_named`) rather than reading a file, so that nothing is written again or read twice, and every
record and error names the data as the user knows it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datasets

_NAMED: ContextVar[Mapping[str, datasets.Dataset]] = ContextVar("hf_dialeval_named_rows", default={})


@contextlib.contextmanager
def rows_named(rows: Mapping[str, datasets.Dataset]) -> Iterator[None]:
    """Within the block, each name of ``rows`` read as a source is those rows (already in the data model's fields)."""
    token = _NAMED.set({**_NAMED.get(), **rows})
    try:
        yield
    finally:
        _NAMED.reset(token)


def named_rows(source: str | os.PathLike) -> datasets.Dataset | None:
    """The rows named ``source`` in the current :func:`rows_named` block, if any."""
    return _NAMED.get().get(os.fspath(source))
