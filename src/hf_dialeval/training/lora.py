"""LoRA adapters (``peft``) that keep a trained default small enough to ship inside the package: added to train
(:func:`add_lora`), saved in half precision (:func:`save_adapter`), or factored after full fine-tuning of the
Transformer layers (:func:`factor_into_adapter`)."""

from __future__ import annotations

import copy
import logging
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel
from transformers.pytorch_utils import Conv1D

from hf_dialeval.modeling.adapters import keep_module_copies
from hf_dialeval.modeling.backbones import LINEAR_TYPES, lora_target_pattern
from hf_dialeval.modeling.checkpoints import ADAPTER_WEIGHTS

logger = logging.getLogger(__name__)


def add_lora(model: PreTrainedModel, rank: int = 16, alpha: int = 32, dropout: float = 0.05,
             target_modules: str | Sequence[str] | None = None, modules_to_save: Sequence[str] = (),
             embedding_rows: Sequence[int] = (), lora_bias: bool = False) -> PeftModel:
    """Wrap ``model`` with trainable LoRA adapters on ``target_modules``; ``modules_to_save`` (e.g. a scoring
    head) are trained in full and saved with the adapter, as are the ``embedding_rows`` of the word embeddings
    (e.g. an added special token). ``target_modules``: a pattern or module names (default: every linear
    projection of every Transformer layer, :func:`~hf_dialeval.modeling.backbones.lora_target_pattern`, for any family).
    ``lora_bias`` gives ``lora_B`` a bias (a bias change)."""
    if target_modules is None:
        target_modules = lora_target_pattern(model)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, lora_bias=lora_bias,
                        target_modules=target_modules if isinstance(target_modules, str) else list(target_modules),
                        modules_to_save=list(modules_to_save) or None,
                        trainable_token_indices={"word_embeddings": list(embedding_rows)} if embedding_rows else None)
    return keep_module_copies(get_peft_model(model, config), lambda name: name in modules_to_save)


def save_adapter(model: PeftModel, directory: str | Path, dtype: torch.dtype = torch.float16) -> Path:
    """``model.save_pretrained(directory)`` with the adapter's tensors stored as ``dtype`` (half the size of
    float32; loading casts them back to the model's dtype). Returns the safetensors file."""
    with warnings.catch_warnings():
        # peft mistakes the 1-D bias of a lora_bias=True adapter for an ungathered ZeRO-3 shard
        warnings.filterwarnings("ignore", message=r".*LoRA tensor\(s\) have invalid shape.*lora_B\.bias")
        model.save_pretrained(str(directory))
    path = Path(directory) / ADAPTER_WEIGHTS
    tensors = {name: tensor.to(dtype) if tensor.is_floating_point() else tensor
               for name, tensor in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})
    return path


def factor_into_adapter(tuned: PreTrainedModel, base: PreTrainedModel, rank: int, target_modules: str,
                        modules_to_save: Sequence[str] = (), embedding_rows: Sequence[int] = ()) -> PeftModel:
    """A LoRA adapter over ``base`` that approximates ``tuned`` (``base`` after
    :func:`~.model_preparation.train_layers_only` fine-tuning): each targeted linear layer's weight change ΔW is replaced by its best rank-``rank``
    approximation (truncated SVD, ``lora_B @ lora_A`` with scaling 1) and its bias change is carried exactly
    by ``lora_B``'s bias (where the family's layers have biases: Llama's and Gemma's have none, and their adapter
    none); ``modules_to_save`` and the ``embedding_rows`` of the word embeddings are copied.
    ``base`` is not modified. The relative Frobenius error of the factored ΔW is logged (mean, max over layers)."""
    # peft can merge a LoRA bias only into a layer that has one (it matches a pattern to the whole module name)
    pattern = re.compile(lora_target_pattern(base) if target_modules is None else target_modules)
    biased = all(module.bias is not None for name, module in base.named_modules()
                 if isinstance(module, LINEAR_TYPES) and pattern.fullmatch(name))
    adapted = add_lora(copy.deepcopy(base), rank=rank, alpha=rank, dropout=0.0, target_modules=target_modules,
                       modules_to_save=modules_to_save, embedding_rows=embedding_rows, lora_bias=biased)
    tuned_modules = dict(tuned.named_modules())
    errors = []
    with torch.no_grad():
        for name, module in adapted.base_model.model.named_modules():
            if hasattr(module, "lora_A") and "default" in module.lora_A:
                source = tuned_modules[name]
                device = module.base_layer.weight.device  # the Trainer moved ``tuned`` to its device; ``base`` stayed
                delta = source.weight.to(device) - module.base_layer.weight
                if isinstance(module.base_layer, Conv1D):  # GPT-2 keeps (in, out); LoRA's B @ A is (out, in)
                    delta = delta.T
                u, s, vh = torch.linalg.svd(delta.float(), full_matrices=False)
                kept = min(rank, s.numel())  # a rank above the layer's smaller side: the rest stays zero
                root = s[:kept].sqrt()
                module.lora_B["default"].weight.zero_()[:, :kept] = u[:, :kept] * root
                module.lora_A["default"].weight.zero_()[:kept] = root[:, None] * vh[:kept]
                if module.lora_B["default"].bias is not None:
                    module.lora_B["default"].bias.copy_(source.bias.to(device) - module.base_layer.bias)
                elif source.bias is not None and not torch.equal(source.bias.to(device), module.base_layer.bias):
                    raise ValueError(f"the bias of {name} changed, but some of the layers have no bias, so the "
                                     "adapter has none to carry it")
                total = s.square().sum()  # zero for a layer that did not change (a frozen encoder)
                kept = float(s[:rank].square().sum() / total) if total > 0 else 1.0
                errors.append((1.0 - kept) ** 0.5)
            elif name.endswith("modules_to_save.default"):
                module.load_state_dict(tuned_modules[name.rsplit(".modules_to_save.default", 1)[0]].state_dict())
        if embedding_rows:
            rows = tuned.get_input_embeddings().weight[list(embedding_rows)]
            adapted.get_input_embeddings().token_adapter.trainable_tokens_delta["default"].copy_(rows)
    if errors:
        logger.info("rank-%d adapter: relative error of the weight changes mean %.3f, max %.3f over %d layers",
                    rank, sum(errors) / len(errors), max(errors), len(errors))
    return adapted
