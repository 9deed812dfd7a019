"""``hf-dialeval leaderboard``: every registered metric on every benchmark it can score, at every level of
correlation the benchmark allows, with intervals and significance clusters.

Each cell correlates the metric's ``overall`` score with the benchmark's headline human rating (``Overall`` where
people gave one, else the benchmark's only rating); the JSON holds every rated dimension at every level. Per
column the best item-level Spearman is marked, and so is every metric that a paired permutation test (one-sided,
the best against it) does not find significantly worse at :data:`SIGNIFICANCE`: WMT's significance clusters.
Scores come from :class:`~hf_dialeval.inference.score_cache.ScoreCache`, so a re-run scores only new (metric, benchmark)
pairs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.benchmarks import BENCHMARKS, human_dimensions, load_benchmark
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import OptionError
from hf_dialeval.evaluation.meta_evaluation import format_number
from hf_dialeval.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    PERMUTATIONS,
    RatedItems,
    level_summary,
    permutation_test,
)
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.registry import METRICS, MetricChoice, paper_results

if TYPE_CHECKING:
    import datasets

#: The p-value under which a metric counts as worse than the best of its column.
SIGNIFICANCE = 0.05
#: The benchmarks a leaderboard runs by default: every registered one (the RADE benchmarks' test splits).
DEFAULT_BENCHMARKS = tuple(BENCHMARKS)
#: Where a README's generated table goes.
README_BEGIN, README_END = "<!-- leaderboard:begin -->", "<!-- leaderboard:end -->"
LEGEND = ("Spearman of each metric's overall score with the benchmark's headline rating, item level, with its "
          "bootstrap 95% interval; **bold**: best of the column; \\*: not significantly worse than the best "
          f"(paired permutation test, p ≥ {SIGNIFICANCE}); (paper: the published number, where there is one); "
          "†: held out, the scores of a model fitted without that benchmark's release (a metric fitted on the rated "
          "benchmarks shows no other); "
          "— : the metric cannot score that benchmark; n/a: it gave every item the same score.")
#: Why a metric fitted on the rated benchmarks has no cell where no held-out scores are given.
FITTED_ON_BENCHMARKS = ("fitted on the rated benchmarks: only its held-out scores are shown (hf-dialeval leaderboard "
                        "--held-out NAME=FILE)")


def headline_dimension(dataset: datasets.Dataset) -> str:
    """``Overall`` when people rated it, else the benchmark's first rating."""
    dimensions = human_dimensions(dataset)
    return "Overall" if "Overall" in dimensions else dimensions[0]


def skip_reason(metric: DialogueMetric, dataset: datasets.Dataset) -> str | None:
    """Why ``metric`` cannot score ``dataset`` (a reference or a context it needs is missing), or ``None``."""
    turn_level = "response" in dataset.column_names
    if metric.needs_reference and (not turn_level or any(not ref for ref in dataset["reference"])):
        return "needs a reference for every item"
    if metric.needs_context and turn_level and any(not context for context in dataset["context"]):
        return "needs a context for every item"
    return None


def _cell(items: RatedItems, n_resamples: int, seed: int) -> dict[str, Any]:
    summary = level_summary(items, n_resamples=n_resamples, seed=seed)
    return {"spearman": summary["item"]["spearman"], "ci95": summary["item"].get("ci95"),
            "n": summary["item"]["n"], "levels": summary}


def _mark_best(cells: dict[str, dict[str, Any]], items_of: Mapping[str, RatedItems], permutations: int,
               seed: int) -> None:
    """Mark the best item-level Spearman of a column and every metric not significantly worse than it."""
    ranked = [name for name in cells if cells[name]["spearman"] is not None]
    if not ranked:
        return
    best = max(ranked, key=lambda name: cells[name]["spearman"])
    for name in cells:
        cells[name]["best"] = name == best
        cells[name]["tied_with_best"] = False
        if name in ranked and name != best:
            pair = RatedItems(items_of[best].human, (items_of[best].metrics[0], items_of[name].metrics[0]),
                              None, None)
            test = permutation_test(pair, "item", alternative="greater", n_permutations=permutations, seed=seed)
            cells[name]["p_vs_best"] = test["p"]
            cells[name]["tied_with_best"] = test["p"] is not None and test["p"] >= SIGNIFICANCE


