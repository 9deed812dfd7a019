"""Dial-M as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level): Eq. 1's mean keyword cross-entropy, oriented
so that higher is better, with the masked keywords and their losses on request (the paper's §5)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import DataCollatorForTokenClassification, PreTrainedTokenizerBase

from hf_dialeval.data.model import item_list
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.inference.metric import check_lengths
from hf_dialeval.inference.model_metric import ModelMetric, autocast, pad_rows
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.inference.shared_prefixes import continuation_log_probs, runs_shared_prefixes
from hf_dialeval.metrics.dial_m import ENTRY, check_variant
from hf_dialeval.metrics.dial_m.data import (
    KeywordRows,
    add_eou_token,
    causal_keyword_rows,
    masked_keyword_copies,
    scored_keywords,
)
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel, keyword_mean_losses

#: The score of an empty response: a keyword loss of 100 nats, beyond any a real prediction gets (guessing uniformly
#: among 50,000 tokens costs 10.8).
LOWEST_SCORE = -100.0
#: How much of the response-alone keyword loss each variant's score subtracts from Eq. 1's: none (Eq. 1), all of it
#: (context gain). Weights between are MMI-antiLM scores (``benchmarks/dial_m/studies/context_weight.py``).
ALONE_LOSS_WEIGHTS = {"eq1": 0.0, "context-gain": 1.0}



@dataclass(frozen=True)
class KeywordLoss:
    """One masked keyword occurrence of a response, the cross-entropy of predicting its tokens, and whether it lies in
    a copy of what was said before it (the config's ``copy_span``)."""

    word: str
    loss: float
    copied: bool = False


class DialMMetric(ModelMetric):
    """Dial-M's turn-level score ``dial_m``, higher is better: minus Eq. 1, the mean over the response's keywords of
    the cross-entropy of each keyword's tokens, masked on its own, given the context and the condition (persona,
    knowledge) when the item has one. ``dial_m_loss`` (:meth:`losses`) is the paper's raw value (lower is better).

    ``variant="context-gain"`` scores instead how much the context and condition lower those losses (the loss of the
    response alone minus the loss with them; higher is better): this package's option, not Eq. 1. Without
    ``variant`` the checkpoint's own is used (its config's ``variant``: Eq. 1 unless the checkpoint says otherwise;
    the offline default's is context gain).

    With the config's ``copy_span``, a keyword occurrence that copies the dialogue before it or the response's own
    earlier words scores :data:`LOWEST_SCORE` (:func:`keyword_scores`): a copy cannot answer for the keyword it
    repeats, so an echo or a turn said again scores as an empty reply, and a loop the share of it that is new.

    Every keyword-masked copy of every item runs in the same length-sorted batches (``batch_size`` copies each). On a
    causal LM (the config's ``lm_kind``), each item is one input whose keywords are all scored in one forward pass
    (``batch_size`` items a batch). An empty response scores :data:`LOWEST_SCORE`."""

    name, level = ENTRY.name, ENTRY.level
    dimensions = ("dial_m",)
    lowest_score = LOWEST_SCORE

    model: DialMModel

    def __init__(self, model: DialMModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, variant: str | None = None,
                 dtype: str | torch.dtype | None = None, return_keywords: bool = False) -> None:
        #: the score given: ``variant`` when asked for, else the checkpoint's own (its config's ``variant``)
        self.variant = check_variant(variant if variant is not None else model.config.variant)
        super().__init__(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype)
        #: whether the output's ``details["keywords"]`` gives each response's keywords and their losses (the same
        #: forward passes as the score: a reading of it, as the paper's §5)
        self.return_keywords = return_keywords
        config = model.config
        if config.lm_kind == "causal-lm":
            self.layout = Layout.of(ensure_pad_token(tokenizer), "speaker-tags", config.detokenize)
            self.collator = functools.partial(pad_rows, pad_token_id=tokenizer.pad_token_id)
            #: which words of a response a causal LM scores: Eq. 1's keywords (a study may score others)
            self.word_choice = scored_keywords(config.max_keywords, config.keyword_pos_tags)
        else:
            self.eou = config.eou_token_id if config.eou_token_id is not None else add_eou_token(tokenizer, None)[0]
            self.collator = DataCollatorForTokenClassification(tokenizer, return_tensors="pt")

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        config = self.model.config
        settings.update(variant=self.variant, max_keywords=config.max_keywords, eou_token=config.eou_token,
                        copy_span=config.copy_span)
        return settings

    def keyword_losses(self, contexts: Sequence[Sequence[str]], responses: Sequence[str],
                       conditions: Sequence[str | None] | None = None) -> tuple[list[list[KeywordLoss]], list[bool]]:
        """Per item, each masked keyword occurrence of its response with its loss (in the response's order; the
        paper's §5 reading of a score), and whether anything of the item was cut to fit."""
        contexts, responses = item_list(contexts, "contexts"), item_list(responses, "responses")
        conditions = item_list(conditions, "conditions") if conditions is not None else [None] * len(responses)
        check_lengths(len(responses), "responses", contexts=contexts, conditions=conditions)
        return self._keyword_losses(contexts, responses, conditions)

    def _keyword_losses(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None]
                        ) -> tuple[list[list[KeywordLoss]], list[bool]]:
        """:meth:`keyword_losses` of items already checked (``score`` checks them once)."""
        causal = self.model.config.lm_kind == "causal-lm"
        found, truncated = (self._causal_keyword_losses if causal else self._masked_keyword_losses)(
            contexts, responses, conditions)
        # before a response's mean loss is taken, whose nan means "no keyword" (and scores the lowest)
        self.check_finite([[keyword.loss for keyword in keywords] for keywords in found])
        return found, truncated

    def _masked_keyword_losses(self, contexts: list[list[str]], responses: list[str],
                               conditions: list[str | None]) -> tuple[list[list[KeywordLoss]], list[bool]]:
        config = self.model.config
        copies = masked_keyword_copies(self.tokenizer, contexts, responses, conditions, self.eou,
                                       config.max_seq_length, config.max_keywords, config.keyword_pos_tags,
                                       config.copy_span)
        found: list[list[KeywordLoss]] = [[] for _ in responses]
        if copies.owners:
            losses = self.forward_rows(lambda **batch: self.model(**batch).scores, copies.rows)
            for owner, word, loss, copied in zip(copies.owners, copies.words, losses.tolist(), copies.copied):
                found[owner].append(KeywordLoss(word, loss, copied))
        return found, copies.truncated

    def _causal_keyword_losses(self, contexts: list[list[str]], responses: list[str],
                               conditions: list[str | None]) -> tuple[list[list[KeywordLoss]], list[bool]]:
        config = self.model.config
        found = causal_keyword_rows(self.tokenizer, self.layout, contexts, responses, conditions, config.max_seq_length,
                                    self.word_choice, config.copy_span)
        losses: list[list[KeywordLoss]] = [[] for _ in responses]
        if found.owners:
            rows = self._shared_prefix_keyword_losses(found) if runs_shared_prefixes(
                self.model.lm, config.max_seq_length) else self._whole_row_keyword_losses(found)
            for owner, words, copied, row in zip(found.owners, found.words, found.copied, rows):
                losses[owner] = [KeywordLoss(*keyword) for keyword in zip(words, row, copied)]
        return losses, found.truncated

    def _whole_row_keyword_losses(self, found: KeywordRows) -> list[list[float]]:
        """Per row of ``found``, each keyword's loss (``nan`` for one cut away), each row run whole."""
        width = max(len(words) for words in found.words)  # one width for every batch, so that rows stack

        def keyword_losses(**batch: torch.Tensor) -> torch.Tensor:
            batch_losses = self.model(**batch).keyword_losses
            return F.pad(batch_losses, (0, width - batch_losses.shape[1]), value=math.nan)

        return [row[: len(words)] for row, words in zip(self.forward_rows(keyword_losses, found.rows).tolist(),
                                                          found.words)]

    @torch.inference_mode()
    def _shared_prefix_keyword_losses(self, found: KeywordRows) -> list[list[float]]:
        """:meth:`_whole_row_keyword_losses` with what precedes each response (its condition and context, or the
        response alone's speaker tag) run once for every reply that shares it, the replies after it in one row
        (:func:`~hf_dialeval.inference.shared_prefixes.continuation_log_probs`), their keyword tokens projected in
        fp32 as the model's forward projects them."""
        # a first token has no position it is predicted at, in a whole row neither
        starts = [max(start, 1) for start in found.response_starts]
        prefixes: dict[tuple[int, ...], int] = {}
        continuations, scored = [], []
        for ids, labels, start in zip(found.rows["input_ids"], found.rows["labels"], starts):
            continuations.append((prefixes.setdefault(tuple(ids[:start]), len(prefixes)), ids[start:]))
            scored.append([label != -100 for label in labels[start:]])
        with autocast(self.device, self.dtype):
            values = continuation_log_probs(self.model.lm, [list(prefix) for prefix in prefixes], continuations,
                                            self.batch_size, self.tokenizer.pad_token_id, scored, full_precision=True)
        # each keyword's mean loss over its tokens, as the model's forward takes it
        rows = [row for row, log_probs in enumerate(values) for _ in log_probs]
        numbers = [number for ids, start in zip(found.rows["keyword_ids"], starts) for number in ids[start:] if number]
        losses = keyword_mean_losses(-torch.tensor([value for log_probs in values for value in log_probs]),
                                     torch.tensor(rows, dtype=torch.long), torch.tensor(numbers, dtype=torch.long),
                                     len(values), max(len(words) for words in found.words))
        return [row[: len(words)] for row, words in zip(losses.tolist(), found.words)]

    def losses(self, contexts: Sequence[Sequence[str]], responses: Sequence[str],
               conditions: Sequence[str | None] | None = None) -> tuple[list[float], list[bool]]:
        """``dial_m_loss`` per item (Eq. 1: the mean of its keyword losses; lower is better) and whether anything
        was cut. ``nan`` for a response without a word."""
        found, truncated = self.keyword_losses(contexts, responses, conditions)
        return _mean_losses(found), truncated

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        found, truncated = self._keyword_losses(contexts, responses, conditions)
        weight = ALONE_LOSS_WEIGHTS[self.variant]
        alone = self._keyword_losses([[] for _ in responses], responses, [None] * len(responses))[0] \
            if weight else [[] for _ in responses]
        scores = keyword_scores(found, alone, weight)
        details = {"keywords": [[{"word": k.word, "loss": k.loss, "copied": k.copied} for k in keywords]
                                for keywords in found]} if self.return_keywords else {}
        return ScoreOutput(scores={"dial_m": scores}, overall=list(scores), truncated=truncated, details=details)


