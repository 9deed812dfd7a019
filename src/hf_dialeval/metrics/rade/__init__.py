"""RADE (Shi et al., ACL 2023): reference-assisted dialogue evaluation with an encoder–decoder, trained in two
stages (cross-domain pre-training, task-specific fine-tuning). This module is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.rade.options import RADETrainingOptions
from hf_dialeval.metrics.rade.paper import PAPER_RESULTS
from hf_dialeval.registry import AdaptationStep, MetricEntry, TrainCommand

#: The offline default shipped inside the package: MiniLM turned into an encoder–decoder, trained on the train splits
#: of RADE's three domains with the paper's fine-tuning loss; the folder holds its LoRA adapter and head.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "rade-minilm"


ENTRY = MetricEntry(
    "rade", "turn", "RADE: a response scored against a human reference response, 1-5", package=__name__,
    metric=".scoring:RADEMetric", config=".configuration_rade:RADEConfig", model=".modeling_rade:RADEModel",
    default=DEFAULT_CHECKPOINT,
    train_commands=(TrainCommand("rade", "train RADE (cross-domain pre-training or task-specific fine-tuning)",
                                 RADETrainingOptions, ".train:RADETrainingArguments", ".train:train_rade",
                                 check=".train:user_ratings"),),
    # the paper's task-specific fine-tuning, on the user's ratings with references: the shipped adapter keeps training
    # (a full model in full) for 3 epochs, no checkpoint written; 240 ratings are 45 steps, about 2 minutes at the
    # shipped default's 2.4 s a step on 2 CPU threads (model_cards/rade.md). Each layer's activations are computed
    # again in the backward pass rather than kept: 16 contexts of 256 tokens took the route to 4.6 GB, 1.5 GB so (18 s
    # a step there, 13 s keeping them)
    adaptation=(AdaptationStep("rade", "ratings", "init_from", (
        "--stage", "finetune", "--epochs", "3", "--lora-rank", "0", "--save-strategy", "no",
        "--activation-checkpointing", "true")),),
    paper_results=PAPER_RESULTS,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {**ENTRY.exports, "RADEOutput": ".modeling_rade", "RADETrainer": ".trainer", "rade_loss": ".trainer"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