def read_held_out(path: str | os.PathLike) -> dict[str, list[float]]:
    """The held-out scores a file gives per benchmark (``{"benchmarks": {name: [score per item]}}``, as
    ``benchmarks/panel/run.py`` writes them)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        scores = record["benchmarks"]
        if not all(isinstance(values, list) for values in scores.values()):
            raise TypeError
    except OSError as error:
        raise OptionError(f"--held-out {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise OptionError(f"--held-out {path} is not a held-out record: give the JSON of "
                          '{"benchmarks": {name: [score per item]}} that benchmarks/panel/run.py writes') from None
    return {name: [float("nan") if value is None else float(value) for value in values]
            for name, values in scores.items()}


def build_leaderboard(metrics: Sequence[MetricChoice] = (), benchmarks: Sequence[str] = DEFAULT_BENCHMARKS,
                      data_dir: str | os.PathLike | None = None, cache: ScoreCache | None = None,
                      device: str | None = None, batch_size: int = 32, dtype: str | None = None,
                      n_resamples: int = BOOTSTRAP_RESAMPLES,
                      permutations: int = PERMUTATIONS, seed: int = BOOTSTRAP_SEED,
                      progress: bool = True, held_out: Mapping[str, Mapping[str, Sequence[float]]] = {}
                      ) -> dict[str, Any]:
    """Score every metric of ``metrics`` (default: every registered metric's shipped default) on every benchmark
    it can score (model metrics computing in ``dtype``) and build the leaderboard record (see :func:`format_leaderboard`; the schema
    :func:`hf_dialeval.evaluation.plots.plot_leaderboard_heatmap` reads), keyed by each metric's label. A metric whose
    shipped default was fitted on the rated benchmarks (the panel) is not scored: its cells are the held-out scores
    ``held_out`` gives it (its label → benchmark → a score per item), marked as such, where it gives them."""
    from tqdm.auto import tqdm

    metrics = list(metrics) or [MetricChoice(name) for name in sorted(METRICS)]
    labels = [choice.label for choice in metrics]
    if len(set(labels)) != len(labels):
        raise OptionError(f"a metric is named twice: {labels}")

    cache = cache or ScoreCache()
    datasets_by_name = {name: load_benchmark(name, data_dir) for name in benchmarks}
    headlines = {name: headline_dimension(dataset) for name, dataset in datasets_by_name.items()}
    record: dict[str, Any] = {
        "metrics": labels,
        "benchmarks": [{"name": name, "dimension": headlines[name], "items": len(dataset)}
                       for name, dataset in datasets_by_name.items()],
        "cells": {label: {} for label in labels}, "skipped": {label: {} for label in labels}, "signatures": {},
        "settings": {"resamples": n_resamples, "permutations": permutations, "seed": seed,
                     "significance": SIGNIFICANCE},
    }
    headline_items: dict[str, dict[str, RatedItems]] = {name: {} for name in benchmarks}
    bar = tqdm(total=len(metrics) * len(benchmarks), desc="leaderboard", unit="cell", disable=not progress)
    for choice in metrics:
        metric_name = choice.label
        held_out_only = choice.checkpoint is None and METRICS[choice.name].fitted_on_benchmarks
        metric = None if held_out_only else load_metric(choice.name, checkpoint=choice.checkpoint, device=device,
                                                        batch_size=batch_size, dtype=dtype)
        record["signatures"][metric_name] = {"held_out": True} if metric is None else metric.signature(0, 0, 0)
        if metric is not None:  # a composite's members score every benchmark first, each loaded once
            cache.fill(metric, [(dataset, name) for name, dataset in datasets_by_name.items()
                                if skip_reason(metric, dataset) is None])
        for name, dataset in datasets_by_name.items():
            bar.set_postfix_str(f"{metric_name} on {name}")
            if metric is None:
                reason, output, cached = _held_out_output(held_out.get(metric_name, {}), name, len(dataset))
            else:
                reason = skip_reason(metric, dataset)
            if reason is None and metric is not None:
                try:
                    output, cached = cache.scores(metric, dataset, name, progress=False)
                except DialogueValidationError as error:
                    reason = str(error)
            if reason is not None:
                record["skipped"][metric_name][name] = reason
                bar.update()
                continue
            dimensions = {dim: RatedItems.from_benchmark(dataset, dim, output.overall)
                          for dim in human_dimensions(dataset)}
            cell = _cell(dimensions[headlines[name]], n_resamples, seed)
            cell["dimensions"] = {dim: level_summary(items, n_resamples=0)
                                  for dim, items in dimensions.items() if dim != headlines[name]}
            cell.update(truncated=sum(output.truncated), empty=sum(output.empty), cached=cached,
                        paper=paper_results(choice.name, name).get(headlines[name], {}).get("spearman"),
                        held_out=metric is None)
            record["cells"][metric_name][name] = cell
            headline_items[name][metric_name] = dimensions[headlines[name]]
            bar.update()
        del metric
    bar.close()
    for name in benchmarks:
        column = {label: record["cells"][label][name] for label in labels if name in record["cells"][label]}
        _mark_best(column, headline_items[name], permutations, seed)
    return record


def _held_out_output(scores: Mapping[str, Sequence[float]], benchmark: str, items: int
                     ) -> tuple[str | None, ScoreOutput | None, bool]:
    """A held-out metric's output on ``benchmark`` from its given ``scores``: (why there is none, output, cached)."""
    if benchmark not in scores:
        return FITTED_ON_BENCHMARKS, None, False
    values = list(scores[benchmark])
    if len(values) != items:
        raise OptionError(f"--held-out gives {len(values)} scores of {benchmark}, which has {items} items: give the "
                          "record written for these benchmarks")
    return None, ScoreOutput({}, values), True


def _table_cell(cell: Mapping[str, Any] | None, level: str) -> str:
    if cell is None:
        return "—"
    entry = cell["levels"].get(level)
    if entry is None:
        return "—"
    text = format_number(entry["spearman"])
    if level == "item" and cell.get("best"):
        text = f"**{text}**"
    elif level == "item" and cell.get("tied_with_best"):
        text += "\\*"
    interval = entry.get("ci95")
    if interval:
        text += f" [{interval[0]:+.2f}, {interval[1]:+.2f}]"
    if level != "item":
        text += f" ({entry['n']} {'systems' if level == 'system' else 'contexts'})"
    if level == "item" and cell.get("paper") is not None:
        text += f" (paper {cell['paper']:+.3f})"
    if cell.get("held_out"):
        text += " †"
    return text


LEVEL_TITLES = {"item": "Item level", "system": "System level (mean score per system)",
                "grouped": "Grouped by context (correlation among each context's candidates, averaged)"}


def format_leaderboard(record: Mapping[str, Any], levels: Sequence[str] = tuple(LEVEL_TITLES)) -> str:
    """The leaderboard as markdown: a table per level (item; system and grouped by context for the benchmarks
    that allow them) and the legend. The README shows the item level alone."""
    sections = []
    for level in levels:
        title = LEVEL_TITLES[level]
        columns = [b for b in record["benchmarks"]
                   if any(level in cells[b["name"]]["levels"] for cells in record["cells"].values()
                          if b["name"] in cells)]
        if not columns:
            continue
        lines = [f"#### {title}", "",
                 "| metric | " + " | ".join(f"{b['name']} ({b['dimension']})" for b in columns) + " |",
                 "|---|" + "---|" * len(columns)]
        for metric in record["metrics"]:
            cells = record["cells"][metric]
            lines.append(f"| {metric} | " + " | ".join(_table_cell(cells.get(b["name"]), level) for b in columns)
                         + " |")
        sections.append("\n".join(lines))
    return "\n\n".join([*sections, LEGEND])


def update_readme(path: str | os.PathLike, table: str) -> None:
    """Replace what lies between the README's leaderboard markers with ``table``."""
    readme = Path(path)
    text = readme.read_text(encoding="utf-8")
    if README_BEGIN not in text or README_END not in text:
        raise OptionError(f"{path} has no '{README_BEGIN}' ... '{README_END}' block to write the leaderboard into")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(f"{head}{README_BEGIN}\n{table}\n{README_END}{tail}", encoding="utf-8")


def write_leaderboard(record: Mapping[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """``leaderboard.json``, ``leaderboard.md`` and ``leaderboard.png`` (the heatmap) in ``out_dir``."""
    from hf_dialeval.evaluation.plots import plot_leaderboard_heatmap

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, markdown_path = out / "leaderboard.json", out / "leaderboard.md"
    json_path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    markdown_path.write_text(format_leaderboard(record) + "\n", encoding="utf-8")
    return [json_path, markdown_path, plot_leaderboard_heatmap(record, out / "leaderboard.png")]
