"""hf-dialeval: learned dialogue-evaluation metrics, the Hugging Face way.

``import hf_dialeval`` is fast: the public names load on first use, and every metric's model is registered
with transformers' ``AutoConfig``/``AutoModel`` as soon as those are imported (see :mod:`.registration`), so
``AutoModel.from_pretrained`` loads hf-dialeval checkpoints without ``trust_remote_code``.
"""

from .lazy import lazy_attributes
from .registration import register_when_transformers_loads

__version__ = "0.1.0"

_EXPORTS = {
    "BENCHMARKS": "benchmarks", "human_dimensions": "benchmarks", "load_benchmark": "benchmarks",
    "load_dailydialog": "corpora", "load_dailydialog_plusplus": "corpora",
    "DialogueValidationError": "data",
    "CheckpointError": "checkpoints",
    "DialEvalConfig": "configuration_utils", "DialEvalPreTrainedModel": "modeling_utils", "DialEvalOutput": "modeling_utils",
    "load_checkpoint": "loading",
    "evaluate_module": "evaluate_base",
    "FineDEvalConfig": "fined_eval", "FineDEvalModel": "fined_eval",
    "QuantiDCEConfig": "quantidce", "QuantiDCEModel": "quantidce",
    "RADEConfig": "rade", "RADEModel": "rade",
    "LengthMetric": "length",
    "SimilarityMetric": "similarity", "ReferenceSimilarityMetric": "similarity",
    "correlate": "meta_eval", "format_markdown": "meta_eval", "meta_evaluate": "meta_eval",
    "DialogueMetric": "scoring", "ScoreOutput": "scoring", "load_metric": "scoring",
    "METRICS": "registry", "metric_names": "registry",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)

register_when_transformers_loads()
