"""hf-dialeval: learned dialogue-evaluation metrics, the Hugging Face way.

Importing the package registers every metric (``load_metric``) and every model with the ``Auto*`` classes.
"""

from .benchmarks import BENCHMARKS, human_dimensions, load_benchmark
from .corpora import load_dailydialog, load_dailydialog_plusplus
from .data import DialogueValidationError
from .fined_eval import FineDEvalConfig, FineDEvalModel
from .length import LengthMetric
from .similarity import SimilarityMetric
from .meta_eval import correlate, format_markdown, meta_evaluate
from .quantidce import QuantiDCEConfig, QuantiDCEModel
from .scoring import METRICS, DialogueMetric, ScoreOutput, load_metric

__version__ = "0.1.0"

__all__ = [
    "BENCHMARKS", "METRICS", "DialogueMetric", "DialogueValidationError", "FineDEvalConfig", "FineDEvalModel",
    "LengthMetric", "QuantiDCEConfig", "QuantiDCEModel", "ScoreOutput", "SimilarityMetric",
    "correlate", "format_markdown", "human_dimensions", "load_benchmark", "load_dailydialog",
    "load_dailydialog_plusplus", "load_metric", "meta_evaluate",
]
