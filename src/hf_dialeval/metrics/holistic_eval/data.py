"""HolisticEval's data: the language model's input layout, the scoring inputs (one item → the response with its
query and the response alone), and the LM training corpus (query–response pairs, §4.3).

Layout, for every family: ``<bos> query <sep> response <eos>``, where the query's utterances are joined by
``<sep>`` too. ``<bos>`` is the tokenizer's BOS token (GPT-2's ``<|endoftext|>``), else its CLS token (BERT's
``[CLS]``); ``<sep>`` is its SEP token, else its EOS token (GPT-2: ``<|endoftext|>``, the turn separator DialoGPT
uses); ``<eos>`` is its EOS token, else ``<sep>``. The response alone (fluency) is ``<bos> response``: every
response token is predicted, the first one from ``<bos>`` alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import benchmark_texts, normalised_text
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_topical_chat_for_training

#: Where the training pairs can come from (``hf-dialeval train holistic-eval --corpora``).
LM_CORPORA = ("dailydialog", "dailydialog-plusplus", "topical-chat")
#: The benchmarks whose texts never enter LM training (a query, response or rated utterance of theirs).
HELD_OUT_BENCHMARKS = ("holistic-context", "holistic-fluency")
PAIR_FEATURES = datasets.Features({"context": datasets.Sequence(datasets.Value("string")),
                                   "response": datasets.Value("string")})


@dataclass(frozen=True)
class SpecialTokens:
    """The ids of ``<bos>``, ``<sep>`` and ``<eos>`` of :mod:`this layout <hf_dialeval.metrics.holistic_eval.data>`."""

    bos: int
    sep: int
    eos: int

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase) -> SpecialTokens:
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if bos is None or sep is None:
            raise ValueError(f"{type(tokenizer).__name__} has neither a BOS nor a CLS token, or neither a SEP nor an "
                             "EOS token: HolisticEval needs one of each to mark where a query and a response start")
        return cls(bos, sep, tokenizer.eos_token_id if tokenizer.eos_token_id is not None else sep)


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """GPT-2 has no padding token: pad with its EOS token (padding is masked out of attention and of every
    score and loss, so which id fills it does not matter)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _utterance_ids(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str]) -> list[list[int]]:
    return tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []


def _query_ids(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]], sep: int) -> list[list[int]]:
    """Each context's utterances as one query, joined by ``<sep>`` (all utterances tokenised in one call)."""
    utterance_ids = iter(_utterance_ids(tokenizer, [utterance for context in contexts for utterance in context]))
    queries = []
    for context in contexts:
        query: list[int] = []
        for position in range(len(context)):
            query += ([sep] if position else []) + next(utterance_ids)
        queries.append(query)
    return queries


def _newest(query: list[int], budget: int) -> list[int]:
    """The newest ``budget`` tokens of ``query`` (its oldest are cut first; nothing for a budget below 1)."""
    return query[max(len(query) - budget, 0) :] if budget > 0 else []


def encode_scoring_inputs(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]],
                          responses: Sequence[str], max_length: int
                          ) -> tuple[dict[str, list[list[int]]], list[int | None], list[bool]]:
    """The language-model inputs that score each item: ``<bos> response`` (fluency) for every item and
    ``<bos> query <sep> response`` (context coherence) for each item with a context, with ``score_mask`` marking
    the response's tokens. Each within ``max_length`` tokens: the query's oldest tokens are cut first, the
    response's end only when it alone does not fit.

    Returns the inputs (fluency rows first, one per item, in item order; then the coherence rows), for each
    item the index of its coherence row (``None`` without a context), and whether anything of the item was cut.
    """
    special = SpecialTokens.of(tokenizer)
    rows: dict[str, list[list[int]]] = {"input_ids": [], "score_mask": []}
    joint_rows: dict[str, list[list[int]]] = {"input_ids": [], "score_mask": []}
    coherence_rows: list[int | None] = []
    truncated = []
    queries = _query_ids(tokenizer, contexts, special.sep)
    for context, query, response in zip(contexts, queries, _utterance_ids(tokenizer, responses)):
        cut = len(response) > max_length - 1
        response = response[: max_length - 1]
        rows["input_ids"].append([special.bos, *response])
        rows["score_mask"].append([0] + [1] * len(response))
        if not context:
            coherence_rows.append(None)
            truncated.append(cut)
            continue
        response = response[: max_length - 2]
        kept = _newest(query, max_length - 2 - len(response))  # room for <bos> and the <sep> before the response
        coherence_rows.append(len(responses) + len(joint_rows["input_ids"]))
        joint_rows["input_ids"].append([special.bos, *kept, special.sep, *response])
        joint_rows["score_mask"].append([0] * (len(kept) + 2) + [1] * len(response))
        truncated.append(cut or len(kept) < len(query))
    for key in rows:
        rows[key] += joint_rows[key]
    rows["attention_mask"] = [[1] * len(ids) for ids in rows["input_ids"]]
    return rows, coherence_rows, truncated


