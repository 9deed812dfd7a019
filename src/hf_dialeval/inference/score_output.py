"""What scoring returns: :class:`ScoreOutput`, a metric's scores of a list of items with their flags and signature,
and its serialisations (columns, per-item records, JSON).

A score of ``nan`` means "does not apply to this item" (context coherence without a context); JSON has no nan, so
:func:`json_ready` writes it as ``null`` and reading back gives ``nan`` again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_dialeval.errors import UnknownNameError

OVERALL = "overall"


@dataclass
class ScoreOutput:
    """Scores of a list of items: one list per dimension, the aggregate ``overall``, whether any of the
    item's text was cut to fit the model (``truncated``), whether the item holds an empty utterance or
    response (``empty``), the ``signature`` of the run (metric, checkpoint, versions, settings, counts), and
    ``system_scores`` for a metric that also scores systems as a whole (HolisticEval's n-gram diversity): system
    name (an item's ``system``, ``"all"`` for items without one) → score name → value. Higher is better for
    every score. ``details``: per-item facts a metric gives beside its scores when asked (Dial-M's keywords and
    their losses), one list per name."""

    scores: dict[str, list[float]]
    overall: list[float]
    truncated: list[bool] = field(default_factory=list)
    empty: list[bool] = field(default_factory=list)
    signature: dict[str, Any] | None = None
    system_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Scores the metric gives only with an option it was not given: score name → how to get it.
    unavailable: dict[str, str] = field(default_factory=dict)
    details: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.truncated:
            self.truncated = [False] * len(self.overall)
        if not self.empty:
            self.empty = [False] * len(self.overall)
        lengths = {len(self.overall), len(self.truncated), len(self.empty), *(len(v) for v in self.scores.values()),
                   *(len(v) for v in self.details.values())}
        if len(lengths) != 1:
            raise ValueError(f"score lists of unequal length: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.overall)

    def to_dict(self) -> dict[str, Any]:
        """The output as columns, its one serialisation of a whole run (what evaluate modules return, the score cache
        keeps and :meth:`from_dict` reads back): a list per dimension, ``overall``, ``truncated``, ``empty``,
        ``signature``, and ``system_scores`` / ``unavailable`` when there are any. Scores that do not apply are
        ``nan`` (:func:`json_ready` writes them as ``null``)."""
        columns = {**self.scores, OVERALL: self.overall, "truncated": self.truncated, "empty": self.empty,
                   "signature": self.signature}
        columns.update((key, value) for key, value in (("system_scores", self.system_scores),
                                                        ("unavailable", self.unavailable), ("details", self.details))
                       if value)
        return columns

    @classmethod
    def from_dict(cls, columns: Mapping[str, Any]) -> ScoreOutput:
        """The output :meth:`to_dict` wrote (``null`` read back as ``nan``)."""
        scores = {key: _numbers(values) for key, values in columns.items() if key not in SERIALISED_FIELDS}
        return cls(scores, _numbers(columns[OVERALL]), list(columns["truncated"]), list(columns["empty"]),
                   columns.get("signature"), dict(columns.get("system_scores") or {}),
                   dict(columns.get("unavailable") or {}), dict(columns.get("details") or {}))

    def records(self) -> list[dict[str, Any]]:
        """The same per item, for a line of ``hf-dialeval score``'s output (read back by :meth:`from_records`):
        ``{"scores": {dim: value}, "overall": value, "truncated": bool, "empty": bool}``, and ``details`` when there
        are any."""
        return [
            {"scores": {dim: values[i] for dim, values in self.scores.items()},
             OVERALL: self.overall[i], "truncated": self.truncated[i], "empty": self.empty[i],
             **({"details": {name: values[i] for name, values in self.details.items()}} if self.details else {})}
            for i in range(len(self))
        ]

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]], dimensions: Sequence[str]) -> ScoreOutput:
        """The output of the lines :meth:`records` wrote (``null`` read back as ``nan``)."""
        return cls({d: _numbers(record["scores"].get(d) for record in records) for d in dimensions},
                   _numbers(record[OVERALL] for record in records),
                   [bool(record.get("truncated")) for record in records],
                   [bool(record.get("empty")) for record in records])

    def select(self, key: str) -> list[float]:
        """The scores of one dimension, or the aggregate for ``"overall"``."""
        if key == OVERALL:
            return self.overall
        if key in self.unavailable:
            raise UnknownNameError(f"no {key!r} score without its option: {self.unavailable[key]}")
        if key not in self.scores:
            raise UnknownNameError(f"this metric has no score {key!r}; it has {[OVERALL, *self.scores]}")
        return self.scores[key]

    def tail(self, start: int) -> ScoreOutput:
        """The scores, flags and details of the items from ``start`` on."""
        return ScoreOutput({d: v[start:] for d, v in self.scores.items()}, self.overall[start:],
                           self.truncated[start:], self.empty[start:],
                           details={name: values[start:] for name, values in self.details.items()})

    @classmethod
    def concatenate(cls, parts: Sequence[ScoreOutput]) -> ScoreOutput:
        dims = parts[0].scores.keys() if parts else ()
        return cls(
            scores={d: [v for p in parts for v in p.scores[d]] for d in dims},
            overall=[v for p in parts for v in p.overall],
            truncated=[t for p in parts for t in p.truncated],
            empty=[e for p in parts for e in p.empty],
            details={name: [v for p in parts for v in p.details[name]] for name in (parts[0].details if parts else {})},
        )


#: The fields of :meth:`ScoreOutput.to_dict` that are not a dimension's scores.
SERIALISED_FIELDS = (OVERALL, "truncated", "empty", "signature", "system_scores", "unavailable", "details")


def _numbers(values: Iterable[float | None]) -> list[float]:
    return [math.nan if value is None else float(value) for value in values]


def json_ready(value: Any) -> Any:
    """``value`` with every nan (a score that does not apply to the item, e.g. context coherence without a
    context) as ``None``: JSON has no nan, and ``null`` is what other tools read."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: json_ready(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(inner) for inner in value]
    return value
