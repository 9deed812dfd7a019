"""Training examples for the two QuantiDCE stages, built with ``datasets.map``, and their padding collators.

* MLR pre-training: one example per context holding all its ``(context, response)`` pairs (L levels of K
  responses in the paper), ordered level by level from the least coherent (DailyDialog++: random negatives,
  adversarial negatives, positives), so that one forward pass scores them all.
* KD fine-tuning: one example per human-rated ``(context, response, score)`` pair.
* Response selection (this package's addition): one example per turn of a dialogue, its context, its human reply
  and its hard negatives, as text; the collator pairs every context of a batch with every reply and negative of
  the batch and encodes those pairs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import torch
from transformers import PreTrainedTokenizerBase

from hf_dialeval.inference.model_metric import encode_context_response

#: DailyDialog++ response columns from the least to the most coherent level (paper §4.1: L = 3).
DAILYDIALOG_PLUSPLUS_LEVELS = ("random_negative_responses", "adversarial_negative_responses", "positive_responses")


def responses_by_level(row: dict[str, Any], level_columns: Sequence[str] = DAILYDIALOG_PLUSPLUS_LEVELS
                       ) -> tuple[list[str], list[int]]:
    """A context's responses, level by level from the least coherent, and the level (0 … L−1) of each."""
    responses = [response for column in level_columns for response in row[column]]
    levels = [level for level, column in enumerate(level_columns) for _ in row[column]]
    return responses, levels


#: The levels MLR pre-training builds from a user's dialogues (:func:`dialogue_levels`), least coherent first.
DIALOGUE_LEVELS = ("random_responses", "later_turn_responses", "human_responses")


def dialogue_levels(dialogues: datasets.Dataset, random_responses: int = 5, seed: int = 42) -> datasets.Dataset:
    """MLR contexts with the paper's three levels (random < adversarial < reference, §4.1) as far as dialogues
    without labels allow, from a dataset of dialogues (a ``dialogue`` column of utterances): every turn after the
    first whose speaker speaks again later in the dialogue is a ``context`` (the utterances before it) with its
    human reply (the reference level), a later turn of the same speaker, drawn with ``seed`` (the adversarial
    level: DailyDialog++'s adversarial responses are written by people to share the context's topic without
    answering it, which a turn said later in the same conversation does) and ``random_responses`` utterances of
    other dialogues, drawn with ``seed`` (the random level). Turns whose speaker does not speak again are left
    out: their adversarial level would be empty."""
    if "dialogue" not in dialogues.column_names:
        raise ValueError(f"the dataset needs a 'dialogue' column of utterances; it has {dialogues.column_names}")
    pool = [(index, utterance) for index, dialogue in enumerate(dialogues["dialogue"]) for utterance in dialogue]

    def draw_random(rng: random.Random, index: int, reply: str) -> list[str]:
        drawn: list[str] = []
        for _ in range(100 * random_responses):  # bounded: a corpus of one dialogue has no random response
            other, utterance = pool[rng.randrange(len(pool))]
            if other != index and utterance != reply:
                drawn.append(utterance)
                if len(drawn) == random_responses:
                    return drawn
        raise ValueError(f"dialogue {index} has no {random_responses} utterances of other dialogues to draw random "
                         "responses from: MLR levels need several different dialogues")

    def contexts(batch: dict[str, list[Any]], indices: list[int]) -> dict[str, list[Any]]:
        rows: dict[str, list[Any]] = {"context": [], **{column: [] for column in DIALOGUE_LEVELS}}
        for dialogue, index in zip(batch["dialogue"], indices):
            rng = random.Random(f"{seed}-{index}")
            for position in range(1, len(dialogue)):
                reply = dialogue[position]
                later = [turn for turn in dialogue[position + 2::2] if turn != reply]
                if not later:
                    continue
                rows["context"].append(dialogue[:position])
                rows[DIALOGUE_LEVELS[0]].append(draw_random(rng, index, reply))
                rows[DIALOGUE_LEVELS[1]].append([rng.choice(later)])
                rows[DIALOGUE_LEVELS[2]].append([reply])
        return rows

    return dialogues.map(contexts, batched=True, with_indices=True, remove_columns=dialogues.column_names,
                         desc="MLR levels")


