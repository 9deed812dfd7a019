"""Scale benchmarks, on this machine's CPU.

* ``precision``: every shipped default scores FED (turn and dialogue level) and GRADE-ConvAI2 (RADE, which needs a
  reference: RADE-emotion) in fp32 and under bf16 autocast: seconds of each, the speed-up, the Spearman of every
  human-rated dimension in both and the largest |change|; and, from the fp32 run, the time inside the model's
  forward passes over the whole scoring time (the scoring path's overhead: 1 would cost nothing; the same batches,
  timed by forward hooks). Dial-M, the slowest, skips FED's dialogue level.
* ``throughput``: the same ratio warm (after a warm-up pass, best of three), fp32 and bf16, on GRADE-ConvAI2.
* ``memory``: peak RSS of ``hf-dialeval score`` (streamed) on 1k and 100k turn-level items, each run its own process.
* ``scaling``: the same items scored by one process and by two under ``torchrun`` (one thread each), items/s.
* ``adapt``: each ``hf-dialeval adapt`` route (metric and data kind) with its defaults but ``--max-steps`` (6), on
  GRADE-ConvAI2's 600 ratings (short contexts) and FED's 375 turn-level ratings (long contexts; Overall), each
  written as a user's ratings file and as dialogues (context then reply): per stage, seconds a step (adapt's own
  estimate line: its second step) and peak memory (its report's); the whole run's seconds and peak RSS.
* ``limit``: each turn-level default's ``score`` of 900 persona-chat items (RADE's PersonaChat, its test split and
  then its validation split), in its default precision and in fp32, against its hardware limit: one plain bf16
  forward pass of its backbone's base model (the default's, its linear weights stored in bf16 as the default scores
  with them) over each item's context and reply (joined by line breaks, the oldest
  tokens cut to the metric's token limit), in length-sorted batches of the metric's batch size. The base model is
  what every metric over the backbone runs at least once per item: without a causal LM's vocabulary projection
  (which HolisticEval and Dial-M run at the positions they score), a sequence-to-sequence model's encoder. Beside it,
  the whole limit: one bf16 forward pass of the whole backbone over the text the metric reads, an LM's output layer
  included (its logits at every position, what ``AutoModelForCausalLM`` computes, a slice at a time)
  and, for a metric that reads a reference (RADE), the reference between the context and the reply. Each row also
  gives the token positions run (padding included) in the default's scoring and in both limits, and the process's
  peak resident size in each measurement (from loading the model on; the fp32 model is measured first and freed
  before the default's loads). Each timing is the fastest of the passes run
  within ``--budget`` seconds; ``--label NAME`` writes ``limit-NAME.json``, for another CPU's.

    python benchmarks/scale/run.py precision --data-dir ../shared/data [--metrics NAME ...]
    python benchmarks/scale/run.py throughput --data-dir ../shared/data [--metrics NAME ...]
    python benchmarks/scale/run.py memory [--metric NAME --counts N ... --checkpoint DIR --label NAME]
    python benchmarks/scale/run.py scaling
    python benchmarks/scale/run.py limit --data-dir ../shared/data [--metrics NAME ...] [--label NAME]
    python benchmarks/scale/run.py adapt --data-dir ../shared/data [--metrics NAME ...] [--max-steps N]

Results go to ``benchmarks/scale/results/`` (JSON, and ``scale.md`` built from all of them by ``report``). With
``--metrics``, the named defaults' rows replace theirs in ``precision.json`` / ``throughput.json`` and the others
are kept, when the settings (threads, repeats, the CPU's bf16 instructions) match the file's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULTS = ("fined-eval", "quantidce", "holistic-eval", "dial-m", "rade", "similarity")
BENCHMARKS = ("fed-turn", "fed-dialogue", "grade-convai2", "rade-emotion")
WORDS = ("the a cat dog likes runs home blue tea coffee very much i you we go went see movie book read "
         "weekend plans music jazz cook pasta hike mountains").split()


def cpu_bf16_instructions_list() -> list[str] | None:
    """Recorded with every timing: bf16 autocast is fast only on a CPU with bf16 instructions (the committed tables'
    2.2-3.0x came from one where it was; on one without, scoring ran 2.7-3.6x slower), so timings from CPUs that
    differ here are not one table."""
    from hf_dialeval.inference.precision import cpu_bf16_instructions

    found = cpu_bf16_instructions()
    return None if found is None else list(found)


@contextmanager
def forward_seconds(modules):
    """Seconds spent inside the forward passes of ``modules`` (hooks around ``__call__``), a call inside another
    counted once: a metric that runs its model's top-level forward, or its backbone's base model directly
    (HolisticEval's shared contexts)."""
    spent, depth, started, handles = [0.0], [0], [0.0], []

    def enter(module, args):
        if depth[0] == 0:
            started[0] = time.perf_counter()
        depth[0] += 1

    def leave(module, args, output):
        depth[0] -= 1
        if depth[0] == 0:
            spent[0] += time.perf_counter() - started[0]

    for module in modules:
        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    try:
        yield spent
    finally:
        for handle in handles:
            handle.remove()


def timed(metric, score):
    """``score()``'s result, its wall seconds, and the seconds inside ``metric``'s models' forward passes."""
    start = time.perf_counter()
    with forward_seconds([*metric.models, *(base_model_of_model(model) for model in metric.models)]) as inside:
        result = score()
    return result, time.perf_counter() - start, inside[0]


def spearman_of(scores: list[float], human: list[float | None]) -> float:
    """Spearman over the items a person rated."""
    from scipy.stats import spearmanr

    pairs = [(score, rating) for score, rating in zip(scores, human) if rating is not None]
    return round(float(spearmanr(*zip(*pairs)).statistic), 4)


def precision(args: argparse.Namespace) -> None:
    import torch

    from hf_dialeval.data.benchmarks import human_dimensions, load_benchmark
    from hf_dialeval.evaluation.leaderboard import skip_reason
    from hf_dialeval.inference.factory import load_metric

    torch.set_num_threads(args.threads)
    datasets = {name: load_benchmark(name, args.data_dir) for name in BENCHMARKS}
    results = {"torch_threads": args.threads, "cpu_bf16_instructions": cpu_bf16_instructions_list(), "metrics": {}}
    results["metrics"] = earlier_metrics("precision.json", results)
    for name in args.metrics:
        rows = {}
        for dtype in ("fp32", "bf16"):
            metric = load_metric(name, device="cpu", dtype=dtype)
            for benchmark, dataset in datasets.items():
                if skip_reason(metric, dataset) or (name == "dial-m" and benchmark == "fed-dialogue"):
                    continue
                if name != "rade" and benchmark == "rade-emotion":
                    continue
                output, seconds, inside = timed(metric, lambda: metric.score_dataset(dataset))
                spearman = {dim: spearman_of(output.overall, dataset[dim]) for dim in human_dimensions(dataset)}
                row = rows.setdefault(benchmark, {"items": len(dataset)})
                row[dtype] = {"seconds": round(seconds, 2), "forward_seconds": round(inside, 2),
                              "spearman": spearman}
                print(f"{name} {benchmark} {dtype}: {seconds:.1f} s, forward {inside:.1f} s", flush=True)
        for row in rows.values():
            row["speedup"] = round(row["fp32"]["seconds"] / row["bf16"]["seconds"], 2)
            row["max_abs_delta_spearman"] = round(max(abs(row["fp32"]["spearman"][d] - row["bf16"]["spearman"][d])
                                                      for d in row["fp32"]["spearman"]), 4)
            row["ratio_forward_over_scoring_fp32"] = round(row["fp32"]["forward_seconds"] / row["fp32"]["seconds"], 3)
        results["metrics"][name] = rows
        write("precision.json", results)


def throughput(args: argparse.Namespace) -> None:
    """Warm scoring: per default and precision, one pass to warm up, then the best of ``--repeats`` passes over
    GRADE-ConvAI2 (600 turns; Dial-M: the first 300), with the time inside the model's forward passes."""
    import torch

    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.inference.factory import load_metric

    torch.set_num_threads(args.threads)
    dataset = load_benchmark("grade-convai2", args.data_dir)
    items = list(dataset)
    results = {"torch_threads": args.threads, "cpu_bf16_instructions": cpu_bf16_instructions_list(),
               "benchmark": "grade-convai2", "repeats": args.repeats, "metrics": {}}
    results["metrics"] = earlier_metrics("throughput.json", results)
    for name in args.metrics:
        scored = items[:300] if name == "dial-m" else items
        for dtype in ("fp32", "bf16"):
            metric = load_metric(name, device="cpu", dtype=dtype)
            metric.score_items(scored)
            best = min(timed(metric, lambda: metric.score_items(scored))[1:] for _ in range(args.repeats))
            results["metrics"].setdefault(name, {})[dtype] = {
                "items": len(scored), "scoring_s": round(best[0], 3), "forward_s": round(best[1], 3),
                "items_per_s": round(len(scored) / best[0], 1), "ratio_forward_over_scoring": round(best[1] / best[0], 3)}
            print(name, dtype, results["metrics"][name][dtype], flush=True)
    write("throughput.json", results)


LIMIT_METRICS = ("holistic-eval", "dial-m", "quantidce", "rade", "similarity")


def persona_items(data_dir: str | None, count: int) -> list[dict]:
    """``count`` turn-level items of RADE's PersonaChat (context, response, reference): its test split, then its
    validation split."""
    from hf_dialeval.data.benchmarks import load_benchmark

    items = [*load_benchmark("rade-persona", data_dir, split="test"),
             *load_benchmark("rade-persona", data_dir, split="validation")]
    if len(items) < count:
        raise SystemExit(f"rade-persona's test and validation splits hold {len(items)} items, fewer than {count}")
    return items[:count]


def base_model_of(metric):
    """The base model of ``metric``'s backbone (a metric model's; the similarity floor's is the encoder): what a
    forward pass of the limit runs."""
    return base_model_of_model(metric.model)


def base_model_of_model(model, whole: bool = False):
    """The base model of ``model``'s backbone (:func:`base_model_of`); ``whole``: the whole backbone, a causal or
    masked LM with its output layer (its logits at every position). A sequence-to-sequence model's encoder either
    way: what its scoring reads."""
    attribute = getattr(model, "backbone_attribute", None)
    backbone = getattr(model, attribute) if attribute else model
    if backbone.config.is_encoder_decoder:
        return backbone.get_encoder()
    return backbone if whole else backbone.base_model


@contextmanager
def positions_run(module, counter: list[int]):
    """Add to ``counter[0]`` the token positions (padding included) of every forward pass of ``module``."""
    def count(_, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        counter[0] += ids.numel() if ids is not None else 0

    handle = module.register_forward_pre_hook(count, with_kwargs=True)
    try:
        yield counter
    finally:
        handle.remove()


def forward_limit(metric, items: list[dict], whole: bool = False) -> tuple[float, int]:
    """Seconds of one plain bf16 forward pass of ``metric``'s backbone's base model over each item's context and
    reply, in length-sorted batches of the metric's batch size (see the module's ``limit``), and the token
    positions it ran. ``whole``: the whole backbone's forward pass (:func:`base_model_of_model`) over the item's
    text the metric reads: its context, its reference where the metric reads one, and its reply; an LM's output
    layer projects every position (:func:`whole_forward`)."""
    import torch

    from hf_dialeval.inference.metric import length_sorted_batches
    from hf_dialeval.inference.model_metric import pad_rows

    module = base_model_of_model(metric.model, whole)
    read_reference = whole and metric.needs_reference
    texts = ["\n".join([*item["context"], *([item["reference"]] if read_reference else []), item["response"]])
             for item in items]
    tokenizer, limit = metric.tokenizer, metric.max_seq_length
    rows = [{"input_ids": ids[-limit:], "attention_mask": [1] * len(ids[-limit:])}
            for ids in tokenizer(texts, add_special_tokens=True)["input_ids"]]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    positions = 0
    start = time.perf_counter()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        for batch in length_sorted_batches([len(row["input_ids"]) for row in rows], metric.batch_size):
            padded = pad_rows([rows[index] for index in batch], pad)
            positions += padded["input_ids"].numel()
            if whole:
                whole_forward(module, padded)
            else:
                module(**padded)
    return time.perf_counter() - start, positions


def whole_forward(backbone, batch: dict) -> None:
    """``backbone``'s forward pass over ``batch``: its base model, then an LM's output layer (and final soft-capping)
    over every position, padding included, as ``AutoModelForCausalLM`` computes its logits, but at most
    :data:`~hf_dialeval.modeling.lm_head.MAX_LOGITS` logits at a time, each slice dropped (Gemma 3's logits of a whole
    batch of 32 rows took the run to 5.6 GB). A causal LM's output layer is sliced along the vocabulary, every
    position of the batch in each slice: its weight is read once a batch, as unsliced (slices of 256 positions
    instead ran Gemma 3's output layer 1.5 times slower on a CPU without AMX). A masked LM's head (a transform, then
    the projection) runs a slice of positions at a time. A backbone without an output layer (an encoder) runs whole."""
    from torch import nn
    from torch.nn.functional import linear

    from hf_dialeval.modeling.lm_head import MAX_LOGITS, prediction_head, soft_cap

    base = backbone.base_model
    head = prediction_head(backbone) if base is not backbone else None
    if head is None:
        backbone(**batch)
        return
    hidden = base(**batch).last_hidden_state.flatten(0, 1)
    if isinstance(head, nn.Linear):
        rows = max(1, MAX_LOGITS // len(hidden))
        for start in range(0, head.out_features, rows):
            bias = head.bias[start:start + rows] if head.bias is not None else None
            soft_cap(backbone.config, linear(hidden, head.weight[start:start + rows], bias))
        return
    chunk = max(1, MAX_LOGITS // backbone.config.vocab_size)
    for start in range(0, len(hidden), chunk):
        soft_cap(backbone.config, head(hidden[start:start + chunk]))


def fastest_pass(measure, budget: float) -> tuple[float, int, int]:
    """The fewest seconds of ``measure()`` (which returns its seconds and the token positions it ran, the same every
    pass), run again while its passes took under ``budget`` seconds in all, at most five times: a pass of a few
    seconds varies by a tenth from one run to the next, one of a minute much less. Those seconds, the positions and
    the number of passes."""
    runs = []
    while not runs or (sum(seconds for seconds, _ in runs) < budget and len(runs) < 5):
        runs.append(measure())
    return min(seconds for seconds, _ in runs), runs[0][1], len(runs)


def scoring_row(metric, items: list[dict], budget: float) -> dict:
    """``metric``'s precision and fastest ``score_items`` of ``items`` after a warm-up on 32 (:func:`fastest_pass`),
    with the token positions its backbone's base model ran."""
    def scoring_pass() -> tuple[float, int]:
        with positions_run(base_model_of(metric), [0]) as positions:
            seconds = timed(metric, lambda: metric.score_items(items))[1]
        return seconds, positions[0]

    metric.score_items(items[:32])
    seconds, positions, passes = fastest_pass(scoring_pass, budget)
    return {"dtype": str(metric.dtype).removeprefix("torch."), "seconds": round(seconds, 2),
            "items_per_s": round(len(items) / seconds, 1), "positions": positions, "passes": passes}


def reset_peak_rss() -> None:
    """Start this process's peak resident size (``VmHWM``) again from its present size (Linux's ``clear_refs``)."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    """This process's peak resident size (MiB) since it started or :func:`reset_peak_rss` last ran."""
    return round(int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024, 1)


def limit(args: argparse.Namespace) -> None:
    """Per default: warm ``score_items`` seconds in fp32 and in its default precision, and its backbone's forward
    limits, on the same items (each after a warm-up on 32 of them; the fastest of the passes ``fastest_pass`` runs
    within ``--budget`` seconds); the process's peak resident size in each, from the model's loading on (fp32's
    model freed, and its pages handed back, before the default's loads)."""
    import torch

    from hf_dialeval.freed_memory import trim_freed_memory
    from hf_dialeval.inference.factory import load_metric

    torch.set_num_threads(args.threads)
    items = persona_items(args.data_dir, args.items)
    results = {"torch_threads": args.threads, "cpu_bf16_instructions": cpu_bf16_instructions_list(),
               "benchmark": f"rade-persona, {args.items} items",
               "limit": "one bf16 forward pass of the backbone's base model over each item's context and reply",
               "whole_limit": "one bf16 forward pass of the whole backbone (an LM's output layer included, a slice "
                              "of its logits at a time) over each item's context, reference where the metric reads "
                              "one, and reply",
               "peak_rss": "the process's peak resident MiB from loading the model (or, for a limit, from its first "
                           "pass) to its last pass",
               "budget_seconds": args.budget, "metrics": {}}
    name_of_file = f"limit-{args.label}.json" if args.label else "limit.json"
    results["metrics"] = earlier_metrics(name_of_file, results)
    for name in args.metrics:
        reset_peak_rss()
        fp32 = load_metric(name, device="cpu", dtype="fp32")
        row = {"fp32": {**scoring_row(fp32, items, args.budget), "peak_rss_mb": peak_rss_mb()}}
        del fp32
        trim_freed_memory()  # fp32's pages handed back before the default loads
        reset_peak_rss()
        default = load_metric(name, device="cpu")
        row["default"] = {**scoring_row(default, items, args.budget), "peak_rss_mb": peak_rss_mb()}
        # the default's model: its weights stored in bf16 as it scores with them, the fastest bf16 forward pass
        for label, whole in (("limit", False), ("whole_limit", True)):
            reset_peak_rss()
            forward_limit(default, items[:32], whole)
            seconds, positions, passes = fastest_pass(partial(forward_limit, default, items, whole), args.budget)
            row[label] = {"seconds": round(seconds, 2), "items_per_s": round(len(items) / seconds, 1),
                          "positions": positions, "passes": passes, "peak_rss_mb": peak_rss_mb()}
            row[f"default_over_{label}"] = round(seconds / row["default"]["seconds"], 3)
        row["default_over_fp32"] = round(row["fp32"]["seconds"] / row["default"]["seconds"], 2)
        results["metrics"][name] = row
        del default  # freed before the next metric's fp32 model loads
        print(name, row, flush=True)
        write(name_of_file, results)


def synthetic_items(count: int, path: Path) -> Path:
    """``count`` turn-level items of DailyDialog-like length, written as JSONL."""
    rng = random.Random(0)
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(count):
            context = [" ".join(rng.choices(WORDS, k=rng.randint(4, 16))) for _ in range(rng.randint(1, 4))]
            handle.write(json.dumps({"context": context, "response": " ".join(rng.choices(WORDS, k=rng.randint(2, 18))),
                                     "id": index}) + "\n")
    return path


def peak_rss_run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``command`` run in a fresh process that only waits for it."""
    probe = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *command], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
    return round(float(out[0]), 1), round(int(out[1]) / 1024, 1)


def memory(args: argparse.Namespace) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    results = {"metric": args.metric, "checkpoint": args.checkpoint or "default", "label": args.label,
               "dtype": args.dtype, "chunk_items": 1024, "torch_threads": args.threads, "runs": {}}
    name = f"memory-{args.metric}{'-' + args.label if args.label else ''}.json"
    with tempfile.TemporaryDirectory() as folder:
        for count in args.counts:
            source = synthetic_items(count, Path(folder) / f"in-{count}.jsonl")
            command = [sys.executable, "-m", "hf_dialeval.cli", "score", "--metric", args.metric, "--dtype", args.dtype,
                       "--input", str(source), "--output", str(Path(folder) / f"out-{count}.jsonl"),
                       *(["--checkpoint", args.checkpoint] if args.checkpoint else [])]
            seconds, peak = peak_rss_run(command, env)
            results["runs"][str(count)] = {"seconds": seconds, "peak_rss_mib": peak,
                                           "input_mib": round(source.stat().st_size / 2**20, 1),
                                           "items_per_s": round(count / seconds, 1)}
            print(count, results["runs"][str(count)], flush=True)
    previous = RESULTS / name
    if previous.is_file():  # runs of other sizes are kept
        results["runs"] = {**json.loads(previous.read_text())["runs"], **results["runs"]}
    results["runs"] = dict(sorted(results["runs"].items(), key=lambda run: int(run[0])))
    write(name, results)


def scaling(args: argparse.Namespace) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    results = {"metric": args.metric, "dtype": args.dtype, "items": args.items, "runs": {}}
    with tempfile.TemporaryDirectory() as folder:
        source = synthetic_items(args.items, Path(folder) / "in.jsonl")
        score = ["-m", "hf_dialeval.cli", "score", "--metric", args.metric, "--dtype", args.dtype, "--input",
                 str(source), "--chunk-size", "512"]
        commands = {"1 process, 1 thread": [sys.executable, *score, "--output", str(Path(folder) / "one.jsonl")],
                    "2 processes (torchrun), 1 thread each": [
                        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone", *score,
                        "--output", str(Path(folder) / "two.jsonl")]}
        for label, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds = time.perf_counter() - start
            results["runs"][label] = {"seconds": round(seconds, 1), "items_per_s": round(args.items / seconds, 1)}
            print(label, results["runs"][label], flush=True)
        results["outputs_identical"] = (Path(folder) / "one.jsonl").read_bytes() == (Path(folder) / "two.jsonl").read_bytes()
    write(f"scaling-{args.metric}.json", results)


#: Each ``adapt`` route: the metric and the data its stages train on.
ADAPT_ROUTES = (("quantidce", "ratings"), ("rade", "ratings"), ("panel", "ratings"), ("quantidce", "dialogues"),
                ("holistic-eval", "dialogues"), ("fined-eval", "dialogues"), ("dial-m", "dialogues"))
#: The rated benchmarks each route trains on, and the dimension taken as the score: short contexts, then long ones.
ADAPT_DATA = {"grade-convai2": "Coherence", "fed-turn": "Overall"}
STEP_ESTIMATE = re.compile(r"hf-dialeval: (\S+): \d+ steps, about .* \(([\d.]+) s a step measured\)")


def adapt_files(data_dir: str | None, benchmark: str, folder: Path) -> dict[str, Path]:
    """``benchmark``'s items as a user's own files: ratings (context, response, score and, where it has them, the
    reference) and dialogues (each context followed by its reply)."""
    from hf_dialeval.data.benchmarks import load_benchmark

    rated = load_benchmark(benchmark, data_dir)
    ratings, dialogues = folder / f"{benchmark}-ratings.jsonl", folder / f"{benchmark}-dialogues.jsonl"
    with open(ratings, "w", encoding="utf-8") as rows, open(dialogues, "w", encoding="utf-8") as conversations:
        for item in rated:
            row = {"context": item["context"], "response": item["response"], "score": item[ADAPT_DATA[benchmark]]}
            if item["reference"]:
                row["reference"] = item["reference"]
            rows.write(json.dumps(row) + "\n")
            conversations.write(json.dumps({"dialogue": [*item["context"], item["response"]]}) + "\n")
    return {"ratings": ratings, "dialogues": dialogues}


def adapt(args: argparse.Namespace) -> None:
    """Per adapt route and benchmark: ``hf-dialeval adapt`` with its defaults but ``--max-steps``, in its own
    process: each stage's measured seconds a step (the estimate adapt prints) and peak memory (its report's), and
    the whole run's peak RSS (the kernel's, of the process and its children)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    results = {"torch_threads": args.threads, "cpu_bf16_instructions": cpu_bf16_instructions_list(),
               "max_steps": args.max_steps, "metrics": {}}
    results["metrics"] = earlier_metrics("adapt.json", results)
    probe = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
             "done = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], 'w')); "
             "print(done.returncode, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files = {benchmark: adapt_files(args.data_dir, benchmark, folder) for benchmark in ADAPT_DATA}
        for metric, kind in ADAPT_ROUTES:
            if args.metrics and metric not in args.metrics:
                continue
            for benchmark in ADAPT_DATA:
                label = f"{metric} --{kind} {benchmark}"
                if metric == "rade" and benchmark == "fed-turn":
                    results["metrics"][label] = {"skipped": "FED has no reference replies, which RADE reads"}
                    continue
                stderr = folder / "stderr.txt"
                output = folder / f"{metric}-{kind}-{benchmark}"
                command = [sys.executable, "-m", "hf_dialeval.cli", "adapt", metric, f"--{kind}", str(files[benchmark][kind]),
                           "--output-dir", str(output), "--max-steps", str(args.max_steps)]
                out = subprocess.run([sys.executable, "-c", probe, str(stderr), *command], env=env, check=True,
                                     capture_output=True, text=True).stdout.split()
                if out[0] != "0":  # recorded with adapt's own last line, and the other routes still run
                    results["metrics"][label] = {"failed": stderr.read_text().strip().splitlines()[-1]}
                    print(label, results["metrics"][label], flush=True)
                    write("adapt.json", results)
                    continue
                report = json.loads((output / "adaptation_report.json").read_text())
                measured = dict(STEP_ESTIMATE.findall(stderr.read_text()))
                results["metrics"][label] = {
                    "seconds": round(float(out[1]), 1), "peak_rss_mb": round(int(out[2]) / 1024),
                    "stages": [{"stage": step["command"], "seconds_a_step": float(measured[step["command"]])
                                if step["command"] in measured else None,
                                "peak_memory_mb": step.get("peak_memory_mb"), "truncated": step.get("truncated")}
                               for step in report["steps"]]}
                print(label, results["metrics"][label], flush=True)
                write("adapt.json", results)


def report(args: argparse.Namespace) -> None:
    """``results/scale.md``: the tables of every result file present."""
    lines = ["### bf16 autocast against fp32 (CPU, 2 threads)", "",
             "| metric | benchmark | items | fp32 s | bf16 s | speed-up | max abs change of Spearman | "
             "forward / scoring time, fp32 (first pass) | same, bf16 (second pass) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    precision_file = RESULTS / "precision.json"
    if precision_file.is_file():
        for metric, rows in json.loads(precision_file.read_text())["metrics"].items():
            for benchmark, row in rows.items():
                lines.append(f"| {metric} | {benchmark} | {row['items']} | {row['fp32']['seconds']} | "
                             f"{row['bf16']['seconds']} | {row['speedup']}x | {row['max_abs_delta_spearman']:.4f} | "
                             f"{row['ratio_forward_over_scoring_fp32']} | "
                             f"{row['bf16']['forward_seconds'] / row['bf16']['seconds']:.3f} |")
    throughput_file = RESULTS / "throughput.json"
    if throughput_file.is_file():
        result = json.loads(throughput_file.read_text())
        lines += ["", f"### Warm scoring on {result['benchmark']} (best of {result['repeats']} after a warm-up)", "",
                  "| metric | precision | items | scoring s | forward s | items/s | forward / scoring |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {name} | {dtype} | {run['items']} | {run['scoring_s']} | {run['forward_s']} | {run['items_per_s']} | "
                  f"{run['ratio_forward_over_scoring']} |"
                  for name, runs in result["metrics"].items() for dtype, run in runs.items()]
    for limit_file in sorted(RESULTS.glob("limit*.json")):  # one table per CPU
        result = json.loads(limit_file.read_text())
        passes = (f"the fastest of the passes run within {result['budget_seconds']:g} s (at most 5)"
                  if "budget_seconds" in result else "one pass")
        peaks = "peak_rss" in result  # files measured before peaks were recorded have none
        lines += ["", f"### Against the forward-pass limit ({result['benchmark']}; limit: {result['limit']}, "
                      "bf16, length-sorted batches of the metric's batch size)", "",
                  f"whole limit: {result['whole_limit']}. CPU bf16 instructions: "
                  f"{', '.join(result['cpu_bf16_instructions'] or ['none'])}; {passes} after a warm-up."
                  + (f" Peak RSS: {result['peak_rss']}." if peaks else ""), "",
                  "| metric | default precision | default items/s | fp32 items/s | limit items/s | default / limit | "
                  "whole limit items/s | default / whole limit | default / fp32 | positions run: default, limit, "
                  "whole limit |" + (" peak RSS MiB: default, fp32, whole limit |" if peaks else ""),
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if peaks else "")]
        lines += [f"| {name} | {row['default']['dtype']} | {row['default']['items_per_s']} | "
                  f"{row['fp32']['items_per_s']} | {row['limit']['items_per_s']} | {row['default_over_limit']} | "
                  f"{row['whole_limit']['items_per_s']} | {row['default_over_whole_limit']} | "
                  f"{row['default_over_fp32']}x | {row['default']['positions']:,}, {row['limit']['positions']:,}, "
                  f"{row['whole_limit']['positions']:,} |"
                  + (f" {row['default']['peak_rss_mb']:,}, {row['fp32']['peak_rss_mb']:,}, "
                     f"{row['whole_limit']['peak_rss_mb']:,} |" if peaks else "")
                  for name, row in result["metrics"].items()]
    adapt_file = RESULTS / "adapt.json"
    if adapt_file.is_file():
        result = json.loads(adapt_file.read_text())
        lines += ["", f"### `adapt` routes (defaults, `--max-steps {result['max_steps']}`; GRADE-ConvAI2: 600 short "
                      "contexts, FED: 375 long ones)", "",
                  "| route | data | stage | seconds a step | stage peak MB | whole run: seconds, peak RSS MB |",
                  "|---|---|---|---:|---:|---:|"]
        for label, row in result["metrics"].items():
            route, benchmark = label.rsplit(" ", 1)
            if "stages" not in row:
                lines.append(f"| {route} | {benchmark} | {row.get('skipped') or 'failed: ' + row['failed']} | | | |")
                continue
            for stage in row["stages"]:
                lines.append(f"| {route} | {benchmark} | {stage['stage']} | {stage['seconds_a_step'] or '-'} | "
                             f"{stage['peak_memory_mb']} | {row['seconds']}, {row['peak_rss_mb']} |")
    for path in sorted(RESULTS.glob("memory-*.json")):
        result = json.loads(path.read_text())
        label = f", {result['label']}" if result.get("label") else ""  # another checkpoint than the default
        lines += ["", f"### Peak RSS of a streamed `score` ({result['metric']}{label}, {result['dtype']})", "",
                  "| items | input MiB | seconds | peak RSS MiB |", "|---:|---:|---:|---:|"]
        lines += [f"| {count} | {run['input_mib']} | {run['seconds']} | {run['peak_rss_mib']} |"
                  for count, run in result["runs"].items()]
    for path in sorted(RESULTS.glob("scaling-*.json")):
        result = json.loads(path.read_text())
        lines += ["", f"### Data-parallel scoring ({result['metric']}, {result['dtype']}, {result['items']} items, "
                      f"outputs identical: {result['outputs_identical']})", "", "| run | seconds | items/s |",
                  "|---|---:|---:|"]
        lines += [f"| {label} | {run['seconds']} | {run['items_per_s']} |" for label, run in result["runs"].items()]
    (RESULTS / "scale.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def write(name: str, results: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / name).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def earlier_metrics(name: str, results: dict) -> dict:
    """The metrics ``results/name`` already holds, to keep beside this run's (``--metrics`` re-measures one default
    after it changes); refused before any measuring when the file's settings differ, or the table would mix them."""
    path = RESULTS / name
    if not path.is_file():
        return {}
    earlier = json.loads(path.read_text())
    settings = {key: value for key, value in results.items() if key != "metrics"}
    earlier_settings = {key: value for key, value in earlier.items() if key != "metrics"}
    if settings != earlier_settings:
        raise SystemExit(f"{path} was measured with {earlier_settings}, this run with {settings}: "
                         f"rerun every metric with the same settings, or move {path} away")
    return earlier["metrics"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("precision")
    run.add_argument("--data-dir", default=None)
    run.add_argument("--metrics", nargs="+", default=list(DEFAULTS), choices=DEFAULTS)
    run.add_argument("--threads", type=int, default=2)
    run.set_defaults(func=precision)
    run = commands.add_parser("throughput")
    run.add_argument("--data-dir", default=None)
    run.add_argument("--metrics", nargs="+", default=list(DEFAULTS), choices=DEFAULTS)
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--repeats", type=int, default=3)
    run.set_defaults(func=throughput)
    run = commands.add_parser("memory")
    run.add_argument("--metric", default="similarity")
    run.add_argument("--dtype", default="bf16")
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--counts", type=int, nargs="+", default=[1_000, 100_000])
    run.add_argument("--checkpoint", default=None, help="a checkpoint other than the metric's shipped default")
    run.add_argument("--label", default=None, help="names the result file memory-<metric>-<label>.json")
    run.set_defaults(func=memory)
    run = commands.add_parser("scaling")
    run.add_argument("--metric", default="similarity")
    run.add_argument("--dtype", default="bf16")
    run.add_argument("--items", type=int, default=6000)
    run.set_defaults(func=scaling)
    run = commands.add_parser("limit")
    run.add_argument("--data-dir", default=None)
    run.add_argument("--metrics", nargs="+", default=list(LIMIT_METRICS), choices=LIMIT_METRICS)
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--items", type=int, default=900)
    run.add_argument("--budget", type=float, default=30.0, help="seconds: a measurement's passes are repeated "
                                                                "while they took less in all (at most 5)")
    run.add_argument("--label", default=None, help="names the result file limit-<label>.json (another CPU's)")
    run.set_defaults(func=limit)
    run = commands.add_parser("adapt")
    run.add_argument("--data-dir", default=None)
    run.add_argument("--metrics", nargs="+", default=None, choices=sorted({metric for metric, _ in ADAPT_ROUTES}))
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--max-steps", type=int, default=6)
    run.set_defaults(func=adapt)
    commands.add_parser("report").set_defaults(func=report)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
