"""The Hub repo folder of a QuantiDCE checkpoint, for ``push_to_hub.py models --metric quantidce``."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.publishing import write_model_folder
from hf_dialeval.metrics.quantidce.scoring import DEFAULT_CHECKPOINT, load_quantidce


def export_quantidce(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>/`` with the full model (adapters merged) as safetensors, its config, the
    tokenizer and the model card as README.md; ``checkpoint=None`` exports the shipped default
    (``quantidce-minilm-bi``). Loads back with ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    source = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    model, tokenizer = load_quantidce(checkpoint)
    name = source.name if source.exists() else str(checkpoint).split("/")[-1]
    return [write_model_folder(model, tokenizer, "quantidce.md", Path(out_dir) / name)]
