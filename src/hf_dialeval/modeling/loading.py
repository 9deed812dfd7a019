"""The one checkpoint loader every metric, the command line, the evaluate modules and the exporter use.

:func:`load_checkpoint` takes a metric's name and a Hub id, a local folder (a full model, or a ``peft`` adapter with
the metric's ``config.json``) or ``None`` for the metric's shipped default (its registry entry's); it dispatches on
``model_type`` through the ``Auto*`` classes (no ``trust_remote_code``), merges an adapter into its backbone, loads
safetensors only, and imports no training code.
"""

from __future__ import annotations

import os
from pathlib import Path

from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedTokenizerBase,
)

from hf_dialeval.modeling.adapters import adapter_model, check_adapter_weights, holds_adapter_only
from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoint_sources import check_checkpoint, quiet_loading, resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.registry import entry


#: The precision a shipped default computes in where its checkpoint names none and the device computes it natively:
#: bf16 moved no shipped default's Spearman by more than 0.0025 on any benchmark, at 2.2-3.0x the speed of fp32 on
#: a CPU with bf16 instructions (``benchmarks/scale/results/precision.json``). Another checkpoint has no such record
#: and computes in what its config's ``scoring_dtype`` says (fp32 without one); ``--dtype`` overrides either.
SHIPPED_PRECISION = "bf16"


def load_checkpoint(metric: str, checkpoint: str | os.PathLike | None = None
                    ) -> tuple[DialEvalPreTrainedModel, PreTrainedTokenizerBase]:
    """Model (eval mode, float32: a small model may ship in bf16, and scores are computed as they were fitted) and
    tokenizer of a checkpoint of the registered metric ``metric`` (``None``: its shipped default): a full model or an
    adapter folder, as ``AutoModel.from_pretrained`` loads either (:meth:`DialEvalPreTrainedModel.from_pretrained`).
    The checkpoint is resolved and checked here, once (:func:`~hf_dialeval.modeling.checkpoint_sources.check_checkpoint`):
    an adapter folder is built from it directly (:func:`~hf_dialeval.modeling.adapters.adapter_model`), not through
    ``from_pretrained``, which checks the folders it is given by hand. The tokenizer comes from the checkpoint, or from
    the backbone when the checkpoint has none. The shipped default computes in :data:`SHIPPED_PRECISION` unless its
    config says otherwise."""
    spec = entry(metric)
    if spec.model is None:
        raise CheckpointError(f"{metric} has no model of its own to load")
    path = check_checkpoint(spec.default if checkpoint is None else checkpoint)
    with quiet_loading():
        model = adapter_model(check_adapter_weights(Path(path)), AutoConfig.from_pretrained(path)) \
            if holds_adapter_only(path) else AutoModel.from_pretrained(path, use_safetensors=True)
    model_class = spec.model_class
    if not isinstance(model, model_class):
        raise CheckpointError(f"{path} holds a {type(model).__name__}, not a {model_class.__name__}: give a {metric} "
                              "checkpoint")
    if checkpoint is None and getattr(model.config, "scoring_dtype", None) is None:
        model.config.scoring_dtype = SHIPPED_PRECISION
    return model.float().eval(), checkpoint_tokenizer(path, model.config)


def checkpoint_tokenizer(path: str | os.PathLike, config: PretrainedConfig) -> PreTrainedTokenizerBase:
    """The tokenizer of the checkpoint at ``path`` (config ``config``): its own, or its backbone's when it saved none
    (the shipped defaults keep only their config and weights)."""
    has_tokenizer = not Path(path).is_dir() or (Path(path) / "tokenizer_config.json").is_file()
    return AutoTokenizer.from_pretrained(path if has_tokenizer else resolve_backbone_path(config.backbone_name_or_path))
