"""Chooses the weight ``β`` of HolisticEval's PMI context coherence, ``c_raw(r|q) − β · f_raw(r)`` (``β = 0`` is Eq.
1's likelihood, ``β = 1`` the pointwise mutual information), on data that is not a HolisticEval benchmark:

1. trust first: on DailyDialog validation checklist pairs (200 a perturbation, seed 0), the human reply must beat a
   random one in at least ``--min-random`` of pairs;
2. among the weights that pass, the highest Spearman with the coherence ratings of grade-dailydialog (run.py's
   ``DEV``, where the token reduction is chosen too: coherence, the construct, in the domain the LM is fine-tuned on;
   it is not one of the paper's benchmarks, and is in-sample for the weight).

Shown and not used to choose: the Spearman with the overall ratings of the RADE validation splits (other domains, and
overall quality rather than coherence) and with holistic-context (the paper's benchmark). Every item's two raw scores
are computed once per checkpoint (bf16 by default); each weight of the grid 0, 0.1, …, 1 is then arithmetic.

    python benchmarks/holistic_eval/studies/pmi_weight.py \\
        src/hf_dialeval/metrics/holistic_eval/defaults/holistic-eval-dailydialog --data-dir ../shared/data \\
        --out benchmarks/holistic_eval/results/pmi_weight.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from hf_dialeval import load_benchmark
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information
from hf_dialeval.modeling.loading import load_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/holistic_eval/
from benchmarks.holistic_eval.run import DEV  # noqa: E402
from benchmarks.holistic_eval.studies.coherence_measure import (  # noqa: E402
    pair_raw_scores,
    validation_pairs,
    weighted_win_rate,
)

WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))
RADE_SPLITS = ("rade-chitchat", "rade-emotion", "rade-persona")


def dataset_raw_scores(metric: HolisticEvalMetric, dataset) -> tuple[list[float], list[float]]:
    """Each response's ``c_raw(r|q)`` and ``f_raw(r)``."""
    raw = metric.raw_scores([list(context) for context in dataset["context"]], dataset["response"])
    return raw.coherence, raw.fluency_of_coherence_tokens


def weighted_spearman(raw: tuple[list[float], list[float]], ratings: list[float], weight: float) -> float:
    """Spearman of ``c_raw(r|q) − weight · f_raw(r)`` with ``ratings``."""
    return float(spearmanr(pointwise_mutual_information(*raw, weight), ratings).statistic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--perturbations", nargs="+", default=["random", "generic", "echo", "repeat"])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-random", type=float, default=0.90)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--max-seq-length", type=int, default=256,
                        help="the token limit to score with (the shipped default's; a run keeps its training length)")
    parser.add_argument("--out", default=None, help="a JSON file for every weight's numbers")
    args = parser.parse_args()
    pairs_of = validation_pairs(args.data_dir, args.perturbations, args.pairs, args.seed)
    (dev_name, dev_rating), = DEV.items()
    dev = load_benchmark(dev_name, args.data_dir)
    rade = {name: load_benchmark(name, args.data_dir, split="validation") for name in RADE_SPLITS}
    context = load_benchmark("holistic-context", args.data_dir)
    record: dict = {"weights": list(WEIGHTS), "min_random": args.min_random, "checkpoints": {}}
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        model.config.max_seq_length = args.max_seq_length
        metric = HolisticEvalMetric(model, tokenizer, device="cpu", dtype=args.dtype)
        checklist = {}
        for name, pairs in pairs_of.items():
            raw = pair_raw_scores(metric, pairs)
            checklist[name] = [weighted_win_rate(raw, weight) for weight in WEIGHTS]
        dev_raw = dataset_raw_scores(metric, dev)
        dev_spearman = [weighted_spearman(dev_raw, dev[dev_rating], weight) for weight in WEIGHTS]
        rade_raw = {name: dataset_raw_scores(metric, split) for name, split in rade.items()}
        rade_mean = [float(np.mean([weighted_spearman(rade_raw[name], split["Overall"], weight)
                                    for name, split in rade.items()])) for weight in WEIGHTS]
        context_raw = dataset_raw_scores(metric, context)
        holistic = [weighted_spearman(context_raw, context["Coherence"], weight) for weight in WEIGHTS]
        eligible = [index for index, rate in enumerate(checklist["random"]) if rate >= args.min_random]
        chosen = WEIGHTS[max(eligible, key=lambda index: dev_spearman[index])] if eligible else None
        record["checkpoints"][checkpoint] = {"checklist": checklist, dev_name: dev_spearman,
                                             "rade_validation_mean": rade_mean, "holistic_context": holistic,
                                             "chosen": chosen}
        print(f"{checkpoint}: win rates on DailyDialog validation pairs; Spearman with {dev_name} {dev_rating} "
              "(chooses), RADE validation overall (mean of 3) and holistic-context (both shown)")
        print("weight  " + "  ".join(f"{name:>8}" for name in checklist) + f"  {dev_name}   rade  holistic-context")
        for index, weight in enumerate(WEIGHTS):
            print(f"{weight:6.1f}  " + "  ".join(f"{rates[index]:8.3f}" for rates in checklist.values()) +
                  f"  {dev_spearman[index]:{len(dev_name)}.3f}  {rade_mean[index]:5.3f}  {holistic[index]:16.3f}",
                  flush=True)
        print(f"chosen weight: {chosen}" if chosen is not None else
              f"no weight prefers the human reply to a random one in {args.min_random} of pairs")
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
