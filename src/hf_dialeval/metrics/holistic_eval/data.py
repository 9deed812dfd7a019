"""HolisticEval's data: the scoring inputs (one item → the response with its query and the response alone) and the
LM training corpus (query–response pairs, §4.3), in one of the causal-LM layouts of
:mod:`hf_dialeval.data.transcripts` (the config's ``prompt_format``), the same in training and scoring.

The response alone (fluency) is ``<bos> response`` in the ``special-tokens`` layout and ``A: response`` in
``speaker-tags``. Every response token is predicted and scored, the first one from what precedes it; a tag, a
separator or ``<eos>`` is never scored.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import benchmark_texts, normalised_text
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_topical_chat_for_training
from hf_dialeval.data.subsets import limited
from hf_dialeval.data.transcripts import Layout, newest_tokens, transcript_ids, utterance_ids
from hf_dialeval.errors import UnknownNameError

#: Where the training pairs can come from (``hf-dialeval train holistic-eval --corpora``).
LM_CORPORA = ("dailydialog", "dailydialog-plusplus", "topical-chat")
#: The benchmarks whose texts never enter LM training (a query, response or rated utterance of theirs).
HELD_OUT_BENCHMARKS = ("holistic-context", "holistic-fluency")
PAIR_FEATURES = datasets.Features({"context": datasets.Sequence(datasets.Value("string")),
                                   "response": datasets.Value("string")})


def encode_scoring_inputs(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]],
                          responses: Sequence[str], max_length: int, layout: Layout | None = None
                          ) -> tuple[dict[str, list[list[int]]], list[int | None], list[bool]]:
    """The language-model inputs that score each item in ``layout`` (default: ``special-tokens``): the response
    alone (fluency) for every item and the query followed by the response (context coherence) for each item with a
    context, with ``score_mask`` marking the response's tokens. Each within ``max_length`` tokens: the query's oldest
    tokens are cut first, the response's end only when it alone does not fit.

    Returns the inputs (fluency rows first, one per item, in item order; then the coherence rows), for each
    item the index of its coherence row (``None`` without a context), and whether anything of the item was cut.
    """
    layout = layout or Layout.of(tokenizer)
    rows: dict[str, list[list[int]]] = {"input_ids": [], "score_mask": []}
    joint_rows: dict[str, list[list[int]]] = {"input_ids": [], "score_mask": []}
    coherence_rows: list[int | None] = []
    truncated = []
    queries = transcript_ids(tokenizer, layout, contexts)
    for context, query, response in zip(contexts, queries, utterance_ids(tokenizer, layout, responses)):
        opener = [*layout.start, *layout.opener(0)]
        cut = len(response) > max_length - len(opener)
        response = response[: max_length - len(opener)]
        rows["input_ids"].append([*opener, *response])
        rows["score_mask"].append([0] * len(opener) + [1] * len(response))
        if not context:
            coherence_rows.append(None)
            truncated.append(cut)
            continue
        opener = layout.opener(len(context))
        response = response[: max_length - len(layout.start) - len(opener)]
        kept = newest_tokens(query, max_length - len(layout.start) - len(opener) - len(response))
        coherence_rows.append(len(responses) + len(joint_rows["input_ids"]))
        joint_rows["input_ids"].append([*layout.start, *kept, *opener, *response])
        joint_rows["score_mask"].append([0] * (len(layout.start) + len(kept) + len(opener)) + [1] * len(response))
        truncated.append(cut or len(kept) < len(query))
    for key in rows:
        rows[key] += joint_rows[key]
    rows["attention_mask"] = [[1] * len(ids) for ids in rows["input_ids"]]
    return rows, coherence_rows, truncated


def encode_training_pairs(tokenizer: PreTrainedTokenizerBase, pairs: datasets.Dataset, max_length: int,
                          layout: Layout | None = None) -> datasets.Dataset:
    """Query and response of each pair (``context``, ``response`` columns) as one sequence in ``layout`` (default:
    ``special-tokens``) for causal-LM training, every token a label (§4.3: queries and responses concatenated as one
    sequence); the query's oldest tokens are cut first, and ``truncated`` says whether any was."""
    layout = layout or Layout.of(tokenizer)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        encoded, truncated = [], []
        queries = transcript_ids(tokenizer, layout, batch["context"])
        for context, query, whole_response in zip(batch["context"], queries,
                                                  utterance_ids(tokenizer, layout, batch["response"])):
            opener = layout.opener(len(context))
            room = max_length - len(layout.start) - len(opener) - len(layout.end)
            response = whole_response[:room]
            kept = newest_tokens(query, room - len(response))
            middle = [*kept, *opener] if context else [*layout.opener(0)]
            encoded.append([*layout.start, *middle, *response, *layout.end])
            truncated.append(len(response) < len(whole_response) or bool(context) and len(kept) < len(query))
        return {"input_ids": encoded, "attention_mask": [[1] * len(ids) for ids in encoded],
                "labels": [list(ids) for ids in encoded], "truncated": truncated}

    return pairs.map(encode, batched=True, remove_columns=pairs.column_names, desc="encoding pairs")


