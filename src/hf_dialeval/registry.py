"""The one registry of metrics: what builds each metric, what exports its model for the Hub, and which
``hf-dialeval train`` commands it has.

Entries name their code as ``"module:attribute"`` strings, imported on first use, so that listing metrics
(the CLI's ``--help``) imports no deep-learning library.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainCommandSpec:
    """``hf-dialeval train <name>``: ``configure(parser)`` adds its options and sets ``func``."""

    name: str
    help: str
    configure: str


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: ``factory(checkpoint=None, device=None, batch_size=32, **options)`` builds it,
    ``exporter(checkpoint, out_dir)`` writes its model's Hub folders; ``uses_checkpoint`` is false for a metric
    without a model."""

    name: str
    level: str
    factory: str
    uses_checkpoint: bool = True
    exporter: str | None = None
    train_commands: tuple[TrainCommandSpec, ...] = ()


def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` string names."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "fined-eval", "dialogue", "hf_dialeval.fined_eval.scoring:load_fined_eval",
            exporter="hf_dialeval.fined_eval.scoring:export_fined_eval",
            train_commands=(TrainCommandSpec(
                "fined-eval", "train FineD-Eval (pairwise ranking on self-supervised pairs)",
                "hf_dialeval.fined_eval.command:configure"),),
        ),
        MetricSpec(
            "quantidce", "turn", "hf_dialeval.quantidce.scoring:quantidce_metric",
            exporter="hf_dialeval.quantidce.export:export_quantidce",
            train_commands=(
                TrainCommandSpec("quantidce-mlr", "QuantiDCE stage 1: multi-level ranking pre-training on DailyDialog++",
                                 "hf_dialeval.quantidce.command:configure_mlr"),
                TrainCommandSpec("quantidce-kd", "QuantiDCE stage 2: KD fine-tuning on human coherence ratings",
                                 "hf_dialeval.quantidce.command:configure_kd"),
            ),
        ),
        MetricSpec("length", "dialogue", "hf_dialeval.length:load_length", uses_checkpoint=False),
        MetricSpec("similarity", "turn", "hf_dialeval.similarity:similarity_metric"),
    )
}


def metric_names() -> list[str]:
    return sorted(METRICS)


def train_commands() -> dict[str, TrainCommandSpec]:
    """Every ``hf-dialeval train`` command, by name."""
    return {command.name: command for spec in METRICS.values() for command in spec.train_commands}


def exportable_metrics() -> list[str]:
    return sorted(name for name, spec in METRICS.items() if spec.exporter)
