"""``hf-dialeval adapt``: a metric fine-tuned on a user's own domain by its paper's route, in one run, measured
before and after.

The stages are the metric's :class:`~hf_dialeval.registry.AdaptationStep` s, each a train command run with its
CPU-sized arguments, then the user's (which win), on the user's data: ``dialogues`` (no labels,
:func:`~hf_dialeval.data.dialogues.load_dialogues`) and ``ratings`` (:func:`~hf_dialeval.data.ratings.load_ratings`).
The first stage continues the base checkpoint (the shipped default unless another is given), each later one the
stage before. A share of the ratings (by context, never by item) and of the dialogues is held out and never trained
on: the report (:mod:`.adaptation_report`) gives the agreement of the base and of the adapted checkpoint with the
held-out ratings, beside the similarity and length floors, and the checklist's win rates on the held-out dialogues
before and after, so that agreement bought by losing the basic contrasts shows. The adapted folder is written whole
(:func:`~hf_dialeval.folders.replacing_folder`): the last stage's run, the report and a model card.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.errors import DialEvalError, OptionError, one_line
from hf_dialeval.evaluation.checklist import run_checklist
from hf_dialeval.folders import replacing_folder
from hf_dialeval.inference.factory import check_checkpoints_for, load_metric
from hf_dialeval.registry import METRICS, AdaptationStep, MetricEntry, entry, train_commands
from hf_dialeval.training.adaptation_report import (
    MODEL_CARD,
    REPORT_JSON,
    REPORT_MARKDOWN,
    agreement,
    model_card,
    report_markdown,
)

if TYPE_CHECKING:  # datasets loads with the data: the command line imports this module for its defaults
    import datasets

    from hf_dialeval.data.dialogues import DialogueColumns
    from hf_dialeval.data.ratings import RatingColumns

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

    def write_training_file(self, folder: Path) -> Path:
        """The part trained on as a JSONL file in the data model's columns (what the train command reads)."""
        path = folder / f"{self.kind}.jsonl"
        with path.open("w", encoding="utf-8") as file:
            for row in self.trained_on:
                # an empty context stays (a reply that opens the conversation); no speakers is none given
                kept = {key: value for key, value in row.items() if value is not None and (value or key != "speakers")}
                file.write(json.dumps(kept, ensure_ascii=False) + "\n")
        return path


