"""Scores of benchmarks kept on disk, so that a leaderboard or a comparison re-scores only what changed.

An entry is keyed by everything that changes a metric's scores on a benchmark: the metric's signature without its
item counts (metric, checkpoint identity with its content hash, library versions, dtype, token limit, device; see
:mod:`hf_dialeval.inference.signature`) and a hash of the benchmark's items. A new checkpoint, a library upgrade or an edited
benchmark file gives a new key; nothing stale is ever read back.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.model import DialogueValidationError, item_level
from hf_dialeval.inference.composite import CompositeMetric, member_settings
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import ScoreOutput, json_ready
from hf_dialeval.modeling.offline_models import cache_root

if TYPE_CHECKING:
    import datasets


def default_cache_dir() -> Path:
    """``scores/`` in the package's one cache folder (:func:`~hf_dialeval.modeling.checkpoints.cache_root`:
    ``$HF_DIALEVAL_CACHE``, else ``~/.cache/hf-dialeval``), beside the installed models."""
    return cache_root() / "scores"


def dataset_digest(dataset: datasets.Dataset) -> str:
    """A content hash of a benchmark's rows (items and human scores)."""
    digest = hashlib.sha256()
    for row in dataset:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
    return digest.hexdigest()


def cache_key(metric: DialogueMetric, dataset: datasets.Dataset) -> str:
    return settings_key(member_settings(metric), dataset)


def settings_key(settings: Mapping[str, Any], dataset: datasets.Dataset) -> str:
    """The key of the scores of a metric with signature ``settings`` (its counts of items left out) of ``dataset``."""
    payload = json.dumps({"signature": settings, "items": dataset_digest(dataset)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """Score files under ``root`` (default :func:`default_cache_dir`), one per (metric signature, benchmark)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str) -> Path:
        return self._settings_path(member_settings(metric), dataset, benchmark)

    def _settings_path(self, settings: Mapping[str, Any], dataset: datasets.Dataset, benchmark: str) -> Path:
        """The entry of the metric with signature ``settings`` (counts left out), found without loading it."""
        name = re.sub(r"[^A-Za-z0-9.-]+", "_", Path(benchmark).name)
        return self.root / settings["metric"] / f"{name}-{settings_key(settings, dataset)[:20]}.json"

    def _member_path(self, metric: CompositeMetric, member: str, dataset: datasets.Dataset, benchmark: str) -> Path:
        return self._settings_path(metric.member_settings[member], dataset, benchmark)

    @staticmethod
    def _read(path: Path, size: int) -> ScoreOutput | None:
        """The output stored at ``path`` if it holds ``size`` items' scores; ``None`` where there is none (or an entry
        cut short or edited by hand: scored again)."""
        if not path.is_file():
            return None
        try:
            output = ScoreOutput.from_dict(json.loads(path.read_text(encoding="utf-8"))["output"])
        except (ValueError, KeyError, TypeError):
            return None
        return output if len(output) == size else None

    def scores(self, metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str,
               progress: bool | str = False) -> tuple[ScoreOutput, bool]:
        """``metric``'s output on ``dataset``, from the cache when it holds it (second value ``True``), else scored
        and stored."""
        path = self.path(metric, dataset, benchmark)
        output = self._read(path, len(dataset))
        if output is not None:
            return output, True
        output = self._composite_scores(metric, dataset, benchmark) if isinstance(metric, CompositeMetric) \
            else metric.score_dataset(dataset, progress=progress)
        record = {"benchmark": benchmark, "output": json_ready(output.to_dict())}
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(record) + "\n", encoding="utf-8")
        partial.replace(path)  # never a half-written entry under the real name
        return output, False

    def fill(self, metric: DialogueMetric, sets: Sequence[tuple[datasets.Dataset, str]], progress: bool = False
             ) -> None:
        """Before a composite scores ``sets`` (each a dataset and its benchmark name) one after another: its members'
        scores of every turn-level set the cache lacks, member by member, each member loaded once for all of them.
        Set by set, every set loads every member again, and what each load and scoring leaves in the allocator adds
        up: a panel's checklist of eight perturbations peaked at 4.10 GB that way, 3.43 GB member by member.
        Other metrics and sets are left to :meth:`scores`, as are sets whose items the composite or a member refuses
        (scoring them there names the mistake). ``progress``: a bar per member and set."""
        if not isinstance(metric, CompositeMetric):
            return
        turn_sets = []
        for dataset, benchmark in sets:
            items = list(dataset)
            if not items or item_level(items[0]) != "turn":
                continue
            try:
                metric.check_items(items, "turn")
            except DialogueValidationError:
                continue
            turn_sets.append((dataset, benchmark))
        # an entry's presence is enough here (the composite's scoring reads it, and scores again one that is cut short)
        absent = [name for name in metric.member_loaders
                  if not all(self._member_path(metric, name, dataset, benchmark).is_file()
                             for dataset, benchmark in turn_sets)]

        def score_every_set(member: DialogueMetric) -> None:
            for dataset, benchmark in turn_sets:
                try:
                    self.scores(member, dataset, benchmark, progress=progress and f"{member.name} on {benchmark}")
                except DialogueValidationError:
                    continue

        metric.member_outputs(score_every_set, absent)

    def _composite_scores(self, metric: CompositeMetric, dataset: datasets.Dataset, benchmark: str) -> ScoreOutput:
        """A composite's output on ``dataset`` from its members' outputs, each member's from this cache when it holds
        it: a member scores a benchmark once, alone or in any composite. Dialogues are scored by the composite
        itself, which combines the members' scores of each turn (not their dialogue means)."""
        items = list(dataset)
        if not items or item_level(items[0]) != "turn":
            return metric.score_dataset(dataset)
        metric.check_items(items, "turn")
        # members whose scores are here are not loaded: a composite scored from the cache loads no model
        outputs = {name: self._read(self._member_path(metric, name, dataset, benchmark), len(dataset))
                   for name in metric.member_loaders}
        absent = [name for name, output in outputs.items() if output is None]
        outputs.update(metric.member_outputs(lambda member: self.scores(member, dataset, benchmark)[0], absent))
        output = metric.combine_items(items, outputs)
        output.signature = metric.signature(len(output), sum(output.truncated), sum(output.empty))
        return output

