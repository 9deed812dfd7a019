"""The ``length`` floor: mean words per system utterance. It needs no model, so the meta-evaluation runs end to end
before any learned metric exists, and every learned metric has a floor to beat. This module is its registry entry."""

from __future__ import annotations

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.registry import MetricEntry

ENTRY = MetricEntry("length", "dialogue", "floor: mean words per system utterance", package=__name__,
                    metric=".scoring:LengthMetric")

#: The package's public names: its entry's classes, each imported from its module on first use.
_EXPORTS = ENTRY.exports
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
