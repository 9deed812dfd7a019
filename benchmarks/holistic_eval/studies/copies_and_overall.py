"""Chooses how HolisticEval stops preferring a parrot, a loop and a generic reply to a person, on DailyDialog validation
(never a benchmark, never the checklist's test dialogues). For a checkpoint, the share of 200 pairs (seed 0) per
contrast (echo, repeat, phrase-repeat, generic, random) in which the human reply's ``overall`` is the higher, for each
setting of:

* the copy span: none (every token credited, the paper's scores) or 4, 6, 8 tokens (a copy of the context or of the
  reply itself earns no credit: ``copy_span``);
* the PMI weight ``β`` of context coherence: 0.7 (shipped), 0.8, 0.9, 1.0;
* the turn-level diversity score (the reply's own n-gram entropy, §3.3's measure) left out or in ``overall``;

each setting's cutoffs fitted on the reference set the default is fitted on (2,000 DailyDialog validation pairs, seed
42), beside the share of those human replies the copy span leaves a token uncredited in. The LM runs once per reply;
every setting is arithmetic on the same token log-probabilities.

The rule: the setting whose smallest win rate over the five contrasts is the highest; within 0.005 of it, the longest
span (the fewest human replies touched), then the weight nearest the shipped one.

    python benchmarks/holistic_eval/studies/copies_and_overall.py \\
        src/hf_dialeval/metrics/holistic_eval/defaults/holistic-eval-dailydialog --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
from pathlib import Path

from hf_dialeval.evaluation.checklist import win_rate
from hf_dialeval.metrics.holistic_eval.data import drawn_pairs, load_lm_pairs
from hf_dialeval.metrics.holistic_eval.scoring import (
    HolisticEvalMetric,
    language_model_scores,
    overall_scores,
    raw_scores_of,
    reference_cutoffs,
)
from hf_dialeval.modeling.loading import load_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/holistic_eval/
from benchmarks.holistic_eval.studies.coherence_measure import validation_pairs  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
CONTRASTS = ("echo", "repeat", "phrase-repeat", "generic", "random")
SPANS = (0, 4, 6, 8)
WEIGHTS = (0.7, 0.8, 0.9, 1.0)


def setting_config(base, span: int, weight: float, diversity: bool, reference_raw, reference_responses):
    """The config of one setting, its cutoffs fitted on the reference set."""
    config = copy.deepcopy(base)
    config.copy_span, config.pmi_weight = span, weight
    for name, value in reference_cutoffs(config, raw_scores_of(config, reference_raw), reference_responses).items():
        setattr(config, f"{name}_cutoff", value)
    if not diversity:
        config.diversity_cutoff = config.diversity_upper_cutoff = None
    return config


def overall(config, tokens, responses) -> list[float]:
    return overall_scores(language_model_scores(config, raw_scores_of(config, tokens), responses))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    model, tokenizer = load_checkpoint("holistic-eval", args.checkpoint)
    metric = HolisticEvalMetric(model, tokenizer, device="cpu", dtype=args.dtype)
    reference = drawn_pairs(load_lm_pairs(["dailydialog"], "validation", args.data_dir), 2000, 42)
    reference_tokens = metric.scored_tokens(reference["context"], reference["response"])
    pairs = validation_pairs(args.data_dir, list(CONTRASTS), args.pairs, args.seed)
    tokens = {name: (metric.scored_tokens(kept.contexts, kept.originals),
                     metric.scored_tokens(kept.contexts, kept.perturbed)) for name, kept in pairs.items()}
    rows = []
    for span, weight, diversity in itertools.product(SPANS, WEIGHTS, (False, True)):
        config = setting_config(model.config, span, weight, diversity, reference_tokens, reference["response"])
        touched = raw_scores_of(config, reference_tokens).coherence_share
        wins = {name: win_rate(overall(config, human, pairs[name].originals),
                               overall(config, other, pairs[name].perturbed))["win_rate"]
                for name, (human, other) in tokens.items()}
        rows.append({"copy_span": span, "pmi_weight": weight, "diversity": diversity, "wins": wins,
                     "lowest": min(wins.values()),
                     "human_replies_touched": sum(share < 1 for share in touched) / len(touched)})
        print(f"span {span}, weight {weight}, diversity {diversity}: " +
              ", ".join(f"{name} {rate:.3f}" for name, rate in wins.items()) +
              f"; human replies touched {rows[-1]['human_replies_touched']:.3f}", flush=True)
    best = max(row["lowest"] for row in rows)
    near = [row for row in rows if row["lowest"] >= best - 0.005]
    chosen = max(near, key=lambda row: (row["copy_span"], -abs(row["pmi_weight"] - model.config.pmi_weight)))
    print(f"chosen: span {chosen['copy_span']}, weight {chosen['pmi_weight']}, diversity {chosen['diversity']} "
          f"(lowest win rate {chosen['lowest']:.3f})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "copies_and_overall.json").write_text(json.dumps(
        {"checkpoint": args.checkpoint, "pairs": args.pairs, "seed": args.seed, "rows": rows, "chosen": chosen},
        indent=1) + "\n")


if __name__ == "__main__":
    main()
