"""The metric template: :class:`DialogueMetric`, the base class of every metric, and the helpers its scoring uses.

A metric implements the level it was designed for (``_score_dialogues`` or ``_score_turns``); the base
class makes the levels meet:

* a dialogue-level metric scores a turn-level item as the dialogue ``context + [response]``;
* a turn-level metric scores a dialogue by the mean of its scores over the system's turns, each scored with
  its preceding context (the mean aggregation the FineD-Eval paper uses for turn-level baselines).

Empty text (see :mod:`hf_dialeval.data.model`): an empty response, and a dialogue whose system utterances are all
empty, get the metric's :attr:`DialogueMetric.lowest_score` without running the model (a system that did not
reply gave the worst reply there is, and no model was trained to read nothing); an empty utterance elsewhere
stays in place and the model reads the item as it is. ``ScoreOutput.empty`` marks every item holding empty text.

A score of ``nan`` means "does not apply to this item" (context coherence without a context). A model output that is
not a finite number (a damaged checkpoint, a precision too low for the model) is not a score but an error: each
metric checks its model's raw outputs with :func:`check_finite`, where they are still apart from the scores that do
not apply (and before a clamp or Dial-M's lowest score could hide them), and :class:`NonFiniteOutputError` names the
items by their places in the input.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from hf_dialeval.data.model import (
    DialogueValidationError,
    dialogue_to_turns,
    has_empty_text,
    is_blank,
    item_level,
    item_list,
    system_turn_indices,
    turn_to_dialogue,
    validate_items,
)
from hf_dialeval.errors import DialEvalError
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.inference.signature import checkpoint_identity, scoring_signature

if TYPE_CHECKING:
    import datasets

#: How to fix a model whose output is not a finite number.
NON_FINITE_FIX = "its weights may be damaged: `hf-dialeval models verify`; or the precision is too low: --dtype fp32"
#: Items a :class:`NonFiniteOutputError` names at most (a damaged model fails every item).
SHOWN_ITEMS = 10


class NonFiniteOutputError(DialEvalError, ValueError):
    """The model of ``metric`` (``checkpoint``, computing in ``dtype``) gave an output that is not a finite number
    (nan, ±inf) for ``items``: their places, as the caller of the method that raised it numbers them."""

    def __init__(self, metric: str, items: Sequence[int], checkpoint: str, dtype: str) -> None:
        self.metric, self.items, self.checkpoint, self.dtype = metric, sorted(set(items)), checkpoint, dtype
        shown = ", ".join(str(item) for item in self.items[:SHOWN_ITEMS])
        more = len(self.items) - SHOWN_ITEMS
        super().__init__(
            f"{metric}: the model's output for item{'s' if len(self.items) > 1 else ''} {shown}"
            f"{f' and {more} more' if more > 0 else ''} is not a finite number (nan or inf; checkpoint {checkpoint}, "
            f"dtype {dtype}): {NON_FINITE_FIX}")

    def renumbered(self, places: Sequence[int]) -> NonFiniteOutputError:
        """The same error with item ``i`` named ``places[i]``."""
        return NonFiniteOutputError(self.metric, [places[item] for item in self.items], self.checkpoint, self.dtype)


def check_finite(values: Sequence[float | Sequence[float]], metric: str, checkpoint: str, dtype: str) -> None:
    """Raise :class:`NonFiniteOutputError` naming the items whose model output is not a finite number. ``values``:
    per item, the model's output (a number) or outputs (a list, empty for an item the model did not read); never a
    score, which is ``nan`` where it does not apply."""
    failed = [item for item, value in enumerate(values)
              if not all(math.isfinite(number) for number in (value if isinstance(value, Sequence) else (value,)))]
    if failed:
        raise NonFiniteOutputError(metric, failed, checkpoint, dtype)


@contextlib.contextmanager
def numbered_as(places: Sequence[int]) -> Iterator[None]:
    """Inside, items are numbered by their position in ``places``: a :class:`NonFiniteOutputError` raised there
    leaves naming them by their ``places``."""
    try:
        yield
    except NonFiniteOutputError as error:
        raise error.renumbered(places) from None


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices in batches of similar length, longest first (little padding; an out-of-memory shows early).
    Callers put the results back at these indices, so the output keeps the input's order."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


class DialogueMetric(abc.ABC):
    """Base class of every metric. Subclasses set ``name``, ``level``, ``dimensions`` and ``lowest_score`` and
    implement ``_score_dialogues`` (dialogue-level metrics) or ``_score_turns`` (turn-level metrics)."""

    name: ClassVar[str]
    level: ClassVar[str]
    dimensions: tuple[str, ...]
    #: The score, in every dimension, of an empty response (and of a dialogue whose system said nothing).
    lowest_score: float
    #: Items handed to the native scorer at a time: big enough for good length sorting, small enough for
    #: a progress bar that moves.
    chunk_size: ClassVar[int] = 512
    #: Whether a turn-level item needs at least one context utterance (a dialogue: at least two utterances).
    needs_context: ClassVar[bool] = False
    #: Whether a turn-level item needs a reference response (a reference-assisted metric such as RADE).
    needs_reference: ClassVar[bool] = False
    #: Whether the metric also scores systems as a whole (:meth:`system_level_scores`), from all their items.
    system_level: ClassVar[bool] = False

    #: The checkpoint as the user named it (Hub id or path); ``None`` for the metric's shipped default.
    checkpoint: str | None = None
    #: The ``PreTrainedModel``s the metric runs (none for a floor without a model).
    models: Sequence[Any] = ()

    @classmethod
    def load(cls, checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | None = None, **options: Any) -> DialogueMetric:
        """The metric's factory (what :func:`~hf_dialeval.inference.factory.load_metric` calls). A metric without a
        model is built as is: no device, batch size or precision changes what it computes; a model metric loads
        ``checkpoint`` (:class:`~hf_dialeval.inference.model_metric.ModelMetric`)."""
        return cls(**options)

    def _score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None]) -> ScoreOutput:
        turns = [dialogue_to_turns(d, s) for d, s in zip(dialogues, speakers)]
        flat = [turn for dialogue_turns in turns for turn in dialogue_turns]
        with numbered_as([index for index, dialogue_turns in enumerate(turns) for _ in dialogue_turns]):
            output = self._score_answered_turns([c for c, _ in flat], [r for _, r in flat], [None] * len(flat),
                                                [None] * len(flat))
        return _mean_per_group(output, [len(t) for t in turns])

    def _score_turns(
        self, contexts: list[list[str]], responses: list[str], conditions: list[str | None], references: list[str | None]
    ) -> ScoreOutput:
        dialogues = [turn_to_dialogue(c, r) for c, r in zip(contexts, responses)]
        return self._score_dialogues(dialogues, [None] * len(dialogues))

    def _score_answered_turns(
        self, contexts: list[list[str]], responses: list[str], conditions: list[str | None], references: list[str | None]
    ) -> ScoreOutput:
        """:meth:`_score_turns` for the turns with a response; :attr:`lowest_score` for those without."""
        answered = [i for i, response in enumerate(responses) if not is_blank(response)]
        scored = None
        if answered:
            subset = [[column[i] for i in answered] for column in (contexts, responses, conditions, references)]
            with numbered_as(answered):
                scored = self._score_turns(*subset)
        return self._fill_lowest(len(responses), answered, scored)

    def _score_answered_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None]) -> ScoreOutput:
        """:meth:`_score_dialogues` for the dialogues in which the system said something; :attr:`lowest_score`
        for those whose system utterances are all empty."""
        answered = [i for i, (dialogue, who) in enumerate(zip(dialogues, speakers))
                    if not all(is_blank(dialogue[t]) for t in system_turn_indices(len(dialogue), who))]
        scored = None
        if answered:
            with numbered_as(answered):
                scored = self._score_dialogues([dialogues[i] for i in answered], [speakers[i] for i in answered])
        return self._fill_lowest(len(dialogues), answered, scored)

    def _fill_lowest(self, size: int, scored_indices: list[int], scored: ScoreOutput | None) -> ScoreOutput:
        if len(scored_indices) == size and scored is not None:
            return scored
        scores = {d: [self.lowest_score] * size for d in self.dimensions}
        overall, truncated = [self.lowest_score] * size, [False] * size
        details: dict[str, list[Any]] = {name: [None] * size for name in (scored.details if scored else {})}
        if scored is not None:
            for position, index in enumerate(scored_indices):
                for dimension in scores:
                    scores[dimension][index] = scored.scores[dimension][position]
                overall[index] = scored.overall[position]
                truncated[index] = scored.truncated[position]
                for name in details:
                    details[name][index] = scored.details[name][position]
        return ScoreOutput(scores, overall, truncated, details=details)

    def score_dialogues(
        self, dialogues: Sequence[Sequence[str]], speakers: Sequence[Sequence[str] | None] | None = None,
        progress: bool | str = False,
    ) -> ScoreOutput:
        """Score dialogue-level items: each a list of utterances, with optional speakers per utterance."""
        dialogues = item_list(dialogues, "dialogues")
        speakers = None if speakers is None else item_list(speakers, "speakers")
        check_lengths(len(dialogues), "dialogues", speakers=speakers)
        speakers = speakers if speakers is not None else [None] * len(dialogues)
        return self.score_items([{"dialogue": d, "speakers": s} for d, s in zip(dialogues, speakers)], progress)

    def score_turns(
        self, contexts: Sequence[Sequence[str]], responses: Sequence[str],
        conditions: Sequence[str | None] | None = None, references: Sequence[str | None] | None = None,
        progress: bool | str = False,
    ) -> ScoreOutput:
        """Score turn-level items: a context (list of utterances) and a response, optionally a condition
        (persona, knowledge) and a reference response."""
        contexts, responses = item_list(contexts, "contexts"), item_list(responses, "responses")
        conditions = None if conditions is None else item_list(conditions, "conditions")
        references = None if references is None else item_list(references, "references")
        check_lengths(len(responses), "responses", contexts=contexts, conditions=conditions, references=references)
        n = len(responses)
        conditions = conditions if conditions is not None else [None] * n
        references = references if references is not None else [None] * n
        items = [{"context": c, "response": r, "condition": k, "reference": f}
                 for c, r, k, f in zip(contexts, responses, conditions, references)]
        return self.score_items(items, progress)

    def score_items(self, items: Sequence[Mapping[str, Any]], progress: bool | str = False) -> ScoreOutput:
        """Score items of the data model (all dialogue-level or all turn-level), validated first. ``progress``:
        show a progress bar, labelled with the metric's name or, given a string, with that."""
        if items:
            self.check_items(items, item_level(items[0]))
        return self.score_checked_items(items, progress)

    def score_checked_items(self, items: Sequence[Mapping[str, Any]], progress: bool | str = False) -> ScoreOutput:
        """:meth:`score_items` of items :meth:`check_items` passed already, for a caller that checked them where
        they came in (an evaluate module, before evaluate cast them)."""
        if not items:
            return ScoreOutput({d: [] for d in self.dimensions}, [], [], [], self.signature(0, 0, 0),
                               unavailable=self.unavailable_scores())
        from tqdm.auto import tqdm

        level = item_level(items[0])
        parts = []
        with tqdm(total=len(items), unit="item", desc=progress if isinstance(progress, str) else self.name,
                  disable=not progress) as bar:
            for start in range(0, len(items), self.chunk_size):
                parts.append(self.score_chunk(items[start : start + self.chunk_size], level, start))
                bar.update(len(parts[-1]))
        output = ScoreOutput.concatenate(parts)
        output.system_scores = self.system_level_scores(items, output)
        output.unavailable = self.unavailable_scores()
        output.signature = self.signature(len(output), sum(output.truncated), sum(output.empty))
        return output

    def score_chunk(self, items: Sequence[Mapping[str, Any]], level: str, first_index: int = 0) -> ScoreOutput:
        """The item-level scores and flags of items :meth:`check_items` passed, scored together (length-sorted
        batches within them): what :meth:`score_items` runs per :attr:`chunk_size` items and ``hf-dialeval score``
        per chunk it reads. No system scores or signature: a caller that scores in chunks adds those once. A model
        output that is not a finite number raises :class:`NonFiniteOutputError`, naming the items by their places
        counted from ``first_index`` (a chunk's first item's place in the whole input)."""
        with numbered_as(range(first_index, first_index + len(items))):
            if level == "dialogue":
                output = self._score_answered_dialogues(
                    [list(i["dialogue"]) for i in items],
                    [list(i["speakers"]) if i.get("speakers") else None for i in items])
            else:
                output = self._score_answered_turns(
                    [list(i["context"]) for i in items], [i["response"] for i in items],
                    [_text_or_none(i.get("condition")) for i in items],
                    [_text_or_none(i.get("reference")) for i in items])
        output.empty = [has_empty_text(item) for item in items]
        return output

    @classmethod
    def check_items(cls, items: Sequence[Mapping[str, Any]], level: str, first_index: int = 0) -> None:
        """Raise :class:`DialogueValidationError` for the first item this metric cannot score (the data model's
        errors, a missing context or reference), naming it by its place counted from ``first_index``. A class
        method: what a metric requires of its items is known before its model loads."""
        validate_items(items, level, first_index)
        if cls.needs_context:
            cls._check_contexts(items, level, first_index)
        if cls.needs_reference:
            cls._check_references(items, level, first_index)

    def system_level_scores(self, items: Sequence[Mapping[str, Any]], output: ScoreOutput) -> dict[str, dict[str, float]]:
        """Scores of each system as a whole (see :attr:`ScoreOutput.system_scores`); none by default."""
        return {}

    def unavailable_scores(self) -> dict[str, str]:
        """Scores this metric gives only with an option it was not given, and how to get each (see
        :attr:`ScoreOutput.unavailable`); none by default."""
        return {}

    def signature(self, items: int, truncated: int, empty: int) -> dict[str, Any]:
        """The reproducibility record of a scoring run (see :func:`hf_dialeval.inference.signature.scoring_signature`)."""
        return scoring_signature(self.name, self.checkpoint_identity, self.settings(), items, truncated, empty)

    @functools.cached_property
    def checkpoint_identity(self) -> dict[str, Any]:
        """How to find this metric's weights again (a local folder's content hash is taken once, on first use)."""
        from hf_dialeval.registry import METRICS

        revision = getattr(self.models[0].config, "_commit_hash", None) if self.models else None
        spec = METRICS.get(self.name)
        return checkpoint_identity(self.checkpoint, revision, spec.default if spec is not None else None)

    def settings(self) -> dict[str, Any]:
        """What changes this metric's scores besides its checkpoint (model metrics: dtype, device, token limit)."""
        return {}

    @classmethod
    def _check_contexts(cls, items: Sequence[Mapping[str, Any]], level: str, first_index: int) -> None:
        """For a metric that compares a response with the utterance before it: every turn has one."""
        for index, item in enumerate(items, start=first_index):
            if level == "turn" and not item["context"]:
                raise DialogueValidationError(
                    f"item {index}, field 'context': the context is empty, and {cls.name} scores a response "
                    "against its context. Give at least one context utterance.")
            if level == "dialogue" and min(system_turn_indices(len(item["dialogue"]), item.get("speakers"))) == 0:
                raise DialogueValidationError(
                    f"item {index}, field 'dialogue': a system utterance opens the dialogue (or it is the only one), "
                    f"and {cls.name} scores each system utterance against the ones before it. Give the user's "
                    "opening utterance, or drop the system's.")

    @classmethod
    def _check_references(cls, items: Sequence[Mapping[str, Any]], level: str, first_index: int) -> None:
        """For a reference-assisted metric: every item is a turn with a reference that has text."""
        if level == "dialogue":
            raise DialogueValidationError(
                f"item {first_index}, field 'dialogue': {cls.name} scores a response against a reference response, "
                "which a dialogue-level item lacks. Give turn-level items with 'context', 'response' and 'reference'.")
        for index, item in enumerate(items, start=first_index):
            if _text_or_none(item.get("reference")) is None:
                problem = "the reference is empty" if item.get("reference") is not None else "the item has no reference"
                raise DialogueValidationError(
                    f"item {index}, field 'reference': {problem}, and {cls.name} scores a response against a "
                    "reference response. Give each item its 'reference' (e.g. the human response of the original "
                    "dialogue).")

    def score_dataset(self, dataset: datasets.Dataset, progress: bool | str = False) -> ScoreOutput:
        """Score every row of a dataset with the data model's columns (e.g. a loaded benchmark)."""
        return self.score_items(list(dataset), progress)


def _text_or_none(text: str | None) -> str | None:
    """An empty condition or reference means none."""
    return None if text is None or is_blank(text) else text


def check_lengths(expected: int, name: str, **columns: Sequence[Any] | None) -> None:
    """Every list argument holds one entry per item."""
    for column, values in columns.items():
        if values is not None and len(values) != expected:
            raise DialogueValidationError(
                f"'{column}' has {len(values)} entries for {expected} {name}: give one per item"
                + ("" if column == "contexts" else " (None for an item without one), or leave it out"))


def _mean_per_group(output: ScoreOutput, group_sizes: Sequence[int]) -> ScoreOutput:
    def grouped_mean(values: Sequence[float]) -> list[float]:
        means, start = [], 0
        for size in group_sizes:
            means.append(sum(values[start : start + size]) / size if size else math.nan)
            start += size
        return means

    truncated, start = [], 0
    for size in group_sizes:
        truncated.append(any(output.truncated[start : start + size]))
        start += size
    return ScoreOutput({d: grouped_mean(v) for d, v in output.scores.items()}, grouped_mean(output.overall), truncated)
