"""``hf-dialeval compare``: does metric A agree with people better than metric B on the same benchmark?

At every level the benchmark allows (item; system where it knows its systems; grouped by context at turn level):
both correlations with their bootstrap intervals, the difference A − B with its bootstrap interval (the same
resamples for both), the paired permutation test's two-sided p-value and, at the item and system levels, the
Williams test's (on Spearman: Pearson of ranks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.benchmarks import human_dimensions
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.evaluation.meta_evaluation import format_number
from hf_dialeval.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    PERMUTATIONS,
    RatedItems,
    bootstrap_difference,
    bootstrap_interval,
    finite_or_none,
    permutation_test,
    williams_compare,
)

if TYPE_CHECKING:
    import datasets


def compare_scores(first: Sequence[float], second: Sequence[float], dataset: datasets.Dataset,
                   dimensions: Sequence[str] | None = None, n_resamples: int = BOOTSTRAP_RESAMPLES,
                   permutations: int = PERMUTATIONS, seed: int = BOOTSTRAP_SEED) -> dict[str, dict[str, Any]]:
    """Per human dimension (default: all of the benchmark's) and level: the comparison of two metrics' scores of
    ``dataset``'s items (see the module docstring)."""
    dimensions = list(dimensions) if dimensions else human_dimensions(dataset)
    unknown = [d for d in dimensions if d not in human_dimensions(dataset)]
    if unknown:
        raise UnknownNameError(f"the benchmark has no rating {unknown[0]!r}; it rates {human_dimensions(dataset)}")
    comparison: dict[str, dict[str, Any]] = {}
    for dimension in dimensions:
        items = RatedItems.from_benchmark(dataset, dimension, first, second)
        levels = {}
        for level in items.levels():
            entry: dict[str, Any] = {"n": items.units(level)}
            for which, side in enumerate(("first", "second")):
                interval = bootstrap_interval(items, level, which=which, n_resamples=n_resamples, seed=seed)
                entry[side] = {"spearman": finite_or_none(items.correlation(level, which)), "ci95": interval["ci95"]}
            difference = bootstrap_difference(items, level, n_resamples=n_resamples, seed=seed)
            test = permutation_test(items, level, n_permutations=permutations, seed=seed)
            entry.update(difference=test["difference"], difference_ci95=difference["ci95"],
                         resampling=difference["resampling"], permutation_p=test["p"])
            if level in ("item", "system"):
                williams = williams_compare(items, level, method="spearman")
                entry["williams"] = williams
            levels[level] = entry
        comparison[dimension] = levels
    return comparison


def _interval(interval: Sequence[float] | None) -> str:
    return "" if not interval else f" [{interval[0]:+.2f}, {interval[1]:+.2f}]"


def format_comparison(comparison: Mapping[str, Mapping[str, Any]], first: str, second: str, benchmark: str) -> str:
    """The comparison as markdown, one table per human dimension."""
    sections = []
    for dimension, levels in comparison.items():
        lines = [f"**{first}** vs **{second}** on **{benchmark}**, {dimension} (Spearman)", "",
                 f"| level | n | {first} | {second} | difference | permutation p | Williams p (one-sided) |",
                 "|---|---|---|---|---|---|---|"]
        for level, entry in levels.items():
            williams = entry.get("williams")
            lines.append(
                f"| {level} | {entry['n']} | {format_number(entry['first']['spearman'])}{_interval(entry['first']['ci95'])} "
                f"| {format_number(entry['second']['spearman'])}{_interval(entry['second']['ci95'])} "
                f"| {format_number(entry['difference'])}{_interval(entry['difference_ci95'])} "
                f"| {'n/a' if entry['permutation_p'] is None else format(entry['permutation_p'], '.3g')} "
                f"| {'—' if williams is None else format(williams['p'], '.3g')} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)
