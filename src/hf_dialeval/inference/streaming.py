"""Scoring inputs of any size: JSONL or Parquet read in chunks, JSONL written chunk by chunk, ``resume`` after a
kill, and data-parallel processes.

Memory does not grow with the input: a chunk of :data:`CHUNK_ITEMS` items is read, scored, written and dropped.
The one exception is a metric that also scores systems as a whole (:attr:`DialogueMetric.system_level`,
HolisticEval's n-gram diversity): it needs every system's responses, so those (and the item scores) are kept.

The output holds one JSON line per input item, in the input's order. It is written to ``OUTPUT.partial`` (flushed
after every chunk) and renamed to ``OUTPUT`` only when every item is scored, so a run that fails or is killed never
leaves a file that looks complete; an output that is the input itself (the same file, a hard link, a symbolic link)
is refused before anything is written. A killed run leaves complete lines in ``OUTPUT.partial`` (and perhaps one cut
short); ``resume=True`` cuts the partial line, checks that a sample of the output's lines (the first, the last and
lines spread between) are the input's items at those places and that its signature (the file beside it) is the
metric's, then appends from the next item: no duplicate, no gap. Without a ``.partial`` file, ``resume`` appends to
``OUTPUT`` itself.

Under ``torchrun`` or ``accelerate launch`` (``WORLD_SIZE`` > 1) every process reads the input and validates every
chunk (an error stops every process alike); of each round of as many chunks as processes, process k scores chunk
k, and the main process gathers them and writes them in order. A chunk is scored in the same batches whichever
process scores it, so the output is the single-process output, to the bit. Parallelism starts at two chunks: give
a smaller ``chunk_size`` for a small input.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hf_dialeval.data.model import DialogueValidationError, item_level
from hf_dialeval.inference.metric import OVERALL, DialogueMetric, ScoreOutput, json_ready
from hf_dialeval.inference.signature import read_signature

#: Items read, scored and written at a time: large enough for length-sorted batches, small enough that memory
#: stays flat and little is redone after a kill.
CHUNK_ITEMS = 1024
PARQUET_SUFFIXES = (".parquet", ".pq")
#: The signature fields that count what was scored: a resumed run's signature differs from its first part's there.
COUNTS = ("items", "truncated", "empty")
#: The item fields a system-level metric reads (see :meth:`DialogueMetric.system_level_scores`).
SYSTEM_LEVEL_FIELDS = ("system", "response", "dialogue", "speakers")


def is_parquet(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def count_items(path: str | os.PathLike) -> int:
    """How many items a JSONL (non-blank lines) or Parquet (rows, from its metadata) file holds."""
    if is_parquet(path):
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def read_chunks(source: str | os.PathLike | TextIO, chunk_size: int = CHUNK_ITEMS) -> Iterator[list[dict[str, Any]]]:
    """The items of a JSONL stream or file, or of a Parquet file, ``chunk_size`` at a time (a null Parquet field is
    a missing one). JSONL is UTF-8, a byte-order mark allowed; a line that is not UTF-8 or not a JSON object is a
    one-line error naming the file and the line."""
    if not isinstance(source, (str, os.PathLike)):
        yield from _groups(_jsonl_items(getattr(source, "buffer", source), "stdin"), chunk_size)
    elif Path(source).is_dir():
        raise IsADirectoryError(f"input {source} is a folder: give a JSONL or Parquet file")
    elif is_parquet(source):
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(source).iter_batches(batch_size=chunk_size):
            yield [{key: value for key, value in row.items() if value is not None} for row in batch.to_pylist()]
    else:
        with open(source, "rb") as handle:
            yield from _groups(_jsonl_items(handle, str(source)), chunk_size)


def _groups(values: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``values`` in lists of ``size`` (the last one shorter)."""
    group: list[Any] = []
    for value in values:
        group.append(value)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


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
            raise DialogueValidationError(f"{name}, line {number}: not valid JSON ({error})") from error
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
        raise DialogueValidationError(
            f"{name}, line {number}: not UTF-8 text (byte 0x{line[error.start]:02x} at byte {error.start + 1} of the "
            "line): save the file as UTF-8") from None


