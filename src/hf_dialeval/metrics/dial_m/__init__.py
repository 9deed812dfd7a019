"""Dial-M (Dey & Desarkar, 2023): a masking-based reference-free dialogue metric. A masked LM pre-trained on dialogues
and fine-tuned to predict a response's keywords; the mean cross-entropy of each keyword, masked on its own given the
context and condition, is the (raw) score: lower is better.

Its config and model are registered with ``AutoConfig``/``AutoModel`` by :mod:`hf_dialeval.modeling.registration`; the
``dial-m`` metric, its ``hf-dialeval train dial-m-mlm`` / ``dial-m`` commands and its exporter are entries of the
one registry, :mod:`hf_dialeval.registry`.
"""

from hf_dialeval.lazy import lazy_attributes

_EXPORTS = {
    "DialMConfig": "configuration_dial_m",
    "DialMModel": "modeling_dial_m",
    "extract_keywords": "keywords",
    "DialMMetric": "scoring", "load_dial_m": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
