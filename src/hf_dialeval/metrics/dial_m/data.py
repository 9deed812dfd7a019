"""Dial-M's scoring inputs: the input layout and the keyword-masked scoring copies (Eq. 1), and their causal-LM
analogue. The training dialogues and the inputs of its two stages are in :mod:`.training_data`.

Layout (Fig. 1), for every masked LM: the tokenizer's own pair format around ``u_1 <eou> … u_{t−1} <eou> u_t <eou>``
as the first segment and the condition (persona, knowledge) as the second when there is one: RoBERTa's
``<s> … </s></s> condition </s>``, BERT's ``[CLS] … [SEP] condition [SEP]`` (with its segment ids).

On a causal LM (this package's adaptation) a keyword can only be predicted from what precedes it, so the condition
comes first, as a line of its own, and the dialogue follows as a speaker-tagged transcript
(:mod:`hf_dialeval.data.transcripts`): ``Background: condition\\nA: u_1\\nB: u_2\\n…\\nX: u_t``. The whole response is
one input; its keywords' tokens are labelled, each keyword predicted from the response before it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.copies import copied_tokens
from hf_dialeval.data.transcripts import Layout, newest_tokens, text_ids, utterance_ids
from hf_dialeval.metrics.dial_m.keywords import (
    KeywordSpan,
    extract_keywords,
    keyword_spans,
    read_text,
    tokenizer_words,
)


@dataclass(frozen=True)
class PairLayout:
    """The special tokens a tokenizer puts around one segment (``prefix``, ``suffix``) and between two
    (``middle``), and whether it gives the second segment its own token type (BERT)."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    typed: bool

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase) -> PairLayout:
        first = tokenizer("first", add_special_tokens=False)["input_ids"]
        second = tokenizer("second", add_special_tokens=False)["input_ids"]
        pair = tokenizer("first", "second")
        ids = list(pair["input_ids"])
        for start in range(len(ids)):
            if ids[start : start + len(first)] == first:
                break
        else:
            raise ValueError(f"cannot locate a segment inside {type(tokenizer).__name__}'s special tokens")
        end = start + len(first)
        for second_start in range(end, len(ids)):
            if ids[second_start : second_start + len(second)] == second:
                break
        else:
            raise ValueError(f"cannot locate a second segment inside {type(tokenizer).__name__}'s special tokens")
        typed = "token_type_ids" in pair and any(pair["token_type_ids"])
        return cls(tuple(ids[:start]), tuple(ids[end:second_start]), tuple(ids[second_start + len(second) :]), typed)

    def join(self, first: Sequence[int], second: Sequence[int] | None) -> tuple[list[int], list[int]]:
        """The ids of one input and their token types (0 for the first segment, 1 for the second where typed)."""
        ids = [*self.prefix, *first, *self.suffix] if not second else \
            [*self.prefix, *first, *self.middle, *second, *self.suffix]
        head = len(self.prefix) + len(first) + (len(self.suffix) if not second else 0)
        types = [0] * head + [1 if self.typed else 0] * (len(ids) - head)
        if second and self.typed:  # BERT's [SEP] after segment A is of type 0
            types[head : head + len(self.middle)] = [0] * len(self.middle)
        return ids, types

    def overhead(self, with_second: bool) -> int:
        return len(self.prefix) + len(self.suffix) + (len(self.middle) if with_second else 0)


def add_eou_token(tokenizer: PreTrainedTokenizerBase, eou_token: str | None) -> tuple[int, bool]:
    """The id of the end-of-utterance token, adding ``eou_token`` as a special token when the tokenizer lacks it
    (``None``: the tokenizer's separator), and whether it was added."""
    if eou_token is None:
        separator = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if separator is None:
            raise ValueError(f"{type(tokenizer).__name__} has neither a SEP nor an EOS token: give an eou_token")
        return separator, False
    if eou_token in tokenizer.get_vocab():
        return tokenizer.convert_tokens_to_ids(eou_token), False
    tokenizer.add_special_tokens({"additional_special_tokens": [eou_token]}, replace_extra_special_tokens=False)
    return tokenizer.convert_tokens_to_ids(eou_token), True


def _newest(ids: list[int], budget: int) -> list[int]:
    return ids[max(len(ids) - budget, 0) :] if budget > 0 else []


@dataclass
class TurnInput:
    """One turn laid out: ``input_ids`` and ``token_type_ids``, where the response's tokens start, how many of them
    were kept, whether anything was cut, and where the dialogue's tokens start (what a response can copy: the
    condition is not part of it)."""

    input_ids: list[int]
    token_type_ids: list[int]
    response_start: int
    response_length: int
    truncated: bool
    history_start: int

    def copied(self, span: int) -> list[bool]:
        """Per kept response token, whether it copies the dialogue before it or the response's own earlier tokens
        (:func:`~hf_dialeval.data.copies.copied_tokens`; none when ``span`` is 0)."""
        response = self.input_ids[self.response_start : self.response_start + self.response_length]
        if not span:
            return [False] * len(response)
        return copied_tokens(self.input_ids[self.history_start : self.response_start], response, span)