def weighted_scores(losses: Sequence[float], alone: Sequence[float], weight: float) -> list[float]:
    """``weight · L_alone − L_ctx`` per item, from its keyword loss given the context and condition (``losses``) and
    the same keywords' loss in the response alone (``alone``); :data:`LOWEST_SCORE` for a response without a word."""
    scores = [weight * alone_loss - loss for loss, alone_loss in zip(losses, alone)]
    return [LOWEST_SCORE if math.isnan(score) else score for score in scores]


def keyword_scores(found: Sequence[Sequence[KeywordLoss]], alone: Sequence[Sequence[KeywordLoss]], weight: float
                   ) -> list[float]:
    """Each item's score from its keyword losses given the context and condition (``found``) and the same keywords'
    in the response alone (``alone``; unused, and may be empty, where ``weight`` is 0): :func:`weighted_scores` of
    the means over the keywords the response says of its own, and :data:`LOWEST_SCORE` for each occurrence in a copy
    (``KeywordLoss.copied``), as for a response without a keyword: the mean of the two, weighed by how many."""
    scores = []
    for keywords, alone_keywords in zip(found, alone):
        own = [index for index, keyword in enumerate(keywords) if not keyword.copied]
        if not own:  # no keyword, or every one copied
            scores.append(LOWEST_SCORE)
            continue
        # the same response's keywords in the same order: alone, a response is cut no sooner than with its context
        alone_loss = 0.0
        if weight:
            own_alone = alone_keywords if len(own) == len(keywords) else [alone_keywords[index] for index in own]
            alone_loss = _mean_losses([own_alone])[0]
        own_score = weighted_scores(_mean_losses([[keywords[index] for index in own]]), [alone_loss], weight)[0]
        copies = len(keywords) - len(own)
        scores.append((len(own) * own_score + copies * LOWEST_SCORE) / len(keywords) if copies else own_score)
    return scores


def _mean_losses(found: Sequence[Sequence[KeywordLoss]]) -> list[float]:
    """Eq. 1 per item: the mean of its keyword losses (``nan`` for a response without a keyword)."""
    return [math.fsum(k.loss for k in keywords) / len(keywords) if keywords else math.nan for keywords in found]
