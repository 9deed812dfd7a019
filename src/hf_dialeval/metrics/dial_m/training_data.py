"""Dial-M's training data: the dialogues (the corpora's, or the user's own, with no turn of a Table 1 benchmark) and
the inputs of its two stages, dialogue MLM pre-training (§2.1) and keyword-masking fine-tuning (§2.2), and their
causal-LM analogues, laid out as scoring lays them out (:mod:`.data`)."""

from __future__ import annotations

import os
import random
from collections.abc import Collection, Iterable, Sequence

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import benchmark_texts, normalised_text
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_topical_chat_for_training
from hf_dialeval.data.transcripts import Layout, utterance_ids
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.metrics.dial_m.data import PairLayout, causal_keyword_rows, layout_turn, masked, token_ids
from hf_dialeval.metrics.dial_m.keywords import KeywordSpan, extract_keywords, read_text, tokenizer_words

#: Where dialogues for training come from (``hf-dialeval train dial-m-mlm|dial-m --corpora``).
DIAL_M_CORPORA = ("dailydialog", "dailydialog-plusplus", "topical-chat")
#: The benchmarks of the paper's Table 1: no training turn holds one of their texts.
HELD_OUT_BENCHMARKS = ("usr-topical", "usr-persona", "predictive-engage", "holistic-context")
#: How fine-tuning chooses the masked words: the paper's keywords, or 15% of the words at random (ablation row 13).
MASKING_STRATEGIES = ("keywords", "random")
TURN_FEATURES = datasets.Features({"context": datasets.Sequence(datasets.Value("string")),
                                   "response": datasets.Value("string"), "condition": datasets.Value("string")})


def held_out_texts(data_dir: str | os.PathLike | None) -> set[str]:
    """The texts of the Table 1 benchmarks (:data:`HELD_OUT_BENCHMARKS`), normalised: no training turn holds one."""
    return benchmark_texts(HELD_OUT_BENCHMARKS, data_dir)


def _training_dialogues(rows: Iterable[tuple[list[str], list[str]]], held_out: Collection[str]) -> datasets.Dataset:
    """The rows (each a dialogue and per utterance its condition) as both stages read them, each dialogue ended
    before its first utterance in ``held_out`` (what follows is left out with it; a dialogue left empty goes)."""
    kept: dict[str, list[list[str]]] = {"dialogue": [], "conditions": []}
    for dialogue, conditions in rows:
        end = next((i for i, u in enumerate(dialogue) if normalised_text(u) in held_out), len(dialogue))
        if end:
            kept["dialogue"].append(dialogue[:end])
            kept["conditions"].append(conditions[:end])
    features = datasets.Features({"dialogue": datasets.Sequence(datasets.Value("string")),
                                  "conditions": datasets.Sequence(datasets.Value("string"))})
    return datasets.Dataset.from_dict(kept, features=features)


def load_training_dialogues(corpora: Sequence[str], split: str = "train", data_dir: str | os.PathLike | None = None
                            ) -> datasets.Dataset:
    """Dialogues for both stages, one row each: ``dialogue`` and per utterance its ``conditions`` (Topical-Chat's
    wiki leads, empty elsewhere). DailyDialog's ``split``; DailyDialog++ ``split``'s contexts, once with each of
    their positive responses; Topical-Chat's released splits for ``train`` (none otherwise), without the
    conversations that share an utterance with USR-Topical. Utterances that are texts of the Table 1 benchmarks
    (:data:`HELD_OUT_BENCHMARKS`) end a dialogue: what follows is left out with them."""
    unknown = [name for name in corpora if name not in DIAL_M_CORPORA]
    if unknown:
        raise UnknownNameError(f"unknown Dial-M corpora {unknown}: choose from {list(DIAL_M_CORPORA)}")
    rows: list[tuple[list[str], list[str]]] = []
    if "dailydialog" in corpora:
        rows += [(d, [""] * len(d)) for d in load_dailydialog(split, data_dir)["dialogue"]]
    if "dailydialog-plusplus" in corpora:
        for row in load_dailydialog_plusplus(split, data_dir):
            rows += [([*row["context"], r], [""] * (len(row["context"]) + 1)) for r in row["positive_responses"]]
    if "topical-chat" in corpora and split == "train":
        topical = load_topical_chat_for_training(data_dir, with_knowledge=True)
        rows += list(zip(topical["dialogue"], topical["knowledge"]))
    return _training_dialogues(rows, held_out_texts(data_dir))


