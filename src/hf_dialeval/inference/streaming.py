"""Scoring inputs of any size: read in chunks (:mod:`~hf_dialeval.data.table_chunks`), written chunk by chunk,
``resume`` after a kill (:mod:`~hf_dialeval.inference.resume`), and data-parallel processes.

Memory does not grow with the input: a chunk of :data:`CHUNK_ITEMS` items is read, scored, written and dropped.
The one exception is a metric that also scores systems as a whole (:attr:`DialogueMetric.system_level`,
HolisticEval's n-gram diversity): it needs every system's responses, so those (and the item scores) are kept.

Nothing is lost or stale:

* one run at a time owns an output (:class:`~hf_dialeval.output_lock.OutputLock`, ``OUTPUT.lock``);
* the output holds one JSON line per input item, in the input's order, written to ``OUTPUT.partial`` (flushed
  after every chunk) and renamed to ``OUTPUT`` only when every item is scored: a file named ``OUTPUT`` is always
  complete. Nothing is ever appended to ``OUTPUT`` itself: resuming a complete output continues a copy of it;
* an existing ``OUTPUT.partial`` (an interrupted run's work) is continued with ``resume=True`` or discarded with
  ``overwrite=True``, never silently: without either it is an error;
* ``resume`` cuts a line a kill left half-written, checks the signature and every kept line against the input
  before anything is appended, then appends from the next item: no duplicate, no gap, nothing stale;
* an output that is the input itself (the same file, a hard link, a symbolic link) is refused before anything is
  written.

Under ``torchrun`` or ``accelerate launch`` (``WORLD_SIZE`` > 1) every process reads the input and validates every
chunk (an error stops every process alike); of each round of as many chunks as processes, process k scores chunk
k, and the main process (which holds the lock) gathers them and writes them in order. A chunk is scored in the same
batches whichever process scores it, so the output is the single-process output, to the bit. Parallelism starts at
two chunks: give a smaller ``chunk_size`` for a small input.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hf_dialeval.data.columns import Columns
from hf_dialeval.data.model import DialogueValidationError, item_level
from hf_dialeval.data.table_chunks import CHUNK_ITEMS, count_items, groups, read_chunks
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.process_group import ProcessGroup
from hf_dialeval.inference.resume import (
    KeptLines,
    Progress,
    ResumeError,
    check_resumable,
    read_output,
    signature_path,
)
from hf_dialeval.inference.score_output import ScoreOutput, json_ready
from hf_dialeval.output_lock import OutputLock, OutputLocked, OutputWriteError, StaleLockWarning


def record_line(item: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """One output line: the input item with its scores."""
    return json.dumps(json_ready({**item, **record}), ensure_ascii=False) + "\n"


def systems_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.systems.json")


def partial_path(output: str | os.PathLike) -> Path:
    """Where a run writes its output until every item is scored (then renamed to ``output``)."""
    return Path(f"{output}.partial")


class ScoringInterrupted(KeyboardInterrupt):
    """Scoring stopped by the user (Ctrl-C): the message says how many items were written where, and how to go on."""


@dataclass
class StreamResult:
    """What :func:`score_stream` did: items scored now, items found already scored (resume), and the signature
    of the whole output."""

    scored: int
    resumed: int
    signature: dict[str, Any]
    system_scores: dict[str, dict[str, float]]


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
            raise OptionError(
                f"--output {output} is the input file itself{' (a link to it)' if path.is_symlink() else ''}: scoring "
                "into it would overwrite the items before they are read; give another output file")


def _scored_lines(path: str | os.PathLike) -> int:
    """How many scored items an output file holds: its complete lines (0 when there is no such file)."""
    if not Path(path).is_file():
        return 0
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n") and line.strip())


def check_partial_output(output: str | os.PathLike, resume: bool, overwrite: bool) -> None:
    """An interrupted run's ``OUTPUT.partial`` holding scored items is continued (``resume``) or discarded
    (``overwrite``), never lost silently (one without any has nothing to lose); the two together contradict each
    other."""
    if resume and overwrite:
        raise OptionError("--resume continues an output and --overwrite discards it: give one of them")
    partial = partial_path(output)
    if not resume and not overwrite:
        lines = _scored_lines(partial)
        if lines:
            raise OptionError(f"{partial} holds {lines} scored items of an interrupted run: give --resume to "
                              "continue it, or --overwrite to discard it and start again")


def _chunks_to_score(first_chunk: list[dict[str, Any]], chunks: Iterable[list[dict[str, Any]]],
                     metric: DialogueMetric, state: Progress,
                     kept: KeptLines | None) -> Iterator[tuple[int, list[dict[str, Any]], int, str]]:
    """Per chunk not wholly in the output already: its first item's index, the chunk, how many of its items the
    output holds (resume), and the items' level; every later chunk checked against the data model (the first was,
    by :meth:`ScoringRun.check_first_chunk`) and, on resume, every kept line checked to be the score of the input's
    item at its place."""
    position, level = 0, item_level(first_chunk[0])
    for chunk in itertools.chain([first_chunk], chunks):
        first, position = position, position + len(chunk)
        for index in range(first, min(position, state.done)):
            kept.check(chunk[index - first], index)
        if position <= state.done:
            continue
        if first:
            metric.check_items(chunk, level, first)  # on every process: an error stops them all
        yield first, chunk, max(state.done - first, 0), level
    if position < state.done:
        raise ResumeError(f"--resume: {kept.path} holds {state.done} scored items, more than the {position} of the "
                          "input: it was written from another input; score into a new file")


class ScoringRun:
    """One ``score`` run from ``source`` (a JSONL, CSV or Parquet path, or a JSONL stream; its columns mapped to the
    data model's fields by ``columns``) into ``output`` (a JSONL path, or a stream), its checks each done once, before
    any model loads:

    * creating it refuses an output that is the input, and ``resume`` without an output file;
    * entering it (``with run:``) takes the output's lock for the whole run and refuses an interrupted run's
      ``OUTPUT.partial`` that is neither continued (``resume``) nor discarded (``overwrite``);
    * :meth:`check_first_chunk` reads the input's first chunk and checks its items for the metric's class;
    * :meth:`score` checks, with the metric, what ``resume`` keeps (signature, then every kept line as the input is
      read) before anything is appended, and scores the rest, going on from the first chunk read.

    Under several processes the main process holds the lock; when it is taken or cannot be written, every process
    fails alike."""

    def __init__(self, source: str | os.PathLike | TextIO, output: str | os.PathLike | TextIO, resume: bool = False,
                 overwrite: bool = False, chunk_size: int = CHUNK_ITEMS, group: ProcessGroup | None = None,
                 columns: Columns = Columns()) -> None:
        self.source, self.output, self.resume, self.overwrite = source, output, resume, overwrite
        self.columns = columns
        self.chunk_size, self.group = chunk_size, group or ProcessGroup()
        self.to_path = isinstance(output, (str, os.PathLike))
        if self.to_path:
            check_not_input(source, output)
        elif resume:
            raise OptionError("--resume continues an output file: give --output FILE")
        self._stack = contextlib.ExitStack()
        #: the input's chunks after the first, and the first (``None`` for an input without items), once read
        self._chunks: Iterator[list[dict[str, Any]]] | None = None
        self._first_chunk: list[dict[str, Any]] | None = None

    def __enter__(self) -> ScoringRun:
        if not self.to_path:
            return self
        problem = None
        if self.group.is_main:
            try:
                lock = self._stack.enter_context(OutputLock(self.output))
            except (OutputLocked, OutputWriteError) as error:
                problem = error
            else:
                if lock.took_over_message():
                    warnings.warn(lock.took_over_message(), StaleLockWarning, stacklevel=2)
        problems = [error for error in self.group.gather([problem]) if error]
        if problems:  # the main process's own error (gathered pickled): its class and line on every process
            raise problems[0]
        try:
            check_partial_output(self.output, self.resume, self.overwrite)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stack.close()

    def check_first_chunk(self, metric: type[DialogueMetric] | DialogueMetric) -> None:
        """Read the input's first chunk and check its items for ``metric`` (its class will do: what a metric requires
        of its items is known before its model loads), so that an input that does not parse, or an item the metric
        cannot score, fails before the model loads and before anything is written. Inside ``with run:``; the
        chunk is read once: :meth:`score` goes on from it (and calls this itself when it has not run)."""
        self._chunks = self._stack.enter_context(contextlib.closing(read_chunks(self.source, self.chunk_size, self.columns)))
        self._first_chunk = next(self._chunks, None)
        if self._first_chunk:
            metric.check_items(self._first_chunk, item_level(self._first_chunk[0]))

    def score(self, metric: DialogueMetric, progress: bool = False) -> StreamResult:
        """Score the input with ``metric`` (see the class); Ctrl-C raises :class:`ScoringInterrupted`, the lines
        written kept for ``resume``."""
        if self._chunks is None:
            self.check_first_chunk(metric)
        if not self.to_path:
            return _score_into(metric, self.source, self._first_chunk, self._chunks, self.output, None, Progress(),
                               None, self.group, progress)
        group, state, kept = self.group, Progress(), None
        if self.resume:
            resumed_from = partial_path(self.output) if partial_path(self.output).is_file() else Path(self.output)
            check_resumable(metric, resumed_from)
            group.wait()  # every process has read the signature before the main process may rewrite it
            state = read_output(resumed_from, metric, cut_partial_line=group.is_main)
            group.wait()
            kept = KeptLines(resumed_from, state.done)
        try:
            return _score_into(metric, self.source, self._first_chunk, self._chunks, self.output,
                               partial_path(self.output), state, kept, group, progress)
        finally:
            if kept is not None:
                kept.close()


def score_stream(metric: DialogueMetric, source: str | os.PathLike | TextIO, output: str | os.PathLike | TextIO,
                 resume: bool = False, chunk_size: int = CHUNK_ITEMS, group: ProcessGroup | None = None,
                 progress: bool = False, overwrite: bool = False) -> StreamResult:
    """Score every item of ``source`` into ``output`` chunk by chunk, as one :class:`ScoringRun`. An output path
    is owned by this run (``OUTPUT.lock``), written as ``OUTPUT.partial`` and renamed when every item is scored; its
    signature goes beside it (``.signature.json``, written first and completed at the end), with the system scores
    of a system-level metric (``OUTPUT.systems.json``). ``resume``: continue the output a killed run left
    (``OUTPUT.partial``, else a copy of ``OUTPUT``); ``overwrite``: discard an interrupted run's ``OUTPUT.partial``
    and start again. Ctrl-C raises :class:`ScoringInterrupted`, the lines written kept for ``resume``."""
    with ScoringRun(source, output, resume, overwrite, chunk_size, group) as run:
        return run.score(metric, progress)


def _score_into(metric: DialogueMetric, source: str | os.PathLike | TextIO, first_chunk: list[dict[str, Any]] | None,
                chunks: Iterator[list[dict[str, Any]]], output: str | os.PathLike | TextIO, target: Path | None,
                state: Progress, kept: KeptLines | None, group: ProcessGroup, progress: bool) -> StreamResult:
    """The scoring loop over the input ``source``, read as its checked ``first_chunk`` and the ``chunks`` after it:
    ``output`` a stream (``target`` None) or a path written as ``target`` (``OUTPUT.partial``), continuing ``state``
    (what the kept lines hold, checked by ``kept`` as the input is read)."""
    total = count_items(source) if isinstance(source, (str, os.PathLike)) else None
    if total is not None and state.done > total:
        raise ResumeError(f"--resume: {kept.path} holds {state.done} scored items, more than the {total} of the input: "
                          "it was written from another input; score into a new file")
    if first_chunk is None:
        raise DialogueValidationError(f"{getattr(source, 'name', source)} holds no items: give one JSON object per "
                                      "line (JSONL) or one row per item (CSV, Parquet)")
    pending = _chunks_to_score(first_chunk, chunks, metric, state, kept)
    # a bad first chunk, or any kept line that is not the input's, fails before the output and the progress bar open
    first_pending = next(pending, None)
    writer: Any = contextlib.nullcontext(None)
    if group.is_main and target is not None:
        # the signature first: a copy a full disk cuts short is then one --resume continues
        _write_text_or_fail(signature_path(target), json.dumps(metric.signature(0, 0, 0), ensure_ascii=False),
                            None if kept is None else kept.path)
        if kept is not None and kept.path != target:  # a complete output resumed: continue a copy, never OUTPUT
            _write_or_fail(lambda: shutil.copyfile(kept.path, target), target, kept.path)
        # unbuffered: a chunk is on disk once written, and a failed write leaves no buffer for close to retry
        writer = open(target, "ab" if kept is not None else "wb", buffering=0)
    elif group.is_main:
        writer = contextlib.nullcontext(output)
    from tqdm.auto import tqdm

    scored = 0
    try:
        with writer as out, tqdm(total=None if total is None else total - state.done, unit="item", desc=metric.name,
                                 disable=not (progress and group.is_main)) as bar:
            remaining = itertools.chain([first_pending], pending) if first_pending is not None else iter(())
            for chunk_round in groups(remaining, group.size):
                # each process scores one whole chunk, as one process alone would (the same batches: the same scores,
                # to the bit); a resumed run scores the whole chunk it resumes in, and writes what the output lacks
                mine = None
                if group.rank < len(chunk_round):
                    first, chunk, _, level = chunk_round[group.rank]
                    mine = metric.score_chunk(chunk, level, first)
                for (_, chunk, skip, _), part in zip(chunk_round, group.gather([mine])):
                    items, rows = chunk[skip:], part.tail(skip)
                    if metric.system_level:
                        state.keep_for_systems(items, rows)
                    if out is not None:
                        text = "".join(record_line(item, record) for item, record in zip(items, rows.records()))
                        if target is None:
                            out.write(text)
                            out.flush()
                        else:
                            _write_or_fail(lambda: _write_all(out, text.encode("utf-8")), target, target)
                    state.truncated += sum(rows.truncated)
                    state.empty += sum(rows.empty)
                    scored += len(items)
                    bar.update(len(items))
    except KeyboardInterrupt:
        written = state.done + scored
        where = f"{target} holds them: run the same command with --resume to continue" if target else "on stdout"
        raise ScoringInterrupted(f"stopped after {written} scored items; {where}") from None
    except DialogueValidationError as error:  # a later chunk's item or line: the chunks before it are kept
        written = state.done + scored
        if target is None or not written:
            raise
        raise DialogueValidationError(
            f"{str(error).rstrip('.')}; {target} keeps the {written} items scored before it: fix the item and run the "
            "same command with --resume, or --overwrite to start again") from None
    signature = metric.signature(state.done + scored, state.truncated, state.empty)
    system_scores = {}
    if metric.system_level and state.items:
        system_scores = metric.system_level_scores(state.items, ScoreOutput.concatenate(state.outputs))
    if group.is_main and target is not None:
        _finish(output, target, signature, system_scores)
    return StreamResult(scored, state.done, signature, system_scores)


def _finish(output: str | os.PathLike, target: Path, signature: dict[str, Any],
            system_scores: dict[str, dict[str, float]]) -> None:
    """The complete signature and system scores written, then the output renamed into place: last, so that once it
    is there, so is everything beside it."""
    if system_scores:
        _write_text_or_fail(systems_path(output), json.dumps(json_ready(system_scores), ensure_ascii=False), target)
    _write_text_or_fail(signature_path(target), json.dumps(signature, ensure_ascii=False), target)
    _write_or_fail(lambda: os.replace(signature_path(target), signature_path(output)), signature_path(output), target)
    _write_or_fail(lambda: os.replace(target, output), Path(output), target)


def _write_all(out: Any, data: bytes) -> None:
    """Every byte of ``data`` written to the unbuffered file ``out`` (a raw write may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[out.write(view):]


def _write_or_fail(write: Any, path: Path, kept: Path | None) -> None:
    """Run ``write``, which writes ``path``; a system that cannot write (a full disk, a quota, a read-only file
    system) is one line naming the file and how to go on: with ``--resume`` when ``kept`` (the output ``--resume``
    continues, if any) holds scored items, else from the start."""
    try:
        write()
    except OSError as error:
        # counted, not assumed: a write cut short may have written some whole lines of its chunk
        written = 0 if kept is None else _scored_lines(kept)
        how = (f"{kept} keeps the {written} items scored so far: make room, then run the same command with --resume "
               "to continue" if written else "make room, then run the same command again")
        raise OutputWriteError(f"cannot write {path}: {error.strerror or error}; {how}") from None


def _write_text_or_fail(path: Path, text: str, kept: Path | None) -> None:
    """``text`` and a newline written to ``path`` with :func:`_write_or_fail`, whole or not at all: a write that fails
    leaves the file as it was (a signature that ``--resume`` reads), not cut short."""
    _write_or_fail(lambda: _replace_text(path, text + "\n"), path, kept)


def _replace_text(path: Path, text: str) -> None:
    beside = Path(f"{path}.tmp")
    try:
        beside.write_text(text, encoding="utf-8")
        os.replace(beside, path)
    finally:
        beside.unlink(missing_ok=True)
