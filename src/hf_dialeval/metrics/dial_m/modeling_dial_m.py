"""Dial-M's model (Dey & Desarkar 2023, §2): a language model whose cross-entropy on the labelled tokens of each input
is its output. No head of its own: the backbone is the masked LM (RoBERTa's, or an encoder given a fresh LM head by
the shared backbone builder), whose ``labels`` mark the masked tokens as in ``DataCollatorForLanguageModeling``; or,
this package's adaptation, a causal LM (Llama's, Gemma 3's), whose ``labels`` mark the tokens it predicts from
everything before them, as in ``LlamaForCausalLM`` (shifted inside the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.modeling.base import DialEvalOutput, DialEvalPreTrainedModel, encoder_inputs
from hf_dialeval.modeling.lm_head import prediction_head, soft_cap, target_log_probs
from hf_dialeval.modeling.registration import register_available

#: The parts of a masked-LM head that an encoder gains fresh (BERT's transform; RoBERTa's and MPNet's dense and
#: LayerNorm): they train in full beside the Transformer layers. The output layer is tied to the word embeddings.
_HEAD_SUFFIXES = ("cls.predictions.transform", "lm_head.dense", "lm_head.layer_norm")


def masked_token_losses(token_losses: torch.Tensor, rows: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Per row of a batch, the mean of the losses of its labelled tokens (``token_losses``, each from row ``rows``):
    one term of Eq. 1 for an input with one keyword masked; ``nan`` for a row without a label."""
    return keyword_mean_losses(token_losses, rows, torch.ones_like(rows), batch_size, width=1)[:, 0]


@dataclass
class DialMOutput(DialEvalOutput):
    """:class:`~hf_dialeval.modeling.base.DialEvalOutput` with, given ``keyword_ids``, each keyword's loss. Given
    ``labels`` it holds the losses and no logits; without them, the logits of every position.

    Args:
        keyword_losses: ``(batch, keywords)`` the mean cross-entropy of each keyword occurrence's tokens (occurrence
            ``k`` of a row is where its ``keyword_ids`` are ``k + 1``), ``nan`` past a row's last keyword; ``scores``
            is then Eq. 1, their mean.
    """

    keyword_losses: torch.FloatTensor | None = None


def keyword_mean_losses(token_losses: torch.Tensor, rows: torch.Tensor, keywords: torch.Tensor, batch_size: int,
                        width: int | None = None) -> torch.Tensor:
    """``(batch_size, width)``: per row, the mean loss of each keyword's tokens (``token_losses``, each from row
    ``rows`` and keyword ``keywords``, numbered from 1), ``nan`` where a row has no such keyword; ``width`` keywords
    a row (default: the most any row has)."""
    if width is None:
        width = int(keywords.max()) if keywords.numel() else 0
    slots = rows * width + keywords - 1
    totals = torch.zeros(batch_size * width, dtype=token_losses.dtype, device=token_losses.device)
    totals.index_add_(0, slots, token_losses)
    counts = torch.bincount(slots, minlength=batch_size * width)
    means = torch.where(counts > 0, totals / counts.clamp(min=1), torch.full_like(totals, float("nan")))
    return means.view(batch_size, width)


class DialMModel(DialEvalPreTrainedModel):
    """A language model as Dial-M's scorer: ``forward(input_ids, attention_mask, token_type_ids, labels)`` returns the
    mean cross-entropy over every labelled token (``loss``, the training objective of both stages) and, per input,
    the mean over its own labelled tokens (``scores``: lower is better; Eq. 1's inner term for a masked LM's input
    with one keyword masked). A causal LM's input holds the whole response and ``keyword_ids`` number its keywords'
    tokens: ``keyword_losses`` then gives each keyword's loss and ``scores`` Eq. 1, from one forward pass.

    The backbone is the config's ``lm_kind``: a masked LM held as ``mlm`` or a causal LM held as ``lm``."""

    config_class = DialMConfig
    config: DialMConfig
    backbone_kind = "masked-lm"
    backbone_attribute = "mlm"
    backbone_attributes = {"masked-lm": "mlm", "causal-lm": "lm"}

    def __init__(self, config: DialMConfig) -> None:
        super().__init__(config)
        self.post_init()

    def head_names(self) -> list[str]:
        return [name for name, _ in self.named_modules() if name.endswith(_HEAD_SUFFIXES)]

    def added_token_ids(self) -> list[int]:
        """The ``<eou>`` token's embedding row, when the model added it to the backbone's vocabulary."""
        return [self.config.eou_token_id] if self.config.eou_token_added else []


    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                keyword_ids: torch.Tensor | None = None, **kwargs: Any) -> DialMOutput:
        causal = self.config.lm_kind == "causal-lm"
        if causal:
            hidden = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        else:
            hidden = self.mlm.base_model(**encoder_inputs(input_ids, attention_mask, token_type_ids)).last_hidden_state
        if labels is None:
            return DialMOutput(logits=soft_cap(self.backbone.config, prediction_head(self.backbone)(hidden)))
        if causal:  # each token is predicted from the position before it
            hidden, labels = hidden[:, :-1], labels[:, 1:]
            keyword_ids = keyword_ids[:, 1:] if keyword_ids is not None else None
        # the vocabulary projection only where a token is predicted, a bounded chunk of rows at a time (a reply that
        # says one keyword hundreds of times labels hundreds of rows, each a vocabulary wide), in fp32 to keep the
        # losses' digits; the losses come back, not those logits
        labelled = labels != -100
        token_losses = -target_log_probs(self.backbone, hidden[labelled], labels[labelled], full_precision=True)
        rows = labelled.nonzero()[:, 0]
        if keyword_ids is None:
            return DialMOutput(loss=token_losses.mean(), scores=masked_token_losses(token_losses, rows, len(labels)))
        losses = keyword_mean_losses(token_losses, rows, keyword_ids[labelled], len(labels))
        return DialMOutput(loss=token_losses.mean(), scores=losses.nanmean(dim=1), keyword_losses=losses)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
