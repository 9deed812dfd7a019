"""Logging the terms of a composite loss beside it: the :class:`LossTermLogging` mixin of the metrics' Trainers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import torch


class LossTermLogging:
    """Mixin for ``transformers.Trainer`` subclasses whose loss has several terms: ``record_terms`` in
    ``compute_loss``; the means since the last log are added to the training logs (``eval_``-prefixed in
    evaluation logs)."""

    def record_terms(self, terms: Mapping[str, torch.Tensor | float], training: bool) -> None:
        store = self.__dict__.setdefault("_loss_terms", {True: defaultdict(list), False: defaultdict(list)})
        for name, value in terms.items():
            store[training][name].append(float(value.detach()) if isinstance(value, torch.Tensor) else float(value))

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        store = self.__dict__.get("_loss_terms")
        if store is not None:
            training = "loss" in logs
            evaluating = any(key.startswith("eval_") for key in logs)
            if training or evaluating:
                prefix = "" if training else "eval_"
                for name, values in store[training].items():
                    if values:
                        logs[f"{prefix}{name}"] = round(sum(values) / len(values), 6)
                store[training].clear()
        super().log(logs, *args, **kwargs)
