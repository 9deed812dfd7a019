"""The panel's training data: rated sets with their members' scores (:class:`RatedScores`), the pairs of items
people rated differently, drawn within each set (:func:`preference_pairs`), and the weights the ranking loss starts
from (:func:`correlation_weights`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import datasets
import numpy as np
from scipy import stats


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


#: The share of the total a score that does not correlate with the ratings keeps: a softmax weight cannot be 0.
NO_WEIGHT = 1e-6


def correlation_weights(sets: Sequence[RatedScores]) -> list[float]:
    """Each feature's weight in proportion to its Spearman with the ratings, averaged over ``sets`` (MME-CRS's
    correlation re-scaling; the items where the feature is finite; a set where it is constant counts 0), a negative
    mean counting as none (:data:`NO_WEIGHT`); equal weights where no feature correlates positively."""
    count = len(sets[0].features[0])
    correlations = []
    for index in range(count):
        per_set = []
        for rated in sets:
            values = np.asarray([row[index] for row in rated.features], dtype=float)
            finite = np.isfinite(values)
            ratings = np.asarray(rated.ratings, dtype=float)[finite]
            constant = finite.sum() < 2 or np.ptp(values[finite]) == 0 or np.ptp(ratings) == 0
            per_set.append(0.0 if constant else float(stats.spearmanr(values[finite], ratings).statistic))
        correlations.append(max(float(np.mean(per_set)), 0.0))
    total = sum(correlations)
    if total == 0:
        return [1.0 / count] * count
    return [max(correlation / total, NO_WEIGHT) for correlation in correlations]
