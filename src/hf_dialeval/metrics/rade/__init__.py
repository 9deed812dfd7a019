"""RADE (Shi et al., ACL 2023): reference-assisted dialogue evaluation with an encoder–decoder, trained in two
stages (cross-domain pre-training, task-specific fine-tuning). This module is its registry entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.rade.options import RADETrainingOptions
from hf_dialeval.metrics.rade.paper import PAPER_RESULTS
from hf_dialeval.registry import MetricEntry, TrainCommand

#: The offline default shipped inside the package: MiniLM turned into an encoder–decoder, trained on the train splits
#: of RADE's three domains with the paper's fine-tuning loss; the folder holds its LoRA adapter and head.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "rade-minilm"


def _config() -> type:
    from hf_dialeval.metrics.rade.configuration_rade import RADEConfig

    return RADEConfig


def _model() -> type:
    from hf_dialeval.metrics.rade.modeling_rade import RADEModel

    return RADEModel


def _metric() -> type:
    from hf_dialeval.metrics.rade.scoring import RADEMetric

    return RADEMetric


def _train() -> tuple[type, Callable]:
    from hf_dialeval.metrics.rade.train import RADETrainingArguments, train_rade

    return RADETrainingArguments, train_rade


ENTRY = MetricEntry(
    "rade", "turn", "RADE: a response scored against a human reference response, 1-5",
    metric=_metric, config=_config, model=_model, default=DEFAULT_CHECKPOINT, hub_repo=DEFAULT_CHECKPOINT.name,
    card="rade.md", evaluate_module="rade",
    train_commands=(TrainCommand("rade", "train RADE (cross-domain pre-training or task-specific fine-tuning)",
                                 RADETrainingOptions, _train),),
    paper_results=PAPER_RESULTS,
)

#: The package's public names, each imported from its module on first use.
_EXPORTS = {
    "RADEConfig": "configuration_rade", "RADEModel": "modeling_rade", "RADEOutput": "modeling_rade",
    "RADETrainer": "trainer", "rade_loss": "trainer", "RADEMetric": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
