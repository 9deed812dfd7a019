"""The Hub repo folder of a Dial-M checkpoint, for ``push_to_hub.py models --metric dial-m``."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.publishing import write_model_folder
from hf_dialeval.metrics.dial_m.scoring import DEFAULT_CHECKPOINT, load_dial_m


def export_dial_m(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>/`` with the full model (the masked LM, any adapter merged) as safetensors, its config
    (the end-of-utterance token and keyword settings), the tokenizer (with ``<eou>``) and the model card as README.md;
    ``checkpoint=None`` exports the shipped default. Loads back with ``AutoModel.from_pretrained`` after
    ``import hf_dialeval``."""
    source = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    model, tokenizer = load_dial_m(checkpoint)
    name = source.name if source.exists() else str(checkpoint).split("/")[-1]
    return [write_model_folder(model, tokenizer, "dial_m.md", Path(out_dir) / name)]
