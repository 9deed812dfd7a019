"""A metric meta-evaluated on a benchmark: every item scored, the scores correlated with each human-rated dimension
(:func:`~hf_dialeval.evaluation.statistics.correlate`), and the results record (the schema of ``hf-dialeval benchmark
--output``) as markdown beside the paper's numbers, or as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.benchmarks import human_dimensions
from hf_dialeval.evaluation.statistics import correlate
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import OVERALL, ScoreOutput
from hf_dialeval.registry import paper_results

if TYPE_CHECKING:
    import datasets


def meta_evaluate(metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str, metric_name: str | None = None,
                  score_key: str = OVERALL, progress: bool = False) -> tuple[dict[str, Any], ScoreOutput]:
    """Score every item of a benchmark with ``metric`` and correlate ``score_key`` (the aggregate by default)
    with each human-rated dimension. Returns the results (the schema of ``--output``) and the scores."""
    output = metric.score_dataset(dataset, progress=progress)
    record = results_record(output, output.select(score_key), dataset, benchmark, metric_name or metric.name,
                            metric.checkpoint, score_key)
    return record, output


def results_record(output: ScoreOutput, scores: Sequence[float], dataset: datasets.Dataset, benchmark: str,
                   metric_name: str, checkpoint: str | None, score_key: str = "overall") -> dict[str, Any]:
    """The results (the schema of ``--output``) of ``scores`` — ``output``'s ``score_key``, or derived from it, such
    as the mean of two heads — correlated with each human-rated dimension of ``dataset``."""
    return {
        "metric": metric_name,
        "checkpoint": checkpoint or "default",
        "benchmark": benchmark,
        "score": score_key,
        "n": len(dataset),
        "truncated": sum(output.truncated),
        "empty": sum(output.empty),
        "dimensions": {dim: correlate(scores, dataset[dim]) for dim in human_dimensions(dataset)},
        "signature": output.signature,
    }


def format_number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def format_markdown(result: Mapping[str, Any]) -> str:
    """The results as a markdown table, with the paper's Spearman/Pearson beside ours where registered for the same
    score."""
    paper = paper_results(result["metric"], result["benchmark"], result.get("score", "overall"))
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
        row = [dim, str(r["n"]), f"{format_number(r['pearson'])} ({r['pearson_p'] or 0:.2g})",
               f"{format_number(r['spearman'])} ({r['spearman_p'] or 0:.2g})", f"[{format_number(low)}, {format_number(high)}]",
               f"{format_number(r['kendall'])} ({r['kendall_p'] or 0:.2g})"]
        if paper:
            row += [format_number(paper.get(dim, {}).get("pearson")), format_number(paper.get(dim, {}).get("spearman"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_results(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    Path(path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
