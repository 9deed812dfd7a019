"""Text as a pretrained language model reads it.

DailyDialog and the benchmarks built on it (HolisticEval's, DailyDialog++, GRADE's) release tokenised text, a space on
both sides of every punctuation mark (``"Hey man , you wanna buy some weed ?"``); a language model pretrained on
ordinary text finds that unusual and spends likelihood on it. :func:`detokenize` writes such text back the ordinary
way; ordinary text passes through unchanged.
"""

from __future__ import annotations

import re

_SPACE_BEFORE = re.compile(r" +([.,!?;:%)\]}]|\.\.\.)(?=\s|$|[.,!?;:\"'])")
_SPACE_AFTER = re.compile(r"([(\[{$]) +")
_SPLIT_CONTRACTION = re.compile(r"(\w) ?(['’]) ?(s|t|re|ve|ll|d|m)\b", re.IGNORECASE)
_SPLIT_NOT = re.compile(r"(\w) (n['’]t)\b", re.IGNORECASE)


def detokenize(text: str) -> str:
    """``text`` with the spaces of a tokenised release removed: before ``. , ! ? ; : % ) ] }``, after ``( [ { $``,
    and inside contractions (``it ' s``, ``don 't``, ``do n't`` → ``it's``, ``don't``); whitespace runs become one
    space. Ordinary text is left as it is."""
    text = " ".join(text.split())
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    text = _SPLIT_NOT.sub(r"\1\2", text)
    return _SPLIT_CONTRACTION.sub(r"\1\2\3", text)
