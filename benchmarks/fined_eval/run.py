"""FineD-Eval benchmarks (results in ``results/``):

1. FED, dialogue level, all 11 dimensions: the checkpoint's overall score, the mean of its coherence and
   likability heads (when it has a third) and each of its heads, beside the paper's Table 3 / Table 8 Spearman
   correlations (FineD-Eval_mu, M^Coh + M^Lik, the sub-metrics).
2. Long dialogues: windowed scoring vs. truncation (keep the start / the end) at 512 and 256 tokens.
3. Throughput on this machine: dialogues per second scoring ``fed-dialogue`` x8 with the metric, against the
   model's raw forward pass on the same pre-tokenised, length-sorted, pre-padded batches, and against a
   naive one-dialogue-at-a-time loop.

    python benchmarks/fined_eval/run.py [--checkpoint PATH] [--data-dir DIR] [--skip-throughput]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from hf_dialeval import correlate, format_markdown, human_dimensions, load_benchmark, load_metric
from hf_dialeval.evaluation.meta_evaluation import results_record, write_results
from hf_dialeval.evaluation.statistics import compare_spearman
from hf_dialeval.inference.model_metric import padded_batches
from hf_dialeval.metrics.fined_eval import encode_dialogues

RESULTS = Path(__file__).resolve().parent / "results"


def fed_tables(metric, fed, checkpoint: str | None) -> dict[str, float]:
    output = metric.score_dataset(fed)
    tables, summary = [], {}
    # (what is scored, its scores, the paper's row it is compared with, the results file)
    rows = [("overall", output.select("overall"), "fined-eval", "fed-dialogue.json")]
    if {"coherence", "likability"} < set(metric.dimensions):  # the paper's M^Coh + M^Lik, from this model's heads
        mean_of_two = np.mean([output.select("coherence"), output.select("likability")], axis=0).tolist()
        rows.append(("mean of the coherence and likability heads", mean_of_two, "fined-eval:coherence+likability",
                     "fed-dialogue.coherence+likability.json"))
    rows += [(f"{dim} head", output.select(dim), f"fined-eval:{dim}", f"fed-dialogue.{dim}.json")
             for dim in metric.dimensions]
    for description, scores, name, filename in rows:
        result = results_record(output, scores, fed, "fed-dialogue", name, checkpoint)
        tables.append(f"score: {description}, compared with the paper's `{name}`\n\n" + format_markdown(result))
        summary[name] = result["dimensions"]["Overall"]["spearman"]
        write_results(result, RESULTS / filename)
    (RESULTS / "fed-dialogue.md").write_text("\n\n".join(tables) + "\n", encoding="utf-8")
    print("\n\n".join(tables))
    return summary


def long_dialogue_modes(checkpoint: str | None, fed) -> dict:
    comparison = {}
    dims = human_dimensions(fed)
    for max_seq_length in (512, 256):
        overall = {}
        for mode in ("window", "keep_start", "keep_end"):
            metric = load_metric("fined-eval", checkpoint=checkpoint, long_dialogue=mode, max_seq_length=max_seq_length)
            output = metric.score_dataset(fed)
            overall[mode] = output.overall
            spearman = {d: correlate(output.overall, fed[d], n_resamples=10)["spearman"] for d in dims}
            comparison[f"{mode}@{max_seq_length}"] = {
                "max_seq_length": max_seq_length, "long_dialogue": mode, "dialogues_over_limit": int(sum(output.truncated))
                if mode != "window" else None, "spearman": spearman, "mean_spearman": float(np.mean(list(spearman.values()))),
            }
        for mode in ("keep_start", "keep_end"):  # paired bootstrap on FED Overall: is the difference real?
            comparison[f"window@{max_seq_length}"][f"overall_minus_{mode}"] = compare_spearman(
                overall["window"], overall[mode], fed["Overall"])
    lines = ["| setting | Overall | Coherent | Likeable | Depth | mean of 11 |", "|---|---|---|---|---|---|"]
    for name, row in comparison.items():
        s = row["spearman"]
        lines.append(f"| {name} | {s['Overall']:+.3f} | {s['Coherent']:+.3f} | {s['Likeable']:+.3f} | "
                     f"{s['Depth']:+.3f} | {row['mean_spearman']:+.3f} |")
    for max_seq_length in (512, 256):
        for mode in ("keep_start", "keep_end"):
            d = comparison[f"window@{max_seq_length}"][f"overall_minus_{mode}"]
            lines.append(f"\nOverall, window − {mode} at {max_seq_length}: {d['spearman_difference']:+.3f} (95% CI "
                         f"[{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}], {d['items_scored_differently']} dialogues differ)")
    table = "\n".join(lines)
    (RESULTS / "long_dialogue.json").write_text(json.dumps(comparison, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "long_dialogue.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    return comparison


def throughput(checkpoint: str | None, fed, repeat: int = 8, batch_size: int = 32, rounds: int = 2) -> dict:
    dialogues = [list(d) for d in fed["dialogue"]] * repeat
    metric = load_metric("fined-eval", checkpoint=checkpoint, batch_size=batch_size)
    model, tokenizer = metric.models[0], metric.tokenizers[0]
    config = model.config
    encoded = encode_dialogues(tokenizer, dialogues, config.utterance_token_id, config.max_seq_length,
                               config.long_dialogue, config.window_overlap)
    batches = [batch for _, batch in
               padded_batches({"input_ids": encoded.input_ids}, batch_size, metric.collators[0])]

    def run_metric() -> float:
        start = time.perf_counter()
        metric.score_dialogues(dialogues)
        return time.perf_counter() - start

    @torch.inference_mode()
    def run_raw() -> float:  # the model's own forward: encoder, heads and the adjacency pass when it has one
        start = time.perf_counter()
        for batch in batches:
            model(**batch)
        return time.perf_counter() - start

    naive_dialogues = dialogues[: len(fed)]

    @torch.inference_mode()
    def run_naive() -> float:
        start = time.perf_counter()
        for dialogue in naive_dialogues:
            ids = tokenizer(f" {config.utterance_token} ".join(dialogue), truncation=True,
                            max_length=config.max_seq_length, return_tensors="pt")
            model(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"])
        return time.perf_counter() - start

    run_raw()  # warm-up
    times = {"metric": [], "raw_forward": []}
    for _ in range(rounds):  # interleaved, best of `rounds`: the CPU is shared with other jobs
        times["metric"].append(run_metric())
        times["raw_forward"].append(run_raw())
    naive = run_naive()
    result = {
        "dialogues": len(dialogues), "encoder_inputs": len(encoded.input_ids), "batch_size": batch_size,
        "torch_threads": torch.get_num_threads(), "seconds": times, "naive_seconds": naive,
        "naive_dialogues": len(naive_dialogues),
        "metric_dialogues_per_second": len(dialogues) / min(times["metric"]),
        "raw_forward_dialogues_per_second": len(dialogues) / min(times["raw_forward"]),
        "naive_dialogues_per_second": len(naive_dialogues) / naive,
    }
    result["ratio_metric_to_raw_forward"] = result["metric_dialogues_per_second"] / result["raw_forward_dialogues_per_second"]
    result["speedup_over_naive"] = result["metric_dialogues_per_second"] / result["naive_dialogues_per_second"]
    (RESULTS / "throughput.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="FineD-Eval checkpoint (default: the shipped one)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-long-dialogue", action="store_true")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    fed = load_benchmark("fed-dialogue", data_dir=args.data_dir)
    fed_tables(load_metric("fined-eval", checkpoint=args.checkpoint), fed, args.checkpoint)
    if not args.skip_long_dialogue:
        long_dialogue_modes(args.checkpoint, fed)
    if not args.skip_throughput:
        throughput(args.checkpoint, fed)


if __name__ == "__main__":
    main()
