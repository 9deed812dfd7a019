"""Which of a user's ratings and dialogues are held out to check an adapted metric on, so that nothing held out is
trained on, even in another guise.

Ratings go by their context and dialogues whole, with every row of each. Contexts and dialogues that differ only in
Unicode form, case, typographic quotes, spacing or the spacing around punctuation are one (:func:`context_key`). A
rated context and every dialogue that holds it as consecutive utterances are linked, and what is linked goes to one
side: a held-out rating's context is not trained on inside a dialogue, nor a held-out dialogue through a rating of
one of its contexts. Which go is fixed by a seed. :func:`split_user_data` also refuses a split too small to tell
whether adapting helped.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hf_dialeval.errors import OptionError

if TYPE_CHECKING:
    import datasets

#: The fewest distinct contexts among the held-out ratings. The ratings of one context are not independent, so the
#: contexts are the sample: at 10 a Spearman correlation must reach 0.636 to differ from chance at p < 0.05 (two-sided,
#: its exact permutation distribution), at 9 0.700, and more below, so a before and an after could not be told apart.
MIN_HELD_OUT_CONTEXTS = 10
#: The fewest held-out dialogues: the checklist's pairs are cut from them, and from fewer its win rates say more about
#: those few conversations than about the metric.
MIN_HELD_OUT_DIALOGUES = 10

#: Quotation marks that differ from ' and " only in typography (what a word processor makes of them).
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
#: The spaces around a punctuation mark or symbol: "hi , how" and tokenised "i ' m" are "hi,how" and "i'm".
_SPACED_PUNCTUATION = re.compile(r"\s*([^\w\s])\s*")


def context_key(utterances: Sequence[str]) -> tuple[str, ...]:
    """What ``utterances`` (a context, a dialogue) are compared by: each NFKC-normalised, case-folded, with straight
    quotes, whitespace collapsed and stripped, and no space around punctuation, so that "Hi ! How was your weekend? "
    and "hi! how was your weekend?" are one."""
    return tuple(_SPACED_PUNCTUATION.sub(r"\1", " ".join(
        unicodedata.normalize("NFKC", text).casefold().translate(_QUOTES).split())) for text in utterances)


@dataclass(frozen=True)
class UserDataSplit:
    """A user's ratings and dialogues, each split into the rows trained on and those held out (``None`` for a kind not
    given)."""

    ratings_trained: datasets.Dataset | None
    ratings_held_out: datasets.Dataset | None
    dialogues_trained: datasets.Dataset | None
    dialogues_held_out: datasets.Dataset | None


def held_out_parts(ratings: datasets.Dataset | None, dialogues: datasets.Dataset | None, share: float, seed: int
                   ) -> UserDataSplit:
    """``ratings`` (by context) and ``dialogues`` split into the rows trained on and about ``share`` of each kind's
    distinct contexts or dialogues held out, at least one and never all where unlinked (none of a kind that has only
    one), and what is linked together (see the module). The draw, fixed by ``seed``: the groups of linked ones in the
    order of their members' smallest seeded hash (of the texts as given), each taken while it holds a kind still short of its share (without
    links, the first of each kind's sorted hashes). Refuses nothing but a share outside (0, 1); see
    :func:`split_user_data`."""
    if not 0 < share < 1:
        raise OptionError(f"the held-out share must be above 0 and below 1, not {share}")
    rating_keys = [] if ratings is None else [context_key(context) for context in ratings["context"]]
    dialogue_keys = [] if dialogues is None else [context_key(dialogue) for dialogue in dialogues["dialogue"]]
    contexts, conversations = list(dict.fromkeys(rating_keys)), list(dict.fromkeys(dialogue_keys))
    nodes = [*contexts, *conversations]  # the contexts' nodes first, then the dialogues'
    parent = list(range(len(nodes)))  # a union-find over the links

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # halve the path: later finds are shorter
            node = parent[node]
        return node

    for context, dialogue in _links(contexts, conversations):
        parent[root(context)] = root(len(contexts) + dialogue)
    groups: dict[int, list[int]] = {}
    for node in range(len(nodes)):
        groups.setdefault(root(node), []).append(node)
    # a node's place in the draw: the smallest seeded hash of its texts as given, so that data without near-duplicates
    # is drawn as it was before contexts were compared normalised (the splits of earlier runs reproduce)
    ranks: dict[int, str] = {}
    for offset, keys, given in ((0, rating_keys, [] if ratings is None else ratings["context"]),
                                (len(contexts), dialogue_keys, [] if dialogues is None else dialogues["dialogue"])):
        position = {key: offset + index for index, key in enumerate(dict.fromkeys(keys))}
        for key, texts in zip(keys, given):
            rank = hashlib.sha256(f"{seed}\x1e{chr(0x1f).join(texts)}".encode()).hexdigest()
            ranks[position[key]] = min(ranks.get(position[key], rank), rank)
    wanted = [min(count - 1, max(1, round(share * count))) if count else 0
              for count in (len(contexts), len(conversations))]
    taken = [0, 0]
    held: set[int] = set()
    for members in sorted(groups.values(), key=lambda members: min(ranks[node] for node in members)):
        counts = [sum(node < len(contexts) for node in members), sum(node >= len(contexts) for node in members)]
        if any(count and taken[kind] < wanted[kind] for kind, count in enumerate(counts)):
            held.update(members)
            taken = [before + count for before, count in zip(taken, counts)]
    held_contexts = {nodes[node] for node in held if node < len(contexts)}
    held_dialogues = {nodes[node] for node in held if node >= len(contexts)}
    return UserDataSplit(*_parts(ratings, rating_keys, held_contexts),
                         *_parts(dialogues, dialogue_keys, held_dialogues))


def _links(contexts: Sequence[tuple[str, ...]], dialogues: Sequence[tuple[str, ...]]) -> Iterator[tuple[int, int]]:
    """Each (context, dialogue) pair, by position, where the dialogue holds the context as consecutive utterances. A
    context without text links nothing (every dialogue would hold it)."""
    where = {key: position for position, key in enumerate(contexts) if any(key)}
    lengths = sorted({len(key) for key in where})
    for position, dialogue in enumerate(dialogues):
        for length in lengths:
            for start in range(len(dialogue) - length + 1):
                context = where.get(dialogue[start:start + length])
                if context is not None:
                    yield context, position


def _parts(rows: datasets.Dataset | None, keys: list[tuple[str, ...]], held: set[tuple[str, ...]]
           ) -> tuple[datasets.Dataset | None, datasets.Dataset | None]:
    if rows is None:
        return None, None
    return (rows.select([index for index, key in enumerate(keys) if key not in held]),
            rows.select([index for index, key in enumerate(keys) if key in held]))


def split_user_data(ratings: datasets.Dataset | None, dialogues: datasets.Dataset | None, share: float, seed: int,
                    ratings_source: str = "the ratings", dialogues_source: str = "the dialogues") -> UserDataSplit:
    """:func:`held_out_parts`, refusing (:class:`~hf_dialeval.errors.OptionError`, one line naming the source and the
    fix) a split that could not tell whether adapting helped: a kind left with nothing to train on, ratings of fewer
    than :data:`MIN_HELD_OUT_CONTEXTS` contexts held out or all of one score, fewer than
    :data:`MIN_HELD_OUT_DIALOGUES` dialogues held out."""
    split = held_out_parts(ratings, dialogues, share, seed)
    if ratings is not None and not len(split.ratings_trained):
        raise OptionError(f"{ratings_source}: no rating is left to train on: each rated context is held out or in a "
                          f"held-out dialogue of {dialogues_source}: give ratings of contexts those dialogues do not "
                          "hold, or a smaller --held-out-share")
    if dialogues is not None and not len(split.dialogues_trained):
        raise OptionError(f"{dialogues_source}: no dialogue is left to train on: each is held out or holds a held-out "
                          f"rated context of {ratings_source}: give dialogues that hold none of the rated contexts, or "
                          "a smaller --held-out-share")
    if ratings is not None:
        _refuse_few(len({context_key(context) for context in split.ratings_held_out["context"]}),
                    MIN_HELD_OUT_CONTEXTS, ratings["context"], ratings_source, "rated contexts",
                    "ratings of more contexts", share,
                    "below 10 a Spearman correlation must reach 0.70 or more before it differs from chance at "
                    "p < 0.05, so before and after could not be told apart")
        scores = set(split.ratings_held_out["score"])
        if len(scores) == 1 and len(set(ratings["score"])) == 1:
            raise OptionError(f"{ratings_source}: every rating scores {scores.pop()}: a correlation needs different "
                              "scores: give ratings of different scores")
        if len(scores) == 1:
            raise OptionError(f"{ratings_source}: the {len(split.ratings_held_out)} held-out ratings all score "
                              f"{scores.pop()}: a correlation needs different scores: give another --seed, or a larger "
                              "--held-out-share")
    if dialogues is not None:
        _refuse_few(len({context_key(dialogue) for dialogue in split.dialogues_held_out["dialogue"]}),
                    MIN_HELD_OUT_DIALOGUES, dialogues["dialogue"], dialogues_source, "dialogues", "more dialogues",
                    share,
                    "the checklist's pairs are cut from them, and from fewer its win rates say more about those few "
                    "conversations than about the metric")
    return split


def _refuse_few(held: int, fewest: int, groups: Sequence[Sequence[str]], source: str, noun: str, more: str,
                share: float, why: str) -> None:
    """The error of ``held`` distinct held-out ``noun`` (of ``groups``, one per row), when fewer than ``fewest``;
    ``more`` is what to give more of."""
    if held >= fewest:
        return
    total = len({context_key(group) for group in groups})
    fix = f"give {more} (about {math.ceil(fewest / share)} at --held-out-share {share})"
    raise OptionError(f"{source}: {held} of its {total} {noun} held out, fewer than {fewest}: {why}: {fix}"
                      + (", or a larger --held-out-share" if total > fewest else ""))
