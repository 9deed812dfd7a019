"""``hf-dialeval train panel`` (options: :class:`~.options.PanelTrainingOptions`): score the rated sets with the
members, fit a new panel's CDFs on the items, and train the combiner's weights with :class:`~.trainer.PanelTrainer`."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from transformers import default_data_collator

from hf_dialeval.data.benchmarks import BENCHMARKS, human_dimensions, load_benchmark
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.errors import OptionError
from hf_dialeval.freed_memory import trim_freed_memory
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.data import RatedScores, correlation_weights, finite_column, preference_pairs
from hf_dialeval.metrics.panel.members import feature_rows, member_dimensions, member_loaders, member_record
from hf_dialeval.metrics.panel.modeling_panel import PanelModel
from hf_dialeval.metrics.panel.options import DEFAULT_FEATURES, PanelTrainingOptions
from hf_dialeval.metrics.panel.reference_dialogues import ReferenceDialogues
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


def rated_scores(name: str, rows: Sequence[Sequence[float]], ratings: Sequence[float | None]) -> RatedScores:
    """A rated set's items as the members scored them (``rows``: per item, the raw scores in the panel's feature
    order) with their ``ratings``; items without a rating left out."""
    kept = [(row, rating) for row, rating in zip(rows, ratings) if rating is not None and math.isfinite(rating)]
    return RatedScores(name, [list(row) for row, _ in kept], [rating for _, rating in kept])


def rating_items(ratings: datasets.Dataset) -> list[dict[str, Any]]:
    """The items of loaded ratings, as a member scores them."""
    return [{"context": row["context"], "response": row["response"], "condition": row["condition"],
             "reference": row["reference"]} for row in ratings]


@dataclass
class RatedSet:
    """A set the members score: its name, its items' ratings (``None`` where an item has none) and how a member
    scores its items."""

    name: str
    ratings: Sequence[float | None]
    score: Callable[[DialogueMetric], ScoreOutput]


def ratings_sets(args: PanelTrainingArguments, ratings: datasets.Dataset) -> list[RatedSet]:
    """The user's ratings as the set trained on and, with ``args.held_out_share``, the set of contexts held out."""
    train, validation = held_out_split(ratings, args.held_out_share, args.seed)
    source = str(args.ratings or "ratings")
    sets = []
    for name, rows in ((source, train), (f"{source} (held out)", validation)):
        if rows is not None:
            items = rating_items(rows)
            # a bar where the Trainer draws its own (adapt turns both off where stderr is no terminal)
            sets.append(RatedSet(name, list(rows["score"]), lambda metric, items=items, name=name: metric.score_items(
                items, progress=not args.disable_tqdm and f"{metric.name} on {name}")))
    return sets


def benchmark_sets(args: PanelTrainingArguments) -> list[RatedSet]:
    """The registered benchmarks ``args.benchmarks`` (default: :func:`default_benchmarks`), each member's scores from
    the score cache where it holds them."""
    cache = ScoreCache()
    sets = []
    for name in args.benchmarks or default_benchmarks(args.data_dir):
        dataset = load_benchmark(name, args.data_dir)
        sets.append(RatedSet(name, dataset[headline(dataset)],
                             lambda metric, dataset=dataset, name=name: cache.scores(metric, dataset, name)[0]))
    return sets


