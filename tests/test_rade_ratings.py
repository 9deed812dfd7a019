"""RADE fine-tuned on a user's own ratings (``train rade --ratings``, ``adapt rade``): the scores mapped onto RADE's
scale, a tiny random RADE checkpoint continued (its settings kept) on a CSV with references, the held-out share
validated on, ``adapt`` measured before and after; a bad file or option refused in one line before any model
loads."""

from __future__ import annotations

import csv
import json

import datasets
import pytest
from test_rade import tiny_rade_for
from transformers import AutoConfig, AutoTokenizer

import hf_dialeval  # noqa: F401  (registers RADE with the Auto classes)
from hf_dialeval.cli import main
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.rade.data import user_score_range, user_training_ratings
from hf_dialeval.metrics.rade.train import RADETrainingArguments, train_rade
from hf_dialeval.modeling.offline_models import offline_backbone_path

pytestmark = pytest.mark.filterwarnings("ignore:Version v4.12.0 introduces:FutureWarning")  # EncoderDecoderModel's

TOPICS = ["tea", "the weather", "football", "a new job", "their holidays", "a film", "cooking", "music"]


def _rows(with_reference: bool = True) -> list[dict]:
    """Three replies to each of eight contexts, scored 0-10 (the scores given run from 1 to 9)."""
    rows = []
    for topic in TOPICS:
        context = f"Hello!\nHi, shall we talk about {topic}?"
        reference = {"reference": f"Sure, {topic} is a fine subject."} if with_reference else {}
        rows += [{"context": context, "response": f"Yes, I love talking about {topic}.", "score": 9, **reference},
                 {"context": context, "response": "I don't know.", "score": 4, **reference},
                 {"context": context, "response": "The train leaves at noon from platform nine.", "score": 1,
                  **reference}]
    return rows


