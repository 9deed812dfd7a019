"""Step 6 of the shipped FineD-Eval's recipe, its second half: choose the weight at which the pair cross-encoder
(``pair_encoder.py``) joins the coherence head, on validation pairs alone (``hf-dialeval train fined-eval
--pair-weight``).

On the checklist's DailyDialog pairs of the coherence perturbations (200 each; validation seed 0, or the seeds of
``--validation-seeds``, and test seeds 0, 1 and 2), each pair's coherence logit difference (original minus perturbed)
of the FineD-Eval checkpoint (``FineDEvalMetric.logit_parts``) and its dialogue-score difference by the pair reader
are added as ``fined-eval + w × pair reader``. The weight ``w`` is the best mean win rate over the validation
perturbations (the smaller ``w`` on a tie); every split then reports FineD-Eval alone, the reader alone and the sum
at that weight, and the share of pairs each loses that the other wins; ``sum_by_weight`` holds the sum's rates at
every weight tried. The shipped weight (0.5) is the second run's:

    python benchmarks/fined_eval/recipes/pair_weight.py --data-dir ../shared/data --checkpoint runs/fe-stage5/adapter \\
        --pair-reader runs/pair-cross-encoder
    python benchmarks/fined_eval/recipes/pair_weight.py --data-dir ../shared/data --checkpoint runs/fe-stage5/adapter \\
        --pair-reader runs/pair-cross-encoder-echo --validation-seeds 0 1 2 --output pair_weight-echo.json

Writes ``results/pair_weight.json`` (``--output``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hf_dialeval import load_metric
from hf_dialeval.evaluation.checklist import PERTURBATIONS, pairs_by_split, win_rate
from hf_dialeval.metrics.fined_eval.readers import PairReader

RESULTS = Path(__file__).resolve().parent / "results"
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)


def rate(difference: np.ndarray) -> float:
    return win_rate(difference, np.zeros_like(difference))["win_rate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None, help="FineD-Eval checkpoint (default: the shipped one)")
    parser.add_argument("--pair-reader", required=True, help="pair_encoder.py's --output-dir")
    parser.add_argument("--output", default="pair_weight.json", help="file name under results/")
    parser.add_argument("--perturbations", nargs="+", default=["shuffle", "random", "echo", "repeat"],
                        choices=sorted(PERTURBATIONS))
    parser.add_argument("--validation-seeds", nargs="+", type=int, default=[0],
                        help="seeds of the validation pairs the weight is chosen on (seed 0: 'validation', the others "
                             "'validation-<seed>')")
    args = parser.parse_args()
    metric = load_metric("fined-eval", checkpoint=args.checkpoint)
    reader = PairReader(args.pair_reader).eval()
    checklist = pairs_by_split("dailydialog", args.data_dir, args.perturbations, args.validation_seeds, (0, 1, 2))
    differences: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for split, per in checklist.items():
        for name, pairs in per.items():
            fined_eval = [sum(metric.logit_parts(side).values()) for side in (pairs.originals, pairs.perturbed)]
            pair_reader = [reader.dialogue_scores(side) for side in (pairs.originals, pairs.perturbed)]
            differences.setdefault(split, {})[name] = {"fined-eval": fined_eval[0] - fined_eval[1],
                                                       "pair reader": pair_reader[0] - pair_reader[1]}
    validation = [d for split, per in differences.items() if split.startswith("validation") for d in per.values()]
    chosen = max(WEIGHTS, key=lambda w: (np.mean([rate(d["fined-eval"] + w * d["pair reader"]) for d in validation]),
                                         -w))
    record: dict = {"arguments": vars(args), "weight": chosen, "win_rates": {},
                    "sum_by_weight": {w: {f"{split}/{name}": rate(d["fined-eval"] + w * d["pair reader"])
                                          for split, per in differences.items() for name, d in per.items()}
                                      for w in WEIGHTS}}
    for split, per in differences.items():
        for name, d in per.items():
            fined_eval_loses, reader_loses = d["fined-eval"] < 0, d["pair reader"] < 0
            row = {"fined-eval": rate(d["fined-eval"]), "pair reader": rate(d["pair reader"]),
                   "sum": rate(d["fined-eval"] + chosen * d["pair reader"]),
                   "lost by fined-eval, won by the reader": float(np.mean(fined_eval_loses & (d["pair reader"] > 0))),
                   "lost by both": float(np.mean(fined_eval_loses & reader_loses))}
            record["win_rates"][f"{split}/{name}"] = row
            print(f"{split:12s} {name:8s} " + "  ".join(f"{key} {value:.3f}" for key, value in row.items()))
    print(f"weight chosen on validation: {chosen}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.output).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
