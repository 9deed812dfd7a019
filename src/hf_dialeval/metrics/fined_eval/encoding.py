"""FineD-Eval's inputs: a dialogue's utterances joined by the ``</UTT>`` token within the encoder's token limit
(kept from its start or its end, or cut into windows of consecutive utterances that cover it all), and the special
tokens a tokenizer frames a text or a text pair with. Tokenisation lives here, apart from the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from hf_dialeval.inference.model_metric import WORD_MARGIN, first_words, last_words
from hf_dialeval.metrics.fined_eval.constants import UTTERANCE_TOKEN


def add_utterance_token(tokenizer: PreTrainedTokenizerBase, token: str = UTTERANCE_TOKEN) -> int:
    """Add the utterance separator as a special token (if missing) and return its id."""
    if token not in tokenizer.get_vocab():
        tokenizer.add_tokens([token], special_tokens=True)
    return tokenizer.convert_tokens_to_ids(token)


def special_token_frame(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a single sequence (``[CLS]``/``[SEP]`` for BERT,
    ``<s>``/``</s>`` for RoBERTa), found by encoding a probe text with and without special tokens."""
    with_special = tokenizer("probe", add_special_tokens=True)["input_ids"]
    plain = tokenizer("probe", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(plain) + 1):
        if with_special[start : start + len(plain)] == plain:
            return with_special[:start], with_special[start + len(plain) :]
    raise ValueError(f"cannot locate the text inside {type(tokenizer).__name__}'s special tokens")


def special_pair_frame(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], int]:
    """``(separator, segment_type)``: the ids a tokenizer puts between the two texts of a pair (``[SEP]`` for BERT,
    ``</s></s>`` for RoBERTa) and the token type id of the second text (1 for BERT, 0 for encoders without types)."""
    before, after = special_token_frame(tokenizer)
    plain = tokenizer("probe", add_special_tokens=False)["input_ids"]
    pair = tokenizer("probe", "probe", return_token_type_ids=True)
    ids = pair["input_ids"]
    separator = ids[len(before) + len(plain):len(ids) - len(after) - len(plain)]
    if ids != before + plain + separator + plain + after:
        raise ValueError(f"cannot locate a text pair inside {type(tokenizer).__name__}'s special tokens")
    return separator, int(pair["token_type_ids"][-1])


@dataclass
class EncodedDialogues:
    """Encoder inputs for a list of dialogues: ``input_ids`` (unpadded, one list per encoder input),
    ``owners`` (the dialogue each input belongs to; several in window mode) and ``truncated`` per dialogue."""

    input_ids: list[list[int]]
    owners: list[int]
    truncated: list[bool]


def encode_dialogues(
    tokenizer: PreTrainedTokenizerBase, dialogues: Sequence[Sequence[str]], utterance_token_id: int,
    max_length: int, long_dialogue: str = "window", window_overlap: int = 0,
) -> EncodedDialogues:
    """Encode dialogues as ``prefix u1 </UTT> u2 </UTT> ... uk suffix`` within ``max_length`` tokens.

    A dialogue that fits gives one input. A longer one is, by ``long_dialogue``: ``"window"``, split into
    windows of consecutive utterances that fit, sharing ``window_overlap`` utterances and together covering
    every utterance (only an utterance too long for a window by itself is cut, and then flagged);
    ``"keep_start"`` / ``"keep_end"``, cut to its first / last tokens and flagged as truncated.
    """
    prefix, suffix = special_token_frame(tokenizer)
    if long_dialogue not in ("window", "keep_start", "keep_end"):
        raise ValueError(f"long_dialogue={long_dialogue!r}: choose 'window', 'keep_start' or 'keep_end'")
    budget = max_length - len(prefix) - len(suffix)
    if budget < 1:
        raise ValueError(f"max_length={max_length} leaves no room for text next to the special tokens")
    # each dialogue cut first to the words its input can keep (every word gives a token or more): a 1 MB utterance
    # is not tokenized whole once per training pair it is in
    dialogues = [kept_words(dialogue, budget + WORD_MARGIN, long_dialogue) for dialogue in dialogues]
    flat = [u for dialogue in dialogues for u in dialogue]
    tokenized = tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else []
    encoded = EncodedDialogues([], [], [])
    position = 0
    for index, dialogue in enumerate(dialogues):
        utterances = tokenized[position : position + len(dialogue)]
        position += len(dialogue)
        joined = _join(utterances, 0, len(utterances) - 1, utterance_token_id)
        if len(joined) <= budget:
            encoded.input_ids.append(prefix + joined + suffix)
            encoded.owners.append(index)
            encoded.truncated.append(False)
        elif long_dialogue == "keep_start":
            encoded.input_ids.append(prefix + joined[:budget] + suffix)
            encoded.owners.append(index)
            encoded.truncated.append(True)
        elif long_dialogue == "keep_end":
            encoded.input_ids.append(prefix + joined[-budget:] + suffix)
            encoded.owners.append(index)
            encoded.truncated.append(True)
        else:  # window
            cut = False
            for start, end in utterance_windows([len(u) for u in utterances], budget, window_overlap):
                window = _join(utterances, start, end, utterance_token_id)
                cut = cut or len(window) > budget
                encoded.input_ids.append(prefix + window[:budget] + suffix)
                encoded.owners.append(index)
            encoded.truncated.append(cut)
    return encoded


def kept_words(dialogue: Sequence[str], words: int, long_dialogue: str) -> list[str]:
    """What of ``dialogue`` an input of fewer than ``words`` tokens can keep (see :func:`encode_dialogues`), cut to
    whitespace-separated words before tokenizing: by ``long_dialogue``, the utterances holding its last words
    (``"keep_end"``), every utterance cut to its first words (``"window"``: an utterance longer than that is too
    long for a window by itself, and is cut there anyway), or the utterances holding its first words
    (``"keep_start"``). A dialogue with more words than that is still too long, and is still flagged."""
    if long_dialogue == "keep_end":
        return last_words(dialogue, words)
    if long_dialogue == "window":
        return [first_words(utterance, words) for utterance in dialogue]
    kept: list[str] = []
    for utterance in dialogue:
        if words <= 0:
            break
        kept.append(first_words(utterance, words))
        words -= len(kept[-1].split())
    return kept


def _join(utterances: Sequence[list[int]], start: int, end: int, separator: int) -> list[int]:
    ids: list[int] = []
    for i in range(start, end + 1):
        if i > start:
            ids.append(separator)
        ids.extend(utterances[i])
    return ids


def utterance_windows(lengths: Sequence[int], budget: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Inclusive ``(start, end)`` utterance ranges, greedy and in order, each fitting ``budget`` tokens (one
    separator between utterances), consecutive ones sharing up to ``overlap`` utterances, together covering
    every utterance. A single utterance longer than ``budget`` forms a window by itself."""
    windows = []
    start = 0
    while start < len(lengths):
        end, size = start, lengths[start]
        while end + 1 < len(lengths) and size + 1 + lengths[end + 1] <= budget:
            end += 1
            size += 1 + lengths[end]
        windows.append((start, end))
        if end == len(lengths) - 1:
            break
        start = max(end + 1 - overlap, start + 1)
    return windows