def own_training_dialogues(dialogues: datasets.Dataset, held_out: Collection[str] = frozenset()
                           ) -> datasets.Dataset:
    """The user's dialogues (rows of :func:`hf_dialeval.data.dialogues.load_dialogues`) as both stages read them
    (rows of :func:`load_training_dialogues`): every utterance's condition is its dialogue's persona or knowledge
    text (empty for none), where Topical-Chat's is each message's wiki lead; utterances in ``held_out`` end a
    dialogue."""
    return _training_dialogues(((dialogue, [condition or ""] * len(dialogue))
                                for dialogue, condition in zip(dialogues["dialogue"], dialogues["condition"])),
                               held_out)


def encode_mlm_windows(tokenizer: PreTrainedTokenizerBase, dialogues: datasets.Dataset, eou: int, max_length: int
                       ) -> datasets.Dataset:
    """Pre-training inputs (§2.1): each dialogue's utterances, each followed by ``<eou>``, packed in order into
    windows of at most ``max_length`` tokens (a new window where the next utterance would not fit; an utterance
    longer than a window is cut, and its window's ``truncated`` says so). Conditions are not used.
    ``DataCollatorForLanguageModeling`` masks them."""
    layout = PairLayout.of(tokenizer)
    budget = max_length - layout.overhead(False)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        windows: list[list[int]] = []
        truncated: list[bool] = []
        for dialogue in batch["dialogue"]:
            window: list[int] = []
            cut = False
            for utterance in token_ids(tokenizer, dialogue):
                piece = [*utterance[: budget - 1], eou]
                if window and len(window) + len(piece) > budget:
                    windows.append(window)
                    truncated.append(cut)
                    window, cut = [], False
                window += piece
                cut = cut or len(utterance) > budget - 1
            if window:
                windows.append(window)
                truncated.append(cut)
        encoded = [layout.join(window, None) for window in windows]
        return {"input_ids": [ids for ids, _ in encoded], "token_type_ids": [types for _, types in encoded],
                "truncated": truncated}

    return dialogues.map(encode, batched=True, remove_columns=dialogues.column_names, desc="packing MLM windows")


def dialogue_turns(dialogues: datasets.Dataset) -> datasets.Dataset:
    """Every utterance after the first as a turn: ``context`` (the utterances before it), ``response`` and its
    ``condition`` (empty for none)."""
    def split(batch: dict[str, list]) -> dict[str, list]:
        turns: dict[str, list] = {"context": [], "response": [], "condition": []}
        for dialogue, conditions in zip(batch["dialogue"], batch["conditions"]):
            for t in range(1, len(dialogue)):
                if dialogue[t].strip():
                    turns["context"].append(dialogue[:t])
                    turns["response"].append(dialogue[t])
                    turns["condition"].append(conditions[t])
        return turns

    return dialogues.map(split, batched=True, remove_columns=dialogues.column_names, features=TURN_FEATURES,
                         desc="turns")


def encode_lm_windows(tokenizer: PreTrainedTokenizerBase, dialogues: datasets.Dataset, layout: Layout,
                      max_length: int) -> datasets.Dataset:
    """Stage 1 on a causal LM (the MLM stage's analogue): each dialogue as a speaker-tagged transcript
    (``A: u_1\\nB: u_2\\n…``), packed in order into windows of at most ``max_length`` tokens, each window's tags
    starting at ``A`` (a new window where the next utterance would not fit; an utterance longer than a window is
    cut, and its window's ``truncated`` says so). Conditions are not used. ``DataCollatorForLanguageModeling(mlm=False)``
    labels every token."""
    def encode(batch: dict[str, list]) -> dict[str, list]:
        windows: list[list[int]] = []
        truncated: list[bool] = []
        for dialogue in batch["dialogue"]:
            window: list[int] = []
            position, cut = 0, False
            for utterance in utterance_ids(tokenizer, layout, dialogue):
                line = [*layout.opener(position), *utterance]
                if window and len(window) + len(line) > max_length:
                    windows.append(window)
                    truncated.append(cut)
                    window, position, cut = [], 0, False
                    line = [*layout.opener(0), *utterance]
                if not window:
                    window = list(layout.start)
                cut = cut or len(window) + len(line) > max_length
                window += line[: max_length - len(window)]
                position += 1
            if window:
                windows.append(window)
                truncated.append(cut)
        return {"input_ids": windows, "attention_mask": [[1] * len(ids) for ids in windows], "truncated": truncated}

    return dialogues.map(encode, batched=True, remove_columns=dialogues.column_names, desc="packing LM windows")


