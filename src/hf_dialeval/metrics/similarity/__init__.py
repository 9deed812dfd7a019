"""The similarity floors, untrained: ``similarity``, the cosine of sentence embeddings of the last context utterance
and the response, and ``reference-similarity``, the cosine of the response with its reference (the floor of
reference-assisted metrics). A learned metric that does not clearly beat them has learned nothing. This module is
their registry entries."""

from __future__ import annotations

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID
from hf_dialeval.registry import MetricEntry

SIMILARITY = MetricEntry("similarity", "turn", "floor: cosine of the last context utterance and the response",
                         package=__name__, metric=".scoring:SimilarityMetric", default=MINILM_HUB_ID)
REFERENCE_SIMILARITY = MetricEntry("reference-similarity", "turn", "floor: cosine of the response and its reference",
                                   package=__name__, metric=".scoring:ReferenceSimilarityMetric",
                                   default=MINILM_HUB_ID)
ENTRIES = (SIMILARITY, REFERENCE_SIMILARITY)

#: The package's public names: its entries' classes, each imported from its module on first use.
_EXPORTS = {**SIMILARITY.exports, **REFERENCE_SIMILARITY.exports}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
