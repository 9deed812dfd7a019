"""Which part of FineD-Eval's coherence logit wins, and which loses, the checklist's dialogue-level pairs?

The coherence logit is a sum: the score head over the pooled dialogue encoding, the adjacency head over the
histogram of consecutive utterances' cosines, and the adjacency MLP's mean over those pairs (the parts the
checkpoint has). Each part, and each sum of parts, is scored on the checklist's pairs of ``--corpus`` (200 per
perturbation, seed ``--seed``) as the checklist scores the whole model: the share of pairs the original wins, ties
half; beside it, the mean and the spread of the part's original-minus-perturbed difference.

    python benchmarks/fined_eval/studies/coherence_logit_parts.py --data-dir ../shared/data \\
        --perturbations shuffle random

Writes ``--output`` (default ``results/coherence_logit_parts-<corpus>-<split>-<seed>.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from hf_dialeval import load_metric
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs, load_checklist_corpus, win_rate

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None, help="FineD-Eval checkpoint (default: the shipped one)")
    parser.add_argument("--corpus", default="dailydialog")
    parser.add_argument("--split", default=None, help="the corpus split (default: the checklist's held-out one)")
    parser.add_argument("--perturbations", nargs="+", default=["shuffle", "random"], choices=sorted(PERTURBATIONS))
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None, help="the results file (JSON)")
    args = parser.parse_args()
    path = args.output or RESULTS / f"coherence_logit_parts-{args.corpus}-{args.split or 'test'}-{args.seed}.json"
    metric = load_metric("fined-eval", checkpoint=args.checkpoint)
    dialogues = load_checklist_corpus(args.corpus, args.data_dir, args.split)
    record: dict = {"arguments": {**vars(args), "output": str(path)}, "perturbations": {}}
    for name in args.perturbations:
        pairs = build_pairs(PERTURBATIONS[name], dialogues, "dialogue", args.pairs, args.seed)
        original, perturbed = metric.logit_parts(pairs.originals), metric.logit_parts(pairs.perturbed)
        row = {}
        for size in range(1, len(original) + 1):
            for combination in itertools.combinations(original, size):
                difference = sum(original[part] - perturbed[part] for part in combination)
                row[" + ".join(combination)] = {
                    "win_rate": win_rate(difference, np.zeros_like(difference), args.seed)["win_rate"],
                    "mean_difference": float(np.mean(difference)), "std_difference": float(np.std(difference))}
        record["perturbations"][name] = row
        print(f"{name} ({len(pairs.originals)} pairs):")
        for parts, values in row.items():
            print(f"  {parts:45s} win {values['win_rate']:.3f}  difference {values['mean_difference']:+.3f} "
                  f"± {values['std_difference']:.3f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
