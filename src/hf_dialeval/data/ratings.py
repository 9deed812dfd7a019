"""Ratings a user trains on: human scores of replies in their own domain, read from a file (JSONL, JSON, CSV, TSV,
Parquet), a folder ``datasets.save_to_disk`` wrote, or a Hub dataset id (``datasets.load_dataset``, from the local
cache when offline), their columns mapped to the data model's fields (:class:`RatingColumns`).

A rating is ``context`` (a list of utterances, or one text split on ``context_separator``), ``response``, ``score``
(a finite number on any scale), and optionally ``reference``, ``condition`` and ``system``. What is wrong fails here,
in one line naming the source, the row and the column, before any model loads.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from hf_dialeval.data.model import DialogueValidationError, is_blank
from hf_dialeval.errors import OptionError, PathError

#: A file's suffix -> the ``datasets`` builder that reads it (and its keyword arguments).
FILE_BUILDERS = {".jsonl": ("json", {}), ".json": ("json", {}), ".csv": ("csv", {}),
                 ".tsv": ("csv", {"sep": "\t"}), ".parquet": ("parquet", {})}
#: The fields of a rating, required first.
RATING_FIELDS = ("context", "response", "score", "reference", "condition", "system")
REQUIRED_FIELDS = ("context", "response", "score")
RATING_FEATURES = datasets.Features({
    "context": datasets.Sequence(datasets.Value("string")), "response": datasets.Value("string"),
    "score": datasets.Value("float64"), "reference": datasets.Value("string"),
    "condition": datasets.Value("string"), "system": datasets.Value("string")})


@dataclass(frozen=True)
class RatingColumns:
    """Which column of the user's data holds each field of a rating (``--context-column`` and the like), and how a
    context given as one text splits into utterances."""

    context: str = "context"
    response: str = "response"
    score: str = "score"
    reference: str = "reference"
    condition: str = "condition"
    system: str = "system"
    context_separator: str = "\n"

    def column(self, field: str) -> str:
        return getattr(self, field)


def read_table(source: str | os.PathLike, split: str | None = None) -> datasets.Dataset:
    """The rows of ``source``: a file (by its suffix, :data:`FILE_BUILDERS`), a folder ``datasets.save_to_disk``
    wrote, or a Hub dataset id; ``split`` picks one split of a source that has several (default: ``train``)."""
    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("dataset_info.json", "dataset_dict.json", "state.json")):
            raise PathError(f"{text} is a folder that datasets.save_to_disk did not write: give that folder, or a "
                            f"file ({', '.join(FILE_BUILDERS)})")
        return _one_split(datasets.load_from_disk(str(path)), text, split)
    if path.is_file():
        if path.suffix.lower() not in FILE_BUILDERS:
            raise PathError(f"{text}: a {path.suffix or 'suffix-less'} file is not read; give "
                            f"{', '.join(FILE_BUILDERS)}")
        if path.stat().st_size == 0:
            raise DialogueValidationError(f"{text} is empty: give one rating per line or row")
        builder, options = FILE_BUILDERS[path.suffix.lower()]
        try:
            return datasets.load_dataset(builder, data_files=str(path), split="train", **options)
        except datasets.exceptions.DatasetGenerationError as error:
            raise DialogueValidationError(f"{text} could not be read as {builder} ({error.__cause__ or error}): "
                                          "fix the file, or give it the suffix of its format") from None
    if path.suffix.lower() in FILE_BUILDERS or text.startswith((".", "/", "~")) or os.sep + os.sep in text:
        raise PathError(f"no such file: {text}")
    try:
        loaded = datasets.load_dataset(text)
    except Exception as error:  # offline, unknown, private: every way a Hub id fails is the user's to fix
        raise PathError(f"no such file or folder: {text}; as a Hub dataset id it could not be loaded "
                        f"({type(error).__name__}: {' '.join(str(error).split())[:200]}); give a file, or load "
                        "the dataset once while online so that it is in the local cache") from None
    return _one_split(loaded, text, split)


def _one_split(loaded: datasets.Dataset | datasets.DatasetDict, source: str, split: str | None) -> datasets.Dataset:
    if isinstance(loaded, datasets.Dataset):
        if split is not None:
            raise OptionError(f"{source} has no splits: leave the split out")
        return loaded
    wanted = split or "train"
    if wanted not in loaded:
        raise OptionError(f"{source} has no split {wanted!r}: give one of {sorted(loaded)}")
    return loaded[wanted]


def load_ratings(source: str | os.PathLike, columns: RatingColumns = RatingColumns(), split: str | None = None,
                 needs_reference: bool = False) -> datasets.Dataset:
    """The ratings of ``source`` (see the module) with the fields of :data:`RATING_FEATURES` (an optional field the
    source lacks is ``None``). ``needs_reference``: every rating must carry one (a reference-assisted metric)."""
    table = read_table(source, split)
    name = os.fspath(source)
    if len(table) == 0:
        raise DialogueValidationError(f"{name} holds no ratings: give one per line or row")
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
    return datasets.Dataset.from_list(rows, features=RATING_FEATURES)


def _rating(index: int, values: dict[str, Any], source: str, columns: RatingColumns,
            needs_reference: bool) -> dict[str, Any]:
    """One rating, checked: each problem names the row (counted from 0) and the column."""
    def fail(field: str, problem: str) -> DialogueValidationError:
        return DialogueValidationError(f"{source}, row {index}, column '{columns.column(field)}': {problem}")

    context = values["context"]
    if context is None:  # an empty cell: a reply that opens the conversation
        context = []
    elif isinstance(context, str):
        context = context.split(columns.context_separator) if context else []
    if not isinstance(context, list) or not all(isinstance(utterance, str) for utterance in context):
        raise fail("context", f"expected a list of utterances or one text, got {type(values['context']).__name__}")
    rating = {"context": context}
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


def held_out_split(ratings: datasets.Dataset, share: float, seed: int) -> tuple[datasets.Dataset, datasets.Dataset]:
    """``ratings`` split by context, never by item, into those trained on and about ``share`` of them held out
    (every rating of a held-out context is held out, so no context is seen on both sides). Which contexts go is
    fixed by ``seed``."""
    if not 0 < share < 1:
        raise OptionError(f"the held-out share must be above 0 and below 1, not {share}")
    keys = [hashlib.sha256(f"{seed}\x1e{chr(0x1f).join(context)}".encode()).hexdigest()
            for context in ratings["context"]]
    contexts = sorted(set(keys))
    if len(contexts) < 2:
        raise OptionError("the ratings have one context: a held-out share needs ratings of two contexts or more")
    held = set(contexts[:max(1, round(share * len(contexts)))])  # sorted hashes: a seeded draw of the contexts
    held_rows = [index for index, key in enumerate(keys) if key in held]
    kept_rows = [index for index, key in enumerate(keys) if key not in held]
    return ratings.select(kept_rows), ratings.select(held_rows)
