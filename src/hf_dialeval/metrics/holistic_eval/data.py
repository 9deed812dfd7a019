"""HolisticEval's data: the language model's input layout, the scoring inputs (one item → the response with its
query and the response alone), and the LM training corpus (query–response pairs, §4.3).

Two layouts (:data:`PROMPT_FORMATS`, the config's ``prompt_format``), each the same in training and scoring:

* ``special-tokens`` (an LM trained for this metric, such as the paper's GPT-2 or the small one trained from scratch):
  ``<bos> query <sep> response <eos>``, where the query's utterances are joined by ``<sep>`` too. ``<bos>`` is the
  tokenizer's BOS token (GPT-2's ``<|endoftext|>``), else its CLS token (BERT's ``[CLS]``); ``<sep>`` is its SEP token,
  else its EOS token (GPT-2: ``<|endoftext|>``, the turn separator DialoGPT uses); ``<eos>`` is its EOS token, else
  ``<sep>``. The response alone (fluency) is ``<bos> response``.
* ``speaker-tags`` (a pretrained LM, which has read transcripts rather than separator tokens): the utterances of a
  sequence as lines tagged ``A:`` and ``B:`` in turn from its first line (``A: query\nB: response`` for a one-utterance
  query), after the start token the tokenizer itself puts before a text (Gemma's ``<bos>``; none for GPT-2 or
  SmolLM2); a training sequence ends with ``<eos>``. The response alone is ``A: response``.

Every response token is predicted and scored, the first one from what precedes it; a tag, a separator or ``<eos>`` is
never scored. With ``detokenize`` set, texts are first written back the ordinary way (:func:`~hf_dialeval.data.text.
detokenize`: DailyDialog's ``"Hi , how are you ?"`` becomes ``"Hi, how are you?"``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import benchmark_texts, normalised_text
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_topical_chat_for_training
from hf_dialeval.data.text import detokenize
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import PROMPT_FORMATS, HolisticEvalConfig

#: Where the training pairs can come from (``hf-dialeval train holistic-eval --corpora``).
LM_CORPORA = ("dailydialog", "dailydialog-plusplus", "topical-chat")
#: The benchmarks whose texts never enter LM training (a query, response or rated utterance of theirs).
HELD_OUT_BENCHMARKS = ("holistic-context", "holistic-fluency")
PAIR_FEATURES = datasets.Features({"context": datasets.Sequence(datasets.Value("string")),
                                   "response": datasets.Value("string")})
#: The speaker tags of ``speaker-tags``, in turn from a sequence's first line.
SPEAKER_TAGS = ("A", "B")


@dataclass(frozen=True)
class Layout:
    """The token ids that frame a sequence's utterances in one of :data:`PROMPT_FORMATS`: ``start`` opens every
    sequence, ``openers[p % len(openers)]`` comes before the utterance at position ``p > 0`` of the sequence (the
    first one gets ``first``), ``end`` closes a training sequence; ``text_prefix`` is put before every utterance's text
    when it is tokenised (the space after a speaker tag), and ``detokenize`` says whether texts are detokenised."""

    start: tuple[int, ...]
    first: tuple[int, ...]
    openers: tuple[tuple[int, ...], ...]
    end: tuple[int, ...]
    text_prefix: str = ""
    detokenize: bool = False

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase, prompt_format: str = "special-tokens",
           detokenize_texts: bool = False) -> Layout:
        if prompt_format not in PROMPT_FORMATS:
            raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS}, not {prompt_format!r}")
        if prompt_format == "speaker-tags":
            def ids(text: str) -> tuple[int, ...]:
                return tuple(tokenizer(text, add_special_tokens=False)["input_ids"])

            own_start = tokenizer("")["input_ids"][:1]
            start = tuple(own_start) if own_start == [tokenizer.bos_token_id] else ()
            if tokenizer.eos_token_id is None:
                raise ValueError(f"{type(tokenizer).__name__} has no EOS token: the speaker-tags layout ends a "
                                 "training sequence with it")
            return cls(start, ids(f"{SPEAKER_TAGS[0]}:"), tuple(ids(f"\n{tag}:") for tag in SPEAKER_TAGS),
                       (tokenizer.eos_token_id,), text_prefix=" ", detokenize=detokenize_texts)
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if bos is None or sep is None:
            raise ValueError(f"{type(tokenizer).__name__} has neither a BOS nor a CLS token, or neither a SEP nor an "
                             "EOS token: HolisticEval needs one of each to mark where a query and a response start")
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else sep
        return cls((bos,), (), ((sep,),), (eos,), detokenize=detokenize_texts)

    @classmethod
    def of_config(cls, tokenizer: PreTrainedTokenizerBase, config: HolisticEvalConfig) -> Layout:
        """The layout a HolisticEval config names."""
        return cls.of(tokenizer, config.prompt_format, config.detokenize)

    def opener(self, position: int) -> list[int]:
        """The ids before the utterance at ``position`` of a sequence."""
        return list(self.first if position == 0 else self.openers[position % len(self.openers)])

    def texts(self, texts: Sequence[str]) -> list[str]:
        return [self.text_prefix + (detokenize(text) if self.detokenize else text) for text in texts]


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """GPT-2 has no padding token: pad with its EOS token (padding is masked out of attention and of every
    score and loss, so which id fills it does not matter)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _utterance_ids(tokenizer: PreTrainedTokenizerBase, layout: Layout, texts: Sequence[str]) -> list[list[int]]:
    if not texts:
        return []
    return tokenizer(layout.texts(texts), add_special_tokens=False, verbose=False)["input_ids"]


def _query_ids(tokenizer: PreTrainedTokenizerBase, layout: Layout, contexts: Sequence[Sequence[str]]
               ) -> list[list[int]]:
    """Each context's utterances as one query, each after its opener (all utterances tokenised in one call)."""
    utterances = [utterance for context in contexts for utterance in context]
    utterance_ids = iter(_utterance_ids(tokenizer, layout, utterances))
    queries = []
    for context in contexts:
        query: list[int] = []
        for position in range(len(context)):
            query += layout.opener(position) + next(utterance_ids)
        queries.append(query)
    return queries


def _newest(query: list[int], budget: int) -> list[int]:
    """The newest ``budget`` tokens of ``query`` (its oldest are cut first; nothing for a budget below 1)."""
    return query[max(len(query) - budget, 0) :] if budget > 0 else []


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
    queries = _query_ids(tokenizer, layout, contexts)
    for context, query, response in zip(contexts, queries, _utterance_ids(tokenizer, layout, responses)):
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
        kept = _newest(query, max_length - len(layout.start) - len(opener) - len(response))
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
    sequence); the query's oldest tokens are cut first."""
    layout = layout or Layout.of(tokenizer)

    def encode(batch: dict[str, list]) -> dict[str, list[list[int]]]:
        encoded = []
        queries = _query_ids(tokenizer, layout, batch["context"])
        for context, query, response in zip(batch["context"], queries,
                                            _utterance_ids(tokenizer, layout, batch["response"])):
            opener = layout.opener(len(context))
            room = max_length - len(layout.start) - len(opener) - len(layout.end)
            response = response[:room]
            middle = [*_newest(query, room - len(response)), *opener] if context else [*layout.opener(0)]
            encoded.append([*layout.start, *middle, *response, *layout.end])
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
