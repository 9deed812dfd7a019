"""The one registry of metrics: what builds each metric, its shipped default, what exports its model for the
Hub, which ``hf-dialeval train`` commands it has, and the numbers its paper published.

Entries name their code as ``"module:attribute"`` strings, imported on first use, so that listing metrics
(the CLI's ``--help``) imports no deep-learning library.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainCommandSpec:
    """``hf-dialeval train <name>``: ``options`` is its light options dataclass (``--help`` lists it without
    importing torch), ``arguments`` the ``TrainingArguments`` subclass built from the parsed command line, and
    ``run(arguments)`` trains."""

    name: str
    help: str
    options: str
    arguments: str
    run: str


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: ``factory(checkpoint=None, device=None, batch_size=32, **options)`` builds it (a
    model metric's factory also takes ``dtype``),
    ``default`` names its shipped checkpoint (what ``checkpoint=None`` loads), ``exporter(checkpoint, out_dir)``
    writes its model's Hub folders, ``paper_results`` maps ``(metric or sub-metric row, benchmark)`` to the
    paper's ``{dimension: {statistic: value}}``; ``config`` and ``model`` name the classes registered with
    ``AutoConfig``/``AutoModel``; ``uses_checkpoint`` is false for a metric without a model, ``ensemble`` true for
    one that averages several checkpoints; ``options`` names the factory's own keyword options (the command line's
    ``--nli-checkpoint`` goes only to a metric that takes ``nli_checkpoint``); ``metric_class`` names its
    :class:`~hf_dialeval.inference.metric.DialogueMetric` subclass, whose class-level requirements (a context, a reference)
    are checked before any model loads."""

    name: str
    level: str
    factory: str
    metric_class: str
    #: one line for ``hf-dialeval --help``: what the metric scores
    summary: str = ""
    default: str | None = None
    config: str | None = None
    model: str | None = None
    uses_checkpoint: bool = True
    ensemble: bool = False
    exporter: str | None = None
    train_commands: tuple[TrainCommandSpec, ...] = ()
    paper_results: str | None = None
    options: tuple[str, ...] = ()


