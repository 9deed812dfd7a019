"""The panel: one score of a reply in context, combined from registered metrics' scores (its members), each
normalised by an empirical CDF fitted once and stored with the combiner's weights, the shipped weights chosen on
rated benchmarks by leave-one-release-out (this package's addition; the idea of combining sub-metrics by their
agreement with people is MME-CRS's, Zhang et al. 2022) and trainable by a pairwise ranking loss on a user's ratings.
This module is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.panel.options import PanelTrainingOptions
from hf_dialeval.registry import AdaptationStep, MetricEntry, MetricOption, TrainCommand

#: The shipped panel: its config (members, the CDF knots) and the combiner's weights, a few kilobytes
#: (model_cards/panel.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "panel-turn"


ENTRY = MetricEntry(
    "panel", "turn", "panel: one score from several metrics, for data no metric was trained on, 0-1",
    package=__name__, metric=".scoring:PanelMetric", config=".configuration_panel:PanelConfig",
    model=".modeling_panel:PanelModel", default=DEFAULT_CHECKPOINT,
    options=(MetricOption("members", "the panel's members to score with, comma-separated (default: all of them; "
                                     "the weights are renormalised over those given)"),),
    train_commands=(
        TrainCommand("panel", "the panel: member CDFs and combiner weights, by a pairwise ranking loss",
                     PanelTrainingOptions, ".train:PanelTrainingArguments", ".train:train_panel"),
    ),
    # the route to a new domain: the combiner refitted on the user's ratings, members and CDFs frozen
    adaptation=(AdaptationStep("panel", "ratings", "init_from"),),
    fitted_on_benchmarks=True,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {**ENTRY.exports, "PanelTrainer": ".trainer", "pairwise_ranking_loss": ".trainer"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
