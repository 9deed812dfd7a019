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
from pathlib import Path
from typing import TYPE_CHECKING

from hf_dialeval.data.model import item_level
from hf_dialeval.inference.composite import CompositeMetric
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
    signature = metric.signature(0, 0, 0)
    signature.pop("items", None), signature.pop("truncated", None), signature.pop("empty", None)
    payload = json.dumps({"signature": signature, "items": dataset_digest(dataset)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """Score files under ``root`` (default :func:`default_cache_dir`), one per (metric signature, benchmark)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str) -> Path:
        name = re.sub(r"[^A-Za-z0-9.-]+", "_", Path(benchmark).name)
        return self.root / metric.name / f"{name}-{cache_key(metric, dataset)[:20]}.json"

    def scores(self, metric: DialogueMetric, dataset: datasets.Dataset, benchmark: str,
               progress: bool = False) -> tuple[ScoreOutput, bool]:
        """``metric``'s output on ``dataset``, from the cache when it holds it (second value ``True``), else scored
        and stored."""
        path = self.path(metric, dataset, benchmark)
        if path.is_file():
            try:
                output = ScoreOutput.from_dict(json.loads(path.read_text(encoding="utf-8"))["output"])
            except (ValueError, KeyError, TypeError):  # an entry cut short or edited by hand: score again
                output = None
            if output is not None and len(output) == len(dataset):
                return output, True
        output = self._composite_scores(metric, dataset, benchmark) if isinstance(metric, CompositeMetric) \
            else metric.score_dataset(dataset, progress=progress)
        record = {"benchmark": benchmark, "output": json_ready(output.to_dict())}
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(record) + "\n", encoding="utf-8")
        partial.replace(path)  # never a half-written entry under the real name
        return output, False

    def _composite_scores(self, metric: CompositeMetric, dataset: datasets.Dataset, benchmark: str) -> ScoreOutput:
        """A composite's output on ``dataset`` from its members' outputs, each member's from this cache when it holds
        it: a member scores a benchmark once, alone or in any composite. Dialogues are scored by the composite
        itself, which combines the members' scores of each turn (not their dialogue means)."""
        items = list(dataset)
        if not items or item_level(items[0]) != "turn":
            return metric.score_dataset(dataset)
        metric.check_items(items, "turn")
        output = metric.combine_items(items, metric.member_outputs(lambda member: self.scores(member, dataset,
                                                                                           benchmark)[0]))
        output.signature = metric.signature(len(output), sum(output.truncated), sum(output.empty))
        return output

