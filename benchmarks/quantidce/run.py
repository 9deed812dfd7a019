"""QuantiDCE on grade-convai2 (paper Table 1, ConvAI2): the shipped default, the ablations, the similarity
floor, and the scoring throughput relative to the raw forward pass.

  python benchmarks/quantidce/run.py --data-dir ../shared/data \\
      --mlr-only runs/quantidce-mlr --mse-only runs/quantidce-mse --out benchmarks/quantidce/results

Rows: ``default`` (MLR + KD, shipped in the package; what ``hf-dialeval benchmark --metric quantidce`` scores),
``mlr-only`` (stage 1 alone; Table 3 "w/o KD fine-tuning" in miniature), ``mse-only`` (stage 2 with the MSE
term alone; Table 4 "MSE" in miniature), and ``minilm-cosine-floor`` (the ``similarity`` metric: untrained MiniLM
sentence embeddings, cosine of the last context utterance and the response).
Throughput: the same pre-tokenised, length-sorted, padded batches through the bare model (raw) against
``metric.score_turns`` on the raw text (tokenisation, sorting, padding, forward, bookkeeping); best of N.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.evaluation.meta_evaluation import format_markdown, meta_evaluate
from hf_dialeval.evaluation.statistics import correlate

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for benchmarks/common/
from benchmarks.common.throughput import scoring_throughput  # noqa: E402

BENCHMARK = "grade-convai2"
DIMENSION = "Coherence"
PAPER = {  # Ye et al. 2021, Table 1, ConvAI2
    "QuantiDCE": {"pearson": 0.554, "spearman": 0.554, "kendall": 0.395},
    "GRADE": {"pearson": 0.496, "spearman": 0.503, "kendall": 0.356},
}


def throughput(metric, dataset, repeats: int) -> dict[str, float]:
    contexts, responses = [list(c) for c in dataset["context"]], list(dataset["response"])
    encoding, _ = metric.encode(contexts, responses)
    metric.score_turns(contexts[:8], responses[:8])  # warm-up
    return scoring_throughput(metric, encoding, lambda: metric.score_turns(contexts, responses), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--mlr-only", default=None, help="stage-1 checkpoint (MLR pre-training only)")
    parser.add_argument("--mse-only", default=None, help="stage-2 checkpoint fine-tuned with MSE alone")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--repeats", type=int, default=3, help="timing runs; the best is kept")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dataset = load_benchmark(BENCHMARK, args.data_dir)

    results: dict = {"benchmark": BENCHMARK, "n": len(dataset), "paper": PAPER, "rows": {}}
    markdown = []
    for row, checkpoint in (("default", None), ("mlr-only", args.mlr_only), ("mse-only", args.mse_only)):
        if row != "default" and checkpoint is None:
            continue
        metric = load_metric("quantidce", checkpoint=checkpoint, device="cpu")
        result, _ = meta_evaluate(metric, dataset, BENCHMARK, metric_name="quantidce")
        result["checkpoint"] = "shipped default" if checkpoint is None else Path(checkpoint).name
        results["rows"][row] = result
        markdown.append(f"### {row}\n\n{format_markdown(result)}")
        if row == "default":
            results["throughput"] = throughput(metric, dataset, args.repeats)
    floor = correlate(load_metric("similarity", device="cpu").score_dataset(dataset).overall, dataset[DIMENSION])
    results["rows"]["minilm-cosine-floor"] = {"dimensions": {DIMENSION: floor}}

    lines = ["| row | Pearson | Spearman | Kendall |", "|---|---|---|---|"]
    for name, values in PAPER.items():
        lines.append(f"| paper: {name} | {values['pearson']:.3f} | {values['spearman']:.3f} | {values['kendall']:.3f} |")
    for row, result in results["rows"].items():
        cell = result["dimensions"][DIMENSION]
        lines.append(f"| ours: {row} | {cell['pearson']:.3f} | {cell['spearman']:.3f} | {cell['kendall']:.3f} |")
    summary = "\n".join(lines)
    t = results.get("throughput", {})
    summary += (f"\n\nThroughput ({t.get('items')} items, batch {t.get('batch_size')}): raw forward {t.get('raw_forward_s')} s, "
                f"score_turns {t.get('scoring_s', t.get('score_turns_s'))} s, ratio {t.get('ratio_raw_over_scoring')}\n")
    (out / f"{BENCHMARK}.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / f"{BENCHMARK}.md").write_text(summary + "\n" + "\n".join(markdown), encoding="utf-8")
    print(summary)


if __name__ == "__main__":
    main()