def add_parrot_negatives(dataset: datasets.Dataset, column: str = DAILYDIALOG_PLUSPLUS_LEVELS[0]) -> datasets.Dataset:
    """This package's addition to the paper's levels ("parrot negatives"): each context's last utterance (an
    echo of the partner) and the responder's own previous turn (a repeat; the echo again when the context has
    one utterance) join its least coherent level ``column``. DailyDialog++ has neither kind of negative, and a
    cosine scores them highest of all (an echo's cosine is 1): a metric trained without them prefers a parrot to
    the human reply."""

    def add(row: dict[str, Any]) -> dict[str, Any]:
        context = row["context"]
        return {column: [*row[column], context[-1], context[-2] if len(context) > 1 else context[-1]]}

    return dataset.map(add, desc="parrot negatives")


def build_ranking_examples(
    dataset: datasets.Dataset, tokenizer: PreTrainedTokenizerBase, max_seq_length: int,
    level_columns: Sequence[str] = DAILYDIALOG_PLUSPLUS_LEVELS, num_proc: int | None = None,
) -> datasets.Dataset:
    """Tokenise a dataset with a ``context`` column and one response-list column per coherence level
    (``level_columns``, least coherent first) into MLR examples: ``input_ids``/``attention_mask``/
    ``token_type_ids`` each a list of L·K encodings, and ``levels`` (0 … L−1) per encoding.

    Every level of every row needs at least one response (the loss compares level centroids); the levels may
    differ in size (e.g. with :func:`add_parrot_negatives`), and rows batched together need the same total."""
    missing = [c for c in ("context", *level_columns) if c not in dataset.column_names]
    if missing:
        raise ValueError(f"the dataset lacks the column(s) {missing}; it has {dataset.column_names}")
    if len(level_columns) < 2:
        raise ValueError("multi-level ranking needs at least two coherence levels")

    def encode(row: dict[str, Any]) -> dict[str, Any]:
        counts = [len(row[column]) for column in level_columns]
        if min(counts) == 0:
            raise ValueError(f"every level needs at least one response; got {dict(zip(level_columns, counts))} "
                             f"for the context {row['context'][-1:]!r}")
        responses, levels = responses_by_level(row, level_columns)
        encoding, truncated = encode_context_response(tokenizer, [row["context"]] * len(responses), responses, max_seq_length)
        return {**encoding, "levels": levels, "truncated": any(truncated)}

    return dataset.map(encode, remove_columns=dataset.column_names, num_proc=num_proc, desc="MLR examples")


def build_pair_examples(
    dataset: datasets.Dataset, tokenizer: PreTrainedTokenizerBase, max_seq_length: int, score_column: str = "score",
    num_proc: int | None = None,
) -> datasets.Dataset:
    """Tokenise a dataset with ``context`` (list of utterances), ``response`` and ``score_column`` (the human
    score, kept on its own scale) into ``input_ids``/``attention_mask``/``token_type_ids`` + ``labels``."""
    missing = [c for c in ("context", "response", score_column) if c not in dataset.column_names]
    if missing:
        raise ValueError(f"the dataset lacks the column(s) {missing}; it has {dataset.column_names}")

    def encode(batch: dict[str, list[Any]]) -> dict[str, Any]:
        encoding, truncated = encode_context_response(tokenizer, batch["context"], batch["response"], max_seq_length)
        return {**encoding, "labels": [float(s) for s in batch[score_column]], "truncated": truncated}

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names, num_proc=num_proc, desc="pair examples")