def held_out_texts(data_dir: str | os.PathLike | None = None) -> set[str]:
    """Every text of the benchmarks in :data:`HELD_OUT_BENCHMARKS` (whitespace-normalised): a training pair holding
    one is left out, so that the LM has not read what it is then scored on (e.g. 42 of holistic-fluency's rated
    responses are DailyDialog train utterances)."""
    return benchmark_texts(HELD_OUT_BENCHMARKS, data_dir)


def dialogue_pairs(dialogues: Iterable[Sequence[str]]) -> list[dict[str, object]]:
    """The query–response pairs of ``dialogues`` (§4.3): each utterance after the first, with the one before it."""
    return [{"context": [dialogue[i - 1]], "response": dialogue[i]}
            for dialogue in dialogues for i in range(1, len(dialogue))]


def pair_dataset(pairs: Iterable[dict[str, object]], held_out: Collection[str] = frozenset()) -> datasets.Dataset:
    """``pairs`` as a dataset of :data:`PAIR_FEATURES`, without a pair whose response is empty or that holds a text of
    ``held_out`` (whitespace-normalised texts: :func:`held_out_texts`)."""
    kept = [pair for pair in pairs if pair["response"] and normalised_text(pair["response"]) not in held_out
            and not any(normalised_text(u) in held_out for u in pair["context"])]
    return datasets.Dataset.from_list(kept, features=PAIR_FEATURES)


def load_lm_pairs(corpora: Sequence[str], split: str = "train", data_dir: str | os.PathLike | None = None
                  ) -> datasets.Dataset:
    """Query–response pairs (:func:`dialogue_pairs`) for LM training, from ``corpora``
    (:data:`LM_CORPORA`): DailyDialog's ``split``; DailyDialog++ (``split``'s contexts, each followed by its
    positive responses); Topical-Chat (its four released splits for ``train``, with every conversation that shares
    an utterance with a USR-Topical context left out; none otherwise). Pairs holding a text of a held-out
    benchmark (:func:`held_out_texts`) are left out."""
    unknown = [name for name in corpora if name not in LM_CORPORA]
    if unknown:
        raise UnknownNameError(f"unknown LM corpora {unknown}: choose from {list(LM_CORPORA)}")
    pairs: list[dict[str, object]] = []
    if "dailydialog" in corpora:
        pairs += dialogue_pairs(load_dailydialog(split, data_dir)["dialogue"])
    if "dailydialog-plusplus" in corpora:
        for row in load_dailydialog_plusplus(split, data_dir):
            pairs += dialogue_pairs([row["context"]])
            pairs += [{"context": row["context"][-1:], "response": positive} for positive in row["positive_responses"]]
    if "topical-chat" in corpora and split == "train":
        pairs += dialogue_pairs(load_topical_chat_for_training(data_dir)["dialogue"])
    return pair_dataset(pairs, held_out_texts(data_dir))


def drawn_pairs(pairs: datasets.Dataset, count: int | None, seed: int) -> datasets.Dataset:
    """``count`` of ``pairs`` drawn with ``seed`` (all of them when ``count`` is ``None`` or 0, or they are fewer)."""
    return limited(pairs.shuffle(seed=seed), count) if count else pairs


def dailydialog_pairs(split: str, count: int | None = None, seed: int = 42,
                      data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """DailyDialog ``split``'s query–response pairs (:func:`load_lm_pairs`): all of them, or ``count`` drawn with
    ``seed`` (:func:`drawn_pairs`: the pairs whose loss is logged during training, the test pairs)."""
    return drawn_pairs(load_lm_pairs(["dailydialog"], split, data_dir), count, seed)
