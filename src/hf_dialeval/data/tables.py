"""The rows of a user's own training data, whatever holds them: a file (JSONL, JSON, CSV, TSV, Parquet), a folder
``datasets.save_to_disk`` wrote, or a Hub dataset id (``datasets.load_dataset``, from the local cache when offline);
and a seeded share of them held out to validate on. What each row means is the reader's
(:mod:`~hf_dialeval.data.ratings`, :mod:`~hf_dialeval.data.dialogues`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import datasets

from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import OptionError, PathError

#: A file's suffix -> the ``datasets`` builder that reads it (and its keyword arguments).
FILE_BUILDERS = {".jsonl": ("json", {}), ".json": ("json", {}), ".csv": ("csv", {}),
                 ".tsv": ("csv", {"sep": "\t"}), ".parquet": ("parquet", {})}


def read_table(source: str | os.PathLike, split: str | None = None, item: str = "item") -> datasets.Dataset:
    """The rows of ``source``: a file (by its suffix, :data:`FILE_BUILDERS`), a folder ``datasets.save_to_disk``
    wrote, or a Hub dataset id; ``split`` picks one split of a source that has several (default: ``train``).
    ``item`` names what a row holds (a rating, a dialogue) in the error of a source without rows."""
    table = _read(source, split, item)
    if len(table) == 0:  # a file of a header alone, an empty split
        raise DialogueValidationError(f"{os.fspath(source)} holds no {item}s: give one per line or row")
    return table


def _read(source: str | os.PathLike, split: str | None, item: str) -> datasets.Dataset:
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
            raise DialogueValidationError(f"{text} is empty: give one {item} per line or row")
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


def held_out_rows(groups: Sequence[str], share: float, seed: int, too_few: str) -> tuple[list[int], list[int]]:
    """The rows kept and those held out (their indices) when about ``share`` of the distinct ``groups`` (one per
    row: a context, a dialogue) are held out, at least one and never all, with every row of each, so that no group is
    on both sides. Which groups go is fixed by ``seed``; ``too_few`` is the error when there is only one."""
    if not 0 < share < 1:
        raise OptionError(f"the held-out share must be above 0 and below 1, not {share}")
    keys = [hashlib.sha256(f"{seed}\x1e{group}".encode()).hexdigest() for group in groups]
    distinct = sorted(set(keys))
    if len(distinct) < 2:
        raise OptionError(too_few)
    held = set(distinct[:min(len(distinct) - 1, max(1, round(share * len(distinct))))])  # sorted hashes: a seeded draw
    return ([index for index, key in enumerate(keys) if key not in held],
            [index for index, key in enumerate(keys) if key in held])


def rows_sha256(rows: datasets.Dataset) -> str:
    """The SHA-256 of the rows' content in order, as loaded: the same data gives the same hash whatever file or
    format it came from (a training record or an adaptation report names the data it read by it)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


def text_list(value: Any, separator: str, fail: Callable[[str], Exception], noun: str = "utterance") -> list[str]:
    """A cell holding texts (the utterances of a context or dialogue, its speakers): a list of them, or one text
    split on ``separator``; an empty cell is none. ``fail`` makes the error of a cell that is neither."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split(separator) if value else []
    if not isinstance(value, list):
        raise fail(f"expected a list of {noun}s or one text, got {type(value).__name__}")
    for position, text in enumerate(value):
        if not isinstance(text, str):
            raise fail(f"{noun} {position}: expected a text, got {type(text).__name__}")
    return value
