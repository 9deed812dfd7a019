"""A user's table read a chunk at a time, for inputs of any size (``score``): JSONL (a file or standard input), CSV or
Parquet. The formats are those of :data:`~hf_dialeval.data.tables.FILE_BUILDERS` (the whole-table reader's, which
``benchmark``, ``train`` and ``adapt`` use), the columns are mapped to the data model's fields by the same
:class:`~hf_dialeval.data.columns.Columns`, and a cell of texts is read by the same rule
(:func:`~hf_dialeval.data.cells.text_list`): the same file gives every command the same contexts.

Memory does not grow with the input: :func:`read_chunks` yields ``chunk_size`` items at a time. Every reading
error is one line naming the file and the line (or row) and what to do.

* JSONL: UTF-8, one JSON object per line, blank lines skipped, a byte-order mark allowed.
* Parquet (``.parquet``, ``.pq``): one row per item; a null field is a missing one.
* CSV (``.csv``; ``.tsv`` tab-separated): a header row naming the fields, one row per item, UTF-8. An empty cell is an
  empty text (an empty reply is data), no utterances for ``context`` and ``dialogue``, and a missing field for
  ``speakers`` and any column outside the data model.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from hf_dialeval.data.cells import text_list
from hf_dialeval.data.columns import Columns
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
#: The fields that hold a list of strings (the data model's): a cell of one text gives them by the one rule.
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


def read_chunks(source: str | os.PathLike | TextIO, chunk_size: int = CHUNK_ITEMS, columns: Columns = Columns()
                ) -> Iterator[list[dict[str, Any]]]:
    """The items of a JSONL stream, or of a JSONL, CSV or Parquet file, ``chunk_size`` at a time, their columns
    mapped to the data model's fields by ``columns``."""
    if not isinstance(source, (str, os.PathLike)):
        rows = _jsonl_items(getattr(source, "buffer", source), "stdin")
    elif Path(source).is_dir():
        raise PathError(f"input {source} is a folder: give a JSONL, CSV or Parquet file")
    elif is_parquet(source):
        rows = _parquet_items(source, chunk_size)
    elif is_csv(source):
        rows = _csv_items(source, columns)
    else:
        rows = _jsonl_file_items(source)
    yield from groups((_item(where, row, columns) for where, row in rows), chunk_size)


def _item(where: str, row: dict[str, Any], columns: Columns) -> dict[str, Any]:
    """A row as an item: its columns under their fields' names, each list field's cell read by the one rule."""
    item = columns.as_fields(row, where)
    for field in LIST_FIELDS & item.keys():
        item[field] = text_list(item[field], columns.context_separator,
                                lambda problem, field=field: DialogueValidationError(
                                    f"{where}, column '{columns.column(field)}': {problem}"),
                                "speaker" if field == "speakers" else "utterance")
    return item


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


def _jsonl_file_items(path: str | os.PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(path, "rb") as handle:
        yield from _jsonl_items(handle, str(path))


def _parquet_items(path: str | os.PathLike, chunk_size: int) -> Iterator[tuple[str, dict[str, Any]]]:
    row = 0
    for batch in _parquet_file(path).iter_batches(batch_size=chunk_size):
        for values in batch.to_pylist():
            yield f"{path}, row {row}", {key: value for key, value in values.items() if value is not None}
            row += 1


def _jsonl_items(lines: Iterable[bytes | str], name: str) -> Iterator[tuple[str, dict[str, Any]]]:
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
        yield f"{name}, line {number}", item


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


def _csv_items(path: str | os.PathLike, columns: Columns) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each row as its cells, an empty one read as the module says (by the field its column is mapped to)."""
    fields = columns.renamed
    for line, row in _csv_rows(path):
        item: dict[str, Any] = {}
        for key, cell in row.items():
            field = fields.get(key, key)
            if cell or field in TEXT_FIELDS or field in LIST_FIELDS - {"speakers"}:
                item[key] = cell
        yield f"{path}, line {line}", item


def stdin_source() -> TextIO:
    """Standard input, when it is a pipe or a file (not a terminal nobody will type JSONL into)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise OptionError("no input: give --input FILE, or pipe JSONL into stdin")
    return sys.stdin
