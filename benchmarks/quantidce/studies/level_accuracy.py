"""Which coherence levels does a QuantiDCE checkpoint tell apart? On the DailyDialog++ contexts held out from
MLR pre-training (the same split ``hf-dialeval train quantidce-mlr`` makes), the share of response pairs of one
context scored in the right order, per pair of levels (random < adversarial < positive; chance 0.5), beside the
untrained MiniLM cosine floor (the ``similarity`` metric) on the same pairs.

    python benchmarks/quantidce/studies/level_accuracy.py --data-dir ../shared/data \\
        --checkpoint runs/qd-mlr-full/full --name mlr-full            # trained on all contexts, 100 held out
    python benchmarks/quantidce/studies/level_accuracy.py --data-dir ../shared/data --max-contexts 1200 \\
        --name default                                                 # the shipped default's split

Results are merged into ``results/level_accuracy.json`` under ``--name``.
"""

from __future__ import annotations

import argparse
import json
from itertools import combinations
from pathlib import Path

import datasets
import numpy as np

from hf_dialeval import load_metric
from hf_dialeval.metrics.quantidce.data import DAILYDIALOG_PLUSPLUS_LEVELS, responses_by_level
from hf_dialeval.metrics.quantidce.train import mlr_contexts

RESULTS = Path(__file__).resolve().parents[1] / "results" / "level_accuracy.json"
LEVEL_NAMES = [column.split("_")[0] for column in DAILYDIALOG_PLUSPLUS_LEVELS]  # random, adversarial, positive


def flatten(contexts: datasets.Dataset) -> tuple[datasets.Dataset, np.ndarray]:
    """One (context, response) row per response, and the level (0 … L−1) of each, shaped (contexts, L·K)."""
    rows, levels = {"context": [], "response": []}, []
    for row in contexts:
        responses, context_levels = responses_by_level(row)
        rows["context"] += [row["context"]] * len(responses)
        rows["response"] += responses
        levels.append(context_levels)
    return datasets.Dataset.from_dict(rows), np.array(levels)


def level_pair_accuracy(scores: np.ndarray, levels: np.ndarray) -> dict[str, float]:
    """Per pair of levels j < l: the share of (level-j, level-l) response pairs of one context with
    score_j < score_l (ties count half), over all contexts; and the mean over the level pairs."""
    accuracy = {}
    for low, high in combinations(range(len(LEVEL_NAMES)), 2):
        right = []
        for context_scores, context_levels in zip(scores, levels):
            lower, higher = context_scores[context_levels == low], context_scores[context_levels == high]
            difference = higher[None, :] - lower[:, None]
            right.append(((difference > 0) + 0.5 * (difference == 0)).mean())
        accuracy[f"{LEVEL_NAMES[low]} < {LEVEL_NAMES[high]}"] = round(float(np.mean(right)), 3)
    accuracy["mean"] = round(float(np.mean(list(accuracy.values()))), 3)
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None, help="QuantiDCE checkpoint (default: the shipped one)")
    parser.add_argument("--name", required=True, help="key of this checkpoint in the results file")
    parser.add_argument("--max-contexts", type=int, default=None, help="as given to train quantidce-mlr")
    parser.add_argument("--eval-contexts", type=int, default=100, help="as given to train quantidce-mlr")
    parser.add_argument("--seed", type=int, default=42, help="as given to train quantidce-mlr")
    args = parser.parse_args()

    _, held_out = mlr_contexts(args.data_dir, args.max_contexts, args.eval_contexts, args.seed)
    if held_out is None:
        raise SystemExit("--eval-contexts 0 holds nothing out: give the value the checkpoint was trained with")
    pairs, levels = flatten(held_out)
    metric = load_metric("quantidce", checkpoint=args.checkpoint)
    rows = {
        args.name: np.array(metric.score_turns(list(pairs["context"]), list(pairs["response"])).overall),
        "minilm-cosine-floor": np.array(load_metric("similarity").score_dataset(pairs).overall),
    }
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    split = results.setdefault(f"held-out {len(held_out)} contexts (max_contexts={args.max_contexts}, seed={args.seed})", {})
    checkpoints = {args.name: args.checkpoint, "minilm-cosine-floor": None}
    for name, scores in rows.items():
        accuracy = level_pair_accuracy(scores.reshape(levels.shape), levels)
        split[name] = {"checkpoint": checkpoints[name], "accuracy": accuracy}
        print(f"{name}: {accuracy}")
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
