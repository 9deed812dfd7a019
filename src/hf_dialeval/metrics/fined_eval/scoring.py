"""The ``fined-eval`` metric: sub-metric scores, FineD-Eval_mu (mean of one model's heads) and FineD-Eval_en
(mean of several sub-metric models), batched and length-sorted, with windowed scoring of long dialogues."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorWithPadding, PreTrainedTokenizerBase

from hf_dialeval.inference.model_metric import ModelMetric, batched_forward, padded_batches
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.fined_eval import ENTRY
from hf_dialeval.metrics.fined_eval.constants import LONG_DIALOGUE_MODES
from hf_dialeval.metrics.fined_eval.encoding import encode_dialogues
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import FineDEvalModel
from hf_dialeval.modeling.base import encoder_inputs, masked_mean_pool, run_head
from hf_dialeval.modeling.checkpoints import checkpoint_names
from hf_dialeval.modeling.loading import load_checkpoint


class FineDEvalMetric(ModelMetric):
    """FineD-Eval scores of whole dialogues.

    With one model (a sub-metric M^q, or the multitask FineD-Eval_mu) the dimensions are its heads and
    ``overall`` is their mean. With several sub-metric models (FineD-Eval_en) each dimension is the mean of
    the models that score it and ``overall`` the mean over the dimensions. Dialogues longer than the encoder
    are scored as the config's ``long_dialogue`` says (``window``, ``keep_start``, ``keep_end``); the output's
    ``truncated`` says which dialogues lost text.
    """

    name, level = ENTRY.name, ENTRY.level
    #: A dialogue whose system utterances are all empty (and an empty turn-level response) scores the sigmoid's
    #: bound, 0, in every dimension: the model never saw a system that does not reply, so its reading of one
    #: would be arbitrary. Empty utterances inside a dialogue are kept in place and read by the model.
    lowest_score = 0.0

    def __init__(self, models: Sequence[FineDEvalModel], tokenizers: Sequence[PreTrainedTokenizerBase],
                 device: str | None = None, batch_size: int = 32, checkpoint: str | None = None,
                 dtype: str | torch.dtype | None = None, long_dialogue: str | None = None,
                 max_seq_length: int | None = None) -> None:
        if not models or len(models) != len(tokenizers):
            raise ValueError(f"give one tokenizer per model ({len(models)} models, {len(tokenizers)} tokenizers)")
        if long_dialogue is not None and long_dialogue not in LONG_DIALOGUE_MODES:
            raise ValueError(f"long_dialogue={long_dialogue!r}: choose one of {list(LONG_DIALOGUE_MODES)}")
        super().__init__(models[0], tokenizers[0], device=device, batch_size=batch_size, checkpoint=checkpoint,
                         dtype=dtype)
        self.models = [model.to(self.device).eval() for model in models]
        self.tokenizers = list(tokenizers)
        self.collators = [DataCollatorWithPadding(t, return_tensors="pt") for t in self.tokenizers]
        self.long_dialogue = long_dialogue
        self.token_limit = max_seq_length
        self.dimensions = tuple(dict.fromkeys(d for m in self.models for d in m.config.dimensions))

    @classmethod
    def load(cls, checkpoint: str | Sequence[str] | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | torch.dtype | None = None, long_dialogue: str | None = None,
             max_seq_length: int | None = None) -> FineDEvalMetric:
        """FineD-Eval from one checkpoint (sub-metric or multitask; ``None``: the offline default) or several
        sub-metric checkpoints (FineD-Eval_en), given as a list or a comma-separated string."""
        paths = checkpoint_names(checkpoint)
        loaded = [load_checkpoint(cls.name, path) for path in paths or [None]]
        return cls([m for m, _ in loaded], [t for _, t in loaded], device=device, batch_size=batch_size,
                   checkpoint=",".join(paths) or None, dtype=dtype, long_dialogue=long_dialogue,
                   max_seq_length=max_seq_length)

    @property
    def max_seq_length(self) -> int:
        return self.token_limit or self.model.config.max_seq_length

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "long_dialogue": self.long_dialogue or self.model.config.long_dialogue}

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
            tokenizer, dialogues, config.utterance_token_id, self.max_seq_length,
            self.long_dialogue or config.long_dialogue, config.window_overlap,
        )
        scores = batched_forward(lambda **batch: model(**batch).scores, {"input_ids": encoded.input_ids},
                                 self.batch_size, collator, model.device, self.dtype).numpy()
        owners = np.asarray(encoded.owners)
        totals = np.zeros((len(dialogues), scores.shape[1]))
        np.add.at(totals, owners, scores)
        totals /= np.bincount(owners, minlength=len(dialogues))[:, None]
        self.check_finite(totals.tolist())
        return totals, np.asarray(encoded.truncated)

    @torch.inference_mode()
    def logit_parts(self, dialogues: list[list[str]], dimension: str = "coherence") -> dict[str, np.ndarray]:
        """Per dialogue, each part of ``dimension``'s logit in the first model (``score``, the encoder's head, and
        ``adjacency_head``, ``adjacency_mlp``, ``pair_encoder``: those the model has), in the dialogues' order: what
        each reader adds to the score. Dialogues are encoded as the metric encodes them, and must fit one input."""
        model, tokenizer, collator = self.models[0], self.tokenizers[0], self.collators[0]
        config = model.config
        column = config.dimensions.index(dimension)
        encoded = encode_dialogues(tokenizer, dialogues, config.utterance_token_id, self.max_seq_length,
                                   self.long_dialogue or config.long_dialogue, config.window_overlap)
        if len(encoded.input_ids) != len(dialogues):
            raise ValueError("a dialogue was scored in windows: use a truncating long_dialogue mode")
        parts: dict[str, list[torch.Tensor]] = {"score": []}
        order: list[int] = []
        for indices, batch in padded_batches({"input_ids": encoded.input_ids}, self.batch_size, collator):
            inputs = encoder_inputs(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))
            pooled = masked_mean_pool(model.encoder(**inputs).last_hidden_state, inputs["attention_mask"])
            parts["score"].append(run_head(model.score_heads, pooled)[:, column])
            for name, logits in model.adjacency_logit_parts(batch["input_ids"], inputs["attention_mask"]).items():
                parts.setdefault(name, []).append(logits[:, column])
            order += indices
        restore = np.argsort(order)
        return {name: torch.cat(values).float().numpy()[restore] for name, values in parts.items()}
