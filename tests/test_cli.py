import json

import pytest

from hf_dialeval.cli import main


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
