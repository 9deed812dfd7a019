"""How fast a model metric scores, against the raw forward pass of its model on the same inputs: what the
scoring path (validation, tokenisation, length sorting, padding, bookkeeping) costs on top of the model."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from hf_dialeval.inference.model_metric import ModelMetric, autocast, padded_batches


def best_seconds(run: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` timed calls of ``run`` (the least disturbed by other work on the machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def scoring_throughput(metric: ModelMetric, encoding: Mapping[str, Sequence[Sequence[int]]], score: Callable[[], Any],
                       repeats: int = 3, batches: Sequence[Mapping[str, torch.Tensor]] | None = None) -> dict[str, float]:
    """Best-of-``repeats`` seconds of ``metric.model`` on the pre-tokenised ``encoding`` in the metric's own
    length-sorted, padded batches (``raw_forward_s``; or on ``batches``, already padded, for a metric that batches
    its inputs its own way) against ``score()``, the metric scoring the same items from their text
    (``scoring_s``), both in the metric's precision, and their ratio (1 would be a scoring path that costs nothing).
    Call ``score`` once before (a warm-up)."""
    if batches is None:
        batches = [batch for _, batch in padded_batches(encoding, metric.batch_size, metric.collator)]

    def raw() -> None:  # in the metric's precision, as it scores
        with torch.inference_mode(), autocast(metric.device, metric.dtype):
            for batch in batches:
                metric.model(**{key: value.to(metric.device) for key, value in batch.items()})

    timings = {"raw_forward_s": round(best_seconds(raw, repeats), 3), "scoring_s": round(best_seconds(score, repeats), 3)}
    return {**timings, "items": len(encoding["input_ids"]), "batch_size": metric.batch_size,
            "torch_threads": torch.get_num_threads(),
            "ratio_raw_over_scoring": round(timings["raw_forward_s"] / timings["scoring_s"], 3)}