def layout_turn(layout: PairLayout, eou: int, context: Sequence[list[int]], response: list[int],
                condition: list[int] | None, max_length: int) -> TurnInput:
    """``u_1 <eou> … u_{t−1} <eou> u_t <eou>`` (+ the condition) within ``max_length`` tokens. Cut first: the oldest
    context utterances, then the condition's end, then the previous utterance's start; the response's end only
    when it alone does not fit."""
    budget = max_length - layout.overhead(bool(condition)) - 1  # the response's <eou>
    kept_response = response[:budget]
    room = budget - len(kept_response)
    previous = [*context[-1], eou] if context else []
    kept_previous = _newest(previous, room)
    room -= len(kept_previous)
    kept_condition = list(condition[:room]) if condition else []
    room -= len(kept_condition)
    older = [token for utterance in context[:-1] for token in (*utterance, eou)]
    kept_older = _newest(older, room)
    first = [*kept_older, *kept_previous, *kept_response, eou]
    ids, types = layout.join(first, kept_condition or None)
    truncated = (len(kept_response) < len(response) or len(kept_previous) < len(previous)
                 or len(kept_older) < len(older) or bool(condition) and len(kept_condition) < len(condition))
    start = len(layout.prefix) + len(kept_older) + len(kept_previous)
    return TurnInput(ids, types, start, len(kept_response), truncated, len(layout.prefix))


def masked(input_ids: Sequence[int], positions: Sequence[int], mask_token_id: int) -> tuple[list[int], list[int]]:
    """``input_ids`` with the tokens at ``positions`` replaced by the mask token, and the labels: those tokens'
    ids there, ``-100`` (ignored) elsewhere."""
    ids, labels = list(input_ids), [-100] * len(input_ids)
    for position in positions:
        labels[position], ids[position] = ids[position], mask_token_id
    return ids, labels


def token_ids(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str]) -> list[list[int]]:
    return tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []


@dataclass
class MaskedCopies:
    """Eq. 1's inputs for a list of items: one copy per masked keyword occurrence (``input_ids``,
    ``token_type_ids``, ``labels`` on its tokens only), the item each copy belongs to, its word and whether the
    occurrence copies what came before it, and per item whether anything was cut."""

    rows: dict[str, list[list[int]]]
    owners: list[int]
    words: list[str]
    copied: list[bool]
    truncated: list[bool]


def masked_keyword_copies(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]],
                          responses: Sequence[str], conditions: Sequence[str | None], eou: int, max_length: int,
                          max_keywords: int, pos_tags: Sequence[str], copy_span: int = 0) -> MaskedCopies:
    """For each item and each keyword occurrence of its response (:mod:`.keywords`; every word when there is none),
    the item laid out by :func:`layout_turn` with that word's tokens replaced by the mask token and labelled; an
    occurrence is copied when a token of it lies in a run of ``copy_span`` tokens said before (:meth:`TurnInput.copied`;
    0: none is)."""
    layout = PairLayout.of(tokenizer)
    copies = MaskedCopies({"input_ids": [], "token_type_ids": [], "labels": []}, [], [], [], [])
    context_ids = iter(token_ids(tokenizer, [u for context in contexts for u in context]))
    condition_ids = token_ids(tokenizer, [c or "" for c in conditions])
    for item, (context, response, condition) in enumerate(zip(contexts, responses, conditions)):
        response_ids, words = tokenizer_words(tokenizer, response)
        turn = layout_turn(layout, eou, [next(context_ids) for _ in context], response_ids,
                           condition_ids[item] if condition else None, max_length)
        copies.truncated.append(turn.truncated)
        copied = turn.copied(copy_span)
        read = read_text(response, words, turn.response_length)
        spans = keyword_spans(words, extract_keywords(read, max_keywords, pos_tags))
        for span in spans:
            kept = [p for p in span.token_positions if p < turn.response_length]
            if not kept:  # the word was cut with the response's end
                continue
            positions = [turn.response_start + p for p in kept]
            ids, labels = masked(turn.input_ids, positions, tokenizer.mask_token_id)
            copies.rows["input_ids"].append(ids)
            copies.rows["token_type_ids"].append(turn.token_type_ids)
            copies.rows["labels"].append(labels)
            copies.owners.append(item)
            copies.words.append(span.word)
            copies.copied.append(any(copied[p] for p in kept))
    return copies


# ---- a causal LM (this package's adaptation) ----

#: What opens a causal LM's first line when the item has a condition (the persona or knowledge of the response).
CONDITION_TAG = "Background:"


@dataclass
class KeywordRows:
    """Eq. 1's inputs on a causal LM, one row per item whose response has a word: ``input_ids``,
    ``attention_mask``, ``labels`` (the keywords' tokens; ``-100`` elsewhere) and ``keyword_ids`` (each keyword
    occurrence's tokens numbered from 1 in the response's order, 0 elsewhere); the item of each row, its keyword
    occurrences' words in that order and whether each copies what came before it, per item whether anything
    was cut, and per row where its response's tokens start (what precedes them is the same for every reply to
    one context)."""

    rows: dict[str, list[list[int]]]
    owners: list[int]
    words: list[list[str]]
    copied: list[list[bool]]
    truncated: list[bool]
    response_starts: list[int]


