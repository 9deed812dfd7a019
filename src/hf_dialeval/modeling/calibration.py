"""Calibration: turning a model's raw score into the scale a metric reports, and fitting that scale. Torch-free
(configs import it): the functions work on floats, numpy arrays and torch tensors alike.

* a linear scale ``(low, high)``: ``low + (high - low) * score`` for a score in [0, 1] (QuantiDCE's 1-5), or the range
  a regression head predicts on and that an empty reply gets the bottom of (RADE's human 1-5);
* percentile normalisation (HolisticEval's Eq. 2): a raw log-probability mapped to [0, 1] against a lower cutoff,
  the ``p``-th percentile of the raw scores on a reference set, fitted once and saved in the config; a score that is not
  a log-probability (a pointwise mutual information) between its ``p``-th and ``(100 − p)``-th percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def check_scale(scale: Sequence[float], name: str) -> list[float]:
    """``(low, high)`` as two floats, ``low < high``; anything else is a one-line error naming the field."""
    if len(scale) != 2 or float(scale[0]) >= float(scale[1]):
        raise ValueError(f"{name} must be (low, high) with low < high, not {scale!r}")
    return [float(value) for value in scale]


def linear_scale(scores: Any, scale: Sequence[float]) -> Any:
    """Scores in [0, 1] on the scale ``(low, high)``."""
    low, high = scale
    return low + (high - low) * scores


def check_cutoff(cutoff: float | None, name: str) -> float | None:
    """A fitted lower bound of log-probabilities: a finite negative number (or ``None``: not fitted yet)."""
    if cutoff is not None and not (math.isfinite(cutoff) and cutoff < 0):
        raise ValueError(f"{name}={cutoff!r}: a percentile of log-probabilities is a negative number")
    return None if cutoff is None else float(cutoff)


def percentile_normalise(raw: Any, cutoff: float) -> Any:
    """Eq. 2 of HolisticEval: ``−(max(cutoff, raw) − cutoff) / cutoff``, in [0, 1] for a negative ``cutoff`` and
    ``raw ≤ 0`` (0 at or below the cutoff, 1 for a response the language model is certain of)."""
    clipped = raw.clamp(min=cutoff) if hasattr(raw, "clamp") else max(raw, cutoff)
    return -(clipped - cutoff) / cutoff


def range_normalise(raw: Any, low: float, high: float) -> Any:
    """``raw`` mapped linearly from ``[low, high]`` onto [0, 1], clipped outside it: the percentile normalisation of a
    score that is not a log-probability (a pointwise mutual information can be positive), between its fitted lower
    and upper percentiles."""
    if hasattr(raw, "clamp"):
        return ((raw - low) / (high - low)).clamp(0.0, 1.0)
    return min(max((raw - low) / (high - low), 0.0), 1.0)


def fit_percentile_cutoff(raw: Iterable[float], percentile: float, name: str) -> float:
    """The ``percentile``-th percentile of the finite raw scores of a reference set (never a benchmark that is
    scored): the cutoff :func:`percentile_normalise` maps to 0."""
    import numpy as np

    finite = [value for value in raw if math.isfinite(value)]
    if not finite:
        raise ValueError(f"no reference item gives a {name} score: give reference pairs that have one")
    return float(np.percentile(finite, percentile))
