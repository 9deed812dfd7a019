"""RADE as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level with a reference: context + reference +
candidate → the candidate's score on the human 1–5 scale)."""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.inference.model_metric import ModelMetric
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.rade import ENTRY
from hf_dialeval.metrics.rade.data import context_lines, encode_causal_posterior, encode_posterior
from hf_dialeval.metrics.rade.modeling_rade import RADEModel


class RADEMetric(ModelMetric):
    """The quality of a candidate response given its context and a reference response (the paper's ŝ_a), on the
    human 1–5 scale the model was trained on; higher is better. Scoring runs the encoder and the head only."""

    name, level = ENTRY.name, ENTRY.level
    dimensions = ("score",)
    needs_reference = True

    model: RADEModel

    def __init__(self, model: RADEModel, tokenizer: PreTrainedTokenizerBase, **settings: Any) -> None:
        super().__init__(model, tokenizer, **settings)
        config = model.config
        #: a causal LM's transcript layout (``None`` for the paper's seq2seq model)
        self.layout = Layout.of(ensure_pad_token(tokenizer), "speaker-tags", config.detokenize) \
            if config.lm_kind == "causal-lm" else None

    @property
    def lowest_score(self) -> float:
        """An empty candidate scores the bottom of the human scale (1 by default): no reply is the worst reply."""
        return float(self.model.config.human_scale[0])

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        max_length = self.model.config.max_seq_length
        if self.layout is not None:
            lines = context_lines(self.tokenizer, self.layout, contexts)
            encoding, truncated = encode_causal_posterior(self.tokenizer, self.layout, lines, references, responses,
                                                          max_length)
        else:
            encoding, truncated = encode_posterior(self.tokenizer, contexts, references, responses, max_length)
        scores = self.forward_rows(lambda **batch: self.model(**batch).scores, encoding).tolist()
        self.check_finite(scores)
        return ScoreOutput(scores={"score": scores}, overall=list(scores), truncated=truncated)
