"""The options of a train command that learns from the user's own data, importable without torch or datasets:
``--ratings`` (human scores, read by :func:`hf_dialeval.data.ratings.load_ratings`), ``--dialogues`` (conversations
without labels, read by :func:`hf_dialeval.data.dialogues.load_dialogues`) and the column mapping both share
(``docs/data-formats.md``: "Your own ratings, for training" and "Your own dialogues, for training"). Each is a mixin
of a command's options, before :class:`~.options.DialEvalTrainingOptions` in its bases; a command may take both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.training.options import Range

if TYPE_CHECKING:  # they import datasets: --help lists these options without it
    import datasets

    from hf_dialeval.data.dialogues import DialogueColumns
    from hf_dialeval.data.ratings import RatingColumns

HELD_OUT_SHARE = Range("above 0 and below 1, or 0 (none held out)", lambda value: 0 <= value < 1)


@dataclass
class ColumnOptions:
    """Which column of the user's data holds the fields that ratings and dialogues share, and how a context given as
    one text splits into utterances."""

    context_column: str = field(default="context", metadata={
        "help": "the column of the context: a list of utterances, or one text split on --context-separator"})
    context_separator: str = field(default="\n", metadata={
        "help": "what separates the utterances of a context (or dialogue, or speakers) given as one text (default: a "
                "newline)"})
    response_column: str = field(default="response", metadata={"help": "the column of the reply to the context"})
    condition_column: str = field(default="condition", metadata={
        "help": "the column of a persona or knowledge text"})


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
    score_column: str = field(default="score", metadata={"help": "the --ratings column of the human score"})
    reference_column: str = field(default="reference", metadata={
        "help": "the --ratings column of a human reference reply"})

    def rating_columns(self) -> RatingColumns:
        from hf_dialeval.data.ratings import RatingColumns

        return RatingColumns(context=self.context_column, response=self.response_column, score=self.score_column,
                             reference=self.reference_column, condition=self.condition_column,
                             context_separator=self.context_separator)

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
        "help": "the --dialogues column of a whole dialogue: a list of utterances, or one text split on "
                "--context-separator (a row without one is a context and its reply)"})
    speakers_column: str = field(default="speakers", metadata={
        "help": "the --dialogues column of the speakers, one per utterance"})

    def dialogue_columns(self) -> DialogueColumns:
        from hf_dialeval.data.dialogues import DialogueColumns

        return DialogueColumns(dialogue=self.dialogue_column, context=self.context_column,
                               response=self.response_column, condition=self.condition_column,
                               speakers=self.speakers_column, context_separator=self.context_separator)

    def training_dialogues(self, validate: bool = True, fewest: int = 2
                           ) -> tuple[datasets.Dataset, datasets.Dataset | None, dict[str, Any]]:
        """The dialogues of ``--dialogues`` (of a command whose options also hold ``data_dir`` and ``seed``): those
        trained on, those held out to validate on when ``validate`` (by dialogue,
        :func:`~hf_dialeval.data.dialogues.validation_split`; else ``None``), and what the run's record says of them.
        Fewer than ``fewest`` different dialogues to split are refused in one line."""
        from hf_dialeval.data.dialogues import dialogues_record, load_dialogues, validation_split

        dialogues = load_dialogues(self.dialogues, self.dialogue_columns(), self.dialogues_split, self.data_dir)
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
