"""Helpers for metric configs that hold their backbone's config.

Kept apart from ``modeling_utils`` (torch): configs are registered with ``AutoConfig`` while transformers'
own ``modeling_utils`` may still be initialising (see :mod:`hf_dialeval.registration`), so a configuration
module may import nothing that needs a model class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers import AutoConfig, PretrainedConfig

from .checkpoints import resolve_backbone_path


def backbone_config_dict(backbone: str | PretrainedConfig | Mapping[str, Any]) -> dict[str, Any]:
    """A backbone's config as a plain dict (with ``model_type``), to be stored inside a metric's config so
    that ``from_pretrained`` rebuilds the encoder without the network. ``backbone`` is a Hub id, a local
    path, a config or such a dict."""
    if isinstance(backbone, Mapping):
        return dict(backbone)
    if isinstance(backbone, str):
        backbone = AutoConfig.from_pretrained(resolve_backbone_path(backbone))
    return backbone.to_dict()


def backbone_config_from_dict(config: Mapping[str, Any]) -> PretrainedConfig:
    """Inverse of :func:`backbone_config_dict`."""
    values = dict(config)
    return AutoConfig.for_model(values.pop("model_type"), **values)
