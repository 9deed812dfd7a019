"""A metric made of metrics: :class:`CompositeMetric` scores items with its members (registered metrics, loaded by
name) and combines their outputs item by item. Each member scores each item once, through the same path as when it
scores alone, so a benchmark's member scores can come from the score cache
(:class:`~hf_dialeval.inference.score_cache.ScoreCache` scores a composite's members there first)."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

from hf_dialeval.data.model import is_blank
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import ScoreOutput


class CompositeMetric(DialogueMetric):
    """A turn-level metric whose scores are a function of its members' scores of the same item (never of other
    items). Subclasses set :attr:`members` and implement :meth:`combine`."""

    #: The members by name, each a loaded metric.
    members: Mapping[str, DialogueMetric]

    @property
    def batch_size(self) -> int:
        """Items per forward pass of each member (setting it sets theirs)."""
        return min((getattr(member, "batch_size", 32) for member in self.members.values()), default=32)

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        for member in self.members.values():
            if hasattr(member, "batch_size"):
                member.batch_size = value

    @abc.abstractmethod
    def combine(self, outputs: Mapping[str, ScoreOutput]) -> ScoreOutput:
        """The composite's scores of items from its members' ``outputs`` of the same items (flags included)."""

    def combine_items(self, items: Sequence[Mapping[str, Any]], outputs: Mapping[str, ScoreOutput]) -> ScoreOutput:
        """:meth:`combine` of the members' outputs of ``items``, an item without a response given
        :attr:`lowest_score` as when the composite scores it itself."""
        output = self.combine(outputs)
        for index, item in enumerate(items):
            if is_blank(item["response"]):
                for values in (output.overall, *output.scores.values()):
                    values[index] = self.lowest_score
        return output

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        return self.combine({name: member.score_turns(contexts, responses, conditions, references)
                             for name, member in self.members.items()})

    def settings(self) -> dict[str, Any]:
        """Each member's signature without its counts: a member that changes changes the composite's scores."""
        settings = {}
        for name, member in self.members.items():
            signature = member.signature(0, 0, 0)
            for count in ("items", "truncated", "empty"):
                signature.pop(count, None)
            settings[name] = signature
        precisions = {name: signature["dtype"] for name, signature in settings.items() if "dtype" in signature}
        # the precision its models compute in: one name where the members agree, else each member's
        dtype = next(iter(precisions.values())) if len(set(precisions.values())) == 1 else precisions
        return {"dtype": dtype, "members": settings}
