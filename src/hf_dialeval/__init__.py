"""hf-dialeval: learned dialogue-evaluation metrics, the Hugging Face way.

``import hf_dialeval`` is fast: the public names load on first use, and every metric's model is registered
with transformers' ``AutoConfig``/``AutoModel`` as soon as those are imported (see :mod:`.registration`), so
``AutoModel.from_pretrained`` loads hf-dialeval checkpoints without ``trust_remote_code``.
"""

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.registry import metric_exports
from hf_dialeval.modeling.registration import register_when_transformers_loads

__version__ = "0.1.0"

_EXPORTS = {
    "BENCHMARKS": ".data.benchmarks", "human_dimensions": ".data.benchmarks", "load_benchmark": ".data.benchmarks",
    "load_dailydialog": ".data.corpora", "load_dailydialog_plusplus": ".data.corpora",
    "DialEvalError": ".errors", "DialogueValidationError": ".data.model",
    "CheckpointError": ".modeling.checkpoints",
    "DialEvalConfig": ".modeling.configuration", "DialEvalPreTrainedModel": ".modeling.base",
    "DialEvalOutput": ".modeling.base", "load_checkpoint": ".modeling.loading",
    "evaluate_module": ".evaluate_modules",
    "correlate": ".evaluation.statistics", "format_markdown": ".evaluation.meta_evaluation",
    "meta_evaluate": ".evaluation.meta_evaluation",
    "DialogueMetric": ".inference.metric", "ScoreOutput": ".inference.score_output",
    "load_metric": ".inference.factory",
    "METRICS": ".registry", "metric_names": ".registry",
    # every registered metric's classes (its metric, config and model), named by its entry
    **metric_exports(),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)

register_when_transformers_loads()
