"""RADE's inputs and training examples, built with ``datasets.map``, and their padding collator.

* posterior input (Eq. 1): ``context [SEP] reference [SEP] candidate`` in the tokenizer's pair format (the
  context's utterances joined by its separator, the reference and the candidate by it as well);
* generator input (Eq. 5): the context alone; its target (Eq. 6): the reference.

On a causal LM (this package's adaptation) both are transcripts in the speaker-tags layout
(:mod:`hf_dialeval.data.transcripts`): the posterior input ``A: u_1\\nB: u_2\\n…\\nReference: r\\nCandidate: c``,
and the generator's ``A: u_1\\nB: u_2\\n…\\nX: r``, the reply's tokens its labels.

Training data: RADE's three domains (:func:`hf_dialeval.data.benchmarks.load_benchmark` ``rade-*`` splits, with both
responses' human scores) and DailyDialog++ with its response levels mapped to scores
(:func:`dailydialog_plusplus_ratings`), for cross-domain pre-training; or the user's own ratings with references, their
scores mapped linearly onto the model's human scale (:func:`user_score_range`, :func:`user_training_ratings`), for
task-specific fine-tuning.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import torch
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import REFERENCE_SCORE, load_benchmark
from hf_dialeval.data.corpora import load_dailydialog_plusplus
from hf_dialeval.data.degradations import degrade
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.transcripts import Layout, newest_tokens, text_ids, utterance_ids
from hf_dialeval.errors import OptionError, UnknownNameError
from hf_dialeval.inference.model_metric import encode_context_response

#: The human score column of RADE's data (the candidate's overall score).
CANDIDATE_SCORE = "Overall"
#: Training sources: RADE's domains (their ``train`` split) and DailyDialog++ (levels mapped to scores).
RADE_DOMAINS = ("rade-chitchat", "rade-emotion", "rade-persona")
DAILYDIALOG_PLUSPLUS = "dailydialog-plusplus"
TRAINING_SOURCES = (*RADE_DOMAINS, DAILYDIALOG_PLUSPLUS)
#: Scores given to DailyDialog++'s levels for pre-training (this package's mapping, on RADE's 1–5 scale: a
#: human reply scores as RADE's references do on average (3–4), a reply written to share the context's words
#: while not answering it scores low, a random reply from another dialogue lowest).
DAILYDIALOG_PLUSPLUS_SCORES = {"positive_responses": 4.0, "adversarial_negative_responses": 2.0,
                               "random_negative_responses": 1.0}


def candidate_with_reference(tokenizer: PreTrainedTokenizerBase, reference: str, candidate: str) -> str:
    """The second segment of the posterior input: ``reference [SEP] candidate``."""
    return f"{reference} {tokenizer.sep_token} {candidate}"


def encode_posterior(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]], references: Sequence[str],
                     candidates: Sequence[str], max_length: int) -> tuple[dict[str, list[list[int]]], list[bool]]:
    """Token ids of ``context [SEP] reference [SEP] candidate`` within ``max_length`` and, per input, whether
    anything was cut: the oldest context tokens go first, never the reference or the candidate, unless those two
    alone do not fit (then the candidate's end is cut)."""
    second = [candidate_with_reference(tokenizer, r, c) for r, c in zip(references, candidates)]
    return encode_context_response(tokenizer, contexts, second, max_length)


def encode_context(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]], max_length: int
                   ) -> list[list[int]]:
    """The generator's input: each context's utterances joined by the separator token, its oldest tokens cut
    to fit ``max_length`` with the special tokens."""
    separator = f" {tokenizer.sep_token} "
    encoding = tokenizer([separator.join(c) for c in contexts], verbose=False)
    rows = []
    for row, ids in enumerate(encoding["input_ids"]):
        text_positions = [p for p, s in enumerate(encoding.sequence_ids(row)) if s is not None]
        dropped = set(text_positions[: max(0, len(ids) - max_length)])
        rows.append([token for p, token in enumerate(ids) if p not in dropped])
    return rows


#: What opens the reference's and the candidate's lines of a causal LM's posterior transcript.
REFERENCE_TAG, CANDIDATE_TAG = "Reference:", "Candidate:"


def context_lines(tokenizer: PreTrainedTokenizerBase, layout: Layout, contexts: Sequence[Sequence[str]]
                  ) -> list[list[list[int]]]:
    """Each context's utterances as transcript lines (opener and text ids; all utterances tokenised in one call): what
    :func:`encode_causal_posterior` and :func:`encode_causal_generation` read."""
    ids = iter(utterance_ids(tokenizer, layout, [u for context in contexts for u in context]))
    return [[[*layout.opener(position), *next(ids)] for position in range(len(context))] for context in contexts]