def _random_words(words: Sequence[KeywordSpan], rng: random.Random, rate: float = 0.15) -> list[KeywordSpan]:
    return rng.sample(list(words), max(1, round(rate * len(words)))) if words else []


def encode_keyword_masking(tokenizer: PreTrainedTokenizerBase, turns: datasets.Dataset, eou: int, max_length: int,
                           max_keywords: int, pos_tags: Sequence[str], masking: str = "keywords", seed: int = 42
                           ) -> datasets.Dataset:
    """Fine-tuning inputs (§2.2): each turn laid out with its context and condition, every keyword occurrence of the
    response masked at once and labelled; turns whose response has no keyword are left out. ``masking="random"``
    masks 15% of the response's words instead (the paper's ablation)."""
    if masking not in MASKING_STRATEGIES:
        raise ValueError(f"masking must be one of {MASKING_STRATEGIES}, not {masking!r}")
    layout = PairLayout.of(tokenizer)
    rng = random.Random(seed)

    def encode(batch: dict[str, list]) -> dict[str, list[list[int]]]:
        out: dict[str, list[list[int]]] = {"input_ids": [], "token_type_ids": [], "labels": []}
        context_ids = iter(token_ids(tokenizer, [u for context in batch["context"] for u in context]))
        condition_ids = token_ids(tokenizer, [c or "" for c in batch["condition"]])
        for item, (context, response, condition) in enumerate(zip(batch["context"], batch["response"],
                                                                    batch["condition"])):
            contexts = [next(context_ids) for _ in context]
            response_ids, words = tokenizer_words(tokenizer, response)
            turn = layout_turn(layout, eou, contexts, response_ids, condition_ids[item] if condition else None,
                               max_length)
            if masking == "keywords":
                read = read_text(response, words, turn.response_length)
                wanted = set(extract_keywords(read, max_keywords, pos_tags))
                chosen = [word for word in words if word.word.lower() in wanted]
            else:
                chosen = _random_words(words, rng)
            positions = [turn.response_start + p for word in chosen for p in word.token_positions
                         if p < turn.response_length]
            if not positions:
                continue
            ids, labels = masked(turn.input_ids, positions, tokenizer.mask_token_id)
            out["input_ids"].append(ids)
            out["token_type_ids"].append(turn.token_type_ids)
            out["labels"].append(labels)
        return out

    return turns.map(encode, batched=True, remove_columns=turns.column_names, desc=f"masking {masking}")


def encode_causal_keyword_training(tokenizer: PreTrainedTokenizerBase, turns: datasets.Dataset, layout: Layout,
                                   max_length: int, max_keywords: int, pos_tags: Sequence[str],
                                   masking: str = "keywords", seed: int = 42) -> datasets.Dataset:
    """Stage 2 on a causal LM (the keyword-masking stage's analogue): each turn laid out as in scoring
    (:func:`causal_keyword_rows`) with its response's keyword occurrences labelled, so that the LM learns to predict
    them from the condition, the context and the response before them; turns whose response has no keyword are left
    out. ``masking="random"`` labels 15% of the response's words instead (the paper's ablation)."""
    if masking not in MASKING_STRATEGIES:
        raise ValueError(f"masking must be one of {MASKING_STRATEGIES}, not {masking!r}")
    rng = random.Random(seed)

    def keywords(text: str, words: list[KeywordSpan]) -> list[KeywordSpan]:
        wanted = set(extract_keywords(text, max_keywords, pos_tags))
        return [word for word in words if word.word.lower() in wanted]

    choose = keywords if masking == "keywords" else (lambda text, words: _random_words(words, rng))

    def encode(batch: dict[str, list]) -> dict[str, list[list[int]]]:
        rows = causal_keyword_rows(tokenizer, layout, batch["context"], batch["response"], batch["condition"],
                                   max_length, choose).rows
        return {key: rows[key] for key in ("input_ids", "attention_mask", "labels")}

    return turns.map(encode, batched=True, remove_columns=turns.column_names, desc=f"labelling {masking}")
