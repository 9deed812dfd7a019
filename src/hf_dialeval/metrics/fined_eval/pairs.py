"""Self-supervised (d+, d−) dialogue pairs for FineD-Eval (paper §3.3, thresholds §4.3, Appendix D).

Each strategy is a function from a dialogue dataset (a ``dialogue`` column: list of utterances) to the
datasets of its positive and negative dialogues; :func:`sample_pairs` then draws pairs from
positives × negatives. Model-based strategies take a scorer that is either a Hugging Face model id / local
path or a Python callable:

* pair scorers (QA relevance, NLI contradiction/entailment): ``(first_texts, second_texts) -> probabilities``;
* emotion classifiers: ``texts -> labels``.

=================  ==========================  =========================================================
dimension          strategy                    positives / negatives
=================  ==========================  =========================================================
coherence          :func:`utterance_shuffling`  original dialogue / its utterances randomly permuted
coherence          :func:`qa_relevance`         mean QA relevance > 0.99 / < 0.85 (dialogues of > 4
                                                utterances with at least one question-answer pair)
likability         :func:`contradiction_scoring` mean adjacent-pair contradiction < 0.20 / > 0.40
likability         :func:`positive_emotions`    every utterance positive / fewer than two positive
topic_depth        :func:`entailment_scoring`   mean all-pairs entailment < 0.01 / > 0.10
topic_depth        :func:`generic_substitution` original dialogue / some of one speaker's utterances
                                                replaced by the corpus's most frequent (generic) ones
                                                (not in the paper: an offline stand-in, see its docstring)
coherence          :func:`random_substitution`  original / some of one speaker's utterances replaced by
                                                utterances of other dialogues (not in the paper)
coherence          :func:`echo_substitution`    original / some of one speaker's utterances replaced by
                                                the utterance before them (not in the paper)
coherence          :func:`repeat_substitution`  original / some of one speaker's utterances replaced by
                                                one of their earlier ones (not in the paper)
coherence          :func:`speaker_shuffling`    original / one speaker's utterances reordered (not in
                                                the paper)
=================  ==========================  =========================================================

The strategies not in the paper are this package's additions: the paper's RoBERTa learned to reject those
degradations from its strategies, MiniLM did not (see the model card's checklist). Any strategy can train
another dimension's head (``generic_substitution:likability``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

import datasets
import numpy as np

from hf_dialeval.auxiliary.classifiers import LAST_CLASS, EmotionClassifier, PairClassifier
from hf_dialeval.metrics.fined_eval.constants import DEFAULT_EMOTION_MODEL, DEFAULT_NLI_MODEL, DEFAULT_QA_EVALUATOR

logger = logging.getLogger(__name__)

PairScorer = Callable[[list[str], list[str]], Sequence[float]]
Labeller = Callable[[list[str]], Sequence[str]]
#: What a substitution strategy puts at one position of a dialogue (``None``: nothing there).
Replacement = Callable[[list[str], int, np.random.Generator], "str | None"]

#: Labels counted as positive emotions: the T5 emotion model's ``joy``/``love`` and DailyDialog's ``happiness``.
POSITIVE_EMOTIONS = ("joy", "love", "happiness")
#: Dialogues longer than this are split into sub-dialogues for training (Appendix D).
MAX_TRAINING_UTTERANCES = 10
PAIR_FEATURES = datasets.Features({
    "positive": datasets.Sequence(datasets.Value("string")),
    "negative": datasets.Sequence(datasets.Value("string")),
    "task": datasets.Value("int64"),
})


def split_long_dialogues(dataset: datasets.Dataset, max_utterances: int = MAX_TRAINING_UTTERANCES) -> datasets.Dataset:
    """Split every dialogue longer than ``max_utterances`` into consecutive sub-dialogues of near-equal
    length, none longer than ``max_utterances`` (training only; scoring sees whole dialogues). Every column
    holding one value per utterance (``speakers``, ``emotions``, ...) is split alongside; others are copied."""
    if max_utterances < 2:
        raise ValueError(f"max_utterances={max_utterances}: a sub-dialogue needs at least 2 utterances")

    def split(batch: dict[str, list]) -> dict[str, list]:
        out: dict[str, list] = {key: [] for key in batch}
        for row in range(len(batch["dialogue"])):
            n = len(batch["dialogue"][row])
            parts = -(-n // max_utterances)
            size = -(-n // parts)
            for start in range(0, n, size):
                for key, values in batch.items():
                    value = values[row]
                    per_utterance = isinstance(value, list) and len(value) == n
                    out[key].append(value[start : start + size] if per_utterance else value)
        return out

    return dataset.map(split, batched=True, desc="splitting long dialogues")


def _positives_and_negatives(scored: datasets.Dataset, positive: Callable[[float], bool],
                             negative: Callable[[float], bool], name: str) -> tuple[datasets.Dataset, datasets.Dataset]:
    positives = scored.filter(lambda s: positive(s), input_columns="strategy_score", desc=f"{name}: positives")
    negatives = scored.filter(lambda s: negative(s), input_columns="strategy_score", desc=f"{name}: negatives")
    logger.info("%s: %d positive and %d negative dialogues out of %d", name, len(positives), len(negatives), len(scored))
    return positives, negatives


def utterance_shuffling(dataset: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence: the dialogues as they are (d+) and with their utterances randomly permuted (d−). Dialogues
    whose utterances cannot be reordered into a different sequence (fewer than two distinct ones) are left out."""
    usable = dataset.filter(lambda d: len(set(d)) > 1, input_columns="dialogue", desc="shuffling: usable dialogues")

    def shuffle(dialogue: list[str], index: int) -> dict[str, list[str]]:
        rng = np.random.default_rng([seed, index])
        while True:
            order = rng.permutation(len(dialogue))
            shuffled = [dialogue[i] for i in order]
            if shuffled != dialogue:
                return {"dialogue": shuffled}

    negatives = usable.map(shuffle, input_columns="dialogue", with_indices=True, desc="shuffling utterances")
    return usable, negatives


