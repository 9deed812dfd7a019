"""Dialogue corpora (no human quality labels) as ``datasets.Dataset``: DailyDialog, DailyDialog++, Topical-Chat."""

from __future__ import annotations

import json
import logging
import os
from functools import partial

import datasets

from hf_dialeval.data.model import DialogueValidationError, item_features
from hf_dialeval.data.paths import data_files, resolve_data_dir
from hf_dialeval.errors import OptionError

logger = logging.getLogger(__name__)

DAILYDIALOG_SPLITS = ("train", "validation", "test")
DAILYDIALOG_EMOTIONS = ("no_emotion", "anger", "disgust", "fear", "happiness", "sadness", "surprise")
# The release numbers acts from 1; ClassLabel ids are 0-based.
DAILYDIALOG_ACTS = ("inform", "question", "directive", "commissive")
DAILYDIALOG_FEATURES = datasets.Features(
    {
        "dialogue": datasets.Sequence(datasets.Value("string")),
        "speakers": datasets.Sequence(datasets.Value("string")),
        "emotions": datasets.Sequence(datasets.ClassLabel(names=list(DAILYDIALOG_EMOTIONS))),
        "acts": datasets.Sequence(datasets.ClassLabel(names=list(DAILYDIALOG_ACTS))),
    }
)

DAILYDIALOG_PLUSPLUS_SPLITS = ("train", "validation", "test")
# DailyDialog++ releases only positives for its training contexts; dev and test have all three kinds.
_PLUSPLUS_FILES = {"train": "data_positives.json", "validation": "dev.json", "test": "test.json"}
RESPONSE_KINDS = ("positive_responses", "adversarial_negative_responses", "random_negative_responses")
DAILYDIALOG_PLUSPLUS_FEATURES = datasets.Features(
    {"context": datasets.Sequence(datasets.Value("string")),
     **{kind: datasets.Sequence(datasets.Value("string")) for kind in RESPONSE_KINDS}}
)


TOPICAL_CHAT_SPLITS = ("valid_freq", "valid_rare", "test_freq", "test_rare")


def _utterances(line: str) -> list[str]:
    parts = [" ".join(part.split()) for part in line.split("__eou__")]
    return [part for part in parts if part]


