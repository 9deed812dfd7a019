"""FineD-Eval on the user's own dialogues (tiny random backbones): ``train fined-eval --dialogues`` builds its pairs
from them and validates on a held-out share, a strategy that needs labels they lack is refused in one line,
``--init-from`` continues a trained model with its settings, and ``adapt fined-eval`` runs its route end to end."""

from __future__ import annotations

import json

import pytest
import torch
from test_fined_eval import DIALOGUES, tiny_backbone, tiny_checkpoint, tiny_model, tokenizer  # noqa: F401  (fixtures)
from transformers import AutoConfig, AutoModel

from hf_dialeval import cli, load_metric
from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues
from hf_dialeval.data.tables import rows_sha256
from hf_dialeval.metrics.fined_eval.train import FineDEvalTrainingArguments, user_dialogues

TOPICS = ["tea", "the weather", "football", "a new job", "their holidays", "a film", "cooking", "music", "books",
          "the garden"]
#: A few cheap settings every run here shares: 2 steps at 64 tokens, on the CPU.
TINY = ["--train-pairs", "16", "--eval-pairs", "8", "--max-steps", "2", "--eval-steps", "2", "--batch-size", "4",
        "--train-max-seq-length", "64", "--use-cpu", "--report-to", "none", "--disable-tqdm", "true"]


@pytest.fixture(scope="module")
def my_dialogues(tmp_path_factory):
    """30 different dialogues of two speakers, each with a generic reply ("OK.") and a question."""
    path = tmp_path_factory.mktemp("dialogues") / "my_dialogues.jsonl"
    path.write_text("".join(json.dumps({"dialogue": [
        f"Hi! Shall we talk about {TOPICS[i % 10]}?", "OK.", f"I have been thinking about it for {i} days.",
        f"Why {i} days?", "Because it matters to me.", "I see, tell me more."]}) + "\n" for i in range(30)))
    return path


def train(*options: str) -> int:
    return cli.main(["train", "fined-eval", *options, *TINY])


def test_train_on_your_own_dialogues_validates_on_a_held_out_share_and_records_them(tmp_path, my_dialogues,
                                                                                   tiny_backbone):  # noqa: F811
    # no DailyDialog: a data directory that does not exist is never read
    out = tmp_path / "run"
    assert train("--output-dir", str(out), "--backbone", tiny_backbone, "--dialogues", str(my_dialogues),
                 "--data-dir", str(tmp_path / "no-data"), "--strategies", "shuffling", "random_substitution",
                 "generic_substitution", "--generic-min-count", "3", "--pair-with-original", "--lora-rank", "2",
                 "--max-seq-length", "128") == 0
    record = json.loads((out / "training_record.json").read_text())
    dialogues = load_dialogues(my_dialogues)
    assert (record["dialogues"], record["dialogues_count"], record["held_out_dialogues"]) == (str(my_dialogues), 30, 10)
    assert record["dialogues_sha256"] == rows_sha256(dialogues)
    assert set(record["strategies"]) == {"shuffling:coherence", "random_substitution:coherence",
                                         "generic_substitution:topic_depth"}
    assert sum(counts["train_pairs"] for counts in record["strategies"].values()) == record["train_pairs"] == 32  # 16 per head
    assert sum(counts["eval_pairs"] for counts in record["strategies"].values()) == record["eval_pairs"] > 0
    assert "eval_accuracy" in record["validation"]
    assert AutoConfig.from_pretrained(out).max_seq_length == 128
    scores = load_metric("fined-eval", checkpoint=str(out)).score_dialogues(DIALOGUES)
    assert list(scores.scores) == ["coherence", "topic_depth"]


def test_the_validation_pairs_come_from_the_held_out_dialogues(tmp_path, my_dialogues):
    args = FineDEvalTrainingArguments(output_dir=str(tmp_path / "run"), dialogues=str(my_dialogues), use_cpu=True,
                                      report_to=[])
    data = user_dialogues(args)
    kept, held = held_out_dialogues(load_dialogues(my_dialogues), 10 / 30, args.seed)
    assert data.train["dialogue"] == kept["dialogue"] and data.validation["dialogue"] == held["dialogue"]
    assert data.validation_source == f"the 10 held-out dialogues of {my_dialogues}"


@pytest.mark.parametrize(("options", "message"), [
    (["--strategies", "shuffling", "positive_emotions"],
     ("--strategies positive_emotions reads DailyDialog's own emotion labels (--emotion-model gold), which --dialogues "
      "DIALOGUES does not carry: give --emotion-model an emotion classifier (id or folder; the paper's: "
      "mrm8488/t5-base-finetuned-emotion), or leave positive_emotions out of --strategies")),
    ([], "--strategies positive_emotions reads DailyDialog's own emotion labels"),  # the default strategies
    (["--strategies", "generic_substitution", "--generic-min-count", "21"],  # "OK." is said in 20 of them
     ("--strategies generic_substitution: no utterance of the 20 dialogues trained on of DIALOGUES occurs "
      "--generic-min-count 21 times or more: give a lower --generic-min-count, or leave generic_substitution out")),
])
def test_what_your_dialogues_cannot_give_is_refused_in_one_line(tmp_path, capsys, my_dialogues, options, message):
    assert train("--output-dir", str(tmp_path / "run"), "--dialogues", str(my_dialogues), *options) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message.replace("DIALOGUES", str(my_dialogues)) in error
    assert not (tmp_path / "run" / "training_record.json").exists()


