"""A perturbation checklist (Sai et al. 2021, "Perturbation CheckLists for Evaluating NLG Evaluation Metrics"):
does a metric prefer what people said to the same dialogue with the system's turns degraded?

Pairs come from held-out dialogues (DailyDialog test, Topical-Chat ``test_freq``). The system is the second
speaker (the odd positions), the user's turns never change. A turn-level pair is a context with its human reply
vs. the same context with a perturbed reply, at one system turn; a dialogue-level pair is a dialogue vs. the same
dialogue with its system turns perturbed. Per perturbation the result is the share of pairs the original wins
(ties count half, so a metric that cannot tell scores 0.5), with a bootstrap 95% interval, on the metric's
``overall`` score and on each of its dimensions the perturbation should hurt. The perturbations themselves, and
the dimensions each should hurt, are :mod:`hf_dialeval.data.perturbations`.

A reference-assisted metric (RADE) would be handed the win if the pair's only human reply were its reference, so
it takes its pairs from a corpus whose contexts have several human replies (DailyDialog++ test, 5 per context):
one reply is the original, another the reference of both candidates.

The module imports no numerical library until it scores (the command line lists its corpora at once).
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.perturbations import PERTURBATIONS, Dialogue, Perturbation, system_positions
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.inference.metric import DialogueMetric

if TYPE_CHECKING:
    import datasets

    from hf_dialeval.inference.score_cache import ScoreCache

#: The corpora pairs are built from: name -> (loader in :mod:`hf_dialeval.data.corpora`, held-out split).
CORPORA = {"dailydialog": ("load_dailydialog", "test"), "topical-chat": ("load_topical_chat", "test_freq")}
#: Corpora whose contexts have several human replies, the only pairs a reference-assisted metric can be given: each
#: context with one reply is a dialogue, and a second reply to it is the pair's reference. Same layout as CORPORA.
REFERENCE_CORPORA = {"dailydialog++": ("load_dailydialog_plusplus", "test")}
DEFAULT_PAIRS = 200
BOOTSTRAP_RESAMPLES = 2000


def _corpus_source(corpus: str) -> tuple[str, str]:
    """The loader and held-out split of a :data:`CORPORA` or :data:`REFERENCE_CORPORA` name."""
    sources = {**CORPORA, **REFERENCE_CORPORA}
    if corpus not in sources:
        raise UnknownNameError(f"unknown checklist corpus {corpus!r}: choose one of {sorted(sources)}")
    return sources[corpus]


def load_checklist_corpus(corpus: str, data_dir: str | os.PathLike | None = None, split: str | None = None
                          ) -> list[list[str]]:
    """The dialogues of ``corpus`` (a :data:`CORPORA` name) with at least two system turns, from its held-out
    split or ``split`` (e.g. DailyDialog's ``validation``, to choose a model without looking at the test pairs);
    for a :data:`REFERENCE_CORPORA` name, each context with its first human reply (see
    :func:`load_checklist_references`)."""
    loader, held_out = _corpus_source(corpus)
    if corpus in REFERENCE_CORPORA:
        return [dialogue for dialogue, _ in _replied_contexts(loader, split or held_out, data_dir)]
    from hf_dialeval.data import corpora

    dialogues = getattr(corpora, loader)(split or held_out, data_dir)["dialogue"]
    return [list(dialogue) for dialogue in dialogues if len(dialogue) >= 4]


def load_checklist_references(corpus: str, data_dir: str | os.PathLike | None = None, split: str | None = None
                              ) -> list[str] | None:
    """Per dialogue of :func:`load_checklist_corpus`, a second human reply to its last turn (the reference of a
    reference-assisted metric's pairs); ``None`` for a corpus with one human reply per turn (:data:`CORPORA`)."""
    loader, held_out = _corpus_source(corpus)
    if corpus not in REFERENCE_CORPORA:
        return None
    return [reference for _, reference in _replied_contexts(loader, split or held_out, data_dir)]


def _replied_contexts(loader: str, split: str, data_dir: str | os.PathLike | None) -> list[tuple[list[str], str]]:
    """DailyDialog++-shaped contexts as (context + first positive reply, second positive reply), where the two
    differ. A context of even length loses its first utterance, so that the reply is the system's (odd position)
    at both levels, and a context left empty is skipped."""
    from hf_dialeval.data import corpora

    rows = getattr(corpora, loader)(split, data_dir)
    replied = []
    for context, replies in zip(rows["context"], rows["positive_responses"]):
        context = list(context[len(context) % 2 == 0:])
        if context and len(replies) >= 2 and replies[0] != replies[1]:
            replied.append((context + [replies[0]], replies[1]))
    return replied


@dataclass
class PerturbationPairs:
    """The pairs of one perturbation: turn level (``contexts``, ``originals``/``perturbed`` replies and, from a
    corpus with several human replies, the ``references`` both are scored against) or dialogue level
    (``originals``/``perturbed`` dialogues, ``contexts`` and ``references`` empty)."""

    perturbation: Perturbation
    originals: list[Any]
    perturbed: list[Any]
    contexts: list[list[str]]
    references: list[str] = field(default_factory=list)


def build_pairs(perturbation: Perturbation, dialogues: Sequence[Dialogue], level: str, count: int = DEFAULT_PAIRS,
                seed: int = 0, references: Sequence[str] | None = None, last_turn: bool = False) -> PerturbationPairs:
    """Up to ``count`` pairs of ``perturbation`` at ``level`` (``"turn"`` or ``"dialogue"``), one per dialogue,
    the dialogues visited in a seeded order (the same for every metric). A turn-level pair is at a system turn drawn
    at random, or, with ``last_turn``, at each dialogue's last turn, whatever its position: the reply of an item
    that is a context and its reply (a rated one). ``references``, one per dialogue (a second human reply to its
    last turn, :func:`load_checklist_references`), put each turn-level pair at that last turn too, the one turn
    with a reference; dialogue-level pairs use neither."""
    if references is not None and len(references) != len(dialogues):
        raise ValueError(f"{len(references)} references for {len(dialogues)} dialogues: give one per dialogue")
    rng = random.Random(f"{seed}-{perturbation.name}")
    order = list(range(len(dialogues)))
    rng.shuffle(order)
    pairs = PerturbationPairs(perturbation, [], [], [])
    for index in order:
        if len(pairs.originals) == count:
            break
        dialogue = dialogues[index]
        if level == "dialogue":
            perturbed = perturbation.perturb_dialogue(dialogue, rng, dialogues)
            if perturbed is not None:
                pairs.originals.append(list(dialogue))
                pairs.perturbed.append(perturbed)
            continue
        if last_turn or references is not None:
            positions = [len(dialogue) - 1]
        else:
            positions = system_positions(dialogue)
            rng.shuffle(positions)
        for position in positions:
            replaced = perturbation.turn(dialogue, position, rng, dialogues)
            if replaced is not None and replaced != dialogue[position]:
                pairs.contexts.append(list(dialogue[:position]))
                pairs.originals.append(dialogue[position])
                pairs.perturbed.append(replaced)
                if references is not None:
                    pairs.references.append(references[index])
                break
    return pairs


def win_rate(original: Sequence[float], perturbed: Sequence[float], seed: int = 0) -> dict[str, float]:
    """Share of pairs whose original scores higher (ties half) and its bootstrap 95% percentile interval."""
    import numpy as np
    from scipy import stats

    original, perturbed = np.asarray(original, dtype=float), np.asarray(perturbed, dtype=float)
    if np.isnan(original).any() or np.isnan(perturbed).any():
        raise ValueError("a score is NaN: the metric returned no number for some pair")
    wins = (original > perturbed) + 0.5 * (original == perturbed)
    rate = float(wins.mean())
    if len(wins) < 2 or np.ptp(wins) == 0:
        return {"win_rate": rate, "ci_low": rate, "ci_high": rate}
    interval = stats.bootstrap((wins,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                               random_state=seed).confidence_interval
    return {"win_rate": rate, "ci_low": float(interval.low), "ci_high": float(interval.high)}


def run_checklist(metric: DialogueMetric, dialogues: Sequence[Dialogue], count: int = DEFAULT_PAIRS, seed: int = 0,
                  perturbations: Sequence[str] | None = None, progress: bool = False,
                  references: Sequence[str] | None = None, last_turn: bool = False,
                  cache: ScoreCache | None = None) -> list[dict[str, Any]]:
    """Score every perturbation's pairs with ``metric`` (at its level) and return one row per perturbation:
    its name, description, ``hurts``, the number of pairs ``n``, how many of the 2n items were cut to fit the
    model (``truncated``) or hold empty text (``empty``), and per score key (``overall`` and each of the
    metric's dimensions the perturbation should hurt) the original's win rate with its interval (no key where
    the perturbation found no pair). ``references`` and ``last_turn``: see :func:`build_pairs`; a
    reference-assisted metric needs references, and scores both replies of a pair against the same one. With a
    ``cache``, turn-level pairs are scored through it (a re-run, or a panel of metrics that scored them, reads the
    scores back)."""
    if metric.needs_reference and references is None:
        # the pairs' only human reply is the original itself: as the reference it would hand the original the win
        raise ValueError(f"{metric.name} scores a reply against a reference reply, and these pairs have no second "
                         "human reply to serve as one: give references, e.g. the corpus "
                         f"{next(iter(REFERENCE_CORPORA))}, whose contexts have several human replies")
    names = list(PERTURBATIONS) if perturbations is None else list(perturbations)
    unknown = [name for name in names if name not in PERTURBATIONS]
    if unknown:
        raise UnknownNameError(f"unknown perturbation(s) {unknown}: choose among {list(PERTURBATIONS)}")
    pair_sets = {name: build_pairs(PERTURBATIONS[name], dialogues, metric.level, count, seed, references, last_turn)
                 for name in names}
    items = {name: pair_items(pairs, metric.needs_reference) for name, pairs in pair_sets.items()
             if metric.level == "turn" and cache is not None}
    if items:
        cache.fill(metric, [(dataset, pair_cache_name(name)) for name, dataset in items.items()], progress)
    rows = []
    for name, pairs in pair_sets.items():
        perturbation = PERTURBATIONS[name]
        label = f"{metric.name}: {name}" if progress else False
        if metric.level == "dialogue":
            output = metric.score_dialogues(pairs.originals + pairs.perturbed, progress=label)
        elif cache is not None:
            output = cache.scores(metric, items[name], pair_cache_name(name), progress=label)[0]
        else:
            output = metric.score_turns(pairs.contexts * 2, pairs.originals + pairs.perturbed, progress=label,
                                        references=pairs.references * 2 if metric.needs_reference else None)
        size = len(pairs.originals)
        keys = ["overall"]
        if len(metric.dimensions) > 1:
            keys += [d for d in metric.dimensions if any(_measures(d, quality) for quality in perturbation.hurts)]
        scores = {key: output.overall if key == "overall" else output.scores[key] for key in keys}
        wins = {key: win_rate(values[:size], values[size:], seed) for key, values in scores.items()} if size else {}
        rows.append({"perturbation": name, "description": perturbation.description, "hurts": list(perturbation.hurts),
                     "n": size, "truncated": sum(output.truncated), "empty": sum(output.empty), "wins": wins})
    return rows


def pair_items(pairs: PerturbationPairs, with_references: bool = False) -> datasets.Dataset:
    """The turn-level ``pairs`` as one dataset of items: every original, then every perturbed reply, each after its
    context (and, ``with_references``, scored against the pair's reference)."""
    import datasets

    size = len(pairs.originals)
    return datasets.Dataset.from_dict({
        "context": pairs.contexts * 2, "response": pairs.originals + pairs.perturbed, "condition": [None] * 2 * size,
        "reference": pairs.references * 2 if with_references else [None] * 2 * size})


def pair_cache_name(perturbation: str) -> str:
    """The name a perturbation's pairs are cached under (the cache tells pairs of other splits apart by content)."""
    return f"checklist-{perturbation}"


def _measures(dimension: str, quality: str) -> bool:
    """Whether a metric's ``dimension`` measures ``quality`` (HolisticEval's ``context_coherence``: coherence)."""
    return dimension == quality or dimension.endswith(f"_{quality}")


def checklist_record(metric: DialogueMetric, metric_name: str, rows: Sequence[dict[str, Any]], corpus: str,
                     count: int, seed: int, split: str | None = None) -> dict[str, Any]:
    """The JSON record of a checklist run: its settings (``split``: the corpus's held-out one when None), its rows
    and the metric's signature."""
    return {"metric": metric_name, "corpus": corpus, "split": split or _corpus_source(corpus)[1],
            "pairs_per_perturbation": count, "seed": seed, "level": metric.level,
            "dimensions": list(metric.dimensions), "rows": list(rows),
            "signature": metric.signature(sum(2 * row["n"] for row in rows), sum(row["truncated"] for row in rows),
                                        sum(row["empty"] for row in rows))}


def format_checklist(rows: Sequence[dict[str, Any]], metric_name: str, dimensions: Sequence[str], corpus: str) -> str:
    """A markdown table: per perturbation, the original's win rate [95% CI] on ``overall`` and on each dimension
    the perturbation should hurt (— where it should not)."""
    columns = ["overall"] + (list(dimensions) if len(dimensions) > 1 else [])
    lines = [f"**{metric_name}** checklist on **{corpus}** (share of pairs the original wins; ties half)", "",
             "| perturbation | should hurt | n | " + " | ".join(columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for column in columns:
            result = row["wins"].get(column)
            cells.append("—" if result is None else
                         f"{result['win_rate']:.3f} [{result['ci_low']:.2f}, {result['ci_high']:.2f}]")
        lines.append(f"| {row['perturbation']} | {', '.join(row['hurts'])} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pairs_by_split(corpus: str, data_dir: str | os.PathLike | None, perturbations: Sequence[str],
                   validation_seeds: Sequence[int] = (0,), test_seeds: Sequence[int] = (0,), count: int = DEFAULT_PAIRS,
                   level: str = "dialogue") -> dict[str, dict[str, PerturbationPairs]]:
    """Pairs of ``perturbations`` from the corpus's validation split (one set per seed of ``validation_seeds``: to
    choose a model's training steps or weights without the test pairs) and its held-out split (per seed of
    ``test_seeds``; seed 0 is the committed checklist's). Splits are named ``validation``/``test`` for seed 0 and
    ``validation-<seed>``/``test-<seed>`` otherwise."""
    sets = [("validation", "validation", seed) for seed in validation_seeds] + [("test", None, seed) for seed in test_seeds]
    by_split: dict[str, dict[str, PerturbationPairs]] = {}
    for name, split, seed in sets:
        dialogues = load_checklist_corpus(corpus, data_dir, split)
        by_split[name if seed == 0 else f"{name}-{seed}"] = {
            perturbation: build_pairs(PERTURBATIONS[perturbation], dialogues, level, count, seed)
            for perturbation in perturbations}
    return by_split
