"""The one factory of every metric: :func:`load_metric` builds a registered metric by name, checking what it is given
(precision, checkpoints, options) before the metric's libraries are imported; :func:`check_checkpoints_for` and
:func:`check_items_for` check checkpoints and items against a registered metric without loading it."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from hf_dialeval.data.model import item_level
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.precision import precision_name


def _own_options(metric_class: type[DialogueMetric]) -> list[str]:
    """The keyword options a metric's ``load`` takes besides the ones every metric takes (those it passes on to the
    class, when it takes ``**options``, included)."""
    common = {"cls", "self", "checkpoint", "device", "batch_size", "dtype", "model", "tokenizer", "models", "tokenizers"}
    signatures = [inspect.signature(metric_class.load)]
    if any(p.kind is p.VAR_KEYWORD for p in signatures[0].parameters.values()):
        signatures.append(inspect.signature(metric_class.__init__))
    return [name for signature in signatures for name, parameter in signature.parameters.items()
            if name not in common and parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)]


def check_items_for(name: str, items: Sequence[Mapping[str, Any]]) -> None:
    """Check ``items`` against what the registered metric ``name`` requires of them (the data model, a context, a
    reference) without loading its model: a mistake in the input fails before the seconds a model takes to load."""
    from hf_dialeval.registry import entry

    spec = entry(name)
    if items:
        spec.metric_class.check_items(items, item_level(items[0]))


def check_checkpoints_for(name: str, checkpoint: str | Sequence[str] | None) -> list[str]:
    """The checkpoints ``checkpoint`` names (see :func:`load_metric`) for the registered metric ``name``, checked: none
    for a metric without a model, one unless it ensembles, each an existing folder with safe weights or a Hub model.
    Imports none of the metric's libraries: a command calls it first, so that a mistake fails before the seconds
    they take to import, and hands the result to :func:`load_metric`, which does not check a name again
    (:class:`~hf_dialeval.modeling.checkpoints.CheckedCheckpoint`)."""
    from hf_dialeval.modeling.checkpoint_sources import check_checkpoint
    from hf_dialeval.modeling.checkpoints import CheckpointError, checkpoint_names
    from hf_dialeval.registry import entry

    spec = entry(name)
    names = checkpoint_names(checkpoint)
    if names and not spec.uses_checkpoint:
        raise CheckpointError(f"{name} has no model, so it takes no checkpoint: leave the checkpoint out")
    if len(names) > 1 and not spec.ensemble:
        raise CheckpointError(f"{name} scores with one checkpoint, not an ensemble of {len(names)}: give one")
    return [check_checkpoint(part) for part in names]


def load_metric(name: str, checkpoint: str | Sequence[str] | None = None, device: str | None = None,
                batch_size: int = 32, dtype: str | None = None, **options: Any) -> DialogueMetric:
    """Instantiate a registered metric (:data:`hf_dialeval.registry.METRICS`) through its class's ``load``: the one
    factory of every metric. ``checkpoint`` is a Hub id or a local path (``None``: its default; several,
    comma-separated or a list, for a metric that ensembles; or :func:`check_checkpoints_for`'s result);
    ``dtype`` the precision a model metric computes in (``fp32``, the default, ``bf16`` or ``fp16``, under autocast);
    ``options`` the metric's own (e.g. HolisticEval's ``nli_checkpoint``). A checkpoint path that does not exist, a
    wrong precision or an option the metric does not take fails here, before the metric's libraries are imported."""
    from hf_dialeval.registry import entry

    spec = entry(name)
    if dtype is not None:
        precision_name(dtype)
    names = check_checkpoints_for(name, checkpoint)
    metric_class = spec.metric_class
    offered = _own_options(metric_class)
    unknown = [option for option in options if option not in offered]
    if unknown:
        raise TypeError(f"{name} takes no option {unknown[0]!r}" + (f"; its options: {offered}" if offered else ""))
    checkpoint = list(names) if len(names) > 1 else names[0] if names else None
    metric = metric_class.load(checkpoint, device=device, batch_size=batch_size, dtype=dtype, **options)
    store_weights = getattr(metric, "store_weights_in_compute_precision", None)  # a model metric's own models
    if store_weights is not None:
        store_weights()
    return metric
