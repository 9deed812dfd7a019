"""HolisticEval's model (Pang et al. 2020, §3.1–3.2): a causal language model that gives, per input, the mean
log-probability of the response's tokens (or their sum), or each token's.

No head of its own: the backbone is the LM (GPT-2, or an encoder family made a decoder by the shared backbone
builder); the config adds the fitted cutoffs and Eq. 2's normalisation. ``labels`` give the ordinary next-token loss (LM fine-tuning, §4.3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import HolisticEvalConfig
from hf_dialeval.modeling.base import DialEvalOutput, DialEvalPreTrainedModel
from hf_dialeval.modeling.lm_head import target_log_probs
from hf_dialeval.modeling.registration import register_available


def scored_token_log_probs(lm: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                           score_mask: torch.Tensor) -> torch.Tensor:
    """``log P(x_t | everything before it)`` at each position ``t ≥ 1`` that ``score_mask`` marks, 0 elsewhere (rows ×
    length − 1, position ``t`` at column ``t − 1``): each token predicted by the causal LM ``lm`` from the position
    before it (log-softmax in float32). Only the marked positions are projected onto the vocabulary, a bounded chunk
    at a time (:func:`~hf_dialeval.modeling.lm_head.target_log_probs`)."""
    hidden = lm.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    scored = score_mask[:, 1:].bool()
    log_probs = torch.zeros(scored.shape, device=input_ids.device)
    log_probs[scored] = target_log_probs(lm, hidden[:, :-1][scored], input_ids[:, 1:][scored])
    return log_probs


def response_log_probs(lm: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                       score_mask: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """``Σ_t log P(r_t | everything before it)`` per row over the tokens ``score_mask`` marks
    (:func:`scored_token_log_probs`); divided by their count ``T_r`` for ``reduction="mean"`` (Eq. 1 and 3)."""
    total = scored_token_log_probs(lm, input_ids, attention_mask, score_mask).sum(-1)
    return total / score_mask[:, 1:].sum(-1).clamp(min=1) if reduction == "mean" else total


class HolisticEvalModel(DialEvalPreTrainedModel):
    """A causal LM as HolisticEval's scorer: ``forward(input_ids, attention_mask, score_mask)`` returns in
    ``scores`` the log-probability of the tokens ``score_mask`` marks, reduced as ``config.token_reduction`` says
    (the raw ``c_raw(r|q)`` of an input
    holding the query, ``f_raw(r)`` of the response alone; see :mod:`hf_dialeval.metrics.holistic_eval.data` for the
    layout); with ``labels`` it returns the next-token loss over every labelled token."""

    config_class = HolisticEvalConfig
    config: HolisticEvalConfig
    backbone_kind = "causal-lm"
    backbone_attribute = "lm"

    def __init__(self, config: HolisticEvalConfig) -> None:
        super().__init__(config)
        self.post_init()

    def head_names(self) -> list[str]:
        """The LM head's parts that a causal LM built from an encoder gets fresh (BERT's prediction transform);
        they train in full beside LoRA and are saved with the adapter. GPT-2's head is its tied embeddings."""
        return [name for name, _ in self.named_modules() if name.endswith("cls.predictions.transform")]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                score_mask: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> DialEvalOutput:
        loss = None
        if labels is not None:
            logits = self.lm(input_ids=input_ids, attention_mask=attention_mask).logits
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(), ignore_index=-100)
        scores = None
        if score_mask is not None:
            scores = response_log_probs(self.lm, input_ids, attention_mask, score_mask, self.config.token_reduction)
        return DialEvalOutput(loss=loss, scores=scores)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
