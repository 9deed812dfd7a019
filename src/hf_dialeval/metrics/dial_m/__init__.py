"""Dial-M (Dey & Desarkar, 2023): a masking-based reference-free dialogue metric. A masked LM pre-trained on
dialogues and fine-tuned to predict a response's keywords; the mean cross-entropy of each keyword, masked on its own
given the context and condition, is the raw score (lower is better; the exposed score is its negation). On a causal
LM (this package's adaptation, and the offline default) each keyword is predicted from what precedes it. This module
is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.dial_m.options import DialMMLMTrainingOptions, DialMTrainingOptions
from hf_dialeval.metrics.dial_m.paper import PAPER_RESULTS
from hf_dialeval.registry import AdaptationStep, MetricEntry, MetricOption, TrainCommand

#: The offline default shipped inside the package (model_cards/dial_m.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "dial-m-gemma3"
#: How a score is made from the keyword losses: Eq. 1 (the paper), or how much the context and condition lower them.
VARIANTS = ("eq1", "context-gain")


def check_variant(variant: str) -> str:
    """``variant`` itself when it is one of :data:`VARIANTS` (a checkpoint's config and a scorer's choice alike)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    return variant


ENTRY = MetricEntry(
    "dial-m", "turn", "Dial-M: how well a language model predicts the response's keywords, given the dialogue",
    package=__name__, metric=".scoring:DialMMetric", config=".configuration_dial_m:DialMConfig",
    model=".modeling_dial_m:DialMModel", default=DEFAULT_CHECKPOINT,
    options=(MetricOption("variant", "eq1 (the paper's score) or context-gain (how much the context and condition "
                                     "lower the keyword losses); default: the checkpoint's own (the offline "
                                     "default's: context-gain)", VARIANTS),),
    train_commands=(
        TrainCommand("dial-m-mlm", "Dial-M stage 1: LM pre-training on dialogues (masked, or causal)",
                     DialMMLMTrainingOptions, ".train:DialMMLMTrainingArguments", ".train:train_dial_m_mlm",
                     check=".train:own_dialogues"),
        TrainCommand("dial-m", "Dial-M stage 2: keyword-prediction fine-tuning", DialMTrainingOptions,
                     ".train:DialMTrainingArguments", ".train:train_dial_m", check=".train:own_dialogues"),
    ),
    # the shipped default's own route to a domain: its LM stage (a Dial-M checkpoint given as --backbone keeps
    # training, its settings kept) on the domain's dialogues. Not the keyword stage: on top of the LM stage it lowered
    # the held-out ratings' agreement on Gemma and SmolLM2 (model_cards/dial_m.md). No --max-seq-length: the windows
    # are as long as the continued model reads (the default's 256 tokens), so that it scores as it did; 50 steps of 8
    # windows at the default's learning rate, a sixth of its recipe's steps (--max-steps for more or fewer); each layer's
    # activations computed again in the backward pass rather than kept (8 windows of 256 tokens through Gemma 3 kept
    # 1.8 GB more on FED): 27–32 s a step there on 2 cores, 20–23 s keeping them
    adaptation=(AdaptationStep("dial-m-mlm", "dialogues", "backbone", (
        "--max-steps", "50", "--batch-size", "8", "--gradient-accumulation-steps", "1", "--learning-rate", "2e-4",
        "--eval-dialogues", "20", "--activation-checkpointing", "true")),),
    paper_results=PAPER_RESULTS,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {**ENTRY.exports, "extract_keywords": ".keywords"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
