"""The Hub repo folder of a RADE checkpoint, for ``push_to_hub.py models --metric rade``."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.publishing import write_model_folder
from hf_dialeval.metrics.rade.scoring import DEFAULT_CHECKPOINT, load_rade


def export_rade(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>/`` with the full model (adapter merged: encoder, generator and head) as
    safetensors, its config, the tokenizer and the model card as README.md; ``checkpoint=None`` exports the
    shipped default (``rade-minilm``). Loads back with ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    source = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    model, tokenizer = load_rade(checkpoint)
    name = source.name if source.exists() else str(checkpoint).split("/")[-1]
    return [write_model_folder(model, tokenizer, "rade.md", Path(out_dir) / name)]
