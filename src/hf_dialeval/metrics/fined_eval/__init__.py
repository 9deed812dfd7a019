"""FineD-Eval (Zhang et al., EMNLP 2022): fine-grained dialogue-level evaluation by pairwise ranking of
self-supervised dialogue pairs: sub-metrics for coherence, likability and topic depth, combined by a multitask model
(FineD-Eval_mu) or an ensemble (FineD-Eval_en). This module is its registry entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.fined_eval.options import FineDEvalTrainingOptions
from hf_dialeval.metrics.fined_eval.paper import PAPER_RESULTS
from hf_dialeval.registry import MetricEntry, TrainCommand

#: The offline default shipped in the package: a LoRA adapter and heads over the MiniLM encoder.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults"


def _config() -> type:
    from hf_dialeval.metrics.fined_eval.configuration_fined_eval import FineDEvalConfig

    return FineDEvalConfig


def _model() -> type:
    from hf_dialeval.metrics.fined_eval.modeling_fined_eval import FineDEvalModel

    return FineDEvalModel


def _metric() -> type:
    from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric

    return FineDEvalMetric


def _train() -> tuple[type, Callable]:
    from hf_dialeval.metrics.fined_eval.train import FineDEvalTrainingArguments, train_fined_eval

    return FineDEvalTrainingArguments, train_fined_eval


ENTRY = MetricEntry(
    "fined-eval", "dialogue", "FineD-Eval: a dialogue's coherence, likability and topic depth",
    metric=_metric, config=_config, model=_model, default=DEFAULT_CHECKPOINT,
    hub_repo="fined-eval-mu-minilm-dailydialog", card="fined_eval.md", evaluate_module="fined_eval",
    train_commands=(TrainCommand("fined-eval", "train FineD-Eval (pairwise ranking on self-supervised pairs)",
                                 FineDEvalTrainingOptions, _train),),
    paper_results=PAPER_RESULTS, ensemble=True,
)

#: The package's public names, each imported from its module on first use.
_EXPORTS = {
    "FINED_EVAL_DIMENSIONS": "constants", "FineDEvalConfig": "configuration_fined_eval",
    "FineDEvalModel": "modeling_fined_eval", "add_utterance_token": "encoding",
    "encode_dialogues": "encoding", "FineDEvalMetric": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
