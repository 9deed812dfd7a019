"""QuantiDCE (Ye et al. 2021): multi-level ranking pre-training + knowledge-distillation fine-tuning of a
dialogue coherence metric.

Its config and model are registered with ``AutoConfig``/``AutoModel`` by :mod:`hf_dialeval.modeling.registration`;
the ``quantidce`` metric, its training commands and its exporter are entries of the
one registry, :mod:`hf_dialeval.registry`.
"""

from hf_dialeval.lazy import lazy_attributes

_EXPORTS = {
    "QuantiDCEConfig": "configuration_quantidce",
    "QuantiDCEModel": "modeling_quantidce",
    "QuantiDCEMetric": "scoring", "load_quantidce": "scoring",
    "DistillationTrainer": "trainer", "MultiLevelRankingTrainer": "trainer", "distillation_loss": "trainer",
    "multi_level_ranking_loss": "trainer",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
