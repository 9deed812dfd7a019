"""Configuration of FineD-Eval (Zhang et al., 2022): an encoder, mean pooling, one sigmoid head per dimension."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..configuration_utils import DialEvalConfig
from ..registration import register_available
from .constants import FINED_EVAL_DIMENSIONS, LONG_DIALOGUE_MODES, UTTERANCE_TOKEN


class FineDEvalConfig(DialEvalConfig):
    r"""Configuration of a :class:`FineDEvalModel` (the backbone, weights source and token limit as in
    :class:`~hf_dialeval.configuration_utils.DialEvalConfig`).

    Args:
        dimensions: one sigmoid head per dimension, among ``coherence``, ``likability`` and ``topic_depth``. A
            sub-metric model has one head; the multitask model (FineD-Eval_mu) has several.
        utterance_token: the special token that separates utterances (added to the tokenizer).
        utterance_token_id: its id in the tokenizer's vocabulary.
        max_seq_length: tokens per encoder input, special tokens included (``max_tokens`` in checkpoints saved
            before the base config existed: still read).
        long_dialogue: what to do with a dialogue longer than ``max_seq_length`` tokens: ``"window"`` scores
            windows of consecutive utterances that fit and together cover every utterance, and averages their
            scores; ``"keep_start"`` / ``"keep_end"`` truncate (the output flags the dialogue as truncated).
        window_overlap: utterances that consecutive windows share (``"window"`` mode), for context across a cut.
    """

    model_type = "fined-eval"

    def __init__(
        self,
        dimensions: Sequence[str] = FINED_EVAL_DIMENSIONS,
        utterance_token: str = UTTERANCE_TOKEN,
        utterance_token_id: int | None = None,
        max_seq_length: int = 512,
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
        self.dimensions = list(dimensions)
        self.utterance_token = utterance_token
        self.utterance_token_id = utterance_token_id
        self.long_dialogue = long_dialogue
        self.window_overlap = window_overlap
        super().__init__(max_seq_length=kwargs.pop("max_tokens", max_seq_length), **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
