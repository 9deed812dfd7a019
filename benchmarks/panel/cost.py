"""What the panel costs: items/s of the shipped panel and of each of its members, fp32 and bf16, on GRADE-ConvAI2's
600 turns (the items of ``benchmarks/scale``'s warm-scoring table), in one pass after a warm-up on 32 of them.

    python benchmarks/panel/cost.py [--data-dir DIR] [--threads 2]

The panel scores the items once; each member's share is the time inside its own ``score_turns`` within that pass, so
the members' seconds and the panel's come from the same run. The panel's seconds include loading its members, one at
a time, for each call. Writes ``results/cost.json``, with the CPU's bf16
instructions (bf16 is faster only on a CPU that has them).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch

from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.precision import cpu_bf16_instructions

RESULTS = Path(__file__).resolve().parent / "results"
WARM_UP_ITEMS = 32


def timed_members(panel) -> dict[str, float]:
    """Seconds spent in each member's ``score_turns`` from now on (the panel's only call into its members), each
    member loaded afresh with its calls timed."""
    spent = dict.fromkeys(panel.member_loaders, 0.0)
    panel.release()
    for name, load in list(panel.member_loaders.items()):
        def timed_load(batch_size, _name=name, _load=load):
            member = _load(batch_size=batch_size)
            score = member.score_turns

            def score_turns(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return score(*args, **kwargs)
                finally:
                    spent[_name] += time.perf_counter() - start
            member.score_turns = score_turns
            return member
        panel.member_loaders[name] = timed_load
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    items = list(load_benchmark("grade-convai2", args.data_dir))
    found = cpu_bf16_instructions()
    record = {"benchmark": "grade-convai2", "items": len(items), "torch_threads": args.threads,
              "cpu_bf16_instructions": None if found is None else list(found), "precisions": {}}
    for dtype in ("fp32", "bf16"):
        panel = load_metric("panel", device="cpu", dtype=dtype)
        panel.score_items(items[:WARM_UP_ITEMS])
        spent = timed_members(panel)
        start = time.perf_counter()
        panel.score_items(items)
        seconds = time.perf_counter() - start
        record["precisions"][dtype] = {
            "panel": {"seconds": round(seconds, 2), "items_per_s": round(len(items) / seconds, 2)},
            **{name: {"seconds": round(s, 2), "items_per_s": round(len(items) / s, 2)} for name, s in spent.items()}}
        print(dtype, json.dumps(record["precisions"][dtype]), flush=True)
        del panel, spent  # one panel's models in memory at a time
        gc.collect()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cost.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