def _normalised(utterance: str) -> str:
    """An utterance compared case- and space-insensitively."""
    return " ".join(utterance.lower().split())


def generic_utterances(dataset: datasets.Dataset, min_count: int = 20) -> list[str]:
    """The utterances that occur at least ``min_count`` times in the corpus (compared case- and
    space-insensitively, returned in their most frequent spelling), most frequent first: on DailyDialog's
    training split the 59 of "Thank you .", "Yes .", "OK .", "Why ?", "I see ." and the like."""
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for dialogue in dataset["dialogue"]:
        for utterance in dialogue:
            key = _normalised(utterance)
            counts[key] += 1
            spellings.setdefault(key, Counter())[utterance.strip()] += 1
    return [spellings[key].most_common(1)[0][0] for key, n in counts.most_common() if n >= min_count]


def _substitute_one_speaker(dataset: datasets.Dataset, replacement: Replacement, name: str,
                            seed: int) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The dialogues (d+) and, for each, a copy (d−) where 1 to all of one speaker's utterances are replaced by
    ``replacement(dialogue, position, rng)`` (``None``: nothing to put there). The speaker is one of the two
    alternating turn positions, picked at random (the other one when the first has nothing to replace); the
    number of replaced utterances is uniform. Negatives keep their dialogue's number of utterances, and
    dialogues with nothing to replace are left out, so ``negatives[i]`` is a corruption of ``positives[i]``."""

    def corrupt(dialogue: list[str], index: int) -> dict[str, object]:
        rng = np.random.default_rng([seed, index])
        first = int(rng.integers(2))
        for position in (first, 1 - first):
            replacements = {i: replacement(dialogue, i, rng) for i in range(position, len(dialogue), 2)}
            candidates = [i for i, text in replacements.items() if text is not None and text != dialogue[i]]
            if candidates:
                break
        else:
            return {"dialogue": dialogue, "corrupted": False}
        chosen = rng.choice(candidates, size=int(rng.integers(1, len(candidates) + 1)), replace=False)
        corrupted = list(dialogue)
        for i in chosen:
            corrupted[int(i)] = replacements[int(i)]
        return {"dialogue": corrupted, "corrupted": True}

    usable = dataset.filter(lambda d: len(d) > 1, input_columns="dialogue", desc=f"{name}: usable dialogues")
    corrupted = usable.map(corrupt, input_columns="dialogue", with_indices=True, desc=name)
    keep = np.flatnonzero(corrupted["corrupted"])
    logger.info("%s: %d of %d dialogues corrupted", name, len(keep), len(usable))
    return usable.select(keep), corrupted.select(keep).remove_columns("corrupted")


def generic_substitution(dataset: datasets.Dataset, generic: Sequence[str] | None = None, min_count: int = 20,
                         seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Topic depth (likability too, by ``generic_substitution:likability``), offline (not one of the paper's
    strategies): the dialogues as they are (d+) and with 1 to all of one speaker's utterances replaced by
    generic ones drawn from ``generic`` (d−; default: the corpus's own :func:`generic_utterances` with
    ``min_count``).

    The paper's topic-depth strategy needs an NLI model that cannot be downloaded offline; this one asks the
    same question of a dialogue — does a speaker engage with the topic or answer with content-free
    replies? — using only the corpus. Utterances that are generic already are not replaced."""
    pool = list(generic) if generic is not None else generic_utterances(dataset, min_count)
    if not pool:
        raise ValueError(f"no generic utterances: none occurs {min_count} times or more; lower min_count "
                         "or pass generic=[...]")
    generic_keys = {_normalised(u) for u in pool}

    def replacement(dialogue: list[str], position: int, rng: np.random.Generator) -> str | None:
        if _normalised(dialogue[position]) in generic_keys:
            return None
        return pool[int(rng.integers(len(pool)))]

    return _substitute_one_speaker(dataset, replacement, "generic substitution", seed)


