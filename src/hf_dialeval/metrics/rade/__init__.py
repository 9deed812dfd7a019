"""RADE (Shi et al., ACL 2023): reference-assisted dialogue evaluation with an encoder–decoder, trained in two
stages (cross-domain pre-training, task-specific fine-tuning).

Its config and model are registered with ``AutoConfig``/``AutoModel`` by :mod:`hf_dialeval.modeling.registration`;
the ``rade`` metric, its ``hf-dialeval train rade`` command and its exporter are entries of the one registry,
:mod:`hf_dialeval.registry`.
"""

from hf_dialeval.lazy import lazy_attributes

_EXPORTS = {
    "RADEConfig": "configuration_rade",
    "RADEModel": "modeling_rade", "RADEOutput": "modeling_rade",
    "RADETrainer": "trainer", "rade_loss": "trainer",
    "RADEMetric": "scoring", "load_rade": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
