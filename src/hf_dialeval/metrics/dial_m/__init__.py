"""Dial-M (Dey & Desarkar, 2023): a masking-based reference-free dialogue metric. A masked LM pre-trained on
dialogues and fine-tuned to predict a response's keywords; the mean cross-entropy of each keyword, masked on its own
given the context and condition, is the raw score (lower is better; the exposed score is its negation). On a causal
LM (this package's adaptation, and the offline default) each keyword is predicted from what precedes it. This module
is its registry entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.dial_m.options import DialMMLMTrainingOptions, DialMTrainingOptions
from hf_dialeval.metrics.dial_m.paper import PAPER_RESULTS
from hf_dialeval.registry import MetricEntry, MetricOption, TrainCommand

#: The offline default shipped inside the package (model_cards/dial_m.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "dial-m-gemma3"
#: How a score is made from the keyword losses: Eq. 1 (the paper), or how much the context and condition lower them.
VARIANTS = ("eq1", "context-gain")


def check_variant(variant: str) -> str:
    """``variant`` itself when it is one of :data:`VARIANTS` (a checkpoint's config and a scorer's choice alike)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    return variant


def _config() -> type:
    from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig

    return DialMConfig


def _model() -> type:
    from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel

    return DialMModel


def _metric() -> type:
    from hf_dialeval.metrics.dial_m.scoring import DialMMetric

    return DialMMetric


def _train_mlm() -> tuple[type, Callable]:
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, train_dial_m_mlm

    return DialMMLMTrainingArguments, train_dial_m_mlm


def _train() -> tuple[type, Callable]:
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    return DialMTrainingArguments, train_dial_m


ENTRY = MetricEntry(
    "dial-m", "turn", "Dial-M: how well a language model predicts the response's keywords, given the dialogue",
    metric=_metric, config=_config, model=_model, default=DEFAULT_CHECKPOINT, hub_repo=DEFAULT_CHECKPOINT.name,
    card="dial_m.md", evaluate_module="dial_m",
    options=(MetricOption("variant", "eq1 (the paper's score) or context-gain (how much the context and condition "
                                     "lower the keyword losses); default: the checkpoint's own (the offline "
                                     "default's: context-gain)", VARIANTS),),
    train_commands=(
        TrainCommand("dial-m-mlm", "Dial-M stage 1: LM pre-training on dialogues (masked, or causal)", DialMMLMTrainingOptions,
                     _train_mlm),
        TrainCommand("dial-m", "Dial-M stage 2: keyword-prediction fine-tuning", DialMTrainingOptions, _train),
    ),
    paper_results=PAPER_RESULTS,
)

#: The package's public names, each imported from its module on first use.
_EXPORTS = {
    "DialMConfig": "configuration_dial_m", "DialMModel": "modeling_dial_m", "extract_keywords": "keywords",
    "DialMMetric": "scoring",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
