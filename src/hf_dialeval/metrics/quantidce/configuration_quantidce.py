"""Configuration of QuantiDCE (Ye et al. 2021): a pair encoder (the paper's cross-encoding, or a bi-encoding for
sentence encoders) and a three-layer MLP coherence predictor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available

POOLING_MODES = ("cls", "mean")
#: ``cross``: one ``[CLS] context [SEP] response [SEP]`` encoding (the paper); ``bi``: context and response
#: encoded separately by the same encoder (how sentence encoders such as MiniLM and MPNet were trained).
ENCODINGS = ("cross", "bi")
#: What a bi-encoder compares the response with: ``last``, the last context utterance (what the ``similarity``
#: floor compares); ``all``, also every context utterance (the mean and the closest one, which a reply that
#: repeats an earlier turn is close to).
BI_CONTEXTS = ("last", "all")
#: What a bi-encoder's head reads: ``full``, the embeddings ``[u, v, u·v, |u−v|]`` and the cosines; ``cosines``,
#: the cosines alone (a head that can only re-weigh similarities, not learn the training domain's vocabulary).
BI_FEATURES = ("full", "cosines")


class QuantiDCEConfig(DialEvalConfig):
    """Every hyper-parameter of the forward pass (the backbone, weights source, token limit and 1–5 calibration
    as in :class:`~hf_dialeval.modeling.configuration.DialEvalConfig`).

    Args:
        mlp_hidden_sizes: the two hidden widths of the three-layer MLP (ELU, ELU, then sigmoid; a bi-encoder's
            residual MLP ends linear, added to its logits).
        pooling: ``"cls"`` (the paper: the ``[CLS]`` vector) or ``"mean"`` (masked mean of the token vectors,
            how sentence-embedding backbones such as MiniLM were trained).
        max_seq_length: tokens per ``[CLS] context [SEP] response [SEP]`` pair; the oldest context goes first.
            A bi-encoder reads the same pair (one input format for scoring and both trainers) and encodes each
            of its utterances and its response separately.
        score_scale: ``(low, high)`` of the human scale; ``human_score = low + (high - low) * score``.
        encoding: ``"cross"`` (the paper: the MLP reads the pair's joint encoding) or ``"bi"`` (the MLP reads
            features of separate unit-length embeddings u of the last utterance and v of the response,
            ``[u, v, u·v, |u−v|, cos(u, v)]``, and adds its output to a learned affine map of ``cos(u, v)``
            that starts as 5 · cos, the score the sum's sigmoid; its last layer starts at zero, so an untrained
            bi-encoder's logits are 5 × the ``similarity`` floor's cosine and it ranks as the floor does).
        bi_context: with ``encoding="bi"``: ``"last"`` or ``"all"`` (the features add the cosine of v with the
            mean of the context's utterance embeddings and with the closest utterance), see :data:`BI_CONTEXTS`.
        bi_features: with ``encoding="bi"``: ``"full"`` or ``"cosines"`` (the head reads the cosines alone), see
            :data:`BI_FEATURES`.
        cls_token_id, sep_token_id: with ``encoding="bi"``: the tokenizer's ids that open and close a single
            text; the pair is split at ``sep_token_id`` and each part re-encoded as ``cls part sep``.
    """

    model_type = "quantidce"

    def __init__(
        self,
        mlp_hidden_sizes: Sequence[int] = (256, 64),
        pooling: str = "cls",
        max_seq_length: int = 128,
        score_scale: Sequence[float] = (1.0, 5.0),
        encoding: str = "cross",
        bi_context: str = "last",
        bi_features: str = "full",
        cls_token_id: int | None = None,
        sep_token_id: int | None = None,
        **kwargs: Any,
    ) -> None:
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, not {pooling!r}")
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
        if bi_context not in BI_CONTEXTS:
            raise ValueError(f"bi_context must be one of {BI_CONTEXTS}, not {bi_context!r}")
        if bi_features not in BI_FEATURES:
            raise ValueError(f"bi_features must be one of {BI_FEATURES}, not {bi_features!r}")
        if len(mlp_hidden_sizes) != 2 or any(int(size) < 1 for size in mlp_hidden_sizes):
            raise ValueError(f"mlp_hidden_sizes must be two positive widths (a three-layer MLP), not {mlp_hidden_sizes!r}")
        if score_scale is None:
            raise ValueError("QuantiDCE scores on a human scale: give score_scale=(low, high)")
        self.mlp_hidden_sizes = [int(size) for size in mlp_hidden_sizes]
        self.pooling = pooling
        self.encoding = encoding
        self.bi_context = bi_context
        self.bi_features = bi_features
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        super().__init__(max_seq_length=max_seq_length, score_scale=score_scale, **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
