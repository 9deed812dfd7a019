"""The options of a train command that learns from the user's own ratings (``--ratings`` and its column mapping),
importable without torch. The ratings are read by :func:`hf_dialeval.data.ratings.load_ratings`
(``docs/data-formats.md``: "Training on your own ratings")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.training.options import Range

if TYPE_CHECKING:  # imports datasets: --help lists these options without it
    from hf_dialeval.data.ratings import RatingColumns

HELD_OUT_SHARE = Range("above 0 and below 1, or 0 (none held out)", lambda value: 0 <= value < 1)


@dataclass
class RatingsOptions:
    """Where the ratings are and which of their columns holds what; a share of their contexts held out to validate
    on. A mixin of a command's options (before :class:`~.options.DialEvalTrainingOptions` in its bases)."""

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
    context_column: str = field(default="context", metadata={
        "help": "the --ratings column of the context: a list of utterances, or one text split on "
                "--context-separator"})
    context_separator: str = field(default="\n", metadata={
        "help": "what separates the utterances of a context given as one text (default: a newline)"})
    response_column: str = field(default="response", metadata={"help": "the --ratings column of the rated reply"})
    score_column: str = field(default="score", metadata={"help": "the --ratings column of the human score"})
    reference_column: str = field(default="reference", metadata={
        "help": "the --ratings column of a human reference reply"})
    condition_column: str = field(default="condition", metadata={
        "help": "the --ratings column of a persona or knowledge text"})

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
