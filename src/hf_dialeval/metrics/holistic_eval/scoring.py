"""HolisticEval as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level): context coherence and fluency from
its language model, normalised by the checkpoint's percentile cutoffs (Eq. 1–3), and logical self-consistency from
an NLI model when one is given (§3.4); plus what fits and checks the language model (cutoffs, perplexity)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import datasets
import torch
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.model import system_turn_indices
from hf_dialeval.data.text import detokenize
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.inference.model_metric import ModelMetric, autocast, pad_rows, resolve_dtype
from hf_dialeval.inference.score_output import OVERALL, ScoreOutput
from hf_dialeval.metrics.holistic_eval import ENTRY
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import LM_SCORES, HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.data import drawn_pairs, encode_scoring_inputs, load_lm_pairs
from hf_dialeval.metrics.holistic_eval.diversity import diversity_scores
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel, response_log_probs
from hf_dialeval.modeling.calibration import fit_percentile_cutoff
from hf_dialeval.modeling.loading import load_checkpoint

CONSISTENCY = "consistency"
#: The system name of items that give none (their system-level scores pool them all).
ALL_SYSTEMS = "all"



class HolisticEvalMetric(ModelMetric):
    """HolisticEval's turn-level scores, each in [0, 1], higher is better:

    * ``context_coherence``: c(r|q) (Eq. 1–2), the response's mean token log-probability given the context (its
      utterances, oldest cut first when too long), normalised by the checkpoint's cutoff; ``nan`` for an item
      without a context (an utterance-level item: only its fluency is defined);
    * ``fluency``: f(r) (Eq. 3), the same without the context;
    * ``consistency`` (with ``nli_checkpoint``): 1 − the mean NLI contradiction probability of the response against
      each earlier utterance of its speaker (§3.4); ``nan`` when the speaker said nothing before;
    * ``overall``: the mean of the item's defined scores.

    Both language-model inputs of an item (with and without its context) go through the model in the same batch.
    """

    name, level = ENTRY.name, ENTRY.level
    #: An empty response: the lowest normalised score (at or below the 5th percentile).
    lowest_score = 0.0
    system_level = True

    model: HolisticEvalModel

    def __init__(self, model: HolisticEvalModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, nli: Any = None,
                 dtype: str | torch.dtype | None = None) -> None:
        super().__init__(model, ensure_pad_token(tokenizer), device=device, batch_size=batch_size, checkpoint=checkpoint,
                         dtype=dtype)
        self.nli = nli
        self.dimensions = LM_SCORES + ((CONSISTENCY,) if nli is not None else ())

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

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        config = self.model.config
        settings.update(percentile=config.percentile, context_coherence_cutoff=config.context_coherence_cutoff,
                        fluency_cutoff=config.fluency_cutoff)
        if config.context_coherence_measure != "likelihood":
            settings.update(context_coherence_measure=config.context_coherence_measure,
                            context_coherence_upper_cutoff=config.context_coherence_upper_cutoff,
                            pmi_weight=config.pmi_weight)
        if self.nli is not None:
            settings["nli_checkpoint"] = self.nli.checkpoint
        return settings

    def item_batches(self, encoding: Mapping[str, Sequence[Sequence[int]]], coherence_rows: Sequence[int | None]
                     ) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
        """The rows of :func:`~.data.encode_scoring_inputs` padded in batches of ``batch_size`` items of similar
        length, both rows of an item (with and without its context) in the same batch; each with its row indices."""
        groups = [[item] + ([row] if row is not None else []) for item, row in enumerate(coherence_rows)]
        lengths = [max(len(encoding["input_ids"][row]) for row in group) for group in groups]
        for items in length_sorted_batches(lengths, self.batch_size):
            rows = [row for item in items for row in groups[item]]
            yield rows, pad_rows([{key: values[row] for key, values in encoding.items()} for row in rows],
                                 self.tokenizer.pad_token_id)

    @torch.inference_mode()
    def raw_scores(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]
                   ) -> tuple[list[float], list[float], list[bool]]:
        """``c_raw(r|q)`` (``nan`` without a context) and ``f_raw(r)`` per item, and whether anything was cut:
        the mean log-probabilities before Eq. 2."""
        encoding, coherence_rows, truncated = encode_scoring_inputs(
            self.tokenizer, contexts, responses, self.model.config.max_seq_length,
            Layout.of_config(self.tokenizer, self.model.config))
        raw = torch.full((len(encoding["input_ids"]),), math.nan)
        for rows, batch in self.item_batches(encoding, coherence_rows):
            with autocast(self.device, self.dtype):
                scores = self.model(**{key: value.to(self.device) for key, value in batch.items()}).scores
            raw[rows] = scores.float().cpu()
        fluency = raw[: len(responses)].tolist()
        coherence = [raw[row].item() if row is not None else math.nan for row in coherence_rows]
        self.check_finite([[f] if row is None else [f, c] for f, c, row in zip(fluency, coherence, coherence_rows)])
        return coherence, fluency, truncated

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
        coherence_raw, fluency_raw, truncated = self.raw_scores(contexts, responses)
        coherence_raw = measured_coherence(self.model.config, coherence_raw, fluency_raw)
        scores = {name: self.model.normalise(torch.tensor(raw, dtype=torch.float64), name).tolist()
                  for name, raw in zip(LM_SCORES, (coherence_raw, fluency_raw))}
        if self.nli is not None:
            scores[CONSISTENCY] = self.nli.score(contexts, responses)
        overall = [_nanmean(values) for values in zip(*scores.values())]
        return ScoreOutput(scores=scores, overall=overall, truncated=truncated)


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
    """Fit Eq. 2's lower bounds on a reference set of query–response pairs (never a benchmark that is scored):
    the ``percentile``-th percentile (default: the config's) of ``c_raw`` (or of the PMI, with its ``(100 −
    percentile)``-th as the upper cutoff, as ``context_coherence_measure`` says) and of ``f_raw``, written into
    ``model.config`` with ``reference`` (what the set is) and returned."""
    if not responses:
        raise ValueError("fit_cutoffs needs reference pairs: none were given")
    config = model.config
    if percentile is not None:
        config.percentile = float(percentile)
    metric = HolisticEvalMetric(model, tokenizer, device=str(model.device), batch_size=batch_size)
    coherence, fluency, _ = metric.raw_scores(contexts, responses)
    coherence = measured_coherence(config, coherence, fluency)
    cutoffs = {}
    for name, raw in zip(LM_SCORES, (coherence, fluency)):
        cutoffs[name] = fit_percentile_cutoff(raw, config.percentile, name)
        setattr(config, f"{name}_cutoff", cutoffs[name])
    if config.context_coherence_measure == "pmi":
        cutoffs["context_coherence_upper"] = fit_percentile_cutoff(coherence, 100.0 - config.percentile,
                                                                   "context_coherence")
        config.context_coherence_upper_cutoff = cutoffs["context_coherence_upper"]
    config.cutoff_reference = reference
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
