"""QuantiDCE's two pre-training stages on a user's own dialogues: the MLR levels built from them, ``train
quantidce-selection --dialogues`` and ``train quantidce-mlr --dialogues`` from a JSONL file on tiny random
backbones, and ``adapt quantidce --dialogues`` running both stages (then KD when ratings are given too)."""

from __future__ import annotations

import json

import datasets
import pytest
import torch

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.cli import main
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.quantidce.data import DIALOGUE_LEVELS, dialogue_levels
from hf_dialeval.metrics.quantidce.train import (
    QuantiDCEMLRTrainingArguments,
    QuantiDCESelectionTrainingArguments,
    train_mlr,
    train_selection,
)
from hf_dialeval.modeling.loading import load_checkpoint

from conftest import save_tiny_bert

DIALOGUES = datasets.Dataset.from_dict({"dialogue": [
    ["Hi!", "Hello, how are you?", "Fine. Any plans today?", "A walk in the park.", "Nice.", "Thank you."],
    ["Do you like tea?", "Yes, green tea.", "Me too.", "Thank you."],
    ["Where do you live?", "Near the sea."],
]})
TOPICS = ["tea", "the weather", "football", "a new job", "their holidays", "a film", "cooking", "music"]


def test_levels_are_random_then_a_later_turn_then_the_human_reply():
    levels = dialogue_levels(DIALOGUES, random_responses=3, seed=1)
    first, second, third = DIALOGUES["dialogue"]
    # a turn whose speaker speaks again later is a context: positions 1, 2 and 3 of the first dialogue, 1 of the
    # second ("Yes, green tea." is followed by its speaker's "Thank you."); the third dialogue has none
    assert levels["context"] == [first[:1], first[:2], first[:3], second[:1]]
    assert levels[DIALOGUE_LEVELS[2]] == [[first[1]], [first[2]], [first[3]], [second[1]]]
    assert levels[0][DIALOGUE_LEVELS[1]][0] in (first[3], first[5])
    assert levels[2][DIALOGUE_LEVELS[1]] == [first[5]] and levels[3][DIALOGUE_LEVELS[1]] == [second[3]]
    for row, index in zip(levels, (0, 0, 0, 1)):
        drawn = row[DIALOGUE_LEVELS[0]]
        others = {u for i, dialogue in enumerate(DIALOGUES["dialogue"]) if i != index for u in dialogue}
        assert len(drawn) == 3 and set(drawn) <= others and row[DIALOGUE_LEVELS[2]][0] not in drawn
    assert dialogue_levels(DIALOGUES, random_responses=3, seed=1)[:] == levels[:]  # seeded
    with pytest.raises(ValueError, match="MLR levels need several different dialogues"):
        dialogue_levels(DIALOGUES.select([0]), random_responses=3)


def _dialogues_file(tmp_path, count: int = 30):
    path = tmp_path / "my_dialogues.jsonl"
    path.write_text("".join(json.dumps({"dialogue": [f"hi , are you a {TOPICS[i % 8]} fan ?", "yes , very much .",
                                                     "why is that ?", f"i grew up with it , {i} years .",
                                                     "that is nice .", "thank you ."]}) + "\n"
                            for i in range(count)))
    return path


