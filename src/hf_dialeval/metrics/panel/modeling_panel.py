"""The panel's model: per member score an empirical CDF (fitted once, stored as knots, so that an item's score never
depends on the other items it is scored with) and a weighted mean of the normalised scores, the weights a softmax
of learned logits (non-negative, summing to one; all-zero logits are the plain mean of the members' ranks), a score
that marks down only counting at most at the others' mean. With
members scoring whole dialogues, a dialogue's score is the equal-weight mean of CDF values of its system turns' mean
score and of those members' scores, each CDF that of reference dialogues whose members' raw scores the checkpoint
holds, so that it follows the weights (refitted on a user's ratings, say) and never goes stale."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.modeling.registration import register_available


@dataclass
class PanelOutput(ModelOutput):
    """``scores``: ``(batch,)`` the panel's score in [0, 1]; ``normalised``: ``(batch, features)`` each member score's
    CDF value (``nan`` where the member score is missing or does not apply)."""

    scores: torch.FloatTensor | None = None
    normalised: torch.FloatTensor | None = None


def fit_cdf_knots(values: Sequence[float], quantile_count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Knots of the empirical CDF of ``values`` (finite ones; at least one): ``quantile_count`` values at evenly spaced
    quantiles, and at each the mid-rank share of ``values`` below it (ties count half), so that tied scores map to
    one level and the lowest and highest observed values to about 0 and 1."""
    sample = torch.tensor([v for v in values if v == v and abs(v) != float("inf")], dtype=torch.float64)
    if not len(sample):
        raise ValueError("no finite value to fit a CDF on")
    sample, _ = torch.sort(sample)
    knots = torch.quantile(sample, torch.linspace(0, 1, quantile_count, dtype=torch.float64))
    below = torch.searchsorted(sample, knots, right=False).double()
    at_or_below = torch.searchsorted(sample, knots, right=True).double()
    return knots.float(), ((below + at_or_below) / (2 * len(sample))).float()


