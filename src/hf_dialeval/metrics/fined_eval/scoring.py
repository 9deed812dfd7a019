"""The ``fined-eval`` metric: sub-metric scores, FineD-Eval_mu (mean of one model's heads) and FineD-Eval_en
(mean of several sub-metric models), batched and length-sorted, with windowed scoring of long dialogues."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorWithPadding, PreTrainedTokenizerBase

from hf_dialeval.modeling.checkpoints import checkpoint_names
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.base import batched_forward, check_batch_size, model_settings, resolve_device, resolve_dtype
from hf_dialeval.publishing import write_model_folder
from hf_dialeval.inference.metric import DialogueMetric, ScoreOutput
from hf_dialeval.metrics.fined_eval.constants import LONG_DIALOGUE_MODES
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import FineDEvalModel, encode_dialogues

#: The offline default shipped in the package: a LoRA adapter + heads over the MiniLM encoder.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults"
#: Hub repo name of the exported default.
DEFAULT_REPO_NAME = "fined-eval-mu-minilm-dailydialog"


def load_fined_eval_model(checkpoint: str | os.PathLike | None = None, device: str | None = None
                          ) -> tuple[FineDEvalModel, PreTrainedTokenizerBase]:
    """Model (in eval mode) and tokenizer of a FineD-Eval checkpoint: a Hub id or local folder of a full model,
    or a folder holding a ``peft`` adapter with its ``config.json`` (the encoder then comes from
    ``config.backbone_name_or_path``). ``None``: the shipped offline default."""
    model, tokenizer = load_checkpoint(checkpoint, DEFAULT_CHECKPOINT, FineDEvalModel)
    return model.to(resolve_device(device)), tokenizer


class FineDEvalMetric(DialogueMetric):
    """FineD-Eval scores of whole dialogues.

    With one model (a sub-metric M^q, or the multitask FineD-Eval_mu) the dimensions are its heads and
    ``overall`` is their mean. With several sub-metric models (FineD-Eval_en) each dimension is the mean of
    the models that score it and ``overall`` the mean over the dimensions. Dialogues longer than the encoder
    are scored as the config's ``long_dialogue`` says (``window``, ``keep_start``, ``keep_end``); the output's
    ``truncated`` says which dialogues lost text.
    """

    name = "fined-eval"
    level = "dialogue"
    #: A dialogue whose system utterances are all empty (and an empty turn-level response) scores the sigmoid's
    #: bound, 0, in every dimension: the model never saw a system that does not reply, so its reading of one
    #: would be arbitrary. Empty utterances inside a dialogue are kept in place and read by the model.
    lowest_score = 0.0

    def __init__(self, models: Sequence[FineDEvalModel], tokenizers: Sequence[PreTrainedTokenizerBase],
                 checkpoint: str | None = None, batch_size: int = 32, long_dialogue: str | None = None,
                 max_tokens: int | None = None, dtype: str | torch.dtype | None = None) -> None:
        if not models or len(models) != len(tokenizers):
            raise ValueError(f"give one tokenizer per model ({len(models)} models, {len(tokenizers)} tokenizers)")
        check_batch_size(batch_size)
        if long_dialogue is not None and long_dialogue not in LONG_DIALOGUE_MODES:
            raise ValueError(f"long_dialogue={long_dialogue!r}: choose one of {list(LONG_DIALOGUE_MODES)}")
        self.models = list(models)
        self.tokenizers = list(tokenizers)
        self.collators = [DataCollatorWithPadding(t, return_tensors="pt") for t in self.tokenizers]
        self.checkpoint = checkpoint
        self.batch_size = batch_size
        self.long_dialogue = long_dialogue
        self.max_tokens = max_tokens
        self.dtype = resolve_dtype(dtype)
        self.dimensions = tuple(dict.fromkeys(d for m in self.models for d in m.config.dimensions))

    def settings(self) -> dict[str, Any]:
        model = self.models[0]
        return {**model_settings(model, self.max_tokens or model.config.max_seq_length, self.dtype),
                "long_dialogue": self.long_dialogue or model.config.long_dialogue}

    def _score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None]) -> ScoreOutput:
        sums = {d: np.zeros(len(dialogues)) for d in self.dimensions}
        counts = dict.fromkeys(self.dimensions, 0)
        truncated = np.zeros(len(dialogues), dtype=bool)
        for model, tokenizer, collator in zip(self.models, self.tokenizers, self.collators):
            scores, cut = self.model_scores(model, tokenizer, collator, dialogues)
            truncated |= cut
            for column, dimension in enumerate(model.config.dimensions):
                sums[dimension] += scores[:, column]
                counts[dimension] += 1
        per_dimension = {d: sums[d] / counts[d] for d in self.dimensions}
        overall = np.mean(np.stack(list(per_dimension.values())), axis=0)
        return ScoreOutput({d: v.tolist() for d, v in per_dimension.items()}, overall.tolist(), truncated.tolist())

    def model_scores(self, model: FineDEvalModel, tokenizer: PreTrainedTokenizerBase,
                     collator: DataCollatorWithPadding, dialogues: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """``(num_dialogues, num_heads)`` scores of one model (windows averaged) and the truncation flags."""
        config = model.config
        encoded = encode_dialogues(
            tokenizer, dialogues, config.utterance_token_id, self.max_tokens or config.max_seq_length,
            self.long_dialogue or config.long_dialogue, config.window_overlap,
        )
        scores = batched_forward(lambda **batch: model(**batch).scores, {"input_ids": encoded.input_ids},
                                 self.batch_size, collator, model.device, self.dtype).numpy()
        owners = np.asarray(encoded.owners)
        totals = np.zeros((len(dialogues), scores.shape[1]))
        np.add.at(totals, owners, scores)
        totals /= np.bincount(owners, minlength=len(dialogues))[:, None]
        return totals, np.asarray(encoded.truncated)


def load_fined_eval(checkpoint: str | Sequence[str] | None = None, device: str | None = None, batch_size: int = 32,
                    long_dialogue: str | None = None, max_tokens: int | None = None, dtype: str | None = None
                    ) -> FineDEvalMetric:
    """FineD-Eval from one checkpoint (sub-metric or multitask; ``None``: the offline default) or several
    sub-metric checkpoints (FineD-Eval_en), given as a list or a comma-separated string, computing in ``dtype``
    (``fp32``, the default, ``bf16`` or ``fp16``)."""
    paths = checkpoint_names(checkpoint)
    loaded = [load_fined_eval_model(path, device) for path in paths or [None]]
    name = ",".join(paths) or None
    return FineDEvalMetric([m for m, _ in loaded], [t for _, t in loaded], checkpoint=name, batch_size=batch_size,
                           long_dialogue=long_dialogue, max_tokens=max_tokens, dtype=dtype)


def export_fined_eval(checkpoint: str | None, out_dir: Path) -> list[Path]:
    """The Hub repo folder of a FineD-Eval checkpoint (default: the shipped one, merged into a full model):
    ``config.json``, ``model.safetensors``, the tokenizer and the model card as ``README.md``."""
    model, tokenizer = load_fined_eval_model(checkpoint, device="cpu")
    name = DEFAULT_REPO_NAME if checkpoint is None else Path(checkpoint).name or DEFAULT_REPO_NAME
    return [write_model_folder(model, tokenizer, "fined_eval.md", Path(out_dir) / name)]


#: FineD-Eval's Spearman correlations on FED (paper Table 3, Con/Inq/Err from Table 8), per FED dimension:
#: FineD-Eval_mu, and the sub-metric rows (M^Coh, M^Lik, M^Top, M^Coh + M^Lik).
_FED_COLUMNS = ("Coherent", "Understanding", "Flexible", "Likeable", "Informative", "Depth", "Diverse", "Overall")
PAPER_FED_SPEARMAN = {
    "fined-eval": dict(zip(_FED_COLUMNS, (57.66, 57.37, 55.94, 64.91, 66.84, 66.22, 59.59, 66.15)))
    | {"Consistent": 44.58, "Inquisitive": 45.48, "Error recovery": 50.89},
    "fined-eval:coherence": dict(zip(_FED_COLUMNS, (52.86, 52.35, 43.87, 47.71, 42.84, 40.54, 36.43, 53.02))),
    "fined-eval:likability": dict(zip(_FED_COLUMNS, (42.91, 42.15, 37.08, 52.23, 49.89, 41.36, 36.52, 48.83))),
    "fined-eval:topic_depth": dict(zip(_FED_COLUMNS, (23.25, 25.87, 36.04, 36.93, 46.63, 56.53, 53.38, 36.31))),
    "fined-eval:coherence+likability": dict(zip(_FED_COLUMNS, (57.61, 57.13, 48.77, 61.30, 57.20, 49.94, 44.29, 61.35))),
}
#: (metric or sub-metric row, benchmark) -> {dimension: {"spearman": value}}, printed beside ours.
PAPER_RESULTS = {
    (name, "fed-dialogue"): {dimension: {"spearman": value / 100} for dimension, value in values.items()}
    for name, values in PAPER_FED_SPEARMAN.items()
}
