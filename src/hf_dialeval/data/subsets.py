"""A dataset's first rows: how a run or a study limits what it reads (``--max-train-items`` and the like)."""

from __future__ import annotations

import datasets


def limited(dataset: datasets.Dataset, count: int | None) -> datasets.Dataset:
    """The first ``count`` rows of ``dataset`` (all of them when it has fewer, or when ``count`` is ``None``)."""
    if count is None:
        return dataset
    return dataset.select(range(min(count, len(dataset))))
