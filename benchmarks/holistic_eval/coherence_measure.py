"""Chooses what HolisticEval's context coherence measures, on DailyDialog validation checklist pairs (never a
benchmark): for each trained checkpoint given, the share of 200 pairs (seed 0) per perturbation in which the human reply
scores higher than the degraded one, with context coherence as the likelihood of Eq. 1 (``c_raw(r|q)``) and as the
pointwise mutual information (``c_raw(r|q) − f_raw(r)``). Both are read from one pass over each pair (raw scores, before
normalisation, which is monotone).

    python benchmarks/holistic_eval/coherence_measure.py runs/he-smollm2/adapter --data-dir ../shared/data \\
        --perturbations random generic echo repeat
"""

from __future__ import annotations

import argparse

from hf_dialeval.evaluation.checklist import PERTURBATIONS, build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information
from hf_dialeval.modeling.loading import load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--split", default="validation")
    parser.add_argument("--perturbations", nargs="+", default=["random", "generic", "echo", "repeat"])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    dialogues = load_checklist_corpus("dailydialog", args.data_dir, args.split)
    pairs_of = {name: build_pairs(PERTURBATIONS[name], dialogues, "turn", args.pairs, args.seed)
                for name in args.perturbations}
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        metric = HolisticEvalMetric(model, tokenizer, device=args.device, dtype=args.dtype)
        for name, pairs in pairs_of.items():
            original_c, original_f, _ = metric.raw_scores(pairs.contexts, pairs.originals)
            perturbed_c, perturbed_f, _ = metric.raw_scores(pairs.contexts, pairs.perturbed)
            likelihood = win_rate(original_c, perturbed_c)["win_rate"]
            pmi = win_rate(pointwise_mutual_information(original_c, original_f),
                           pointwise_mutual_information(perturbed_c, perturbed_f))["win_rate"]
            print(f"{checkpoint} {name}: likelihood {likelihood:.3f}, pmi {pmi:.3f} ({len(pairs.originals)} pairs)",
                  flush=True)


if __name__ == "__main__":
    main()
