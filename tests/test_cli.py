import json
import subprocess
import sys

import pytest

from hf_dialeval.cli import main
from hf_dialeval.cli.errors import UsageError
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import DialEvalError, OptionError, UnknownNameError
from hf_dialeval.inference.metric import NonFiniteOutputError
from hf_dialeval.inference.resume import ResumeError
from hf_dialeval.inference.streaming import OutputWriteError
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.output_lock import OutputLocked
from hf_dialeval.registry import entry


def test_score_dialogue_jsonl(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({"dialogue": ["hi", "hello there friend", "bye", "see you"], "speakers": ["User", "System", "User", "System"]})
        + "\n\n" + json.dumps({"dialogue": ["a", "b c"]}) + "\n"
    )
    target = tmp_path / "out.jsonl"
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(target)]) == 0
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["overall"] for r in rows] == [2.5, 2.0]
    assert rows[0]["scores"] == {"length": 2.5} and rows[0]["truncated"] is False
    assert rows[1]["dialogue"] == ["a", "b c"]


def test_score_turn_jsonl_to_stdout(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"context": ["hi"], "response": "one two"}) + "\n")
    assert main(["score", "--metric", "length", "--input", str(source)]) == 0
    assert json.loads(capsys.readouterr().out)["overall"] == 2.0


def test_score_reports_bad_items(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"dialogue": ["hi"]}) + "\n" + json.dumps({"dialogue": []}) + "\n")
    assert main(["score", "--metric", "length", "--input", str(source)]) == 2
    assert "item 1, field 'dialogue'" in capsys.readouterr().err


def test_benchmark_writes_the_schema(tmp_path, capsys, data_dir):
    output = tmp_path / "r.json"
    code = main(["benchmark", "--metric", "length", "--benchmark", "fed-dialogue", "--data-dir", str(data_dir),
                 "--output", str(output), "--plot", str(tmp_path / "plots")])
    assert code == 0
    result = json.loads(output.read_text())
    assert result["n"] == 125 and result["benchmark"] == "fed-dialogue" and result["metric"] == "length"
    assert result["dimensions"]["Overall"]["spearman"] == pytest.approx(0.233, abs=0.005)
    assert "| Overall | 125 |" in capsys.readouterr().out
    assert len(list((tmp_path / "plots").glob("*.png"))) == 11


def test_benchmark_on_a_json_release(tmp_path, capsys):
    release = tmp_path / "release.json"
    release.write_text(json.dumps({
        "contexts": [["hi"], ["hello"], ["hey"], ["yo"]],
        "responses": ["a", "a b", "a b c", "a b c d"],
        "scores": [1, 2, 4, 3],
    }))
    output = tmp_path / "r.json"
    assert main(["benchmark", "--metric", "length", "--benchmark", f"json:{release}", "--output", str(output)]) == 0
    assert json.loads(output.read_text())["dimensions"]["score"]["spearman"] == pytest.approx(0.8)


def test_help_explains_inputs(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "turn level" in capsys.readouterr().out


def test_main_help_lists_every_metric(capsys):
    from hf_dialeval.registry import METRICS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = out[out.index("metrics (--metric NAME"):]
    assert all(f"  {name} " in listed for name in METRICS)


def test_input_mistakes_that_need_no_model_fail_before_it_loads(tmp_path, capsys, monkeypatch):
    from hf_dialeval.metrics.rade.scoring import RADEMetric

    def no_model(*args, **kwargs):  # the metric's class is there; loading its model fails the test
        raise AssertionError("the model was loaded before the input was checked")

    monkeypatch.setattr(RADEMetric, "load", classmethod(no_model))
    items = tmp_path / "turns.jsonl"
    items.write_text(json.dumps({"context": ["Hi"], "response": "Hello"}) + "\n", encoding="utf-8")
    assert main(["score", "--metric", "rade", "--input", str(items)]) == 2
    assert "item 0, field 'reference': the item has no reference" in capsys.readouterr().err
    folder = tmp_path / "folder"
    folder.mkdir()
    assert main(["score", "--metric", "rade", "--input", str(folder)]) == 2
    assert f"--input {folder} is a folder" in capsys.readouterr().err
    release = tmp_path / "release.json"
    release.write_text(json.dumps({"contexts": [["Hi"]], "responses": ["Hello"], "scores": [3]}), encoding="utf-8")
    assert main(["benchmark", "--metric", "rade", "--benchmark", f"json:{release}"]) == 2
    assert "field 'reference'" in capsys.readouterr().err


BUG_IN_A_METRIC = """
import sys
from hf_dialeval.cli import main
from hf_dialeval.metrics.length.scoring import LengthMetric

def broken(self, *args):
    raise KeyError("a bug in the metric")

LengthMetric._score_turns = broken
sys.exit(main(sys.argv[1:]))
"""


def test_a_bug_shows_its_traceback_while_a_user_error_is_one_line(tmp_path, capsys):
    items = tmp_path / "turns.jsonl"
    items.write_text(json.dumps({"context": ["Hi"], "response": "Hello there"}) + "\n", encoding="utf-8")
    argv = ["score", "--metric", "length", "--input", str(items)]
    run = subprocess.run([sys.executable, "-c", BUG_IN_A_METRIC, *argv], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 1 and "Traceback (most recent call last)" in run.stderr, run.stderr
    assert run.stderr.rstrip().endswith("KeyError: 'a bug in the metric'")
    # the same command on a bad input: one line, status 2
    items.write_text(json.dumps({"context": ["Hi"], "response": 3}) + "\n", encoding="utf-8")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "item 0, field 'response'" in err, err
    with pytest.raises(DialogueValidationError):  # --debug: the traceback of a user error too
        main([*argv, "--debug"])


def test_user_errors_share_the_package_base_and_keep_their_builtin():
    with pytest.raises(UnknownNameError) as unknown:
        entry("no-such-metric")
    assert isinstance(unknown.value, KeyError) and isinstance(unknown.value, ValueError)
    assert str(unknown.value).startswith("unknown metric 'no-such-metric'")  # not quoted as a KeyError's
    for error_class in (DialogueValidationError, CheckpointError, OutputLocked, ResumeError, OutputWriteError,
                        NonFiniteOutputError, OptionError, UsageError):
        assert issubclass(error_class, DialEvalError), error_class


def test_options_that_training_arguments_refuses_are_one_line(tmp_path, capsys):
    assert main(["train", "quantidce-mlr", "--output-dir", str(tmp_path / "run"), "--lora-rank", "0",
                 "--eval-strategy", "steps", "--save-strategy", "epoch", "--load-best-model-at-end", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--load_best_model_at_end requires the save and eval strategy to match" in err


def test_a_checkpoint_folder_that_holds_no_model_is_one_line(tmp_path, capsys):
    items = tmp_path / "turns.jsonl"
    items.write_text(json.dumps({"context": ["Hi"], "response": "Hello"}) + "\n", encoding="utf-8")
    folder = tmp_path / "empty"
    folder.mkdir()
    assert main(["score", "--metric", "quantidce", "--checkpoint", str(folder), "--input", str(items)]) == 2
    assert capsys.readouterr().err == f"hf-dialeval: error: {folder} holds no config.json: give the folder a model was " \
                                      "saved into (save_pretrained, or a train command's --output-dir)\n"
