"""The two QuantiDCE training stages as ``transformers.Trainer`` subclasses that own their losses (§3.2, §3.3)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel, Trainer

from hf_dialeval.training.arguments import require_collator_columns
from hf_dialeval.training.loss_terms import LossTermLogging


def ranked_values(outputs: Any) -> torch.Tensor:
    """What a ranking loss compares: the model's logits where it gives them (the bi-encoder, whose sigmoid
    saturates where parrots sit: cosine 1, logit 5, slope 0.007), else its scores (the cross-encoder)."""
    return outputs.scores if outputs.logits is None else outputs.logits


def multi_level_ranking_loss(
    scores: torch.Tensor, levels: torch.Tensor, separation_margin: float = 0.3, compactness_margin: float = 0.1,
    use_ordering_loss: bool = True,
) -> dict[str, torch.Tensor]:
    """The MLR loss (paper Eq. 2–5) of a batch of contexts.

    Args:
        scores: ``(B, N)`` predicted coherence of each context's N responses.
        levels: ``(B, N)`` coherence level 0 … L−1 of each response (higher is more coherent); every level
            present in every context.
        separation_margin: λ; centroids of levels j < l must be at least (l − j)·λ apart.
        compactness_margin: μ; a score may lie up to μ from its level's centroid for free.
        use_ordering_loss: add Σ_{j<l} max(0, e_j − e_l) (the ablation drops it).

    Returns ``separation``, ``compactness``, ``ordering`` (each summed over levels and averaged over the B
    contexts), their sum ``loss``, and ``pair_accuracy``: the share of response pairs of different levels whose
    scores are in the right order (a diagnostic, no gradient).
    """
    if scores.shape != levels.shape or scores.dim() != 2:
        raise ValueError(f"scores and levels must both be (contexts, responses); got {tuple(scores.shape)} and {tuple(levels.shape)}")
    num_levels = int(levels.max()) + 1
    one_hot = F.one_hot(levels, num_levels).to(scores.dtype)  # (B, N, L)
    counts = one_hot.sum(dim=1)  # (B, L)
    if bool((counts == 0).any()):
        raise ValueError("every context needs responses at every coherence level 0 … L−1")
    centroids = torch.einsum("bn,bnl->bl", scores, one_hot) / counts  # (B, L)

    upper = torch.triu(torch.ones(num_levels, num_levels, dtype=torch.bool, device=scores.device), diagonal=1)
    j, l = upper.nonzero(as_tuple=True)  # all pairs j < l
    gap_weight = (l - j).to(scores.dtype)
    separation = F.relu(gap_weight * separation_margin - (centroids[:, j] - centroids[:, l]).abs()).sum(dim=1)
    ordering = F.relu(centroids[:, j] - centroids[:, l]).sum(dim=1)
    own_centroid = centroids.gather(1, levels)
    compactness = F.relu((own_centroid - scores).abs() - compactness_margin).sum(dim=1)

    loss = separation + compactness + (ordering if use_ordering_loss else torch.zeros_like(ordering))
    with torch.no_grad():
        lower_level = levels.unsqueeze(2) < levels.unsqueeze(1)  # (B, N, N): response a less coherent than b
        right_order = (scores.unsqueeze(2) < scores.unsqueeze(1)) & lower_level
        pair_accuracy = right_order.sum() / lower_level.sum().clamp(min=1)
    return {"loss": loss.mean(), "separation": separation.mean(), "compactness": compactness.mean(),
            "ordering": ordering.mean(), "pair_accuracy": pair_accuracy}


class MultiLevelRankingTrainer(LossTermLogging, Trainer):
    """MLR pre-training: each batch holds B contexts × L·K responses (see
    :class:`~hf_dialeval.metrics.quantidce.data.MultiLevelRankingCollator`), scored in one forward pass; the loss is
    :func:`multi_level_ranking_loss` of the scores (of the logits, where the model gives them: the bi-encoder), its
    terms logged."""

    def __init__(self, *args: Any, separation_margin: float = 0.3, compactness_margin: float = 0.1,
                 use_ordering_loss: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        require_collator_columns(self)
        self.separation_margin = separation_margin
        self.compactness_margin = compactness_margin
        self.use_ordering_loss = use_ordering_loss

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, Any]:
        inputs = dict(inputs)
        levels = inputs.pop("levels")
        outputs = model(**inputs)
        terms = multi_level_ranking_loss(ranked_values(outputs).view(levels.shape), levels, self.separation_margin,
                                         self.compactness_margin, self.use_ordering_loss)
        self.record_terms({k: v for k, v in terms.items() if k != "loss"}, model.training)
        return (terms["loss"], outputs) if return_outputs else terms["loss"]


def selection_loss(logits: torch.Tensor, reply_index: torch.Tensor, candidate_mask: torch.Tensor,
                   temperature: float = 0.25) -> dict[str, torch.Tensor]:
    """InfoNCE of response selection: the cross-entropy of each context's own reply among its candidates.

    Args:
        logits: ``(B, C)`` the model's logit for every context and candidate.
        reply_index: ``(B,)`` which candidate is each context's human reply.
        candidate_mask: ``(B, C)`` False for candidates left out of a context's softmax (copies of its reply).
        temperature: the logits are divided by it.

    Returns ``loss`` and ``accuracy``: the share of contexts whose reply has the highest logit (no gradient).
    """
    if logits.shape != candidate_mask.shape or logits.size(0) != reply_index.numel():
        raise ValueError(f"logits {tuple(logits.shape)}, candidate_mask {tuple(candidate_mask.shape)} and "
                         f"reply_index {tuple(reply_index.shape)} do not match: (B, C), (B, C) and (B,)")
    masked = (logits / temperature).masked_fill(~candidate_mask, float("-inf"))
    loss = F.cross_entropy(masked, reply_index)
    with torch.no_grad():
        accuracy = (masked.argmax(dim=1) == reply_index).float().mean()
    return {"loss": loss, "accuracy": accuracy}


#: The most ``(context, candidate)`` pairs a cross-encoder runs at once (forward and backward in training). Its B·C
#: pairs grow with the square of the batch (32 replies and their negatives on long conversations: 1,984 pairs a step,
#: whose validation pass alone passed 4.5 GB on MiniLM at 128 tokens); each context's loss reads its own pairs only,
#: so whole contexts are taken a slice at a time, each slice's share of the loss backpropagated before the next.
MAX_PAIRS_AT_ONCE = 256


class ResponseSelectionTrainer(LossTermLogging, Trainer):
    """Response-selection pre-training (this package's addition): each batch holds B contexts × C candidates
    (see :class:`~hf_dialeval.metrics.quantidce.data.ResponseSelectionCollator`), scored in one forward pass (a bi-encoder
    encodes each distinct text once; a cross-encoder encodes all B·C pairs, :data:`MAX_PAIRS_AT_ONCE` at a time in
    training and validation); the loss is :func:`selection_loss` of the logits (of the scores, where the model has
    no logits), its accuracy logged."""

    def __init__(self, *args: Any, temperature: float = 0.25, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        require_collator_columns(self)
        self.temperature = temperature
        self._loss_share = 1.0  # of the slice of contexts being trained on, in its batch

    def training_step(self, model: nn.Module, inputs: dict[str, torch.Tensor],
                      num_items_in_batch: torch.Tensor | None = None) -> torch.Tensor:
        contexts, candidates = inputs["candidate_mask"].shape
        per_slice = max(1, MAX_PAIRS_AT_ONCE // candidates)
        if self.model.config.encoding == "bi" or contexts <= per_slice:
            return super().training_step(model, inputs, num_items_in_batch)
        losses = []
        for start in range(0, contexts, per_slice):  # every context keeps all C candidates: its columns stay
            stop = min(contexts, start + per_slice)
            part = {name: value[start * candidates:stop * candidates] if value.size(0) == contexts * candidates
                    else value[start:stop] for name, value in inputs.items()}
            self._loss_share = (stop - start) / contexts
            losses.append(super().training_step(model, part, num_items_in_batch))
        self._loss_share = 1.0
        return torch.stack(losses).sum()

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, Any]:
        inputs = dict(inputs)
        reply_index = inputs.pop("reply_index")
        candidate_mask = inputs.pop("candidate_mask")
        if model.training or self.model.config.encoding == "bi":
            outputs = model(**inputs)
            logits = ranked_values(outputs).view(candidate_mask.shape)
        else:  # validation: a cross-encoder's pairs a slice at a time, nothing kept for a backward pass
            pairs = len(inputs["input_ids"])
            logits = torch.cat([ranked_values(model(**{name: value[start:start + MAX_PAIRS_AT_ONCE]
                                                       for name, value in inputs.items()}))
                                for start in range(0, pairs, MAX_PAIRS_AT_ONCE)]).view(candidate_mask.shape)
            outputs = {"logits": logits}
        terms = selection_loss(logits, reply_index, candidate_mask, self.temperature)
        self.record_terms({"accuracy": terms["accuracy"]}, model.training)
        loss = terms["loss"] * self._loss_share
        return (loss, outputs) if return_outputs else loss


def distillation_loss(student: Any, teacher: Any) -> dict[str, torch.Tensor]:
    """TinyBERT-style distillation terms (paper Eq. 7) between two :class:`~hf_dialeval.modeling.base.DialEvalOutput`: Σ over the embedding
    output and every layer's hidden states of their MSE, Σ over every layer's attention maps of their MSE, and
    the MSE of the predictions (the [0, 1] scores). QuantiDCE's outputs hold real tokens only, so padding, which
    depends on what else is in a batch, counts nowhere."""
    zero = student.scores.new_zeros(())
    hidden = sum((F.mse_loss(s, t) for s, t in zip(student.hidden_states, teacher.hidden_states, strict=True)), zero)
    attention = sum((F.mse_loss(s, t) for s, t in zip(student.attentions, teacher.attentions, strict=True)), zero)
    prediction = F.mse_loss(student.scores, teacher.scores)
    return {"kd_hidden": hidden, "kd_attention": attention, "kd_prediction": prediction,
            "kd": hidden + attention + prediction}


class DistillationTrainer(LossTermLogging, Trainer):
    """KD fine-tuning (§3.3): ``loss = α·MSE(human score, student score) + β·KD(student, teacher)``, the human
    scores compared on the human scale (``labels`` on 1–5 against the student's ``human_scores``).

    The student (``model``) starts as a copy of the MLR-trained teacher; the teacher is frozen (eval mode, no
    gradient). With ``distill=False`` no teacher is used and the loss is plain α·MSE (the ablation)."""

    def __init__(self, *args: Any, teacher_model: PreTrainedModel | None = None, alpha: float = 1.0,
                 beta: float = 5.0, distill: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if distill and teacher_model is None:
            raise ValueError("distillation needs a teacher_model (the MLR-trained model); pass distill=False for plain MSE")
        self.alpha = alpha
        self.beta = beta
        self.distill = distill
        self.teacher = None
        if distill:
            # Attention maps are only returned by the eager attention implementation.
            self.model.set_attn_implementation("eager")
            self.teacher = teacher_model.to(self.args.device).eval().requires_grad_(False)
            self.teacher.set_attn_implementation("eager")

    def compute_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, Any]:
        # the model's own loss: the MSE of its human-scale scores against the 1–5 labels
        outputs = model(**inputs, output_hidden_states=self.distill, output_attentions=self.distill)
        mse = outputs.loss
        terms = {"mse": mse}
        loss = self.alpha * mse
        if self.distill:
            with torch.no_grad():
                teacher_inputs = {name: value for name, value in inputs.items() if name != "labels"}
                teacher_outputs = self.teacher(**teacher_inputs, output_hidden_states=True, output_attentions=True)
            kd_terms = distillation_loss(outputs, teacher_outputs)
            terms.update(kd_terms)
            loss = loss + self.beta * kd_terms["kd"]
        self.record_terms(terms, model.training)
        return (loss, outputs) if return_outputs else loss