def _write_csv(path, rows: list[dict]):
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def ratings_csv(tmp_path):
    return _write_csv(tmp_path / "my_ratings.csv", _rows())


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A tiny random BERT-to-BERT RADE saved as a full model with the MiniLM tokenizer (max_seq_length 48,
    max_reference_length 12)."""
    folder = tmp_path_factory.mktemp("tiny-rade")
    tokenizer = AutoTokenizer.from_pretrained(offline_backbone_path())
    tiny_rade_for(tokenizer, seed=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ---- the score mapping -------------------------------------------------------------------------------------------

def test_a_zero_to_ten_scale_maps_linearly_onto_rades_one_to_five():
    ratings = datasets.Dataset.from_list([
        {"context": ["hi"], "response": reply, "score": score, "reference": "hello", "condition": None}
        for reply, score in (("a", 0.0), ("b", 2.5), ("c", 5.0), ("d", 10.0))])
    rows = user_training_ratings(ratings, (0.0, 10.0), (1.0, 5.0))
    assert rows.column_names == ["context", "response", "reference", "Overall"]
    assert rows["Overall"] == pytest.approx([1.0, 2.0, 3.0, 5.0])
    assert rows["reference"] == ["hello"] * 4 and rows["response"] == ["a", "b", "c", "d"]


def test_the_scale_is_the_scores_given_unless_score_range_names_it():
    assert user_score_range([4.0, 9.0, 1.0], None, "r.csv") == (1.0, 9.0)
    assert user_score_range([4.0, 9.0, 1.0], [0, 10], "r.csv") == (0.0, 10.0)
    with pytest.raises(OptionError, match=r"^r.csv, row 1: score 11 lies outside --score-range 0 10: give a range "
                                          r"that holds every score$"):
        user_score_range([4.0, 11.0], [0, 10], "r.csv")
    with pytest.raises(DialogueValidationError, match=r"^r.csv: every score is 3, which gives RADE nothing to learn"):
        user_score_range([3.0, 3.0], None, "r.csv")


# ---- train rade --ratings ----------------------------------------------------------------------------------------

def _arguments(tmp_path, ratings, **overrides) -> RADETrainingArguments:
    values = dict(output_dir=str(tmp_path / "run"), ratings=str(ratings), max_steps=2, per_device_train_batch_size=4,
                  per_device_eval_batch_size=8, learning_rate=1e-3, lora_rank=0, logging_steps=1, use_cpu=True,
                  report_to=[], disable_tqdm=True)
    return RADETrainingArguments(**{**values, **overrides})


def test_train_rade_on_ratings_continues_the_checkpoint_and_validates_on_held_out_contexts(tmp_path, ratings_csv,
                                                                                         tiny_checkpoint):
    out = train_rade(_arguments(tmp_path, ratings_csv, init_from=str(tiny_checkpoint), held_out_share=0.25,
                                score_range=[0, 10], eval_strategy="steps", eval_steps=1, save_strategy="steps",
                                save_steps=1))
    record = json.loads((out / "training_record.json").read_text())
    assert record["ratings"] == str(ratings_csv) and record["continued"] == str(tiny_checkpoint)
    assert (record["train_ratings"], record["validation_ratings"]) == (18, 6)  # 2 of the 8 contexts held out
    assert record["score_range"] == {"ratings": [0.0, 10.0], "model": [1.0, 5.0]}
    assert "train_data" not in record and record["arguments"]["train_data"] is None
    assert -1.0 <= record["validation"]["eval_spearman"] <= 1.0
    steps = [entry for entry in record["log_history"] if "loss" in entry]
    # no reference score is known: MSE(reference) and L_PR are zero, and the loss is MSE(candidate) + L_GEN
    assert len(steps) == 2 and all(entry["mse_reference"] == 0 and entry["ranking"] == 0 for entry in steps)
    # a continued model keeps its settings (the options' defaults are 256 and 64)
    config = AutoConfig.from_pretrained(out)
    assert (config.max_seq_length, config.max_reference_length) == (48, 12)


def test_ratings_continue_the_shipped_rade_unless_init_from_names_another(tmp_path, ratings_csv, monkeypatch):
    import hf_dialeval.metrics.rade.train as rade_train
    from hf_dialeval.metrics.rade import DEFAULT_CHECKPOINT

    started = []

    def record_start(checkpoint, *_args):
        started.append(checkpoint)
        raise InterruptedError

    monkeypatch.setattr(rade_train, "starting_model", record_start)
    with pytest.raises(InterruptedError):
        train_rade(_arguments(tmp_path, ratings_csv, held_out_share=0, eval_strategy="no"))
    assert started == [str(DEFAULT_CHECKPOINT)]
    arguments = _arguments(tmp_path, ratings_csv, held_out_share=0, eval_strategy="no")
    assert "backbone" not in arguments.models_to_load()  # offline, --backbone's default is never looked for


def test_ratings_without_references_are_refused_in_one_line_before_any_model_loads(tmp_path, capsys, monkeypatch):
    import hf_dialeval.metrics.rade.train as rade_train

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(rade_train, "starting_model", no_model)
    ratings = _write_csv(tmp_path / "no_references.csv", _rows(with_reference=False))
    assert main(["train", "rade", "--ratings", str(ratings), "--output-dir", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert (f"{ratings} has no column 'reference' (the rating's reference); its columns: context, response, score; "
            "name the one that holds it with --reference-column") in error
    blank = _rows()
    blank[4]["reference"] = ""
    ratings = _write_csv(tmp_path / "a_blank_reference.csv", blank)
    assert main(["train", "rade", "--ratings", str(ratings), "--output-dir", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert (f"{ratings}, row 4, column 'reference': no reference: this metric compares the reply with a human "
            "reference") in error
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("options", "message"), [
    (["--ratings", "RATINGS", "--train-data", "rade-emotion"],
     "--ratings trains on your ratings instead of RADE's data: leave out --train-data"),
    (["--ratings", "RATINGS", "--eval-data", "rade-emotion", "--balance-sources"],
     "--ratings trains on your ratings instead of RADE's data: leave out --eval-data and --balance-sources"),
    (["--score-range", "0", "10"], "--score-range is the scale of the --ratings scores: give --ratings too"),
    (["--ratings", "RATINGS", "--score-range", "10", "0"],
     "--score-range takes LOW HIGH, two numbers with LOW below HIGH (e.g. --score-range 0 10), not 10.0 0.0"),
    (["--ratings", "RATINGS", "--score-range", "0", "5"],
     "row 0: score 9 lies outside --score-range 0 5: give a range that holds every score"),
])
def test_bad_ratings_options_are_one_line(tmp_path, ratings_csv, capsys, monkeypatch, options, message):
    import hf_dialeval.metrics.rade.train as rade_train

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(rade_train, "starting_model", no_model)
    options = [str(ratings_csv) if option == "RATINGS" else option for option in options]
    assert main(["train", "rade", *options, "--output-dir", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error


# ---- adapt rade --------------------------------------------------------------------------------------------------

def test_adapt_rade_on_ratings_with_references(tmp_path, tiny_checkpoint, capsys):
    # 56 contexts: the held-out fifth is more than the 10 contexts a held-out correlation needs at least
    ratings_csv = _write_csv(tmp_path / "my_ratings.csv", [
        {**row, "context": row["context"].replace("Hello!", f"Hello, I am {name}!")}
        for name in ("Ann", "Bob", "Cy", "Di", "Ed", "Flo", "Gus") for row in _rows()])
    output = tmp_path / "adapted"
    assert main(["adapt", "rade", "--ratings", str(ratings_csv), "--init-from", str(tiny_checkpoint),
                 "--output-dir", str(output), "--max-steps", "1", "--checklist-pairs", "3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    report = json.loads((output / "adaptation_report.json").read_text())
    assert report["data"]["ratings"]["trained_on"] + report["data"]["ratings"]["held_out"] == 168
    assert [step["command"] for step in report["steps"]] == ["rade"]
    assert report["steps"][0]["arguments"][:2] == ["--stage", "finetune"]
    assert report["steps"][0]["arguments"][-2:] == ["--max-steps", "1"]
    held_out = report["held_out"]
    assert {"before", "after", "floors"} <= held_out.keys()
    assert held_out["before"]["n"] == held_out["after"]["n"] == report["data"]["ratings"]["held_out"]
    assert {"similarity", "length", "reference-similarity"} <= held_out["floors"].keys()
    assert summary["spearman_after"] == held_out["after"]["spearman"]
    checklist = report["checklist"]
    assert set(checklist["before"]) == set(checklist["after"]) == {"random", "generic"}
    assert list(checklist["floors"]) == ["similarity", "reference-similarity"]
    record = json.loads((output / "training_record.json").read_text())
    assert record["train_ratings"] == report["data"]["ratings"]["trained_on"] and "validation_ratings" not in record
    assert record["score_range"] == {"ratings": [1.0, 9.0], "model": [1.0, 5.0]}
    assert record["arguments"]["init_from"] == str(tiny_checkpoint) and record["arguments"]["max_steps"] == 1
    assert AutoConfig.from_pretrained(output).max_reference_length == 12
