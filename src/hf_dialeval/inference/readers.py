"""Reading the items to score: JSONL (a file or standard input), CSV or Parquet, a chunk at a time.

Memory does not grow with the input: :func:`read_chunks` yields ``chunk_size`` items at a time. Every reading
error is one line naming the file and the line (or row) and what to do.

* JSONL: UTF-8, one JSON object per line, blank lines skipped, a byte-order mark allowed.
* Parquet (``.parquet``, ``.pq``): one row per item; a null field is a missing one.
* CSV (``.csv``; ``.tsv`` tab-separated): a header row naming the fields, one row per item, UTF-8. A CSV cell is
  text, so a list field (``context``, ``dialogue``, ``speakers``) is either a JSON array (``["Hi!", "Hello."]``) or
  one utterance per line of a multi-line cell. An empty cell is an empty text (an empty reply is data), an empty
  list for ``context`` and ``dialogue``, and a missing field for ``speakers`` and any column outside the data model.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from hf_dialeval.data.model import DIALOGUE_COLUMNS, TURN_COLUMNS, DialogueValidationError
from hf_dialeval.data.tables import FILE_BUILDERS
from hf_dialeval.errors import OptionError, PathError

#: Items read, scored and written at a time: large enough for length-sorted batches, small enough that memory
#: stays flat and little is redone after a kill.
CHUNK_ITEMS = 1024
#: The suffixes of the formats a user's data comes in (one table for every reader) that are Parquet, and those that are
#: CSV with their delimiters; any other suffix is JSONL here.
PARQUET_SUFFIXES = tuple(suffix for suffix, (builder, _) in FILE_BUILDERS.items() if builder == "parquet")
CSV_DELIMITERS = {suffix: options.get("sep", ",") for suffix, (builder, options) in FILE_BUILDERS.items()
                  if builder == "csv"}
#: The fields that hold a list of strings (the data model's): a CSV cell gives them as a JSON array or lines.
LIST_FIELDS = frozenset(name for columns in (DIALOGUE_COLUMNS, TURN_COLUMNS) for name, is_list in columns.items()
                        if is_list)
#: The data model's fields of one string: an empty cell is an empty text (condition and reference: none).
TEXT_FIELDS = frozenset(name for name, is_list in TURN_COLUMNS.items() if not is_list)
#: The first bytes of every Parquet file (and its last four).
PARQUET_MAGIC = b"PAR1"


def is_parquet(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def is_csv(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in CSV_DELIMITERS


def count_items(path: str | os.PathLike) -> int:
    """How many items a file holds: JSONL's non-blank lines, CSV's rows, Parquet's rows (from its metadata)."""
    if is_parquet(path):
        return _parquet_file(path).metadata.num_rows
    if is_csv(path):
        return sum(1 for _ in _csv_rows(path))
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def read_chunks(source: str | os.PathLike | TextIO, chunk_size: int = CHUNK_ITEMS) -> Iterator[list[dict[str, Any]]]:
    """The items of a JSONL stream, or of a JSONL, CSV or Parquet file, ``chunk_size`` at a time."""
    if not isinstance(source, (str, os.PathLike)):
        yield from groups(_jsonl_items(getattr(source, "buffer", source), "stdin"), chunk_size)
    elif Path(source).is_dir():
        raise PathError(f"input {source} is a folder: give a JSONL, CSV or Parquet file")
    elif is_parquet(source):
        for batch in _parquet_file(source).iter_batches(batch_size=chunk_size):
            yield [{key: value for key, value in row.items() if value is not None} for row in batch.to_pylist()]
    elif is_csv(source):
        yield from groups(_csv_items(source), chunk_size)
    else:
        with open(source, "rb") as handle:
            yield from groups(_jsonl_items(handle, str(source)), chunk_size)


