"""RADE's two training stages (§5.2) as a ``transformers.Trainer`` subclass that owns the paper's loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn
from transformers import EvalPrediction, Trainer

from hf_dialeval.training.arguments import require_collator_columns
from hf_dialeval.training.loss_terms import LossTermLogging

#: ``pretrain``: cross-domain pre-training, Eq. 7; ``finetune``: task-specific fine-tuning, Eq. 9.
STAGES = ("pretrain", "finetune")


def rade_loss(candidate_predicted: torch.Tensor, reference_predicted: torch.Tensor, candidate_score: torch.Tensor,
              reference_score: torch.Tensor, generation_loss: torch.Tensor | None = None, stage: str = "finetune",
              use_ranking_loss: bool = True, use_generation_loss: bool = True) -> dict[str, torch.Tensor]:
    """RADE's loss (Eq. 7 and 9–11) of a batch, with its terms.

    * ``pretrain``: ``MSE(ŝ_a, s_a) + L_GEN``;
    * ``finetune``: ``MSE(ŝ_a, s_a) + MSE(ŝ_h, s_h) + L_GEN + L_PR`` with
      ``L_PR = −g(s_h, s_a) · log(e^ŝ_a / (e^ŝ_h + e^ŝ_a))`` and ``g = 1`` when ``s_h < s_a`` (a tie is 0).

    The MSEs and ``L_PR`` are means over the batch (``L_PR`` counts the items with ``g = 0`` as zero); items whose
    ``reference_score`` is NaN (unknown) are left out of ``MSE(ŝ_h, s_h)`` and ``L_PR``. ``generation_loss`` is
    the generator's mean token NLL; ``use_ranking_loss=False`` and ``use_generation_loss=False`` are the paper's
    two ablations. Returns ``loss`` and the terms ``mse_candidate``, ``mse_reference``, ``ranking``,
    ``generation`` (those that apply).
    """
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, not {stage!r}")
    candidate_predicted, reference_predicted = candidate_predicted.float(), reference_predicted.float()
    candidate_score, reference_score = candidate_score.float(), reference_score.float()
    terms = {"mse_candidate": F.mse_loss(candidate_predicted, candidate_score)}
    if stage == "finetune":
        known = ~torch.isnan(reference_score)
        known_scores = torch.where(known, reference_score, torch.zeros_like(reference_score))
        squared = torch.where(known, (reference_predicted - known_scores) ** 2, torch.zeros_like(reference_predicted))
        terms["mse_reference"] = squared.sum() / known.sum().clamp(min=1)
        if use_ranking_loss:
            g = (known & (known_scores < candidate_score)).float()
            log_candidate_wins = F.log_softmax(torch.stack([reference_predicted, candidate_predicted], -1), -1)[..., 1]
            terms["ranking"] = -(g * log_candidate_wins).mean()
    if use_generation_loss:
        if generation_loss is None:
            raise ValueError("use_generation_loss needs the generator's loss: give the model generator_labels")
        terms["generation"] = generation_loss.float()
    return {"loss": sum(terms.values()), **terms}


def candidate_correlations(prediction: EvalPrediction, domains: Sequence[str] | None = None) -> dict[str, float]:
    """``compute_metrics`` for the development split: Pearson and Spearman of ŝ_a with s_a over all items and,
    given each item's domain (``functools.partial(candidate_correlations, domains=...)``), the Spearman within
    each domain, ``spearman_<domain>``, and their mean, ``mean_domain_spearman`` (what the checkpoint is picked
    on: a pooled Spearman also rewards getting the domains' mean scores in order, which no benchmark asks for;
    without ``domains`` it is the pooled Spearman)."""
    predicted = np.asarray(prediction.predictions)[:, 1]
    human = np.asarray(prediction.label_ids)[:, 1]
    metrics = {"pearson": float(stats.pearsonr(predicted, human).statistic),
               "spearman": float(stats.spearmanr(predicted, human).statistic)}
    if domains is None:
        return {**metrics, "mean_domain_spearman": metrics["spearman"]}
    if len(domains) != len(human):
        raise ValueError(f"{len(domains)} domains for {len(human)} predictions: give one domain per validation item")
    domain_of = np.asarray(domains)
    per_domain = {f"spearman_{domain}": float(stats.spearmanr(predicted[domain_of == domain],
                                                              human[domain_of == domain]).statistic)
                  for domain in dict.fromkeys(domains)}
    return {**metrics, **per_domain, "mean_domain_spearman": float(np.mean(list(per_domain.values())))}


class RADETrainer(LossTermLogging, Trainer):
    """Trains a :class:`~hf_dialeval.metrics.rade.modeling_rade.RADEModel` with :func:`rade_loss` (its terms logged). Batches
    come from :class:`~hf_dialeval.metrics.rade.data.RADECollator`: posterior inputs, generator inputs and labels, and the
    two human scores. Evaluation predicts ``(ŝ_h, ŝ_a)`` against ``(s_h, s_a)`` (see :func:`candidate_correlations`)."""

    def __init__(self, *args: Any, stage: str = "finetune", use_ranking_loss: bool = True,
                 use_generation_loss: bool = True, head_learning_rate: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, not {stage!r}")
        require_collator_columns(self)
        self.stage = stage
        self.use_ranking_loss = use_ranking_loss
        self.use_generation_loss = use_generation_loss
        self.head_learning_rate = head_learning_rate

    def create_optimizer(self, model: nn.Module | None = None) -> torch.optim.Optimizer:
        """The ``TrainingArguments`` optimizer, with the score head at ``head_learning_rate`` when one is given (a
        freshly initialised head learns at the backbone's fine-tuning rate only slowly; the learning-rate schedule
        scales both rates alike)."""
        if self.head_learning_rate is None or self.optimizer is not None:
            return super().create_optimizer(model)
        model = model if model is not None else self.model
        decay = set(self.get_decay_parameter_names(model))
        groups = []
        for in_head in (False, True):
            for decayed in (True, False):
                parameters = [p for n, p in model.named_parameters()
                              if p.requires_grad and _in_head(n) == in_head and (n in decay) == decayed]
                if parameters:
                    groups.append({"params": parameters, "weight_decay": self.args.weight_decay if decayed else 0.0,
                                   **({"lr": self.head_learning_rate} if in_head else {})})
        optimizer_class, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, model)
        self.optimizer = optimizer_class(groups, **optimizer_kwargs)
        return self.optimizer

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, Any]:
        inputs = dict(inputs)
        candidate_score, reference_score = inputs.pop("candidate_score"), inputs.pop("reference_score")
        if not self.use_generation_loss:  # the ablation also saves the decoder's forward pass
            for key in ("generator_input_ids", "generator_attention_mask", "generator_labels"):
                inputs.pop(key, None)
        outputs = model(**inputs)
        terms = rade_loss(outputs.scores, outputs.reference_scores, candidate_score, reference_score,
                          outputs.generation_loss, self.stage, self.use_ranking_loss, self.use_generation_loss)
        self.record_terms({name: value for name, value in terms.items() if name != "loss"}, model.training)
        return (terms["loss"], outputs) if return_outputs else terms["loss"]

    def prediction_step(self, model: nn.Module, inputs: dict[str, torch.Tensor], prediction_loss_only: bool,
                        ignore_keys: list[str] | None = None
                        ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        inputs = self._prepare_inputs(inputs)
        labels = torch.stack([inputs["reference_score"], inputs["candidate_score"]], -1)
        with torch.no_grad():
            loss, outputs = self.compute_loss(model, inputs, return_outputs=True)
        if prediction_loss_only:
            return loss.detach(), None, None
        return loss.detach(), outputs.logits.detach().float(), labels


def _in_head(parameter_name: str) -> bool:
    """Whether a parameter belongs to the score head (``head.…``; ``….head.…`` inside a ``peft`` wrapper)."""
    return parameter_name.startswith("head.") or ".head." in parameter_name