def _split(kind: str, source: str, rows: datasets.Dataset, share: float, seed: int) -> UserData:
    from hf_dialeval.data.dialogues import held_out_dialogues
    from hf_dialeval.data.ratings import held_out_split
    from hf_dialeval.data.tables import rows_sha256

    kept, held = held_out_split(rows, share, seed) if kind == "ratings" else held_out_dialogues(rows, share, seed)
    return UserData(kind, source, kept, held, len(rows), rows_sha256(rows))


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

    def write_training_files(self, folder: Path) -> dict[str, Path]:
        """Each kind of the user's data, the part trained on, written once into ``folder`` for the stages to read."""
        return {data.kind: data.write_training_file(folder) for data in (self.ratings, self.dialogues)
                if data is not None}

    def step_arguments(self, step: AdaptationStep, start: str, data_file: Path, output_dir: Path) -> Any:
        """The step's ``TrainingArguments``: its CPU-sized flags, the data and start, then the user's flags."""
        import torch
        from transformers import HfArgumentParser

        command = train_commands()[step.command]
        flags = [*step.arguments, f"--{step.start_option.replace('_', '-')}", start, f"--{step.data}", str(data_file),
                 "--output-dir", str(output_dir), "--seed", str(self.seed)]
        if step.data == "ratings":  # held out here already: the command validates on nothing
            flags += ["--held-out-share", "0", "--eval-strategy", "no"]
        if self.data_dir is not None and "data_dir" in {field.name for field in dataclasses.fields(command.arguments_class)}:
            flags += ["--data-dir", str(self.data_dir)]
        if not torch.cuda.is_available():  # where the Trainer must be told so (a CPU run in bf16)
            flags += ["--use-cpu"]
        flags += ["--disable-tqdm", "false"]  # a progress bar, which quiet library logs would otherwise turn off
        flags += list(self.training_flags)
        parser = HfArgumentParser(command.arguments_class)
        try:
            arguments, unknown = parser.parse_args_into_dataclasses(args=flags, return_remaining_strings=True)
        except DialEvalError:
            raise
        except ValueError as error:  # TrainingArguments' own checks of the options given
            raise OptionError(f"hf-dialeval train {step.command}: {one_line(error)}") from error
        if unknown:
            raise OptionError(f"hf-dialeval train {step.command} takes no {' '.join(unknown)}: see "
                              f"'hf-dialeval train {step.command} --help' for the options adapt passes on")
        return arguments

    def evaluate(self, checkpoint: str | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Agreement with the held-out ratings and the checklist on the held-out dialogues, of ``checkpoint``."""
        metric = load_metric(self.metric, checkpoint, batch_size=self.batch_size)
        agreement_result = None
        if self.ratings is not None:
            agreement_result = agreement(score_ratings(metric, self.ratings.held_out), self.ratings.held_out["score"],
                                         self.seed)
        return agreement_result, self.checklist(metric)

    def checklist(self, metric: Any) -> dict[str, Any] | None:
        """``metric``'s win rates on the checklist's pairs of the held-out dialogues (``None``: there are none)."""
        dialogues, references = checklist_dialogues(self)
        if not dialogues:
            return None
        # items made from ratings are a context and its reply: the pair is at that reply, not at an earlier turn
        rows = run_checklist(metric, dialogues, self.checklist_pairs, self.seed, CHECKLIST_PERTURBATIONS,
                             progress=True, references=references if metric.needs_reference else None,
                             last_turn=self.dialogues is None)
        return {row["perturbation"]: {"n": row["n"], **row["wins"].get("overall", {})} for row in rows}

    def run(self) -> dict[str, Any]:
        """Measure the base, train the stages, measure the adapted folder, write it whole; the report."""
        started = time.perf_counter()
        before, checklist_before = self.evaluate(self.base)
        report: dict[str, Any] = {
            "metric": self.metric, "base": self.base_name, "seed": self.seed,
            "data": {data.kind: data.describe() for data in (self.ratings, self.dialogues) if data is not None},
            "steps": []}
        with replacing_folder(self.output_dir) as built, tempfile.TemporaryDirectory(prefix="hf-dialeval-adapt-") as work:
            start = self.base_checkpoint
            files = self.write_training_files(Path(work))
            for index, step in enumerate(self.steps):
                last = index == len(self.steps) - 1
                stage_dir = built if last else Path(work, step.command)
                arguments = self.step_arguments(step, start, files[step.data], stage_dir)
                step_started = time.perf_counter()
                train_commands()[step.command].train_function(arguments)
                report["steps"].append({"command": step.command,
                                        "arguments": [*step.arguments, *self.training_flags],
                                        "seconds": round(time.perf_counter() - step_started, 1)})
                start = str(stage_dir)
            after, checklist_after = self.evaluate(str(built))
            if self.ratings is not None:
                report["held_out"] = {"n": before["n"], "before": before, "after": after,
                                      "floors": self.floors()}
            if checklist_before is not None:
                report["checklist"] = {"dialogues": checklist_source(self), "before": checklist_before,
                                       "after": checklist_after, "floors": self.checklist_floors()}
            report["seconds"] = round(time.perf_counter() - started, 1)
            report["peak_memory_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            (built / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            (built / REPORT_MARKDOWN).write_text(report_markdown(report), encoding="utf-8")
            (built / MODEL_CARD).write_text(model_card(report), encoding="utf-8")
        return report

    def floors(self) -> dict[str, dict[str, Any]]:
        """The floors' agreement with the same held-out ratings."""
        human = self.ratings.held_out["score"]
        floors = FLOORS + ((REFERENCE_FLOOR,) if self.needs_reference else ())
        return {name: agreement(score_ratings(load_metric(name, batch_size=self.batch_size), self.ratings.held_out),
                                human, self.seed) for name in floors}

    def checklist_floors(self) -> dict[str, dict[str, Any]]:
        """The similarity floors' win rates on the same pairs: how hard the contrasts are on these dialogues (the
        length floor is left out: it wins every generic pair by length alone)."""
        floors = ("similarity",) + ((REFERENCE_FLOOR,) if self.needs_reference else ())
        return {name: self.checklist(load_metric(name, batch_size=self.batch_size)) for name in floors}


def score_ratings(metric: Any, ratings: datasets.Dataset) -> list[float]:
    """``metric``'s overall score of each rating's reply."""
    references = ratings["reference"] if metric.needs_reference else None
    return metric.score_turns(ratings["context"], ratings["response"], conditions=ratings["condition"],
                              references=references, progress=f"{metric.name}: held-out ratings").overall


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


def prepare_adaptation(metric: str, output_dir: str | os.PathLike, dialogues: str | None = None,
                       ratings: str | None = None, base: str | None = None,
                       rating_columns: RatingColumns | None = None,
                       dialogue_columns: DialogueColumns | None = None, ratings_split: str | None = None,
                       dialogues_split: str | None = None, held_out_share: float = DEFAULT_HELD_OUT_SHARE,
                       seed: int = 0, training_flags: Sequence[str] = (), overwrite: bool = False,
                       checklist_pairs: int = DEFAULT_CHECKLIST_PAIRS, batch_size: int = 32,
                       data_dir: str | os.PathLike | None = None) -> Adaptation:
    """Everything an ``adapt`` run checks before any model loads: the metric's route and the data it reads, the
    output folder, the base checkpoint, the data (read and split) and every stage's arguments."""
    from hf_dialeval.data.dialogues import DialogueColumns, load_dialogues
    from hf_dialeval.data.ratings import RatingColumns, load_ratings

    spec = entry(metric)
    given = {kind for kind, source in (("ratings", ratings), ("dialogues", dialogues)) if source is not None}
    steps = _steps_for(spec, given)
    folder = Path(output_dir)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())) and not overwrite:
        raise OptionError(f"--output-dir {folder} is not empty: give another folder, or --overwrite-output-dir to "
                          "replace it once the run has finished")
    if not 0 < held_out_share < 1:
        raise OptionError(f"--held-out-share must be above 0 and below 1, not {held_out_share}")
    if base is not None:
        base = check_checkpoints_for(metric, base)[0]
    loaded = {}
    if ratings is not None:
        needs_reference = spec.metric_class.needs_reference
        loaded["ratings"] = _split("ratings", ratings, load_ratings(ratings, rating_columns or RatingColumns(), ratings_split,
                                                                     needs_reference), held_out_share, seed)
    if dialogues is not None:
        loaded["dialogues"] = _split("dialogues", dialogues, load_dialogues(dialogues, dialogue_columns or DialogueColumns(),
                                                                            dialogues_split, data_dir),
                                     held_out_share, seed)
    adaptation = Adaptation(metric, folder, loaded.get("ratings"), loaded.get("dialogues"), base, steps,
                            list(training_flags), seed, checklist_pairs, batch_size, data_dir)
    # every stage's flags parse, and a stage that refuses some data only once it reads it reads it now, before any
    # model loads: from the file the stage will be given
    with tempfile.TemporaryDirectory() as scratch:
        files = adaptation.write_training_files(Path(scratch))
        for step in steps:
            arguments = adaptation.step_arguments(step, adaptation.base_checkpoint, files[step.data],
                                                  Path(scratch, "run"))
            check = train_commands()[step.command].check_function
            if check is None:
                continue
            try:
                check(arguments)
            except DialEvalError as error:  # it names the file it read: name the user's data instead
                data = adaptation.ratings if step.data == "ratings" else adaptation.dialogues
                raise type(error)(str(error).replace(str(files[step.data]), f"{data.source} (the "
                                                     f"{len(data.trained_on)} {data.kind} trained on)")) from error
    return adaptation
