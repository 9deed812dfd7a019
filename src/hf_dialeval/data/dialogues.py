"""Dialogues a user trains on, without labels: conversations of their own domain, read from what
:func:`~hf_dialeval.data.tables.read_table` reads (a JSONL, JSON, CSV, TSV or Parquet file, a folder
``datasets.save_to_disk`` wrote, or a Hub dataset id), their columns mapped to the data model's fields
(:class:`~hf_dialeval.data.columns.Columns`); or one of the shipped corpora, by its name (:data:`SHIPPED_CORPORA`).

A row is either a whole dialogue (``dialogue``: a list of utterances, or one text split on ``context_separator``) or a
context and its reply (``context``, given as a dialogue is, and ``response``: the dialogue is the context followed by
the reply). Optionally ``speakers`` (one per utterance, given as the utterances are) and ``condition`` (the persona or
knowledge text the dialogue was held with; a list of texts is joined by a space). A source with no ``condition``
column but a ``knowledge`` or ``persona`` one reads that column as the condition. What is wrong fails here, in one line
naming the source, the row and the column, before any model loads. A row of a user's source identical in every column
to an earlier one is dropped, and their count told in one line (:func:`~hf_dialeval.data.tables.duplicate_rows`): the
same dialogue given twice would weigh twice in training and in the held-out checks; a shipped corpus is read as
released.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets

from hf_dialeval.data.cells import text_list
from hf_dialeval.data.columns import Columns
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_topical_chat_for_training
from hf_dialeval.data.held_out import context_key, held_out_parts
from hf_dialeval.data.loaded_rows import named_rows
from hf_dialeval.data.model import DialogueValidationError, is_blank
from hf_dialeval.data.tables import duplicate_rows, read_table, rows_sha256
from hf_dialeval.errors import OptionError, UnknownNameError

#: The corpora of the data directory that a source may name instead of a file (a file or folder of that name wins).
SHIPPED_CORPORA = ("dailydialog", "topical-chat", "dailydialog-plusplus")
#: The columns that are the condition of a source with no condition column, the first one present.
CONDITION_STAND_INS = ("knowledge", "persona")
DIALOGUE_FEATURES = datasets.Features({
    "dialogue": datasets.Sequence(datasets.Value("string")), "speakers": datasets.Sequence(datasets.Value("string")),
    "condition": datasets.Value("string")})


def is_shipped_corpus(source: str | os.PathLike) -> bool:
    """Whether ``source`` names a shipped corpus (:data:`SHIPPED_CORPORA`) and no file or folder of that name exists."""
    text = os.fspath(source)
    return text in SHIPPED_CORPORA and not Path(text).expanduser().exists()


def load_dialogues(source: str | os.PathLike, columns: Columns = Columns(), split: str | None = None,
                   data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """The dialogues of ``source`` (see the module) with the fields of :data:`DIALOGUE_FEATURES` (``speakers`` an
    empty list and ``condition`` ``None`` where the source gives none), without duplicate rows; ``split`` picks one
    split of a source that has several (default: ``train``). A shipped corpus is read from ``data_dir``
    (:func:`shipped_corpus`)."""
    named = named_rows(source)  # rows a run read once and hands on by name
    if named is not None:
        return named
    if is_shipped_corpus(source):
        return shipped_corpus(os.fspath(source), split, data_dir)
    table = read_table(source, split, item="dialogue")
    name = os.fspath(source)
    columns.check_names(table.column_names, name)
    present = table.column_names
    if columns.dialogue not in present and not (columns.context in present and columns.response in present):
        raise DialogueValidationError(
            f"{name} has no column '{columns.dialogue}' (a whole dialogue) nor both '{columns.context}' and "
            f"'{columns.response}' (a context and its reply); its columns: {', '.join(present)}; name the ones that "
            "hold them with --dialogue-column, or --context-column and --response-column")
    condition = next((column for column in (columns.condition, *CONDITION_STAND_INS) if column in present), None)
    wanted = {"dialogue": columns.dialogue, "context": columns.context, "response": columns.response,
              "speakers": columns.speakers, "condition": condition}
    found = {field: column for field, column in wanted.items() if column in present}
    rows = [_dialogue(index, {field: row[column] for field, column in found.items()}, found, name,
                      columns.context_separator)
            for index, row in enumerate(table.select_columns(list(dict.fromkeys(found.values()))))]
    duplicates = duplicate_rows(table, name)  # after the checks: an error names the source's row, and comes alone
    return datasets.Dataset.from_list([row for index, row in enumerate(rows) if index not in duplicates],
                                      features=DIALOGUE_FEATURES)


def _dialogue(index: int, values: dict[str, Any], columns: dict[str, str], source: str,
              separator: str) -> dict[str, Any]:
    """One dialogue, checked: each problem names the row (counted from 0) and the column."""
    def fail(field: str) -> Callable[[str], DialogueValidationError]:
        return lambda problem: DialogueValidationError(f"{source}, row {index}, column '{columns[field]}': {problem}")

    if values.get("dialogue") is not None:
        field, dialogue = "dialogue", text_list(values["dialogue"], separator, fail("dialogue"))
    elif values.get("response") is not None:
        if not isinstance(values["response"], str):
            raise fail("response")(f"expected a text, got {type(values['response']).__name__}")
        field = "context"  # an empty context (no cell) leaves the reply alone, which the length check refuses
        dialogue = [*text_list(values.get("context"), separator, fail("context")), values["response"]]
    else:
        raise fail("dialogue" if "dialogue" in columns else "response")(
            "empty: give the dialogue, or a context and its reply")
    if len(dialogue) < 2:
        raise fail(field)(f"{len(dialogue)} utterance{'s' * (len(dialogue) != 1)}: a dialogue needs a reply, so give "
                          "two utterances or more")
    speakers = text_list(values.get("speakers"), separator, fail("speakers"), "speaker") if "speakers" in columns else []
    if speakers and len(speakers) != len(dialogue):
        raise fail("speakers")(f"{len(speakers)} speakers for {len(dialogue)} utterances: give one speaker per "
                               "utterance, or none")
    return {"dialogue": dialogue, "speakers": speakers, "condition": _condition(values.get("condition"),
                                                                                fail("condition"))}



def _condition(value: Any, fail: Callable[[str], DialogueValidationError]) -> str | None:
    """The condition as one text (a list of texts, e.g. a persona's sentences, joined by a space); a blank one is
    none."""
    if isinstance(value, list) and all(isinstance(text, str) for text in value):
        value = " ".join(text for text in value if not is_blank(text))
    if value is not None and not isinstance(value, str):
        raise fail(f"expected a text or a list of texts, got {type(value).__name__}")
    return None if value is None or is_blank(value) else value


def shipped_corpus(name: str, split: str | None = None, data_dir: str | os.PathLike | None = None
                   ) -> datasets.Dataset:
    """A corpus of :data:`SHIPPED_CORPORA` as dialogues (:data:`DIALOGUE_FEATURES`), read from ``data_dir``:
    DailyDialog's ``split`` (default: train); Topical-Chat's released conversations that share no utterance with
    USR-Topical (:func:`~hf_dialeval.data.corpora.load_topical_chat_for_training`, no split), each with the knowledge
    its speakers used as its condition; DailyDialog++'s ``split`` (default: train), each context followed by each of
    its positive replies."""
    if name == "dailydialog":
        corpus = load_dailydialog(split or "train", data_dir)
        rows = [{"dialogue": dialogue, "speakers": speakers, "condition": None}
                for dialogue, speakers in zip(corpus["dialogue"], corpus["speakers"])]
    elif name == "topical-chat":
        if split is not None:
            raise OptionError("topical-chat is read whole (every released conversation USR-Topical does not hold): "
                              "leave the split out")
        corpus = load_topical_chat_for_training(data_dir, with_knowledge=True)
        rows = [{"dialogue": dialogue, "speakers": speakers,
                 "condition": " ".join(dict.fromkeys(text for text in knowledge if text)) or None}
                for dialogue, speakers, knowledge in zip(corpus["dialogue"], corpus["speakers"], corpus["knowledge"])]
    elif name == "dailydialog-plusplus":
        rows = [{"dialogue": [*row["context"], reply], "speakers": [], "condition": None}
                for row in load_dailydialog_plusplus(split or "train", data_dir) for reply in row["positive_responses"]]
    else:
        raise UnknownNameError(f"{name} is not a shipped corpus: give one of {', '.join(SHIPPED_CORPORA)}")
    return datasets.Dataset.from_list(rows, features=DIALOGUE_FEATURES)


def held_out_dialogues(dialogues: datasets.Dataset, share: float, seed: int
                       ) -> tuple[datasets.Dataset, datasets.Dataset]:
    """``dialogues`` split into those trained on and about ``share`` of them held out (at least one, never all), by
    dialogue: the same dialogue given twice, or two that differ only as
    :func:`~hf_dialeval.data.held_out.context_key` lets them, is on one side. Which go is fixed by ``seed``. With
    ratings too, and refusing a split too small to tell anything: :func:`~hf_dialeval.data.held_out.split_user_data`."""
    split = held_out_parts(None, dialogues, share, seed)
    if not len(split.dialogues_held_out):  # one dialogue: it cannot be both held out and trained on
        raise OptionError("the dialogues are one: holding some out needs two different dialogues or more")
    return split.dialogues_trained, split.dialogues_held_out


#: The share of a user's dialogues a train command holds out to validate on, and the fewest (half, of fewer):
#: a small set still leaves the validation (and HolisticEval's percentile cutoffs) some pairs.
VALIDATION_SHARE, VALIDATION_FEWEST = 0.1, 10


def validation_split(dialogues: datasets.Dataset, seed: int) -> tuple[datasets.Dataset, datasets.Dataset]:
    """``dialogues`` split, by dialogue, into those trained on and those validated on: :data:`VALIDATION_SHARE` of
    the different dialogues, at least :data:`VALIDATION_FEWEST` (half of fewer)."""
    different = len({context_key(dialogue) for dialogue in dialogues["dialogue"]})
    share = max(VALIDATION_SHARE, min(VALIDATION_FEWEST, different // 2) / max(different, 1))
    return held_out_dialogues(dialogues, share, seed)


def dialogues_record(source: str, dialogues: datasets.Dataset, held_out: datasets.Dataset | None) -> dict[str, Any]:
    """What a training record says of the user's dialogues: their source, count and hash, and how many were held
    out."""
    return {"dialogues": source, "dialogues_count": len(dialogues), "dialogues_sha256": rows_sha256(dialogues),
            "held_out_dialogues": 0 if held_out is None else len(held_out)}
