"""The Hub repo folder of a QuantiDCE checkpoint, for ``push_to_hub.py models --metric quantidce``."""

from __future__ import annotations

from pathlib import Path

from ..publishing import register_model_exporter
from .scoring import DEFAULT_CHECKPOINT, load_quantidce

#: The model card, kept with the repository's other cards (``model_cards/quantidce.md``).
MODEL_CARD = Path(__file__).resolve().parents[3] / "model_cards" / "quantidce.md"


@register_model_exporter("quantidce")
def export_quantidce(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>/`` with the full model (adapters merged) as safetensors, its config, the
    tokenizer and the model card as README.md; ``checkpoint=None`` exports the shipped default
    (``quantidce-minilm``). Loads back with ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    source = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    model, tokenizer = load_quantidce(checkpoint)
    folder = Path(out_dir) / (source.name if source.exists() else str(checkpoint).split("/")[-1])
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    if not MODEL_CARD.is_file():
        raise FileNotFoundError(f"the model card {MODEL_CARD} is missing: export from a checkout of hf-dialeval")
    (folder / "README.md").write_text(MODEL_CARD.read_text(encoding="utf-8"), encoding="utf-8")
    return [folder]
