"""QuantiDCE (Ye et al. 2021): multi-level ranking pre-training + knowledge-distillation fine-tuning of a
dialogue coherence metric. Importing registers the model with the ``Auto*`` classes, the ``quantidce`` metric,
its training commands and its model exporter."""

from . import export, train
from .configuration_quantidce import QuantiDCEConfig
from .modeling_quantidce import QuantiDCEModel, QuantiDCEOutput
from .scoring import QuantiDCEMetric, load_quantidce
from .trainer import DistillationTrainer, MultiLevelRankingTrainer, distillation_loss, multi_level_ranking_loss

__all__ = [
    "DistillationTrainer", "MultiLevelRankingTrainer", "QuantiDCEConfig", "QuantiDCEMetric", "QuantiDCEModel",
    "QuantiDCEOutput", "distillation_loss", "export", "load_quantidce", "multi_level_ranking_loss", "train",
]
