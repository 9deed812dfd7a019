"""QuantiDCE as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level: context + response → coherence)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.base import EncoderMetric, encode_context_response
from hf_dialeval.inference.metric import ScoreOutput
from hf_dialeval.metrics.quantidce.modeling_quantidce import QuantiDCEModel

#: The offline default shipped inside the package: a bi-encoder over MiniLM, the encoder trained here by response
#: selection on DailyDialog train, then the head (on the cosines of the response with the context's utterances) by
#: MLR on DailyDialog++ with parrot negatives; the folder holds the head and the encoder's change as a rank-16
#: adapter over the backbone. See ``model_cards/quantidce.md``.
DEFAULT_CHECKPOINT = Path(__file__).parent / "defaults" / "quantidce-minilm-bi"

#: Ye et al. 2021, Table 1 (ConvAI2, BERT-base), printed beside ours by ``hf-dialeval benchmark``.
PAPER_RESULTS = {("quantidce", "grade-convai2"): {"Coherence": {"pearson": 0.554, "spearman": 0.554, "kendall": 0.395}}}


def load_quantidce(checkpoint: str | Path | None = None) -> tuple[QuantiDCEModel, PreTrainedTokenizerBase]:
    """Model (eval mode) and tokenizer of a QuantiDCE checkpoint: a Hub id or folder with a full model, or a
    folder with a ``peft`` adapter over the backbone its ``config.json`` names (merged on load); ``None``: the
    shipped default."""
    return load_checkpoint(checkpoint, DEFAULT_CHECKPOINT, QuantiDCEModel)


class QuantiDCEMetric(EncoderMetric):
    """Coherence of a response to its context. ``coherence`` is on the human 1–5 scale (``1 + 4·score``, the
    fine-tuning convention); higher is better."""

    name = "quantidce"
    level = "turn"
    dimensions = ("coherence",)
    needs_context = True

    model: QuantiDCEModel

    @property
    def lowest_score(self) -> float:
        """An empty response scores the bottom of the human scale (1 by default): no reply is no coherent reply."""
        return float(self.model.config.score_scale[0])

    @property
    def max_tokens(self) -> int:
        return self.model.config.max_seq_length

    def encode(self, contexts: list[list[str]], responses: list[str]) -> tuple[dict[str, list[list[int]]], list[bool]]:
        """Token ids of ``[CLS] context [SEP] response [SEP]`` within the model's ``max_seq_length``."""
        return encode_context_response(self.tokenizer, contexts, responses, self.model.config.max_seq_length)

    def predict_encoded(self, encoding: dict[str, list[list[int]]]) -> list[float]:
        """[0, 1] scores of pre-tokenised pairs, in length-sorted batches, in input order."""
        return self.forward_rows(lambda **batch: self.model(**batch).scores, encoding).tolist()

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        encoding, truncated = self.encode(contexts, responses)
        coherence = self.model.config.calibrate(torch.tensor(self.predict_encoded(encoding))).tolist()
        return ScoreOutput(scores={"coherence": coherence}, overall=list(coherence), truncated=truncated)


def quantidce_metric(checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
                     dtype: str | None = None) -> QuantiDCEMetric:
    """QuantiDCE from ``checkpoint`` (Hub id or folder; ``None``: the shipped offline default), computing in
    ``dtype`` (``fp32``, the default, ``bf16`` or ``fp16``)."""
    model, tokenizer = load_quantidce(checkpoint)
    return QuantiDCEMetric(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype)
