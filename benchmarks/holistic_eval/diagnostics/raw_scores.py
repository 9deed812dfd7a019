"""Spearman of a HolisticEval checkpoint's raw scores (before normalisation) on the paper's two benchmarks: context
coherence as the likelihood (Eq. 1) and as the PMI on holistic-context, fluency (Eq. 3) on holistic-fluency, with the
mean token reduction and the sum; in the precision given (fp32 or bf16), so that the two can be compared.

    python benchmarks/holistic_eval/diagnostics/raw_scores.py runs/he-smollm2/adapter bf16
    python benchmarks/holistic_eval/diagnostics/raw_scores.py runs/he-smollm2/adapter fp32
"""

from __future__ import annotations

import sys

from scipy.stats import spearmanr

from hf_dialeval import load_benchmark
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information
from hf_dialeval.modeling.loading import load_checkpoint


def main() -> None:
    checkpoint, dtype = sys.argv[1], sys.argv[2]
    data_dir = sys.argv[3] if len(sys.argv) > 3 else None
    model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
    context, fluency_items = load_benchmark("holistic-context", data_dir), load_benchmark("holistic-fluency", data_dir)
    for reduction in ("mean", "sum"):
        model.config.token_reduction = reduction
        metric = HolisticEvalMetric(model, tokenizer, device="cpu", dtype=dtype)
        coherence, fluency, _ = metric.raw_scores([list(c) for c in context["context"]], context["response"])
        _, alone, _ = metric.raw_scores([[] for _ in fluency_items["response"]], fluency_items["response"])
        pmi = pointwise_mutual_information(coherence, fluency)
        print(f"{reduction}: context likelihood {spearmanr(coherence, context['Coherence'])[0]:.3f}, "
              f"pmi {spearmanr(pmi, context['Coherence'])[0]:.3f}; "
              f"fluency {spearmanr(alone, fluency_items['Fluency'])[0]:.3f}", flush=True)


if __name__ == "__main__":
    main()
