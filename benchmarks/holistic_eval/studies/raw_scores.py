"""Spearman of HolisticEval checkpoints' raw scores (before normalisation) on the paper's two benchmarks: context
coherence as the likelihood (Eq. 1) and as the PMI on holistic-context, fluency (Eq. 3) on holistic-fluency, with the
mean token reduction and the sum; in the precision given (fp32 or bf16), so that the two can be compared. Several
checkpoints (a run's checkpoint-<step>/ folders, say) are scored one after the other.

    python benchmarks/holistic_eval/studies/raw_scores.py runs/he-smollm2/adapter --dtype bf16
    python benchmarks/holistic_eval/studies/raw_scores.py runs/he-smollm2/adapter --dtype fp32
"""

from __future__ import annotations

import argparse

from scipy.stats import spearmanr

from hf_dialeval import load_benchmark
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information
from hf_dialeval.modeling.loading import load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    context = load_benchmark("holistic-context", args.data_dir)
    fluency_items = load_benchmark("holistic-fluency", args.data_dir)
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        for reduction in ("mean", "sum"):
            model.config.token_reduction = reduction
            metric = HolisticEvalMetric(model, tokenizer, device=args.device, dtype=args.dtype)
            raw = metric.raw_scores([list(c) for c in context["context"]], context["response"])
            coherence, fluency = raw.coherence, raw.fluency_of_coherence_tokens
            alone = metric.raw_scores([[] for _ in fluency_items["response"]], fluency_items["response"]).fluency
            pmi = pointwise_mutual_information(coherence, fluency)
            print(f"{checkpoint} {reduction}: context likelihood {spearmanr(coherence, context['Coherence'])[0]:.3f}, "
                  f"pmi {spearmanr(pmi, context['Coherence'])[0]:.3f}; "
                  f"fluency {spearmanr(alone, fluency_items['Fluency'])[0]:.3f}", flush=True)


if __name__ == "__main__":
    main()
