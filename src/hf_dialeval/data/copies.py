"""What a reply copies: the tokens of a response that say again a span of what came before it, its context or its
own earlier tokens (a parrot, a repeated turn, a decoder stuck in a loop).

A language model predicts a copy of what it was just shown almost for certain, so a likelihood rewards copying; a
metric that reads a likelihood as quality gives the copied tokens no credit instead (:func:`copied_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence

#: The shortest run of tokens that counts as a copy (a shorter response counts only when all of it is one): of 4, 6
#: and 8, the longest among those that told human replies from echoed, repeated and looping ones equally well on
#: DailyDialog validation; it leaves 5 of 2,000 human replies with a token uncredited
#: (``benchmarks/holistic_eval/studies/copies_and_overall.py``).
COPY_SPAN = 8


def check_copy_span(copy_span: object) -> int:
    """A config's ``copy_span``: a whole number of tokens, 0 (no copy is looked for) or more."""
    if isinstance(copy_span, bool) or not isinstance(copy_span, int) or copy_span < 0:
        raise ValueError(f"copy_span must be a whole number of tokens, 0 (none) or more, not {copy_span!r}")
    return copy_span


def copied_tokens(history: Sequence[int], response: Sequence[int], min_span: int = COPY_SPAN) -> list[bool]:
    """Per token of ``response``, whether it lies in a copy: a run of at least ``min(min_span, len(response))``
    tokens that occurs earlier, in ``history`` or in the response before the run (a run may overlap its source, as a
    loop does). Runs are found greedily from the start, each as long as it goes (the LZ77 parse)."""
    if min_span < 1:
        raise ValueError(f"min_span must be 1 or more, not {min_span}")
    sequence = [*history, *response]
    start, required = len(history), min(min_span, len(response))
    positions: dict[int, list[int]] = {}  # where each token occurred before the current one
    for index in range(start):
        positions.setdefault(sequence[index], []).append(index)
    copied = [False] * len(response)
    index = start
    while index < len(sequence):
        longest = 0
        for source in positions.get(sequence[index], ()):
            length = 0
            while index + length < len(sequence) and sequence[source + length] == sequence[index + length]:
                length += 1
            longest = max(longest, length)
        step = longest if longest >= required else 1
        if longest >= required:
            copied[index - start: index - start + step] = [True] * step
        for offset in range(step):
            positions.setdefault(sequence[index + offset], []).append(index + offset)
        index += step
    return copied