def record_line(item: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """One output line: the input item with its scores."""
    return json.dumps(json_ready({**item, **record}), ensure_ascii=False) + "\n"


def signature_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.signature.json")


def systems_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.systems.json")


@dataclass
class Progress:
    """What an output file already holds: its complete lines, their truncated and empty counts, a sample of its
    records by line index (:func:`is_sampled`, and the last), and, for a system-level metric, the items and scores of
    those lines (see :func:`read_output`)."""

    done: int = 0
    truncated: int = 0
    empty: int = 0
    samples: dict[int, dict[str, Any]] = field(default_factory=dict)
    items: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[ScoreOutput] = field(default_factory=list)


def read_output(path: str | os.PathLike, metric: DialogueMetric, cut_partial_line: bool) -> Progress:
    """The complete lines of an output file written by an interrupted run (a line without its end was cut short
    by the kill: removed when ``cut_partial_line``, which only the process that writes does)."""
    progress = Progress()
    complete_bytes, last = 0, None
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            complete_bytes += len(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as error:
                raise DialogueValidationError(f"--resume: line {progress.done + 1} of {path} is not a scored item "
                                              f"({error}): it was not written by hf-dialeval score") from error
            if not isinstance(record, dict) or OVERALL not in record:
                raise DialogueValidationError(f"--resume: line {progress.done + 1} of {path} is not a scored item "
                                              "(no 'overall'): it was not written by hf-dialeval score")
            if is_sampled(progress.done):
                progress.samples[progress.done] = record
            last = (progress.done, record)
            progress.done += 1
            progress.truncated += bool(record.get("truncated"))
            progress.empty += bool(record.get("empty"))
            if metric.system_level:
                _keep_for_systems(progress, [record], ScoreOutput.from_records([record], metric.dimensions))
    if last is not None:
        progress.samples[last[0]] = last[1]
    if cut_partial_line and complete_bytes < os.path.getsize(path):
        os.truncate(path, complete_bytes)
    return progress


def is_sampled(index: int) -> bool:
    """Whether ``--resume`` checks the output's line ``index`` against the input: lines 0, 1, 2, 4, 8, 16, … (with
    the last line, about 20 lines spread over a million, each read once)."""
    return index & (index - 1) == 0


def _keep_for_systems(progress: Progress, items: Sequence[Mapping[str, Any]], output: ScoreOutput) -> None:
    progress.items.extend({key: item[key] for key in SYSTEM_LEVEL_FIELDS if key in item} for item in items)
    progress.outputs.append(ScoreOutput(output.scores, output.overall))


def check_resumable(metric: DialogueMetric, output: str | os.PathLike) -> None:
    """The output to resume exists and its signature is this metric's (same checkpoint, versions and settings)."""
    if not Path(output).is_file():
        raise FileNotFoundError(f"--resume: no output {output} to resume; leave --resume out to start")
    beside = signature_path(output)
    if not beside.is_file():
        raise FileNotFoundError(f"--resume: {beside} is missing, so which metric wrote {output} is unknown: score into "
                                "a new file")
    written = {k: v for k, v in read_signature(json.loads(beside.read_text(encoding="utf-8"))).items()
               if k not in COUNTS}
    current = {k: v for k, v in metric.signature(0, 0, 0).items() if k not in COUNTS}
    if written != current:
        changed = sorted(k for k in written.keys() | current.keys() if written.get(k) != current.get(k))
        raise ValueError(f"--resume: {output} was scored with other {', '.join(changed)} (see {beside}); resume with "
                         "the same metric and options, or score into a new file")


def _check_same_item(item: Mapping[str, Any], record: Mapping[str, Any], index: int, output: str | os.PathLike) -> None:
    if any(record.get(key) != json_ready(value) for key, value in item.items()):
        raise ValueError(f"--resume: line {index + 1} of {output} is not the score of input item {index}: the output "
                         "was written from another input; score into a new file")


class ProcessGroup:
    """This process's place among data-parallel scoring processes (one process without a launcher). ``device``:
    the one the user named, if any; the processes run on the CPU (gloo) when it is ``cpu`` or no CUDA GPU exists."""

    def __init__(self, device: str | None = None) -> None:
        self.size = int(os.environ.get("WORLD_SIZE", "1"))
        self.state = None
        if self.size > 1:
            import torch
            from accelerate import PartialState

            self.state = PartialState(cpu=device == "cpu" or not torch.cuda.is_available())
            if self.state.num_processes != self.size:
                raise RuntimeError(f"launched as {self.size} processes (WORLD_SIZE), but accelerate set up "
                                   f"{self.state.num_processes}: launch with torchrun or accelerate launch --multi_gpu")

    @property
    def is_main(self) -> bool:
        return self.state is None or self.state.is_main_process

    @property
    def device(self) -> str | None:
        """The device the launcher gave this process (``None`` alone: the metric's own default)."""
        return None if self.state is None else str(self.state.device)

    @property
    def rank(self) -> int:
        return 0 if self.state is None else self.state.process_index

    def gather(self, records: list[Any]) -> list[Any]:
        """Every process's ``records``, concatenated in process order (on every process)."""
        if self.state is None:
            return records
        from accelerate.utils import gather_object

        return gather_object(records)

    def wait(self) -> None:
        if self.state is not None:
            self.state.wait_for_everyone()


@dataclass
class StreamResult:
    """What :func:`score_stream` did: items scored now, items found already scored (resume), and the signature
    of the whole output."""

    scored: int
    resumed: int
    signature: dict[str, Any]
    system_scores: dict[str, dict[str, float]]


def _chunks_to_score(chunks: Iterable[list[dict[str, Any]]], metric: DialogueMetric, state: Progress,
                     output: str | os.PathLike | TextIO) -> Iterator[tuple[int, list[dict[str, Any]], int, str]]:
    """Per chunk not wholly in the output already: its first item's index, the chunk, how many of its items the
    output holds (resume), and the items' level; every chunk checked against the data model and, on resume, the
    output's sampled lines checked to be the input's items at those places."""
    position, level = 0, None
    for chunk in chunks:
        first, position = position, position + len(chunk)
        level = level or item_level(chunk[0])
        for index in range(first, min(position, state.done)):
            if index in state.samples:
                _check_same_item(chunk[index - first], state.samples[index], index, output)
        if position <= state.done:
            continue
        metric.check_items(chunk, level, first)  # on every process: an error stops them all
        yield first, chunk, max(state.done - first, 0), level
    if position < state.done:
        raise ValueError(f"--resume: {output} holds {state.done} scored items, more than the {position} of the input: "
                         "it was written from another input")


class ScoringInterrupted(KeyboardInterrupt):
    """Scoring stopped by the user (Ctrl-C): the message says how many items were written where, and how to go on."""


def partial_path(output: str | os.PathLike) -> Path:
    """Where a run writes its output until every item is scored (then renamed to ``output``)."""
    return Path(f"{output}.partial")


def check_not_input(source: str | os.PathLike | TextIO, output: str | os.PathLike) -> None:
    """Refuse an output that is the input itself (the same file, a hard link or a symbolic link to it, or the file
    redirected into stdin): scoring into it would destroy the items before they are read."""
    if isinstance(source, (str, os.PathLike)):
        source_stat = os.stat(source) if Path(source).exists() else None
    else:
        try:
            source_stat = os.fstat(source.fileno())
        except (AttributeError, OSError, ValueError):  # a stream without a file behind it
            source_stat = None
    if source_stat is None:
        return
    for path in (Path(output), partial_path(output)):
        if path.exists() and os.path.samestat(source_stat, os.stat(path)):
            raise ValueError(f"--output {output} is the input file itself{' (a link to it)' if path.is_symlink() else ''}"
                             ": scoring into it would overwrite the items before they are read; give another output "
                             "file")


def score_stream(metric: DialogueMetric, source: str | os.PathLike | TextIO, output: str | os.PathLike | TextIO,
                 resume: bool = False, chunk_size: int = CHUNK_ITEMS, group: ProcessGroup | None = None,
                 progress: bool = False) -> StreamResult:
    """Score every item of ``source`` (a JSONL or Parquet path, or a JSONL stream) into ``output`` (a JSONL path,
    or a stream) chunk by chunk; with ``resume``, continue the output a killed run left (``OUTPUT.partial``, else
    ``OUTPUT`` itself). An output path is written as ``OUTPUT.partial`` and renamed when every item is scored; its
    signature goes beside it (``.signature.json``, written first and completed at the end), with the system scores
    of a system-level metric (``OUTPUT.systems.json``). Ctrl-C raises :class:`ScoringInterrupted`, the lines
    written kept for ``resume``."""
    group = group or ProcessGroup()
    to_path = isinstance(output, (str, os.PathLike))
    if resume and not to_path:
        raise ValueError("--resume continues an output file: give --output FILE")
    target = None
    if to_path:
        check_not_input(source, output)
        target = partial_path(output) if not resume or partial_path(output).is_file() else Path(output)
    state = Progress()
    if resume:
        check_resumable(metric, target)
        group.wait()  # every process has read the signature before the main process may rewrite it
        state = read_output(target, metric, cut_partial_line=group.is_main)
        group.wait()
    total = count_items(source) if isinstance(source, (str, os.PathLike)) else None
    if resume and total is not None and state.done > total:
        raise ValueError(f"--resume: {target} holds {state.done} scored items, more than the {total} of the input: "
                         "it was written from another input")
    chunks = read_chunks(source, chunk_size)
    first_chunk = next(chunks, None)
    if first_chunk is None:
        raise ValueError(f"{getattr(source, 'name', source)} holds no items: give one JSON object per line (JSONL) "
                         "or one row per item (Parquet)")
    pending = _chunks_to_score(itertools.chain([first_chunk], chunks), metric, state, target or output)
    first_pending = next(pending, None)  # a bad first chunk fails before the output and the progress bar open
    if group.is_main and to_path:
        signature_path(target).write_text(json.dumps(metric.signature(0, 0, 0), ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    from tqdm.auto import tqdm

    writer = (open(target, "a" if resume else "w", encoding="utf-8") if to_path else nullcontext(output)) \
        if group.is_main else nullcontext(None)
    scored = 0
    try:
        with writer as out, tqdm(total=None if total is None else total - state.done, unit="item", desc=metric.name,
                                 disable=not (progress and group.is_main)) as bar:
            remaining = itertools.chain([first_pending], pending) if first_pending is not None else iter(())
            for chunk_round in _groups(remaining, group.size):
                # each process scores one whole chunk, as one process alone would (the same batches: the same scores,
                # to the bit); a resumed run scores the whole chunk it resumes in, and writes what the output lacks
                mine = None
                if group.rank < len(chunk_round):
                    _, chunk, _, level = chunk_round[group.rank]
                    mine = metric.score_chunk(chunk, level)
                for (_, chunk, skip, _), part in zip(chunk_round, group.gather([mine])):
                    items, rows = chunk[skip:], part.tail(skip)
                    if metric.system_level:
                        _keep_for_systems(state, items, rows)
                    if out is not None:
                        out.write("".join(record_line(item, record) for item, record in zip(items, rows.records())))
                        out.flush()
                    state.truncated += sum(rows.truncated)
                    state.empty += sum(rows.empty)
                    scored += len(items)
                    bar.update(len(items))
    except KeyboardInterrupt:
        written = state.done + scored
        where = f"{target} holds them: run the same command with --resume to continue" if to_path else "on stdout"
        raise ScoringInterrupted(f"stopped after {written} scored items; {where}") from None
    signature = metric.signature(state.done + scored, state.truncated, state.empty)
    system_scores = {}
    if metric.system_level and state.items:
        system_scores = metric.system_level_scores(state.items, ScoreOutput.concatenate(state.outputs))
    if group.is_main and to_path:
        if system_scores:
            systems_path(output).write_text(json.dumps(json_ready(system_scores), ensure_ascii=False) + "\n",
                                            encoding="utf-8")
        signature_path(target).write_text(json.dumps(signature, ensure_ascii=False) + "\n", encoding="utf-8")
        if target != Path(output):  # the output last: once it is there, so is its complete signature
            os.replace(signature_path(target), signature_path(output))
            os.replace(target, output)
    return StreamResult(scored, state.done, signature, system_scores)


def stdin_source() -> TextIO:
    """Standard input, when it is a pipe or a file (not a terminal nobody will type JSONL into)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise FileNotFoundError("no input: give --input FILE, or pipe JSONL into stdin")
    return sys.stdin
