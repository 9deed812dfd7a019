"""The unrated dialogues a panel's dialogue-level CDFs are fitted on: seeded draws of human-human dialogues from the
validation splits of the checklist's corpora (never a test split, never a rated benchmark), and the items its
members score of them."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

from typing import Any

import datasets

from hf_dialeval.data.model import dialogue_to_turns
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.members import feature_rows

#: Corpus and split the reference dialogues are drawn from: DailyDialog (daily life) and Topical-Chat (knowledge-
#: grounded, longer turns), as the checklist's validation pairs are.
REFERENCE_SPLITS = {"dailydialog": "validation", "topical-chat": "valid_freq"}
#: The draw's seed: part of what a panel is (the same dialogues for every panel, so that members' scores of them
#: come from the score cache), not a training setting.
REFERENCE_SEED = 0


def reference_dialogues(data_dir: str | os.PathLike | None, count: int) -> dict[str, list[list[str]]]:
    """Per ``CORPUS-SPLIT`` of :data:`REFERENCE_SPLITS`, ``count`` of its dialogues drawn with
    :data:`REFERENCE_SEED`, in the corpus's order."""
    from hf_dialeval.evaluation.checklist import load_checklist_corpus

    drawn_sets = {}
    for corpus, split in REFERENCE_SPLITS.items():
        dialogues = load_checklist_corpus(corpus, data_dir, split)
        if count > len(dialogues):
            raise OptionError(f"--reference-dialogues {count}: {corpus} {split} has {len(dialogues)} dialogues; "
                              "give at most that many")
        drawn = random.Random(f"{REFERENCE_SEED}-{corpus}").sample(range(len(dialogues)), count)
        drawn_sets[f"{corpus}-{split}"] = [dialogues[index] for index in sorted(drawn)]
    return drawn_sets


def dialogue_items(dialogues: Sequence[Sequence[str]], speakers: Sequence[Sequence[str] | None] | None = None
                   ) -> datasets.Dataset:
    """``dialogues`` as dialogue-level items (with no ``speakers``, the second speaker the system)."""
    return datasets.Dataset.from_dict({"dialogue": [list(d) for d in dialogues],
                                       "speakers": list(speakers) if speakers is not None else [None] * len(dialogues)})


def system_turn_items(dialogues: Sequence[Sequence[str]], speakers: Sequence[Sequence[str] | None]
                      ) -> tuple[datasets.Dataset, list[int]]:
    """The system turns of ``dialogues`` as turn-level items, each after the turns before it (as the panel scores a
    dialogue), and how many each dialogue has."""
    turns = [dialogue_to_turns(d, s) for d, s in zip(dialogues, speakers)]
    flat = [turn for dialogue in turns for turn in dialogue]
    return datasets.Dataset.from_dict({"context": [c for c, _ in flat], "response": [r for _, r in flat],
                                       "condition": [None] * len(flat), "reference": [None] * len(flat)}), \
        [len(t) for t in turns]


class ReferenceDialogues:
    """A new panel's reference dialogues (:func:`reference_dialogues`) and its members' raw scores of them, each
    through the score cache: of every system turn by a member scoring turns, of every dialogue by one scoring whole
    dialogues."""

    def __init__(self, data_dir: str | os.PathLike | None, count: int) -> None:
        self.dialogues = reference_dialogues(data_dir, count)
        self.turns = {name: system_turn_items(dialogues, [None] * len(dialogues))
                      for name, dialogues in self.dialogues.items()}
        self.outputs: dict[bool, dict[str, dict[str, ScoreOutput]]] = {
            dialogue: {name: {} for name in self.dialogues} for dialogue in (False, True)}
        self.cache = ScoreCache()

    def score(self, member: str, metric: DialogueMetric, dialogue: bool, progress: bool = False) -> None:
        """Score the reference with ``metric``, the panel's ``member``: whole dialogues, or (not ``dialogue``) their
        system turns."""
        for name, dialogues in self.dialogues.items():
            items, cache_name = (dialogue_items(dialogues), f"{name}-dialogues") if dialogue \
                else (self.turns[name][0], f"{name}-turns")
            self.outputs[dialogue][name][member] = self.cache.scores(
                metric, items, cache_name, progress=progress and f"{member} on {cache_name}")[0]

    def config_fields(self) -> dict[str, Any]:
        """What :class:`PanelConfig` says of the reference."""
        return {"reference_dialogues": sum(len(d) for d in self.dialogues.values()),
                "reference_turns": sum(len(items) for items, _ in self.turns.values()),
                "dialogue_reference": " and ".join(f"{len(dialogues)} dialogues of {name}"
                                                   for name, dialogues in self.dialogues.items())}

    def rows(self, config: PanelConfig) -> tuple[list[list[float]], list[int], list[list[float]]]:
        """The arguments of :meth:`PanelModel.set_dialogue_reference`: every system turn's raw scores in the order of
        ``config.features``, the index of its dialogue, and every dialogue's in the order of
        ``config.dialogue_features``."""
        turn_features, turn_dialogue, dialogue_features = [], [], []
        for name, dialogues in self.dialogues.items():
            items, counts = self.turns[name]
            first = len(dialogue_features)
            turn_features += feature_rows(config.features, self.outputs[False][name], len(items))
            turn_dialogue += [first + index for index, count in enumerate(counts) for _ in range(count)]
            dialogue_features += feature_rows(config.dialogue_features, self.outputs[True][name], len(dialogues))
        return turn_features, turn_dialogue, dialogue_features
