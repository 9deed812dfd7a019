"""The options of a train command that learns from the user's own data, importable without torch or datasets:
``--ratings`` (human scores, read by :func:`hf_dialeval.data.ratings.load_ratings`), ``--dialogues`` (conversations
without labels, read by :func:`hf_dialeval.data.dialogues.load_dialogues`) and the column mapping both share
(``docs/data-formats.md``: "Your own ratings, for training" and "Your own dialogues, for training"). Each is a mixin
of a command's options, before :class:`~.options.DialEvalTrainingOptions` in its bases; a command may take both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from hf_dialeval.data.cells import DEFAULT_SEPARATOR
from hf_dialeval.errors import OptionError
from hf_dialeval.training.options import Range

if TYPE_CHECKING:  # they import datasets: --help lists these options without it
    import datasets

    from hf_dialeval.data.columns import Columns

HELD_OUT_SHARE = Range("above 0 and below 1, or 0 (none held out)", lambda value: 0 <= value < 1)


@dataclass
class ColumnOptions:
    """Which column of the user's data holds the fields that ratings and dialogues share, and how a context given as
    one text splits into utterances (:func:`~hf_dialeval.data.cells.text_list`: the rule of every reader)."""

    context_column: str = field(default="context", metadata={
        "help": "the column of the context: a list of utterances; in one text, a JSON array of them, or the "
                "utterances split on --context-separator"})
    context_separator: str = field(default=DEFAULT_SEPARATOR, metadata={
        "help": "what separates the utterances of a context (or dialogue, or speakers) given as one text that is not "
                "a JSON array (default: a line break)"})
    response_column: str = field(default="response", metadata={"help": "the column of the reply to the context"})
    condition_column: str = field(default="condition", metadata={
        "help": "the column of a persona or knowledge text"})

    def columns(self) -> Columns:
        """The column of each field these options name."""
        return columns_from(self)


def columns_from(options: Any) -> Columns:
    """The :class:`~hf_dialeval.data.columns.Columns` that ``options`` (these dataclasses, or a command's parsed
    arguments) name with ``--FIELD-column`` and ``--context-separator``."""
    from hf_dialeval.data.columns import Columns

    named = {option.name: getattr(options, f"{option.name}_column") for option in dataclasses.fields(Columns)
             if hasattr(options, f"{option.name}_column")}
    return Columns(**named, context_separator=options.context_separator)


@dataclass
class RatingsOptions(ColumnOptions):
    """Where the ratings are and which of their columns holds what; a share of their contexts held out to validate
    on."""

    RANGES: ClassVar[dict[str, Range]] = {"held_out_share": HELD_OUT_SHARE}

    ratings: str | None = field(default=None, metadata={
        "help": "your own ratings: a JSONL, JSON, CSV, TSV or Parquet file, a folder datasets.save_to_disk wrote, or "
                "a Hub dataset id (from the local cache offline); columns context, response, score (any scale), "
                "optionally reference, condition, system"})
    ratings_split: str | None = field(default=None, metadata={
        "help": "the split of --ratings to train on, when it has several (default: train)"})
    held_out_share: float = field(default=0.1, metadata={
        "help": "share of the --ratings contexts held out to validate on (all ratings of a context on one side); "
                "0: none (then give --eval-strategy no)"})
    score_column: str = field(default="score", metadata={"help": "the column of the human score"})
    reference_column: str = field(default="reference", metadata={
        "help": "the column of a human reference reply"})

    def check_before_training(self) -> None:
        """Also: the options that mean something only with ``--ratings``, and a validation left without data."""
        if self.ratings is None and self.ratings_split is not None:
            raise OptionError("--ratings-split picks a split of --ratings: give --ratings too")
        if self.ratings is not None and self.held_out_share == 0 and getattr(self, "eval_strategy", "no") != "no":
            raise OptionError("--held-out-share 0 leaves no ratings to validate on: give --eval-strategy no, or a "
                              "share above 0")
        super().check_before_training()


@dataclass
class DialoguesOptions(ColumnOptions):
    """Where the user's dialogues are and which of their columns holds what."""

    dialogues: str | None = field(default=None, metadata={
        "help": "your own dialogues: a JSONL, JSON, CSV, TSV or Parquet file, a folder datasets.save_to_disk wrote, a "
                "Hub dataset id (from the local cache offline), or a shipped corpus name (dailydialog, topical-chat, "
                "dailydialog-plusplus); items shaped as score's inputs: dialogue, or context + response, optionally "
                "condition/knowledge/persona and speakers"})
    dialogues_split: str | None = field(default=None, metadata={
        "help": "the split of --dialogues to train on, when it has several (default: train)"})
    dialogue_column: str = field(default="dialogue", metadata={
        "help": "the column of a whole dialogue: a list of utterances, or one text as --context-column reads one "
                "(a row without one is a context and its reply)"})
    speakers_column: str = field(default="speakers", metadata={
        "help": "the column of the speakers, one per utterance"})

    def training_dialogues(self, validate: bool = True, fewest: int = 2
                           ) -> tuple[datasets.Dataset, datasets.Dataset | None, dict[str, Any]]:
        """The dialogues of ``--dialogues`` (of a command whose options also hold ``data_dir`` and ``seed``): those
        trained on, those held out to validate on when ``validate`` (by dialogue,
        :func:`~hf_dialeval.data.dialogues.validation_split`; else ``None``), and what the run's record says of them.
        Fewer than ``fewest`` different dialogues to split are refused in one line."""
        from hf_dialeval.data.dialogues import dialogues_record, load_dialogues, validation_split

        dialogues = load_dialogues(self.dialogues, self.columns(), self.dialogues_split, self.data_dir)
        kept, held = dialogues, None
        if validate:
            different = len({tuple(dialogue) for dialogue in dialogues["dialogue"]})
            if different < fewest:
                raise OptionError(f"--dialogues {self.dialogues} holds {different} different dialogue(s): give "
                                  f"{fewest} or more (some are held out to validate on)")
            kept, held = validation_split(dialogues, self.seed)
        return kept, held, dialogues_record(self.dialogues, dialogues, held)

    def check_before_training(self) -> None:
        """Also: ``--dialogues-split`` means something only with ``--dialogues``."""
        if self.dialogues is None and self.dialogues_split is not None:
            raise OptionError("--dialogues-split picks a split of --dialogues: give --dialogues too")
        super().check_before_training()


def item_column_options(*others: str) -> list[dataclasses.Field]:
    """The column options of the fields an item to score has (``score``'s), and the options ``others``: the train
    commands' own."""
    options = {option.name: option for kind in (RatingsOptions, DialoguesOptions) for option in dataclasses.fields(kind)}
    return [options[name] for name in ("context_column", "context_separator", "response_column", "reference_column",
                                       "condition_column", "dialogue_column", "speakers_column", *others)]