def apply_cdf(values: torch.Tensor, knots: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """``values`` ``(batch, features)`` mapped through each feature's piecewise-linear CDF (``knots``, ``levels``:
    ``(features, quantile_count)``); below the first knot 0, above the last 1, ``nan`` stays ``nan``."""
    count = knots.shape[1]
    columns = values.t().contiguous()  # (features, batch): searchsorted works row by row
    upper = torch.searchsorted(knots, columns.nan_to_num(0.0), right=True).clamp(1, count - 1)
    x0, x1 = knots.gather(1, upper - 1), knots.gather(1, upper)
    p0, p1 = levels.gather(1, upper - 1), levels.gather(1, upper)
    span = x1 - x0
    fraction = torch.where(span > 0, (columns - x0) / span.clamp_min(1e-12), torch.zeros_like(columns)).clamp(0, 1)
    normalised = p0 + fraction * (p1 - p0)
    normalised = torch.where(columns < knots[:, :1], torch.zeros_like(normalised), normalised)
    normalised = torch.where(columns > knots[:, -1:], torch.ones_like(normalised), normalised)
    return torch.where(columns.isnan(), columns, normalised).t()


def combine(normalised: torch.Tensor, weights: torch.Tensor, mark_down_only: torch.Tensor) -> torch.Tensor:
    """``(batch,)``: the weighted mean of ``normalised`` ``(batch, features)`` CDF values over the scores present
    (``nan`` where none is), each score of ``mark_down_only`` (a ``(features,)`` mask) counted at most at the weighted
    mean of the other scores present (as it is where none of those is)."""
    present = ~normalised.isnan()
    weighted = weights.unsqueeze(0) * present
    values = normalised.nan_to_num(0.0)
    if mark_down_only.any():
        others = weighted * ~mark_down_only
        others_total = others.sum(dim=1, keepdim=True)
        others_mean = (others * values).sum(dim=1, keepdim=True) / others_total.clamp_min(1e-12)
        values = torch.where(mark_down_only & (others_total > 0), torch.minimum(values, others_mean), values)
    total = weighted.sum(dim=1)
    scores = (weighted * values).sum(dim=1) / total.clamp_min(1e-12)
    return torch.where(total > 0, scores, torch.full_like(scores, float("nan")))


class PanelModel(PreTrainedModel):
    """The panel's normalisation and combiner. ``forward(features)`` takes the members' raw scores ``(batch,
    features)`` in :attr:`PanelConfig.features` order, ``nan`` for a score that is missing (a member left out) or does
    not apply; the weights are renormalised over the scores present, item by item (:func:`combine`)."""

    config_class = PanelConfig
    config: PanelConfig
    base_model_prefix = "panel"
    main_input_name = "features"

    def __init__(self, config: PanelConfig) -> None:
        super().__init__(config)
        size = (len(config.features), config.quantile_count)
        self.register_buffer("knots", torch.zeros(size))
        self.register_buffer("levels", torch.linspace(0, 1, config.quantile_count).expand(size).clone())
        self.weight_logits = nn.Parameter(torch.zeros(len(config.features)))
        if config.dialogue_members:
            self.register_buffer("reference_turn_features", torch.zeros(config.reference_turns, len(config.features)))
            #: per reference turn, the index of its dialogue
            self.register_buffer("reference_turn_dialogue", torch.zeros(config.reference_turns, dtype=torch.long))
            self.register_buffer("reference_dialogue_features",
                                 torch.zeros(config.reference_dialogues, len(config.dialogue_features)))
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Nothing to initialise at random: zero logits are equal weights, and the knots come from a fit."""

    @property
    def weights(self) -> torch.Tensor:
        """The combiner's weight of each member score (non-negative, summing to one)."""
        return torch.softmax(self.weight_logits, dim=0)

    def set_weights(self, weights: Sequence[float]) -> None:
        """Set the combiner's weights to ``weights`` (positive, one per member score; normalised to sum to one)."""
        if len(weights) != len(self.config.features) or min(weights) <= 0:
            raise ValueError(f"{list(weights)}: one positive weight per member score ({len(self.config.features)})")
        with torch.no_grad():
            self.weight_logits.copy_(torch.tensor(weights, dtype=torch.float32).log())

    def set_cdfs(self, columns: Sequence[Sequence[float]]) -> None:
        """Fit every member score's CDF on its column of reference values (:func:`fit_cdf_knots`)."""
        if len(columns) != len(self.config.features):
            raise ValueError(f"{len(columns)} columns for {len(self.config.features)} member scores")
        for index, column in enumerate(columns):
            knots, levels = fit_cdf_knots(column, self.config.quantile_count)
            self.knots[index], self.levels[index] = knots, levels

    def set_dialogue_reference(self, turn_features: Sequence[Sequence[float]], turn_dialogue: Sequence[int],
                               dialogue_features: Sequence[Sequence[float]]) -> None:
        """Store the reference dialogues' raw member scores: of each system turn (``turn_features``, in the order of
        :attr:`PanelConfig.features`, with the index of its dialogue in ``turn_dialogue``) and of each dialogue
        (``dialogue_features``, in the order of :attr:`PanelConfig.dialogue_features`)."""
        config = self.config
        if (len(turn_features), len(dialogue_features)) != (config.reference_turns, config.reference_dialogues):
            raise ValueError(f"{len(turn_features)} turns and {len(dialogue_features)} dialogues for the config's "
                             f"{config.reference_turns} and {config.reference_dialogues}")
        self.reference_turn_features.copy_(torch.tensor(turn_features, dtype=torch.float32))
        self.reference_turn_dialogue.copy_(torch.tensor(turn_dialogue, dtype=torch.long))
        self.reference_dialogue_features.copy_(torch.tensor(dialogue_features, dtype=torch.float32))

    def reference_dialogue_scores(self, present: torch.Tensor) -> torch.Tensor:
        """``(reference_dialogues,)``: each reference dialogue's mean score of its system turns, with the member scores
        ``present`` (a ``(features,)`` mask) alone, as a dialogue scored with those members gets."""
        features = self.reference_turn_features.masked_fill(~present, float("nan"))
        turn_scores = self(features=features).scores
        count = self.config.reference_dialogues
        totals = torch.zeros(count).index_add_(0, self.reference_turn_dialogue, turn_scores)
        return totals / torch.zeros(count).index_add_(0, self.reference_turn_dialogue, torch.ones_like(turn_scores))

    def dialogue_forward(self, turn_means: torch.Tensor, dialogue_features: torch.Tensor,
                         present: torch.Tensor) -> PanelOutput:
        """Dialogue scores from ``turn_means`` ``(batch,)`` (each dialogue's mean panel score of its system turns,
        with the member scores ``present``, a ``(features,)`` mask) and ``dialogue_features`` ``(batch,
        dialogue_features)`` (raw, ``nan`` for a member left out): the mean of their CDF values over the parts
        present. ``normalised``: ``(batch, 1 + dialogue_features)``, the turn mean's CDF value first."""
        reference = torch.cat([self.reference_dialogue_scores(present).unsqueeze(1), self.reference_dialogue_features],
                              dim=1)
        values = torch.cat([turn_means.unsqueeze(1), dialogue_features], dim=1).float()
        # a part without a reference score (no turn member present) counts for no dialogue
        usable = reference.isfinite().any(dim=0)
        knots, levels = torch.zeros(2, reference.shape[1], self.config.quantile_count)
        for index in usable.nonzero().flatten().tolist():
            knots[index], levels[index] = fit_cdf_knots(reference[:, index].tolist(), self.config.quantile_count)
        normalised = apply_cdf(values, knots, levels).masked_fill(~usable, float("nan"))
        kept = ~normalised.isnan()
        count = kept.sum(dim=1)
        scores = normalised.nan_to_num(0.0).sum(dim=1) / count.clamp_min(1)
        return PanelOutput(scores=torch.where(count > 0, scores, torch.full_like(scores, float("nan"))),
                           normalised=normalised)

    @property
    def mark_down_only(self) -> torch.Tensor:
        """``(features,)``: whether each member score is one of :attr:`PanelConfig.mark_down_only`."""
        return torch.tensor([feature in self.config.mark_down_only for feature in self.config.features],
                            device=self.weight_logits.device)

    def normalise(self, features: torch.Tensor) -> torch.Tensor:
        return apply_cdf(features.float(), self.knots, self.levels)

    def forward(self, features: torch.Tensor) -> PanelOutput:
        normalised = self.normalise(features)
        return PanelOutput(scores=combine(normalised, self.weights, self.mark_down_only), normalised=normalised)


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
