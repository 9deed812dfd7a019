"""HolisticEval's model (Pang et al. 2020, §3.1–3.2): a causal language model that gives, per input, the mean
log-probability of the response's tokens (or their sum), and the percentile normalisation of Eq. 2.

No head of its own: the backbone is the LM (GPT-2, or an encoder family made a decoder by the shared backbone
builder); the config adds the fitted cutoffs. ``labels`` give the ordinary next-token loss (LM fine-tuning, §4.3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import HolisticEvalConfig
from hf_dialeval.modeling.base import DialEvalOutput, DialEvalPreTrainedModel
from hf_dialeval.modeling.calibration import percentile_normalise, range_normalise
from hf_dialeval.modeling.lm_head import target_log_probs
from hf_dialeval.modeling.registration import register_available


def response_log_probs(lm: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                       score_mask: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """``Σ_t log P(r_t | everything before it)`` per row over the tokens ``score_mask`` marks, each predicted by the
    causal LM ``lm`` from the position before it (log-softmax in float32); divided by their count ``T_r`` for
    ``reduction="mean"`` (Eq. 1 and 3). Only the marked positions are projected onto the vocabulary, a bounded chunk
    at a time (:func:`~hf_dialeval.modeling.lm_head.target_log_probs`)."""
    hidden = lm.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    scored = score_mask[:, 1:].bool()
    token_log_probs = target_log_probs(lm, hidden[:, :-1][scored], input_ids[:, 1:][scored])
    rows = scored.nonzero()[:, 0]
    total = torch.zeros(len(input_ids), device=input_ids.device).index_add_(0, rows, token_log_probs)
    return total / scored.sum(-1).clamp(min=1) if reduction == "mean" else total


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

    def normalise(self, raw: torch.Tensor, score: str) -> torch.Tensor:
        """Eq. 2 with the config's fitted cutoff of ``score`` (``"context_coherence"`` or ``"fluency"``); a PMI context
        coherence between its fitted lower and upper percentiles."""
        config = self.config
        if score == "context_coherence" and config.context_coherence_measure == "pmi":
            if config.context_coherence_upper_cutoff is None:
                config.cutoff("context_coherence_upper")  # names what to fit
            return range_normalise(raw, config.cutoff(score), config.context_coherence_upper_cutoff)
        return percentile_normalise(raw, config.cutoff(score))


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
