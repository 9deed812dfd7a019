"""The panel as a :class:`~hf_dialeval.inference.composite.CompositeMetric`: its members' scores of an item,
each normalised by the CDF stored in the checkpoint, averaged with the checkpoint's weights; a dialogue scored by
its system turns' mean score, joined by the members that score whole dialogues where the checkpoint has them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hf_dialeval.errors import OptionError
from hf_dialeval.inference.composite import CompositeMetric, MemberLoader
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.panel import ENTRY
from hf_dialeval.metrics.panel.members import feature_rows, member_loaders, split_feature
from hf_dialeval.metrics.panel.modeling_panel import PanelModel


class PanelMetric(CompositeMetric):
    """One score for a reply in context, from several metrics: ``overall`` in [0, 1] is the weighted mean of the
    members' scores, each first mapped through its empirical CDF (the share of the reference replies it scores
    above), the weights renormalised over the members present. Each normalised member score is a dimension too,
    named ``METRIC.SCORE``. Higher is better.

    A dialogue scores the mean of its system turns' scores (each dimension: the mean of its turns' values). Where the
    checkpoint has members scoring whole dialogues (:attr:`PanelConfig.dialogue_members`), ``overall`` is instead the
    equal-weight mean of the CDF values, over the checkpoint's reference dialogues, of that turn mean and of each of
    their scores, which are dimensions too (``nan`` for a turn-level item, where they do not apply)."""

    name, level = ENTRY.name, ENTRY.level
    needs_context = True
    #: An empty reply: below every reference reply.
    lowest_score = 0.0

    def __init__(self, model: PanelModel, member_loaders: Mapping[str, MemberLoader], checkpoint: str | None = None,
                 batch_size: int = 32, dialogue_member_loaders: Mapping[str, MemberLoader] | None = None) -> None:
        self.model = model.eval()
        self.models = [self.model]
        self.checkpoint = checkpoint
        self.dimensions = (*model.config.features, *model.config.dialogue_features)
        super().__init__(member_loaders, batch_size, dialogue_member_loaders)

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
        turn_loaders = member_loaders(model.config, names, device=device, dtype=dtype)
        if not turn_loaders:
            raise OptionError(f"--members {','.join(names)}: give at least one of the panel's members that score "
                              f"turns, {model.config.member_names}")
        return cls(model, turn_loaders, checkpoint=checkpoint, batch_size=batch_size,
                   dialogue_member_loaders=member_loaders(model.config, names, device=device, dtype=dtype,
                                                          dialogue=True))

    @torch.inference_mode()
    def combine(self, outputs: Mapping[str, ScoreOutput]) -> ScoreOutput:
        size = len(next(iter(outputs.values())))
        config = self.model.config
        features = torch.tensor(feature_rows(config.features, outputs, size), dtype=torch.float32)
        output = self.model(features=features.reshape(size, len(config.features)))
        scores = dict(zip(config.features, output.normalised.t().tolist()))
        scores.update({feature: [float("nan")] * size for feature in config.dialogue_features})  # not of a turn
        return ScoreOutput(scores=scores, overall=output.scores.tolist(), truncated=truncated_by_any(outputs, size))

    @torch.inference_mode()
    def _score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None]) -> ScoreOutput:
        turn_means = super()._score_dialogues(dialogues, speakers)
        config = self.model.config
        if not config.dialogue_members:
            return turn_means
        size = len(dialogues)
        outputs = self.member_outputs(lambda member: member.score_dialogues(dialogues, speakers),
                                      list(self.dialogue_member_loaders))
        rows = torch.tensor(feature_rows(config.dialogue_features, outputs, size), dtype=torch.float32)
        present = torch.tensor([split_feature(feature)[0] in self.member_loaders for feature in config.features])
        output = self.model.dialogue_forward(torch.tensor(turn_means.overall), rows.reshape(size, -1), present)
        scores = dict(turn_means.scores)
        scores.update(zip(config.dialogue_features, output.normalised[:, 1:].t().tolist()))
        truncated = [was or now for was, now in zip(turn_means.truncated, truncated_by_any(outputs, size))]
        return ScoreOutput(scores=scores, overall=output.scores.tolist(), truncated=truncated)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "reference": self.model.config.reference}


def truncated_by_any(outputs: Mapping[str, ScoreOutput], size: int) -> list[bool]:
    """Per item, whether a member cut it to fit its model."""
    return [any(output.truncated[i] for output in outputs.values()) for i in range(size)]
