"""The ``similarity`` floor metric: cosine of sentence embeddings of the last context utterance and the response;
and ``reference-similarity``, the floor of reference-assisted metrics: the cosine of the response with the reference.

No training at all, yet a strong turn-level coherence floor (MiniLM sentence embeddings reach Spearman 0.494 on
grade-convai2): a learned coherence metric that does not clearly beat it has learned nothing. The encoder is any
``AutoModel`` (default: the offline MiniLM of ``sentence-transformers/all-MiniLM-L6-v2``), mean-pooled over real
tokens, as sentence-transformers does.
"""

from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval.data.model import is_blank
from hf_dialeval.inference.model_metric import ModelMetric
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.similarity import REFERENCE_SIMILARITY, SIMILARITY
from hf_dialeval.modeling.base import masked_mean_pool
from hf_dialeval.modeling.checkpoint_sources import from_pretrained, resolve_backbone_path
from hf_dialeval.modeling.loading import SHIPPED_PRECISION
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

#: Tokens per text (MiniLM was trained on inputs of at most 256 word pieces).
DEFAULT_MAX_SEQ_LENGTH = 256


class SimilarityMetric(ModelMetric):
    """Turn level: cosine similarity in [−1, 1] of the mean-pooled embeddings of the context's last utterance
    with text and the response (higher: more on topic); an empty response scores −1. Dialogue level: the mean
    over the dialogue's system turns."""

    name, level = SIMILARITY.name, SIMILARITY.level
    dimensions = ("similarity",)
    needs_context = True
    #: An empty response gets the lowest cosine: it is on no topic at all.
    lowest_score = -1.0

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, dtype: str | torch.dtype | None = None,
                 max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH) -> None:
        super().__init__(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype)
        self.token_limit = max_seq_length

    @classmethod
    def load(cls, checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | torch.dtype | None = None, max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH) -> SimilarityMetric:
        """The floor with the sentence encoder ``checkpoint`` (any ``AutoModel`` encoder, Hub id or folder; ``None``:
        MiniLM, offline)."""
        path = resolve_backbone_path(checkpoint or MINILM_HUB_ID)
        model = from_pretrained(AutoModel, path)
        if checkpoint is None:  # the floor's own encoder is a shipped default too (its bf16 record: 0.0006)
            model.config.scoring_dtype = SHIPPED_PRECISION
        return cls(model, AutoTokenizer.from_pretrained(path), device=device, batch_size=batch_size,
                   checkpoint=checkpoint, dtype=dtype, max_seq_length=max_seq_length)

    @property
    def max_seq_length(self) -> int:
        return self.token_limit

    def embed(self, texts: list[str]) -> tuple[torch.Tensor, list[bool]]:
        """Unit-length embeddings of ``texts`` and, per text, whether it was cut to ``max_seq_length`` (its end).
        Each distinct text is encoded once (benchmarks score several responses to one context)."""
        distinct = list(dict.fromkeys(texts))
        # one tokenisation pass: a text that does not fit spills into overflow rows, which are dropped
        encoding = self.tokenizer(distinct, truncation=True, max_length=self.max_seq_length,
                                  return_overflowing_tokens=True, verbose=False)
        sample_of_row = encoding.pop("overflow_to_sample_mapping")
        first_rows = [row for row, sample in enumerate(sample_of_row) if row == 0 or sample_of_row[row - 1] != sample]
        inputs = {key: [values[row] for row in first_rows] for key, values in encoding.items()}
        rows_per_sample = Counter(sample_of_row)

        def pooled(**batch: torch.Tensor) -> torch.Tensor:
            return masked_mean_pool(self.model(**batch).last_hidden_state, batch["attention_mask"])

        vectors = F.normalize(self.forward_rows(pooled, inputs), dim=-1)
        position = {text: index for index, text in enumerate(distinct)}
        rows = [position[text] for text in texts]
        self.check_finite(vectors[rows].tolist())
        return vectors[rows], [rows_per_sample[row] > 1 for row in rows]

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        last, last_cut = self.embed([_last_said(context) for context in contexts])
        response, response_cut = self.embed(responses)
        values = (last * response).sum(-1).tolist()
        return ScoreOutput({"similarity": values}, list(values), [a or b for a, b in zip(last_cut, response_cut)])


class ReferenceSimilarityMetric(SimilarityMetric):
    """Turn level with a reference: cosine similarity in [−1, 1] of the mean-pooled embeddings of the reference and
    the response (higher: closer to what the reference says), the semantic-similarity kind of reference-based
    metric (cf. BERTScore); an empty response scores −1. A reference-assisted metric such as RADE, which sees the
    reference too, must clearly beat it."""

    name, level = REFERENCE_SIMILARITY.name, REFERENCE_SIMILARITY.level
    needs_context = False
    needs_reference = True

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        reference, reference_cut = self.embed(references)
        response, response_cut = self.embed(responses)
        values = (reference * response).sum(-1).tolist()
        return ScoreOutput({"similarity": values}, list(values), [a or b for a, b in zip(reference_cut, response_cut)])


def _last_said(context: list[str]) -> str:
    """The last utterance with text: an empty one (a user who pressed enter) says nothing to be similar to."""
    return next((utterance for utterance in reversed(context) if not is_blank(utterance)), context[-1])
