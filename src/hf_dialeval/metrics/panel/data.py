"""The panel's training data: rated sets with their members' scores (:class:`RatedScores`), and the pairs of items
people rated differently, drawn within each set (:func:`preference_pairs`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import datasets
import numpy as np


@dataclass
class RatedScores:
    """A rated set: per item the members' raw scores in the panel's feature order, and the human rating."""

    name: str
    features: list[list[float]]
    ratings: list[float]

    def __post_init__(self) -> None:
        if len(self.features) != len(self.ratings):
            raise ValueError(f"{self.name}: {len(self.features)} scored items for {len(self.ratings)} ratings")


def preference_pairs(sets: Sequence[RatedScores], pairs_per_set: int, seed: int) -> datasets.Dataset:
    """Pairs of items of the same set rated differently, the higher-rated one ``preferred``: every such pair of a set
    that has at most ``pairs_per_set`` of them, else ``pairs_per_set`` drawn at random (with ``seed``). Each pair's
    ``weight`` is one over its set's pair count, so that every set weighs the same in the loss."""
    rng = np.random.default_rng(seed)
    columns: dict[str, list] = {"preferred": [], "other": [], "weight": [], "set": []}
    for rated in sets:
        ratings = np.asarray(rated.ratings, dtype=float)
        features = np.asarray(rated.features, dtype=np.float32)
        first, second = np.triu_indices(len(ratings), k=1)
        differ = ratings[first] != ratings[second]
        first, second = first[differ], second[differ]
        if len(first) > pairs_per_set:
            chosen = rng.choice(len(first), size=pairs_per_set, replace=False)
            first, second = first[chosen], second[chosen]
        if not len(first):
            continue
        higher = ratings[first] > ratings[second]
        preferred, other = np.where(higher, first, second), np.where(higher, second, first)
        columns["preferred"].extend(features[preferred].tolist())
        columns["other"].extend(features[other].tolist())
        columns["weight"].extend([1.0 / len(first)] * len(first))
        columns["set"].extend([rated.name] * len(first))
    if not columns["weight"]:
        raise ValueError("no two items are rated differently: the ratings give nothing to rank")
    return datasets.Dataset.from_dict(columns)


def finite_column(sets: Sequence[RatedScores], index: int) -> list[float]:
    """Every finite value of feature ``index`` over the items of ``sets`` (what its CDF is fitted on)."""
    return [row[index] for rated in sets for row in rated.features if math.isfinite(row[index])]
