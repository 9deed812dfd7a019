"""The Hub repo folder of a HolisticEval checkpoint, for ``push_to_hub.py models --metric holistic-eval``."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.publishing import write_model_folder
from hf_dialeval.metrics.holistic_eval.scoring import DEFAULT_CHECKPOINT, load_holistic_eval


def export_holistic_eval(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>/`` with the full model (the language model, any adapter merged) as safetensors, its
    config (with the fitted percentile cutoffs), the tokenizer and the model card as README.md; ``checkpoint=None``
    exports the shipped default. Loads back with ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    source = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    model, tokenizer = load_holistic_eval(checkpoint)
    name = source.name if source.exists() else str(checkpoint).split("/")[-1]
    return [write_model_folder(model, tokenizer, "holistic_eval.md", Path(out_dir) / name)]
