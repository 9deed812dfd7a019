"""The perturbations of the perturbation checklist (Sai et al. 2021, "Perturbation CheckLists for Evaluating NLG
Evaluation Metrics"): the ways the system's turns of a dialogue are degraded, each with the dimensions it should hurt,
by name in :data:`PERTURBATIONS`. The system is the second speaker (the odd positions); the user's turns never change.
Eight perturbations are the checklist's own (a generic, random, echoed, repeated, shuffled, truncated, negated or
jumbled reply); the last four are degenerate replies, the outputs of a broken generator (one word said over and over,
the reply said again and again, a reply that runs on, gibberish).

How they relate to :mod:`hf_dialeval.data.degradations`: that module degrades one reply's text, and training sets draw
its sizes at random; the four degenerate perturbations here apply those same functions at a system turn of a dialogue,
at the fixed sizes of :data:`DEGENERATE_WORDS` and :data:`PHRASE_REPEATS`. Building pairs from held-out dialogues,
scoring them and reporting win rates is :mod:`hf_dialeval.evaluation.checklist`.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hf_dialeval.data import degradations

#: Dull replies of the kind generation models over-produce (Li et al. 2016, "A Diversity-Promoting Objective").
GENERIC_REPLIES = ("I don't know.", "OK.", "Yes.", "I'm not sure.", "That's nice.", "Sure.", "Me too.", "Thank you.")
#: Words after which "not" negates an English statement ("I am happy" -> "I am not happy"); "do" and "have"
#: are left out, as main verbs they do not take it ("I did it" -> "I did not it").
AUXILIARIES = frozenset({"am", "is", "are", "was", "were", "can", "could", "will", "would", "should", "shall", "may",
                         "might", "must", "i'm", "it's", "that's", "you're", "we're", "they're", "he's", "she's",
                         "there's"})
#: A negated auxiliary and its affirmative ("don't" -> "do"), for statements that are already negative.
NEGATED_AUXILIARIES = {"don't": "do", "doesn't": "does", "didn't": "did", "can't": "can", "cannot": "can",
                       "won't": "will", "wouldn't": "would", "isn't": "is", "aren't": "are", "wasn't": "was",
                       "weren't": "were", "haven't": "have", "hasn't": "has", "shouldn't": "should",
                       "couldn't": "could"}
#: Words of a degenerate long reply: more than the 512 tokens of the longest input a shipped model reads, so that
#: a model sees only its start (the failure a user met: one word said 10,000 times).
DEGENERATE_WORDS = 600
#: How often ``phrase-repeat`` says the reply (a decoder stuck in a loop, Holtzman et al. 2020).
PHRASE_REPEATS = 5

Dialogue = Sequence[str]
TurnPerturbation = Callable[[Dialogue, int, random.Random, Sequence[Dialogue]], "str | None"]


def system_positions(dialogue: Dialogue) -> list[int]:
    """Positions of the system's turns: the second speaker's, 1, 3, 5, …"""
    return list(range(1, len(dialogue), 2))


def negate(statement: str) -> str | None:
    """The statement with its first auxiliary negated ("is" -> "is not") or, when it is already negative, made
    affirmative ("don't" -> "do", "is not" -> "is"); ``None`` for a question or a statement with neither."""
    if statement.rstrip().endswith("?"):
        return None
    words = statement.split()
    cores = [re.sub(r"[^\w']", "", word.replace("’", "'")).lower() for word in words]
    for index, (word, core) in enumerate(zip(words, cores)):
        if core in AUXILIARIES and index + 1 < len(words) and cores[index + 1] == "not":
            return " ".join(words[:index + 1] + words[index + 2:])
        if core in NEGATED_AUXILIARIES:
            words[index] = word.lower().replace(core, NEGATED_AUXILIARIES[core])
            return " ".join(words)
        if core in AUXILIARIES:
            trailing = word[len(word.rstrip(",.!?;:")):]
            words[index] = f"{word[:len(word) - len(trailing)]} not{trailing}"
            return " ".join(words)
    return None


def _generic(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    options = [reply for reply in GENERIC_REPLIES if reply.lower() != dialogue[position].strip().lower()]
    return rng.choice(options)


def _random_reply(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    if not any(other is not dialogue and other for other in corpus):
        return None
    while True:
        other = corpus[rng.randrange(len(corpus))]
        if other is not dialogue and other:
            return rng.choice(list(other))


def _echo(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    return dialogue[position - 1] if dialogue[position - 1] != dialogue[position] else None


def _repeat(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    earlier = [dialogue[p] for p in system_positions(dialogue) if p < position and dialogue[p] != dialogue[position]]
    return earlier[-1] if earlier else None


def _shuffle(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    later = [dialogue[p] for p in system_positions(dialogue) if p > position and dialogue[p] != dialogue[position]]
    return rng.choice(later) if later else None


def _truncate(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    words = dialogue[position].split()
    if len(words) < 4:
        return None
    kept = words[:math.ceil(len(words) / 2)]
    kept[-1] = kept[-1].rstrip(",.!?;:")
    return " ".join(word for word in kept if word)


def _negate_earlier(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    for earlier in reversed([p for p in system_positions(dialogue) if p < position]):
        negated = negate(dialogue[earlier])
        if negated is not None:
            return negated
    return None


def _jumble(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    words = dialogue[position].split()
    if len(set(words)) < 4:
        return None
    jumbled = list(words)
    while jumbled == words:
        rng.shuffle(jumbled)
    return " ".join(jumbled)


def _word_repeat(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    return degradations.repeat_word(dialogue[position], rng, DEGENERATE_WORDS)


def _phrase_repeat(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    """Short enough to fit every model's token limit: the model reads all of it, unlike ``word-repeat``."""
    return degradations.repeat_reply(dialogue[position], PHRASE_REPEATS)


