"""HolisticEval's PMI weight ``β`` refitted on a domain's own dialogues, which carry no ratings.

``c_raw(r|q) − β · f_raw(r)`` keeps ``1 − β`` of the response's own likelihood in its context coherence. What the
weight should be depends on the domain: a fluent generic reply is likelier in one than in another. Without ratings, the
dialogues still say what context coherence must do: prefer the human reply to a reply from another dialogue and to a
generic one, at the dialogues' own turns. The weight refitted is the one of :data:`WEIGHTS` under which it does so most
often (the larger weight on a tie: the nearer the pointwise mutual information).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs, win_rate
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, pointwise_mutual_information

#: The weights tried, 0 (Eq. 1's likelihood) to 1 (the pointwise mutual information).
WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))
#: The replies the human one must beat: one from another dialogue, and a generic one (the checklist's).
CONTRASTS = ("random", "generic")


def weight_win_rates(metric: HolisticEvalMetric, dialogues: Sequence[Sequence[str]], pairs: int = 200,
                     seed: int = 0) -> dict[str, list[float]]:
    """Per contrast of :data:`CONTRASTS`, the share of up to ``pairs`` turns of ``dialogues`` (one per dialogue,
    drawn with ``seed`` as the checklist draws them) whose human reply has the higher ``c_raw(r|q) − β · f_raw(r)``,
    ties half, at each weight of :data:`WEIGHTS` (a reply all copied the lowest). Each reply's raw scores are computed
    once."""
    rates = {}
    for name in CONTRASTS:
        drawn = build_pairs(PERTURBATIONS[name], dialogues, "turn", pairs, seed)
        human = metric.raw_scores(drawn.contexts, drawn.originals)
        other = metric.raw_scores(drawn.contexts, drawn.perturbed)
        rates[name] = [win_rate(*(_copies_lowest(pointwise_mutual_information(
            raw.coherence, raw.fluency_of_coherence_tokens, weight)) for raw in (human, other)))["win_rate"]
            for weight in WEIGHTS]
    return rates


def _copies_lowest(values: Sequence[float]) -> list[float]:
    """A reply with no token of its own (``nan``: it copies what precedes it) as the lowest score."""
    return [-math.inf if math.isnan(value) else value for value in values]


def fit_pmi_weight(metric: HolisticEvalMetric, dialogues: Sequence[Sequence[str]], pairs: int = 200,
                   seed: int = 0) -> dict[str, Any]:
    """Set the metric's model's ``pmi_weight`` to the weight whose :func:`weight_win_rates` are highest on average
    (the larger on a tie) and return it with every weight's win rates. Its cutoffs, fitted for the old weight, must be
    fitted again."""
    rates = weight_win_rates(metric, dialogues, pairs, seed)
    mean = [sum(values) / len(values) for values in zip(*rates.values())]
    best = max(range(len(WEIGHTS)), key=lambda index: (mean[index], WEIGHTS[index]))
    metric.model.config.pmi_weight = WEIGHTS[best]
    return {"pmi_weight": WEIGHTS[best], "weights": list(WEIGHTS), "win_rates": rates, "seed": seed,
            "dialogues": len(dialogues)}