def encode_causal_posterior(tokenizer: PreTrainedTokenizerBase, layout: Layout, lines: Sequence[list[list[int]]],
                            references: Sequence[str], candidates: Sequence[str], max_length: int
                            ) -> tuple[dict[str, list[list[int]]], list[bool]]:
    """A causal LM's posterior inputs, ``A: u_1\\n…\\nReference: r\\nCandidate: c`` (the contexts' :func:`context_lines`
    first) within ``max_length`` tokens, and per input whether anything was cut: the context's oldest tokens go
    first, never the reference or the candidate, unless those two alone do not fit (then the candidate's end is cut,
    and the reference's where it alone does not fit)."""
    rows: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": []}
    truncated = []
    line_break = text_ids(tokenizer, "\n")
    tags = text_ids(tokenizer, REFERENCE_TAG), text_ids(tokenizer, CANDIDATE_TAG)
    texts = iter(utterance_ids(tokenizer, layout, [t for pair in zip(references, candidates) for t in pair]))
    for context in lines:
        reference, candidate = next(texts), next(texts)
        transcript = [token for line in context for token in line]
        responses = [*(line_break if context else []), *tags[0], *reference, *line_break, *tags[1], *candidate]
        full = [*layout.start, *newest_tokens(transcript, max_length - len(layout.start) - len(responses)), *responses]
        ids = full[:max_length]
        rows["input_ids"].append(ids)
        rows["attention_mask"].append([1] * len(ids))
        truncated.append(len(ids) < len(layout.start) + len(transcript) + len(responses))
    return rows, truncated


def encode_causal_generation(layout: Layout, lines: Sequence[list[list[int]]], references: Sequence[list[int]],
                             max_length: int, max_reference_length: int) -> dict[str, list[list[int]]]:
    """The generator's inputs on a causal LM: the context's transcript (:func:`context_lines`) and the reference (its
    ids after an opener, :func:`~hf_dialeval.data.transcripts.utterance_ids`) as the next speaker's line, the
    reference's first ``max_reference_length`` tokens the only labels, the context's oldest tokens cut to fit
    ``max_length``."""
    rows: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": [], "labels": []}
    for context, reference in zip(lines, references):
        opener = layout.opener(len(context))
        reference = reference[: min(max_reference_length, max(max_length - len(layout.start) - len(opener), 0))]
        transcript = [token for line in context for token in line]
        head = [*layout.start, *newest_tokens(transcript, max_length - len(layout.start) - len(opener) -
                                              len(reference)), *opener]
        rows["input_ids"].append([*head, *reference])
        rows["attention_mask"].append([1] * (len(head) + len(reference)))
        rows["labels"].append([-100] * len(head) + list(reference))
    return rows


def dailydialog_plusplus_ratings(data_dir: str | os.PathLike | None = None, splits: Sequence[str] = ("validation", "test"),
                                 per_level: int = 1, seed: int = 42) -> datasets.Dataset:
    """DailyDialog++ as reference-assisted ratings: per context, its first positive response is the reference
    (scored as a positive) and ``per_level`` responses of each level (the other positives, adversarial and random
    negatives that repeat no positive, drawn with ``seed``) are candidates scored by :data:`DAILYDIALOG_PLUSPLUS_SCORES`. Only the splits
    with all three levels (``validation``, ``test``) qualify."""
    rng = random.Random(seed)
    rows = []
    for split in splits:
        for row in load_dailydialog_plusplus(split, data_dir):
            positives = row["positive_responses"]
            if len(positives) < 2:
                continue
            reference = positives[0]
            for column, score in DAILYDIALOG_PLUSPLUS_SCORES.items():
                # the release lists a few positives among a context's random negatives: those are not negatives
                pool = positives[1:] if column == "positive_responses" else [
                    response for response in row[column] if response not in positives]
                for candidate in rng.sample(list(pool), min(per_level, len(pool))):
                    rows.append({"context": list(row["context"]), "response": candidate, "reference": reference,
                                 REFERENCE_SCORE: DAILYDIALOG_PLUSPLUS_SCORES["positive_responses"],
                                 CANDIDATE_SCORE: score})
    return datasets.Dataset.from_list(rows)