def groups(values: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``values`` in lists of ``size`` (the last one shorter)."""
    group: list[Any] = []
    for value in values:
        group.append(value)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def _parquet_file(path: str | os.PathLike) -> Any:
    """The open Parquet file; a file that is not Parquet (say JSONL named ``.parquet``) is named in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as error:
        with open(path, "rb") as handle:
            looks_like_jsonl = handle.read(1).lstrip() in (b"{", b"")
        hint = ("it holds text, perhaps JSONL: name it .jsonl" if looks_like_jsonl and Path(path).stat().st_size
                else "re-save it as Parquet, or as JSONL named .jsonl")
        raise DialogueValidationError(f"{path} is not a Parquet file ({error}): {hint}") from None


def _jsonl_items(lines: Iterable[bytes | str], name: str) -> Iterator[dict[str, Any]]:
    for number, raw in enumerate(lines, start=1):
        line = _decoded(raw, name, number)
        if number == 1:
            line = line.removeprefix("\ufeff")  # the byte-order mark some editors write
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            hint = (": a Parquet file needs the suffix .parquet" if line.startswith(PARQUET_MAGIC.decode())
                    else "")
            raise DialogueValidationError(f"{name}, line {number}: not valid JSON ({error}){hint}") from error
        except RecursionError:
            raise DialogueValidationError(f"{name}, line {number}: JSON nested too deeply to read; an item is an "
                                          "object of strings and lists of strings") from None
        if not isinstance(item, dict):
            raise DialogueValidationError(
                f"{name}, line {number}: expected a JSON object (one item per line), got {type(item).__name__}")
        yield item


def _decoded(line: bytes | str, name: str, number: int) -> str:
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        starts_parquet = number == 1 and line.startswith(PARQUET_MAGIC)
        raise DialogueValidationError(
            f"{name}, line {number}: not UTF-8 text (byte 0x{line[error.start]:02x} at byte {error.start + 1} of the "
            "line): " + ("it is a Parquet file: name it .parquet" if starts_parquet else "save the file as UTF-8")
        ) from None


def _csv_rows(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, str]]]:
    """Each data row of a CSV file with the line it starts on, as ``{header: cell}``."""
    csv.field_size_limit(sys.maxsize)  # a cell may hold a whole dialogue
    line = 1  # where the row being read starts: a row's cell may span lines
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle, delimiter=CSV_DELIMITERS[Path(path).suffix.lower()], strict=True)
            if not reader.fieldnames:
                return
            blank = [number for number, name in enumerate(reader.fieldnames, start=1) if not name.strip()]
            if blank:
                raise DialogueValidationError(f"{path}, line 1: column {blank[0]} of the header has no name: the first "
                                              "row names every column (e.g. context,response)")
            line = reader.line_num + 1
            for row in reader:
                if None in row:
                    raise DialogueValidationError(f"{path}, line {line}: more cells than the header's "
                                                  f"{len(reader.fieldnames)} columns: quote cells that hold the "
                                                  "delimiter")
                yield line, row
                line = reader.line_num + 1
    except UnicodeDecodeError as error:
        raise DialogueValidationError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}): save the file "
                                      "as UTF-8") from None
    except csv.Error as error:
        raise DialogueValidationError(f"{path}, line {line}: not valid CSV ({error})") from None


def _csv_items(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    for line, row in _csv_rows(path):
        item: dict[str, Any] = {}
        for key, cell in row.items():
            if key in LIST_FIELDS:
                value = _csv_list(cell, path, line, key) if cell else []
                if value or key != "speakers":
                    item[key] = value
            elif cell or key in TEXT_FIELDS:
                item[key] = cell
        yield item


def _csv_list(cell: str, path: str | os.PathLike, line: int, key: str) -> list[str]:
    """A list field's cell: a JSON array of strings, else one utterance per line."""
    if cell.lstrip().startswith("["):
        try:
            value = json.loads(cell)
        except json.JSONDecodeError as error:
            raise DialogueValidationError(f"{path}, line {line}, column '{key}': starts like a JSON array but is not "
                                          f"one ({error}); give a JSON array of strings or one utterance per "
                                          "line") from None
        if isinstance(value, list):
            return value
    return cell.splitlines()


def stdin_source() -> TextIO:
    """Standard input, when it is a pipe or a file (not a terminal nobody will type JSONL into)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise OptionError("no input: give --input FILE, or pipe JSONL into stdin")
    return sys.stdin
