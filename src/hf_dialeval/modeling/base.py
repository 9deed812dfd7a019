"""The model base every metric model builds on (:class:`DialEvalPreTrainedModel`, :class:`DialEvalOutput`) and
the layers their forward passes share (encoder inputs, pooling, score heads). Running a model over items is
:mod:`hf_dialeval.inference.model_metric`'s."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    PreTrainedModel,
)
from transformers.utils import ModelOutput

from hf_dialeval.modeling.backbones import build_backbone
from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available


@dataclass
class DialEvalOutput(ModelOutput):
    """Output of every metric model.

    Args:
        loss: the mean squared error of ``scores`` against ``labels``, when labels are given (a metric's Trainer
            owns its paper's loss; this one serves plain regression fine-tuning).
        scores: ``(batch,)`` or ``(batch, num_dimensions)`` scores in the model's own range.
        logits: the head's values before its final squashing, where it has one.
        human_scores: ``scores`` on the config's calibrated scale (``score_scale``), where it has one.
        pooled_output: ``(batch, hidden)`` the pooled backbone output the head reads.
        hidden_states: the backbone's embedding output and every layer's output, when asked for.
        attentions: every layer's attention maps, when asked for.
    """

    loss: torch.FloatTensor | None = None
    scores: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    human_scores: torch.FloatTensor | None = None
    pooled_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


#: The Auto class that rebuilds each kind of backbone from its config.
_AUTO_CLASSES = {"encoder": AutoModel, "masked-lm": AutoModelForMaskedLM, "causal-lm": AutoModelForCausalLM,
                 "seq2seq": AutoModelForSeq2SeqLM}


class DialEvalPreTrainedModel(PreTrainedModel):
    """Base of every metric model: a backbone rebuilt from the config's backbone sub-config (heads are the
    subclass's), built around pretrained weights by :meth:`from_backbone`.

    The backbone is an encoder held as ``encoder`` by default; a metric that needs another kind of backbone sets
    ``backbone_kind`` (one of :data:`hf_dialeval.modeling.backbones.BACKBONE_KINDS`) and the attribute that holds it,
    ``backbone_attribute`` (RADE: a ``seq2seq`` model whose encoder is shared with its generator). A metric whose
    config chooses among kinds (its ``lm_kind``: Dial-M's masked or causal LM, RADE's seq2seq model or causal LM)
    names the attribute of each in ``backbone_attributes``."""

    config_class = DialEvalConfig
    config: DialEvalConfig
    base_model_prefix = "dialeval"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    backbone_kind: ClassVar[str] = "encoder"
    backbone_attribute: ClassVar[str] = "encoder"
    backbone_attributes: ClassVar[dict[str, str]] = {}
    #: The loss is a mean over the batch, whatever ``**kwargs`` forward takes: the Trainer must divide it by the
    #: gradient-accumulation steps (it does not for a model that normalises by ``num_items_in_batch`` itself).
    accepts_loss_kwargs: ClassVar[bool] = False

    def __init__(self, config: DialEvalConfig) -> None:
        super().__init__(config)
        if self.backbone_attributes:  # the config chooses the kind of backbone
            self.backbone_kind = config.lm_kind
            self.backbone_attribute = self.backbone_attributes[config.lm_kind]
        if config.backbone_config is None:
            raise ValueError(f"{type(config).__name__}.backbone_config is empty: build the model with "
                             f"{type(self).__name__}.from_backbone(name_or_path), or give the backbone's config")
        backbone_class = _AUTO_CLASSES[self.backbone_kind]._model_mapping.get(type(config.backbone_config), None)
        if config._attn_implementation == "sdpa" and backbone_class is not None and not backbone_class._supports_sdpa:
            # a new or loaded model gets SDPA whenever the wrapper supports it; a backbone without it (MPNet) runs eager
            config._attn_implementation = "eager"
        config.backbone_config._attn_implementation = config._attn_implementation
        setattr(self, self.backbone_attribute, _AUTO_CLASSES[self.backbone_kind].from_config(config.backbone_config))

    @property
    def backbone(self) -> PreTrainedModel:
        """The pretrained model the metric is built on (its weights come from ``backbone_name_or_path``)."""
        return getattr(self, self.backbone_attribute)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *model_args: Any, **kwargs: Any):
        """``PreTrainedModel.from_pretrained``; a local folder that holds a ``peft`` adapter instead of the model's
        weights (every shipped default: a few MB over an installed backbone) is rebuilt from its config with the
        backbone's pretrained weights and the adapter merged in, so ``AutoModel.from_pretrained`` loads it too.
        ``dtype`` (or ``torch_dtype``) casts that model; the download options do not apply to a local folder."""
        # imported here: peft imports transformers' Auto model module, which imports the metric models, which import
        # this module (adapters imports neither this module nor the loader)
        from hf_dialeval.modeling.adapters import holds_adapter_only, load_adapter_checkpoint

        folder = Path(os.fspath(pretrained_model_name_or_path))
        if holds_adapter_only(folder):
            model = load_adapter_checkpoint(folder, cls, kwargs.get("config"))
            dtype = kwargs.get("dtype", kwargs.get("torch_dtype"))
            return model.to(dtype) if isinstance(dtype, torch.dtype) else model
        return super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)

    @classmethod
    def backbone_kind_for(cls, config_kwargs: Mapping[str, Any]) -> str:
        """The kind of backbone a model of ``config_kwargs`` holds: their ``lm_kind`` where the metric lets its
        config choose (``backbone_attributes``), else the class's ``backbone_kind``."""
        return config_kwargs.get("lm_kind", cls.backbone_kind) if cls.backbone_attributes else cls.backbone_kind

    @classmethod
    def from_backbone(cls, backbone_name_or_path: str, vocab_size: int | None = None, **config_kwargs: Any):
        """A new model whose backbone holds the pretrained weights of ``backbone_name_or_path`` (a Hub id, a folder
        or an offline backbone, built as ``backbone_kind``), its embeddings grown to ``vocab_size`` when a
        tokenizer gained tokens, and whose heads are freshly initialised."""
        pretrained = build_backbone(backbone_name_or_path, cls.backbone_kind_for(config_kwargs))
        if vocab_size is not None and pretrained.get_input_embeddings().num_embeddings < vocab_size:
            pretrained.resize_token_embeddings(vocab_size)
        backbone_config = pretrained.config
        backbone_config.name_or_path = backbone_name_or_path  # not the local folder it resolved to
        model = cls(cls.config_class(backbone_config=backbone_config, backbone_name_or_path=backbone_name_or_path,
                                     **config_kwargs))
        model.load_backbone_state(pretrained.state_dict())
        return model

    def load_backbone_weights(self) -> None:
        """Load the pretrained weights of ``config.backbone_name_or_path`` into the backbone (an adapter
        checkpoint holds none); rows the model added to the embeddings (special tokens) are left to the adapter."""
        if not self.config.backbone_name_or_path:
            raise ValueError(f"{type(self.config).__name__}.backbone_name_or_path is empty: the backbone's weights are "
                             "unknown")
        pretrained = build_backbone(self.config.backbone_name_or_path, self.backbone_kind)
        rows = self.get_input_embeddings().num_embeddings
        if pretrained.get_input_embeddings().num_embeddings != rows:
            pretrained.resize_token_embeddings(rows, mean_resizing=False)
        self.load_backbone_state(pretrained.state_dict())

    def load_backbone_state(self, weights: Mapping[str, torch.Tensor]) -> None:
        """Load the backbone's pretrained ``weights``: the one place :meth:`from_backbone` and
        :meth:`load_backbone_weights` put them, so a model holding a second copy of the backbone loads it here too."""
        self.backbone.load_state_dict(weights)

    def head_names(self) -> list[str]:
        """The modules outside the encoder (the metric's heads): trained in full beside LoRA adapters and saved
        with them."""
        return [name for name, _ in self.named_children() if name != self.backbone_attribute]

    def added_token_ids(self) -> list[int]:
        """Tokens the metric added to the backbone's vocabulary: their embedding rows train with the heads."""
        return []

    def untrained_copy(self) -> "DialEvalPreTrainedModel":
        """A new model of this config with the backbone's pretrained weights and fresh heads: what an adapter of
        this model is relative to (the loader rebuilds an adapter checkpoint's model the same way)."""
        model = type(self)(self.config)
        model.load_backbone_weights()
        model.name_or_path = ""  # not the folder this model came from: PEFT would record that as an adapter's base
        return model

    def get_input_embeddings(self) -> nn.Module:
        return self.backbone.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.backbone.set_input_embeddings(value)

    def output(self, scores: torch.Tensor, labels: torch.Tensor | None = None, **fields: Any) -> DialEvalOutput:
        """The model's output, with the calibrated scores and, given ``labels``, the regression loss: the MSE on
        the scale the model reports, the human one when the config has a ``score_scale``."""
        human = self.config.calibrate(scores) if self.config.score_scale is not None else None
        predicted = scores if human is None else human
        loss = None if labels is None else F.mse_loss(predicted.float(), labels.to(scores.device).float())
        return DialEvalOutput(loss=loss, scores=scores, human_scores=human, **fields)


def encoder_inputs(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Keyword arguments for an ``AutoModel`` encoder: a full attention mask when none is given, and
    ``token_type_ids`` only when given (some encoders, e.g. DistilBERT, take none)."""
    inputs = {"input_ids": input_ids,
              "attention_mask": attention_mask if attention_mask is not None else torch.ones_like(input_ids)}
    if token_type_ids is not None:
        inputs["token_type_ids"] = token_type_ids
    return inputs


def masked_mean_pool(hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors over real tokens only (padding excluded), summed in fp32 (a bf16 sum over
    hundreds of tokens loses the digits that tell two inputs apart)."""
    mask = attention_mask.unsqueeze(-1).float()
    return (hidden_states.float() * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def run_head(head: nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
    """``head(*inputs)`` outside autocast, in the head's own dtype (fp32 as loaded). A score head costs little next
    to its encoder, and a bf16 score keeps 8 significant bits: a 1–5 score would move in steps of 1/64 and tie
    items the metric should rank."""
    dtype = next(head.parameters()).dtype
    with torch.autocast(inputs[0].device.type, enabled=False):
        return head(*(tensor.to(dtype) for tensor in inputs))


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
