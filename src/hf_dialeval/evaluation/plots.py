"""Plots people read: metric scores against human ratings, and the leaderboard heatmap."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hf_dialeval.evaluation.meta_evaluation import format_number
from hf_dialeval.evaluation.statistics import correlate
from hf_dialeval.inference.score_output import OVERALL

if TYPE_CHECKING:
    import datasets
    from matplotlib.figure import Figure

# A quality a metric dimension can measure -> the human-rated benchmark columns that rate it. Kept explicit
# (no fuzzy matching) so a plot never pairs a score with a column that rates something else.
HUMAN_COLUMNS: dict[str, tuple[str, ...]] = {
    "coherence": ("Coherent", "Coherence", "Maintains Context", "Relevant"),
    "likability": ("Likeable",),
    "topic_depth": ("Depth",),
    "fluency": ("Fluency", "Fluent"),
    "consistency": ("Consistent",),
}

# Ratings with at most this many distinct values are means of a few annotators on a small scale: their points
# stack on vertical lines unless spread sideways.
MAX_DISCRETE_VALUES = 12
JITTER_FRACTION = 0.4

HEATMAP_FOOTNOTE = "bold: best per column; *: not significantly worse than the best (paired permutation test, p ≥ 0.05)"


def _pyplot() -> Any:
    """pyplot on the Agg backend: plots are written to files, often on machines without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def matching_dimension(metric_dimensions: Sequence[str], human_dimension: str) -> str | None:
    """The metric dimension that measures the quality ``human_dimension`` rates, or None when none does."""
    column = human_dimension.casefold()
    for quality, columns in HUMAN_COLUMNS.items():
        if column not in (c.casefold() for c in columns):
            continue
        for dimension in metric_dimensions:
            name = dimension.casefold()
            if name == quality or name.endswith(f"_{quality}"):
                return dimension
    return None


def _jitter(ratings: np.ndarray, seed: int) -> np.ndarray | None:
    """Horizontal offsets spreading discrete ratings, or None when the ratings are (nearly) continuous."""
    distinct = np.unique(ratings)
    # One distinct value has no gap to scale by; the fitted line and ρ are undefined there anyway.
    if not 2 <= len(distinct) <= MAX_DISCRETE_VALUES:
        return None
    width = JITTER_FRACTION * float(np.min(np.diff(distinct)))
    return np.random.default_rng(seed).uniform(-width, width, size=len(ratings))


def scatter_figure(result: Mapping[str, Any], scores: Mapping[str, Sequence[float]],
                   human_scores: Sequence[float | None], dimension: str, seed: int = 0) -> Figure:
    """The scatter of one human dimension (not saved): the metric's matching score, else its overall score,
    against the human rating, with a least-squares line and the Spearman ρ of what is plotted in the title."""
    plt = _pyplot()
    score_name = matching_dimension([name for name in scores if name != OVERALL], dimension) or OVERALL
    plotted = scores[score_name]
    # The results record holds ρ of the overall score only; a matched dimension's ρ is computed here so the
    # title always describes the points shown.
    r = result["dimensions"][dimension] if score_name == OVERALL else correlate(plotted, human_scores)
    kept = [i for i, h in enumerate(human_scores) if h is not None]
    x = np.array([human_scores[i] for i in kept], dtype=float)
    y = np.array([plotted[i] for i in kept], dtype=float)
    offsets = _jitter(x, seed)

    figure, axes = plt.subplots(figsize=(5, 4.2))
    axes.scatter(x if offsets is None else x + offsets, y, s=12, alpha=0.6)
    if len(np.unique(x)) > 1:
        slope, intercept = np.polyfit(x, y, 1)
        ends = np.array([x.min(), x.max()])
        axes.plot(ends, slope * ends + intercept, color="tab:red", linewidth=1.2)
    interval = "" if r["spearman"] is None else " [{}, {}]".format(*(format_number(v, 2)
                                                                    for v in r["spearman_ci95"]))
    axes.set_title(f"{result['benchmark']} / {dimension}: ρ = {format_number(r['spearman'])}{interval} (n = {r['n']})",
                   fontsize=9, wrap=True)  # benchmark paths can be long
    axes.set_xlabel(f"mean human rating: {dimension}" + ("" if offsets is None else " (jittered)"))
    # the record's correlations are of its "score" (overall unless the run chose a dimension)
    axes.set_ylabel(f"{result['metric']} {result.get('score', OVERALL) if score_name == OVERALL else score_name}")
    figure.tight_layout()
    return figure


def plot_scatter(result: Mapping[str, Any], scores: Mapping[str, Sequence[float]], dataset: datasets.Dataset,
                 out_dir: str | os.PathLike, seed: int = 0) -> list[Path]:
    """One PNG per human dimension of ``result`` (see :func:`scatter_figure`); returns the written paths."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for dimension in result["dimensions"]:
        figure = scatter_figure(result, scores, list(dataset[dimension]), dimension, seed=seed)
        stem = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{result['metric']}_{Path(result['benchmark']).name}_{dimension}")
        path = out / f"{stem}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def heatmap_figure(record: Mapping[str, Any]) -> Figure:
    """The leaderboard as a metrics × benchmarks heatmap of Spearman ρ (not saved)."""
    plt = _pyplot()
    metrics, benchmarks = record["metrics"], record["benchmarks"]
    cells = [[record["cells"].get(metric, {}).get(b["name"]) for b in benchmarks] for metric in metrics]
    values = np.ma.masked_invalid(np.array(
        [[np.nan if c is None or c["spearman"] is None else c["spearman"] for c in row] for row in cells], dtype=float))

    figure, axes = plt.subplots(figsize=(max(6.5, 2.5 + 1.1 * len(benchmarks)), 2.2 + 0.45 * len(metrics)))
    colormap = plt.get_cmap("RdBu").with_extremes(bad="lightgrey")
    image = axes.imshow(values, cmap=colormap, vmin=-1.0, vmax=1.0, aspect="auto")
    figure.colorbar(image, ax=axes, label="Spearman ρ")
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            rho = cell["spearman"]
            # The best cell is already bold; a star on it would say nothing.
            star = "*" if cell["tied_with_best"] and not cell["best"] else ""
            text = "n/a" if rho is None else f"{rho:.2f}{star}"
            # RdBu is dark at both ends and pale in the middle.
            colour = "white" if rho is not None and abs(rho) > 0.5 else "black"
            axes.text(j, i, text, ha="center", va="center", fontsize=8, color=colour,
                      fontweight="bold" if cell["best"] else "normal")
    axes.set_xticks(range(len(benchmarks)), [f"{b['name']}\n({b['dimension']})" for b in benchmarks],
                    rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    axes.set_yticks(range(len(metrics)), metrics, fontsize=8)
    # The minimum width keeps the footnote on one line.
    figure.text(0.01, 0.01, HEATMAP_FOOTNOTE, fontsize=7, ha="left", va="bottom")
    # Leave room at the bottom for the footnote.
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return figure


def plot_leaderboard_heatmap(record: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write :func:`heatmap_figure` of the leaderboard ``record`` to ``path`` (PNG); returns the path."""
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure = heatmap_figure(record)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
