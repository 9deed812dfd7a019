"""Building the exact folders that ``push_to_hub.py`` uploads: benchmark/corpus datasets and metric models."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

#: metric name -> ``export(checkpoint, out_dir)`` writing every repo folder of that metric under ``out_dir``
#: (config, safetensors weights, tokenizer, README.md model card) and returning the folders written.
ModelExporter = Callable[[str | None, Path], list[Path]]
MODEL_EXPORTERS: dict[str, ModelExporter] = {}


def register_model_exporter(name: str) -> Callable[[ModelExporter], ModelExporter]:
    def decorator(export: ModelExporter) -> ModelExporter:
        MODEL_EXPORTERS[name] = export
        return export

    return decorator


def export_models(name: str, checkpoint: str | os.PathLike | None, out_dir: str | os.PathLike) -> list[Path]:
    """Write the repo folder(s) of metric ``name`` (its shipped default when ``checkpoint`` is None)."""
    if name not in MODEL_EXPORTERS:
        raise KeyError(f"no model to publish for metric {name!r}; publishable: {sorted(MODEL_EXPORTERS)}")
    return MODEL_EXPORTERS[name](None if checkpoint is None else str(checkpoint), Path(out_dir))
