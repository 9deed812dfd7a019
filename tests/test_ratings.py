"""A user's own ratings as a train command reads them (hf_dialeval.data.ratings): every format and source, column
mapping, the held-out share by context, and one line for each thing that is wrong, before any model loads."""

import json

import datasets
import pytest

from hf_dialeval import cli
from hf_dialeval.data.columns import Columns
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.errors import OptionError, PathError
from hf_dialeval.metrics.quantidce.modeling_quantidce import QuantiDCEModel

from conftest import save_tiny_bert

ROWS = [{"context": ["Hi there!", "Hello, how are you?"], "response": "Fine, thanks.", "score": 4.5},
        {"context": ["Do you like tea?"], "response": "Purple is loud.", "score": 1},
        {"context": ["Do you like tea?"], "response": "Yes, green tea.", "score": 5, "reference": "I do."}]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_jsonl_ratings_with_lists_and_optional_fields(tmp_path):
    ratings = load_ratings(write_jsonl(tmp_path / "r.jsonl", ROWS))
    assert ratings["context"] == [row["context"] for row in ROWS]
    assert ratings["score"] == [4.5, 1.0, 5.0]
    assert ratings["reference"] == [None, None, "I do."] and ratings["condition"] == [None] * 3


def test_csv_and_tsv_with_renamed_columns_and_a_context_as_one_text(tmp_path):
    lines = ["turns,reply,rating", '"Hi there! || Hello, how are you?",Fine.,3', ",Hello!,2"]
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    lines = ["turns\treply\trating", "Hi there! || Hello, how are you?\tFine.\t3", "\tHello!\t2"]
    (tmp_path / "r.tsv").write_text("\n".join(lines) + "\n")
    columns = Columns(context="turns", response="reply", score="rating", context_separator=" || ")
    for name in ("r.csv", "r.tsv"):
        ratings = load_ratings(tmp_path / name, columns)
        assert ratings["context"] == [["Hi there!", "Hello, how are you?"], []]  # an empty cell: no context
        assert ratings["response"] == ["Fine.", "Hello!"] and ratings["score"] == [3.0, 2.0]


def test_parquet_a_saved_folder_and_its_splits(tmp_path):
    table = datasets.Dataset.from_list([{k: row.get(k) for k in ("context", "response", "score")} for row in ROWS])
    table.to_parquet(str(tmp_path / "r.parquet"))
    assert load_ratings(tmp_path / "r.parquet")["score"] == [4.5, 1.0, 5.0]
    datasets.DatasetDict({"train": table, "test": table.select([0])}).save_to_disk(str(tmp_path / "saved"))
    assert len(load_ratings(tmp_path / "saved")) == 3  # train by default
    assert len(load_ratings(tmp_path / "saved", split="test")) == 1
    with pytest.raises(OptionError, match=r"has no split 'dev': give one of \['test', 'train'\]"):
        load_ratings(tmp_path / "saved", split="dev")


def test_a_hub_dataset_id_is_loaded_and_one_that_cannot_be_is_one_line(monkeypatch):
    table = datasets.Dataset.from_list([{k: row.get(k) for k in ("context", "response", "score")} for row in ROWS])
    monkeypatch.setattr(datasets, "load_dataset", lambda name: datasets.DatasetDict({"train": table}))
    assert len(load_ratings("someone/chat-ratings")) == 3

    def offline(name):
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(PathError, match=r"^no such file or folder: someone/chat-ratings; as a Hub dataset id it "
                                        r"could not be loaded \(ConnectionError: Couldn't reach the Hub\)"):
        load_ratings("someone/chat-ratings")


@pytest.mark.parametrize(("content", "name", "columns", "needs_reference", "error"), [
    ("", "r.jsonl", Columns(), False, r"r.jsonl is empty: give one rating per line or row"),
    ('{"context": ["a"], "response": "b"}\n', "r.jsonl", Columns(), False,
     r"r.jsonl has no column 'score' \(the rating's score\); its columns: context, response; name the one that "
     r"holds it with --score-column"),
    ('{"context": ["a"], "response": "b", "score": "high"}\n', "r.jsonl", Columns(), False,
     r"r.jsonl, row 0, column 'score': 'high' is not a number"),
    ('{"context": ["a"], "response": "b", "score": NaN}\n', "r.jsonl", Columns(), False,
     r"r.jsonl, row 0, column 'score': nan is not a finite number: give every rating a score"),
    ("context,response,score\na,b,3\na,c,\n", "r.csv", Columns(), False,
     r"r.csv, row 1, column 'score': no score: give every rating one"),
    ('{"context": "a", "response": 7, "score": 3}\n', "r.jsonl", Columns(), False,
     r"r.jsonl, row 0, column 'response': expected a text, got int"),
    ('{"ctx": ["a"], "response": "b", "score": 3, "reference": ""}\n', "r.jsonl", Columns(context="ctx"),
     True, r"r.jsonl, row 0, column 'reference': no reference: this metric compares the reply with a human "
           r"reference"),
    ("context,response,score\na,b,3\n", "r.csv", Columns(), True,
     r"r.csv has no column 'reference' \(the rating's reference\); its columns: context, response, score; name the "
     r"one that holds it with --reference-column"),
    ('{"context": ["a"], "response": "b", "score": 3}\n{broken\n', "r.jsonl", Columns(), False,
     r"r.jsonl could not be read as json \(JSON parse error: .* in row 1\): fix the file"),
    ("a b 3\n", "r.txt", Columns(), False, r"r.txt: a .txt file is not read; give .jsonl, .json, .csv, .tsv, "
                                                 r".parquet"),
])
def test_what_is_wrong_is_one_line_naming_the_file_row_and_column(tmp_path, content, name, columns, needs_reference,
                                                                  error):
    (tmp_path / name).write_text(content)
    with pytest.raises((DialogueValidationError, PathError), match=error):
        load_ratings(tmp_path / name, columns, needs_reference=needs_reference)


