"""A learned coherence metric against the similarity floor on every turn-level benchmark here with a coherence-like
rating: each against the humans, the two against each other, and whether their rank average beats the floor
alone (paired bootstrap). Shared by the QuantiDCE benchmark scripts (none imports another); HolisticEval's ``run.py``
reads its ratings."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from scipy.stats import rankdata, spearmanr

from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.inference.metric import DialogueMetric

#: benchmark -> its human rating closest to coherence of a response with its context
COHERENCE_RATINGS = {
    "grade-convai2": "Coherence",
    "usr-topical": "Maintains Context",
    "usr-persona": "Maintains Context",
    "holistic-context": "Coherence",
    "fed-turn": "Relevant",
}
FLOOR = "similarity-floor"


def score_coherence_benchmarks(metrics: Mapping[str, DialogueMetric], data_dir: str | os.PathLike | None,
                               ratings: Mapping[str, str] = COHERENCE_RATINGS,
                               ) -> Iterator[tuple[str, str, list[float | None], dict[str, list[float]]]]:
    """For each benchmark of ``ratings`` (benchmark -> rating; default :data:`COHERENCE_RATINGS`): its name, the
    rating, the human scores and every metric's overall scores on it, by metric name."""
    for benchmark, rating in ratings.items():
        dataset = load_benchmark(benchmark, data_dir)
        yield benchmark, rating, dataset[rating], {name: metric.score_dataset(dataset).overall
                                                   for name, metric in metrics.items()}


def floor_comparison(quantidce: DialogueMetric, floor: DialogueMetric, data_dir: str | os.PathLike | None
                     ) -> dict[str, dict]:
    """Per coherence benchmark: ``quantidce`` and ``floor`` against the human rating, against each other, and
    their rank average against the floor alone; prints a markdown row per benchmark as it goes."""
    print("| benchmark (rating) | n | QuantiDCE | floor | QuantiDCE ~ floor | rank average | rank average − floor |")
    print("|---|---|---|---|---|---|---|")
    comparison = {}
    metrics = {"quantidce": quantidce, FLOOR: floor}
    for benchmark, rating, humans, scores in score_coherence_benchmarks(metrics, data_dir):
        model_scores, floor_scores = scores["quantidce"], scores[FLOOR]
        ensemble = (rankdata(model_scores) + rankdata(floor_scores)).tolist()
        entry = {
            "rating": rating,
            "quantidce": correlate(model_scores, humans),
            "floor": correlate(floor_scores, humans),
            "quantidce_vs_floor_spearman": float(spearmanr(model_scores, floor_scores).statistic),
            "rank_average": correlate(ensemble, humans),
            "rank_average_minus_floor": compare_spearman(ensemble, floor_scores, humans),
        }
        comparison[benchmark] = entry
        difference = entry["rank_average_minus_floor"]
        print(f"| {benchmark} ({rating}) | {entry['floor']['n']} | {entry['quantidce']['spearman']:+.3f} | "
              f"{entry['floor']['spearman']:+.3f} | {entry['quantidce_vs_floor_spearman']:+.3f} | "
              f"{entry['rank_average']['spearman']:+.3f} | {difference['spearman_difference']:+.3f} "
              f"[{difference['ci95'][0]:+.3f}, {difference['ci95'][1]:+.3f}] |", flush=True)
    return comparison