def test_both_stages_train_on_the_users_dialogues(tmp_path):
    dialogues = _dialogues_file(tmp_path)
    backbone = save_tiny_bert(tmp_path / "backbone")
    selection = train_selection(QuantiDCESelectionTrainingArguments(
        output_dir=str(tmp_path / "selection"), backbone=backbone, dialogues=str(dialogues), max_dialogues=12,
        eval_dialogues=4, max_seq_length=64, mlp_hidden_sizes=[16, 8], encoding="bi", bi_context="all",
        bi_features="cosines", lora_rank=0, per_device_train_batch_size=8, max_steps=2, logging_steps=1,
        save_strategy="no", use_cpu=True, report_to=[]))
    record = json.loads((selection / "training_record.json").read_text())
    # a tenth of 30 dialogues is 3, below the 10 held out at the least; 12 of the other 20 trained on
    assert record["dialogues"] == str(dialogues) and record["dialogues_count"] == 30
    assert record["held_out_dialogues"] == 10 and record["train_dialogues"] == 12 and "eval_accuracy" in json.dumps(record)
    mlr = train_mlr(QuantiDCEMLRTrainingArguments(
        output_dir=str(tmp_path / "mlr"), init_from=str(selection), dialogues=str(dialogues), max_contexts=5,
        eval_contexts=3, freeze_encoder=True, parrot_negatives=True, lora_rank=0, adapter_rank=32,
        learning_rate=1e-2, max_steps=2, logging_steps=1, use_cpu=True, report_to=[]))
    record = json.loads((mlr / "training_record.json").read_text())
    assert record["train_contexts"] == 5 and record["dialogues_sha256"] and "eval_loss" in json.dumps(record)
    selected, _ = load_checkpoint("quantidce", selection)
    full, _ = load_checkpoint("quantidce", mlr / "full")
    assert all(torch.equal(value, full.encoder.state_dict()[key])  # the head alone trained
               for key, value in selected.encoder.state_dict().items())
    assert not all(torch.equal(value, full.predictor.state_dict()[key])
                   for key, value in selected.predictor.state_dict().items())


def test_dialogues_without_a_later_turn_are_refused_before_the_model_loads(tmp_path, monkeypatch):
    import hf_dialeval.metrics.quantidce.train as train

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(train, "new_or_continued_model", no_model)
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps({"context": [f"question {i} ?"], "response": f"answer {i} ."}) + "\n"
                             for i in range(30)))
    with pytest.raises(OptionError, match=f"--dialogues {short} has no turn whose speaker speaks again later"):
        train_mlr(QuantiDCEMLRTrainingArguments(output_dir=str(tmp_path / "mlr"), dialogues=str(short),
                                                eval_contexts=0))


def test_adapt_runs_selection_and_mlr_on_dialogues_then_kd_on_ratings(tmp_path):
    dialogues = _dialogues_file(tmp_path, count=50)  # a fifth held out: the 10 dialogues the checklist needs
    base = train_selection(QuantiDCESelectionTrainingArguments(  # a tiny bi-encoder, as the shipped default is
        output_dir=str(tmp_path / "base"), backbone=save_tiny_bert(tmp_path / "backbone"), dialogues=str(dialogues),
        eval_dialogues=0, max_seq_length=64, mlp_hidden_sizes=[16, 8], encoding="bi", bi_context="all",
        bi_features="cosines", lora_rank=0, max_steps=1, save_strategy="no", use_cpu=True, report_to=[]))
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text("".join(json.dumps({"context": [f"hello , do you like {topic} , {name} ?"], "response": reply,
                                           "score": score}) + "\n"  # 56 contexts: 11 held out, 10 at least
                               for topic in TOPICS for name in ("ann", "bob", "cy", "di", "ed", "flo", "gus")
                               for reply, score in (("yes , very much .", 5), ("the train leaves at noon .", 1))))
    output = tmp_path / "adapted"
    assert main(["adapt", "quantidce", "--dialogues", str(dialogues), "--ratings", str(ratings), "--init-from",
                 str(base), "--output-dir", str(output), "--max-steps", "1", "--checklist-pairs",
                 "4"]) == 0
    report = json.loads((output / "adaptation_report.json").read_text())
    assert [step["command"] for step in report["steps"]] == ["quantidce-selection", "quantidce-mlr", "quantidce-kd"]
    assert report["data"]["dialogues"]["held_out"] == 10 and report["data"]["ratings"]["rows"] == 112
    assert report["checklist"]["dialogues"] == f"10 held-out dialogues of {dialogues}"
    assert load_checkpoint("quantidce", output)[0].config.encoding == "bi"
