"""QuantiDCE as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level: context + response → coherence)."""

from __future__ import annotations

import torch

from hf_dialeval.inference.model_metric import ModelMetric, encode_context_response
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.quantidce import ENTRY
from hf_dialeval.metrics.quantidce.modeling_quantidce import QuantiDCEModel


#: The pairs a bi-encoder reads in one call: it encodes each distinct utterance of a call once, in chunks of similar
#: length whatever the call's size, so a large call runs each context and utterance its items repeat once (900
#: persona-chat turns: 40,053 token positions, where calls of 32 pairs ran 67,869; ``benchmarks/scale/run.py limit``).
BI_ENCODER_PAIRS = 1024


class QuantiDCEMetric(ModelMetric):
    """Coherence of a response to its context. ``coherence`` is on the human 1–5 scale (``1 + 4·score``, the
    fine-tuning convention); higher is better."""

    name, level = ENTRY.name, ENTRY.level
    dimensions = ("coherence",)
    needs_context = True

    model: QuantiDCEModel

    @property
    def lowest_score(self) -> float:
        """An empty response scores the bottom of the human scale (1 by default): no reply is no coherent reply."""
        return float(self.model.config.score_scale[0])

    def encode(self, contexts: list[list[str]], responses: list[str]) -> tuple[dict[str, list[list[int]]], list[bool]]:
        """Token ids of ``[CLS] context [SEP] response [SEP]`` within the model's ``max_seq_length``."""
        return encode_context_response(self.tokenizer, contexts, responses, self.model.config.max_seq_length)

    def predict_encoded(self, encoding: dict[str, list[list[int]]]) -> list[float]:
        """[0, 1] scores of pre-tokenised pairs, in length-sorted batches (a bi-encoder's of at least
        :data:`BI_ENCODER_PAIRS` pairs), in input order."""
        bi = self.model.config.encoding == "bi"
        scores = self.forward_rows(lambda **batch: self.model(**batch).scores, encoding,
                                   max(self.batch_size, BI_ENCODER_PAIRS) if bi else None).tolist()
        self.check_finite(scores)
        return scores

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        encoding, truncated = self.encode(contexts, responses)
        coherence = self.model.config.calibrate(torch.tensor(self.predict_encoded(encoding))).tolist()
        return ScoreOutput(scores={"coherence": coherence}, overall=list(coherence), truncated=truncated)
