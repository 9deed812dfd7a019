"""The rows of a user's own data, whatever holds them: a file (JSONL, JSON, CSV, TSV, Parquet), a folder
``datasets.save_to_disk`` wrote, or a Hub dataset id (``datasets.load_dataset``, from the local cache when offline).
What each row means is the reader's (:mod:`~hf_dialeval.data.ratings`, :mod:`~hf_dialeval.data.dialogues`); which rows
are held out, :mod:`~hf_dialeval.data.held_out`'s.

A file that cannot give rows fails in one line naming it (and, where it can, the line): one without rows, a byte that
is not UTF-8, a ``.json`` file of one object. ``datasets`` is imported on first use: the score command reads the
suffix table (:data:`FILE_BUILDERS`) without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import OptionError, PathError
from hf_dialeval.output_folder import run_scratch

if TYPE_CHECKING:
    import datasets

#: A file's suffix -> the ``datasets`` builder that reads it (and its keyword arguments): the one table of the file
#: formats a user's data comes in (the score command's readers take their Parquet and CSV suffixes from it).
FILE_BUILDERS = {".jsonl": ("json", {}), ".json": ("json", {}), ".csv": ("csv", {}),
                 ".tsv": ("csv", {"sep": "\t"}), ".parquet": ("parquet", {}), ".pq": ("parquet", {})}



class DroppedRowsWarning(UserWarning):
    """Rows of the user's data were dropped (duplicates): how many, naming the source (shown even without
    ``--verbose``)."""


def read_table(source: str | os.PathLike, split: str | None = None, item: str = "item") -> datasets.Dataset:
    """The rows of ``source``: a file (by its suffix, :data:`FILE_BUILDERS`), a folder ``datasets.save_to_disk``
    wrote, or a Hub dataset id; ``split`` picks one split of a source that has several (default: ``train``).
    ``item`` names what a row holds (a rating, a dialogue) in the errors of a source without rows."""
    table = _read(source, split, item)
    if len(table) == 0:  # an empty split of a folder or a Hub dataset
        raise _holds_none(source, item)
    return table


def _holds_none(source: str | os.PathLike, item: str) -> DialogueValidationError:
    return DialogueValidationError(f"{os.fspath(source)} holds no {item}s: give one per line or row")


def _read(source: str | os.PathLike, split: str | None, item: str) -> datasets.Dataset:
    import datasets

    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("dataset_info.json", "dataset_dict.json", "state.json")):
            raise PathError(f"{text} is a folder that datasets.save_to_disk did not write: give that folder, or a "
                            f"file ({', '.join(FILE_BUILDERS)})")
        return _one_split(datasets.load_from_disk(str(path)), text, split)
    if path.is_file():
        return _read_file(path, text, item)
    if path.suffix.lower() in FILE_BUILDERS or text.startswith((".", "/", "~")) or os.sep + os.sep in text:
        raise PathError(f"no such file: {text}")
    # offline, unknown, private, malformed (HFValidationError is a ValueError), broken: the ways a Hub id the user
    # gave fails; anything else is a bug and shows its traceback
    try:
        loaded = datasets.load_dataset(text)
    except (OSError, ValueError, datasets.exceptions.DatasetGenerationError) as error:
        raise PathError(f"no such file or folder: {text}; as a Hub dataset id it could not be loaded "
                        f"({type(error).__name__}: {' '.join(str(error).split())[:200]}); give a file, or load "
                        "the dataset once while online so that it is in the local cache") from None
    return _one_split(loaded, text, split)


def _one_split(loaded: datasets.Dataset | datasets.DatasetDict, source: str, split: str | None) -> datasets.Dataset:
    import datasets

    if isinstance(loaded, datasets.Dataset):
        if split is not None:
            raise OptionError(f"{source} has no splits: leave the split out")
        return loaded
    wanted = split or "train"
    if wanted not in loaded:
        raise OptionError(f"{source} has no split {wanted!r}: give one of {sorted(loaded)}")
    return loaded[wanted]


def _read_file(path: Path, text: str, item: str) -> datasets.Dataset:
    import datasets

    if path.suffix.lower() not in FILE_BUILDERS:
        raise PathError(f"{text}: a {path.suffix or 'suffix-less'} file is not read; give "
                        f"{', '.join(FILE_BUILDERS)}")
    if path.stat().st_size == 0:
        raise DialogueValidationError(f"{text} is empty: give one {item} per line or row")
    name, options = FILE_BUILDERS[path.suffix.lower()]
    if name != "parquet":
        _check_text(path, text, item)
    elif _parquet_rows(path, text) == 0:  # datasets fails on it with "BatchSize must be greater than 0"
        raise _holds_none(text, item)
    verbosity = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # it logs the failure the error below tells
    # prepared in a folder of the run's own scratch (the system's outside a run) and read into memory: no copy of the
    # user's data is left in the datasets cache, nor outlives a run that is killed
    with tempfile.TemporaryDirectory(dir=run_scratch(), prefix="prepared-") as cache:
        try:
            builder = datasets.load_dataset_builder(name, data_files=str(path), cache_dir=cache, **options)
            builder.download_and_prepare()
        except datasets.exceptions.DatasetGenerationError as error:
            raise DialogueValidationError(f"{text} could not be read as {name} ({error.__cause__ or error}): "
                                          "fix the file, or give it the suffix of its format") from None
        finally:
            datasets.logging.set_verbosity(verbosity)
        # a header alone, blank lines, [], a Parquet file of no rows: datasets makes no split of them, and says so badly
        if not builder.info.splits["train"].num_examples:
            raise _holds_none(text, item)
        return builder.as_dataset(split="train", in_memory=True)


def _check_text(path: Path, text: str, item: str) -> None:
    """What ``datasets`` would read without naming the line, or into the wrong rows: a byte that is not UTF-8 (its
    JSON reader keeps it until the row is used, its CSV reader names no line), a ``.json`` file of one object (one
    row whose columns are the object's keys)."""
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DialogueValidationError(
                    f"{text}, line {number}: not UTF-8 text (byte 0x{line[error.start]:02x} at byte "
                    f"{offset + error.start + 1} of the file: {error.reason}): save the file as UTF-8") from None
            offset += len(line)
    if path.suffix.lower() != ".json":
        return
    content = path.read_text(encoding="utf-8-sig").lstrip()
    if not content.startswith("{"):
        return
    try:
        end = json.JSONDecoder().raw_decode(content)[1]
    except json.JSONDecodeError:
        return  # not JSON: datasets names what is wrong
    if not content[end:].strip():  # else JSON lines, one object per line
        raise DialogueValidationError(f"{text} holds one JSON object: give a list of objects, one per {item} "
                                      "([{...}, {...}]), or JSON lines (one object per line)")


def _parquet_rows(path: Path, text: str) -> int:
    """How many rows a Parquet file holds, from its metadata; a file that is not Parquet is named in one line (in
    datasets it fails with pyarrow's own error)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_metadata(path).num_rows
    except (pa.ArrowInvalid, OSError) as error:
        raise DialogueValidationError(f"{text} is not a Parquet file ({error}): re-save it as Parquet, or give it "
                                      "the suffix of its format") from None


def duplicate_rows(table: datasets.Dataset, source: str) -> set[int]:
    """The rows of ``table`` (their indices) identical in every column to an earlier row, which the readers drop: a
    rating or dialogue given twice would weigh twice in training and count twice in a held-out correlation. Rows
    that differ in any column, say the rater's, are different judgements and stay. How many is told in one line
    (:class:`DroppedRowsWarning`), naming ``source``."""
    seen: set[bytes] = set()
    duplicates = set()
    for index, row in enumerate(table):
        digest = hashlib.sha256(_row_text(row).encode()).digest()
        if digest in seen:
            duplicates.add(index)
        seen.add(digest)
    if duplicates:
        warnings.warn(f"{source}: {len(duplicates)} duplicate rows dropped (identical in every column to an earlier "
                      "row)", DroppedRowsWarning, stacklevel=3)
    return duplicates


def rows_sha256(rows: datasets.Dataset) -> str:
    """The SHA-256 of the rows' content in order, as loaded: the same data gives the same hash whatever file or
    format it came from (a training record or an adaptation report names the data it read by it)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(_row_text(row).encode() + b"\n")
    return digest.hexdigest()


def _row_text(row: Mapping[str, Any]) -> str:
    """A row as one text, its columns sorted: what rows are hashed and compared by (``repr`` for what JSON cannot
    hold, such as a Parquet date or bytes)."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=repr)
