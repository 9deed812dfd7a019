"""Configuration of the panel: a score combined from other registered metrics' scores (its members), each member
score normalised by an empirical CDF fitted once and stored with the weights, then averaged with learned weights."""

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
    """

    model_type = "dialeval-panel"

    def __init__(self, members: Sequence[Mapping[str, Any]] = (), quantile_count: int = 257, reference: str = "",
                 **kwargs: Any) -> None:
        self.members = [
            {"metric": str(member["metric"]), "checkpoint": member.get("checkpoint"),
             "identity": member.get("identity"), "dimensions": [str(d) for d in member["dimensions"]]}
            for member in members]
        if int(quantile_count) < 2:
            raise ValueError(f"quantile_count={quantile_count}: a CDF needs at least two knots")
        self.quantile_count = int(quantile_count)
        self.reference = reference
        super().__init__(**kwargs)

    @property
    def features(self) -> list[str]:
        """Every member score the panel reads, in the order of its weights."""
        return [feature_name(member["metric"], dimension) for member in self.members
                for dimension in member["dimensions"]]

    @property
    def member_names(self) -> list[str]:
        return [member["metric"] for member in self.members]


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
