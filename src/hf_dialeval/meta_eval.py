"""Meta-evaluation: how well a metric's scores agree with human judgements, per rated dimension."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from scipy import stats

from .benchmarks import human_dimensions
from .registry import paper_results
from .scoring import OVERALL, DialogueMetric, ScoreOutput

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0

def _finite(value: float) -> float | None:
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
        raise ValueError(f"only {len(pairs)} items have a human score: at least 3 are needed to correlate")
    x = np.array([m for m, _ in pairs], dtype=float)
    y = np.array([h for _, h in pairs], dtype=float)
    pearson, spearman, kendall = stats.pearsonr(x, y), stats.spearmanr(x, y), stats.kendalltau(x, y)
    interval = stats.bootstrap(
        (x, y), lambda a, b: stats.spearmanr(a, b).statistic, paired=True, vectorized=False,
        n_resamples=n_resamples, confidence_level=0.95, method="percentile", rng=np.random.default_rng(seed),
    ).confidence_interval
    return {
        "pearson": _finite(pearson.statistic), "pearson_p": _finite(pearson.pvalue),
        "spearman": _finite(spearman.statistic), "spearman_p": _finite(spearman.pvalue),
        "kendall": _finite(kendall.statistic), "kendall_p": _finite(kendall.pvalue),
        "spearman_ci95": [_finite(interval.low), _finite(interval.high)],
        "n": len(pairs),
    }


def compare_spearman(first_scores: Sequence[float], second_scores: Sequence[float], human_scores: Sequence[float | None],
                     n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Is one metric (or setting) closer to people than another on the same items? The difference of their
    Spearman correlations with ``human_scores`` (first − second) and its percentile bootstrap 95% interval,
    resampling items jointly for both (paired). Items whose human score is ``None`` are left out."""
    if not len(first_scores) == len(second_scores) == len(human_scores):
        raise ValueError(f"{len(first_scores)} and {len(second_scores)} metric scores for {len(human_scores)} human scores")
    kept = [i for i, h in enumerate(human_scores) if h is not None]
    first, second, human = (np.array([values[i] for i in kept], dtype=float)
                            for values in (first_scores, second_scores, human_scores))

    def difference(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> float:
        return stats.spearmanr(a, h).statistic - stats.spearmanr(b, h).statistic

    interval = stats.bootstrap(
        (first, second, human), difference, paired=True, vectorized=False, n_resamples=n_resamples,
        confidence_level=0.95, method="percentile", rng=np.random.default_rng(seed),
    ).confidence_interval
    return {"spearman_difference": float(difference(first, second, human)),
            "ci95": [float(interval.low), float(interval.high)], "n": len(kept),
            "items_scored_differently": int(np.sum(~np.isclose(first, second)))}


def meta_evaluate(metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str, metric_name: str | None = None,
                  score_key: str = OVERALL, progress: bool = False) -> tuple[dict[str, Any], list[float]]:
    """Score every item of a benchmark with ``metric`` and correlate ``score_key`` (the aggregate by default)
    with each human-rated dimension. Returns the results (the schema of ``--output``) and the scores."""
    output = metric.score_dataset(dataset, progress=progress)
    scores = output.select(score_key)
    return results_record(output, scores, dataset, benchmark, metric_name or metric.name, metric.checkpoint), scores


def results_record(output: ScoreOutput, scores: Sequence[float], dataset: datasets.Dataset, benchmark: str,
                   metric_name: str, checkpoint: str | None) -> dict[str, Any]:
    """The results (the schema of ``--output``) of ``scores`` — from ``output``, or derived from it, such as the
    mean of two heads — correlated with each human-rated dimension of ``dataset``."""
    return {
        "metric": metric_name,
        "checkpoint": checkpoint or "default",
        "benchmark": benchmark,
        "n": len(dataset),
        "truncated": sum(output.truncated),
        "empty": sum(output.empty),
        "dimensions": {dim: correlate(scores, dataset[dim]) for dim in human_dimensions(dataset)},
        "signature": output.signature,
    }


def _cell(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def format_markdown(result: Mapping[str, Any]) -> str:
    """The results as a markdown table, with the paper's Spearman/Pearson beside ours where registered."""
    paper = paper_results(result["metric"], result["benchmark"])
    header = ["dimension", "n", "Pearson (p)", "Spearman (p)", "Spearman 95% CI", "Kendall (p)"]
    if paper:
        header += ["paper Pearson", "paper Spearman"]
    lines = [
        f"**{result['metric']}** ({result['checkpoint']}) on **{result['benchmark']}**, n = {result['n']} "
        f"({result['truncated']} truncated, {result['empty']} with empty text)",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for dim, r in result["dimensions"].items():
        low, high = r["spearman_ci95"]
        row = [dim, str(r["n"]), f"{_cell(r['pearson'])} ({r['pearson_p'] or 0:.2g})",
               f"{_cell(r['spearman'])} ({r['spearman_p'] or 0:.2g})", f"[{_cell(low)}, {_cell(high)}]",
               f"{_cell(r['kendall'])} ({r['kendall_p'] or 0:.2g})"]
        if paper:
            row += [_cell(paper.get(dim, {}).get("pearson")), _cell(paper.get(dim, {}).get("spearman"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_results(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    Path(path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def plot_scatter(result: Mapping[str, Any], scores: Sequence[float], dataset: datasets.Dataset,
                 out_dir: str | os.PathLike) -> list[Path]:
    """One PNG per dimension: metric score against the mean human rating, Spearman in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for dim, r in result["dimensions"].items():
        pairs = [(s, h) for s, h in zip(scores, dataset[dim]) if h is not None]
        figure, axes = plt.subplots(figsize=(4.5, 4))
        axes.scatter([h for _, h in pairs], [s for s, _ in pairs], s=12, alpha=0.6)
        axes.set_xlabel(f"mean human rating: {dim}")
        axes.set_ylabel(f"{result['metric']} score")
        axes.set_title(f"{result['benchmark']} / {dim}: ρ = {_cell(r['spearman'])} (n = {r['n']})", fontsize=9)
        figure.tight_layout()
        stem = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{result['metric']}_{Path(result['benchmark']).name}_{dim}")
        path = out / f"{stem}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written
