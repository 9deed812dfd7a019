"""Configuration of FineD-Eval (Zhang et al., 2022): an encoder, mean pooling, one sigmoid head per dimension."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_dialeval.metrics.fined_eval.constants import FINED_EVAL_DIMENSIONS, LONG_DIALOGUE_MODES, UTTERANCE_TOKEN
from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available


class FineDEvalConfig(DialEvalConfig):
    r"""Configuration of a :class:`FineDEvalModel` (the backbone, weights source and token limit as in
    :class:`~hf_dialeval.modeling.configuration.DialEvalConfig`).

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
        adjacency_bins: 0 (the paper's model) or the number of bins of the adjacency histogram (this package's
            addition): every utterance of an input is also encoded alone, and the cosines of consecutive
            utterances' mean-pooled embeddings, soft-binned over [−1, 1], add a learned logit to every head. It
            tells apart replies that follow their context from replies of another dialogue or order, which the
            pooled dialogue alone learns slowly.
        adjacency_mlp_size: 0 (the paper's model) or the hidden size of the adjacency MLP (this package's
            addition): over the same utterance embeddings, each consecutive pair ``(a, b)`` is read as
            ``[a, b, a·b, |a−b|, cos(a, b)]`` by a two-layer MLP with one output per head, and the mean over an
            input's pairs is added to the head's logit. Unlike the cosine it sees the pair's order and content, so it
            can tell a reply from a later turn of the same dialogue.
        adjacency_encoder: whether the adjacency features read the utterances through a second encoder of the
            backbone's architecture, ``adjacency_encoder`` (this package's addition; a sentence encoder fine-tuned
            to tell an utterance's neighbours from the rest of its dialogue), instead of the dialogue encoder.
        pair_encoder: whether a cross-encoder of the backbone's architecture, ``pair_encoder`` (this package's
            addition; trained to pick an utterance's true successor), reads each consecutive utterance pair together,
            framed as the tokenizer frames a text pair, and ``pair_heads`` over its mean-pooled output add the mean of
            their per-pair logits to the heads' logits. Unlike the adjacency features, which compare two utterances
            encoded apart, it attends across the pair.
        pair_separator: the token ids between a pair's two texts (``[SEP]`` for BERT, ``</s></s>`` for RoBERTa).
        pair_segment_type: the token type id of a pair's second text (1 for BERT, 0 for encoders without types).
        pair_max_length: tokens per pair, special tokens included; a longer pair is cut, the longer text first.
        frame_lengths: how many special tokens the tokenizer puts before and after a text (1 and 1 for BERT,
            RoBERTa, MPNet): an utterance encoded alone keeps its input's.
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
        adjacency_bins: int = 0,
        adjacency_mlp_size: int = 0,
        adjacency_encoder: bool = False,
        pair_encoder: bool = False,
        pair_separator: Sequence[int] = (),
        pair_segment_type: int = 0,
        pair_max_length: int = 128,
        frame_lengths: Sequence[int] = (1, 1),
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
        if adjacency_bins == 1 or adjacency_bins < 0:
            raise ValueError(f"adjacency_bins={adjacency_bins}: give 0 (off) or 2 or more bins")
        if adjacency_mlp_size < 0:
            raise ValueError(f"adjacency_mlp_size={adjacency_mlp_size}: give 0 (off) or a hidden size")
        if adjacency_encoder and not (adjacency_bins or adjacency_mlp_size):
            raise ValueError("adjacency_encoder=True needs adjacency features to read: give adjacency_bins or "
                             "adjacency_mlp_size")
        if pair_encoder and pair_max_length < sum(frame_lengths) + len(pair_separator) + 2:
            raise ValueError(f"pair_max_length={pair_max_length}: leave room for a token of each text beside the "
                             "special tokens")
        if len(frame_lengths) != 2 or min(frame_lengths) < 0:
            raise ValueError(f"frame_lengths={list(frame_lengths)}: give the special tokens before and after a text")
        self.dimensions = list(dimensions)
        self.utterance_token = utterance_token
        self.utterance_token_id = utterance_token_id
        self.long_dialogue = long_dialogue
        self.window_overlap = window_overlap
        self.adjacency_bins = adjacency_bins
        self.adjacency_mlp_size = adjacency_mlp_size
        self.adjacency_encoder = adjacency_encoder
        self.pair_encoder = pair_encoder
        self.pair_separator = list(pair_separator)
        self.pair_segment_type = pair_segment_type
        self.pair_max_length = pair_max_length
        self.frame_lengths = list(frame_lengths)
        super().__init__(max_seq_length=kwargs.pop("max_tokens", max_seq_length), **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
