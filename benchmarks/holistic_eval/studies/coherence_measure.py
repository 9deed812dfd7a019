"""Chooses what HolisticEval's context coherence measures, on DailyDialog validation checklist pairs (never a
benchmark): for each trained checkpoint given, the share of 200 pairs (seed 0) per perturbation in which the human reply
scores higher than the degraded one, with context coherence as the likelihood of Eq. 1 (``c_raw(r|q)``) and as the
pointwise mutual information (``c_raw(r|q) − f_raw(r)``). Both are read from one pass over each pair (raw scores, before
normalisation, which is monotone). ``pmi_weight.py`` reuses the pairs and their raw scores for the weights between.

    python benchmarks/holistic_eval/studies/coherence_measure.py runs/he-smollm2/adapter --data-dir ../shared/data \\
        --perturbations random generic echo repeat
"""

from __future__ import annotations

import argparse

from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information
from hf_dialeval.modeling.loading import load_checkpoint

#: Each side of a checklist pair as HolisticEval's two raw scores, ``(c_raw(r|q), f_raw(r))``.
RawPair = tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]


def validation_pairs(data_dir: str | None, perturbations: list[str], pairs: int = 200, seed: int = 0,
                     split: str = "validation") -> dict:
    """DailyDialog ``split`` turn pairs (human reply, degraded reply) per perturbation."""
    dialogues = load_checklist_corpus("dailydialog", data_dir, split)
    return {name: build_pairs(PERTURBATIONS[name], dialogues, "turn", pairs, seed) for name in perturbations}


def pair_raw_scores(metric: HolisticEvalMetric, pairs) -> RawPair:
    """The raw context coherence and fluency of the human replies and of the degraded ones."""
    original = metric.raw_scores(pairs.contexts, pairs.originals)
    perturbed = metric.raw_scores(pairs.contexts, pairs.perturbed)
    return ((original.coherence, original.fluency_of_coherence_tokens),
            (perturbed.coherence, perturbed.fluency_of_coherence_tokens))


def weighted_win_rate(raw: RawPair, weight: float) -> float:
    """The share of pairs whose human reply scores higher on ``c_raw(r|q) − weight · f_raw(r)`` (ties half)."""
    original, perturbed = raw
    return win_rate(pointwise_mutual_information(*original, weight),
                    pointwise_mutual_information(*perturbed, weight))["win_rate"]


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
    pairs_of = validation_pairs(args.data_dir, args.perturbations, args.pairs, args.seed, args.split)
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        metric = HolisticEvalMetric(model, tokenizer, device=args.device, dtype=args.dtype)
        for name, pairs in pairs_of.items():
            raw = pair_raw_scores(metric, pairs)
            print(f"{checkpoint} {name}: likelihood {weighted_win_rate(raw, 0.0):.3f}, pmi "
                  f"{weighted_win_rate(raw, 1.0):.3f} ({len(pairs.originals)} pairs)", flush=True)


if __name__ == "__main__":
    main()
