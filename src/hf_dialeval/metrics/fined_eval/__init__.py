"""FineD-Eval (Zhang et al., EMNLP 2022): fine-grained dialogue-level evaluation by pairwise ranking.

Its config and model are registered with ``AutoConfig``/``AutoModel`` by :mod:`hf_dialeval.modeling.registration`;
the ``fined-eval`` metric, its ``hf-dialeval train fined-eval`` command and its exporter are entries of the
one registry, :mod:`hf_dialeval.registry`.
"""

from hf_dialeval.lazy import lazy_attributes

_EXPORTS = {
    "FINED_EVAL_DIMENSIONS": "constants", "FineDEvalConfig": "configuration_fined_eval",
    "FineDEvalModel": "modeling_fined_eval",
    "add_utterance_token": "modeling_fined_eval", "encode_dialogues": "modeling_fined_eval",
    "FineDEvalMetric": "scoring", "load_fined_eval_model": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
