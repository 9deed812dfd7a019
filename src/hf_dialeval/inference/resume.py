"""What an interrupted ``score`` run left, and whether it can be continued: ``--resume``'s checks.

A run killed part-way leaves ``OUTPUT.partial``: complete lines, perhaps one cut short, and the signature beside
it. Before anything is appended, ``--resume`` proves that every kept line belongs to the current input and metric:

* the signature beside the output is this metric's (same checkpoint, versions and settings);
* **every** kept line is compared with the input item at its place (:class:`KeptLines`): the line's fields other
  than the scores must be exactly the item's. An edited, inserted or removed item anywhere in the kept part fails,
  naming the line; the scores are a function of those fields, so a kept line that passes is the line a new run
  would write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_dialeval.errors import DialEvalError
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import OVERALL, ScoreOutput, json_ready
from hf_dialeval.inference.signature import read_signature

#: The signature fields that count what was scored: a resumed run's signature differs from its first part's there.
COUNTS = ("items", "truncated", "empty")
#: The fields a score line adds to its item (:meth:`ScoreOutput.records`).
SCORE_FIELDS = frozenset({"scores", OVERALL, "truncated", "empty", "details"})
#: The item fields a system-level metric reads (see :meth:`DialogueMetric.system_level_scores`).
SYSTEM_LEVEL_FIELDS = ("system", "response", "dialogue", "speakers")


class ResumeError(DialEvalError, ValueError):
    """An output cannot be continued with this input or metric: the message says why and what to do."""


def signature_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.signature.json")


@dataclass
class Progress:
    """What an output file already holds: its complete lines, their truncated and empty counts and, for a
    system-level metric, the items and scores of those lines (see :func:`read_output`)."""

    done: int = 0
    truncated: int = 0
    empty: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[ScoreOutput] = field(default_factory=list)

    def keep_for_systems(self, items: Sequence[Mapping[str, Any]], output: ScoreOutput) -> None:
        self.items.extend({key: item[key] for key in SYSTEM_LEVEL_FIELDS if key in item} for item in items)
        self.outputs.append(ScoreOutput(output.scores, output.overall))


def _score_lines(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any], int]]:
    """Each complete, non-blank line of an output file: its index among the records, the record, and the bytes up to
    its end. A line without its end (cut short by a kill) ends the file."""
    index, complete_bytes = 0, 0
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                return
            complete_bytes += len(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as error:
                raise ResumeError(f"--resume: line {index + 1} of {path} is not a scored item ({error}): it was not "
                                  "written by hf-dialeval score; score into a new file") from None
            if not isinstance(record, dict) or OVERALL not in record:
                raise ResumeError(f"--resume: line {index + 1} of {path} is not a scored item (no 'overall'): it was "
                                  "not written by hf-dialeval score; score into a new file")
            yield index, record, complete_bytes
            index += 1


def read_output(path: str | os.PathLike, metric: DialogueMetric, cut_partial_line: bool) -> Progress:
    """The complete lines of an output file written by an interrupted run (a line without its end was cut short
    by the kill: removed when ``cut_partial_line``, which only the process that writes does)."""
    progress, complete_bytes = Progress(), 0
    for _, record, complete_bytes in _score_lines(path):
        progress.done += 1
        progress.truncated += bool(record.get("truncated"))
        progress.empty += bool(record.get("empty"))
        if metric.system_level:
            progress.keep_for_systems([record], ScoreOutput.from_records([record], metric.dimensions))
    if cut_partial_line and complete_bytes < os.path.getsize(path):
        os.truncate(path, complete_bytes)
    return progress


def check_resumable(metric: DialogueMetric, output: str | os.PathLike) -> None:
    """The output to resume exists and its signature is this metric's (same checkpoint, versions and settings)."""
    if not Path(output).is_file():
        raise ResumeError(f"--resume: no output {output} to resume; leave --resume out to start")
    beside = signature_path(output)
    if not beside.is_file():
        raise ResumeError(f"--resume: {beside} is missing, so which metric wrote {output} is unknown: score into a "
                          "new file")
    try:
        written = read_signature(json.loads(beside.read_text(encoding="utf-8")))
    except (ValueError, AttributeError) as error:
        raise ResumeError(f"--resume: {beside} is not a signature ({error}): score into a new file") from None
    written = {k: v for k, v in written.items() if k not in COUNTS}
    current = {k: v for k, v in metric.signature(0, 0, 0).items() if k not in COUNTS}
    if written != current:
        changed = sorted(k for k in written.keys() | current.keys() if written.get(k) != current.get(k))
        raise ResumeError(f"--resume: {output} was scored with other {', '.join(changed)} (see {beside}); resume with "
                          "the same metric and options, or score into a new file")


class KeptLines:
    """The kept lines of an output, read in step with the input: :meth:`check` compares the next kept line with the
    input item at its place. Reads one line at a time, so memory does not grow with the output."""

    def __init__(self, path: str | os.PathLike, done: int) -> None:
        self.path, self.done = path, done
        self._lines = _score_lines(path)

    def check(self, item: Mapping[str, Any], index: int) -> None:
        """Raise :class:`ResumeError` unless kept line ``index`` (the next one) is the score of ``item``."""
        _, record, _ = next(self._lines)
        kept = {key: value for key, value in record.items() if key not in SCORE_FIELDS}
        given = json_ready({key: value for key, value in item.items() if key not in SCORE_FIELDS})
        if kept != given:
            fields = sorted(key for key in kept.keys() | given.keys() if kept.get(key) != given.get(key))
            raise ResumeError(f"--resume: line {index + 1} of {self.path} is not the score of input item {index} "
                              f"(they differ in {', '.join(repr(name) for name in fields)}): the output was written "
                              "from another input, or the input changed since; score into a new file, or start again "
                              "with --overwrite instead of --resume")

    def close(self) -> None:
        self._lines.close()