def member_checkpoints(args: PanelTrainingArguments, members: Sequence[str]) -> dict[str, str]:
    """The checkpoints ``--member-checkpoints`` gives a new panel's ``members``, each checked to be one of them."""
    checkpoints = dict(pair.split("=", 1) for pair in args.member_checkpoints or ())
    stray = sorted(set(checkpoints) - set(members))
    if stray:
        raise OptionError(f"--member-checkpoints names {stray}, which no --features or --dialogue-features score is of")
    return checkpoints


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
    refits its weights; a new one of ``args.features`` has its CDFs fitted on the items trained on. The ranking loss
    starts from :func:`~.data.correlation_weights` of the sets trained on (``args.start_weights`` ``"given"``: from
    the continued panel's or ``args.feature_weights``). With ``args.combiner`` ``"rank-mean"`` the weights are not
    trained: a new panel's are ``args.feature_weights`` (default equal), a continued one's as they are. A new panel
    with ``args.dialogue_features`` keeps its members' raw scores of the reference dialogues
    (:class:`~.reference_dialogues.ReferenceDialogues`), its dialogue-level CDFs; a continued one keeps its own. The
    members score one after another, each model freed before the next loads: together they take more memory than one
    of them."""
    open_run(args)
    if ratings is None and args.ratings is not None:  # before any model loads: a bad file fails at once
        ratings = load_ratings(args.ratings, args.columns(), args.ratings_split)
    start = args.init_from or (str(DEFAULT_CHECKPOINT) if ratings is not None and not args.features else None)
    model: PanelModel | None = None
    if start is not None:
        from hf_dialeval.modeling.checkpoint_sources import check_checkpoint, quiet_loading

        with quiet_loading():
            model = PanelModel.from_pretrained(check_checkpoint(start), use_safetensors=True)
        dimensions = {record["metric"]: record["dimensions"] for record in model.config.members}
        dialogue_dimensions = {}  # kept as they are, with the reference dialogues' scores
        loaders = member_loaders(model.config, device=args.scoring_device, dtype=args.scoring_dtype)
    else:
        dimensions = member_dimensions(args.features or DEFAULT_FEATURES)
        dialogue_dimensions = member_dimensions(args.dialogue_features or ())
        checkpoints = member_checkpoints(args, [*dimensions, *dialogue_dimensions])
        loaders, dialogue_loaders = ({name: functools.partial(load_metric, name, checkpoints.get(name),
                                                              device=args.scoring_device, dtype=args.scoring_dtype)
                                      for name in names} for names in (dimensions, dialogue_dimensions))
    sets = ratings_sets(args, ratings) if ratings is not None else benchmark_sets(args)
    reference = ReferenceDialogues(args.data_dir, args.reference_dialogues) if dialogue_dimensions else None
    outputs: dict[str, dict[str, ScoreOutput]] = {rated.name: {} for rated in sets}
    records, dialogue_records = [], []
    for member, member_scores in dimensions.items():
        metric = loaders[member](batch_size=args.scoring_batch_size)
        if model is None:
            records.append(member_record(member, checkpoints.get(member), metric, member_scores))
        for rated in sets:
            outputs[rated.name][member] = rated.score(metric)
        if reference is not None:
            reference.score(member, metric, dialogue=False, progress=not args.disable_tqdm)
        del metric  # freed, its memory handed back, before the next member loads
        trim_freed_memory()
    for member, member_scores in dialogue_dimensions.items():
        metric = dialogue_loaders[member](batch_size=args.scoring_batch_size)
        dialogue_records.append(member_record(member, checkpoints.get(member), metric, member_scores))
        reference.score(member, metric, dialogue=True, progress=not args.disable_tqdm)
        del metric
        trim_freed_memory()
    config = model.config if model is not None else PanelConfig(
        members=records, quantile_count=args.quantile_count, dialogue_members=dialogue_records,
        mark_down_only=args.mark_down_only or (),
        **(reference.config_fields() if reference is not None else {}))
    scored = [rated_scores(rated.name, feature_rows(config.features, outputs[rated.name], len(rated.ratings)),
                           rated.ratings) for rated in sets]
    # with ratings, the set trained on and the one held out; else every benchmark is trained on
    train_sets, validation_sets = (scored[:1], scored[1:]) if ratings is not None else (scored, [])
    if model is None:
        config.reference = reference_text(train_sets)
        model = PanelModel(config)
        model.set_cdfs([finite_column(train_sets, index) for index in range(len(config.features))])
        if reference is not None:
            model.set_dialogue_reference(*reference.rows(config))
        if args.feature_weights:
            model.set_weights(args.feature_weights)
    if args.combiner == "ranking" and args.start_weights == "correlation":
        model.set_weights(correlation_weights(train_sets))
    started_from = dict(zip(config.features, model.weights.tolist()))
    trainer = combiner_trainer(model, args, train_sets, validation_sets)

    def record() -> dict:
        return {"trained_on": {s.name: len(s.ratings) for s in train_sets},
                "validated_on": {s.name: len(s.ratings) for s in validation_sets},
                "start_weights": started_from, "weights": dict(zip(config.features, model.weights.tolist()))}

    return train_and_finish(trainer, None, record=record, train=args.combiner == "ranking")
