"""Configuration of FineD-Eval (Zhang et al., 2022): an encoder, mean pooling, one sigmoid head per dimension."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers import PretrainedConfig

from ..registration import register_available
from .constants import FINED_EVAL_DIMENSIONS, LONG_DIALOGUE_MODES, UTTERANCE_TOKEN

class FineDEvalConfig(PretrainedConfig):
    r"""Configuration of a :class:`FineDEvalModel`.

    Args:
        backbone_config: the encoder's config as a dict with ``model_type`` (any ``AutoModel`` encoder); it is
            stored here so that ``from_pretrained`` rebuilds the encoder without the network.
        backbone_name_or_path: where the encoder's pretrained weights come from (Hub id or path); needed
            only to rebuild a model from a LoRA adapter folder, which holds no encoder weights.
        dimensions: one sigmoid head per dimension, among ``coherence``, ``likability`` and ``topic_depth``. A
            sub-metric model has one head; the multitask model (FineD-Eval_mu) has several.
        utterance_token: the special token that separates utterances (added to the tokenizer).
        utterance_token_id: its id in the tokenizer's vocabulary.
        max_tokens: tokens per encoder input, special tokens included (``max_length`` is a generation
            parameter name in transformers, hence the different name).
        long_dialogue: what to do with a dialogue longer than ``max_tokens`` tokens: ``"window"`` scores windows
            of consecutive utterances that fit and together cover every utterance, and averages their scores;
            ``"keep_start"`` / ``"keep_end"`` truncate (the output flags the dialogue as truncated).
        window_overlap: utterances that consecutive windows share (``"window"`` mode), for context across a cut.
    """

    model_type = "fined-eval"

    def __init__(
        self,
        backbone_config: Mapping[str, Any] | None = None,
        backbone_name_or_path: str | None = None,
        dimensions: Sequence[str] = FINED_EVAL_DIMENSIONS,
        utterance_token: str = UTTERANCE_TOKEN,
        utterance_token_id: int | None = None,
        max_tokens: int = 512,
        long_dialogue: str = "window",
        window_overlap: int = 2,
        **kwargs: Any,
    ) -> None:
        dimensions = tuple(dimensions)
        unknown = [d for d in dimensions if d not in FINED_EVAL_DIMENSIONS]
        if not dimensions or unknown or len(set(dimensions)) != len(dimensions):
            raise ValueError(
                f"dimensions={list(dimensions)}: give one or more distinct dimensions among {list(FINED_EVAL_DIMENSIONS)}"
            )
        if long_dialogue not in LONG_DIALOGUE_MODES:
            raise ValueError(f"long_dialogue={long_dialogue!r}: choose one of {list(LONG_DIALOGUE_MODES)}")
        if window_overlap < 0:
            raise ValueError(f"window_overlap={window_overlap}: must be 0 or more utterances")
        self.backbone_config = dict(backbone_config) if backbone_config is not None else None
        self.backbone_name_or_path = backbone_name_or_path
        self.dimensions = list(dimensions)
        self.utterance_token = utterance_token
        self.utterance_token_id = utterance_token_id
        self.max_tokens = max_tokens
        self.long_dialogue = long_dialogue
        self.window_overlap = window_overlap
        super().__init__(**kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
