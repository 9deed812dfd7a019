"""Dial-M on the user's own dialogues: both stages trained on a JSONL file with a condition column (each utterance
with its dialogue's condition, a held-out share validated on, the data named in the record), a continued Dial-M
checkpoint keeping its settings but those the options give, ``--corpora`` refused beside ``--dialogues``, and
``hf-dialeval adapt dial-m`` end to end on a tiny random checkpoint built here."""

from __future__ import annotations

import json

import pytest
from test_dial_m import tiny_causal_dial_m
from transformers import AutoConfig, HfArgumentParser

import hf_dialeval  # noqa: F401  (registers Dial-M with the Auto classes)
from hf_dialeval.cli import main
from hf_dialeval.data.copies import COPY_SPAN
from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues
from hf_dialeval.data.tables import rows_sha256
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.dial_m.training_data import dialogue_turns, own_training_dialogues

from conftest import causal_tokenizer

TOPICS = ["tea", "the weather", "football", "a new job", "their holidays", "a film", "cooking", "music"]
PERSONA = "i drink green tea every morning . i have two cats ."
#: The settings of the tiny checkpoint continued below: none of them a new model's.
SETTINGS = {"variant": "context-gain", "detokenize": True, "max_seq_length": 96, "max_keywords": 7, "copy_span": 5}


