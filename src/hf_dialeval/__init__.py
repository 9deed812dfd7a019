"""hf-dialeval: learned dialogue-evaluation metrics, the Hugging Face way.

``import hf_dialeval`` is fast: the public names load on first use, and every metric's model is registered
with transformers' ``AutoConfig``/``AutoModel`` as soon as those are imported (see :mod:`.registration`), so
``AutoModel.from_pretrained`` loads hf-dialeval checkpoints without ``trust_remote_code``.
"""

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.modeling.registration import register_when_transformers_loads

__version__ = "0.1.0"

_EXPORTS = {
    "BENCHMARKS": "data.benchmarks", "human_dimensions": "data.benchmarks", "load_benchmark": "data.benchmarks",
    "load_dailydialog": "data.corpora", "load_dailydialog_plusplus": "data.corpora",
    "DialogueValidationError": "data.model",
    "CheckpointError": "modeling.checkpoints",
    "DialEvalConfig": "modeling.configuration", "DialEvalPreTrainedModel": "modeling.base", "DialEvalOutput": "modeling.base",
    "load_checkpoint": "modeling.loading",
    "evaluate_module": "evaluate_modules",
    "FineDEvalConfig": "metrics.fined_eval.configuration_fined_eval",
    "FineDEvalModel": "metrics.fined_eval.modeling_fined_eval",
    "QuantiDCEConfig": "metrics.quantidce.configuration_quantidce",
    "QuantiDCEModel": "metrics.quantidce.modeling_quantidce",
    "RADEConfig": "metrics.rade.configuration_rade", "RADEModel": "metrics.rade.modeling_rade",
    "HolisticEvalConfig": "metrics.holistic_eval.configuration_holistic_eval",
    "HolisticEvalModel": "metrics.holistic_eval.modeling_holistic_eval",
    "DialMConfig": "metrics.dial_m.configuration_dial_m", "DialMModel": "metrics.dial_m.modeling_dial_m",
    "LengthMetric": "metrics.length.scoring",
    "SimilarityMetric": "metrics.similarity.scoring", "ReferenceSimilarityMetric": "metrics.similarity.scoring",
    "correlate": "evaluation.statistics", "format_markdown": "evaluation.statistics", "meta_evaluate": "evaluation.statistics",
    "DialogueMetric": "inference.metric", "ScoreOutput": "inference.metric", "load_metric": "inference.metric",
    "METRICS": "registry", "metric_names": "registry",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)

register_when_transformers_loads()
