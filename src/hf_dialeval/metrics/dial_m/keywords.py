"""Dial-M's keywords (Dey & Desarkar 2023, §2.2–2.3 and Appendix A): which words of a response are masked, and which
of the model's sub-word tokens each one covers.

A keyword is a single word that YAKE! (n = 1, the authors' settings) ranks among a response's top
:data:`MAX_KEYWORDS`, or, until that many are found, a word whose Penn POS tag is one of :data:`KEYWORD_POS_TAGS`
(spaCy's English tagger) and that is neither a stop word nor punctuation. Keywords are compared lower-cased. Every
occurrence of a keyword among the tokenizer's words is masked on its own (a term of Eq. 1's mean); when no word of
the response is a keyword (``"ok !"``), every word is (the paper: "we consider all words as keywords").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import PreTrainedTokenizerBase

from hf_dialeval.auxiliary.pos_tagging import pos_tagger

#: The POS tags of the words taken as keywords besides YAKE's (the paper's Appendix A.2: the tags most frequent
#: among Topical-Chat response words that also occur in the knowledge).
KEYWORD_POS_TAGS = ("NN", "NNP", "NNS", "JJ", "CD", "VB", "VBN", "VBD", "VBG", "RB", "VBP", "VBZ", "NNPS", "JJS")
#: Keywords per response at most (the authors' ``--keys`` default).
MAX_KEYWORDS = 20
#: A word: a run of letters and digits, or any other single character that is not a space (BERT's split).
_WORD = re.compile(r"[^\W_]+|\S")


@dataclass(frozen=True)
class KeywordSpan:
    """One masked word of a response: the word as written and the positions of the sub-word tokens it covers in
    the response's token ids (tokenised without special tokens), and where the word ends in the response's text
    (:func:`read_text` cuts the text there; not compared)."""

    word: str
    token_positions: tuple[int, ...]
    end: int = field(default=0, compare=False)


@functools.lru_cache(maxsize=4)
def _yake(max_keywords: int) -> Any:
    import yake

    # the authors' settings: single words, deduplication 0.9 with seqm, window 1
    return yake.KeywordExtractor(lan="en", n=1, dedupLim=0.9, dedupFunc="seqm", windowsSize=1, top=max_keywords)


def extract_keywords(text: str, max_keywords: int = MAX_KEYWORDS, pos_tags: Sequence[str] = KEYWORD_POS_TAGS
                     ) -> list[str]:
    """The keywords of ``text``, lower-cased, best first: YAKE!'s, then words tagged ``pos_tags`` (not stop words,
    not punctuation) until ``max_keywords``. Empty when ``text`` has none."""
    if not isinstance(text, str):
        raise TypeError(f"extract_keywords takes a str, not {type(text).__name__}")
    if max_keywords < 1:
        raise ValueError(f"max_keywords must be 1 or more, not {max_keywords!r}")
    return list(_keywords(text, max_keywords, tuple(pos_tags)))


# YAKE and the tagger cost more than a forward pass per response; a response is often keyed more than once (the
# context-gain variant scores it with and without its context, a checklist pairs one original with many replies)
@functools.lru_cache(maxsize=65536)
def _keywords(text: str, max_keywords: int, pos_tags: tuple[str, ...]) -> tuple[str, ...]:
    if not text.strip():
        return ()
    keywords = list(dict.fromkeys(word.lower() for word, _ in _yake(max_keywords).extract_keywords(text)))
    tags = set(pos_tags)
    for token in pos_tagger()(text):
        if len(keywords) >= max_keywords:
            break
        word = token.text.lower()
        if token.tag_ in tags and not (token.is_stop or token.is_punct or token.is_space) and word not in keywords:
            keywords.append(word)
    return tuple(keywords[:max_keywords])


def tokenizer_words(tokenizer: PreTrainedTokenizerBase, text: str) -> tuple[list[int], list[KeywordSpan]]:
    """``text``'s token ids (no special tokens) and its words, each with the positions of the tokens that cover any of
    its characters. A word is a run of letters and digits or any other single non-space character (BERT's split:
    ``"don't"`` is ``don``, ``'``, ``t``); it is found in the text, and its tokens from the tokenizer's character
    offsets, so every tokenizer gets the same words, whether its pre-tokenizer splits words (BERT's, RoBERTa's) or
    not (Gemma's). A token that spans two words (RoBERTa's ``'t``) belongs to both; a token of spaces alone (or of no
    characters), to the word after it. Needs a fast tokenizer (offsets)."""
    if not tokenizer.is_fast:
        raise ValueError(f"{type(tokenizer).__name__} is a slow tokenizer: Dial-M maps words to tokens with a fast "
                         "one (AutoTokenizer.from_pretrained(..., use_fast=True))")
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = [(start, end) for start, end in encoding["offset_mapping"]]
    words = []
    first = 0  # the first token that may reach into the current word (words and token offsets both ascend)
    for match in _WORD.finditer(text):
        while first < len(offsets) and offsets[first][1] <= match.start():
            first += 1
        positions = []
        for position in range(first, len(offsets)):
            start, end = offsets[position]
            if start >= match.end():
                break
            if end > start:  # a token of no characters covers no word
                positions.append(position)
        # a token of no letter just before the word is its leading space (byte-level BPE's "Ġ" before "4", whose
        # offsets are the space or, trimmed, empty)
        while positions and positions[0] > 0 and not text[slice(*offsets[positions[0] - 1])].strip():
            positions.insert(0, positions[0] - 1)
        if positions:
            words.append(KeywordSpan(match.group(), tuple(positions), match.end()))
    return list(encoding["input_ids"]), words


def read_text(text: str, words: Sequence[KeywordSpan], kept: int) -> str:
    """The part of ``text`` (its ``words``, :func:`tokenizer_words`) that the model reads when its first ``kept`` tokens
    fit: all of it, or up to the end of the last word it reads a token of. Keywords are chosen there: a word past the
    cut is never scored, and a reply of a megabyte is more than the tagger takes (spaCy refuses a text of a million
    characters)."""
    read = [word.end for word in words if word.token_positions[0] < kept]
    if len(read) == len(words):
        return text
    return text[: read[-1]] if read else ""


def keyword_spans(words: Sequence[KeywordSpan], keywords: Sequence[str]) -> list[KeywordSpan]:
    """The ``words`` (:func:`tokenizer_words`) that are keywords, each occurrence apart; all of them when none is
    (words that hold a letter or digit first: a reply of ``"ok !"`` masks ``ok``)."""
    wanted = {keyword.lower() for keyword in keywords}
    matched = [word for word in words if word.word.lower() in wanted]
    if matched:
        return matched
    return [word for word in words if any(c.isalnum() for c in word.word)] or list(words)
