"""RADE model (Shi et al. 2023, §5.1, Eq. 1–6): a posterior encoder over ``context [SEP] reference [SEP]
candidate``, pooling and a feed-forward layer predicting ``(ŝ_h, ŝ_a)``, the reference's and the candidate's
scores on the human scale; and a generator, the decoder of the same seq2seq model, which reads the context alone
through the shared encoder and is trained to produce the reference (teacher-forced NLL, Eq. 8).

On a causal LM (``lm_kind="causal-lm"``, this package's adaptation) the two are one model: its hidden states of the
posterior transcript feed the head, and its next-token loss of the reference given the context's transcript is the
generation task, on the same parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init

from hf_dialeval.metrics.rade.configuration_rade import RADEConfig
from hf_dialeval.modeling.base import (
    DialEvalOutput,
    DialEvalPreTrainedModel,
    encoder_inputs,
    masked_mean_pool,
    run_head,
)
from hf_dialeval.modeling.registration import register_available


@dataclass
class RADEOutput(DialEvalOutput):
    """:class:`~hf_dialeval.modeling.base.DialEvalOutput` of RADE: ``scores`` are the candidate's predicted
    scores ŝ_a ``(batch,)`` on the human scale, ``logits`` the head's ``(batch, 2)`` output ``(ŝ_h, ŝ_a)``.

    Args:
        reference_scores: ``(batch,)`` the reference's predicted scores ŝ_h.
        generation_loss: the generator's mean token NLL of the references given their contexts (Eq. 8), when
            ``generator_labels`` are given.
    """

    reference_scores: torch.FloatTensor | None = None
    generation_loss: torch.FloatTensor | None = None


class RADEScoreHead(nn.Module):
    """The feed-forward layer of Eq. 4: dropout, Linear-tanh, dropout, Linear to ``(ŝ_h, ŝ_a)`` (the shape of
    BART's classification head)."""

    def __init__(self, pooled_size: int, hidden_size: int, dropout: float) -> None:
        super().__init__()
        self.dense = nn.Linear(pooled_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_size, 2)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.dense(self.dropout(pooled)))
        return self.out(self.dropout(hidden))


