"""``hf-dialeval adapt``: a metric fine-tuned on a user's own domain by its paper's route, in one run, measured
before and after.

The stages are the metric's :class:`~hf_dialeval.registry.AdaptationStep` s, each a train command run with its
CPU-sized arguments, then the user's (which win), on the user's data: ``dialogues`` (no labels,
:func:`~hf_dialeval.data.dialogues.load_dialogues`) and ``ratings`` (:func:`~hf_dialeval.data.ratings.load_ratings`),
read and checked once, and handed to each stage as the rows it trains on (:mod:`~hf_dialeval.data.loaded_rows`).
The first stage continues the base checkpoint (the shipped default unless another is given), each later one the
stage before. A share of the ratings (by context, never by item) and of the dialogues is held out and never trained
on: the report (:mod:`.report`) gives the agreement of the base and of the adapted checkpoint with the
held-out ratings, beside the similarity and length floors, and the checklist's win rates on the held-out dialogues
before and after, so that agreement bought by losing the basic contrasts shows, and each stage's seconds and peak
memory; each stage says on stderr how long it will take once it has timed a step (:mod:`.costs`). The run owns its
output folder (:class:`~hf_dialeval.output_folder.OwnedFolder`, taken before anything else): every stage's run lives
in ``OUT.partial/`` beside it, and the adapted folder (the last stage's run, the report and a model card) is swapped
in whole when the run ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.adaptation.report import (
    MODEL_CARD,
    REPORT_JSON,
    REPORT_MARKDOWN,
    agreement,
    model_card,
    report_markdown,
)
from hf_dialeval.errors import OptionError
from hf_dialeval.evaluation.checklist import run_checklist
from hf_dialeval.inference.factory import check_checkpoints_for, load_metric
from hf_dialeval.output_folder import OwnedFolder, built_path, scratch_path
from hf_dialeval.registry import METRICS, AdaptationStep, MetricEntry, entry, train_commands
from hf_dialeval.training.options import TRAINING_RECORD
from hf_dialeval.training.run_folder import name_paths, named

if TYPE_CHECKING:  # datasets loads with the data: the command line imports this module for its defaults
    import datasets

    from hf_dialeval.data.columns import Columns

#: The floors every adapted metric is set beside: they need no training.
FLOORS = ("similarity", "length")
#: The floor a reference-assisted metric is also set beside: the reply's similarity with the reference.
REFERENCE_FLOOR = "reference-similarity"
#: The checklist's perturbations run before and after (the basic contrasts adaptation must keep).
CHECKLIST_PERTURBATIONS = ("random", "generic")
DEFAULT_HELD_OUT_SHARE = 0.2
DEFAULT_CHECKLIST_PAIRS = 200


@dataclasses.dataclass
class UserData:
    """The user's data of one kind, loaded and split: the part trained on, the part held out, and what the report
    says of it."""

    kind: str
    source: str
    trained_on: datasets.Dataset
    held_out: datasets.Dataset
    rows: int
    sha256: str

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "rows": self.rows, "sha256": self.sha256, "trained_on": len(self.trained_on),
                "held_out": len(self.held_out)}

    @property
    def name(self) -> str:
        """What the stages read the part trained on as (``--ratings NAME``; :mod:`~hf_dialeval.data.loaded_rows`),
        and what their records and errors call it."""
        return f"{self.source} (the {len(self.trained_on)} {self.kind} trained on)"


def _steps_for(spec: MetricEntry, given: set[str]) -> list[AdaptationStep]:
    """The stages of ``spec``'s route that ``given`` (kinds of data) feed; a route none of them feeds is an error
    naming what it reads."""
    if not spec.adaptation:
        routes = sorted(name for name, other in METRICS.items() if other.adaptation)
        raise OptionError(f"{spec.name} is not adapted in one command: adapt one of {routes}, or train it with its "
                          "train commands ('hf-dialeval train --help')")
    steps = [step for step in spec.adaptation if step.data in given]
    if not steps:
        wanted = sorted({step.data for step in spec.adaptation})
        raise OptionError(f"{spec.name} adapts on {' and '.join(wanted)}: give --{' or --'.join(wanted)}")
    return steps


@dataclasses.dataclass
class Adaptation:
    """One ``adapt`` run: the metric, the user's data (loaded and split), the base checkpoint, and the options."""

    metric: str
    output_dir: Path
    ratings: UserData | None
    dialogues: UserData | None
    base: str | None
    steps: list[AdaptationStep]
    training_flags: Sequence[str] = ()
    seed: int = 0
    checklist_pairs: int = DEFAULT_CHECKLIST_PAIRS
    batch_size: int = 32
    data_dir: str | os.PathLike | None = None
    progress: bool = False

    @property
    def base_checkpoint(self) -> str:
        """The checkpoint the first stage continues."""
        return self.base or str(entry(self.metric).default)

    @property
    def needs_reference(self) -> bool:
        """Whether the metric scores a reply against a reference (it meets the reference floor too, and is never
        handed its own reference as the original of a checklist pair)."""
        return entry(self.metric).metric_class.needs_reference

    @property
    def base_name(self) -> str:
        """The base as the report names it: the path given, or the shipped default's name."""
        return self.base or f"{entry(self.metric).hub_repo} (the shipped default)"

    @property
    def scratch(self) -> Path:
        """Where the run writes until it ends: beside the output folder, owned with it
        (:func:`~hf_dialeval.output_folder.scratch_path`)."""
        return scratch_path(self.output_dir)

    def user_data(self) -> dict[str, UserData]:
        """The user's data given, by kind."""
        return {data.kind: data for data in (self.ratings, self.dialogues) if data is not None}

    def trained_on(self) -> contextlib.AbstractContextManager[None]:
        """The block in which each stage reads the part of the user's data trained on by its name
        (:func:`~hf_dialeval.data.loaded_rows.rows_named`): the rows as read and checked once."""
        from hf_dialeval.data.loaded_rows import rows_named

        return rows_named({data.name: data.trained_on for data in self.user_data().values()})

    def scratch_names(self) -> dict[str, str]:
        """What each path of the scratch folder stands for, for the records the run leaves (the scratch is gone once
        the run ends): each stage's run, the adapted folder."""
        names = {str(self.scratch / step.command): f"the {step.command} stage of this adaptation"
                 for step in self.steps}
        names[str(built_path(self.output_dir))] = str(self.output_dir)
        return names

    def step_flags(self, step: AdaptationStep, start: str, output_dir: Path) -> list[str]:
        """The step's command-line flags: its CPU-sized ones, the data and start, what adapt sets, then the user's."""
        import torch

        command = train_commands()[step.command]
        flags = [*step.arguments, f"--{step.start_option.replace('_', '-')}", start,
                 f"--{step.data}", self.user_data()[step.data].name, "--output-dir", str(output_dir),
                 "--seed", str(self.seed)]
        if step.data == "ratings":  # held out here already: the command validates on nothing
            flags += ["--held-out-share", "0", "--eval-strategy", "no"]
        takes_data_dir = "data_dir" in {field.name for field in dataclasses.fields(command.arguments_class)}
        if self.data_dir is not None and takes_data_dir:
            flags += ["--data-dir", str(self.data_dir)]
        if not torch.cuda.is_available():  # where the Trainer must be told so (a CPU run in bf16)
            flags += ["--use-cpu"]
        # the Trainer's bar only where adapt draws bars (quiet library logs would turn it off); else its logs, as lines
        flags += ["--disable-tqdm", "false" if self.progress else "true"]
        return flags + list(self.training_flags)

    def step_arguments(self, step: AdaptationStep, flags: Sequence[str]) -> Any:
        """The step's ``TrainingArguments``, built from its ``flags`` (:meth:`step_flags`) as ``hf-dialeval train``
        builds them."""
        from hf_dialeval.training.arguments import parse_training_flags

        return parse_training_flags(train_commands()[step.command].arguments_class, flags, step.command)

    def evaluate(self, checkpoint: str | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Agreement with the held-out ratings and the checklist on the held-out dialogues, of ``checkpoint``."""
        metric = load_metric(self.metric, checkpoint, batch_size=self.batch_size)
        agreement_result = None
        if self.ratings is not None:
            agreement_result = agreement(score_ratings(metric, self.ratings.held_out, self.progress),
                                         self.ratings.held_out["score"], self.seed)
        return agreement_result, self.checklist(metric)

    def checklist(self, metric: Any) -> dict[str, Any] | None:
        """``metric``'s win rates on the checklist's pairs of the held-out dialogues (``None``: there are none)."""
        dialogues, references = checklist_dialogues(self)
        if not dialogues:
            return None
        # items made from ratings are a context and its reply: the pair is at that reply, not at an earlier turn
        rows = run_checklist(metric, dialogues, self.checklist_pairs, self.seed, CHECKLIST_PERTURBATIONS,
                             progress=self.progress, references=references if metric.needs_reference else None,
                             last_turn=self.dialogues is None)
        return {row["perturbation"]: {"n": row["n"], **row["wins"].get("overall", {})} for row in rows}

    def run(self, folder: OwnedFolder) -> dict[str, Any]:
        """Measure the base, train the stages, measure the adapted folder and swap it in (``folder``: this run's
        ownership of the output folder); the report."""
        from hf_dialeval.adaptation.costs import PeakMemory, StageEstimate
        from hf_dialeval.freed_memory import return_freed_memory
        from hf_dialeval.training.steps import training_callbacks

        return_freed_memory()  # before the base is measured: a run of stages, all within the same bound
        started = time.perf_counter()
        memory = PeakMemory()
        before, checklist_before = self.evaluate(self.base)
        report: dict[str, Any] = {
            "metric": self.metric, "base": self.base_name, "seed": self.seed,
            "data": {data.kind: data.describe() for data in (self.ratings, self.dialogues) if data is not None},
            "steps": []}
        built = folder.built
        start = self.base_checkpoint
        names = self.scratch_names()
        for index, step in enumerate(self.steps):
            stage_dir = built if index == len(self.steps) - 1 else self.scratch / step.command
            flags = self.step_flags(step, start, stage_dir)
            arguments = self.step_arguments(step, flags)
            memory.reset()
            step_started = time.perf_counter()
            with self.trained_on(), training_callbacks(StageEstimate(step.command)):
                train_commands()[step.command].train_function(arguments)
            report["steps"].append({"command": step.command, "arguments": named(flags, names),
                                    "seconds": round(time.perf_counter() - step_started, 1),
                                    "peak_memory_mb": memory.since_reset_mb()})
            truncated = json.loads((stage_dir / TRAINING_RECORD).read_text(encoding="utf-8")).get("truncated")
            if truncated is not None:  # the stage's inputs cut to the model's token limit: how many, which end
                report["steps"][-1]["truncated"] = truncated
            start = str(stage_dir)
        name_paths(built / TRAINING_RECORD, names)
        after, checklist_after = self.evaluate(str(built))
        if self.ratings is not None:
            report["held_out"] = {"n": before["n"], "before": before, "after": after, "floors": self.floors()}
        if checklist_before is not None:
            report["checklist"] = {"dialogues": checklist_source(self), "before": checklist_before,
                                   "after": checklist_after, "floors": self.checklist_floors()}
        report["seconds"] = round(time.perf_counter() - started, 1)
        report["peak_memory_mb"] = memory.process_mb()  # the whole run's peak
        (built / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (built / REPORT_MARKDOWN).write_text(report_markdown(report), encoding="utf-8")
        (built / MODEL_CARD).write_text(model_card(report), encoding="utf-8")
        folder.commit()
        return report

    def floors(self) -> dict[str, dict[str, Any]]:
        """The floors' agreement with the same held-out ratings."""
        human = self.ratings.held_out["score"]
        floors = FLOORS + ((REFERENCE_FLOOR,) if self.needs_reference else ())
        return {name: agreement(score_ratings(load_metric(name, batch_size=self.batch_size), self.ratings.held_out,
                                              self.progress), human, self.seed) for name in floors}

    def checklist_floors(self) -> dict[str, dict[str, Any]]:
        """The similarity floors' win rates on the same pairs: how hard the contrasts are on these dialogues (the
        length floor is left out: it wins every generic pair by length alone)."""
        floors = ("similarity",) + ((REFERENCE_FLOOR,) if self.needs_reference else ())
        return {name: self.checklist(load_metric(name, batch_size=self.batch_size)) for name in floors}


def score_ratings(metric: Any, ratings: datasets.Dataset, progress: bool = False) -> list[float]:
    """``metric``'s overall score of each rating's reply (``progress``: with a progress bar)."""
    references = ratings["reference"] if metric.needs_reference else None
    return metric.score_turns(ratings["context"], ratings["response"], conditions=ratings["condition"],
                              references=references, progress=progress and f"{metric.name}: held-out ratings").overall


def checklist_dialogues(adaptation: Adaptation) -> tuple[list[list[str]], list[str] | None]:
    """The held-out dialogues the checklist perturbs: the user's, or, from ratings alone, each held-out context with
    a reply people would give: its reference, a human reply, where the ratings carry one, else its best-rated reply.
    A reference-assisted metric would be handed the win by its own reference, so it gets the best-rated reply as the
    original and the reference as the pair's reference (contexts whose best reply is the reference are left out)."""
    if adaptation.dialogues is not None:
        return [list(dialogue) for dialogue in adaptation.dialogues.held_out["dialogue"]], None
    if adaptation.ratings is None:
        return [], None
    best: dict[tuple[str, ...], dict[str, Any]] = {}
    for rating in adaptation.ratings.held_out:
        key = tuple(rating["context"])
        if rating["context"] and (key not in best or rating["score"] > best[key]["score"]):
            best[key] = rating
    if not adaptation.needs_reference:
        return [[*rating["context"], rating["reference"] or rating["response"]] for rating in best.values()], None
    kept = [rating for rating in best.values() if rating["reference"] and rating["reference"] != rating["response"]]
    return [[*rating["context"], rating["response"]] for rating in kept], [rating["reference"] for rating in kept]


def checklist_source(adaptation: Adaptation) -> str:
    if adaptation.dialogues is not None:
        held = len(adaptation.dialogues.held_out)
        return f"{held} held-out dialogue{'' if held == 1 else 's'} of {adaptation.dialogues.source}"
    referenced = any(rating["reference"] for rating in adaptation.ratings.held_out)
    reply = ("its reference (a human reply) where the ratings give one, else its best-rated reply"
             if referenced and not adaptation.needs_reference else "its best-rated reply")
    return f"the held-out ratings' contexts, each with {reply} ({adaptation.ratings.source})"


def adaptation_inputs(metric: str, dialogues: str | None = None, ratings: str | None = None,
                      base: str | None = None, data_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """What an ``adapt`` run reads from disk, by its option: the output folder may be none of them, hold one or lie
    inside one (:func:`~hf_dialeval.output_folder.check_output_folder`)."""
    from hf_dialeval.data.paths import find_data_dir

    found_data_dir = data_dir if data_dir is not None else find_data_dir()
    inputs = {"--ratings": ratings, "--dialogues": dialogues, "--init-from": base or str(entry(metric).default),
              "--data-dir": None if found_data_dir is None else str(found_data_dir)}
    return {option: str(path) for option, path in inputs.items() if path is not None}


def adapt(metric: str, output_dir: str | os.PathLike, overwrite: bool = False, **options: Any) -> dict[str, Any]:
    """One ``hf-dialeval adapt`` run: the output folder taken first (:class:`~hf_dialeval.output_folder.OwnedFolder`:
    a second run, an unsafe folder or one that holds an input refused), every check of :func:`prepare_adaptation`,
    the run, and the adapted folder swapped in; returns the report. ``options``: those of
    :func:`prepare_adaptation`."""
    inputs = adaptation_inputs(metric, options.get("dialogues"), options.get("ratings"), options.get("base"),
                               options.get("data_dir"))
    with OwnedFolder(output_dir, inputs, overwrite=overwrite) as folder:
        adaptation = prepare_adaptation(metric, output_dir, **options)
        # stdout carries the run's summary alone: what the libraries print (the Trainer's metrics) goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            return adaptation.run(folder)


def prepare_adaptation(metric: str, output_dir: str | os.PathLike, dialogues: str | None = None,
                       ratings: str | None = None, base: str | None = None,
                       columns: Columns | None = None, ratings_split: str | None = None,
                       dialogues_split: str | None = None, held_out_share: float = DEFAULT_HELD_OUT_SHARE,
                       seed: int = 0, training_flags: Sequence[str] = (),
                       checklist_pairs: int = DEFAULT_CHECKLIST_PAIRS, batch_size: int = 32,
                       data_dir: str | os.PathLike | None = None, progress: bool = False) -> Adaptation:
    """Everything an ``adapt`` run checks before any model loads: the metric's route and the data it reads, the base
    checkpoint, the data (read and split once, the held-out share able to answer) and every check of every stage, on
    the rows it will train on. ``output_dir`` is owned by :func:`adapt`; ``progress``: draw progress bars (the
    Trainer's and the measurements')."""
    from hf_dialeval.data.columns import Columns
    from hf_dialeval.data.dialogues import load_dialogues
    from hf_dialeval.data.held_out import split_user_data
    from hf_dialeval.data.ratings import load_ratings
    from hf_dialeval.data.tables import rows_sha256

    spec = entry(metric)
    given = {kind for kind, source in (("ratings", ratings), ("dialogues", dialogues)) if source is not None}
    steps = _steps_for(spec, given)
    if base is not None:
        base = check_checkpoints_for(metric, base)[0]
    loaded_ratings = loaded_dialogues = None
    if ratings is not None:
        loaded_ratings = load_ratings(ratings, columns or Columns(), ratings_split,
                                      spec.metric_class.needs_reference)
    if dialogues is not None:
        loaded_dialogues = load_dialogues(dialogues, columns or Columns(), dialogues_split, data_dir)
    split = split_user_data(loaded_ratings, loaded_dialogues, held_out_share, seed, ratings_source=str(ratings),
                            dialogues_source=str(dialogues))
    user_data = {}
    for kind, source, rows, trained, held in (
            ("ratings", ratings, loaded_ratings, split.ratings_trained, split.ratings_held_out),
            ("dialogues", dialogues, loaded_dialogues, split.dialogues_trained, split.dialogues_held_out)):
        if rows is not None:
            user_data[kind] = UserData(kind, source, trained, held, len(rows), rows_sha256(rows))
    adaptation = Adaptation(metric, Path(output_dir), user_data.get("ratings"), user_data.get("dialogues"), base,
                            steps, list(training_flags), seed, checklist_pairs, batch_size, data_dir, progress)
    # every check of every stage runs now, before any model loads: its flags parse, its options hold together
    # (what the train function checks first), and a stage that refuses some data only once it reads it reads it, as
    # the stage will
    with adaptation.trained_on():
        for step in steps:
            arguments = adaptation.step_arguments(step, adaptation.step_flags(step, adaptation.base_checkpoint,
                                                                              adaptation.scratch / "check"))
            arguments.check_before_training()
            check = train_commands()[step.command].check_function
            if check is not None:
                check(arguments)
    return adaptation
