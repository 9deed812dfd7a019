"""The panel's members: registered metrics reached by name, as a user reaches them (:func:`load_metric`), never by
importing another metric's package; and their scores laid out as the panel's features."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hf_dialeval.errors import OptionError
from hf_dialeval.inference.composite import MemberLoader
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import OVERALL, ScoreOutput
from hf_dialeval.metrics.panel.configuration_panel import FEATURE_SEPARATOR, PanelConfig, feature_name
from hf_dialeval.modeling.checkpoints import CheckpointError


def split_feature(feature: str) -> tuple[str, str]:
    """``"holistic-eval.context_coherence"`` -> ``("holistic-eval", "context_coherence")``."""
    metric, _, dimension = feature.partition(FEATURE_SEPARATOR)
    return metric, dimension


#: Keys of a checkpoint identity that do not pin its weights: the name it was given, the package version, and the
#: digest of an installed model's file record (an install's own; the member checks its files against it itself).
UNPINNED = ("name", "version", "files_sha256")


def weights_identity(metric: DialogueMetric) -> str | None:
    """A digest of what pins the weights a member runs (its checkpoint identity without :data:`UNPINNED`: content
    hashes, the pinned weights of its backbone, a Hub revision), ``None`` for a metric without a model."""
    if not metric.models:
        return None

    def pins(identity: Any) -> Any:
        if isinstance(identity, dict):
            return {key: pins(value) for key, value in identity.items() if key not in UNPINNED}
        return identity

    return hashlib.sha256(json.dumps(pins(metric.checkpoint_identity), sort_keys=True, default=str).encode("utf-8")
                          ).hexdigest()


def member_dimensions(features: Sequence[str]) -> dict[str, list[str]]:
    """The members ``features`` (each ``METRIC.SCORE``) name, in their order, each with its scores."""
    dimensions: dict[str, list[str]] = {}
    for feature in features:
        name, dimension = split_feature(feature)
        if dimension in dimensions.setdefault(name, []):
            raise OptionError(f"--features names {feature} twice")
        dimensions[name].append(dimension)
    return dimensions


def member_record(name: str, checkpoint: str | None, metric: DialogueMetric, dimensions: Sequence[str]
                  ) -> dict[str, Any]:
    """The config's record of member ``name`` (loaded: ``metric``) scoring ``dimensions``, each checked to be one the
    member gives."""
    for dimension in dimensions:
        if dimension != OVERALL and dimension not in metric.dimensions:
            raise OptionError(f"--features {feature_name(name, dimension)}: {name} gives "
                              f"{[OVERALL, *metric.dimensions]}, not {dimension!r}")
    return {"metric": name, "checkpoint": checkpoint, "identity": weights_identity(metric),
            "dimensions": list(dimensions)}


def member_records(features: Sequence[str], checkpoints: Mapping[str, str | None],
                   metrics: Mapping[str, DialogueMetric]) -> list[dict[str, Any]]:
    """The config's ``members`` for ``features`` (each ``METRIC.SCORE``), checked against the loaded ``metrics``:
    every score is one the member gives."""
    return [member_record(name, checkpoints.get(name), metrics[name], dimensions)
            for name, dimensions in member_dimensions(features).items()]


def member_loaders(config: PanelConfig, names: Sequence[str] | None = None, device: str | None = None,
                   dtype: str | None = None, dialogue: bool = False) -> dict[str, MemberLoader]:
    """What loads each of the panel's members scoring turns (``dialogue``: those scoring whole dialogues; ``names``: a
    subset of the panel's members), by name, on ``device`` in ``dtype``, each checked to run the weights the panel was
    fitted with: a member whose weights changed would be read through another model's CDF."""
    known = config.member_names + config.dialogue_member_names
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise OptionError(f"--members: the panel's members are {known}, not {unknown}")

    def loader(record: dict[str, Any]) -> MemberLoader:
        def load(batch_size: int = 32) -> DialogueMetric:
            metric = load_metric(record["metric"], record["checkpoint"], device=device, batch_size=batch_size,
                                 dtype=dtype)
            if record["identity"] is not None and weights_identity(metric) != record["identity"]:
                raise CheckpointError(
                    f"panel member {record['metric']} ({record['checkpoint'] or 'its shipped default'}) is not the "
                    "model the panel was fitted with (its weights' hash differs): refit the panel with "
                    "`hf-dialeval train panel`")
            return metric

        return load

    return {record["metric"]: loader(record) for record in (config.dialogue_members if dialogue else config.members)
            if not names or record["metric"] in names}


def feature_rows(features: Sequence[str], outputs: Mapping[str, ScoreOutput], size: int) -> list[list[float]]:
    """Per item, each of ``features``' raw member score (``nan`` for a member not in ``outputs``: left out)."""
    columns = []
    for feature in features:
        name, dimension = split_feature(feature)
        output = outputs.get(name)
        if output is None:
            columns.append([float("nan")] * size)
        else:
            columns.append(list(output.overall if dimension == OVERALL else output.scores[dimension]))
    return [list(row) for row in zip(*columns)] if columns else [[] for _ in range(size)]