def random_substitution(dataset: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence, a package addition: 1 to all of one speaker's utterances replaced by utterances of other
    dialogues of the corpus (fluent, but off the topic: the random-reply negatives of turn-level metrics such
    as QuantiDCE's and RADE's, at the dialogue level)."""
    dialogues = dataset["dialogue"]
    if len(dialogues) < 2:
        raise ValueError("random_substitution draws utterances from other dialogues: give at least two")

    def replacement(dialogue: list[str], position: int, rng: np.random.Generator) -> str | None:
        other = dialogues[int(rng.integers(len(dialogues)))]
        return None if other == dialogue else other[int(rng.integers(len(other)))]

    return _substitute_one_speaker(dataset, replacement, "random substitution", seed)


def echo_substitution(dataset: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence, a package addition: 1 to all of one speaker's utterances replaced by the utterance before
    them (the other speaker's words parroted back: high word overlap with the context, no reply)."""

    def replacement(dialogue: list[str], position: int, rng: np.random.Generator) -> str | None:
        return dialogue[position - 1] if position > 0 else None

    return _substitute_one_speaker(dataset, replacement, "echo substitution", seed)


def repeat_substitution(dataset: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence (topic depth too, by ``repeat_substitution:topic_depth``), a package addition: 1 to all of one
    speaker's utterances after their first replaced by one of that speaker's earlier utterances (a system
    stuck in a loop, saying again what it said)."""

    def replacement(dialogue: list[str], position: int, rng: np.random.Generator) -> str | None:
        earlier = [dialogue[i] for i in range(position % 2, position, 2) if dialogue[i] != dialogue[position]]
        return earlier[int(rng.integers(len(earlier)))] if earlier else None

    return _substitute_one_speaker(dataset, replacement, "repeat substitution", seed)


def speaker_shuffling(dataset: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence, a package addition: one speaker's utterances reordered among that speaker's turns (every
    utterance of the dialogue kept, the other speaker's in place: a subtler negative than
    :func:`utterance_shuffling`, where the turn-taking itself breaks). Dialogues where neither speaker has two
    different utterances are left out."""

    def corrupt(dialogue: list[str], index: int) -> dict[str, object]:
        rng = np.random.default_rng([seed, index])
        first = int(rng.integers(2))
        for position in (first, 1 - first):
            turns = list(range(position, len(dialogue), 2))
            if len({dialogue[i] for i in turns}) > 1:
                break
        else:
            return {"dialogue": dialogue, "corrupted": False}
        while True:
            order = rng.permutation(turns)
            shuffled = list(dialogue)
            for target, source in zip(turns, order):
                shuffled[target] = dialogue[int(source)]
            if shuffled != dialogue:
                return {"dialogue": shuffled, "corrupted": True}

    corrupted = dataset.map(corrupt, input_columns="dialogue", with_indices=True, desc="speaker shuffling")
    keep = np.flatnonzero(corrupted["corrupted"])
    logger.info("speaker shuffling: %d of %d dialogues reordered", len(keep), len(dataset))
    return dataset.select(keep), corrupted.select(keep).remove_columns("corrupted")


def is_question(utterance: str) -> bool:
    """An utterance asks a question when it contains a question mark."""
    return "?" in utterance


def qa_relevance(
    dataset: datasets.Dataset, scorer: str | PairScorer = DEFAULT_QA_EVALUATOR, low: float = 0.85, high: float = 0.99,
    min_utterances: int = 5, batch_size: int = 256,
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Coherence: each question utterance and the one after it form a QA pair, scored for relevance by
    ``scorer`` (default: the paper's BERT QA evaluator); a dialogue of at least ``min_utterances`` utterances
    with at least one QA pair gets the mean. Mean > ``high``: positive; < ``low``: negative."""
    score = PairClassifier(scorer, LAST_CLASS) if isinstance(scorer, str) else scorer

    def has_qa(dialogue: list[str]) -> bool:
        return len(dialogue) >= min_utterances and any(is_question(u) for u in dialogue[:-1])

    def qa_pairs(dialogue: list[str]) -> list[tuple[str, str]]:
        return [(dialogue[i], dialogue[i + 1]) for i in range(len(dialogue) - 1) if is_question(dialogue[i])]

    eligible = dataset.filter(has_qa, input_columns="dialogue", desc="QA relevance: eligible dialogues")
    scored = eligible.map(_mean_pair_scores(score, qa_pairs), input_columns="dialogue", batched=True,
                          batch_size=batch_size, desc="QA relevance: scoring")
    return _positives_and_negatives(scored, lambda s: s > high, lambda s: s < low, "QA relevance")


def contradiction_scoring(
    dataset: datasets.Dataset, scorer: str | PairScorer = DEFAULT_NLI_MODEL, low: float = 0.20, high: float = 0.40,
    batch_size: int = 256,
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Likability: the NLI contradiction probability of each adjacent utterance pair, averaged per dialogue.
    Mean < ``low``: positive; > ``high``: negative."""
    score = PairClassifier(scorer, "contradiction") if isinstance(scorer, str) else scorer

    def adjacent(dialogue: list[str]) -> list[tuple[str, str]]:
        return list(zip(dialogue[:-1], dialogue[1:]))

    eligible = dataset.filter(lambda d: len(d) > 1, input_columns="dialogue")
    scored = eligible.map(_mean_pair_scores(score, adjacent), input_columns="dialogue", batched=True,
                          batch_size=batch_size, desc="contradiction scoring")
    return _positives_and_negatives(scored, lambda s: s < low, lambda s: s > high, "contradiction scoring")


def entailment_scoring(
    dataset: datasets.Dataset, scorer: str | PairScorer = DEFAULT_NLI_MODEL, low: float = 0.01, high: float = 0.10,
    batch_size: int = 64,
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Topic depth: the NLI entailment probability of every utterance pair (i < j), averaged per dialogue.
    Mean < ``low`` (semantically diverse utterances): positive; > ``high``: negative."""
    score = PairClassifier(scorer, "entailment") if isinstance(scorer, str) else scorer

    def all_pairs(dialogue: list[str]) -> list[tuple[str, str]]:
        return list(combinations(dialogue, 2))

    eligible = dataset.filter(lambda d: len(d) > 1, input_columns="dialogue")
    scored = eligible.map(_mean_pair_scores(score, all_pairs), input_columns="dialogue", batched=True,
                          batch_size=batch_size, desc="entailment scoring")
    return _positives_and_negatives(scored, lambda s: s < low, lambda s: s > high, "entailment scoring")


def positive_emotions(
    dataset: datasets.Dataset, classifier: str | Labeller | None = DEFAULT_EMOTION_MODEL,
    positive_labels: Sequence[str] = POSITIVE_EMOTIONS, batch_size: int = 256,
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Likability: dialogues whose utterances all carry a positive emotion are positives, those with fewer
    than two positive utterances negatives.

    ``classifier`` labels each utterance (default: the paper's T5 emotion model). ``None`` reads gold labels
    from the dataset's ``emotions`` column instead (DailyDialog's annotations, an offline substitute for the
    classifier: they mark far fewer utterances as positive than the classifier does)."""
    positive = set(positive_labels)
    if classifier is None:
        if "emotions" not in dataset.column_names:
            raise ValueError("classifier=None reads gold labels, but the dataset has no 'emotions' column: "
                             "give an emotion classifier (HF model id/path or callable)")
        feature = dataset.features["emotions"].feature
        names = feature.names if isinstance(feature, datasets.ClassLabel) else None

        def count(batch: list[list]) -> dict[str, list[int]]:
            labels = [[names[label] if names else label for label in row] for row in batch]
            return {"strategy_score": [sum(label in positive for label in row) for row in labels]}

        counted = dataset.map(count, input_columns="emotions", batched=True, desc="counting gold positive emotions")
    else:
        classify = EmotionClassifier(classifier) if isinstance(classifier, str) else classifier

        def count(batch: list[list[str]]) -> dict[str, list[int]]:
            labels = list(classify([u for dialogue in batch for u in dialogue]))
            counts, start = [], 0
            for dialogue in batch:
                counts.append(sum(label in positive for label in labels[start : start + len(dialogue)]))
                start += len(dialogue)
            return {"strategy_score": counts}

        counted = dataset.map(count, input_columns="dialogue", batched=True, batch_size=batch_size,
                              desc="classifying emotions")
    positives = counted.filter(lambda d, c: c == len(d), input_columns=["dialogue", "strategy_score"])
    negatives = counted.filter(lambda c: c < 2, input_columns="strategy_score")
    logger.info("positive emotions: %d positive and %d negative dialogues out of %d",
                len(positives), len(negatives), len(counted))
    return positives, negatives


def _mean_pair_scores(score: PairScorer, make_pairs: Callable[[list[str]], list[tuple[str, str]]]
                      ) -> Callable[[list[list[str]]], dict[str, list[float]]]:
    """A batched map function: all pairs of all dialogues scored in one call, then averaged per dialogue."""

    def mean_scores(batch: list[list[str]]) -> dict[str, list[float]]:
        pairs = [make_pairs(dialogue) for dialogue in batch]
        flat = [pair for dialogue_pairs in pairs for pair in dialogue_pairs]
        values = [float(v) for v in score([a for a, _ in flat], [b for _, b in flat])] if flat else []
        if len(values) != len(flat):
            raise ValueError(f"the scorer returned {len(values)} scores for {len(flat)} text pairs")
        means, start = [], 0
        for dialogue_pairs in pairs:
            means.append(float(np.mean(values[start : start + len(dialogue_pairs)])))
            start += len(dialogue_pairs)
        return {"strategy_score": means}

    return mean_scores


def sample_pairs(positives: datasets.Dataset, negatives: datasets.Dataset, num_pairs: int, task: int = 0,
                 seed: int = 0, length_matched: bool = False, aligned: bool = False) -> datasets.Dataset:
    """``num_pairs`` distinct (d+, d−) pairs drawn uniformly from positives × negatives (all of them, in
    random order, when there are fewer combinations), with the index ``task`` of the head they train.

    ``aligned``: ``negatives[i]`` is a corruption of ``positives[i]`` and pairs are ``(positives[i],
    negatives[i])`` only — the same dialogue intact and degraded, so the pair differs in nothing but what the
    strategy changed (``num_pairs`` of them at most, drawn at random).

    ``length_matched``: pair each positive only with negatives of its number of utterances (the nearest number
    present when none has it), so that a head cannot learn dialogue length as a shortcut — e.g. the gold-emotion
    positives of DailyDialog are shorter than its negatives."""
    if len(positives) == 0 or len(negatives) == 0:
        raise ValueError(f"cannot pair {len(positives)} positive with {len(negatives)} negative dialogues: "
                         "the strategy found none on one side; use more data or other thresholds")
    rng = np.random.default_rng(seed)
    if aligned:
        if len(positives) != len(negatives):
            raise ValueError(f"aligned pairs need one negative per positive, not {len(negatives)} for {len(positives)}")
        rows = rng.permutation(len(positives))[:num_pairs].tolist()
        return datasets.Dataset.from_dict({"positive": positives.select(rows)["dialogue"],
                                           "negative": negatives.select(rows)["dialogue"],
                                           "task": [task] * len(rows)}, features=PAIR_FEATURES)
    positive_dialogues = positives["dialogue"]
    negative_dialogues = negatives["dialogue"]
    if length_matched:
        negative_lengths = np.array([len(d) for d in negative_dialogues])
        lengths = np.unique(negative_lengths)
        buckets = {int(n): np.flatnonzero(negative_lengths == n) for n in lengths}
        partners = [buckets[int(lengths[np.abs(lengths - len(d)).argmin()])] for d in positive_dialogues]
    else:
        partners = [np.arange(len(negatives))] * len(positives)
    sizes = np.array([len(p) for p in partners])
    total = int(sizes.sum())
    if total <= num_pairs:
        flat = rng.permutation(total)
    else:
        chosen: set[int] = set()
        while len(chosen) < num_pairs:
            chosen.update(rng.integers(0, total, num_pairs - len(chosen)).tolist())
        flat = rng.permutation(np.fromiter(sorted(chosen), dtype=np.int64))
    # flat index -> (positive, its k-th partner): positives own consecutive ranges of the flat index
    ends = np.cumsum(sizes)
    positive_rows = np.searchsorted(ends, flat, side="right")
    negative_rows = [partners[p][f - (ends[p] - sizes[p])] for p, f in zip(positive_rows, flat)]
    return datasets.Dataset.from_dict(
        {"positive": [positive_dialogues[i] for i in positive_rows],
         "negative": [negative_dialogues[j] for j in negative_rows],
         "task": [task] * len(flat)},
        features=PAIR_FEATURES,
    )