def layout_causal_turn(layout: Layout, condition_line: list[int], context: Sequence[list[int]],
                       response: list[int], max_length: int) -> TurnInput:
    """``[condition line] A: u_1 … X: u_t`` (the layout's start, speaker tags and line breaks) within ``max_length``
    tokens, cut as :func:`layout_turn` cuts: the oldest context utterances first, then the condition's end, then the
    previous utterance's start; the response's end only when it alone does not fit."""
    lines = [[*layout.opener(position), *ids] for position, ids in enumerate(context)]
    opener = layout.opener(len(context))
    kept_response = response[: max_length - len(layout.start) - len(opener)]
    room = max_length - len(layout.start) - len(opener) - len(kept_response)
    previous = lines[-1] if lines else []
    kept_previous = newest_tokens(previous, room)
    room -= len(kept_previous)
    kept_condition = condition_line[: max(room, 0)]
    room -= len(kept_condition)
    older = [token for line in lines[:-1] for token in line]
    kept_older = newest_tokens(older, room)
    head = [*layout.start, *kept_condition, *kept_older, *kept_previous, *opener]
    truncated = (len(kept_response) < len(response) or len(kept_previous) < len(previous)
                 or len(kept_older) < len(older) or len(kept_condition) < len(condition_line))
    return TurnInput([*head, *kept_response], [0] * (len(head) + len(kept_response)), len(head), len(kept_response),
                     truncated, len(layout.start) + len(kept_condition))


#: Which words of a response (the text as the LM reads it, its words) are labelled.
WordChoice = Callable[[str, list[KeywordSpan]], list[KeywordSpan]]


def scored_keywords(max_keywords: int, pos_tags: Sequence[str]) -> WordChoice:
    """Scoring's choice: the response's keyword occurrences, or every word when it has no keyword (Eq. 1)."""
    return lambda text, words: keyword_spans(words, extract_keywords(text, max_keywords, pos_tags))


def causal_keyword_rows(tokenizer: PreTrainedTokenizerBase, layout: Layout, contexts: Sequence[Sequence[str]],
                        responses: Sequence[str], conditions: Sequence[str | None], max_length: int,
                        choose: WordChoice, copy_span: int = 0) -> KeywordRows:
    """For each item, the item laid out by :func:`layout_causal_turn` in ``layout`` (speaker tags; a condition as a
    first line after :data:`CONDITION_TAG`) with the response's words that ``choose`` picks (:func:`scored_keywords`
    in scoring; found in the text as the LM reads it) labelled and numbered; an item whose response has none gets
    no row. A token of two chosen occurrences counts for the first. An occurrence is copied when a token of it lies
    in a run of ``copy_span`` tokens said before (:meth:`TurnInput.copied`; 0: none is)."""
    found = KeywordRows({"input_ids": [], "attention_mask": [], "labels": [], "keyword_ids": []}, [], [], [], [], [])
    context_ids = iter(utterance_ids(tokenizer, layout, [u for context in contexts for u in context]))
    given = [bool(condition and condition.strip()) for condition in conditions]  # a blank condition is none
    condition_ids = iter(utterance_ids(tokenizer, layout, [c for c, g in zip(conditions, given) if g]))
    tag, line_break = text_ids(tokenizer, CONDITION_TAG), text_ids(tokenizer, "\n")
    for item, (context, response) in enumerate(zip(contexts, responses)):
        condition_line = [*tag, *next(condition_ids), *line_break] if given[item] else []
        text = layout.texts([response])[0]
        response_ids, words = tokenizer_words(tokenizer, text)
        turn = layout_causal_turn(layout, condition_line, [next(context_ids) for _ in context], response_ids,
                                  max_length)
        found.truncated.append(turn.truncated)
        copied = turn.copied(copy_span)
        labels, keyword_ids, keyword_words, keyword_copied = \
            [-100] * len(turn.input_ids), [0] * len(turn.input_ids), [], []
        for span in choose(read_text(text, words, turn.response_length).strip(), words):
            kept = [p for p in span.token_positions
                    if p < turn.response_length and not keyword_ids[turn.response_start + p]]
            if not kept:  # cut with the response's end, or already another occurrence's
                continue
            positions = [turn.response_start + p for p in kept]
            keyword_words.append(span.word)
            keyword_copied.append(any(copied[p] for p in kept))
            for position in positions:
                labels[position], keyword_ids[position] = turn.input_ids[position], len(keyword_words)
        if not keyword_words:
            continue
        found.rows["input_ids"].append(turn.input_ids)
        found.rows["attention_mask"].append([1] * len(turn.input_ids))
        found.rows["labels"].append(labels)
        found.rows["keyword_ids"].append(keyword_ids)
        found.owners.append(item)
        found.words.append(keyword_words)
        found.copied.append(keyword_copied)
        found.response_starts.append(turn.response_start)
    return found


# ---- training data ----