def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` string names."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "fined-eval", "dialogue", "hf_dialeval.metrics.fined_eval.scoring:load_fined_eval",
            "hf_dialeval.metrics.fined_eval.scoring:FineDEvalMetric",
            summary="FineD-Eval: a dialogue's coherence, likability and topic depth",
            default="hf_dialeval.metrics.fined_eval.scoring:DEFAULT_CHECKPOINT",
            config="hf_dialeval.metrics.fined_eval.configuration_fined_eval:FineDEvalConfig",
            model="hf_dialeval.metrics.fined_eval.modeling_fined_eval:FineDEvalModel",
            exporter="hf_dialeval.metrics.fined_eval.scoring:export_fined_eval",
            paper_results="hf_dialeval.metrics.fined_eval.scoring:PAPER_RESULTS", ensemble=True,
            train_commands=(TrainCommandSpec(
                "fined-eval", "train FineD-Eval (pairwise ranking on self-supervised pairs)",
                "hf_dialeval.metrics.fined_eval.options:FineDEvalTrainingOptions",
                "hf_dialeval.metrics.fined_eval.train:FineDEvalTrainingArguments",
                "hf_dialeval.metrics.fined_eval.train:train_fined_eval"),),
        ),
        MetricSpec(
            "quantidce", "turn", "hf_dialeval.metrics.quantidce.scoring:quantidce_metric",
            "hf_dialeval.metrics.quantidce.scoring:QuantiDCEMetric",
            summary="QuantiDCE: a response's coherence with its context, 1-5",
            default="hf_dialeval.metrics.quantidce.scoring:DEFAULT_CHECKPOINT",
            config="hf_dialeval.metrics.quantidce.configuration_quantidce:QuantiDCEConfig",
            model="hf_dialeval.metrics.quantidce.modeling_quantidce:QuantiDCEModel",
            exporter="hf_dialeval.metrics.quantidce.export:export_quantidce",
            paper_results="hf_dialeval.metrics.quantidce.scoring:PAPER_RESULTS",
            train_commands=(
                TrainCommandSpec("quantidce-selection",
                                 "QuantiDCE response-selection pre-training on DailyDialog (this package's addition)",
                                 "hf_dialeval.metrics.quantidce.options:QuantiDCESelectionTrainingOptions",
                                 "hf_dialeval.metrics.quantidce.train:QuantiDCESelectionTrainingArguments",
                                 "hf_dialeval.metrics.quantidce.train:train_selection"),
                TrainCommandSpec("quantidce-mlr", "QuantiDCE stage 1: multi-level ranking pre-training on DailyDialog++",
                                 "hf_dialeval.metrics.quantidce.options:QuantiDCEMLRTrainingOptions",
                                 "hf_dialeval.metrics.quantidce.train:QuantiDCEMLRTrainingArguments",
                                 "hf_dialeval.metrics.quantidce.train:train_mlr"),
                TrainCommandSpec("quantidce-kd", "QuantiDCE stage 2: KD fine-tuning on human coherence ratings",
                                 "hf_dialeval.metrics.quantidce.options:QuantiDCEKDTrainingOptions",
                                 "hf_dialeval.metrics.quantidce.train:QuantiDCEKDTrainingArguments",
                                 "hf_dialeval.metrics.quantidce.train:train_kd"),
            ),
        ),
        MetricSpec(
            "rade", "turn", "hf_dialeval.metrics.rade.scoring:rade_metric", "hf_dialeval.metrics.rade.scoring:RADEMetric",
            summary="RADE: a response scored against a human reference response, 1-5",
            default="hf_dialeval.metrics.rade.scoring:DEFAULT_CHECKPOINT",
            config="hf_dialeval.metrics.rade.configuration_rade:RADEConfig",
            model="hf_dialeval.metrics.rade.modeling_rade:RADEModel",
            exporter="hf_dialeval.metrics.rade.export:export_rade",
            paper_results="hf_dialeval.metrics.rade.scoring:PAPER_RESULTS",
            train_commands=(TrainCommandSpec(
                "rade", "train RADE (cross-domain pre-training or task-specific fine-tuning)",
                "hf_dialeval.metrics.rade.options:RADETrainingOptions", "hf_dialeval.metrics.rade.train:RADETrainingArguments",
                "hf_dialeval.metrics.rade.train:train_rade"),),
        ),
        MetricSpec(
            "holistic-eval", "turn", "hf_dialeval.metrics.holistic_eval.scoring:holistic_eval_metric",
            "hf_dialeval.metrics.holistic_eval.scoring:HolisticEvalMetric",
            summary="HolisticEval: context coherence and fluency from a language model's likelihood",
            default="hf_dialeval.metrics.holistic_eval.scoring:DEFAULT_CHECKPOINT",
            config="hf_dialeval.metrics.holistic_eval.configuration_holistic_eval:HolisticEvalConfig",
            model="hf_dialeval.metrics.holistic_eval.modeling_holistic_eval:HolisticEvalModel",
            exporter="hf_dialeval.metrics.holistic_eval.export:export_holistic_eval",
            paper_results="hf_dialeval.metrics.holistic_eval.scoring:PAPER_RESULTS", options=("nli_checkpoint",),
            train_commands=(TrainCommandSpec(
                "holistic-eval", "train HolisticEval's language model (LM fine-tuning on query-response pairs, or "
                "a small GPT-2 from scratch) and fit its percentile cutoffs",
                "hf_dialeval.metrics.holistic_eval.options:HolisticEvalTrainingOptions",
                "hf_dialeval.metrics.holistic_eval.train:HolisticEvalTrainingArguments",
                "hf_dialeval.metrics.holistic_eval.train:train_holistic_eval"),),
        ),
        MetricSpec(
            "dial-m", "turn", "hf_dialeval.metrics.dial_m.scoring:dial_m_metric", "hf_dialeval.metrics.dial_m.scoring:DialMMetric",
            summary="Dial-M: how well a masked LM predicts the response's keywords, given the dialogue",
            default="hf_dialeval.metrics.dial_m.scoring:DEFAULT_CHECKPOINT",
            config="hf_dialeval.metrics.dial_m.configuration_dial_m:DialMConfig",
            model="hf_dialeval.metrics.dial_m.modeling_dial_m:DialMModel",
            exporter="hf_dialeval.metrics.dial_m.export:export_dial_m",
            paper_results="hf_dialeval.metrics.dial_m.scoring:PAPER_RESULTS", options=("variant",),
            train_commands=(
                TrainCommandSpec("dial-m-mlm", "Dial-M stage 1: masked-LM pre-training on dialogues",
                                 "hf_dialeval.metrics.dial_m.options:DialMMLMTrainingOptions",
                                 "hf_dialeval.metrics.dial_m.train:DialMMLMTrainingArguments",
                                 "hf_dialeval.metrics.dial_m.train:train_dial_m_mlm"),
                TrainCommandSpec("dial-m", "Dial-M stage 2: keyword-masking fine-tuning",
                                 "hf_dialeval.metrics.dial_m.options:DialMTrainingOptions",
                                 "hf_dialeval.metrics.dial_m.train:DialMTrainingArguments",
                                 "hf_dialeval.metrics.dial_m.train:train_dial_m"),
            ),
        ),
        MetricSpec("length", "dialogue", "hf_dialeval.metrics.length:load_length", "hf_dialeval.metrics.length:LengthMetric",
                   summary="floor: mean words per system utterance", uses_checkpoint=False),
        MetricSpec("similarity", "turn", "hf_dialeval.metrics.similarity:similarity_metric",
                   "hf_dialeval.metrics.similarity:SimilarityMetric",
                   summary="floor: cosine of the last context utterance and the response",
                   default="hf_dialeval.modeling.checkpoints:MINILM_HUB_ID"),
        MetricSpec("reference-similarity", "turn", "hf_dialeval.metrics.similarity:reference_similarity_metric",
                   "hf_dialeval.metrics.similarity:ReferenceSimilarityMetric",
                   summary="floor: cosine of the response and its reference",
                   default="hf_dialeval.modeling.checkpoints:MINILM_HUB_ID"),
    )
}


@dataclass(frozen=True)
class MetricChoice:
    """A registered metric as a command names it: ``name`` or ``name=CHECKPOINT`` (``None``: its shipped
    default). The label is the text as given, so that one metric can appear with two checkpoints."""

    name: str
    checkpoint: str | None = None

    @classmethod
    def parse(cls, text: str) -> MetricChoice:
        name, _, checkpoint = text.partition("=")
        if name not in METRICS:
            raise KeyError(f"unknown metric {name!r}; choose among {sorted(METRICS)} (optionally NAME=CHECKPOINT)")
        if "=" in text and not checkpoint:
            raise ValueError(f"{text!r} names no checkpoint after '='; give NAME=CHECKPOINT, or NAME alone for the "
                             "shipped default")
        if checkpoint and not METRICS[name].uses_checkpoint:
            raise ValueError(f"{name} has no model, so it takes no checkpoint ({text!r})")
        return cls(name, checkpoint or None)

    @property
    def label(self) -> str:
        return self.name if self.checkpoint is None else f"{self.name}={self.checkpoint}"


def metric_names() -> list[str]:
    return sorted(METRICS)


def train_commands() -> dict[str, TrainCommandSpec]:
    """Every ``hf-dialeval train`` command, by name."""
    return {command.name: command for spec in METRICS.values() for command in spec.train_commands}


def paper_results(metric: str, benchmark: str) -> dict[str, dict[str, float]]:
    """The paper's numbers for a metric (or a sub-metric row such as ``fined-eval:coherence``) on a benchmark,
    or ``{}``."""
    spec = METRICS.get(metric.split(":")[0])
    if spec is None or spec.paper_results is None:
        return {}
    return resolve(spec.paper_results).get((metric, benchmark), {})


def exportable_metrics() -> list[str]:
    return sorted(name for name, spec in METRICS.items() if spec.exporter)
