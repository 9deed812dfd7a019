"""Configuration of the panel: a score combined from other registered metrics' scores (its members), each member
score normalised by an empirical CDF fitted once and stored with the weights, then averaged with learned weights; at
dialogue level, optionally with members that score a whole dialogue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers import PretrainedConfig

from hf_dialeval.modeling.registration import register_available

#: Where a member score's name joins its metric's and its dimension's: ``quantidce.coherence``.
FEATURE_SEPARATOR = "."


def feature_name(metric: str, dimension: str) -> str:
    """The name of a member score: ``dial-m.overall``, ``holistic-eval.context_coherence``."""
    return f"{metric}{FEATURE_SEPARATOR}{dimension}"


class PanelConfig(PretrainedConfig):
    """What the panel combines and how its normalisation was fitted.

    Args:
        members: one mapping per member metric: ``metric`` (a registered metric's name), ``checkpoint`` (``None``:
            its shipped default), ``identity`` (the checkpoint's content hash when the panel was fitted, checked
            at load: a member whose weights changed would be normalised by another model's CDF) and
            ``dimensions`` (the member's scores the panel reads, ``overall`` included where wanted).
        quantile_count: knots of each member score's empirical CDF.
        reference: what the CDFs were fitted on, in words (the card and the signature repeat it).
        dialogue_members: members that score a whole dialogue, in the form of ``members``. A dialogue's score is then
            the equal-weight mean of the CDF values of the panel's mean score of its system turns and of each of
            these members' scores, the CDFs those of :attr:`dialogue_reference`'s dialogues (none: a dialogue
            scores the mean of its system turns' scores).
        dialogue_reference: the unrated dialogues the dialogue-level CDFs are fitted on, in words.
        reference_dialogues: how many they are (the checkpoint holds their members' raw scores).
        reference_turns: how many system turns they have.
        mark_down_only: member scores (of :attr:`features`) that can lower an item's score but never raise it: each
            counts at most at the weighted mean of the panel's other scores present. A score that rewards a long reply
            whatever it says (HolisticEval's ``diversity``) then marks a dull reply down without lifting a run-on one
            above what the other members make of it.
    """

    model_type = "dialeval-panel"

    def __init__(self, members: Sequence[Mapping[str, Any]] = (), quantile_count: int = 257, reference: str = "",
                 dialogue_members: Sequence[Mapping[str, Any]] = (), dialogue_reference: str = "",
                 reference_dialogues: int = 0, reference_turns: int = 0, mark_down_only: Sequence[str] = (),
                 **kwargs: Any) -> None:
        self.members = [member_config(member) for member in members]
        self.dialogue_members = [member_config(member) for member in dialogue_members]
        shared = set(self.member_names) & {member["metric"] for member in self.dialogue_members}
        if shared:
            raise ValueError(f"{sorted(shared)}: a member scores either turns or whole dialogues, not both")
        if int(quantile_count) < 2:
            raise ValueError(f"quantile_count={quantile_count}: a CDF needs at least two knots")
        self.quantile_count = int(quantile_count)
        self.reference = reference
        self.dialogue_reference = dialogue_reference
        self.reference_dialogues, self.reference_turns = int(reference_dialogues), int(reference_turns)
        self.mark_down_only = [str(feature) for feature in mark_down_only]
        problem = mark_down_only_problem(self.features, self.mark_down_only) if self.members else None
        if problem:
            raise ValueError(f"mark_down_only: {problem}")
        super().__init__(**kwargs)

    @property
    def features(self) -> list[str]:
        """Every member score the panel reads of a turn, in the order of its weights."""
        return member_features(self.members)

    @property
    def dialogue_features(self) -> list[str]:
        """Every member score the panel reads of a whole dialogue."""
        return member_features(self.dialogue_members)

    @property
    def member_names(self) -> list[str]:
        return [member["metric"] for member in self.members]

    @property
    def dialogue_member_names(self) -> list[str]:
        return [member["metric"] for member in self.dialogue_members]


def mark_down_only_problem(features: Sequence[str], mark_down_only: Sequence[str]) -> str | None:
    """What is wrong with ``mark_down_only`` as scores of a panel of ``features`` marking down only (``None``: nothing):
    each must be one of them, and at least one score must count in full."""
    stray = [feature for feature in mark_down_only if feature not in features]
    if stray:
        return f"{stray} are not among the panel's scores ({' '.join(features)})"
    if mark_down_only and set(features) <= set(mark_down_only):
        return "it names every score of the panel, each counting at most at the others' mean: leave at least one out"
    return None


def member_config(member: Mapping[str, Any]) -> dict[str, Any]:
    """A member's record as the config stores it."""
    return {"metric": str(member["metric"]), "checkpoint": member.get("checkpoint"),
            "identity": member.get("identity"), "dimensions": [str(d) for d in member["dimensions"]]}


def member_features(members: Sequence[Mapping[str, Any]]) -> list[str]:
    return [feature_name(member["metric"], dimension) for member in members for dimension in member["dimensions"]]


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
