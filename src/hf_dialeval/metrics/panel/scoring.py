"""The panel as a :class:`~hf_dialeval.inference.composite.CompositeMetric`: its members' scores of an item,
each normalised by the CDF stored in the checkpoint, averaged with the checkpoint's weights."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hf_dialeval.inference.composite import CompositeMetric, MemberLoader
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.panel import ENTRY
from hf_dialeval.metrics.panel.members import feature_rows, member_loaders
from hf_dialeval.metrics.panel.modeling_panel import PanelModel


class PanelMetric(CompositeMetric):
    """One score for a reply in context, from several metrics: ``overall`` in [0, 1] is the weighted mean of the
    members' scores, each first mapped through its empirical CDF (the share of the reference replies it scores
    above), the weights renormalised over the members present. Each normalised member score is a dimension too,
    named ``METRIC.SCORE``. Higher is better."""

    name, level = ENTRY.name, ENTRY.level
    needs_context = True
    #: An empty reply: below every reference reply.
    lowest_score = 0.0

    def __init__(self, model: PanelModel, member_loaders: Mapping[str, MemberLoader], checkpoint: str | None = None,
                 batch_size: int = 32) -> None:
        self.model = model.eval()
        self.models = [self.model]
        self.checkpoint = checkpoint
        self.dimensions = tuple(model.config.features)
        super().__init__(member_loaders, batch_size)

    @classmethod
    def load(cls, checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | None = None, members: str | Sequence[str] | None = None) -> PanelMetric:
        """The panel of ``checkpoint`` (``None``: the shipped default) with its members, or the subset ``members``
        names (comma-separated or a list), each computing on ``device`` in ``dtype`` (default: its own), loaded one
        at a time (:mod:`~hf_dialeval.inference.composite`)."""
        from hf_dialeval.modeling.checkpoint_sources import check_checkpoint, quiet_loading

        path = check_checkpoint(ENTRY.default if checkpoint is None else checkpoint)
        with quiet_loading():
            model = PanelModel.from_pretrained(path, use_safetensors=True)
        names = [name.strip() for name in members.split(",")] if isinstance(members, str) else members
        return cls(model, member_loaders(model.config, names, device=device, dtype=dtype), checkpoint=checkpoint,
                   batch_size=batch_size)

    @torch.inference_mode()
    def combine(self, outputs: Mapping[str, ScoreOutput]) -> ScoreOutput:
        size = len(next(iter(outputs.values())))
        features = torch.tensor(feature_rows(self.model.config, outputs, size), dtype=torch.float32)
        output = self.model(features=features.reshape(size, len(self.dimensions)))
        normalised = output.normalised.t().tolist()
        return ScoreOutput(scores=dict(zip(self.dimensions, normalised)), overall=output.scores.tolist(),
                           truncated=[any(o.truncated[i] for o in outputs.values()) for i in range(size)])

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "reference": self.model.config.reference}
