"""FineD-Eval (Zhang et al., EMNLP 2022): fine-grained dialogue-level evaluation by pairwise ranking.

Importing this package registers ``FineDEvalConfig``/``FineDEvalModel`` with ``AutoConfig``/``AutoModel``,
the ``fined-eval`` metric (``load_metric``), its ``hf-dialeval train fined-eval`` command and its exporter.
"""

from transformers import AutoConfig, AutoModel

from .configuration_fined_eval import FINED_EVAL_DIMENSIONS, FineDEvalConfig
from .modeling_fined_eval import FineDEvalModel, FineDEvalOutput, add_utterance_token, encode_dialogues

AutoConfig.register(FineDEvalConfig.model_type, FineDEvalConfig)
AutoModel.register(FineDEvalConfig, FineDEvalModel)

from . import scoring, train  # noqa: E402, F401  (registers the metric, the train command, the exporter)
from .scoring import FineDEvalMetric, load_fined_eval_model  # noqa: E402

__all__ = [
    "FINED_EVAL_DIMENSIONS", "FineDEvalConfig", "FineDEvalMetric", "FineDEvalModel", "FineDEvalOutput",
    "add_utterance_token", "encode_dialogues", "load_fined_eval_model",
]
