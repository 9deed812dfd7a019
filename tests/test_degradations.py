"""Degenerate replies: each degradation does what it says, seeded, and RADE's training set adds them rated lowest."""

from __future__ import annotations

import random

import datasets
import pytest

from hf_dialeval.data.degradations import (
    TRAINING_DEGRADATIONS,
    degrade,
    gibberish,
    repeat_reply,
    repeat_word,
    run_on,
    words_of,
)
from hf_dialeval.metrics.rade.data import CANDIDATE_SCORE, add_degenerate_candidates

REPLY = "I took a lot of pictures of the lake ."
OTHERS = ["Is it far from here ?", "We had pizza for dinner .", "My brother plays the violin every night ."]


def test_each_degradation_does_what_it_says():
    word = repeat_word(REPLY, random.Random(0), 50).split()
    assert len(word) == 50 and len(set(word)) == 1 and word[0] in words_of(REPLY)
    assert repeat_reply(f" {REPLY} ", 3) == f"{REPLY} {REPLY} {REPLY}"
    long = run_on(REPLY, random.Random(0), OTHERS, 100)
    assert long.startswith(REPLY + " ") and len(long.split()) >= 100
    assert set(long[len(REPLY) + 1:].split()) <= {word for other in OTHERS for word in other.split()}
    noise = gibberish(REPLY, random.Random(0))
    assert not {w.lower() for w in words_of(noise)} & {w.lower() for w in words_of(REPLY)}
    assert len(REPLY) <= len(noise) <= len(REPLY) + 11


def test_replies_that_cannot_be_degraded_give_none():
    assert repeat_word("?!", random.Random(0), 5) is None and repeat_reply("  ", 3) is None
    assert run_on(REPLY, random.Random(0), [REPLY, " "], 50) is None and gibberish("", random.Random(0)) is None


def test_degrade_draws_every_kind_and_is_seeded():
    draws = [degrade(REPLY, random.Random(seed), OTHERS) for seed in range(40)]
    assert draws == [degrade(REPLY, random.Random(seed), OTHERS) for seed in range(40)]
    assert all(draw and draw != REPLY for draw in draws)
    kinds = {"long" if draw.startswith(REPLY + " ") and REPLY not in draw[len(REPLY):] else
             "phrase" if draw.count(REPLY) > 1 else "word" if len(set(draw.split())) == 1 else "gibberish"
             for draw in draws}
    assert len(kinds) == len(TRAINING_DEGRADATIONS) == 4


def _ratings(n: int) -> datasets.Dataset:
    return datasets.Dataset.from_dict({
        "context": [["Hi , what did you do ?"]] * n, "reference": ["We went hiking ."] * n,
        "response": [f"{REPLY} number {i}" for i in range(n)], CANDIDATE_SCORE: [4.0] * n, "source": ["toy"] * n})


def test_rade_training_set_adds_degenerate_candidates_rated_lowest():
    ratings = _ratings(40)
    augmented = add_degenerate_candidates(ratings, 0.25, lowest=1.0, seed=3)
    assert len(augmented) == 50 and augmented.features == ratings.features
    originals = set(ratings["response"])
    added = [row for row in augmented if row["response"] not in originals]
    assert len(added) == 10 and {row[CANDIDATE_SCORE] for row in added} == {1.0}
    assert all(row["context"] == ["Hi , what did you do ?"] and row["reference"] == "We went hiking ." for row in added)
    assert list(add_degenerate_candidates(ratings, 0.25, 1.0, seed=3)["response"]) == list(augmented["response"])
    assert add_degenerate_candidates(ratings, 0.0, 1.0) is ratings


def test_a_share_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="--degenerate-negatives must be a share between 0 and 1, not 1.5"):
        add_degenerate_candidates(_ratings(4), 1.5, 1.0)