class RADEModel(DialEvalPreTrainedModel):
    """RADE: ``seq2seq`` is the backbone (BART, or an ``EncoderDecoderModel`` built from an encoder by
    :func:`hf_dialeval.modeling.backbones.build_backbone`), ``head`` the regression layer. Scoring runs the encoder alone;
    the decoder runs only when ``generator_labels`` are given (training). With ``lm_kind="causal-lm"`` the backbone is
    a causal LM held as ``lm``, which both reads the posterior input and generates the reference."""

    config_class = RADEConfig
    config: RADEConfig
    base_model_prefix = "rade"
    backbone_kind = "seq2seq"
    backbone_attribute = "seq2seq"
    backbone_attributes = {"seq2seq": "seq2seq", "causal-lm": "lm"}

    def __init__(self, config: RADEConfig) -> None:
        if config.pooling == "segments" and config.sep_token_id is None:
            raise ValueError("a RADEConfig with pooling='segments' needs the tokenizer's sep_token_id")
        super().__init__(config)
        hidden_size = self.posterior_encoder.config.hidden_size
        pooled_size = 4 * hidden_size + 2 * config.length_features if config.pooling == "segments" else hidden_size
        self.head = RADEScoreHead(pooled_size, hidden_size, config.head_dropout)
        self.post_init()

    @property
    def posterior_encoder(self) -> PreTrainedModel:
        """The encoder the posterior input and the generator's context share (Eq. 2 and 5); a causal LM's
        Transformer (its model without the output layer)."""
        return self.lm.base_model if self.config.lm_kind == "causal-lm" else self.seq2seq.get_encoder()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        # transformers initialises children before their parent and then skips their parameters: the head's
        # output layer is initialised here, as a layer, so that untrained predictions start mid-scale
        head = getattr(self, "head", None)
        if head is not None and module is head.out:
            init.normal_(module.weight, std=0.02)
            init.constant_(module.bias, sum(self.config.human_scale) / 2)
        else:
            super()._init_weights(module)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        generator_input_ids: torch.Tensor | None = None,
        generator_attention_mask: torch.Tensor | None = None,
        generator_labels: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        **kwargs: Any,
    ) -> RADEOutput:
        """Score ``input_ids`` (posterior inputs); with ``generator_labels`` (the reference's token ids, ``-100``
        at padding) also the generator's loss on ``generator_input_ids`` (the context alone); with ``labels``
        (the candidates' human scores) the MSE of ŝ_a as ``loss`` (the paper's full loss is
        :func:`~hf_dialeval.metrics.rade.trainer.rade_loss`)."""
        inputs = encoder_inputs(input_ids, attention_mask, token_type_ids)
        if self.config.lm_kind == "causal-lm":
            inputs.pop("token_type_ids", None)
        encoded = self.posterior_encoder(**inputs, output_hidden_states=output_hidden_states, return_dict=True)
        pooled = self._pool(encoded.last_hidden_state, inputs["input_ids"], inputs["attention_mask"])
        both = run_head(self.head, pooled)
        reference_scores, candidate_scores = both.unbind(-1)
        generation_loss = None
        if generator_labels is not None:
            if generator_input_ids is None:
                raise ValueError("generator_labels need generator_input_ids: the context the reference answers")
            # seq2seq: the decoder generates the labels from the encoded context; causal LM: the labels are the
            # reference's tokens of the transcript in generator_input_ids, predicted from what precedes them
            generator = self.lm if self.config.lm_kind == "causal-lm" else self.seq2seq
            generation_loss = generator(input_ids=generator_input_ids, attention_mask=generator_attention_mask,
                                        labels=generator_labels, return_dict=True).loss
        loss = None if labels is None else F.mse_loss(candidate_scores.float(), labels.to(both.device).float())
        return RADEOutput(loss=loss, scores=candidate_scores, logits=both, reference_scores=reference_scores,
                          generation_loss=generation_loss, pooled_output=pooled,
                          hidden_states=encoded.hidden_states if output_hidden_states else None)

    def _pool(self, last_hidden_state: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor
              ) -> torch.Tensor:
        if self.config.pooling == "first":
            return last_hidden_state[:, 0]
        if self.config.pooling == "last":  # the last real token, on either padding side
            positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
            last = (positions * attention_mask).argmax(-1)
            return last_hidden_state[torch.arange(len(last), device=last.device), last]
        pooled = masked_mean_pool(last_hidden_state, attention_mask)
        if self.config.pooling == "mean":
            return pooled
        reference_mask, candidate_mask = response_masks(input_ids, attention_mask, self.config.sep_token_id)
        reference = masked_mean_pool(last_hidden_state, reference_mask)
        candidate = masked_mean_pool(last_hidden_state, candidate_mask)
        parts = [pooled, reference, candidate, candidate - reference]
        if self.config.length_features:
            counts = torch.stack([reference_mask.sum(-1), candidate_mask.sum(-1)], dim=-1)
            parts.append(torch.log1p(counts.to(pooled.dtype)))
        return torch.cat(parts, dim=-1)


def response_masks(input_ids: torch.Tensor, attention_mask: torch.Tensor, sep_token_id: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Masks of the reference's and the candidate's tokens in posterior inputs ``… [SEP] reference [SEP]
    candidate [SEP]`` (BART: ``… </s></s> reference </s> candidate </s>``): counting runs of separators from the
    end, the candidate's tokens have one run after them, the reference's two."""
    is_separator = (input_ids == sep_token_id) & attention_mask.bool()
    run_start = is_separator & ~torch.nn.functional.pad(is_separator[:, :-1], (1, 0), value=False)
    runs_from_here = run_start.flip(-1).cumsum(-1).flip(-1)  # separator runs starting at or after each position
    text = attention_mask.bool() & ~is_separator
    return (text & (runs_from_here == 2)).long(), (text & (runs_from_here == 1)).long()


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
