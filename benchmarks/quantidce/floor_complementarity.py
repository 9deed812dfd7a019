"""Does a QuantiDCE checkpoint know anything the similarity floor does not? On every turn-level coherence
benchmark of ``coherence_benchmarks.py``: the Spearman of the checkpoint and of the ``similarity`` floor with the
human rating, the Spearman between the two metrics, and the Spearman of their rank average (an equal-weight
ensemble, fixed in advance, nothing fitted) with its paired-bootstrap difference from the floor alone (95%
interval). An ensemble that does not beat the floor means the checkpoint adds nothing the floor lacks.

    python benchmarks/quantidce/floor_complementarity.py --data-dir ../shared/data

Writes ``results/floor_complementarity.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coherence_benchmarks import FLOOR, score_coherence_benchmarks
from scipy.stats import rankdata, spearmanr

from hf_dialeval import load_metric
from hf_dialeval.meta_eval import compare_spearman, correlate
from hf_dialeval.scoring import DialogueMetric

RESULTS = Path(__file__).resolve().parent / "results" / "floor_complementarity.json"


def floor_comparison(quantidce: DialogueMetric, floor: DialogueMetric, data_dir: str | None) -> dict[str, dict]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None,
                        help="QuantiDCE checkpoint (default: the shipped one, recorded as null)")
    args = parser.parse_args()
    comparison = floor_comparison(load_metric("quantidce", checkpoint=args.checkpoint, device="cpu"),
                                  load_metric("similarity", device="cpu"), args.data_dir)
    results = {"checkpoint": args.checkpoint, "floor": FLOOR, "benchmarks": comparison}  # None: the shipped default
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
