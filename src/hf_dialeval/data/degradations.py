"""Degenerate replies, the outputs of a broken generator: one word said over and over, the reply said again and again,
a reply that runs on into unrelated text, character gibberish. The perturbation checklist builds its held-out pairs
from them (its degenerate perturbations, :mod:`hf_dialeval.data.perturbations`), and training sets can add them as
the worst replies there are (RADE's ``--degenerate-negatives``), so that a learned metric does not reward text that
only looks like a long or on-topic reply.

Each function takes the reply it degrades and a seeded ``random.Random``; ``None`` means the reply cannot be degraded
that way (it has no word).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence

#: What ends a gibberish word: mostly nothing, now and then punctuation.
GIBBERISH_ENDINGS = ("", "", "", "", "", ",", ".", "?")


def words_of(text: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)?", text)


def repeat_word(reply: str, rng: random.Random, times: int) -> str | None:
    """One word of the reply itself said ``times`` times: on the reply's topic word by word (what a bag of words or
    an embedding of the start sees), degenerate in form."""
    words = words_of(reply)
    return " ".join([rng.choice(words)] * times) if words else None


def repeat_reply(reply: str, times: int) -> str | None:
    """The reply said ``times`` times over (a decoder stuck in a loop)."""
    reply = reply.strip()
    return " ".join([reply] * times) if reply else None


def run_on(reply: str, rng: random.Random, others: Sequence[str], words: int) -> str | None:
    """The reply, then texts drawn from ``others`` until it holds ``words`` words: fluent locally, far too long and
    off topic. The reply comes first, so that a model that reads only the start of a long text sees it as it is."""
    pool = [text for text in others if text.strip() and text != reply]
    if not pool:
        return None
    parts, count = [reply], len(reply.split())
    while count < words:
        parts.append(rng.choice(pool))
        count += len(parts[-1].split())
    return " ".join(parts)


def gibberish(reply: str, rng: random.Random) -> str | None:
    """Word-like chunks of random letters as long as the reply in characters (so length alone does not tell it), none
    a word of the reply, which a tokenizer splits into many rare pieces."""
    known = {word.lower() for word in words_of(reply)}
    chunks: list[str] = []
    length = 0  # of the chunks joined, plus one
    while length < len(reply.strip()):
        chunk = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 9)))
        if chunk not in known:
            chunks.append(chunk + rng.choice(GIBBERISH_ENDINGS))
            length += len(chunks[-1]) + 1
    return " ".join(chunks) or None


#: For training sets: each degradation with its size drawn at random (the checklist uses fixed sizes of its own).
Degradation = Callable[[str, random.Random, Sequence[str]], "str | None"]
TRAINING_DEGRADATIONS: dict[str, Degradation] = {
    "word-repeat": lambda reply, rng, others: repeat_word(reply, rng, rng.randint(20, 400)),
    "phrase-repeat": lambda reply, rng, others: repeat_reply(reply, rng.randint(3, 8)),
    "run-on": lambda reply, rng, others: run_on(reply, rng, others, rng.randint(150, 600)),
    "gibberish": lambda reply, rng, others: gibberish(reply, rng),
}


def degrade(reply: str, rng: random.Random, others: Sequence[str]) -> str | None:
    """``reply`` degraded by one of :data:`TRAINING_DEGRADATIONS`, drawn with ``rng`` (``None``: it cannot be)."""
    return TRAINING_DEGRADATIONS[rng.choice(sorted(TRAINING_DEGRADATIONS))](reply, rng, others)
