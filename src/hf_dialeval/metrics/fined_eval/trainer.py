"""Training FineD-Eval with ``transformers.Trainer``: tokenised pairs, a collator, and the ranking loss.

A training example is a pair (d+, d−) for one task (head). The collator orients half of each batch as
``(x1, x2, y) = (d+, d−, +1)`` and the other half as ``(d−, d+, −1)`` (paper §3.2: both orderings in every
mini-batch), and stacks all ``x1`` then all ``x2`` so that both dialogues of every pair go through the
encoder in one forward pass (like ``trl``'s ``RewardTrainer``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import numpy as np
import torch
from torch import nn
from transformers import EvalPrediction, PreTrainedTokenizerBase, Trainer

from hf_dialeval.metrics.fined_eval.constants import RANKING_MARGIN
from hf_dialeval.metrics.fined_eval.encoding import encode_dialogues
from hf_dialeval.training.loss_terms import LossTermLogging

logger = logging.getLogger(__name__)

def tokenize_pairs(pairs: datasets.Dataset, tokenizer: PreTrainedTokenizerBase, utterance_token_id: int,
                   max_seq_length: int) -> datasets.Dataset:
    """Encode both dialogues of every pair (``prefix u1 </UTT> u2 ... suffix``). Training inputs longer than
    ``max_seq_length`` keep their start; the ``truncated`` column says which pairs lost text (and it is logged).
    ``length`` (the longer input of the pair) lets ``train_sampling_strategy="group_by_length"`` batch
    pairs of similar length."""

    def encode(batch: dict[str, list]) -> dict[str, list]:
        positive = encode_dialogues(tokenizer, batch["positive"], utterance_token_id, max_seq_length, "keep_start")
        negative = encode_dialogues(tokenizer, batch["negative"], utterance_token_id, max_seq_length, "keep_start")
        return {"positive_input_ids": positive.input_ids, "negative_input_ids": negative.input_ids,
                "length": [max(len(a), len(b)) for a, b in zip(positive.input_ids, negative.input_ids)],
                "truncated": [a or b for a, b in zip(positive.truncated, negative.truncated)]}

    encoded = pairs.map(encode, batched=True, remove_columns=["positive", "negative"], desc="tokenizing pairs")
    cut = sum(encoded["truncated"])
    if cut:
        logger.warning("%d of %d training pairs exceed %d tokens and keep their start", cut, len(encoded), max_seq_length)
    return encoded


@dataclass
class FineDEvalDataCollator:
    """Pads a batch of tokenised pairs into one encoder batch: rows ``0..B-1`` are the first dialogues
    (``x1``), rows ``B..2B-1`` the second (``x2``). Even examples are ``(d+, d−, y=+1)``, odd ones
    ``(d−, d+, y=−1)``, so every batch of two or more pairs holds both orderings."""

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        first, second, labels = [], [], []
        for index, feature in enumerate(features):
            positive, negative = feature["positive_input_ids"], feature["negative_input_ids"]
            if index % 2 == 0:
                first.append(positive)
                second.append(negative)
                labels.append(1.0)
            else:
                first.append(negative)
                second.append(positive)
                labels.append(-1.0)
        batch = self.tokenizer.pad({"input_ids": first + second}, padding=True,
                                   pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt")
        return {
            "input_ids": batch["input_ids"],
            "attention_mask": batch["attention_mask"],
            "labels": torch.tensor(labels),
            "task": torch.tensor([int(feature["task"]) for feature in features]),
        }


def ranking_loss(first: torch.Tensor, second: torch.Tensor, labels: torch.Tensor, tasks: torch.Tensor,
                 margin: float = RANKING_MARGIN) -> torch.Tensor:
    """``max(0, −y (x1 − x2) + margin)`` (``torch.nn.MarginRankingLoss``: with ``y = +1`` it pushes ``x1`` above
    ``x2``; the paper's Eq. 1 lost the minus sign), averaged per task and summed over the tasks present
    (``L_total = L_coh + L_lik + L_top``, paper §3.4)."""
    losses = nn.functional.margin_ranking_loss(first, second, labels, margin=margin, reduction="none")
    return sum(losses[tasks == task].mean() for task in tasks.unique())


class FineDEvalTrainer(LossTermLogging, Trainer):
    """``Trainer`` whose ``compute_loss`` is FineD-Eval's margin ranking loss over (d+, d−) pairs.

    Each example's scores come from the head of its ``task``; pairwise accuracy (``x1`` ranked as ``y``
    says) is logged during training and evaluation, overall (``accuracy``: the mean over the tasks, the
    paper's model-selection criterion for FineD-Eval_mu) and per head (``accuracy_<dimension>``), so
    ``metric_for_best_model="accuracy"`` selects checkpoints.
    """

    def __init__(self, *args: Any, margin: float = RANKING_MARGIN, **kwargs: Any) -> None:
        training_args = kwargs.get("args")
        if training_args is not None and training_args.remove_unused_columns:
            logger.info("FineDEvalTrainer needs the pair columns: setting remove_unused_columns=False")
            training_args.remove_unused_columns = False
        if kwargs.get("data_collator") is None:
            if kwargs.get("processing_class") is None:
                raise ValueError("FineDEvalTrainer needs processing_class=<tokenizer> or a FineDEvalDataCollator")
            kwargs["data_collator"] = FineDEvalDataCollator(kwargs["processing_class"])
        super().__init__(*args, **kwargs)
        self.margin = margin
        # a peft-wrapped model forwards .config to the FineDEvalModel inside
        self.dimensions = list(self.model.config.dimensions)
        if self.compute_metrics is None:
            self.compute_metrics = pairwise_accuracy_metrics(self.dimensions)

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: torch.Tensor | int | None = None) -> torch.Tensor | tuple[torch.Tensor, dict]:
        labels, tasks = inputs["labels"], inputs["task"]
        scores = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).scores
        size = labels.size(0)
        head = tasks.repeat(2).unsqueeze(1)
        chosen = scores.gather(1, head).squeeze(1)
        first, second = chosen[:size], chosen[size:]
        loss = ranking_loss(first, second, labels, tasks, self.margin)
        if model.training:
            signed = (first - second) * labels
            self.record_terms({"accuracy": (signed > 0).float().mean(), "margin": signed.mean()}, training=True)
        if return_outputs:
            return loss, {"first": first, "second": second}
        return loss

    def prediction_step(self, model: nn.Module, inputs: dict[str, Any], prediction_loss_only: bool,
                        ignore_keys: list[str] | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss, outputs = self.compute_loss(model, inputs, return_outputs=True)
        if prediction_loss_only:
            return loss.detach(), None, None
        predictions = torch.stack([outputs["first"], outputs["second"], inputs["task"].to(outputs["first"].dtype)], 1)
        return loss.detach(), predictions, inputs["labels"]


def pairwise_accuracy_metrics(dimensions: Sequence[str]) -> Callable[[EvalPrediction], dict[str, float]]:
    """``compute_metrics`` for :class:`FineDEvalTrainer`: pairwise accuracy per head and their mean."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        values = np.asarray(prediction.predictions)
        labels = np.asarray(prediction.label_ids)
        correct = (values[:, 0] - values[:, 1]) * labels > 0
        tasks = values[:, 2].astype(int)
        metrics = {f"accuracy_{dimensions[t]}": float(correct[tasks == t].mean()) for t in np.unique(tasks)}
        metrics["accuracy"] = float(np.mean(list(metrics.values())))
        return metrics

    return compute
