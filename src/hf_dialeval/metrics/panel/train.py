"""``hf-dialeval train panel`` (options: :class:`~.options.PanelTrainingOptions`): score the rated sets with the
members, fit a new panel's CDFs on the items, and train the combiner's weights with :class:`~.trainer.PanelTrainer`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import default_data_collator

from hf_dialeval.data.benchmarks import BENCHMARKS, human_dimensions, load_benchmark
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.data import RatedScores, finite_column, preference_pairs
from hf_dialeval.metrics.panel.members import feature_rows, load_members, member_records, split_feature
from hf_dialeval.metrics.panel.modeling_panel import PanelModel
from hf_dialeval.metrics.panel.options import DEFAULT_FEATURES, PanelTrainingOptions
from hf_dialeval.metrics.panel.trainer import PanelTrainer
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run, train_and_finish


@dataclass
class PanelTrainingArguments(PanelTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of ``train panel``: :class:`~.options.PanelTrainingOptions` with every
    ``transformers.TrainingArguments`` field."""


def default_benchmarks(data_dir: str | None) -> list[str]:
    """The registered turn-level benchmarks whose items all have a context, a set whose items another one chosen
    before it holds already (a reference variant of the same replies) left out."""
    chosen, seen = [], set()
    for name, spec in BENCHMARKS.items():
        if spec.level != "turn":
            continue
        dataset = load_benchmark(name, data_dir)
        if any(not context for context in dataset["context"]):
            continue
        items = {(tuple(context), response) for context, response in zip(dataset["context"], dataset["response"])}
        if not items <= seen:
            chosen.append(name)
            seen |= items
    return chosen


def headline(dataset: datasets.Dataset) -> str:
    """``Overall`` where people rated it, else the set's first rating (the leaderboard's headline)."""
    dimensions = human_dimensions(dataset)
    return "Overall" if "Overall" in dimensions else dimensions[0]


def benchmark_scores(name: str, config: PanelConfig, members: Mapping[str, DialogueMetric],
                     data_dir: str | None, cache: ScoreCache) -> RatedScores:
    """The members' scores of a registered benchmark (from the score cache where it holds them) with its headline
    rating, items without a rating left out."""
    dataset = load_benchmark(name, data_dir)
    outputs = {member: cache.scores(metric, dataset, name)[0] for member, metric in members.items()}
    rows, ratings = [], []
    for row, rating in zip(feature_rows(config, outputs, len(dataset)), dataset[headline(dataset)]):
        if rating is not None and math.isfinite(rating):
            rows.append(row)
            ratings.append(rating)
    return RatedScores(name, rows, ratings)


def ratings_scores(name: str, ratings: datasets.Dataset, config: PanelConfig,
                   members: Mapping[str, DialogueMetric]) -> RatedScores:
    """The members' scores of the user's ratings (each item scored once by each member)."""
    items = [{"context": row["context"], "response": row["response"], "condition": row["condition"],
              "reference": row["reference"]} for row in ratings]
    outputs: dict[str, ScoreOutput] = {member: metric.score_items(items, progress=f"{member} on {name}")
                                       for member, metric in members.items()}
    return RatedScores(name, feature_rows(config, outputs, len(items)), list(ratings["score"]))


def new_panel(args: PanelTrainingArguments) -> tuple[PanelConfig, dict[str, DialogueMetric]]:
    """The config of a new panel of ``args.features`` and its members, loaded."""
    features = list(args.features or DEFAULT_FEATURES)
    checkpoints = dict(pair.split("=", 1) for pair in args.member_checkpoints or ())
    names = list(dict.fromkeys(split_feature(feature)[0] for feature in features))
    stray = sorted(set(checkpoints) - set(names))
    if stray:
        raise OptionError(f"--member-checkpoints names {stray}, which no --features score is of")
    metrics = {name: load_metric(name, checkpoints.get(name), device=args.scoring_device, batch_size=args.scoring_batch_size,
                                 dtype=args.scoring_dtype) for name in names}
    config = PanelConfig(members=member_records(features, checkpoints, metrics), quantile_count=args.quantile_count)
    return config, metrics


def reference_text(sets: Sequence[RatedScores]) -> str:
    return f"the {sum(len(s.ratings) for s in sets)} items of " + ", ".join(s.name for s in sets)


def combiner_trainer(model: PanelModel, args: PanelTrainingArguments, train_sets: Sequence[RatedScores],
                     validation_sets: Sequence[RatedScores] = ()) -> PanelTrainer:
    """The Trainer of ``model``'s weights on the pairs of ``train_sets`` (validated on those of ``validation_sets``)."""
    return PanelTrainer(
        model=model, args=args, train_dataset=preference_pairs(train_sets, args.pairs_per_set, args.seed),
        eval_dataset=preference_pairs(validation_sets, args.pairs_per_set, args.seed) if validation_sets else None,
        data_collator=default_data_collator, temperature=args.temperature)


@owns_output_dir
def train_panel(args: PanelTrainingArguments, ratings: datasets.Dataset | None = None) -> Path:
    """Fit a panel on ``ratings`` (or ``args.ratings``; ``args.held_out_share`` of their contexts validated on), else on
    the registered benchmarks ``args.benchmarks`` (default: :func:`default_benchmarks`). A panel continued from
    ``args.init_from`` (with ratings and no ``args.features``: the shipped panel) keeps its members and CDFs and
    refits its weights; a new one of ``args.features`` has its CDFs fitted on the items trained on. With
    ``args.combiner`` ``"rank-mean"`` the weights are left equal (a new panel's) or as they are."""
    open_run(args)
    if ratings is None and args.ratings is not None:  # before any model loads: a bad file fails at once
        ratings = load_ratings(args.ratings, args.columns(), args.ratings_split)
    start = args.init_from or (str(DEFAULT_CHECKPOINT) if ratings is not None and not args.features else None)
    if start is not None:
        from hf_dialeval.modeling.checkpoint_sources import check_checkpoint, quiet_loading

        with quiet_loading():
            model = PanelModel.from_pretrained(check_checkpoint(start), use_safetensors=True)
        config = model.config
        members = load_members(config, device=args.scoring_device, batch_size=args.scoring_batch_size, dtype=args.scoring_dtype)
    else:
        model = None
        config, members = new_panel(args)
    validation_sets: list[RatedScores] = []
    if ratings is not None:
        train, validation = held_out_split(ratings, args.held_out_share, args.seed)
        name = str(args.ratings or "ratings")
        train_sets = [ratings_scores(name, train, config, members)]
        if validation is not None:
            validation_sets = [ratings_scores(f"{name} (held out)", validation, config, members)]
    else:
        cache = ScoreCache()
        train_sets = [benchmark_scores(name, config, members, args.data_dir, cache)
                      for name in args.benchmarks or default_benchmarks(args.data_dir)]
    if model is None:
        config.reference = reference_text(train_sets)
        model = PanelModel(config)
        model.set_cdfs([finite_column(train_sets, index) for index in range(len(config.features))])
    trainer = combiner_trainer(model, args, train_sets, validation_sets)

    def record() -> dict:
        return {"trained_on": {s.name: len(s.ratings) for s in train_sets},
                "validated_on": {s.name: len(s.ratings) for s in validation_sets},
                "weights": dict(zip(config.features, model.weights.tolist()))}

    return train_and_finish(trainer, None, record=record, train=args.combiner == "ranking")
