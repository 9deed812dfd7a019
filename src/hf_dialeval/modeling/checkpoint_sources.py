"""Where a checkpoint loads from, and loading it from there: :func:`check_checkpoint` takes a value as given (a
folder, checked; an offline backbone's Hub id; a Hub model found), :func:`resolve_backbone_path` turns an offline
backbone's Hub id into its installed, verified folder (:mod:`hf_dialeval.modeling.offline_models`), and
:func:`from_pretrained` loads a model class from there, quietly.

This module imports no deep-learning library at import time, so that the CLI starts fast.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hf_dialeval.modeling.checkpoints import (
    ADAPTER_CONFIG,
    CheckedCheckpoint,
    CheckpointError,
    check_weights,
    hub_model_problem,
    looks_like_path,
)
from hf_dialeval.modeling.offline_models import OFFLINE_BACKBONES, offline_backbone_path


def check_checkpoint(value: str | os.PathLike) -> CheckedCheckpoint:
    """``value`` as a loadable name: an existing folder (its weights checked by
    :func:`~hf_dialeval.modeling.checkpoints.check_weights`), an offline backbone's Hub id, or a Hub id in the local
    cache or on the Hub. Anything else raises :class:`~hf_dialeval.modeling.checkpoints.CheckpointError`."""
    if isinstance(value, CheckedCheckpoint):
        return value
    text = os.fspath(value)
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("config.json", ADAPTER_CONFIG)):
            # transformers would fail deep inside from_pretrained; the folder is the user's mistake
            raise CheckpointError(f"{text} holds no config.json: give the folder a model was saved into "
                                  "(save_pretrained, or a train command's --output-dir)")
        check_weights(path)
        return CheckedCheckpoint(path)
    if path.exists():
        raise CheckpointError(f"{text} is a file: give the folder that holds config.json and the weights")
    if looks_like_path(text):
        raise CheckpointError(f"no such folder: {text}")
    if text in OFFLINE_BACKBONES:  # resolved to its installed copy by resolve_backbone_path
        return CheckedCheckpoint(text)
    problem = hub_model_problem(text)
    if problem is not None:
        raise CheckpointError(f"no such folder: {text}; as a Hub model id, {problem}")
    return CheckedCheckpoint(text)


def resolve_backbone_path(name_or_path: str) -> str:
    """Where to load a backbone from: the verified offline copy for a Hub id in :data:`OFFLINE_BACKBONES`
    (so checkpoints that name the Hub id load without the network), any other value as
    :func:`check_checkpoint` passes it."""
    if name_or_path in OFFLINE_BACKBONES:
        try:
            return offline_backbone_path(name_or_path)
        except ImportError as missing:
            problem = hub_model_problem(name_or_path)
            if problem is not None:
                raise CheckpointError(f"{name_or_path} is not installed ({missing}), and as a Hub model id, "
                                      f"{problem}") from None
            return name_or_path
    return check_checkpoint(name_or_path)


def from_pretrained(model_class: Any, name_or_path: str | os.PathLike, **kwargs: Any) -> Any:
    """``model_class.from_pretrained`` of a checked checkpoint or offline backbone (:func:`resolve_backbone_path`),
    from safetensors weights only, without the libraries' per-load progress bars and notices (:func:`quiet_loading`)."""
    return from_resolved(model_class, resolve_backbone_path(os.fspath(name_or_path)), **kwargs)


def from_resolved(model_class: Any, path: str, **kwargs: Any) -> Any:
    """:func:`from_pretrained` of a ``path`` that :func:`resolve_backbone_path` returned: not resolved (and checked)
    again."""
    with quiet_loading():
        return model_class.from_pretrained(path, use_safetensors=True, **kwargs)


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Loading a metric prints nothing: transformers draws a "Loading weights" bar for every model loaded (a metric
    loads two or three), and peft warns that an attribute it reads is deprecated in transformers. The user's own
    progress-bar setting is restored afterwards."""
    from transformers.utils import logging as transformers_logging

    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            yield
    finally:
        if bars:
            transformers_logging.enable_progress_bar()
