"""The statistics of meta-evaluation, over arrays of scores: how well a metric's scores agree with human judgements,
per rated dimension, at three levels, with resampled intervals and tests of whether one metric agrees better than
another. Scoring a metric on a benchmark and reporting it is :mod:`hf_dialeval.evaluation.meta_evaluation`'s.

Levels (Deutsch et al. 2021, "A Statistical Analysis of Summarization Evaluation Metrics Using Resampling
Methods"): ``item`` correlates every item's scores; ``system`` correlates each system's mean score (a benchmark
that knows which system wrote each item); ``grouped`` correlates the candidates of each context among themselves and
averages (their "summary level": does the metric rank the replies to one context as people do?).

Resampling units for bootstrap intervals: ``items``; ``systems`` (every item of each drawn system); ``inputs``
(every item of each drawn context); ``both`` (the items of the drawn systems on the drawn contexts, Deutsch et al.'s
BOOT-BOTH). The paired permutation test swaps the two metrics' (standardised) scores item by item (their
PERM-BOTH), exactly over every swap when there are few items. The Williams (1959) test compares two dependent
correlations that share the human scores (as WMT does). Pairwise accuracy with tie calibration follows Deutsch et
al. (2023, "Ties Matter"): a pair of items counts as right when the metric orders it as people do, or ties it where
they tie it, and the metric's tie threshold is the one that maximises that accuracy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from hf_dialeval.data.benchmarks import CONTEXT_ID, SYSTEM
from hf_dialeval.data.model import DialogueValidationError

if TYPE_CHECKING:
    import datasets

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
PERMUTATIONS = 1000
#: The correlation levels, and the resampling units of bootstrap intervals.
LEVELS = ("item", "system", "grouped")
RESAMPLING_UNITS = ("items", "systems", "inputs", "both")
#: The correlation statistics.
METHODS = ("pearson", "spearman", "kendall")
#: The fewest candidates a context needs to enter the grouped correlation (two are always ordered ±1).
MIN_GROUP_SIZE = 3
#: The fewest systems a system-level correlation is computed over.
MIN_SYSTEMS = 3


def finite_or_none(value: float) -> float | None:
    # A constant score list has no correlation; JSON gets null rather than NaN.
    return float(value) if math.isfinite(value) else None


def correlate(metric_scores: Sequence[float], human_scores: Sequence[float | None],
              n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Pearson, Spearman and Kendall (with p-values), ``n`` and a percentile bootstrap 95% interval of
    Spearman (paired resampling, fixed seed). Items whose human score is ``None`` are left out."""
    if len(metric_scores) != len(human_scores):
        raise ValueError(f"{len(metric_scores)} metric scores for {len(human_scores)} human scores")
    pairs = [(m, h) for m, h in zip(metric_scores, human_scores) if h is not None]
    for m, _ in pairs:
        if not math.isfinite(m):
            raise ValueError(f"the metric produced a non-finite score ({m}); cannot correlate it")
    if len(pairs) < 3:
        raise DialogueValidationError(f"only {len(pairs)} items have a human score: at least 3 are needed to correlate; "
                                      "give a benchmark with more rated items")
    x = np.array([m for m, _ in pairs], dtype=float)
    y = np.array([h for _, h in pairs], dtype=float)
    pearson, spearman, kendall = stats.pearsonr(x, y), stats.spearmanr(x, y), stats.kendalltau(x, y)
    interval = stats.bootstrap(
        (x, y), lambda a, b: stats.spearmanr(a, b).statistic, paired=True, vectorized=False,
        n_resamples=n_resamples, confidence_level=0.95, method="percentile", rng=np.random.default_rng(seed),
    ).confidence_interval
    return {
        "pearson": finite_or_none(pearson.statistic), "pearson_p": finite_or_none(pearson.pvalue),
        "spearman": finite_or_none(spearman.statistic), "spearman_p": finite_or_none(spearman.pvalue),
        "kendall": finite_or_none(kendall.statistic), "kendall_p": finite_or_none(kendall.pvalue),
        "spearman_ci95": [finite_or_none(interval.low), finite_or_none(interval.high)],
        "n": len(pairs),
    }


