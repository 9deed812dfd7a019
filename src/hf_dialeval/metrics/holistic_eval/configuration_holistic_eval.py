"""Configuration of HolisticEval (Pang et al. 2020, §3.1–3.2): a causal language model whose response
log-likelihoods, with and without the query, are the context coherence and fluency scores, each normalised by the
5th percentile of a reference distribution (Eq. 2) that is fitted once and saved here."""

from __future__ import annotations

import math
from typing import Any

from hf_dialeval.data.copies import check_copy_span
from hf_dialeval.data.transcripts import PROMPT_FORMATS
from hf_dialeval.modeling.calibration import check_cutoff, percentile_normalise, range_normalise
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available

#: The two language-model scores: context coherence c(r|q) (Eq. 1) and fluency f(r) (Eq. 3).
LM_SCORES = ("context_coherence", "fluency")
#: How a response's token log-probabilities become one raw score.
TOKEN_REDUCTIONS = ("mean", "sum")
#: What context coherence measures: the response's likelihood given the query (Eq. 1), or the pointwise mutual
#: information of the two (the likelihood the query adds: c_raw(r|q) − β · f_raw(r), β the config's pmi_weight).
COHERENCE_MEASURES = ("likelihood", "pmi")


class HolisticEvalConfig(DialEvalConfig):
    """Every setting of HolisticEval's language-model scores (backbone, weights source and token limit as in
    :class:`~hf_dialeval.modeling.configuration.DialEvalConfig`; the backbone is a causal LM config: GPT-2's, or an
    encoder family's with ``is_decoder`` set).

    Args:
        token_reduction: how the response's token log-probabilities make the raw score: ``"mean"`` (Eq. 1 and 3, the
            paper's: ``(1/T_r) Σ_t log P(r_t | ...)``) or ``"sum"`` (the total log-probability of the response, as the
            authors' released code scores context coherence: ``log P(q, r) − log P(q)``; it also charges a response
            for its length).
        percentile: which percentile of the reference distribution is the lower bound of Eq. 2 (the paper: 5).
        context_coherence_cutoff: ``c_5th``, the ``percentile``-th percentile of the raw context coherence
            ``c_raw(r|q)`` (the response's token log-probabilities given the query, reduced by ``token_reduction``)
            over ``cutoff_reference``; fitted for that reduction.
        fluency_cutoff: ``f_5th``, the same for the raw fluency ``f_raw(r)`` (no query).
        cutoff_reference: what the cutoffs were fitted on (e.g. ``"dailydialog validation, 2000 pairs"``); never
            a benchmark that is scored.
        max_seq_length: tokens per ``query + response`` input; the query's oldest tokens are cut first, the
            response only when it alone does not fit.
        context_coherence_measure: ``"likelihood"`` (Eq. 1: ``c_raw(r|q)``, normalised by Eq. 2) or ``"pmi"``
            (``c_raw(r|q) − f_raw(r)``: how much likelier the query makes the response, which a fluent but unrelated
            or generic reply does not gain; mapped linearly from its ``percentile``-th to its ``(100 −
            percentile)``-th percentile onto [0, 1], clipped).
        context_coherence_upper_cutoff: that upper percentile (``"pmi"`` only).
        pmi_weight: ``β`` of the ``"pmi"`` measure, ``c_raw(r|q) − β · f_raw(r)``, in [0, 1]: 1 is the pointwise
            mutual information, 0 Eq. 1's likelihood, and a weight between them the MMI-antiLM score of Li et al.
            (2016), which subtracts only part of what the response alone is likely; the cutoffs are fitted for it.
        prompt_format: the input layout, the same in training and scoring: ``"special-tokens"`` (``<bos> query <sep>
            response``, for an LM trained for this metric) or ``"speaker-tags"`` (``A: query\nB: response``, for a
            pretrained LM).
        detokenize: write tokenised text (DailyDialog's ``"Hi , how are you ?"``) back the ordinary way before the LM
            reads it (a pretrained LM has read ordinary text).
        diversity_cutoff: the ``percentile``-th percentile of the response's own n-gram entropy (§3.3's measure, the
            mean of n = 1, 2, 3, over the one response an item has) over ``cutoff_reference``'s responses; with
            ``diversity_upper_cutoff``, its ``(100 − percentile)``-th, the range mapped onto [0, 1] (clipped). Both
            ``None``: no turn-level ``diversity`` score (a checkpoint fitted before it existed).
        diversity_upper_cutoff: that upper percentile.
        copy_span: the shortest run of tokens that counts as a copy of what the LM read before it (the query, or the
            response's own earlier tokens; a shorter response only when all of it is one): its tokens earn no
            credit, as tokens at the cutoff would, so that an echo of the user or a reply said again scores 0 and a
            loop the share of it that is new (:func:`hf_dialeval.data.copies.copied_tokens`). 0: every token is
            scored, as in the paper (a likelihood then rewards copying).
    """

    model_type = "holistic-eval"

    def __init__(
        self,
        token_reduction: str = "mean",
        percentile: float = 5.0,
        context_coherence_cutoff: float | None = None,
        fluency_cutoff: float | None = None,
        cutoff_reference: str | None = None,
        max_seq_length: int = 256,
        prompt_format: str = "special-tokens",
        detokenize: bool = False,
        context_coherence_measure: str = "likelihood",
        context_coherence_upper_cutoff: float | None = None,
        pmi_weight: float = 1.0,
        copy_span: int = 0,
        diversity_cutoff: float | None = None,
        diversity_upper_cutoff: float | None = None,
        **kwargs: Any,
    ) -> None:
        if token_reduction not in TOKEN_REDUCTIONS:
            raise ValueError(f"token_reduction must be one of {TOKEN_REDUCTIONS}, not {token_reduction!r}")
        if prompt_format not in PROMPT_FORMATS:
            raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS}, not {prompt_format!r}")
        if context_coherence_measure not in COHERENCE_MEASURES:
            raise ValueError(f"context_coherence_measure must be one of {COHERENCE_MEASURES}, not "
                             f"{context_coherence_measure!r}")
        pmi = context_coherence_measure == "pmi"
        if pmi and None not in (context_coherence_cutoff, context_coherence_upper_cutoff) and not (
                math.isfinite(context_coherence_cutoff) and math.isfinite(context_coherence_upper_cutoff)
                and context_coherence_cutoff < context_coherence_upper_cutoff):
            raise ValueError(f"context_coherence_cutoff={context_coherence_cutoff!r} and "
                             f"context_coherence_upper_cutoff={context_coherence_upper_cutoff!r}: a PMI's percentiles "
                             "are finite, the lower below the upper")
        if not 0.0 <= float(pmi_weight) <= 1.0:
            raise ValueError(f"pmi_weight must be in [0, 1] (1: the pointwise mutual information, 0: Eq. 1's "
                             f"likelihood), not {pmi_weight!r}")
        if not 0.0 < float(percentile) < 50.0:
            raise ValueError(f"percentile must be in (0, 50), not {percentile!r}")
        self.token_reduction = token_reduction
        self.percentile = float(percentile)
        if pmi:  # a PMI's lower percentile may be positive
            self.context_coherence_cutoff = None if context_coherence_cutoff is None \
                else float(context_coherence_cutoff)
        else:
            self.context_coherence_cutoff = check_cutoff(context_coherence_cutoff, "context_coherence_cutoff")
        self.context_coherence_upper_cutoff = None if context_coherence_upper_cutoff is None \
            else float(context_coherence_upper_cutoff)
        self.context_coherence_measure = context_coherence_measure
        self.pmi_weight = float(pmi_weight)
        self.copy_span = check_copy_span(copy_span)
        if (diversity_cutoff is None) != (diversity_upper_cutoff is None) or diversity_cutoff is not None and not (
                math.isfinite(diversity_cutoff) and math.isfinite(diversity_upper_cutoff)
                and 0 <= diversity_cutoff < diversity_upper_cutoff):
            raise ValueError(f"diversity_cutoff={diversity_cutoff!r} and diversity_upper_cutoff="
                             f"{diversity_upper_cutoff!r}: an entropy's percentiles are both given or both None, "
                             "finite, at least 0, the lower below the upper")
        self.diversity_cutoff = None if diversity_cutoff is None else float(diversity_cutoff)
        self.diversity_upper_cutoff = None if diversity_upper_cutoff is None else float(diversity_upper_cutoff)
        self.fluency_cutoff = check_cutoff(fluency_cutoff, "fluency_cutoff")
        self.cutoff_reference = cutoff_reference
        self.prompt_format = prompt_format
        self.detokenize = bool(detokenize)
        super().__init__(max_seq_length=max_seq_length, **kwargs)

    def cutoff(self, score: str) -> float:
        """The fitted lower bound of ``score`` (one of :data:`LM_SCORES`)."""
        value = getattr(self, f"{score}_cutoff")
        if value is None:
            raise CheckpointError(f"this HolisticEval checkpoint has no {score}_cutoff: fit the percentiles on a reference "
                                  "set first (hf_dialeval.metrics.holistic_eval.fit_cutoffs, which `hf-dialeval train holistic-eval` "
                                  "runs at its end)")
        return value

    def normalise(self, raw: Any, score: str) -> Any:
        """Eq. 2 with the fitted cutoff of ``score`` (``"context_coherence"`` or ``"fluency"``); a PMI context coherence
        between its fitted lower and upper percentiles."""
        if score == "context_coherence" and self.context_coherence_measure == "pmi":
            if self.context_coherence_upper_cutoff is None:
                self.cutoff("context_coherence_upper")  # names what to fit
            return range_normalise(raw, self.cutoff(score), self.context_coherence_upper_cutoff)
        return percentile_normalise(raw, self.cutoff(score))


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
