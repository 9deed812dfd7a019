"""Dial-M's model (Dey & Desarkar 2023, §2): a masked language model whose cross-entropy on the masked tokens of each
input is its output. No head of its own: the backbone is the masked LM (RoBERTa's, or an encoder given a fresh LM
head by the shared backbone builder); ``labels`` mark the masked tokens, as in ``DataCollatorForLanguageModeling``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.modeling.base import DialEvalOutput, DialEvalPreTrainedModel, encoder_inputs, run_head
from hf_dialeval.modeling.registration import register_available

#: The parts of a masked-LM head that an encoder gains fresh (BERT's transform; RoBERTa's and MPNet's dense and
#: LayerNorm): they train in full beside the Transformer layers. The output layer is tied to the word embeddings.
_HEAD_SUFFIXES = ("cls.predictions.transform", "lm_head.dense", "lm_head.layer_norm")


def masked_token_losses(token_losses: torch.Tensor, rows: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Per row of a batch, the mean of the losses of its labelled tokens (``token_losses``, each from row ``rows``):
    one term of Eq. 1 for an input with one keyword masked; ``nan`` for a row without a label."""
    totals = torch.zeros(batch_size, dtype=token_losses.dtype, device=token_losses.device).index_add_(0, rows, token_losses)
    counts = torch.bincount(rows, minlength=batch_size)
    return torch.where(counts > 0, totals / counts.clamp(min=1), torch.full_like(totals, float("nan")))


class DialMModel(DialEvalPreTrainedModel):
    """A masked LM as Dial-M's scorer: ``forward(input_ids, attention_mask, token_type_ids, labels)`` returns the
    mean cross-entropy over every labelled token (``loss``, the MLM and keyword-masking training objective) and,
    per input, the mean over its own labelled tokens (``scores``: lower is better, Eq. 1's inner term)."""

    config_class = DialMConfig
    config: DialMConfig
    backbone_kind = "masked-lm"
    backbone_attribute = "mlm"

    def __init__(self, config: DialMConfig) -> None:
        super().__init__(config)
        self.post_init()

    def head_names(self) -> list[str]:
        return [name for name, _ in self.named_modules() if name.endswith(_HEAD_SUFFIXES)]

    def added_token_ids(self) -> list[int]:
        """The ``<eou>`` token's embedding row, when the model added it to the backbone's vocabulary."""
        return [self.config.eou_token_id] if self.config.eou_token_added else []

    def lm_head(self) -> torch.nn.Module:
        """The masked LM's prediction head (BERT's ``cls``; RoBERTa's and MPNet's ``lm_head``)."""
        return self.mlm.cls if hasattr(self.mlm, "cls") else self.mlm.lm_head

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                **kwargs: Any) -> DialEvalOutput:
        hidden = self.mlm.base_model(**encoder_inputs(input_ids, attention_mask, token_type_ids)).last_hidden_state
        if labels is None:
            return DialEvalOutput(logits=self.lm_head()(hidden))
        # the vocabulary projection only where a token is predicted: a few masked tokens per input, not every position
        labelled = labels != -100
        logits = run_head(self.lm_head(), hidden[labelled])  # few rows: fp32 costs little, keeps the losses' digits
        token_losses = F.cross_entropy(logits.float(), labels[labelled], reduction="none")
        rows = labelled.nonzero()[:, 0]
        return DialEvalOutput(loss=token_losses.mean(), scores=masked_token_losses(token_losses, rows, len(labels)),
                              logits=logits)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
