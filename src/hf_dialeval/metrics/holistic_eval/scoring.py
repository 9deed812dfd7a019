"""HolisticEval as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level): context coherence and fluency from
its language model, normalised by the checkpoint's percentile cutoffs (Eq. 1–3), and logical self-consistency from
an NLI model when one is given (§3.4); plus what fits and checks the language model (cutoffs, perplexity)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval.data.copies import copied_tokens
from hf_dialeval.data.model import system_turn_indices
from hf_dialeval.data.text import detokenize
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.inference.model_metric import ModelMetric, autocast, pad_rows, resolve_dtype
from hf_dialeval.inference.score_output import OVERALL, ScoreOutput
from hf_dialeval.inference.shared_prefixes import continuation_log_probs, runs_shared_prefixes
from hf_dialeval.metrics.holistic_eval import ENTRY
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import LM_SCORES, HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.data import drawn_pairs, encode_scoring_inputs, load_lm_pairs
from hf_dialeval.metrics.holistic_eval.diversity import diversity_scores, response_entropy
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import (
    HolisticEvalModel,
    response_log_probs,
    scored_token_log_probs,
)
from hf_dialeval.modeling.calibration import fit_percentile_cutoff, range_normalise
from hf_dialeval.modeling.lm_head import prediction_head
from hf_dialeval.modeling.loading import load_checkpoint

CONSISTENCY = "consistency"
DIVERSITY = "diversity"
#: The system name of items that give none (their system-level scores pool them all).
ALL_SYSTEMS = "all"



class HolisticEvalMetric(ModelMetric):
    """HolisticEval's turn-level scores, each in [0, 1], higher is better:

    * ``context_coherence``: c(r|q) (Eq. 1–2), the response's mean token log-probability given the context (its
      utterances, oldest cut first when too long), normalised by the checkpoint's cutoff; ``nan`` for an item
      without a context (an utterance-level item: only its fluency is defined);
    * ``fluency``: f(r) (Eq. 3), the same without the context;
    * ``diversity`` (with the checkpoint's diversity cutoffs): the response's own n-gram entropy (§3.3's measure, over
      the one response; :func:`~.diversity.response_entropy`), between its fitted percentiles;
    * ``consistency`` (with ``nli_checkpoint``): 1 − the mean NLI contradiction probability of the response against
      each earlier utterance of its speaker (§3.4); ``nan`` when the speaker said nothing before;
    * ``overall``: :func:`overall_scores`, the mean of the response's scores in its dialogue (context coherence,
      consistency) and of its scores alone (fluency, diversity).

    With the config's ``copy_span``, the tokens that copy what the LM read before them earn no credit in any score
    (:class:`RawScores`, :func:`credited`). The language-model inputs (each item's response alone, and after its
    context) run once each, in batches of similar length (:meth:`row_batches`), and a context that several
    replies share runs once (:func:`shared_prefix_groups`).
    """

    name, level = ENTRY.name, ENTRY.level
    #: An empty response: the lowest normalised score (at or below the 5th percentile).
    lowest_score = 0.0
    system_level = True
    #: Replies share their context's run only within a chunk; a batch of rows is bounded whatever the chunk holds
    #: (:func:`~hf_dialeval.inference.shared_prefixes.continuation_log_probs`).
    chunk_size = 1024

    model: HolisticEvalModel

    def __init__(self, model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, nli: Any = None,
                 dtype: str | torch.dtype | None = None) -> None:
        super().__init__(model, ensure_pad_token(tokenizer), device=device, batch_size=batch_size, checkpoint=checkpoint,
                         dtype=dtype)
        self.nli = nli
        self.dimensions = LM_SCORES + ((DIVERSITY,) if model.config.diversity_cutoff is not None else ()) + (
            (CONSISTENCY,) if nli is not None else ())

    @classmethod
    def load(cls, checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | torch.dtype | None = None, nli_checkpoint: str | None = None) -> HolisticEvalMetric:
        """HolisticEval from ``checkpoint`` (``None``: the shipped default), with logical self-consistency when
        ``nli_checkpoint`` (an MNLI sequence classifier, e.g. ``roberta-large-mnli``) is given, both computing in
        ``dtype``."""
        model, tokenizer = load_checkpoint(cls.name, checkpoint)
        nli = None
        if nli_checkpoint is not None:
            from hf_dialeval.metrics.holistic_eval.consistency import NLIConsistencyScorer

            nli = NLIConsistencyScorer(nli_checkpoint, device=device, batch_size=batch_size, dtype=dtype)
        return cls(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, nli=nli, dtype=dtype)

    def autocast_modules(self, model: HolisticEvalModel) -> list[torch.nn.Module]:
        """The LM's body and its prediction head: the response's log-probabilities are projected under autocast."""
        return [*super().autocast_modules(model), prediction_head(model.lm)]

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        config = self.model.config
        settings.update(percentile=config.percentile, context_coherence_cutoff=config.context_coherence_cutoff,
                        fluency_cutoff=config.fluency_cutoff, copy_span=config.copy_span)
        if config.context_coherence_measure != "likelihood":
            settings.update(context_coherence_measure=config.context_coherence_measure,
                            context_coherence_upper_cutoff=config.context_coherence_upper_cutoff,
                            pmi_weight=config.pmi_weight)
        if self.nli is not None:
            settings["nli_checkpoint"] = self.nli.checkpoint
        return settings

    def row_batches(self, encoding: Mapping[str, Sequence[Sequence[int]]],
                    groups: Sequence[list[int]] | None = None
                    ) -> Iterator[tuple[list[list[int]], dict[str, torch.Tensor]]]:
        """The rows of :func:`~.data.encode_scoring_inputs` (the first of each of ``groups``, default each distinct
        row's :func:`distinct_rows`) padded in batches of ``batch_size`` rows of similar length, each with the
        indices of the rows it stands for: a reply alone that several items share, or an item scored twice, runs
        once, and a reply alone is never padded to a context's length."""
        groups = distinct_rows(encoding) if groups is None else groups
        lengths = [len(encoding["input_ids"][group[0]]) for group in groups]
        for batch in length_sorted_batches(lengths, self.batch_size):
            yield [groups[index] for index in batch], pad_rows(
                [{key: values[groups[index][0]] for key, values in encoding.items()} for index in batch],
                self.tokenizer.pad_token_id)

    @torch.inference_mode()
    def scored_tokens(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> ScoredTokens:
        """Each item's :class:`ScoredTokens`: the model's forward passes, with and without the context. Rows that
        share what precedes their response (several replies to one context) run it once, their responses after it
        in one row (:func:`~hf_dialeval.inference.shared_prefixes.continuation_log_probs`); the others run whole."""
        config = self.model.config
        encoding, coherence_rows, truncated = encode_scoring_inputs(
            self.tokenizer, contexts, responses, config.max_seq_length, Layout.of_config(self.tokenizer, config))
        log_probs: list[list[float]] = [[] for _ in encoding["input_ids"]]
        prefixes, shared, whole = shared_prefix_groups(self.model.lm, encoding, distinct_rows(encoding),
                                                       config.max_seq_length)
        with autocast(self.device, self.dtype):  # one context: each weight is cast once, not once a batch
            for groups, batch in self.row_batches(encoding, whole):
                values = scored_token_log_probs(self.model.lm, *(batch[key].to(self.device) for key in (
                    "input_ids", "attention_mask", "score_mask")))
                for group, row_values, mask in zip(groups, values.float().cpu(), batch["score_mask"][:, 1:].bool()):
                    scored = row_values[mask].tolist()
                    for row in group:
                        log_probs[row] = scored
            continuations = [(prefix, encoding["input_ids"][group[0]][len(prefixes[prefix]):])
                             for prefix, group in shared]
            for (_, group), scored in zip(shared, continuation_log_probs(
                    self.model.lm, prefixes, continuations, self.batch_size, self.tokenizer.pad_token_id)):
                for row in group:
                    log_probs[row] = scored
        self.check_finite(log_probs[: len(responses)])
        self.check_finite([log_probs[row] if row is not None else [] for row in coherence_rows])

        def split(row: int) -> tuple[list[int], list[int]]:  # what precedes the response, and the response
            ids, mask = encoding["input_ids"][row], encoding["score_mask"][row]
            start = mask.index(1) if 1 in mask else len(mask)
            return ids[:start], ids[start:]

        tokens = ScoredTokens([], [], [], [], [], truncated)
        for item, row in enumerate(coherence_rows):
            tokens.fluency_tokens.append(split(item)[1])
            tokens.fluency_log_probs.append(log_probs[item])
            history, response = split(row) if row is not None else (None, None)
            tokens.coherence_history.append(history)
            tokens.coherence_tokens.append(response)
            tokens.coherence_log_probs.append(log_probs[row] if row is not None else None)
        return tokens

    def raw_scores(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> RawScores:
        """Each item's :class:`RawScores`: the log-probabilities before Eq. 2, of the response's own tokens."""
        return raw_scores_of(self.model.config, self.scored_tokens(contexts, responses))

    def unavailable_scores(self) -> dict[str, str]:
        if self.nli is not None:
            return {}
        return {CONSISTENCY: "give an NLI checkpoint (nli_checkpoint=, --nli-checkpoint: an MNLI sequence classifier "
                             "such as roberta-large-mnli, or its folder); none exists offline"}

    def system_level_scores(self, items: Sequence[Mapping[str, Any]], output: ScoreOutput) -> dict[str, dict[str, float]]:
        """Per system (an item's ``system``; ``"all"`` for items without one): the n-gram entropy (n = 1, 2, 3) of
        all its responses pooled (§3.3; the paper's controlled measure pools a system's responses to one query and
        its paraphrases instead: build those with :func:`hf_dialeval.metrics.holistic_eval.diversity.wordnet_augment` and score them
        with :func:`hf_dialeval.metrics.holistic_eval.diversity.diversity_scores`), and the mean of each turn-level score."""
        systems: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            systems.setdefault(str(item.get("system") or ALL_SYSTEMS), []).append(index)
        scored = {**output.scores, OVERALL: output.overall}
        return {
            system: {**{name: values[0] for name, values in
                        diversity_scores([[text for i in indices for text in _responses(items[i])]]).items()},
                     **{f"mean_{name}": _nanmean([values[i] for i in indices]) for name, values in scored.items()}}
            for system, indices in systems.items()
        }

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        raw = self.raw_scores(contexts, responses)
        scores = language_model_scores(self.model.config, raw, responses)
        if self.nli is not None:
            scores[CONSISTENCY] = self.nli.score(contexts, responses)
        return ScoreOutput(scores=scores, overall=overall_scores(scores), truncated=raw.truncated)


def distinct_rows(encoding: Mapping[str, Sequence[Sequence[int]]]) -> list[list[int]]:
    """The indices of the encoding's rows, grouped by equal ids and score mask: each group runs once."""
    distinct: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
    for row, (ids, mask) in enumerate(zip(encoding["input_ids"], encoding["score_mask"])):
        distinct.setdefault((tuple(ids), tuple(mask)), []).append(row)
    return list(distinct.values())


def shared_prefix_groups(lm: PreTrainedModel, encoding: Mapping[str, Sequence[Sequence[int]]],
                         groups: Sequence[list[int]], max_length: int
                         ) -> tuple[list[list[int]], list[tuple[int, list[int]]], list[list[int]]]:
    """The prefixes (the ids before the scored tokens) that more than one of ``groups`` starts with, each such group
    with the index of its prefix, and the other groups (run whole). None is shared when ``lm`` attends within a
    sliding window shorter than ``max_length``: a cache cut to the window is not what a whole row reads."""
    if not runs_shared_prefixes(lm, max_length):
        return [], [], list(groups)
    keys = [_prefix(encoding, group[0]) for group in groups]
    counts = Counter(key for key in keys if key is not None)
    index: dict[tuple[int, ...], int] = {}
    shared, whole = [], []
    for group, key in zip(groups, keys):
        if key is not None and counts[key] > 1:
            shared.append((index.setdefault(key, len(index)), group))
        else:
            whole.append(group)
    return [list(key) for key in index], shared, whole


def _prefix(encoding: Mapping[str, Sequence[Sequence[int]]], row: int) -> tuple[int, ...] | None:
    """The ids of ``row`` before its first scored token; ``None`` when it has no such prefix or nothing to score."""
    mask = encoding["score_mask"][row]
    start = mask.index(1) if 1 in mask else 0
    return tuple(encoding["input_ids"][row][:start]) if start else None


@dataclass
class ScoredTokens:
    """What HolisticEval's language model read and predicted, per item: the response's tokens alone (fluency) and
    after the query (context coherence; ``None`` without a context), what precedes them in the coherence input, and
    each response token's log-probability in both. Every raw score is a reduction of these
    (:func:`raw_scores_of`)."""

    fluency_tokens: list[list[int]]
    fluency_log_probs: list[list[float]]
    coherence_history: list[list[int] | None]
    coherence_tokens: list[list[int] | None]
    coherence_log_probs: list[list[float] | None]
    truncated: list[bool]


@dataclass
class RawScores:
    """HolisticEval's raw scores of items, before Eq. 2: the log-probabilities of each response's own tokens
    (reduced as the config's ``token_reduction`` says), all of them unless the config's ``copy_span`` leaves out the
    tokens that copy what the LM was shown before them (:func:`own_tokens`), and the share of the response they
    are. ``nan`` where a score has no token: without a context (its coherence), or when all of it is copied."""

    #: ``c_raw(r|q)``, the response's own tokens given the query (those copying neither the query nor the response)
    coherence: list[float]
    #: ``f_raw(r)``, the response alone (its own tokens: those that do not copy the response's earlier ones)
    fluency: list[float]
    #: ``f_raw`` of the tokens ``c_raw`` reads: what the PMI subtracts, token for token
    fluency_of_coherence_tokens: list[float]
    coherence_share: list[float]
    fluency_share: list[float]
    truncated: list[bool]


def raw_scores_of(config: HolisticEvalConfig, tokens: ScoredTokens) -> RawScores:
    """The :class:`RawScores` of the scored tokens under ``config``'s ``copy_span`` and ``token_reduction``."""
    raw = RawScores([], [], [], [], [], tokens.truncated)
    for item, response in enumerate(tokens.fluency_tokens):
        fluency_own = own_tokens(config, [], response)
        raw.fluency.append(reduced(config, tokens.fluency_log_probs[item], fluency_own))
        raw.fluency_share.append(sum(fluency_own) / len(fluency_own) if fluency_own else 1.0)
        history, coherence_response = tokens.coherence_history[item], tokens.coherence_tokens[item]
        if history is None:
            for values in (raw.coherence, raw.fluency_of_coherence_tokens, raw.coherence_share):
                values.append(math.nan)
            continue
        coherence_own = own_tokens(config, history, coherence_response)
        raw.coherence.append(reduced(config, tokens.coherence_log_probs[item], coherence_own))
        # the response alone is never cut more than after its query: its first tokens are the same
        raw.fluency_of_coherence_tokens.append(reduced(config, tokens.fluency_log_probs[item], coherence_own))
        raw.coherence_share.append(sum(coherence_own) / len(coherence_own) if coherence_own else 1.0)
    return raw


def own_tokens(config: HolisticEvalConfig, history: Sequence[int], response: Sequence[int]) -> list[bool]:
    """Per token of ``response``, whether it is the response's own: every token, or with the config's ``copy_span``
    those that do not lie in a copy of ``history`` (what the LM reads before the response) or of the response's
    earlier tokens (:func:`~hf_dialeval.data.copies.copied_tokens`)."""
    if not config.copy_span:
        return [True] * len(response)
    return [not copied for copied in copied_tokens(history, response, config.copy_span)]


def reduced(config: HolisticEvalConfig, token_log_probs: Sequence[float], own: Sequence[bool]) -> float:
    """The config's ``token_reduction`` (mean or sum) of the log-probabilities of the ``own`` tokens (the first
    ``len(own)`` of ``token_log_probs``); ``nan`` when there is none."""
    kept = [value for value, keep in zip(token_log_probs, own) if keep]
    if not kept:
        return math.nan
    return math.fsum(kept) / (len(kept) if config.token_reduction == "mean" else 1)


def credited(normalised: Sequence[float], shares: Sequence[float]) -> list[float]:
    """Each normalised score times the share of the response its own tokens are: a copied token earns no credit,
    as a token at the cutoff (Eq. 2 is linear in the token log-probabilities between its bounds). 0 when all of a
    response is copied; ``nan`` stays ``nan`` (no context)."""
    return [0.0 if share == 0 else share * score for score, share in zip(normalised, shares)]


#: The dimensions that read the response in its dialogue, and those that read the response alone.
IN_DIALOGUE, ALONE = ("context_coherence", CONSISTENCY), ("fluency", DIVERSITY)


def language_model_scores(config: HolisticEvalConfig, raw: RawScores, responses: Sequence[str]
                          ) -> dict[str, list[float]]:
    """Each item's normalised context coherence and fluency (Eq. 2 of the measure the config says), and its
    ``diversity`` when the config has that score's cutoffs, each credited with the share of the response that is
    its own (:func:`credited`)."""
    coherence = measured_coherence(config, raw.coherence, raw.fluency_of_coherence_tokens)
    scores = {name: credited(config.normalise(torch.tensor(values, dtype=torch.float64), name).tolist(), shares)
              for name, values, shares in zip(LM_SCORES, (coherence, raw.fluency),
                                              (raw.coherence_share, raw.fluency_share))}
    if config.diversity_cutoff is not None:
        # a copy adds nothing new: the share of the response that is its own, given all that precedes it
        shares = [fluency if math.isnan(coherence) else coherence
                  for coherence, fluency in zip(raw.coherence_share, raw.fluency_share)]
        scores[DIVERSITY] = credited([range_normalise(response_entropy(_as_read(config, response)),
                                                      config.diversity_cutoff, config.diversity_upper_cutoff)
                                      for response in responses], shares)
    return scores


def overall_scores(scores: Mapping[str, Sequence[float]]) -> list[float]:
    """Per item, the mean of two means: of its defined scores that read the response in its dialogue
    (:data:`IN_DIALOGUE`) and of those that read the response alone (:data:`ALONE`), so that how the response fits
    the dialogue weighs as much as its own form, however many scores each side has; the one side's mean when the
    other has none (an item without a context)."""
    sides = [[scores[name] for name in side if name in scores] for side in (IN_DIALOGUE, ALONE)]
    return [_nanmean([_nanmean([values[item] for values in side]) for side in sides if side])
            for item in range(len(next(iter(scores.values()))))]


def _as_read(config: HolisticEvalConfig, response: str) -> str:
    """The response's text as the LM reads it (detokenised when the config says so)."""
    return detokenize(response) if config.detokenize else response


def pointwise_mutual_information(coherence: Sequence[float], fluency: Sequence[float],
                                 weight: float = 1.0) -> list[float]:
    """``c_raw(r|q) − weight · f_raw(r)`` per item: with weight 1, how much likelier its query makes the response
    (``nan`` without one); a smaller weight keeps part of the response's own likelihood in the score."""
    return [c - weight * f for c, f in zip(coherence, fluency)]


def measured_coherence(config: HolisticEvalConfig, coherence: Sequence[float], fluency: Sequence[float]) -> list[float]:
    """Context coherence before normalisation, as ``config.context_coherence_measure`` says: ``c_raw(r|q)`` itself
    (Eq. 1), or its pointwise mutual information with the query, ``c_raw(r|q) − β · f_raw(r)`` (``β`` the config's
    ``pmi_weight``)."""
    if config.context_coherence_measure == "pmi":
        return pointwise_mutual_information(coherence, fluency, config.pmi_weight)
    return list(coherence)


def _responses(item: Mapping[str, Any]) -> list[str]:
    """What the system said in an item: a turn's response, or a dialogue's system utterances."""
    if "dialogue" in item:
        dialogue = list(item["dialogue"])
        return [dialogue[i] for i in system_turn_indices(len(dialogue), item.get("speakers"))]
    return [item["response"]]


def _nanmean(values: Sequence[float]) -> float:
    """The mean of the defined (non-nan) values; nan when none is."""
    defined = [value for value in values if not math.isnan(value)]
    return sum(defined) / len(defined) if defined else math.nan


def fit_cutoffs(model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]],
                responses: Sequence[str], percentile: float | None = None, reference: str | None = None,
                batch_size: int = 32) -> dict[str, float]:
    """Fit Eq. 2's bounds on a reference set of query–response pairs (never a benchmark that is scored):
    :func:`reference_cutoffs` at ``percentile`` (default: the config's), written into ``model.config`` with
    ``reference`` (what the set is) and returned."""
    if not responses:
        raise ValueError("fit_cutoffs needs reference pairs: none were given")
    config = model.config
    if percentile is not None:
        config.percentile = float(percentile)
    metric = HolisticEvalMetric(model, tokenizer, device=str(model.device), batch_size=batch_size)
    cutoffs = reference_cutoffs(config, metric.raw_scores(contexts, responses), responses)
    for name, value in cutoffs.items():
        setattr(config, f"{name}_cutoff", value)
    config.cutoff_reference = reference
    return cutoffs


def reference_cutoffs(config: HolisticEvalConfig, raw: RawScores, responses: Sequence[str]) -> dict[str, float]:
    """The bounds of Eq. 2 on a reference set's raw scores: the config's ``percentile``-th percentile of ``c_raw``
    (or of the PMI, with its ``(100 − percentile)``-th as the upper bound, as ``context_coherence_measure`` says), of
    ``f_raw``, and of the responses' own n-gram entropy (both percentiles: the ``diversity`` score's range)."""
    coherence = measured_coherence(config, raw.coherence, raw.fluency_of_coherence_tokens)
    entropy = [response_entropy(_as_read(config, response)) for response in responses]
    low, high = config.percentile, 100.0 - config.percentile
    cutoffs = {name: fit_percentile_cutoff(values, low, name)
               for name, values in zip(LM_SCORES, (coherence, raw.fluency))}
    if config.context_coherence_measure == "pmi":
        cutoffs["context_coherence_upper"] = fit_percentile_cutoff(coherence, high, "context_coherence")
    cutoffs["diversity"] = fit_percentile_cutoff(entropy, low, "diversity")
    cutoffs["diversity_upper"] = fit_percentile_cutoff(entropy, high, "diversity")
    if cutoffs["diversity"] == cutoffs["diversity_upper"]:  # the responses are all alike: no range to map
        raise ValueError(f"the reference responses' n-gram entropies have one value ({cutoffs['diversity']}) from "
                         f"their {low}th to their {high}th percentile: give more varied reference pairs")
    return cutoffs


def fit_pair_cutoffs(model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase, pairs: datasets.Dataset, source: str,
                     count: int | None = 2000, seed: int = 42, percentile: float | None = None,
                     batch_size: int = 32) -> dict[str, float]:
    """:func:`fit_cutoffs` on ``count`` query–response ``pairs`` (``context``, ``response`` columns) drawn with
    ``seed`` (:func:`~.data.drawn_pairs`), the reference named after ``source``, what the pairs are (DailyDialog's
    for every checkpoint here; a held-out share of a user's own dialogues)."""
    reference = drawn_pairs(pairs, count, seed)
    return fit_cutoffs(model, tokenizer, reference["context"], reference["response"], percentile,
                       reference=f"{source}, {len(reference)} query-response pairs (seed {seed})",
                       batch_size=batch_size)


def fit_dailydialog_cutoffs(model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase, split: str = "validation",
                            pairs: int = 2000, seed: int = 42, data_dir: str | None = None,
                            percentile: float | None = None, batch_size: int = 32) -> dict[str, float]:
    """:func:`fit_pair_cutoffs` on DailyDialog ``split``'s pairs: the reference set of every checkpoint here."""
    return fit_pair_cutoffs(model, tokenizer, load_lm_pairs(["dailydialog"], split, data_dir), f"dailydialog {split}",
                            pairs, seed, percentile, batch_size)


@torch.inference_mode()
def language_model_perplexity(model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase,
                              contexts: Sequence[Sequence[str]], responses: Sequence[str], batch_size: int = 32,
                              dtype: str | torch.dtype | None = None) -> dict[str, float]:
    """The LM's perplexity of each response given its query, in the checkpoint's layout, over the response's tokens
    only (what context coherence reads): per token (``token_perplexity``, comparable only between LMs that share a
    tokenizer and layout) and per word (``word_perplexity``: the same total log-likelihood over the number of
    whitespace words of the detokenised responses; comparable across tokenizers, layouts and detokenisation)."""
    encoding, coherence_rows, _ = encode_scoring_inputs(ensure_pad_token(tokenizer), contexts, responses,
                                                        model.config.max_seq_length,
                                                        Layout.of_config(tokenizer, model.config))
    rows = [row for row in coherence_rows if row is not None]
    total, tokens = 0.0, 0
    for indices in length_sorted_batches([len(encoding["input_ids"][row]) for row in rows], batch_size):
        batch = pad_rows([{key: values[rows[i]] for key, values in encoding.items()} for i in indices],
                         tokenizer.pad_token_id)
        batch = {key: value.to(model.device) for key, value in batch.items()}
        with autocast(model.device, resolve_dtype(dtype)):
            total += float(response_log_probs(model.lm, batch["input_ids"], batch["attention_mask"],
                                              batch["score_mask"], "sum").sum())
        tokens += int(batch["score_mask"].sum())
    words = sum(len(detokenize(response).split()) for response, row in zip(responses, coherence_rows)
                if row is not None)
    return {"token_perplexity": math.exp(-total / tokens), "word_perplexity": math.exp(-total / words),
            "sequences": len(rows), "tokens": tokens, "words": words}
