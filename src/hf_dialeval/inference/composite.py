"""A metric made of metrics: :class:`CompositeMetric` scores items with its members (registered metrics, loaded by
name) and combines their outputs item by item. Each member scores each item once, through the same path as when it
scores alone, so a benchmark's member scores can come from the score cache
(:class:`~hf_dialeval.inference.score_cache.ScoreCache` scores a composite's members there first).

Members are loaded one at a time, each when it scores, the one loaded before it freed first and its memory handed
back to the system (:func:`~hf_dialeval.freed_memory.trim_freed_memory`): a composite takes the memory of one member
at a time, not of all of them together (with all three loaded, the panel's adapt route on FED peaked at 4.7 GB). The
member loaded last stays loaded and scores first in the next call; the others load again: on GRADE-ConvAI2's 600
short turns, a fifth of the panel's time (``benchmarks/panel/README.md``). Through the score cache a member whose
scores it holds is not loaded at all, and a command scoring many sets (a checklist's perturbations, a leaderboard's
benchmarks) has each member score all of them first, loaded once
(:meth:`~hf_dialeval.inference.score_cache.ScoreCache.fill`)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from hf_dialeval.data.model import is_blank
from hf_dialeval.freed_memory import trim_freed_memory
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import ScoreOutput

#: What loads a member, called as ``load(batch_size=N)`` (items per forward pass): the member, its weights checked.
MemberLoader = Callable[..., DialogueMetric]
#: What a callback run on each member returns.
Output = TypeVar("Output")


class CompositeMetric(DialogueMetric):
    """A turn-level metric whose scores are a function of its members' scores of the same item (never of other
    items). Subclasses call ``CompositeMetric.__init__`` with their members' loaders and implement :meth:`combine`;
    one that also reads members scoring a whole dialogue gives their loaders as ``dialogue_member_loaders`` and
    scores dialogues itself (``_score_dialogues``)."""

    def __init__(self, member_loaders: Mapping[str, MemberLoader], batch_size: int = 32,
                 dialogue_member_loaders: Mapping[str, MemberLoader] | None = None) -> None:
        #: Per member name, what loads it: the members that score every item (a turn, or each system turn of a
        #: dialogue), whose scores the score cache keeps per benchmark.
        self.member_loaders = dict(member_loaders)
        #: Per name, what loads a member that scores only whole dialogues.
        self.dialogue_member_loaders = dict(dialogue_member_loaders or {})
        #: Items per forward pass of each member.
        self.batch_size = batch_size
        self._loaded: tuple[str, DialogueMetric] | None = None
        # each member loaded once now: a member that cannot load fails here, before any scoring, and its signature
        # (what the composite's signature holds) is kept
        self.member_settings = {name: member_settings(self._member(name)) for name in self.all_member_loaders}

    @property
    def all_member_loaders(self) -> dict[str, MemberLoader]:
        """Every member's loader, those scoring turns first."""
        return {**self.member_loaders, **self.dialogue_member_loaders}

    def _member(self, name: str) -> DialogueMetric:
        """Member ``name``, loaded unless it is the one still loaded (which is freed first when it is another)."""
        if self._loaded is None or self._loaded[0] != name:
            self.release()
            self._loaded = (name, self.all_member_loaders[name](batch_size=self.batch_size))
        member = self._loaded[1]
        if hasattr(member, "batch_size"):
            member.batch_size = self.batch_size
        return member

    def release(self) -> None:
        """Free the member still loaded (the next call loads it again), its memory handed back to the system."""
        if self._loaded is not None:
            self._loaded = None
            trim_freed_memory()

    def member_outputs(self, score: Callable[[DialogueMetric], Output],
                       names: Sequence[str] | None = None) -> dict[str, Output]:
        """``score(member)`` of every member scoring turns (or of those ``names``, of either kind), in the composite's
        order; they load in that order too but for the member still loaded, which goes first."""
        names = list(self.member_loaders) if names is None else \
            [name for name in self.all_member_loaders if name in names]
        order = sorted(names, key=lambda name: self._loaded is None or self._loaded[0] != name)  # stable
        outputs = {name: score(self._member(name)) for name in order}
        return {name: outputs[name] for name in names}

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
        return self.combine(self.member_outputs(
            lambda member: member.score_turns(contexts, responses, conditions, references)))

    def settings(self) -> dict[str, Any]:
        """Each member's signature without its counts: a member that changes changes the composite's scores."""
        precisions = {name: signature["dtype"] for name, signature in self.member_settings.items()
                      if "dtype" in signature}
        # the precision its models compute in: one name where the members agree, else each member's
        dtype = next(iter(precisions.values())) if len(set(precisions.values())) == 1 else precisions
        return {"dtype": dtype, "members": dict(self.member_settings)}


def member_settings(member: DialogueMetric) -> dict[str, Any]:
    """``member``'s signature without its counts of items."""
    signature = member.signature(0, 0, 0)
    for count in ("items", "truncated", "empty"):
        signature.pop(count, None)
    return signature
