"""One training entry for every metric: each train command's light options and its ``TrainingArguments``
subclass agree, the command line takes every ``TrainingArguments`` option beside the metric's, and every run
writes one layout (merged model, ``adapter/``, ``full/``, ``training_record.json``) whose parts load to the same
scores."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest
from transformers import TrainingArguments

from hf_dialeval import cli
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.registry import train_commands
from hf_dialeval.training.arguments import DialEvalTrainingArguments, parse_training_flags, training_arguments

from conftest import save_tiny_bert

COMMANDS = sorted(train_commands())
#: The options a command requires besides --output-dir (the train function is not run: no folder need exist).
REQUIRED = {"quantidce-kd": {"teacher": "runs/teacher"}, "fined-eval-pair-weight": {"pair_encoder": "runs/pair"},
            "holistic-eval-default": {"run": "runs/he", "token_reduction": "mean"}}
CONTEXTS = [["Hi, how are you?", "Fine, and you?"], ["Do you like tea?"]]
RESPONSES = ["Great, thanks for asking.", "Yes, green tea especially."]


def _scores(checkpoint) -> list[float]:
    model, tokenizer = load_checkpoint("quantidce", checkpoint)
    return QuantiDCEMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall


@pytest.mark.parametrize("name", COMMANDS)
def test_options_and_training_arguments_agree(name):
    command = train_commands()[name]
    options, arguments = command.options, command.arguments_class
    assert issubclass(arguments, DialEvalTrainingArguments) and issubclass(arguments, TrainingArguments)
    assert issubclass(arguments, options)
    light = {field.name: field for field in dataclasses.fields(options)}
    full = {field.name: field for field in dataclasses.fields(arguments)}
    assert set(light) < set(full)
    for field_name, field in light.items():  # the metric's defaults win over TrainingArguments'
        assert full[field_name].default == field.default and full[field_name].default_factory == field.default_factory


@pytest.mark.parametrize("name", COMMANDS)
def test_command_line_takes_metric_options_and_every_training_argument(tmp_path, name):
    argv = ["train", name, "--output-dir", str(tmp_path / "run"), "--batch-size", "4", "--epochs", "2",
            "--gradient_accumulation_steps", "3", "--adam-beta2", "0.99", "--adapter-rank", "8"]
    options = {field.name for field in dataclasses.fields(train_commands()[name].options)}
    for option, value in REQUIRED.get(name, {}).items():
        argv += [f"--{option.replace('_', '-')}", value]
    if "lora_rank" in options:
        argv += ["--lora-rank", "0"]
    if "backbone" in options:  # a backbone that is here: the paper's may not be
        argv += ["--backbone", save_tiny_bert(tmp_path / "backbone")]
    arguments_class = train_commands()[name].arguments_class
    arguments = training_arguments(arguments_class, vars(cli.build_parser(argv).parse_args(argv)))
    assert isinstance(arguments, arguments_class)
    # adapt's stages: the same flags give the same arguments
    assert parse_training_flags(arguments_class, argv[2:], name) == arguments
    assert (arguments.per_device_train_batch_size, arguments.num_train_epochs) == (4, 2.0)
    assert (arguments.gradient_accumulation_steps, arguments.adam_beta2, arguments.adapter_rank) == (3, 0.99, 8)
    assert arguments.output_dir == str(tmp_path / "run") and not arguments.remove_unused_columns
    assert arguments.save_total_limit == 2  # the best and the last checkpoint, removed when the run ends


@pytest.mark.parametrize("command, conflict, message", [
    ("quantidce-mlr", ["--lora-rank", "4", "--adapter-rank", "8"], "--adapter-rank factors a full fine-tuning"),
    ("quantidce-mlr", ["--lora-rank", "4", "--average-last", "3"], "--average-last averages full-model checkpoints"),
    ("quantidce-mlr", ["--lora-rank", "-1"], "must be 0 or more"),
    ("holistic-eval", ["--pmi-weight", "1.5", "--context-coherence-measure", "pmi"],
     "--pmi-weight must be in [0, 1] (1: the pointwise mutual information, 0: Eq. 1's likelihood), not 1.5"),
    ("holistic-eval", ["--pmi-weight", "0.7"],
     "--pmi-weight weighs the pmi measure: give --context-coherence-measure pmi"),
])
def test_conflicting_options_are_one_line_errors(tmp_path, capsys, command, conflict, message):
    code = cli.main(["train", command, "--output-dir", str(tmp_path), *conflict])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("command, values, message", [
    ("quantidce-mlr", ["--batch-size", "0"], "--per-device-train-batch-size (--batch-size) must be 1 or more, not 0"),
    ("quantidce-selection", ["--per-device-train-batch-size", "0"],
     "--per-device-train-batch-size (--batch-size) must be 1 or more, not 0"),
    ("rade", ["--epochs", "-3"], "--num-train-epochs (--epochs) must be above 0, not -3.0"),
    ("fined-eval", ["--num-train-epochs", "-3"], "--num-train-epochs (--epochs) must be above 0, not -3.0"),
    ("holistic-eval", ["--learning-rate", "0"], "--learning-rate must be above 0, not 0.0"),
    ("dial-m", ["--learning-rate", "nan"], "--learning-rate must be finite and above 0, not nan"),
    # inf passes "above 0": every range refuses a value that is not finite
    ("rade", ["--epochs", "inf"], "--num-train-epochs (--epochs) must be finite and above 0, not inf"),
    ("quantidce-mlr", ["--learning-rate", "inf"], "--learning-rate must be finite and above 0, not inf"),
    ("fined-eval", ["--weight-decay", "inf"], "--weight-decay must be finite and 0 or more, not inf"),
    ("fined-eval", ["--lora-dropout=-inf"], "--lora-dropout must be finite and in [0, 1), not -inf"),
    ("fined-eval", ["--max-steps", "-2"], "--max-steps must be -1 (train --epochs) or more, not -2"),
    ("quantidce-mlr", ["--warmup-steps", "-0.1"], "--warmup-steps must be 0 or more, not -0.1"),
    ("rade", ["--adam-beta1", "1.5"], "--adam-beta1 must be in [0, 1), not 1.5"),
    ("rade", ["--degenerate-negatives", "2"], "--degenerate-negatives must be in [0, 1], not 2.0"),
    ("fined-eval", ["--lora-dropout", "1"], "--lora-dropout must be in [0, 1), not 1.0"),
    ("holistic-eval", ["--lora-layers", "0", "-1"], "--lora-layers must be 0 or more each, not [0, -1]"),
    ("holistic-eval", ["--percentile", "50"], "--percentile must be in (0, 50), not 50.0"),
    ("dial-m-mlm", ["--mlm-probability", "0"], "--mlm-probability must be in (0, 1], not 0.0"),
    ("quantidce-mlr", ["--mlp-hidden-sizes", "16", "0"], "--mlp-hidden-sizes must be 1 or more each, not [16, 0]"),
    ("quantidce-selection", ["--temperature", "0"], "--temperature must be above 0, not 0.0"),
    ("quantidce-kd", ["--teacher", "runs/teacher", "--beta", "-1"], "--beta must be 0 or more, not -1.0"),
    ("dial-m", ["--eval-dialogues", "-1"], "--eval-dialogues must be 0 or more, not -1"),
    ("fined-eval", ["--adapter-rank", "-8"], "--adapter-rank must be 0 or more, not -8"),
    # TrainingArguments options the command does not declare: checked as its training arguments are made
    ("quantidce-mlr", ["--max-steps", "-5"], "--max-steps must be -1 (train --epochs) or more, not -5"),
    ("quantidce-kd", ["--teacher", "runs/teacher", "--gradient-accumulation-steps", "0"],
     "--gradient-accumulation-steps must be 1 or more, not 0"),
    ("quantidce-mlr", ["--per-device-eval-batch-size", "0"], "--per-device-eval-batch-size must be 1 or more, not 0"),
])
def test_a_value_out_of_range_is_one_line_and_creates_no_folder(tmp_path, capsys, command, values, message):
    run = tmp_path / "run"
    assert cli.main(["train", command, "--output-dir", str(run), *values]) == 2
    err = capsys.readouterr().err
    assert err == f"hf-dialeval: error: {message}\n"
    assert not run.exists()  # a rerun with the value fixed is not refused as a non-empty --output-dir


@pytest.mark.parametrize("name", COMMANDS)
def test_every_range_names_an_option_of_its_command_and_the_defaults_are_in_range(tmp_path, name):
    arguments = train_commands()[name].arguments_class
    fields = {field.name for field in dataclasses.fields(arguments)}
    assert set(arguments.option_ranges()) <= fields  # a misspelt option would never be checked
    arguments(output_dir=str(tmp_path / "run"), report_to=[], **REQUIRED.get(name, {}))  # made, so every default is in range


def test_a_run_folder_that_is_not_empty_is_refused_before_training(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "training_record.json").write_text("{}", encoding="utf-8")
    assert cli.main(["train", "quantidce-mlr", "--output-dir", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--output-dir {run} is not empty: give another folder, or --overwrite-output-dir" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]  # no lock or scratch folder left


@pytest.mark.parametrize("argv, option, offline", [
    (["rade"], "--backbone facebook/bart-base", "--backbone sentence-transformers/all-MiniLM-L6-v2"),
    (["holistic-eval"], "--backbone gpt2", "--from-scratch"),
    (["dial-m-mlm"], "--backbone roberta-base", "--backbone sentence-transformers/all-MiniLM-L6-v2"),
    (["dial-m"], "--backbone roberta-base", "a stage-1 run folder"),
    (["fined-eval", "--emotion-model", "mrm8488/t5-base-finetuned-emotion"],
     "--emotion-model mrm8488/t5-base-finetuned-emotion", "--emotion-model gold"),
    (["fined-eval", "--strategies", "shuffling", "qa_relevance"], "--qa-model iarfmoose/bert-base-cased-qa-evaluator",
     "leave qa_relevance out of --strategies"),
])
@pytest.mark.slow
def test_a_model_that_is_not_here_fails_at_once_naming_the_offline_option(tmp_path, argv, option, offline):
    # offline (no Hub, no cached copy), in a new process: the check runs before the training libraries import
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "hf_dialeval.cli", "train", *argv, "--output-dir", str(tmp_path / "r")],
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
                         capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith(f"hf-dialeval: error: {option} cannot be loaded") and offline in run.stderr
    assert "torch" not in run.stdout and elapsed < 10, elapsed  # seconds, not a minute of Hub retries


def test_every_train_command_runs_offline_with_its_offline_choices():
    for name, command in train_commands().items():
        options_class = command.options
        for option, hint in options_class.OFFLINE_CHOICES.items():
            assert hint.startswith(("give --", "leave ")), (name, option)
    fined_eval = train_commands()["fined-eval"].options(output_dir="r")
    assert fined_eval.models_to_load() == {"backbone": "sentence-transformers/all-MiniLM-L6-v2"}  # defaults: offline


def test_help_lists_the_metric_options_and_the_training_arguments_note(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "quantidce-mlr", "--help"])
    out = capsys.readouterr().out
    assert "--separation-margin" in out and "--lora-rank" in out and "--batch-size" in out
    assert "Every transformers.TrainingArguments option is accepted" in out


@pytest.mark.slow
def test_full_fine_tuning_run_layout_through_the_command_line(tmp_path, data_dir):
    """MLR with the layers fine-tuned in full and factored at a rank that keeps every weight change (the tiny
    backbone's hidden size), then KD from its full model factored again: each run's merged model, adapter/
    and full/ give the same scores (the adapter is stored in float16)."""
    backbone = save_tiny_bert(tmp_path / "backbone")
    mlr = tmp_path / "mlr"
    assert cli.main(["train", "quantidce-mlr", "--output-dir", str(mlr), "--backbone", backbone,
                     "--data-dir", str(data_dir), "--max-contexts", "4", "--eval-contexts", "2", "--max-seq-length",
                     "48", "--mlp-hidden-sizes", "16", "8", "--lora-rank", "0", "--adapter-rank", "32",
                     "--learning-rate", "1e-3", "--gradient-accumulation-steps", "2", "--batch-size", "1",
                     "--logging-steps", "1"]) == 0
    record = json.loads((mlr / "training_record.json").read_text())
    assert record["arguments"]["gradient_accumulation_steps"] == 2 and record["train_contexts"] == 4
    assert "eval_loss" in record["validation"] and any("loss" in entry for entry in record["log_history"])
    assert not list(mlr.glob("checkpoint-*"))
    merged = _scores(mlr)
    assert _scores(mlr / "full") == pytest.approx(merged, abs=1e-5)
    assert _scores(mlr / "adapter") == pytest.approx(merged, abs=2e-3)

    kd = tmp_path / "kd"
    assert cli.main(["train", "quantidce-kd", "--teacher", str(mlr / "full"), "--output-dir", str(kd),
                     "--data-dir", str(data_dir), "--epochs", "1", "--batch-size", "30", "--learning-rate", "1e-3",
                     "--adapter-rank", "32"]) == 0
    student = _scores(kd)
    assert student != merged
    # the adapter is relative to the untrained backbone (what loading rebuilds), not to the teacher it started from
    assert _scores(kd / "adapter") == pytest.approx(student, abs=2e-3)


@pytest.mark.parametrize("name", sorted(train_commands()))
def test_every_train_function_opens_its_run_with_the_shared_step(name):
    """Each train function starts as training/steps.py's open_run starts a run: its checks, then the seed."""
    import inspect

    assert "open_run(args)" in inspect.getsource(inspect.unwrap(train_commands()[name].train_function))
