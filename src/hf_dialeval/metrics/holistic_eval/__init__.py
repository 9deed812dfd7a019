"""HolisticEval (Pang et al., ACL 2020): context coherence and fluency from a fine-tuned causal language model with
percentile normalisation, n-gram diversity over response groups, and NLI-based logical self-consistency.

Its config and model are registered with ``AutoConfig``/``AutoModel`` by :mod:`hf_dialeval.modeling.registration`; the
``holistic-eval`` metric, its ``hf-dialeval train holistic-eval`` command and its exporter are entries of the one
registry, :mod:`hf_dialeval.registry`.
"""

from hf_dialeval.lazy import lazy_attributes

_EXPORTS = {
    "HolisticEvalConfig": "configuration_holistic_eval",
    "HolisticEvalModel": "modeling_holistic_eval",
    "HolisticEvalMetric": "scoring", "load_holistic_eval": "scoring", "fit_cutoffs": "scoring",
    "language_model_perplexity": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