@pytest.fixture(scope="module")
def dialogues_file(tmp_path_factory):
    """20 dialogues, every other one with a persona as its condition, all with speakers."""
    path = tmp_path_factory.mktemp("dial-m-dialogues") / "my_dialogues.jsonl"
    rows = []
    for i in range(20):
        row = {"dialogue": [f"hi , do you like {TOPICS[i % 8]} ?", f"yes , i talk about {TOPICS[i % 8]} every day .",
                            "why is that ?", f"my sister loved it , {i + 2} years ago ."],
               "speakers": ["user", "system", "user", "system"]}
        if i % 2 == 0:
            row["condition"] = PERSONA
        rows.append(row)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A tiny causal Dial-M checkpoint with settings of its own (:data:`SETTINGS`), as a shipped default has."""
    folder = tmp_path_factory.mktemp("dial-m-tiny") / "checkpoint"
    tokenizer = causal_tokenizer("llama")
    settings = {key: value for key, value in SETTINGS.items() if key != "max_seq_length"}
    tiny_causal_dial_m("llama", tokenizer, **settings).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert {key: getattr(AutoConfig.from_pretrained(folder), key) for key in SETTINGS} == SETTINGS
    return folder


def _arguments(cls, argv: list[str]):
    [args] = HfArgumentParser(cls).parse_args_into_dataclasses(
        [*argv, "--max-steps", "2", "--batch-size", "4", "--learning-rate", "1e-3", "--logging-steps", "1",
         "--use-cpu", "--report-to", "none", "--disable-tqdm", "true"])
    return args


def _record(run) -> dict:
    return json.loads((run / "training_record.json").read_text())


def test_each_utterance_gets_its_dialogues_condition_and_held_out_texts_end_a_dialogue(dialogues_file):
    dialogues = load_dialogues(dialogues_file)
    rows = own_training_dialogues(dialogues)
    assert rows["conditions"][0] == [PERSONA] * 4 and rows["conditions"][1] == [""] * 4
    turns = dialogue_turns(rows.select([0, 1]))
    assert turns["condition"] == [PERSONA] * 3 + [""] * 3 and turns["context"][2] == dialogues["dialogue"][0][:3]
    cut = own_training_dialogues(dialogues.select([0, 1]), {"why is that ?"})
    assert cut["dialogue"] == [dialogues["dialogue"][0][:2], dialogues["dialogue"][1][:2]]


def test_a_tenth_of_your_dialogues_is_held_out_with_their_conditions(dialogues_file, tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, own_dialogues

    data = own_dialogues(_arguments(DialMTrainingArguments, [
        "--dialogues", str(dialogues_file), "--output-dir", str(tmp_path), "--eval-dialogues", "50"]))
    assert (len(data.train), len(data.validation), data.record["held_out_dialogues"]) == (18, 2, 2)
    assert {conditions[0] for conditions in data.train["conditions"]} == {PERSONA, ""}
    assert not set(map(tuple, data.train["dialogue"])) & set(map(tuple, data.validation["dialogue"]))


def test_stage_one_on_your_dialogues_keeps_the_continued_checkpoints_settings(dialogues_file, tiny_checkpoint,
                                                                               tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, train_dial_m_mlm

    run = train_dial_m_mlm(_arguments(DialMMLMTrainingArguments, [
        "--backbone", str(tiny_checkpoint), "--dialogues", str(dialogues_file), "--output-dir", str(tmp_path / "lm"),
        "--eval-dialogues", "5"]))
    record = _record(run)
    dialogues = load_dialogues(dialogues_file)
    assert {key: record[key] for key in ("dialogues", "dialogues_count", "dialogues_sha256", "held_out_dialogues")} \
        == {"dialogues": str(dialogues_file), "dialogues_count": 20, "dialogues_sha256": rows_sha256(dialogues),
            "held_out_dialogues": 2}  # a tenth, under --eval-dialogues 5
    assert "corpora" not in record and record["objective"] == "causal-lm" and record["train_inputs"] == 18
    assert "eval_loss" in record["validation"]
    config = AutoConfig.from_pretrained(run)
    assert {key: getattr(config, key) for key in SETTINGS} == SETTINGS  # the windows were 96 tokens, its own


def test_stage_two_on_your_dialogues_with_conditions_and_options_that_win(dialogues_file, tiny_checkpoint, tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    run = train_dial_m(_arguments(DialMTrainingArguments, [
        "--backbone", str(tiny_checkpoint), "--dialogues", str(dialogues_file), "--output-dir",
        str(tmp_path / "keywords"), "--eval-dialogues", "0", "--max-keywords", "3", "--max-seq-length", "64"]))
    record = _record(run)
    assert record["held_out_dialogues"] == 0 and record["validation"] == {} and record["masking"] == "keywords"
    assert record["train_inputs"] == 40  # two replies of each of the 20 dialogues: "why is that ?" has no keyword
    config = AutoConfig.from_pretrained(run)
    assert {key: getattr(config, key) for key in SETTINGS} == {**SETTINGS, "max_keywords": 3, "max_seq_length": 64}


def test_a_new_model_gets_the_new_model_settings(dialogues_file, tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    tokenizer = causal_tokenizer("llama")
    tiny_causal_dial_m("llama", tokenizer).lm.save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    run = train_dial_m(_arguments(DialMTrainingArguments, [
        "--backbone", str(tmp_path / "lm"), "--dialogues", str(dialogues_file), "--output-dir", str(tmp_path / "new"),
        "--eval-dialogues", "1", "--lora-rank", "4"]))
    config = AutoConfig.from_pretrained(run)
    assert (config.variant, config.detokenize, config.max_seq_length, config.max_keywords, config.copy_span) == (
        "eq1", False, 256, 20, COPY_SPAN)
    assert _record(run)["held_out_dialogues"] == 1


def test_corpora_and_dialogues_exclude_each_other(dialogues_file, tmp_path, capsys):
    assert main(["train", "dial-m-mlm", "--dialogues", str(dialogues_file), "--corpora", "topical-chat",
                 "--output-dir", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and error.endswith(
        "--corpora and --dialogues exclude each other: --dialogues names what Dial-M trains on (a shipped corpus name "
        "among them); leave --corpora out")


def test_validating_on_one_dialogue_is_refused_in_one_line(tmp_path, tiny_checkpoint):
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, train_dial_m_mlm

    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"dialogue": ["hi !", "hello ."]}) + "\n")
    args = _arguments(DialMMLMTrainingArguments, ["--backbone", str(tiny_checkpoint), "--dialogues", str(one),
                                                  "--output-dir", str(tmp_path / "out")])
    with pytest.raises(OptionError, match=r"holds one dialogue \(or one repeated\), and validating needs another held "
                                          r"out: give more dialogues, or --eval-dialogues 0"):
        train_dial_m_mlm(args)


def test_adapt_dial_m_continues_the_lm_stage_on_your_dialogues(dialogues_file, tiny_checkpoint, tmp_path):
    output = tmp_path / "adapted"
    # half held out: the 10 dialogues the checklist needs at least
    assert main(["adapt", "dial-m", "--dialogues", str(dialogues_file), "--init-from", str(tiny_checkpoint),
                 "--output-dir", str(output), "--held-out-share", "0.5", "--max-steps", "1", "--batch-size", "2",
                 "--checklist-pairs", "3"]) == 0
    report = json.loads((output / "adaptation_report.json").read_text())
    dialogues = load_dialogues(dialogues_file)
    trained, held = held_out_dialogues(dialogues, 0.5, seed=0)
    assert report["data"]["dialogues"] == {"source": str(dialogues_file), "rows": 20,
                                           "sha256": rows_sha256(dialogues), "trained_on": 10, "held_out": 10}
    assert len(trained) == 10 and len(held) == 10
    assert [step["command"] for step in report["steps"]] == ["dial-m-mlm"]
    assert report["steps"][0]["arguments"][-4:] == ["--max-steps", "1", "--batch-size", "2"]
    checklist = report["checklist"]
    assert checklist["dialogues"] == f"10 held-out dialogues of {dialogues_file}"
    assert set(checklist["before"]) == set(checklist["after"]) == {"random", "generic"}
    assert all(entry["n"] == 3 for entry in checklist["after"].values())
    record = _record(output)
    assert record["dialogues_count"] == 10 and record["held_out_dialogues"] == 1 and record["arguments"]["max_steps"] == 1
    config = AutoConfig.from_pretrained(output)
    assert {key: getattr(config, key) for key in SETTINGS} == SETTINGS
