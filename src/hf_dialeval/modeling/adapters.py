"""``peft`` adapters over a metric model's backbone: loading one onto a model (to train on, or merged in), and the
model of an adapter checkpoint (a folder that holds a LoRA adapter and the metric's ``config.json`` instead of the
model's weights: every shipped default, a few MB over an installed backbone).

The model classes reach this module, never the other way round: a model is handled here through what every metric
model has (``AutoModel.from_config``, ``load_backbone_weights``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from peft import LoraConfig, PeftModel
from peft.utils import ModulesToSaveWrapper
from safetensors import safe_open
from transformers import AutoConfig, AutoModel, PretrainedConfig, PreTrainedModel
from transformers.initialization import no_init_weights
from transformers.utils import SAFE_WEIGHTS_NAME

from hf_dialeval.modeling.checkpoint_sources import check_checkpoint, quiet_loading
from hf_dialeval.modeling.checkpoints import ADAPTER_WEIGHTS, CheckpointError, is_adapter_checkpoint


def holds_adapter_only(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` is an adapter checkpoint without the model's own weights (a folder holding both loads as a
    full model)."""
    return is_adapter_checkpoint(folder) and not (Path(folder) / SAFE_WEIGHTS_NAME).is_file()


def check_adapter_weights(folder: Path) -> Path:
    """``folder`` (a checked checkpoint folder), when it holds safetensors adapter weights."""
    if not (folder / ADAPTER_WEIGHTS).is_file():
        raise CheckpointError(f"{folder} has no {ADAPTER_WEIGHTS}: an adapter folder needs adapter_config.json and "
                              f"{ADAPTER_WEIGHTS} (pickled adapter weights are never loaded)")
    return folder


def check_adapter(folder: str | os.PathLike) -> Path:
    """A ``peft`` adapter folder that exists and holds valid safetensors adapter weights."""
    return check_adapter_weights(Path(check_checkpoint(folder)))


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
    """``PeftModel.from_pretrained(model, adapter_dir)`` (safetensors weights, checked first: :func:`check_adapter`),
    keeping a module copy only where the adapter saved one (:func:`keep_module_copies`)."""
    return _attach_adapter(model, check_adapter(adapter_dir), is_trainable)


def _attach_adapter(model: PreTrainedModel, folder: Path, is_trainable: bool = False) -> PeftModel:
    """:func:`load_adapter` of a checked adapter folder."""
    config = LoraConfig.from_pretrained(str(folder))
    config.inference_mode = not is_trainable
    with safe_open(str(folder / ADAPTER_WEIGHTS), "pt") as weights:
        saved = list(weights.keys())
    with quiet_loading():
        adapted = keep_module_copies(PeftModel(model, config), lambda name: any(
            key.startswith(f"base_model.model.{name}.") for key in saved))
        adapted.load_adapter(str(folder), "default", is_trainable=is_trainable)
    return adapted


def load_adapter_checkpoint(path: str | os.PathLike, model_class: type[PreTrainedModel],
                            config: PretrainedConfig | None = None) -> PreTrainedModel:
    """The model of an adapter folder (checked first, before the backbone is loaded for it: :func:`check_adapter`) as
    ``model_class`` loads it: :func:`adapter_model`, its config ``config`` or the folder's."""
    folder = check_adapter(path)
    config = config if config is not None else AutoConfig.from_pretrained(folder)
    if not isinstance(config, model_class.config_class):
        raise CheckpointError(f"{path} holds a {type(config).__name__}, not a {model_class.config_class.__name__}")
    return adapter_model(folder, config)


def adapter_model(folder: Path, config: PretrainedConfig) -> PreTrainedModel:
    """The model of the checked adapter folder ``folder`` (config ``config``): ``AutoModel.from_config(config)`` with
    the pretrained weights of the backbone its config names, then the adapter (and the heads and token rows saved with
    it) merged in."""
    if not config.backbone_name_or_path:
        raise CheckpointError(f"{folder}/config.json has no backbone_name_or_path: the adapter's backbone is unknown")
    # every weight is loaded next (the backbone's, then the adapter's with its heads): drawing random ones first only
    # costs time (2.8 s of the 7.2 s that Dial-M's Gemma 3 took to load)
    with no_init_weights():
        model = AutoModel.from_config(config)
    # no_init_weights skips init_weights, which ties the weights as well: an LM's head would hold a copy of its
    # embeddings (Gemma 3's: 671 MB in fp32) instead of sharing them
    model.tie_weights()
    model.load_backbone_weights()
    return _attach_adapter(model, folder).merge_and_unload().eval()
