"""QuantiDCE (Ye et al., ACL 2021): a dialogue coherence metric trained by multi-level ranking pre-training and
knowledge-distillation fine-tuning on a few human ratings. This module is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.quantidce.options import (
    QuantiDCEKDTrainingOptions,
    QuantiDCEMLRTrainingOptions,
    QuantiDCESelectionTrainingOptions,
)
from hf_dialeval.metrics.quantidce.paper import PAPER_RESULTS
from hf_dialeval.registry import AdaptationStep, MetricEntry, TrainCommand

#: The offline default shipped inside the package: a bi-encoder over MiniLM, the encoder trained by response
#: selection on DailyDialog train, then the head (on the cosines of the response with the context's utterances) by
#: MLR on DailyDialog++ with parrot negatives; the folder holds the head and the encoder's change as a rank-16
#: adapter over the backbone (model_cards/quantidce.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "quantidce-minilm-bi"


ENTRY = MetricEntry(
    "quantidce", "turn", "QuantiDCE: a response's coherence with its context, 1-5", package=__name__,
    metric=".scoring:QuantiDCEMetric", config=".configuration_quantidce:QuantiDCEConfig",
    model=".modeling_quantidce:QuantiDCEModel", default=DEFAULT_CHECKPOINT,
    train_commands=(
        TrainCommand("quantidce-selection",
                     "QuantiDCE response-selection pre-training on DailyDialog (this package's addition)",
                     QuantiDCESelectionTrainingOptions, ".train:QuantiDCESelectionTrainingArguments",
                     ".train:train_selection"),
        TrainCommand("quantidce-mlr", "QuantiDCE stage 1: multi-level ranking pre-training on DailyDialog++",
                     QuantiDCEMLRTrainingOptions, ".train:QuantiDCEMLRTrainingArguments", ".train:train_mlr",
                     check=".train:dialogue_contexts"),
        TrainCommand("quantidce-kd", "QuantiDCE stage 2: KD fine-tuning on human coherence ratings",
                     QuantiDCEKDTrainingOptions, ".train:QuantiDCEKDTrainingArguments", ".train:train_kd"),
    ),
    # the route to a new domain: on its dialogues, the shipped default's two pre-training stages again, each as the
    # default was trained but shorter (the encoder by response selection, 100 steps of 16 turns: 1,402 s on 2 cores on
    # Topical-Chat's conversations; the head alone by MLR on the levels the dialogues allow, 600 contexts: 154 s; that
    # adapt run peaked at 12.7 GB); then the paper's KD on a few hundred of its ratings, for the paper's 20 epochs
    adaptation=(
        AdaptationStep("quantidce-selection", "dialogues", "init_from", (
            "--lora-rank", "0", "--adapter-rank", "16", "--max-steps", "100", "--batch-size", "16",
            "--eval-dialogues", "0", "--save-strategy", "no")),
        AdaptationStep("quantidce-mlr", "dialogues", "init_from", (
            "--freeze-encoder", "--parrot-negatives", "--lora-rank", "0", "--adapter-rank", "16", "--max-contexts",
            "600", "--learning-rate", "1e-2", "--eval-contexts", "0", "--save-strategy", "no")),
        AdaptationStep("quantidce-kd", "ratings", "teacher", ("--epochs", "20")),
    ),
    paper_results=PAPER_RESULTS,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {
    **ENTRY.exports, "DistillationTrainer": ".trainer", "MultiLevelRankingTrainer": ".trainer",
    "distillation_loss": ".trainer", "multi_level_ranking_loss": ".trainer",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
