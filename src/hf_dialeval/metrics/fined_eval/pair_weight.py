"""``hf-dialeval train fined-eval-pair-weight`` (options: :class:`~.reader_options.PairWeightOptions`): choose, on the
checklist's DailyDialog validation pairs alone, the weight at which a pair cross-encoder joins FineD-Eval's coherence
head (what ``hf-dialeval train fined-eval --pair-weight`` takes), and write ``pair_weight.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.evaluation.checklist import pairs_by_split, win_rate
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.metrics.fined_eval.reader_options import PairWeightOptions
from hf_dialeval.metrics.fined_eval.readers import PairReader
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run

#: What the command writes into its output folder.
PAIR_WEIGHT_RECORD = "pair_weight.json"
#: The checklist's test seeds every split reports.
TEST_SEEDS = (0, 1, 2)


@dataclass
class PairWeightArguments(PairWeightOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of ``fined-eval-pair-weight``: :class:`~.reader_options.PairWeightOptions` with every
    ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        unknown = [name for name in self.perturbations if name not in PERTURBATIONS]
        if unknown:
            raise UnknownNameError(f"--perturbations takes the checklist's {sorted(PERTURBATIONS)}, not {unknown}")
        super().__post_init__()


def pair_win_rate(difference: np.ndarray) -> float:
    """The share of pairs whose score ``difference`` (original minus perturbed) favours the original (ties: half)."""
    return win_rate(difference, np.zeros_like(difference))["win_rate"]


@owns_output_dir
def choose_pair_weight(args: PairWeightArguments) -> Path:
    """Score the checklist's pairs with the FineD-Eval ``args.checkpoint`` (its coherence logit) and the pair encoder,
    choose the weight of ``args.weights`` whose sum has the best mean validation win rate (the smaller on a tie), and
    write the win rates to ``pair_weight.json`` in the output folder; returns that folder."""
    open_run(args)
    metric = load_metric("fined-eval", checkpoint=args.checkpoint)
    reader = PairReader(args.pair_encoder).eval()
    checklist = pairs_by_split("dailydialog", args.data_dir, args.perturbations, args.validation_seeds, TEST_SEEDS,
                               count=args.eval_pairs)
    differences: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for split, per in checklist.items():
        for name, pairs in per.items():
            fined_eval = [sum(metric.logit_parts(side).values()) for side in (pairs.originals, pairs.perturbed)]
            pair_reader = [reader.dialogue_scores(side) for side in (pairs.originals, pairs.perturbed)]
            differences.setdefault(split, {})[name] = {"fined-eval": fined_eval[0] - fined_eval[1],
                                                       "pair reader": pair_reader[0] - pair_reader[1]}
    validation = [d for split, per in differences.items() if split.startswith("validation") for d in per.values()]
    chosen = max(args.weights, key=lambda w: (
        np.mean([pair_win_rate(d["fined-eval"] + w * d["pair reader"]) for d in validation]), -w))
    record: dict[str, Any] = {
        "arguments": args.to_dict(), "weight": chosen, "win_rates": {},
        "sum_by_weight": {w: {f"{split}/{name}": pair_win_rate(d["fined-eval"] + w * d["pair reader"])
                              for split, per in differences.items() for name, d in per.items()}
                          for w in args.weights}}
    for split, per in differences.items():
        for name, d in per.items():
            fined_eval_loses, reader_loses = d["fined-eval"] < 0, d["pair reader"] < 0
            row = {"fined-eval": pair_win_rate(d["fined-eval"]), "pair reader": pair_win_rate(d["pair reader"]),
                   "sum": pair_win_rate(d["fined-eval"] + chosen * d["pair reader"]),
                   "lost by fined-eval, won by the reader": float(np.mean(fined_eval_loses & (d["pair reader"] > 0))),
                   "lost by both": float(np.mean(fined_eval_loses & reader_loses))}
            record["win_rates"][f"{split}/{name}"] = row
            print(f"{split:12s} {name:8s} " + "  ".join(f"{key} {value:.3f}" for key, value in row.items()))
    print(f"weight chosen on validation: {chosen}")
    output_dir = Path(args.output_dir)
    (output_dir / PAIR_WEIGHT_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return output_dir
