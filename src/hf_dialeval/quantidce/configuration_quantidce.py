"""Configuration of QuantiDCE (Ye et al. 2021): a pair encoder and a three-layer MLP coherence predictor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..configuration_utils import DialEvalConfig
from ..registration import register_available

POOLING_MODES = ("cls", "mean")


class QuantiDCEConfig(DialEvalConfig):
    """Every hyper-parameter of the forward pass (the backbone, weights source, token limit and 1–5 calibration
    as in :class:`~hf_dialeval.configuration_utils.DialEvalConfig`).

    Args:
        mlp_hidden_sizes: the two hidden widths of the three-layer MLP (ELU, ELU, sigmoid).
        pooling: ``"cls"`` (the paper: the ``[CLS]`` vector) or ``"mean"`` (masked mean of the token vectors,
            how sentence-embedding backbones such as MiniLM were trained).
        max_seq_length: tokens per ``[CLS] context [SEP] response [SEP]`` pair; the oldest context goes first.
        score_scale: ``(low, high)`` of the human scale; ``human_score = low + (high - low) * score``.
    """

    model_type = "quantidce"

    def __init__(
        self,
        mlp_hidden_sizes: Sequence[int] = (256, 64),
        pooling: str = "cls",
        max_seq_length: int = 128,
        score_scale: Sequence[float] = (1.0, 5.0),
        **kwargs: Any,
    ) -> None:
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, not {pooling!r}")
        if len(mlp_hidden_sizes) != 2 or any(int(size) < 1 for size in mlp_hidden_sizes):
            raise ValueError(f"mlp_hidden_sizes must be two positive widths (a three-layer MLP), not {mlp_hidden_sizes!r}")
        if score_scale is None:
            raise ValueError("QuantiDCE scores on a human scale: give score_scale=(low, high)")
        self.mlp_hidden_sizes = [int(size) for size in mlp_hidden_sizes]
        self.pooling = pooling
        super().__init__(max_seq_length=max_seq_length, score_scale=score_scale, **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
