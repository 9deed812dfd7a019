"""Backbones of every model family the metrics use, and where their Transformer layers are.

* :func:`build_backbone` builds an encoder, a masked LM, a causal LM or a seq2seq model from any checkpoint
  (a Hub id, a folder, or an offline backbone such as MiniLM): a BERT-family encoder becomes
  ``BertForMaskedLM``, ``BertLMHeadModel`` or a BERT-to-BERT ``EncoderDecoderModel``, heads it lacks freshly
  initialised.
* :data:`FAMILIES` says, per ``model_type``, how a Transformer layer's path looks and what its projections are
  called (BERT, RoBERTa, MPNet, GPT-2 with its transposed ``Conv1D``, BART, and the causal LMs Llama, e.g.
  SmolLM2, and Gemma 3's text model, whose projections have no bias). LoRA targets, layer-only training, SVD factoring
  into adapters and checkpoint averaging all read it, so each works for every family.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    EncoderDecoderModel,
    PreTrainedModel,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES
from transformers.pytorch_utils import Conv1D
from transformers.utils import logging as hf_logging

from hf_dialeval.modeling.checkpoint_sources import from_resolved, resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError

BACKBONE_KINDS = ("encoder", "masked-lm", "causal-lm", "seq2seq")
#: The seed of the weights a backbone gains when it is built (a BERT-to-BERT decoder's cross-attention).
FRESH_WEIGHTS_SEED = 0


@dataclass(frozen=True)
class Family:
    """Where a family's Transformer layers are: ``layer`` matches a layer's module path with its index as the
    first group; ``projections`` are the last names of its linear maps (attention and feed-forward)."""

    layer: str
    projections: tuple[str, ...]


_BERT = Family(r"encoder\.layer\.(\d+)", ("query", "key", "value", "dense"))
#: decoder-only LMs in the Llama layout: attention and a gated feed-forward, no biases
_DECODER = Family(r"layers\.(\d+)", ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"))
FAMILIES = {
    "bert": _BERT,
    "roberta": _BERT,
    "mpnet": Family(r"encoder\.layer\.(\d+)", ("q", "k", "v", "o", "dense")),
    "gpt2": Family(r"h\.(\d+)", ("c_attn", "c_proj", "c_fc")),
    "bart": Family(r"(?:encoder|decoder)\.layers\.(\d+)", ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")),
    "llama": _DECODER,
    "gemma3_text": _DECODER,  # Gemma3ForCausalLM; its q_norm and k_norm are RMSNorms, not projections
}
#: Module types that hold a layer's linear maps (GPT-2's ``Conv1D`` keeps its weight as ``(in, out)``).
LINEAR_TYPES = (nn.Linear, Conv1D)


def family_backbones(model: nn.Module) -> list[PreTrainedModel]:
    """The outermost pretrained models of a known family inside ``model``: ``model`` itself for a stock one, its
    ``encoder`` for a metric model, encoder and decoder of an ``EncoderDecoderModel``."""
    found: list[PreTrainedModel] = []
    inside: set[int] = set()
    for module in model.modules():  # outer modules come before the ones they hold
        if id(module) not in inside and isinstance(module, PreTrainedModel) and module.config.model_type in FAMILIES:
            found.append(module)
            inside.update(id(inner) for inner in module.modules())
    return found


def families_of(model: nn.Module) -> list[Family]:
    backbones = family_backbones(model)
    if not backbones:
        raise CheckpointError(f"no layer table for {type(model).__name__}: add its family to "
                              f"hf_dialeval.modeling.backbones.FAMILIES (known: {sorted(FAMILIES)})")
    return list(dict.fromkeys(FAMILIES[backbone.config.model_type] for backbone in backbones))


def lora_target_pattern(model: nn.Module, layers: Sequence[int] | None = None) -> str:
    """A ``peft`` ``target_modules`` pattern for every linear projection of the Transformer ``layers``
    (default: all) of ``model``'s family, wherever the backbone sits inside it. Adapting only the top
    layers also spares the backward pass through the frozen bottom ones."""
    index = r"\d+" if layers is None else "(?:" + "|".join(str(int(i)) for i in layers) + ")"
    alternatives = []
    for family in families_of(model):
        layer = family.layer.replace(r"(\d+)", index)
        alternatives.append(rf"(?:.*\.)?{layer}\.(?:.*\.)?(?:{'|'.join(family.projections)})")
    return "^(?:" + "|".join(alternatives) + ")$"


def layer_linear_modules(model: nn.Module, layers: Sequence[int] | None = None) -> Iterator[tuple[str, nn.Module]]:
    """``(name, module)`` of every linear map (``nn.Linear`` or ``Conv1D``) in the Transformer layers."""
    pattern = re.compile(lora_target_pattern(model, layers))
    for name, module in model.named_modules():
        if isinstance(module, LINEAR_TYPES) and pattern.match(name):
            yield name, module


def is_decoder_only(name_or_path: str) -> bool:
    """Whether ``name_or_path`` is a decoder-only causal LM (Llama, Gemma 3, GPT-2): a family with neither a masked-LM
    head nor an encoder–decoder form, which the metrics built on a masked LM or a seq2seq model use as a causal LM."""
    config = AutoConfig.from_pretrained(resolve_backbone_path(name_or_path))
    return config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not config.is_encoder_decoder


def build_backbone(name_or_path: str, kind: str = "encoder") -> PreTrainedModel:
    """A pretrained backbone of ``kind`` from any checkpoint (safetensors only; offline backbones resolved).

    ``masked-lm`` and ``causal-lm`` add the family's LM head (tied to the word embeddings where the family
    ties them) when the checkpoint has none; ``causal-lm`` of an encoder-only family sets ``is_decoder`` (e.g.
    ``BertLMHeadModel``); ``seq2seq`` is the checkpoint itself for an encoder–decoder family (BART) and else a
    ``EncoderDecoderModel`` of two copies of it, its decoder gaining cross-attention.
    """
    if kind not in BACKBONE_KINDS:
        raise ValueError(f"kind={kind!r}: choose one of {list(BACKBONE_KINDS)}")
    path = resolve_backbone_path(name_or_path)
    config = AutoConfig.from_pretrained(path)
    if kind == "encoder":
        return from_resolved(AutoModel, path)
    if kind == "seq2seq" and config.is_encoder_decoder:
        return from_resolved(AutoModelForSeq2SeqLM, path)
    # the weights a backbone gains (an encoder's LM head, a BERT-to-BERT decoder's cross-attention) are drawn from a
    # fixed seed: an adapter trained over them (RADE's shipped default) is relative to these weights, and every
    # rebuild of the backbone must reproduce them; that they are new is the point, so transformers' report of
    # weights missing from the checkpoint is not shown
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(FRESH_WEIGHTS_SEED)
            if kind == "masked-lm":
                return from_resolved(AutoModelForMaskedLM, path)
            if kind == "causal-lm":  # an encoder family's config says whether it is a decoder; a causal LM's has no say
                encoder = hasattr(config, "is_decoder") and not config.is_encoder_decoder
                return from_resolved(AutoModelForCausalLM, path, **({"is_decoder": True} if encoder else {}))
            model = EncoderDecoderModel.from_encoder_decoder_pretrained(path, path, encoder_use_safetensors=True,
                                                                        decoder_use_safetensors=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(path)
    # the decoder starts from [CLS] (BERT) or <s> (RoBERTa), as in transformers' BERT2BERT recipe
    model.config.decoder_start_token_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None \
        else tokenizer.bos_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
    return model
