"""Preparing a model to train: which of its parameters train — LoRA adapters or its Transformer layers in full
(:func:`prepare_model`, :func:`train_layers_only`), or the adapter of the checkpoint a run continues
(:func:`prepare_continued_model`) — and the untrained model a full fine-tuning is factored against."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from peft import PeftModel
from transformers import PreTrainedModel

from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.adapters import load_adapter
from hf_dialeval.modeling.backbones import family_backbones, layer_linear_modules, lora_target_pattern
from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoints import is_adapter_checkpoint
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.lora import add_lora
from hf_dialeval.training.options import ADAPTER_DIR


def prepare_model(model: DialEvalPreTrainedModel, args: DialEvalTrainingArguments
                  ) -> tuple[PreTrainedModel | PeftModel, PreTrainedModel | None]:
    """The model to train — ``model`` with LoRA adapters (``args.lora_rank > 0``; its heads and added token rows
    trained in full), or ``model`` itself with its Transformer layers trainable — and, when ``args.adapter_rank``
    will factor the fine-tuning, the untrained model to factor against (the backbone's weights: what the adapter
    is loaded onto, whatever ``model`` started from). With ``args.freeze_encoder`` (the metrics whose options have
    it) the backbone is frozen afterwards, so only the heads train."""
    base = model.untrained_copy() if args.adapter_rank else None
    if getattr(args, "lora_rank", 0):
        trainable = add_lora(model, rank=args.lora_rank, alpha=args.lora_alpha, dropout=args.lora_dropout,
                             target_modules=lora_target_pattern(model, args.lora_layers),
                             modules_to_save=model.head_names(), embedding_rows=model.added_token_ids())
    else:
        train_layers_only(model, embedding_rows=model.added_token_ids())
        trainable = model
    if getattr(args, "freeze_encoder", False):
        model.backbone.requires_grad_(False)
    if trainable is not model:
        trainable.print_trainable_parameters()
    return trainable, base


def prepare_continued_model(model: DialEvalPreTrainedModel, checkpoint: str | Path, args: DialEvalTrainingArguments
                            ) -> tuple[PreTrainedModel | PeftModel, PreTrainedModel | None]:
    """:func:`prepare_model` for a model loaded from a trained ``checkpoint`` (a stage that continues another):
    when the checkpoint holds a LoRA adapter (the folder itself, or its run's ``adapter/``), that adapter keeps
    training over the backbone's own weights (loaded into ``model`` in place: ``model`` is the adapter's base
    afterwards), so the result is again one adapter over the backbone; a full
    model is prepared as :func:`prepare_model` prepares a new one, without LoRA (an adapter saved over the backbone
    would lose the checkpoint's own training)."""
    adapter = next((Path(folder) for folder in (checkpoint, Path(checkpoint) / ADAPTER_DIR)
                    if is_adapter_checkpoint(folder)), None)
    if adapter is None:
        if getattr(args, "lora_rank", 0):  # the adapter is saved over the backbone: it would lose what was trained
            raise OptionError(f"{checkpoint} is fully fine-tuned, so a LoRA adapter trained on it would be saved "
                              "without that fine-tuning: continue it with --lora-rank 0 (and --adapter-rank to factor "
                              "the whole fine-tuning into an adapter), or start from a run that holds an adapter")
        return prepare_model(model, args)
    if args.adapter_rank:
        raise OptionError(f"the adapter of {checkpoint} ({adapter}) keeps training: --adapter-rank factors the "
                          "fine-tuning of a full model")
    # the adapter is relative to the backbone's own weights: they replace the merged ones in place, since a second
    # copy of the model beside ``model`` (which the caller holds) would double the run's memory
    model.load_backbone_weights()
    model.name_or_path = ""  # not the folder this model came from: PEFT would record that as an adapter's base
    return load_adapter(model, adapter, is_trainable=True), None


def train_layers_only(model: PreTrainedModel, embedding_rows: Sequence[int] = ()) -> None:
    """Make ``model`` train the linear maps of its backbone's Transformer layers (any family in
    :data:`~hf_dialeval.modeling.backbones.FAMILIES`), everything outside the backbone and the metric's heads inside it
    (``head_names()``, e.g. an encoder's new LM head), but not the embeddings or LayerNorms — the parameters whose
    change :func:`~.lora.factor_into_adapter` can carry.
    ``embedding_rows`` (e.g. an added special token) keep training: the other rows of the word embeddings get
    a zero gradient (so train with ``weight_decay=0``: decoupled weight decay would still shrink them)."""
    layer_linears = {id(p) for _, module in layer_linear_modules(model) for p in module.parameters()}
    for backbone in family_backbones(model):
        for parameter in backbone.parameters():
            parameter.requires_grad_(id(parameter) in layer_linears)
    modules = dict(model.named_modules())
    for name in model.head_names() if isinstance(model, DialEvalPreTrainedModel) else ():
        modules[name].requires_grad_(True)  # a head inside the backbone (a fresh LM head of an encoder family)
    if embedding_rows:
        embeddings = model.get_input_embeddings().weight
        embeddings.requires_grad_(True)
        keep = torch.zeros(embeddings.size(0), 1)
        keep[list(embedding_rows)] = 1.0
        embeddings.register_hook(lambda grad: grad * keep.to(grad))