def encode_training_pairs(tokenizer: PreTrainedTokenizerBase, pairs: datasets.Dataset, max_length: int
                          ) -> datasets.Dataset:
    """``<bos> query <sep> response <eos>`` per pair (``context``, ``response`` columns) for causal-LM training,
    every token a label (§4.3: queries and responses concatenated as one sequence); the query's oldest tokens are
    cut first."""
    special = SpecialTokens.of(tokenizer)

    def encode(batch: dict[str, list]) -> dict[str, list[list[int]]]:
        encoded = []
        queries = _query_ids(tokenizer, batch["context"], special.sep)
        for context, query, response in zip(batch["context"], queries, _utterance_ids(tokenizer, batch["response"])):
            response = response[: max_length - 3]
            middle = [*_newest(query, max_length - 3 - len(response)), special.sep] if context else []
            encoded.append([special.bos, *middle, *response, special.eos])
        return {"input_ids": encoded, "attention_mask": [[1] * len(ids) for ids in encoded],
                "labels": [list(ids) for ids in encoded]}

    return pairs.map(encode, batched=True, remove_columns=pairs.column_names, desc="encoding pairs")


def held_out_texts(data_dir: str | os.PathLike | None = None) -> set[str]:
    """Every text of the benchmarks in :data:`HELD_OUT_BENCHMARKS` (whitespace-normalised): a training pair holding
    one is left out, so that the LM has not read what it is then scored on (e.g. 42 of holistic-fluency's rated
    responses are DailyDialog train utterances)."""
    return benchmark_texts(HELD_OUT_BENCHMARKS, data_dir)


def _consecutive_pairs(dialogues: Iterable[Sequence[str]]) -> list[dict[str, object]]:
    return [{"context": [dialogue[i - 1]], "response": dialogue[i]}
            for dialogue in dialogues for i in range(1, len(dialogue))]


def load_lm_pairs(corpora: Sequence[str], split: str = "train", data_dir: str | os.PathLike | None = None
                  ) -> datasets.Dataset:
    """Query–response pairs (each utterance and the one before it) for LM training, from ``corpora``
    (:data:`LM_CORPORA`): DailyDialog's ``split``; DailyDialog++ (``split``'s contexts, each followed by its
    positive responses); Topical-Chat (its four released splits for ``train``, with every conversation that shares
    an utterance with a USR-Topical context left out; none otherwise). Pairs holding a text of a held-out
    benchmark (:func:`held_out_texts`) are left out."""
    unknown = [name for name in corpora if name not in LM_CORPORA]
    if unknown:
        raise ValueError(f"unknown LM corpora {unknown}: choose from {list(LM_CORPORA)}")
    pairs: list[dict[str, object]] = []
    if "dailydialog" in corpora:
        pairs += _consecutive_pairs(load_dailydialog(split, data_dir)["dialogue"])
    if "dailydialog-plusplus" in corpora:
        for row in load_dailydialog_plusplus(split, data_dir):
            pairs += _consecutive_pairs([row["context"]])
            pairs += [{"context": row["context"][-1:], "response": positive} for positive in row["positive_responses"]]
    if "topical-chat" in corpora and split == "train":
        pairs += _consecutive_pairs(load_topical_chat_for_training(data_dir)["dialogue"])
    held_out = held_out_texts(data_dir)
    kept = [pair for pair in pairs if pair["response"] and normalised_text(pair["response"]) not in held_out
            and not any(normalised_text(u) in held_out for u in pair["context"])]
    return datasets.Dataset.from_list(kept, features=PAIR_FEATURES)


def dailydialog_pairs(split: str, count: int | None = None, seed: int = 42,
                      data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """DailyDialog ``split``'s query–response pairs (:func:`load_lm_pairs`): all of them, or ``count`` drawn with
    ``seed`` (the reference set of the cutoffs, the pairs whose loss is logged during training)."""
    pairs = load_lm_pairs(["dailydialog"], split, data_dir)
    return pairs.shuffle(seed=seed).select(range(min(count, len(pairs)))) if count else pairs
