"""HolisticEval (Pang et al., ACL 2020): context coherence and fluency from a fine-tuned causal language model with
percentile normalisation, n-gram diversity over response groups, and NLI-based logical self-consistency. This module
is its registry entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.holistic_eval.options import HolisticEvalTrainingOptions
from hf_dialeval.metrics.holistic_eval.paper import PAPER_RESULTS
from hf_dialeval.registry import MetricEntry, MetricOption, TrainCommand

#: The offline default shipped inside the package (model_cards/holistic_eval.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "holistic-eval-dailydialog"


def _config() -> type:
    from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import HolisticEvalConfig

    return HolisticEvalConfig


def _model() -> type:
    from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel

    return HolisticEvalModel


def _metric() -> type:
    from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric

    return HolisticEvalMetric


def _train() -> tuple[type, Callable]:
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    return HolisticEvalTrainingArguments, train_holistic_eval


ENTRY = MetricEntry(
    "holistic-eval", "turn", "HolisticEval: context coherence and fluency from a language model's likelihood",
    metric=_metric, config=_config, model=_model, default=DEFAULT_CHECKPOINT, hub_repo=DEFAULT_CHECKPOINT.name,
    card="holistic_eval.md", evaluate_module="holistic_eval",
    options=(MetricOption("nli_checkpoint", "an MNLI sequence classifier (Hub id such as roberta-large-mnli, or "
                                            "folder) that adds the consistency score; none exists offline"),),
    train_commands=(TrainCommand(
        "holistic-eval", "train HolisticEval's language model (LM fine-tuning on query-response pairs, or a small "
        "GPT-2 from scratch) and fit its percentile cutoffs", HolisticEvalTrainingOptions, _train),),
    paper_results=PAPER_RESULTS,
)

#: The package's public names, each imported from its module on first use.
_EXPORTS = {
    "HolisticEvalConfig": "configuration_holistic_eval", "HolisticEvalModel": "modeling_holistic_eval",
    "HolisticEvalMetric": "scoring", "fit_cutoffs": "scoring", "language_model_perplexity": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