def test_too_few_dialogues_are_refused(tmp_path, capsys):
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps({"dialogue": dialogue}) + "\n" for dialogue in DIALOGUES))
    assert train("--output-dir", str(tmp_path / "run"), "--dialogues", str(few), "--strategies", "shuffling") == 2
    assert f"--dialogues {few} holds 3 different dialogue(s): give 4 or more" in capsys.readouterr().err


def test_init_from_continues_a_trained_model_with_its_settings(tmp_path, my_dialogues, tiny_checkpoint):  # noqa: F811
    out = tmp_path / "run"
    assert train("--output-dir", str(out), "--init-from", tiny_checkpoint, "--dialogues", str(my_dialogues),
                 "--strategies", "shuffling", "echo_substitution:likability", "--pair-with-original",
                 "--lora-rank", "0", "--adapter-rank", "4", "--learning-rate", "1e-2") == 0
    start, trained = AutoModel.from_pretrained(tiny_checkpoint), AutoModel.from_pretrained(out)
    for setting in ("dimensions", "max_seq_length", "long_dialogue", "adjacency_bins", "backbone_config"):
        assert getattr(trained.config, setting) == getattr(start.config, setting)
    trained_weights = trained.state_dict()
    layer = next(name for name in trained_weights if name.endswith("layer.0.attention.self.query.weight"))
    assert not torch.equal(trained_weights[layer], start.state_dict()[layer])
    assert not torch.equal(trained_weights["score_heads.weight"][:2], start.state_dict()["score_heads.weight"][:2])
    record = json.loads((out / "training_record.json").read_text())
    assert record["arguments"]["max_seq_length"] == start.config.max_seq_length
    full = load_metric("fined-eval", checkpoint=str(out)).score_dialogues(DIALOGUES)
    adapter = load_metric("fined-eval", checkpoint=str(out / "adapter")).score_dialogues(DIALOGUES)
    assert full.overall == pytest.approx(adapter.overall, abs=1e-4)


@pytest.fixture(scope="module")
def checkpoint_with_adjacency_head(tmp_path_factory, tokenizer, tiny_backbone):  # noqa: F811
    path = tmp_path_factory.mktemp("with_adjacency_head")
    tiny_model(tokenizer, tiny_backbone, adjacency_bins=3).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize(("options", "message"), [
    (["--max-seq-length", "64"], ("--max-seq-length 64: --init-from {checkpoint} keeps its own 128, which a "
                                  "continued model scores with: leave --max-seq-length out")),
    (["--long-dialogue", "keep_end"], "--long-dialogue keep_end: --init-from {checkpoint} keeps its own window"),
    (["--adjacency-bins", "5"], ("--adjacency-bins 5: --init-from {checkpoint} has an adjacency head of 3 bins, "
                                 "which it keeps: leave --adjacency-bins out")),
    (["--backbone", "{copy}"], ("--backbone {copy}: --init-from {checkpoint} brings its own ({backbone}): leave "
                                "--backbone out")),
    (["--lora-rank", "4"], "--init-from continues a trained model in full"),
])
def test_an_option_that_would_change_a_continued_model_is_refused(tmp_path, capsys, my_dialogues, tiny_backbone,  # noqa: F811
                                                                  checkpoint_with_adjacency_head, options, message):
    names = {"checkpoint": checkpoint_with_adjacency_head, "copy": str(tmp_path / "copy"), "backbone": tiny_backbone}
    assert train("--output-dir", str(tmp_path / "run"), "--init-from", checkpoint_with_adjacency_head, "--dialogues",
                 str(my_dialogues), "--strategies", "shuffling", "--lora-rank", "0",
                 *[option.format(**names) for option in options]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message.format(**names) in error


def test_adapt_fined_eval_on_dialogues_runs_its_route_and_the_checklist(tmp_path, my_dialogues,
                                                                        tiny_checkpoint):  # noqa: F811
    output = tmp_path / "adapted"
    # the route's CPU-sized flags, then these (which win): 1 step at the tiny backbone's length; a third of the 30
    # dialogues held out, the 10 the checklist needs
    assert cli.main(["adapt", "fined-eval", "--dialogues", str(my_dialogues), "--init-from", tiny_checkpoint,
                     "--output-dir", str(output), "--held-out-share", "0.34", "--checklist-pairs", "3", "--max-steps",
                     "1", "--train-max-seq-length", "64"]) == 0
    report = json.loads((output / "adaptation_report.json").read_text())
    assert report["data"]["dialogues"] == {"source": str(my_dialogues), "rows": 30,
                                           "sha256": rows_sha256(load_dialogues(my_dialogues)), "trained_on": 20,
                                           "held_out": 10}
    assert "held_out" not in report  # no ratings: nothing to agree with
    assert [step["command"] for step in report["steps"]] == ["fined-eval"]
    assert report["steps"][0]["arguments"][-4:] == ["--max-steps", "1", "--train-max-seq-length", "64"]
    checklist = report["checklist"]
    assert checklist["dialogues"] == f"10 held-out dialogues of {my_dialogues}"
    for when in ("before", "after"):
        assert {name: entry["n"] for name, entry in checklist[when].items()} == {"random": 3, "generic": 3}
        assert all(0 <= entry["win_rate"] <= 1 for entry in checklist[when].values())
    record = json.loads((output / "training_record.json").read_text())
    assert record["dialogues_count"] == 20 and record["held_out_dialogues"] == 10
    assert set(record["strategies"]) >= {"shuffling:coherence", "generic_substitution:likability",
                                         "repeat_substitution:topic_depth"}
    assert AutoConfig.from_pretrained(output).dimensions == AutoConfig.from_pretrained(tiny_checkpoint).dimensions
    load_metric("fined-eval", checkpoint=str(output)).score_dialogues(DIALOGUES)