@data_files()
def load_dailydialog(split: str = "train", data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """DailyDialog (Li et al. 2017): one row per dialogue with per-utterance emotion and act labels.

    Speakers alternate and are named ``A``/``B``. A dialogue whose label count differs from its utterance
    count (one such line exists in the train release) is left out, with a warning.
    """
    if split not in DAILYDIALOG_SPLITS:
        raise OptionError(f"DailyDialog has the splits {list(DAILYDIALOG_SPLITS)}, not {split!r}")
    folder = resolve_data_dir(data_dir) / "corpora/dailydialog" / split
    texts = (folder / f"dialogues_{split}.txt").read_text(encoding="utf-8").splitlines()
    emotions = (folder / f"dialogues_emotion_{split}.txt").read_text(encoding="utf-8").splitlines()
    acts = (folder / f"dialogues_act_{split}.txt").read_text(encoding="utf-8").splitlines()
    rows, skipped = [], 0
    for text, emotion_line, act_line in zip(texts, emotions, acts, strict=True):
        dialogue = _utterances(text)
        emotion_ids = [int(label) for label in emotion_line.split()]
        act_ids = [int(label) - 1 for label in act_line.split()]
        if not (len(dialogue) == len(emotion_ids) == len(act_ids)):
            skipped += 1
            continue
        speakers = ["A" if i % 2 == 0 else "B" for i in range(len(dialogue))]
        rows.append({"dialogue": dialogue, "speakers": speakers, "emotions": emotion_ids, "acts": act_ids})
    if skipped:
        logger.warning("DailyDialog %s: left out %d dialogue(s) whose labels do not match their utterances", split, skipped)
    return datasets.Dataset.from_list(rows, features=DAILYDIALOG_FEATURES)


@data_files()
def load_dailydialog_plusplus(split: str = "validation", data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """DailyDialog++ (Sai et al. 2020): each context with 5 positive, 5 adversarial-negative and 5
    random-negative responses (``train`` has positives only; its negative columns are empty lists)."""
    if split not in _PLUSPLUS_FILES:
        raise OptionError(f"DailyDialog++ has the splits {list(DAILYDIALOG_PLUSPLUS_SPLITS)}, not {split!r}")
    path = resolve_data_dir(data_dir) / "corpora/dailydialog_plusplus" / _PLUSPLUS_FILES[split]
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        rows.append(
            {"context": [" ".join(u.split()) for u in record["context"]],
             **{kind: [" ".join(r.split()) for r in record.get(kind, [])] for kind in RESPONSE_KINDS}}
        )
    return datasets.Dataset.from_list(rows, features=DAILYDIALOG_PLUSPLUS_FEATURES)


QUANTIDCE_DAILYDIALOG_EVAL_SPLITS = ("train", "validation")
QUANTIDCE_DAILYDIALOG_EVAL_FEATURES = datasets.Features(
    {"context": datasets.Sequence(datasets.Value("string")), "response": datasets.Value("string"),
     "score": datasets.Value("float32")}
)


@data_files()
def load_quantidce_dailydialog_eval(split: str = "train", data_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """The 300 human coherence ratings on DailyDialog (DailyDialogEVAL, 90/10 split) that QuantiDCE is
    fine-tuned on: ``context`` (utterances), ``response`` and the mean human ``score`` (1–5)."""
    if split not in QUANTIDCE_DAILYDIALOG_EVAL_SPLITS:
        raise OptionError(f"the QuantiDCE DailyDialog ratings have the splits {list(QUANTIDCE_DAILYDIALOG_EVAL_SPLITS)}, not {split!r}")
    path = resolve_data_dir(data_dir) / "training/quantidce_dailydialog_eval" / split / "context_response.text"
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        score, sep, text = line.partition("\t")
        utterances = [" ".join(u.split()) for u in text.split("|||")]
        if not sep or len(utterances) < 2:
            raise DialogueValidationError(f"{path}:{number}: expected 'score<TAB>utterance|||...|||response', got {line[:80]!r}")
        rows.append({"context": utterances[:-1], "response": utterances[-1], "score": float(score)})
    return datasets.Dataset.from_list(rows, features=QUANTIDCE_DAILYDIALOG_EVAL_FEATURES)


def _wiki_leads(data_dir: str | os.PathLike | None) -> dict[int, str]:
    """Topical-Chat's wiki lead texts by id (the release maps text to id)."""
    leads = json.loads((resolve_data_dir(data_dir) / "corpora/topical_chat/wiki/wiki.json").read_text(encoding="utf-8"))
    return {lead_id: " ".join(text.split()) for section in leads.values() for text, lead_id in section.items()}


@data_files()
def load_topical_chat(split: str = "test_freq", data_dir: str | os.PathLike | None = None,
                      with_knowledge: bool = False) -> datasets.Dataset:
    """Topical-Chat (Gopalakrishnan et al. 2019), the splits released here (its train split is not): one row per
    conversation, ``dialogue`` and ``speakers`` (``agent_1``/``agent_2``). Consecutive messages of one agent are
    joined into one utterance, so that speakers alternate as in the other corpora.

    ``with_knowledge`` adds ``knowledge``: per utterance, the wiki lead sections its speaker marked as used
    (``FS1``–``FS3`` of its ``knowledge_source``, read from the reading sets), joined by a space; empty when it
    used none (or only fun facts and articles, whose texts are not released here)."""
    if split not in TOPICAL_CHAT_SPLITS:
        raise OptionError(f"Topical-Chat has the splits {list(TOPICAL_CHAT_SPLITS)} here, not {split!r}")
    root = resolve_data_dir(data_dir) / "corpora/topical_chat"
    conversations = json.loads((root / "conversations" / f"{split}.json").read_text(encoding="utf-8"))
    reading_sets = json.loads((root / "reading_sets/pre-build" / f"{split}.json").read_text(encoding="utf-8")) \
        if with_knowledge else {}
    leads = _wiki_leads(data_dir) if with_knowledge else {}
    rows = []
    for conversation_id, conversation in conversations.items():
        dialogue: list[str] = []
        speakers: list[str] = []
        sources: list[list[str]] = []
        for turn in conversation["content"]:
            message = " ".join(turn["message"].split())
            if speakers and speakers[-1] == turn["agent"]:
                dialogue[-1] = f"{dialogue[-1]} {message}".strip()
                sources[-1] += [s for s in turn["knowledge_source"] if s not in sources[-1]]
            else:
                dialogue.append(message)
                speakers.append(turn["agent"])
                sources.append(list(turn["knowledge_source"]))
        row: dict[str, object] = {"dialogue": dialogue, "speakers": speakers}
        if with_knowledge:
            reading = reading_sets.get(conversation_id, {})
            row["knowledge"] = [_knowledge(reading.get(agent, {}), used, leads) for agent, used in zip(speakers, sources)]
        rows.append(row)
    features = item_features("dialogue")
    if with_knowledge:
        features["knowledge"] = datasets.Sequence(datasets.Value("string"))
    return datasets.Dataset.from_list(rows, features=features)


def _knowledge(reading: dict, used: list[str], leads: dict[int, str]) -> str:
    texts = []
    for source in used:
        section = reading.get(source, {})
        for key in ("shortened_wiki_lead_section", "summarized_wiki_lead_section"):
            if key in section and section[key] in leads:
                texts.append(leads[section[key]])
    return " ".join(texts)


#: The corpora ``push_to_hub.py datasets`` publishes: name -> (loader called as ``loader(split=, data_dir=)``, its
#: splits). Topical-Chat goes out with its ``knowledge`` column, so that a published copy serves knowledge-grounded use.
CORPORA = {
    "dailydialog": (load_dailydialog, DAILYDIALOG_SPLITS),
    "dailydialog-plusplus": (load_dailydialog_plusplus, DAILYDIALOG_PLUSPLUS_SPLITS),
    "topical-chat": (partial(load_topical_chat, with_knowledge=True), TOPICAL_CHAT_SPLITS),
}


def load_topical_chat_for_training(data_dir: str | os.PathLike | None = None, with_knowledge: bool = False
                                   ) -> datasets.Dataset:
    """Every released Topical-Chat conversation (:func:`load_topical_chat`, all four splits) that shares no
    utterance with a USR-Topical context, so that the benchmark stays unseen (about 10 of its 60 contexts recur in
    these splits: Topical-Chat's fun facts repeat across conversations)."""
    from hf_dialeval.data.benchmarks import load_benchmark, normalised_text

    usr = {normalised_text(text) for context in load_benchmark("usr-topical", data_dir)["context"] for text in context}
    splits = [load_topical_chat(split, data_dir, with_knowledge) for split in TOPICAL_CHAT_SPLITS]
    return datasets.concatenate_datasets(splits).filter(
        lambda row: not any(normalised_text(u) in usr for u in row["dialogue"]), desc="leaving out USR-Topical")