def load_training_ratings(sources: Sequence[str], split: str = "train", data_dir: str | os.PathLike | None = None,
                          seed: int = 42, balance_sources: bool = False) -> datasets.Dataset:
    """The ``split`` of each RADE domain in ``sources`` and, for ``dailydialog-plusplus`` (training only), its
    mapped ratings, as one shuffled dataset with ``context``, ``response``, ``reference``, ``reference_score``,
    ``Overall`` and ``source`` (the name it came from). ``balance_sources`` gives every source as many items as
    the largest has (the smaller ones repeated, by ``datasets.interleave_datasets``), so that a small domain is
    not drowned out by a large one."""
    unknown = [source for source in sources if source not in TRAINING_SOURCES]
    if unknown:
        raise UnknownNameError(f"unknown training source(s) {unknown}; choose from {list(TRAINING_SOURCES)}")
    columns = ["context", "response", "reference", REFERENCE_SCORE, CANDIDATE_SCORE]
    parts = []
    for source in dict.fromkeys(sources):
        if source == DAILYDIALOG_PLUSPLUS:
            if split == "train":
                parts.append(_with_source(dailydialog_plusplus_ratings(data_dir, seed=seed), source))
            continue
        parts.append(_with_source(load_benchmark(source, data_dir, split=split).select_columns(columns), source))
    if not parts:
        raise OptionError(f"no {split} data in {list(sources)}: DailyDialog++ has no validation ratings here")
    features = parts[0].features
    parts = [part.cast(features) for part in parts]
    if balance_sources and len(parts) > 1:
        return datasets.interleave_datasets(parts, seed=seed, stopping_strategy="all_exhausted").shuffle(seed=seed)
    return datasets.concatenate_datasets(parts).shuffle(seed=seed)


def user_score_range(scores: Sequence[float], given: Sequence[float] | None, source: str) -> tuple[float, float]:
    """The scale of the user's ``scores`` (of the ratings of ``source``): ``given`` (``--score-range``), which must
    hold every score, or else the lowest and the highest score given."""
    if given is not None:
        low, high = (float(value) for value in given)
        outside = next((row for row, score in enumerate(scores) if not low <= score <= high), None)
        if outside is not None:
            raise OptionError(f"{source}, row {outside}: score {scores[outside]:g} lies outside --score-range {low:g} "
                              f"{high:g}: give a range that holds every score")
        return low, high
    low, high = min(scores), max(scores)
    if low == high:
        raise DialogueValidationError(f"{source}: every score is {low:g}, which gives RADE nothing to learn: give "
                                      "ratings of different scores, or --score-range LOW HIGH for their scale")
    return low, high


def user_training_ratings(ratings: datasets.Dataset, score_range: Sequence[float], scale: Sequence[float]
                          ) -> datasets.Dataset:
    """The user's ratings (:func:`hf_dialeval.data.ratings.load_ratings`' fields, each with its reference) as RADE's
    training rows: ``context``, ``response``, ``reference`` and the ``score`` mapped linearly from ``score_range``
    onto ``scale`` (the model's human scale: the range's ends become the scale's) as ``Overall``. They hold no
    reference score: :func:`build_rade_examples` makes it NaN, which the fine-tuning loss leaves out of
    ``MSE(ŝ_h, s_h)`` and ``L_PR`` (:func:`~hf_dialeval.metrics.rade.trainer.rade_loss`)."""
    (low, high), (bottom, top) = score_range, scale
    mapped = [bottom + (top - bottom) * (score - low) / (high - low) for score in ratings["score"]]
    return ratings.select_columns(["context", "response", "reference"]).add_column(CANDIDATE_SCORE, mapped)


def add_degenerate_candidates(ratings: datasets.Dataset, share: float, lowest: float, seed: int = 42
                              ) -> datasets.Dataset:
    """``ratings`` with ``share`` of its items added again, each with its candidate degenerated
    (:func:`~hf_dialeval.data.degradations.degrade`: a word or the reply repeated, run on into other replies,
    gibberish) and rated ``lowest``, the bottom of the human scale; context, reference and reference score kept. This
    package's addition: RADE's data holds no such reply, and a model that has seen none may rate one said 10,000
    times as well as the reply it repeats."""
    if not 0.0 <= share <= 1.0:
        raise OptionError(f"--degenerate-negatives must be a share between 0 and 1, not {share}")
    rng = random.Random(seed)
    picked = rng.sample(range(len(ratings)), round(share * len(ratings)))
    others = list(ratings["response"])  # a Column read once: it reads the table again at each iteration
    rows = []
    for index in picked:
        row = ratings[index]
        degenerate = degrade(row["response"], rng, others)
        if degenerate is not None:
            rows.append({**row, "response": degenerate, CANDIDATE_SCORE: lowest})
    if not rows:
        return ratings
    added = datasets.Dataset.from_list(rows, features=ratings.features)
    return datasets.concatenate_datasets([ratings, added]).shuffle(seed=seed)


