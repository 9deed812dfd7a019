"""Training pieces every metric's Trainer subclass shares: logging the terms of a composite loss, and LoRA
adapters (``peft``) that keep a trained default small enough to ship inside the package."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import PreTrainedModel



def bert_lora_targets(layers: Sequence[int] | None = None) -> str:
    """LoRA target pattern for a BERT-style encoder held as ``encoder`` by a metric model: every attention
    projection and both feed-forward layers of the Transformer ``layers`` (default: all; not the unused
    pooler). Adapting only the top layers also spares the backward pass through the frozen bottom ones."""
    layer = r"\d+" if layers is None else "(" + "|".join(str(int(i)) for i in layers) + ")"
    return rf".*encoder\.encoder\.layer\.{layer}\..*(query|key|value|dense)$"


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


def add_lora(model: PreTrainedModel, rank: int = 16, alpha: int = 32, dropout: float = 0.05,
             target_modules: str | Sequence[str] | None = None,
             modules_to_save: Sequence[str] = ()) -> PeftModel:
    """Wrap ``model`` with trainable LoRA adapters on ``target_modules``; ``modules_to_save`` (e.g. a scoring
    head) are trained in full and saved with the adapter. ``target_modules``: a pattern or module names
    (default: :func:`bert_lora_targets` of every layer)."""
    if target_modules is None:
        target_modules = bert_lora_targets()
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                        target_modules=target_modules if isinstance(target_modules, str) else list(target_modules),
                        modules_to_save=list(modules_to_save) or None)
    return get_peft_model(model, config)


def is_adapter_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a local folder holding a ``peft`` adapter (``adapter_config.json``)."""
    return (Path(path) / "adapter_config.json").is_file()


def merge_adapter(model: PreTrainedModel, adapter_dir: str | Path) -> PreTrainedModel:
    """``model`` with the adapter of ``adapter_dir`` loaded and merged into its weights (a plain model again,
    as fast as the original)."""
    return PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
