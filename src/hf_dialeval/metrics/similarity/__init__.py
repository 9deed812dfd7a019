"""The similarity floors, untrained: ``similarity``, the cosine of sentence embeddings of the last context utterance
and the response, and ``reference-similarity``, the cosine of the response with its reference (the floor of
reference-assisted metrics). A learned metric that does not clearly beat them has learned nothing. This module is
their registry entries."""

from __future__ import annotations

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.modeling.checkpoints import MINILM_HUB_ID
from hf_dialeval.registry import MetricEntry


def _similarity() -> type:
    from hf_dialeval.metrics.similarity.scoring import SimilarityMetric

    return SimilarityMetric


def _reference_similarity() -> type:
    from hf_dialeval.metrics.similarity.scoring import ReferenceSimilarityMetric

    return ReferenceSimilarityMetric


ENTRIES = (
    MetricEntry("similarity", "turn", "floor: cosine of the last context utterance and the response",
                metric=_similarity, default=MINILM_HUB_ID),
    MetricEntry("reference-similarity", "turn", "floor: cosine of the response and its reference",
                metric=_reference_similarity, default=MINILM_HUB_ID),
)

#: The package's public names, each imported from its module on first use.
_EXPORTS = {"SimilarityMetric": "scoring", "ReferenceSimilarityMetric": "scoring"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
