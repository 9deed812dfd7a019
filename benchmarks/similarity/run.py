"""The similarity floor with each offline encoder (MiniLM; MPNet after ``hf-dialeval models install mpnet``), in
fp32 and under ``torch.autocast("cpu", dtype=torch.bfloat16)``: scoring throughput on grade-convai2 and its Spearman
with the human coherence ratings, so that a bf16 speed-up is only taken where it changes nothing that matters.

    python benchmarks/similarity/run.py [--data-dir DIR] [--repeats 3]

Writes ``benchmarks/similarity/results/throughput.json``. Throughput is the best of ``--repeats`` timed runs of
scoring all 600 items (after one warm-up run), at the torch thread count of the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

import torch

from hf_dialeval import correlate, load_benchmark, load_metric
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID, MPNET_HUB_ID

RESULTS = Path(__file__).resolve().parent / "results" / "throughput.json"
PRECISIONS = {"fp32": contextlib.nullcontext, "bf16": lambda: torch.autocast("cpu", dtype=torch.bfloat16)}


def measure(checkpoint: str, dataset, precision: str, repeats: int) -> dict:
    metric = load_metric("similarity", checkpoint=checkpoint)
    with PRECISIONS[precision]():
        metric.score_dataset(dataset)  # warm-up
        seconds = []
        for _ in range(repeats):
            started = time.perf_counter()
            output = metric.score_dataset(dataset)
            seconds.append(time.perf_counter() - started)
    spearman = correlate(output.overall, dataset["Coherence"])["spearman"]
    return {"items_per_second": round(len(dataset) / min(seconds), 1), "seconds": [round(s, 2) for s in seconds],
            "spearman": round(spearman, 4), "parameters_millions": round(metric.model.num_parameters() / 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dataset = load_benchmark("grade-convai2", args.data_dir)
    results = {"benchmark": "grade-convai2", "items": len(dataset), "torch_threads": torch.get_num_threads(),
               "encoders": {}}
    for name in (MINILM_HUB_ID, MPNET_HUB_ID):
        rows = {precision: measure(name, dataset, precision, args.repeats) for precision in PRECISIONS}
        rows["bf16_speedup"] = round(rows["bf16"]["items_per_second"] / rows["fp32"]["items_per_second"], 2)
        rows["bf16_spearman_change"] = round(rows["bf16"]["spearman"] - rows["fp32"]["spearman"], 4)
        results["encoders"][name] = rows
        print(name, json.dumps(rows))
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
