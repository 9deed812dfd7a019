"""Configuration of QuantiDCE (Ye et al. 2021): a pair encoder and a three-layer MLP coherence predictor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers import PretrainedConfig

from ..configuration_utils import backbone_config_dict
from ..registration import register_available

POOLING_MODES = ("cls", "mean")


class QuantiDCEConfig(PretrainedConfig):
    """Every hyper-parameter of the forward pass.

    Args:
        backbone_config: the encoder's config as a dict (with ``model_type``), so that ``from_pretrained``
            rebuilds the encoder without the network; or a Hub id / local path / config to read it from.
        backbone_name_or_path: where the encoder's pretrained weights come from (used by
            :meth:`QuantiDCEModel.from_backbone` and by adapter checkpoints).
        mlp_hidden_sizes: the two hidden widths of the three-layer MLP (ELU, ELU, sigmoid).
        pooling: ``"cls"`` (the paper: the ``[CLS]`` vector) or ``"mean"`` (masked mean of the token vectors,
            how sentence-embedding backbones such as MiniLM were trained).
        max_seq_length: tokens per ``[CLS] context [SEP] response [SEP]`` pair; the oldest context goes first.
        score_scale: ``(low, high)`` of the human scale; ``human_score = low + (high - low) * score``.
    """

    model_type = "quantidce"

    def __init__(
        self,
        backbone_config: Mapping[str, Any] | str | PretrainedConfig | None = None,
        backbone_name_or_path: str | None = None,
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
        if len(score_scale) != 2 or score_scale[0] >= score_scale[1]:
            raise ValueError(f"score_scale must be (low, high) with low < high, not {score_scale!r}")
        if max_seq_length < 4:
            raise ValueError(f"max_length must leave room for a context and a response, not {max_seq_length}")
        if backbone_config is None and backbone_name_or_path is not None:
            backbone_config = backbone_name_or_path
        self.backbone_config = backbone_config_dict(backbone_config) if backbone_config is not None else None
        self.backbone_name_or_path = backbone_name_or_path
        self.mlp_hidden_sizes = [int(size) for size in mlp_hidden_sizes]
        self.pooling = pooling
        self.max_seq_length = int(max_seq_length)
        self.score_scale = [float(v) for v in score_scale]
        super().__init__(**kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
