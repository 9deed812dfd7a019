"""Whether fluency (Eq. 3) should divide the response's summed token log-probability by less than its length. The
score family ``f_α(r) = Σ_t log P(r_t | r_<t) / T_r^α`` runs from the sum (``α = 0``) to Eq. 3's mean (``α = 1``).
Without fluency ratings that are not a benchmark, ``α`` can only be chosen by a property: a fluency score should not
count tokens, so on human replies (DailyDialog validation, the first of the cutoffs' reference pairs) it should be
uncorrelated with their length. For each checkpoint and ``α`` on a grid: the Spearman of ``f_α`` with the token count
there (the criterion), and, shown and not used to choose, with holistic-fluency's ratings and USR's ``Natural``
ratings.

    python benchmarks/holistic_eval/studies/length_normalisation.py src/hf_dialeval/metrics/holistic_eval/defaults/* \\
        --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy.stats import spearmanr

from hf_dialeval import load_benchmark
from hf_dialeval.data.transcripts import Layout
from hf_dialeval.metrics.holistic_eval.data import dailydialog_pairs, encode_scoring_inputs
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric
from hf_dialeval.modeling.loading import load_checkpoint

EXPONENTS = tuple(round(0.1 * step, 1) for step in range(11))
#: benchmark -> the rating its responses' fluency is correlated with (shown, not used to choose)
RATED = {"holistic-fluency": "Fluency", "usr-topical": "Natural", "usr-persona": "Natural"}
REFERENCE = "dailydialog-validation"


def summed_log_probs(metric: HolisticEvalMetric, responses: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each response's summed token log-probability alone (Eq. 3 before its division) and its scored token count."""
    config = metric.model.config
    encoding, _, _ = encode_scoring_inputs(metric.tokenizer, [[] for _ in responses], responses,
                                           config.max_seq_length, Layout.of_config(metric.tokenizer, config))
    counts = np.array([sum(mask) for mask in encoding["score_mask"][: len(responses)]], dtype=float)
    # raw_scores encodes the same rows again: tokenising is milliseconds beside the LM's forward passes
    summed = metric.raw_scores([[] for _ in responses], responses).fluency
    return np.array(summed), counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--reference-pairs", type=int, default=500,
                        help="DailyDialog validation pairs drawn as the cutoffs' are (seed 42)")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--out", default=None, help="a JSON file for every Spearman")
    args = parser.parse_args()
    responses = {REFERENCE: dailydialog_pairs("validation", args.reference_pairs, 42, args.data_dir)["response"]}
    ratings = {}
    for name, rating in RATED.items():
        dataset = load_benchmark(name, args.data_dir)
        responses[name], ratings[name] = dataset["response"], dataset[rating]
    record: dict = {"exponents": list(EXPONENTS), "ratings": RATED, "checkpoints": {}}
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        model.config.token_reduction = "sum"
        metric = HolisticEvalMetric(model, tokenizer, dtype=args.dtype)
        rows = {}
        for name, texts in responses.items():
            summed, counts = summed_log_probs(metric, texts)
            against = counts if name == REFERENCE else ratings[name]
            rows[name] = [float(spearmanr(summed / np.maximum(counts, 1) ** exponent, against).statistic)
                          for exponent in EXPONENTS]
            label = "token count" if name == REFERENCE else RATED[name]
            print(f"{checkpoint} {name} ({label}): "
                  + " ".join(f"{e}:{v:+.3f}" for e, v in zip(EXPONENTS, rows[name])), flush=True)
        record["checkpoints"][checkpoint] = rows
    if args.out:
        with open(args.out, "w") as file:
            json.dump(record, file, indent=1)


if __name__ == "__main__":
    main()