def test_missing_paths_and_folders_that_hold_no_saved_dataset(tmp_path):
    with pytest.raises(PathError, match=r"no such file: .*missing.csv$"):
        load_ratings(tmp_path / "missing.csv")
    (tmp_path / "folder").mkdir()
    with pytest.raises(PathError, match="is a folder that datasets.save_to_disk did not write"):
        load_ratings(tmp_path / "folder")


def test_held_out_contexts_are_never_trained_on():
    rows = [{"context": [f"question {i % 40}"], "response": f"reply {i}", "score": float(i % 5)} for i in range(200)]
    ratings = datasets.Dataset.from_list(rows)
    train, held = held_out_split(ratings, 0.25, seed=3)
    assert len(train) + len(held) == 200
    assert not {tuple(c) for c in train["context"]} & {tuple(c) for c in held["context"]}
    assert len({tuple(c) for c in held["context"]}) == 10  # a quarter of the 40 contexts
    assert held_out_split(ratings, 0.25, seed=3)[1]["response"] == held["response"]
    assert held_out_split(ratings, 0.25, seed=4)[1]["response"] != held["response"]
    with pytest.raises(OptionError, match="ratings of two contexts or more"):
        held_out_split(ratings.select([0]), 0.5, seed=0)


@pytest.mark.slow
def test_quantidce_kd_on_a_users_own_csv(tmp_path, capsys):
    """The command line's route: the student fine-tunes on the user's CSV (columns named their way), a share of its
    contexts held out and validated on; a bad file fails in one line before the model loads."""
    teacher = tmp_path / "teacher"
    backbone = save_tiny_bert(tmp_path / "backbone")
    QuantiDCEModel.from_backbone(backbone, max_seq_length=48, pooling="mean").save_pretrained(teacher)
    lines = ["turns,reply,rating"] + [f"question {i % 10} || fine,reply {i},{1 + i % 5}" for i in range(40)]
    (tmp_path / "mine.csv").write_text("\n".join(lines) + "\n")
    options = ["--teacher", str(teacher), "--ratings", str(tmp_path / "mine.csv"), "--context-column", "turns",
               "--response-column", "reply", "--score-column", "rating", "--context-separator", " || ",
               "--held-out-share", "0.2", "--epochs", "1", "--batch-size", "8"]
    run = tmp_path / "run"
    assert cli.main(["train", "quantidce-kd", *options, "--output-dir", str(run)]) == 0
    record = json.loads((run / "training_record.json").read_text())
    assert record["train_ratings"] == 32 and record["validation_ratings"] == 8  # 2 of 10 contexts, 4 ratings each
    assert "eval_loss" in record["validation"]
    assert cli.main(["train", "quantidce-kd", *options, "--score-column", "stars", "--output-dir",
                     str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "mine.csv has no column 'stars' (the rating's score); its columns: turns, reply, rating; name the one that "
        "holds it with --score-column")


@pytest.mark.parametrize(("options", "error"), [
    (["--held-out-share", "1"], "--held-out-share must be above 0 and below 1, or 0 (none held out), not 1.0"),
    (["--held-out-share", "0"], "--held-out-share 0 leaves no ratings to validate on: give --eval-strategy no, or a "
                                "share above 0"),
    (["--ratings-split", "test"], "--ratings-split picks a split of --ratings: give --ratings too"),
])
def test_ratings_options_that_cannot_work_are_one_line(tmp_path, capsys, options, error):
    if "--ratings-split" not in options:
        options = ["--ratings", str(write_jsonl(tmp_path / "r.jsonl", ROWS)), *options]
    assert cli.main(["train", "quantidce-kd", *options, "--output-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == f"hf-dialeval: error: {error}"
    assert not (tmp_path / "run").exists()