@dataclass
class MultiLevelRankingCollator:
    """Pads a batch of MLR examples into one flat batch of B·L·K pairs (``input_ids`` etc. of shape
    ``(B·L·K, T)``) plus ``levels`` of shape ``(B, L·K)``."""

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        sizes = {len(f["levels"]) for f in features}
        if len(sizes) != 1:
            raise ValueError(f"every context of a batch needs the same number of responses; got {sorted(sizes)}")
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features[0]]
        pairs = [{key: f[key][i] for key in keys} for f in features for i in range(len(f["levels"]))]
        batch = self.tokenizer.pad(pairs, padding=True, pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt")
        batch["levels"] = torch.tensor([f["levels"] for f in features], dtype=torch.long)
        return dict(batch)


def build_selection_examples(dialogues: datasets.Dataset, later_turn_negatives: bool = True,
                             parrot_negatives: bool = False, every_earlier_repeat: bool = False,
                             seed: int = 42) -> datasets.Dataset:
    """Response-selection examples from a dataset of dialogues (a ``dialogue`` column of utterances): one per
    turn after the first, with its ``context`` (the utterances before it), its human ``reply`` and its hard
    ``negatives``: a later turn of the same speaker in the same dialogue (``later_turn_negatives``; drawn with
    ``seed``; none when the dialogue has no later turn of that speaker), and with ``parrot_negatives`` the last
    utterance (an echo) and the speaker's own previous turn (a repeat; when the reply is the dialogue's second turn,
    the echo alone), or with ``every_earlier_repeat`` every earlier turn of the speaker, latest first. A negative
    that equals the reply is left out."""
    if "dialogue" not in dialogues.column_names:
        raise ValueError(f"the dataset needs a 'dialogue' column of utterances; it has {dialogues.column_names}")

    def turns(batch: dict[str, list[Any]], indices: list[int]) -> dict[str, list[Any]]:
        rows: dict[str, list[Any]] = {"context": [], "reply": [], "negatives": []}
        for dialogue, index in zip(batch["dialogue"], indices):
            rng = random.Random(f"{seed}-{index}")
            for position in range(1, len(dialogue)):
                reply = dialogue[position]
                negatives = []
                later = dialogue[position + 2::2]
                if later_turn_negatives and later:
                    negatives.append(rng.choice(later))
                if parrot_negatives:
                    negatives.append(dialogue[position - 1])
                    own_turns = dialogue[position - 2::-2] if position >= 2 else []  # latest first
                    negatives += own_turns if every_earlier_repeat else own_turns[:1]
                rows["context"].append(dialogue[:position])
                rows["reply"].append(reply)
                rows["negatives"].append([negative for negative in negatives if negative != reply])
        return rows

    return dialogues.map(turns, batched=True, with_indices=True, remove_columns=dialogues.column_names,
                         desc="selection examples")


@dataclass
class ResponseSelectionCollator:
    """Turns a batch of B selection examples (:func:`build_selection_examples`) into one flat batch of B·C
    ``(context, candidate)`` encodings, C the batch's candidates (its B replies, then every hard negative), context
    by context; ``reply_index`` (B,) is each context's own reply among them, and ``candidate_mask`` (B, C) is
    False where a candidate is another copy of that reply's text (DailyDialog repeats "Thank you."), which is not
    a negative. The pairs are encoded as :func:`~hf_dialeval.modeling.base.encode_context_response` encodes
    them for scoring (the oldest context cut first)."""

    tokenizer: PreTrainedTokenizerBase
    max_seq_length: int

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        candidates = [f["reply"] for f in features] + [n for f in features for n in f["negatives"]]
        contexts = [f["context"] for f in features for _ in candidates]
        encoding, _ = encode_context_response(self.tokenizer, contexts, candidates * len(features), self.max_seq_length)
        batch = self.tokenizer.pad(encoding, padding=True, return_tensors="pt")
        batch["reply_index"] = torch.arange(len(features))
        batch["candidate_mask"] = torch.tensor([[c == i or text != f["reply"] for c, text in enumerate(candidates)]
                                                for i, f in enumerate(features)])
        return dict(batch)
