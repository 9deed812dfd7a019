"""Dial-M as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level): Eq. 1's mean keyword cross-entropy, oriented
so that higher is better, with the masked keywords and their losses on request (the paper's §5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import DataCollatorForTokenClassification, PreTrainedTokenizerBase

from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.base import EncoderMetric
from hf_dialeval.data.model import item_list
from hf_dialeval.inference.metric import ScoreOutput, check_lengths
from hf_dialeval.metrics.dial_m.data import add_eou_token, masked_keyword_copies
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel

#: The offline default shipped inside the package (see ``model_cards/dial_m.md``).
DEFAULT_CHECKPOINT = Path(__file__).parent / "defaults" / "dial-m-minilm"
#: How a score is made from the keyword losses: Eq. 1 (the paper), or how much the context and condition lower them.
VARIANTS = ("eq1", "context-gain")
#: The score of an empty response: a keyword loss of 100 nats, beyond any a real prediction gets (guessing uniformly
#: among 50,000 tokens costs 10.8).
LOWEST_SCORE = -100.0

# Dey & Desarkar 2023, Table 1 (rows 12-16) and Table 2. The paper correlates the raw loss (lower is better); the
# exposed score is its negation, so the signs here are flipped (the magnitudes are the paper's).
_TABLE_1 = {  # row: {benchmark: (pearson, spearman)} of the raw loss
    "dial-m": {"usr-topical": (-0.432, -0.463), "usr-persona": (-0.464, -0.486),
               "predictive-engage": (-0.570, -0.592), "holistic-context": (-0.590, -0.598)},
    "dial-m:random-masking": {"usr-topical": (-0.320, -0.316), "usr-persona": (-0.359, -0.345),
                              "predictive-engage": (-0.549, -0.547), "holistic-context": (-0.607, -0.630)},
    "dial-m:no-pre-training": {"usr-topical": (-0.391, -0.429), "usr-persona": (-0.443, -0.489),
                               "predictive-engage": (-0.556, -0.586), "holistic-context": (-0.567, -0.583)},
    "dial-m:no-fine-tuning": {"usr-topical": (-0.290, -0.282), "usr-persona": (-0.288, -0.258),
                              "predictive-engage": (-0.550, -0.549), "holistic-context": (-0.592, -0.613)},
    "dial-m:untrained": {"usr-topical": (-0.248, -0.248), "usr-persona": (-0.154, -0.144),
                         "predictive-engage": (-0.508, -0.535), "holistic-context": (-0.540, -0.552)},
}
_DIMENSION = {"usr-topical": "Overall", "usr-persona": "Overall", "predictive-engage": "Engagement",
              "holistic-context": "Coherence"}
_TABLE_2 = {  # sub-dimension: {benchmark: (pearson, spearman)} of the raw loss
    "Understandable": {"usr-topical": (-0.35, -0.40), "usr-persona": (-0.18, -0.14)},
    "Natural": {"usr-topical": (-0.37, -0.40), "usr-persona": (-0.28, -0.28)},
    "Maintains Context": {"usr-topical": (-0.37, -0.40), "usr-persona": (-0.40, -0.39)},
    "Engaging": {"usr-topical": (-0.43, -0.45), "usr-persona": (-0.33, -0.34)},
    "Uses Knowledge": {"usr-topical": (-0.35, -0.37), "usr-persona": (-0.34, -0.37)},
}
PAPER_RESULTS: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
for _row, _benchmarks in _TABLE_1.items():
    for _benchmark, (_r, _rho) in _benchmarks.items():
        PAPER_RESULTS[(_row, _benchmark)] = {_DIMENSION[_benchmark]: {"pearson": -_r, "spearman": -_rho}}
for _dimension, _benchmarks in _TABLE_2.items():
    for _benchmark, (_r, _rho) in _benchmarks.items():
        PAPER_RESULTS[("dial-m", _benchmark)][_dimension] = {"pearson": -_r, "spearman": -_rho}


@dataclass(frozen=True)
class KeywordLoss:
    """One masked keyword occurrence of a response and the cross-entropy of predicting its tokens."""

    word: str
    loss: float


def load_dial_m(checkpoint: str | Path | None = None) -> tuple[DialMModel, PreTrainedTokenizerBase]:
    """Model (eval mode, float32) and tokenizer of a Dial-M checkpoint: a Hub id or folder with a full model, or a
    folder with a ``peft`` adapter over the backbone its ``config.json`` names; ``None``: the shipped default."""
    model, tokenizer = load_checkpoint(checkpoint, DEFAULT_CHECKPOINT, DialMModel)
    return model.float(), tokenizer


class DialMMetric(EncoderMetric):
    """Dial-M's turn-level score ``dial_m``, higher is better: minus Eq. 1, the mean over the response's keywords of
    the cross-entropy of each keyword's tokens, masked on its own, given the context and the condition (persona,
    knowledge) when the item has one. ``dial_m_loss`` (:meth:`losses`) is the paper's raw value (lower is better).

    ``variant="context-gain"`` scores instead how much the context and condition lower those losses (the loss of the
    response alone minus the loss with them; higher is better): an option, not Eq. 1.

    Every keyword-masked copy of every item runs in the same length-sorted batches (``batch_size`` copies each).
    An empty response scores :data:`LOWEST_SCORE`."""

    name = "dial-m"
    level = "turn"
    dimensions = ("dial_m",)
    lowest_score = LOWEST_SCORE

    model: DialMModel

    def __init__(self, model: DialMModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, variant: str = "eq1",
                 dtype: str | torch.dtype | None = None) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
        super().__init__(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype)
        self.variant = variant
        self.eou = model.config.eou_token_id if model.config.eou_token_id is not None else \
            add_eou_token(tokenizer, None)[0]
        self.collator = DataCollatorForTokenClassification(tokenizer, return_tensors="pt")

    @property
    def max_tokens(self) -> int:
        return self.model.config.max_seq_length

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        config = self.model.config
        settings.update(variant=self.variant, max_keywords=config.max_keywords, eou_token=config.eou_token)
        return settings

    def keyword_losses(self, contexts: Sequence[Sequence[str]], responses: Sequence[str],
                       conditions: Sequence[str | None] | None = None) -> tuple[list[list[KeywordLoss]], list[bool]]:
        """Per item, each masked keyword occurrence of its response with its loss (in the response's order; the
        paper's §5 reading of a score), and whether anything of the item was cut to fit."""
        contexts, responses = item_list(contexts, "contexts"), item_list(responses, "responses")
        conditions = item_list(conditions, "conditions") if conditions is not None else [None] * len(responses)
        check_lengths(len(responses), "responses", contexts=contexts, conditions=conditions)
        config = self.model.config
        copies = masked_keyword_copies(self.tokenizer, contexts, responses, conditions, self.eou,
                                       config.max_seq_length, config.max_keywords, config.keyword_pos_tags)
        found: list[list[KeywordLoss]] = [[] for _ in responses]
        if copies.owners:
            losses = self.forward_rows(lambda **batch: self.model(**batch).scores, copies.rows)
            for owner, word, loss in zip(copies.owners, copies.words, losses.tolist()):
                found[owner].append(KeywordLoss(word, loss))
        return found, copies.truncated

    def losses(self, contexts: Sequence[Sequence[str]], responses: Sequence[str],
               conditions: Sequence[str | None] | None = None) -> tuple[list[float], list[bool]]:
        """``dial_m_loss`` per item (Eq. 1: the mean of its keyword losses; lower is better) and whether anything
        was cut. ``nan`` for a response without a word."""
        found, truncated = self.keyword_losses(contexts, responses, conditions)
        return [math.fsum(k.loss for k in keywords) / len(keywords) if keywords else math.nan
                for keywords in found], truncated

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        losses, truncated = self.losses(contexts, responses, conditions)
        if self.variant == "context-gain":
            alone, _ = self.losses([[] for _ in responses], responses, [None] * len(responses))
            scores = [a - b for a, b in zip(alone, losses)]
        else:
            scores = [-loss for loss in losses]
        scores = [LOWEST_SCORE if math.isnan(score) else score for score in scores]
        return ScoreOutput(scores={"dial_m": scores}, overall=list(scores), truncated=truncated)


def dial_m_metric(checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
                  variant: str = "eq1", dtype: str | None = None) -> DialMMetric:
    """Dial-M from ``checkpoint`` (Hub id or folder; ``None``: the shipped offline default), computing in ``dtype``
    (``fp32``, the default, ``bf16`` or ``fp16``)."""
    model, tokenizer = load_dial_m(checkpoint)
    return DialMMetric(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, variant=variant,
                       dtype=dtype)