def _long(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    others = [utterance for other in corpus if other is not dialogue for utterance in other]
    return degradations.run_on(dialogue[position], rng, others, DEGENERATE_WORDS)


def _gibberish(dialogue: Dialogue, position: int, rng: random.Random, corpus: Sequence[Dialogue]) -> str | None:
    return degradations.gibberish(dialogue[position], rng)


def _repeat_dialogue(dialogue: Dialogue, rng: random.Random, corpus: Sequence[Dialogue]) -> list[str] | None:
    """Every system turn after the first says the first one again (the "ok / I like pizza / ok" system)."""
    positions = system_positions(dialogue)
    if len(positions) < 2:
        return None
    return [dialogue[positions[0]] if p in positions else text for p, text in enumerate(dialogue)]


def _shuffle_dialogue(dialogue: Dialogue, rng: random.Random, corpus: Sequence[Dialogue]) -> list[str] | None:
    """The system's turns in another order, none in its place."""
    positions = system_positions(dialogue)
    if len(positions) < 2 or len({dialogue[p] for p in positions}) < len(positions):
        return None
    order = list(positions)
    while any(a == b for a, b in zip(order, positions)):
        rng.shuffle(order)
    perturbed = list(dialogue)
    for target, source in zip(positions, order):
        perturbed[target] = dialogue[source]
    return perturbed


@dataclass(frozen=True)
class Perturbation:
    """A degradation of the system's turns. ``turn`` perturbs the reply at one system position (``None``: not
    applicable there); ``dialogue`` perturbs a whole dialogue (default: ``turn`` at every system position where it
    applies). ``hurts``: the dimensions it should lower."""

    name: str
    description: str
    hurts: tuple[str, ...]
    turn: TurnPerturbation
    dialogue: Callable[[Dialogue, random.Random, Sequence[Dialogue]], list[str] | None] | None = None

    def perturb_dialogue(self, dialogue: Dialogue, rng: random.Random, corpus: Sequence[Dialogue]) -> list[str] | None:
        if self.dialogue is not None:
            return self.dialogue(dialogue, rng, corpus)
        perturbed = list(dialogue)
        for position in system_positions(dialogue):
            replaced = self.turn(dialogue, position, rng, corpus)
            if replaced is not None:
                perturbed[position] = replaced
        return perturbed if perturbed != list(dialogue) else None


PERTURBATIONS: dict[str, Perturbation] = {p.name: p for p in (
    Perturbation("generic", "a dull generic reply (\"I don't know.\", \"OK.\")", ("likability", "topic_depth"),
                 _generic),
    Perturbation("random", "a reply from another dialogue", ("coherence",), _random_reply),
    Perturbation("echo", "the user's previous utterance, parroted", ("coherence",), _echo),
    Perturbation("repeat", "an earlier system turn said again (dialogues: every system turn is the first)",
                 ("coherence", "topic_depth"), _repeat, _repeat_dialogue),
    Perturbation("shuffle", "a later system turn of the same dialogue (dialogues: the system's turns reordered)",
                 ("coherence",), _shuffle, _shuffle_dialogue),
    Perturbation("truncate", "the reply cut mid-sentence (its first half)", ("fluency",), _truncate),
    Perturbation("negate", "an earlier system statement negated (a self-contradiction)", ("coherence", "likability"),
                 _negate_earlier),
    Perturbation("jumble", "the reply's words in random order", ("fluency",), _jumble),
    # degenerate replies, the outputs of a broken generator
    Perturbation("word-repeat", f"one word of the reply said {DEGENERATE_WORDS} times (past every model's token limit)",
                 ("fluency", "coherence", "likability", "topic_depth"), _word_repeat),
    Perturbation("phrase-repeat", f"the reply said {PHRASE_REPEATS} times over (a decoder stuck in a loop)",
                 ("fluency", "likability"), _phrase_repeat),
    Perturbation("long", f"the reply, then utterances of other dialogues, {DEGENERATE_WORDS} words in all (off topic)",
                 ("fluency", "coherence", "likability"), _long),
    Perturbation("gibberish", "random letters and punctuation, as long as the reply",
                 ("fluency", "coherence", "likability", "topic_depth"), _gibberish),
)}
