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
    """

    model_type = "dialeval-panel"

    def __init__(self, members: Sequence[Mapping[str, Any]] = (), quantile_count: int = 257, reference: str = "",
                 dialogue_members: Sequence[Mapping[str, Any]] = (), dialogue_reference: str = "",
                 reference_dialogues: int = 0, reference_turns: int = 0, **kwargs: Any) -> None:
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


def member_config(member: Mapping[str, Any]) -> dict[str, Any]:
    """A member's record as the config stores it."""
    return {"metric": str(member["metric"]), "checkpoint": member.get("checkpoint"),
            "identity": member.get("identity"), "dimensions": [str(d) for d in member["dimensions"]]}


def member_features(members: Sequence[Mapping[str, Any]]) -> list[str]:
    return [feature_name(member["metric"], dimension) for member in members for dimension in member["dimensions"]]


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
