"""The panel's loss and the Trainer that owns it: a pairwise ranking loss over pairs of items rated by people,
each pair drawn within one rated set, each set weighing the same whatever its size or rating scale."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers import Trainer

from hf_dialeval.metrics.panel.modeling_panel import PanelModel


def pairwise_ranking_loss(preferred: torch.Tensor, other: torch.Tensor, weights: torch.Tensor,
                          temperature: float) -> torch.Tensor:
    """The weighted mean of ``-log σ((preferred − other) / temperature)`` (Bradley–Terry, as in a reward model's
    loss): low when the item people rated higher scores higher. ``weights`` make every rated set count the same."""
    return (weights * F.softplus(-(preferred - other) / temperature)).sum() / weights.sum()


class PanelTrainer(Trainer):
    """A ``Trainer`` whose loss is :func:`pairwise_ranking_loss` over the batch's pairs: each example holds the members'
    raw scores of the preferred item (``preferred``) and of the other (``other``), and the pair's ``weight``."""

    def __init__(self, *args: Any, temperature: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.temperature = temperature

    def compute_loss(self, model: PanelModel, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]:
        preferred = model(features=inputs["preferred"]).scores
        other = model(features=inputs["other"]).scores
        loss = pairwise_ranking_loss(preferred, other, inputs["weight"], self.temperature)
        return (loss, {"preferred": preferred, "other": other}) if return_outputs else loss

    def prediction_step(self, model: PanelModel, inputs: dict[str, torch.Tensor], prediction_loss_only: bool,
                        ignore_keys: Any = None) -> tuple[torch.Tensor, None, None]:
        """The validation loss alone: a pair has no label to predict."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None
