"""Ratings a user trains on: human scores of replies in their own domain, read from a file (JSONL, JSON, CSV, TSV,
Parquet), a folder ``datasets.save_to_disk`` wrote, or a Hub dataset id (``datasets.load_dataset``, from the local
cache when offline), their columns mapped to the data model's fields (:class:`~hf_dialeval.data.columns.Columns`).

A rating is ``context`` (its utterances, :func:`~hf_dialeval.data.cells.text_list`), ``response``, ``score``
(a finite number on any scale), and optionally ``reference``, ``condition`` and ``system``. What is wrong fails here,
in one line naming the source, the row and the column, before any model loads. A row identical in every column of
the source to an earlier one is dropped, and their count told in one line
(:func:`~hf_dialeval.data.tables.duplicate_rows`): the same rating given twice would weigh twice in training and count
twice in a held-out correlation; two raters' equal scores differ in the rater's column, and both stay.
"""

from __future__ import annotations

import math
import os
from typing import Any

import datasets

from hf_dialeval.data.cells import text_list
from hf_dialeval.data.columns import Columns
from hf_dialeval.data.held_out import held_out_parts
from hf_dialeval.data.loaded_rows import named_rows
from hf_dialeval.data.model import DialogueValidationError, is_blank
from hf_dialeval.data.tables import duplicate_rows, read_table
from hf_dialeval.errors import OptionError

#: The fields of a rating, required first.
RATING_FIELDS = ("context", "response", "score", "reference", "condition", "system")
REQUIRED_FIELDS = ("context", "response", "score")
RATING_FEATURES = datasets.Features({
    "context": datasets.Sequence(datasets.Value("string")), "response": datasets.Value("string"),
    "score": datasets.Value("float64"), "reference": datasets.Value("string"),
    "condition": datasets.Value("string"), "system": datasets.Value("string")})


def load_ratings(source: str | os.PathLike, columns: Columns = Columns(), split: str | None = None,
                 needs_reference: bool = False) -> datasets.Dataset:
    """The ratings of ``source`` (see the module) with the fields of :data:`RATING_FEATURES` (an optional field the
    source lacks is ``None``), without duplicate rows. ``needs_reference``: every rating must carry one (a
    reference-assisted metric)."""
    named = named_rows(source)  # rows a run read once and hands on by name
    if named is not None:
        return named
    table = read_table(source, split, item="rating")
    name = os.fspath(source)
    columns.check_names(table.column_names, name)
    flags = {field: f"--{field}-column" for field in RATING_FIELDS}
    for field in REQUIRED_FIELDS + (("reference",) if needs_reference else ()):
        if columns.column(field) not in table.column_names:
            raise DialogueValidationError(
                f"{name} has no column '{columns.column(field)}' (the rating's {field}); its columns: "
                f"{', '.join(table.column_names)}; name the one that holds it with {flags[field]}")
    present = [field for field in RATING_FIELDS if columns.column(field) in table.column_names]
    rows = []
    for index, row in enumerate(table.select_columns([columns.column(field) for field in present])):
        rows.append(_rating(index, {field: row[columns.column(field)] for field in present}, name, columns,
                            needs_reference))
    duplicates = duplicate_rows(table, name)  # after the checks: an error names the source's row, and comes alone
    return datasets.Dataset.from_list([row for index, row in enumerate(rows) if index not in duplicates],
                                      features=RATING_FEATURES)


def _rating(index: int, values: dict[str, Any], source: str, columns: Columns,
            needs_reference: bool) -> dict[str, Any]:
    """One rating, checked: each problem names the row (counted from 0) and the column."""
    def fail(field: str, problem: str) -> DialogueValidationError:
        return DialogueValidationError(f"{source}, row {index}, column '{columns.column(field)}': {problem}")

    # an empty cell: a reply that opens the conversation
    rating = {"context": text_list(values["context"], columns.context_separator,
                                   lambda problem: fail("context", problem))}
    for field in ("response", "reference", "condition", "system"):
        value = values.get(field)
        if value is not None and not isinstance(value, str):
            raise fail(field, f"expected a text, got {type(value).__name__}")
        rating[field] = value
    if rating["response"] is None:
        raise fail("response", "no response: every rating needs the reply it rates")
    if needs_reference and (rating["reference"] is None or is_blank(rating["reference"])):
        raise fail("reference", "no reference: this metric compares the reply with a human reference")
    score = values["score"]
    if score is None:  # an empty cell, or a key left out
        raise fail("score", "no score: give every rating one")
    if isinstance(score, str):
        try:
            score = float(score)
        except ValueError:
            raise fail("score", f"{values['score']!r} is not a number") from None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise fail("score", f"{values['score']!r} is not a finite number: give every rating a score")
    rating["score"] = float(score)
    return rating


def held_out_split(ratings: datasets.Dataset, share: float, seed: int
                   ) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """``ratings`` split by context, never by item, into those trained on and about ``share`` of them held out
    (every rating of a held-out context is held out, so no context is seen on both sides, nor two that differ only
    as :func:`~hf_dialeval.data.held_out.context_key` lets them; ``share`` 0: none, and ``None`` for the held-out
    part). Which contexts go is fixed by ``seed``. With dialogues too, and refusing a split too small to tell
    anything: :func:`~hf_dialeval.data.held_out.split_user_data`."""
    if share == 0:
        return ratings, None
    split = held_out_parts(ratings, None, share, seed)
    if not len(split.ratings_held_out):  # one context: it cannot be both held out and trained on
        raise OptionError("the ratings have one context: a held-out share needs ratings of two contexts or more")
    return split.ratings_trained, split.ratings_held_out