def compare_spearman(first_scores: Sequence[float], second_scores: Sequence[float], human_scores: Sequence[float | None],
                     n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Is one metric (or setting) closer to people than another on the same items? The difference of their
    item-level Spearman correlations with ``human_scores`` (first − second) and its percentile bootstrap 95%
    interval, resampling items jointly for both (:func:`bootstrap_difference`). Items whose human score is ``None``
    are left out."""
    if not len(first_scores) == len(second_scores) == len(human_scores):
        raise ValueError(f"{len(first_scores)} and {len(second_scores)} metric scores for {len(human_scores)} human scores")
    items = RatedItems.of(human_scores, first_scores, second_scores)
    first, second = items.metrics
    return {"spearman_difference": items.correlation("item", 0) - items.correlation("item", 1),
            "ci95": bootstrap_difference(items, "item", n_resamples=n_resamples, seed=seed)["ci95"], "n": len(items),
            "items_scored_differently": int(np.sum(~np.isclose(first, second)))}


def _correlation(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """``method``'s coefficient, ``nan`` when it is undefined (fewer than 2 values, or one side constant)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    if method == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if method == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    if method == "kendall":
        return float(stats.kendalltau(x, y).statistic)
    raise ValueError(f"unknown correlation {method!r}; choose one of {METHODS}")


def _codes(labels: Sequence[Any] | None, size: int, name: str) -> np.ndarray | None:
    """Integer codes of per-item labels (systems, contexts); ``None`` when there are none."""
    if labels is None:
        return None
    if len(labels) != size:
        raise ValueError(f"{len(labels)} {name} for {size} items: give one per item")
    if any(label is None for label in labels):
        raise ValueError(f"an item has no {name[:-1]}: give every item one, or none")
    return np.unique(np.asarray([str(label) for label in labels]), return_inverse=True)[1]


def group_means(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The mean of ``values`` per group code, in code order."""
    return np.bincount(groups, weights=values) / np.bincount(groups)


def _within_group_ranks(values: np.ndarray, groups: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    # one global ranking of (group, value) keys, shifted back by the items of the groups before: average ranks
    # within each group, ties included
    keys = groups * (len(values) + 1) + stats.rankdata(values)
    starts = np.cumsum(sizes) - sizes
    return stats.rankdata(keys) - starts[groups]


def _usable_groups(metric: np.ndarray, human: np.ndarray, contexts: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group codes, group sizes, and which groups enter the grouped correlation: at least
    :data:`MIN_GROUP_SIZE` candidates, and neither the metric nor people giving them all one score."""
    groups = np.unique(contexts, return_inverse=True)[1]
    sizes = np.bincount(groups)
    lowest, highest = (np.full((2, len(sizes)), np.inf), np.full((2, len(sizes)), -np.inf))
    for side, values in enumerate((metric, human)):
        np.minimum.at(lowest[side], groups, values)
        np.maximum.at(highest[side], groups, values)
    return groups, sizes, (sizes >= MIN_GROUP_SIZE) & np.all(highest > lowest, axis=0)


def _grouped_correlation(metric: np.ndarray, human: np.ndarray, contexts: np.ndarray, method: str) -> float:
    """The mean over the usable contexts (:func:`_usable_groups`) of the correlation among their candidates.
    Pearson and Spearman vectorised over groups; Kendall one group at a time."""
    groups, sizes, usable = _usable_groups(metric, human, contexts)
    if not usable.any():
        return math.nan
    if method == "kendall":
        return float(np.mean([_correlation(metric[groups == g], human[groups == g], method)
                              for g in np.flatnonzero(usable)]))
    if method == "spearman":
        metric, human = _within_group_ranks(metric, groups, sizes), _within_group_ranks(human, groups, sizes)
    elif method != "pearson":
        raise ValueError(f"unknown correlation {method!r}; choose one of {METHODS}")
    x = metric - group_means(metric, groups)[groups]
    y = human - group_means(human, groups)[groups]
    covariance = np.bincount(groups, x * y)[usable]
    spread = np.sqrt(np.bincount(groups, x * x)[usable] * np.bincount(groups, y * y)[usable])
    return float(np.mean(np.clip(covariance / spread, -1.0, 1.0)))


def level_correlation(level: str, metric: np.ndarray, human: np.ndarray, systems: np.ndarray | None = None,
                      contexts: np.ndarray | None = None, method: str = "spearman") -> float:
    """The ``method`` correlation of ``metric`` with ``human`` at ``level`` (see the module docstring); ``systems`` /
    ``contexts`` are integer codes per item. ``nan`` when the level is undefined for these items."""
    if level == "item":
        return _correlation(metric, human, method)
    if level == "system":
        if systems is None:
            raise ValueError("the system level needs each item's system")
        present = np.unique(systems, return_inverse=True)[1]
        if present.max(initial=-1) + 1 < MIN_SYSTEMS:
            return math.nan
        return _correlation(group_means(metric, present), group_means(human, present), method)
    if level == "grouped":
        if contexts is None:
            raise ValueError("the grouped level needs each item's context")
        return _grouped_correlation(metric, human, contexts, method)
    raise ValueError(f"unknown level {level!r}; choose one of {LEVELS}")


@dataclass(frozen=True)
class RatedItems:
    """The items of a benchmark that people rated on one dimension: the human scores, any number of metrics'
    scores (same order), and each item's system and context as integer codes (``None`` when unknown)."""

    human: np.ndarray
    metrics: tuple[np.ndarray, ...]
    systems: np.ndarray | None
    contexts: np.ndarray | None

    @classmethod
    def of(cls, human_scores: Sequence[float | None], *metric_scores: Sequence[float],
           systems: Sequence[Any] | None = None, contexts: Sequence[Any] | None = None) -> RatedItems:
        """Keep the items whose human score is not ``None``; metric scores must be finite."""
        size = len(human_scores)
        for scores in metric_scores:
            if len(scores) != size:
                raise ValueError(f"{len(scores)} metric scores for {size} human scores")
            if not all(math.isfinite(score) for score in scores):
                raise ValueError("the metric produced a non-finite score; cannot correlate it")
        kept = np.array([h is not None for h in human_scores], dtype=bool)
        system_codes, context_codes = _codes(systems, size, "systems"), _codes(contexts, size, "contexts")
        return cls(np.asarray([h for h in human_scores if h is not None], dtype=float),
                   tuple(np.asarray(scores, dtype=float)[kept] for scores in metric_scores),
                   None if system_codes is None else system_codes[kept],
                   None if context_codes is None else context_codes[kept])

    @classmethod
    def from_benchmark(cls, dataset: datasets.Dataset, dimension: str, *metric_scores: Sequence[float]) -> RatedItems:
        """The items of a loaded benchmark rated on ``dimension``, with their systems when every item names one and
        their contexts (turn level)."""
        systems = dataset[SYSTEM] if SYSTEM in dataset.column_names else None
        if systems is not None and any(system is None for system in systems):
            systems = None
        contexts = dataset[CONTEXT_ID] if CONTEXT_ID in dataset.column_names else None
        if contexts is not None and any(context is None for context in contexts):
            contexts = None
        return cls.of(dataset[dimension], *metric_scores, systems=systems, contexts=contexts)

    def __len__(self) -> int:
        return len(self.human)

    def units(self, level: str, which: int = 0) -> int:
        """How many values metric ``which``'s correlation at ``level`` is over: items, systems, or the contexts
        that enter the grouped correlation."""
        if level == "item":
            return len(self)
        if level == "system":
            return len(np.unique(self.systems))
        return int(np.sum(_usable_groups(self.metrics[which], self.human, self.contexts)[2]))

    def levels(self) -> list[str]:
        """The levels these items allow: ``item`` always; ``system`` with at least :data:`MIN_SYSTEMS` systems;
        ``grouped`` when at least two contexts have :data:`MIN_GROUP_SIZE` candidates or more (with one, it would
        be the item level again)."""
        levels = ["item"]
        if self.systems is not None and len(np.unique(self.systems)) >= MIN_SYSTEMS:
            levels.append("system")
        if self.contexts is not None and np.sum(np.bincount(self.contexts) >= MIN_GROUP_SIZE) >= 2:
            levels.append("grouped")
        return levels

    def correlation(self, level: str, which: int = 0, method: str = "spearman") -> float:
        return level_correlation(level, self.metrics[which], self.human, self.systems, self.contexts, method)

    def subset(self, indices: np.ndarray, systems: np.ndarray | None, contexts: np.ndarray | None) -> RatedItems:
        return RatedItems(self.human[indices], tuple(m[indices] for m in self.metrics), systems, contexts)


def level_summary(items: RatedItems, which: int = 0, n_resamples: int = BOOTSTRAP_RESAMPLES,
                  seed: int = BOOTSTRAP_SEED, interval_methods: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Per level the items allow: Pearson, Spearman and Kendall of metric ``which``, the bootstrap interval of
    Spearman (:func:`bootstrap_interval`; none with ``n_resamples=0``), that of each of ``interval_methods`` too as
    ``<method>_ci95``, and the number of units (items, systems, contexts)."""
    summary = {}
    for level in items.levels():
        entry: dict[str, Any] = {method: finite_or_none(items.correlation(level, which, method)) for method in METHODS}
        entry["n"] = items.units(level, which)
        if n_resamples:
            entry.update(bootstrap_interval(items, level, which=which, n_resamples=n_resamples, seed=seed))
            for method in interval_methods:
                entry[f"{method}_ci95"] = bootstrap_interval(items, level, which=which, method=method,
                                                             n_resamples=n_resamples, seed=seed)["ci95"]
        summary[level] = entry
    return summary


def default_resampling(level: str, items: RatedItems) -> str:
    """The bootstrap unit for a level: items for ``item``; for ``system``, systems and contexts together when the
    systems answered the same contexts (a systems x contexts design such as USR's and GRADE's), else systems; for
    ``grouped``, contexts."""
    if level == "item":
        return "items"
    if level == "grouped":
        return "inputs"
    shared = (items.contexts is not None and items.systems is not None
              and len(np.unique(items.contexts)) < len(items))
    return "both" if shared else "systems"


def resample(items: RatedItems, unit: str, rng: np.random.Generator) -> RatedItems:
    """One bootstrap sample of ``items`` by ``unit`` (see the module docstring). A system or context drawn twice
    counts as two (its copies get new codes)."""
    size = len(items)
    if unit == "items":
        indices = rng.integers(0, size, size)
        return items.subset(indices, None if items.systems is None else items.systems[indices],
                            None if items.contexts is None else items.contexts[indices])
    if unit not in RESAMPLING_UNITS:
        raise ValueError(f"unknown resampling unit {unit!r}; choose one of {RESAMPLING_UNITS}")
    need_systems, need_contexts = unit in ("systems", "both"), unit in ("inputs", "both")
    if (need_systems and items.systems is None) or (need_contexts and items.contexts is None):
        raise ValueError(f"resampling {unit} needs each item's " + ("system" if need_systems else "context"))
    system_keys = items.systems if need_systems else np.zeros(size, dtype=int)
    context_keys = items.contexts if need_contexts else np.zeros(size, dtype=int)
    cells: dict[tuple[int, int], np.ndarray] = {}
    order = np.lexsort((context_keys, system_keys))
    keys = np.stack([system_keys[order], context_keys[order]], axis=1)
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    for members in np.split(order, bounds):
        cells[(int(system_keys[members[0]]), int(context_keys[members[0]]))] = members
    drawn_systems = rng.choice(np.unique(system_keys), len(np.unique(system_keys)))
    drawn_contexts = rng.choice(np.unique(context_keys), len(np.unique(context_keys)))
    chosen, system_codes, context_codes = [], [], []
    for (s, system), (c, context) in itertools.product(enumerate(drawn_systems), enumerate(drawn_contexts)):
        members = cells.get((int(system), int(context)))
        if members is None:
            continue
        chosen.append(members)
        system_codes.append(np.full(len(members), s) if need_systems else
                            (None if items.systems is None else items.systems[members]))
        context_codes.append(np.full(len(members), c) if need_contexts else
                             (None if items.contexts is None else items.contexts[members]))
    if not chosen:  # an incomplete design: no drawn system answered a drawn context (the statistic is undefined)
        empty = np.zeros(0, dtype=int)
        return items.subset(empty, None if items.systems is None else empty, None if items.contexts is None else empty)
    indices = np.concatenate(chosen)
    systems = None if system_codes[0] is None else np.concatenate(system_codes)
    contexts = None if context_codes[0] is None else np.concatenate(context_codes)
    return items.subset(indices, systems, contexts)


def _bootstrap(items: RatedItems, statistic: Callable[[RatedItems], float], unit: str, n_resamples: int, seed: int,
               confidence: float) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    values = np.array([statistic(resample(items, unit, rng)) for _ in range(n_resamples)])
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return {"ci95": None, "resampling": unit, "resamples": 0}
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return {"ci95": [float(low), float(high)], "resampling": unit, "resamples": int(len(finite))}


def bootstrap_interval(items: RatedItems, level: str, unit: str | None = None, which: int = 0,
                       method: str = "spearman", n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                       confidence: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap interval of metric ``which``'s correlation at ``level``, resampling ``unit`` (default
    :func:`default_resampling`): ``{"ci95": [low, high], "resampling": unit, "resamples": count}``, counting only
    the resamples where the correlation is defined (a system-level sample can draw one system only)."""
    unit = unit or default_resampling(level, items)
    return _bootstrap(items, lambda sample: sample.correlation(level, which, method), unit, n_resamples, seed,
                      confidence)


def bootstrap_difference(items: RatedItems, level: str, unit: str | None = None, method: str = "spearman",
                         n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                         confidence: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap interval of ``r(metric 0) − r(metric 1)`` at ``level``, both from the same resamples."""
    unit = unit or default_resampling(level, items)
    return _bootstrap(items, lambda sample: sample.correlation(level, 0, method) - sample.correlation(level, 1, method),
                      unit, n_resamples, seed, confidence)


def _standardised(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / (spread if spread > 0 else 1.0)


def permutation_test(items: RatedItems, level: str, method: str = "spearman", alternative: str = "two-sided",
                     n_permutations: int = PERMUTATIONS, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Paired permutation test of ``r(metric 0) − r(metric 1)`` at ``level``: under the null hypothesis the two
    metrics are exchangeable, so each item's two scores (standardised, so that the metrics share a scale; no level's
    correlation changes under it) are swapped at random. Every one of the 2^n swaps is enumerated when that is no
    more than ``n_permutations``; otherwise ``p = (1 + hits) / (1 + n_permutations)``. ``alternative``:
    ``"two-sided"`` (|Δ| at least the observed) or ``"greater"`` (metric 0 better)."""
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater', not {alternative!r}")
    first, second = _standardised(items.metrics[0]), _standardised(items.metrics[1])

    def difference(swap: np.ndarray) -> float:
        a, b = np.where(swap, second, first), np.where(swap, first, second)
        return (level_correlation(level, a, items.human, items.systems, items.contexts, method)
                - level_correlation(level, b, items.human, items.systems, items.contexts, method))

    size = len(items)
    observed = difference(np.zeros(size, dtype=bool))
    if not math.isfinite(observed):
        return {"difference": None, "p": None, "permutations": 0, "exact": False, "alternative": alternative}
    exact = size <= 30 and 2 ** size <= n_permutations
    if exact:
        swaps = (np.array(bits, dtype=bool) for bits in itertools.product((False, True), repeat=size))
    else:
        rng = np.random.default_rng(seed)
        swaps = (rng.random(size) < 0.5 for _ in range(n_permutations))
    differences = np.array([difference(swap) for swap in swaps])
    differences = differences[np.isfinite(differences)]
    tolerance = 1e-12
    if alternative == "greater":
        hits = int(np.sum(differences >= observed - tolerance))
    else:
        hits = int(np.sum(np.abs(differences) >= abs(observed) - tolerance))
    p = hits / len(differences) if exact else (1 + hits) / (1 + len(differences))
    return {"difference": observed, "p": float(p), "permutations": int(len(differences)), "exact": exact,
            "alternative": alternative}


def williams_test(r12: float, r13: float, r23: float, n: int) -> dict[str, float]:
    """Williams' (1959) test that variable 2 correlates more with variable 1 than variable 3 does, all three
    measured on the same ``n`` items (1: people, 2 and 3: two metrics; ``r23`` the metrics with each other), as in
    Graham & Baldwin (2014) and WMT: ``t`` with ``n − 3`` degrees of freedom, the one-sided ``p`` (r12 > r13) and the
    two-sided one."""
    if n <= 3:
        raise ValueError(f"the Williams test needs more than 3 items, not {n}")
    for name, value in (("r12", r12), ("r13", r13), ("r23", r23)):
        if not -1 <= value <= 1:
            raise ValueError(f"{name} = {value} is not a correlation")
    determinant = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    denominator = math.sqrt(2 * (n - 1) / (n - 3) * determinant + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3)
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / denominator
    one_sided = float(stats.t.sf(t, n - 3))
    return {"t": float(t), "df": n - 3, "p": one_sided, "p_two_sided": float(2 * min(one_sided, 1 - one_sided))}


def williams_compare(items: RatedItems, level: str = "item", method: str = "pearson") -> dict[str, float] | None:
    """:func:`williams_test` of metric 0 against metric 1 at ``level`` (``item``, or ``system`` over the system
    means), Pearson or Spearman (Pearson of ranks); ``None`` where there are 3 values or fewer."""
    if method not in ("pearson", "spearman"):
        raise ValueError("the Williams test compares Pearson or Spearman correlations")
    if level == "item":
        values = [items.human, *items.metrics[:2]]
    elif level == "system":
        codes = np.unique(items.systems, return_inverse=True)[1]
        values = [group_means(v, codes) for v in (items.human, *items.metrics[:2])]
    else:
        raise ValueError("the Williams test applies at the item and system levels")
    if len(values[0]) <= 3:
        return None
    if method == "spearman":
        values = [stats.rankdata(v) for v in values]
    r12, r13, r23 = (_correlation(values[i], values[j], "pearson") for i, j in ((0, 1), (0, 2), (1, 2)))
    if not all(math.isfinite(r) for r in (r12, r13, r23)):
        return None
    return williams_test(r12, r13, r23, len(values[0]))


def _pairs(values: np.ndarray) -> np.ndarray:
    first, second = np.triu_indices(len(values), k=1)
    return values[first] - values[second]


def pairwise_accuracy(metric: Sequence[float], human: Sequence[float], epsilon: float = 0.0) -> float:
    """The share of item pairs the metric gets right: it orders them as people do, or ties them (scores within
    ``epsilon``) where people gave equal scores (Deutsch et al. 2023's ``acc_eq``)."""
    metric_differences, human_differences = _pairs(np.asarray(metric, float)), _pairs(np.asarray(human, float))
    if len(metric_differences) == 0:
        raise ValueError("pairwise accuracy needs at least 2 items")
    metric_ties = np.abs(metric_differences) <= epsilon
    human_ties = human_differences == 0
    right = np.where(metric_ties, human_ties,
                     ~human_ties & (np.sign(metric_differences) == np.sign(human_differences)))
    return float(right.mean())


def tie_calibrated_accuracy(metric: Sequence[float], human: Sequence[float]) -> dict[str, float]:
    """Pairwise accuracy at the tie threshold that maximises it (Deutsch et al. 2023's tie calibration): every
    distinct |score difference| of a pair is a candidate (and 0); the smallest best threshold wins. Returns
    ``{"accuracy", "epsilon", "accuracy_at_epsilon_0"}``."""
    metric_differences, human_differences = _pairs(np.asarray(metric, float)), _pairs(np.asarray(human, float))
    if len(metric_differences) == 0:
        raise ValueError("pairwise accuracy needs at least 2 items")
    gaps = np.abs(metric_differences)
    order = np.argsort(gaps, kind="stable")
    gaps = gaps[order]
    human_ties = (human_differences == 0)[order]
    ordered_right = (~human_ties & (np.sign(metric_differences[order]) == np.sign(human_differences[order])))
    # with the k smallest gaps tied: right = ties among them that people tie + ordered right among the rest
    tied_right = np.concatenate([[0], np.cumsum(human_ties)])
    ordered_right_after = ordered_right.sum() - np.concatenate([[0], np.cumsum(ordered_right)])
    right = tied_right + ordered_right_after
    # a threshold ties all pairs with an equal gap at once: only cuts after the last of equal gaps are reachable
    cuts = np.concatenate([np.flatnonzero(np.diff(gaps) > 0) + 1, [len(gaps)]])
    cuts = np.concatenate([[0], cuts]) if gaps[0] > 0 else cuts
    best = cuts[np.argmax(right[cuts])]
    epsilon = 0.0 if best == 0 else float(gaps[best - 1])
    return {"accuracy": float(right[best] / len(gaps)), "epsilon": epsilon,
            "accuracy_at_epsilon_0": pairwise_accuracy(metric, human, 0.0)}