def _with_source(ratings: datasets.Dataset, source: str) -> datasets.Dataset:
    return ratings.add_column("source", [source] * len(ratings))


def build_rade_examples(dataset: datasets.Dataset, tokenizer: PreTrainedTokenizerBase, max_seq_length: int,
                        max_reference_length: int, num_proc: int | None = None, layout: Layout | None = None
                        ) -> datasets.Dataset:
    """Tokenise rated items (``context``, ``response`` the candidate, ``reference``, ``Overall`` its score s_a,
    ``reference_score`` s_h, ``None`` where unknown) into the posterior input (``input_ids`` …), the generator's
    input (``generator_input_ids``, ``generator_attention_mask``) and target (``generator_labels``, the reference
    cut to ``max_reference_length`` tokens), ``candidate_score`` and ``reference_score`` (NaN where unknown). With
    a ``layout``, a causal LM's transcripts (:func:`encode_causal_posterior`, :func:`encode_causal_generation`)."""
    missing = [c for c in ("context", "response", "reference", CANDIDATE_SCORE) if c not in dataset.column_names]
    if missing:
        raise ValueError(f"the dataset lacks the column(s) {missing}; it has {dataset.column_names}")

    def encode(batch: Mapping[str, list[Any]]) -> dict[str, Any]:
        references = batch["reference"]
        blank = [i for i, reference in enumerate(references) if not reference or not reference.strip()]
        if blank:
            raise ValueError(f"a training item has no reference (context {batch['context'][blank[0]][-1:]!r}): RADE "
                             "learns from the reference; drop such items")
        if layout is not None:  # the contexts and references tokenised once for both inputs
            lines = context_lines(tokenizer, layout, batch["context"])
            posterior, truncated = encode_causal_posterior(tokenizer, layout, lines, references, batch["response"],
                                                           max_seq_length)
            generation = encode_causal_generation(layout, lines, utterance_ids(tokenizer, layout, references),
                                                  max_seq_length, max_reference_length)
            generator_ids, labels = generation["input_ids"], generation["labels"]
        else:
            posterior, truncated = encode_posterior(tokenizer, batch["context"], references, batch["response"],
                                                    max_seq_length)
            generator_ids = encode_context(tokenizer, batch["context"], max_seq_length)
            labels = tokenizer(references, truncation=True, max_length=max_reference_length,
                               verbose=False)["input_ids"]
        reference_scores = batch.get(REFERENCE_SCORE) or [None] * len(references)
        return {**posterior, "generator_input_ids": generator_ids,
                "generator_attention_mask": [[1] * len(ids) for ids in generator_ids], "generator_labels": labels,
                "candidate_score": [float(score) for score in batch[CANDIDATE_SCORE]],
                "reference_score": [math.nan if score is None else float(score) for score in reference_scores],
                "truncated": truncated}

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names, num_proc=num_proc,
                       desc="RADE examples")


@dataclass
class RADECollator:
    """Pads the posterior inputs and the generator's inputs (each with ``tokenizer.pad``) and its labels (with
    ``-100``, ignored by the NLL); the scores become float tensors."""

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        posterior_keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features[0]]
        batch = dict(self.tokenizer.pad([{k: f[k] for k in posterior_keys} for f in features], padding=True,
                                        pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt"))
        if "generator_input_ids" in features[0]:
            generator = self.tokenizer.pad(
                [{"input_ids": f["generator_input_ids"], "attention_mask": f["generator_attention_mask"]}
                 for f in features], padding=True, pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt")
            batch["generator_input_ids"] = generator["input_ids"]
            batch["generator_attention_mask"] = generator["attention_mask"]
            # on the tokenizer's padding side: a causal LM's labels line up with its padded input ids
            width = max(len(f["generator_labels"]) for f in features)
            left = self.tokenizer.padding_side == "left"
            batch["generator_labels"] = torch.tensor(
                [[-100] * (width - len(f["generator_labels"])) * left + f["generator_labels"]
                 + [-100] * (width - len(f["generator_labels"])) * (not left) for f in features])
        for key in ("candidate_score", "reference_score"):
            if key in features[0]:
                batch[key] = torch.tensor([f[key] for f in features], dtype=torch.float)
        return batch
