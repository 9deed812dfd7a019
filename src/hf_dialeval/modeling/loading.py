"""The one checkpoint loader every metric, the command line, the evaluate modules and the exporter use.

:func:`load_checkpoint` takes a metric's name and a Hub id, a local folder (a full model, or a ``peft`` adapter with
the metric's ``config.json``) or ``None`` for the metric's shipped default (its registry entry's); it dispatches on
``model_type`` through the ``Auto*`` classes (no ``trust_remote_code``), merges an adapter into its backbone, loads
safetensors only, and imports no training code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from peft import LoraConfig, PeftModel
from peft.utils import ModulesToSaveWrapper
from safetensors import safe_open
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoints import (
    ADAPTER_WEIGHTS,
    CheckpointError,
    check_adapter,
    check_checkpoint,
    quiet_loading,
    resolve_backbone_path,
)
from hf_dialeval.registry import entry


def keep_module_copies(adapted: PeftModel, keep: Callable[[str], bool]) -> PeftModel:
    """``adapted`` with a ``modules_to_save`` copy only of the modules whose path in the wrapped model ``keep`` accepts.

    peft copies every module whose name ends with a ``modules_to_save`` entry, so a metric's ``head`` also catches a
    causal LM's or BART's ``lm_head`` (tied to the word embeddings), which would then train and be saved in full."""
    inner = adapted.base_model.model
    for name, module in list(inner.named_modules()):
        if isinstance(module, ModulesToSaveWrapper) and not keep(name):
            parent, _, child = name.rpartition(".")
            setattr(inner.get_submodule(parent), child, module.original_module)
    return adapted


def load_adapter(model: PreTrainedModel, adapter_dir: str | os.PathLike, is_trainable: bool = False) -> PeftModel:
    """``PeftModel.from_pretrained(model, adapter_dir)`` (safetensors weights, checked first), keeping a module copy
    only where the adapter saved one (:func:`keep_module_copies`)."""
    folder = check_adapter(adapter_dir)
    config = LoraConfig.from_pretrained(str(folder))
    config.inference_mode = not is_trainable
    with safe_open(str(folder / ADAPTER_WEIGHTS), "pt") as weights:
        saved = list(weights.keys())
    with quiet_loading():
        adapted = keep_module_copies(PeftModel(model, config), lambda name: any(
            key.startswith(f"base_model.model.{name}.") for key in saved))
        adapted.load_adapter(str(folder), "default", is_trainable=is_trainable)
    return adapted


def merge_adapter(model: PreTrainedModel, adapter_dir: str | os.PathLike) -> PreTrainedModel:
    """``model`` with the adapter of ``adapter_dir`` loaded (:func:`load_adapter`) and merged into its weights (a
    plain model again, as fast as the original)."""
    return load_adapter(model, adapter_dir).merge_and_unload()


def load_adapter_checkpoint(path: str | os.PathLike, model_class: type[DialEvalPreTrainedModel],
                            config: PretrainedConfig | None = None) -> DialEvalPreTrainedModel:
    """The model of an adapter folder: ``AutoModel.from_config(config)`` with the pretrained weights of the backbone
    its config names, then the adapter (and the heads and token rows saved with it) merged in."""
    check_adapter(path)  # before the backbone is loaded for it
    config = config if config is not None else AutoConfig.from_pretrained(path)
    if not isinstance(config, model_class.config_class):
        raise CheckpointError(f"{path} holds a {type(config).__name__}, not a {model_class.config_class.__name__}")
    if not config.backbone_name_or_path:
        raise CheckpointError(f"{path}/config.json has no backbone_name_or_path: the adapter's backbone is unknown")
    model = AutoModel.from_config(config)
    model.load_backbone_weights()
    return merge_adapter(model, path).eval()


def load_checkpoint(metric: str, checkpoint: str | os.PathLike | None = None
                    ) -> tuple[DialEvalPreTrainedModel, PreTrainedTokenizerBase]:
    """Model (eval mode, float32: a small model may ship in bf16, and scores are computed as they were fitted) and
    tokenizer of a checkpoint of the registered metric ``metric`` (``None``: its shipped default): a full model or an
    adapter folder, as ``AutoModel.from_pretrained`` loads either (:meth:`DialEvalPreTrainedModel.from_pretrained`).
    The checkpoint is checked here, once (:func:`~hf_dialeval.modeling.checkpoints.check_checkpoint`). The tokenizer
    comes from the checkpoint, or from the backbone when the checkpoint has none."""
    spec = entry(metric)
    if spec.model is None:
        raise CheckpointError(f"{metric} has no model of its own to load")
    path = check_checkpoint(spec.default if checkpoint is None else checkpoint)
    with quiet_loading():
        model = AutoModel.from_pretrained(path, use_safetensors=True)
    model_class = spec.model_class
    if not isinstance(model, model_class):
        raise CheckpointError(f"{path} holds a {type(model).__name__}, not a {model_class.__name__}: give a {metric} "
                              "checkpoint")
    return model.float().eval(), checkpoint_tokenizer(path, model.config)


def checkpoint_tokenizer(path: str | os.PathLike, config: PretrainedConfig) -> PreTrainedTokenizerBase:
    """The tokenizer of the checkpoint at ``path`` (config ``config``): its own, or its backbone's when it saved none
    (the shipped defaults keep only their config and weights)."""
    has_tokenizer = not Path(path).is_dir() or (Path(path) / "tokenizer_config.json").is_file()
    return AutoTokenizer.from_pretrained(path if has_tokenizer else resolve_backbone_path(config.backbone_name_or_path))
