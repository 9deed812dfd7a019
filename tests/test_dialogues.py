"""A user's own dialogues as a train command reads them (hf_dialeval.data.dialogues): every format and source, both row
shapes, column mapping, the condition a knowledge or persona column gives, the shipped corpora by name, the held-out
share by dialogue, one line for each thing that is wrong, and the options that name them (training.data_options)."""

import json
from dataclasses import dataclass, fields

import datasets
import pytest

from hf_dialeval import cli
from hf_dialeval.data.dialogues import (
    Columns,
    held_out_dialogues,
    load_dialogues,
    shipped_corpus,
)
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.tables import rows_sha256
from hf_dialeval.errors import OptionError, PathError, UnknownNameError
from hf_dialeval.training.data_options import DialoguesOptions, RatingsOptions
from hf_dialeval.training.options import DialEvalTrainingOptions

ROWS = [{"dialogue": ["Hi there!", "Hello, how are you?", "Fine, thanks."], "speakers": ["A", "B", "A"]},
        {"context": ["Do you like tea?"], "response": "Yes, green tea.", "condition": "I drink tea daily."}]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_jsonl_with_whole_dialogues_and_contexts_with_their_reply(tmp_path):
    dialogues = load_dialogues(write_jsonl(tmp_path / "d.jsonl", ROWS))
    assert dialogues.to_list() == [
        {"dialogue": ["Hi there!", "Hello, how are you?", "Fine, thanks."], "speakers": ["A", "B", "A"],
         "condition": None},
        {"dialogue": ["Do you like tea?", "Yes, green tea."], "speakers": [], "condition": "I drink tea daily."}]
    assert dialogues.features["dialogue"] == datasets.Sequence(datasets.Value("string"))


def test_csv_with_renamed_columns_and_a_context_as_one_text(tmp_path):
    lines = ["turns,reply,who,facts", '"Hi! || Do you like tea?",Only green tea.,A || B || A,']
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    columns = Columns(context="turns", response="reply", speakers="who", condition="facts",
                              context_separator=" || ")
    dialogues = load_dialogues(tmp_path / "d.csv", columns)
    assert dialogues.to_list() == [{"dialogue": ["Hi!", "Do you like tea?", "Only green tea."],
                                    "speakers": ["A", "B", "A"], "condition": None}]
    (tmp_path / "d.tsv").write_text("talk\nHi! || Hello. || Bye.\n")
    assert load_dialogues(tmp_path / "d.tsv", Columns(dialogue="talk", context_separator=" || "))[
        "dialogue"] == [["Hi!", "Hello.", "Bye."]]


def test_parquet_a_saved_folder_and_its_splits(tmp_path):
    table = datasets.Dataset.from_list([{"dialogue": [*ROWS[0]["dialogue"], str(n)]} for n in range(3)])
    table.to_parquet(str(tmp_path / "d.parquet"))
    assert len(load_dialogues(tmp_path / "d.parquet")) == 3
    datasets.DatasetDict({"train": table, "test": table.select([0])}).save_to_disk(str(tmp_path / "saved"))
    assert len(load_dialogues(tmp_path / "saved")) == 3  # train by default
    assert len(load_dialogues(tmp_path / "saved", split="test")) == 1
    with pytest.raises(OptionError, match=r"has no split 'dev': give one of \['test', 'train'\]"):
        load_dialogues(tmp_path / "saved", split="dev")


def test_a_knowledge_or_persona_column_is_the_condition(tmp_path):
    rows = [{"dialogue": ["a", "b"], "knowledge": "Tea is a drink."}, {"dialogue": ["c", "d"], "knowledge": ""}]
    assert load_dialogues(write_jsonl(tmp_path / "k.jsonl", rows))["condition"] == ["Tea is a drink.", None]
    rows = [{"context": "a", "response": "b", "persona": ["I have a dog.", "I like tea."]}]
    assert load_dialogues(write_jsonl(tmp_path / "p.jsonl", rows))["condition"] == ["I have a dog. I like tea."]
    rows = [{"dialogue": ["a", "b"], "knowledge": "unused", "condition": "given"}]
    assert load_dialogues(write_jsonl(tmp_path / "c.jsonl", rows))["condition"] == ["given"]  # condition wins


@pytest.mark.parametrize(("content", "name", "columns", "error"), [
    ("", "d.jsonl", Columns(), r"d.jsonl is empty: give one dialogue per line or row"),
    ('{"text": ["a", "b"], "response": "c"}\n', "d.jsonl", Columns(),
     r"d.jsonl has no column 'dialogue' \(a whole dialogue\) nor both 'context' and 'response' \(a context and its "
     r"reply\); its columns: text, response; name the ones that hold them with --dialogue-column, or "
     r"--context-column and --response-column"),
    ('{"dialogue": ["a", 7]}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 0, column 'dialogue': utterance 1: expected a text, got int"),
    ('{"talk": 7}\n', "d.jsonl", Columns(dialogue="talk"),
     r"d.jsonl, row 0, column 'talk': expected a list of utterances or one text, got int"),
    ('{"context": ["a"], "response": 7}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 0, column 'response': expected a text, got int"),
    ("dialogue\na||b\nhello\n", "d.csv", Columns(context_separator="||"),
     r"d.csv, row 1, column 'dialogue': 1 utterance: a dialogue needs a reply, so give two utterances or more"),
    ("context,response\n,Hi!\n", "d.csv", Columns(),
     r"d.csv, row 0, column 'context': 1 utterance: a dialogue needs a reply"),
    ('{"dialogue": ["a", "b"]}\n{"dialogue": null, "context": ["a"]}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 1, column 'dialogue': empty: give the dialogue, or a context and its reply"),
    ('{"dialogue": ["a", "b", "c"], "speakers": ["A", "B"]}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 0, column 'speakers': 2 speakers for 3 utterances: give one speaker per utterance, or none"),
    ('{"dialogue": ["a", "b"], "speakers": [1, 2]}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 0, column 'speakers': speaker 0: expected a text, got int"),
    ('{"dialogue": ["a", "b"], "persona": 3}\n', "d.jsonl", Columns(),
     r"d.jsonl, row 0, column 'persona': expected a text or a list of texts, got int"),
    ("a b\n", "d.txt", Columns(), r"d.txt: a .txt file is not read; give .jsonl, .json, .csv, .tsv, .parquet"),
])
def test_what_is_wrong_is_one_line_naming_the_file_row_and_column(tmp_path, content, name, columns, error):
    (tmp_path / name).write_text(content)
    with pytest.raises((DialogueValidationError, PathError)) as raised:
        load_dialogues(tmp_path / name, columns)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(tmp_path / name))
    assert raised.match(error)


def test_missing_paths_are_one_line(tmp_path):
    with pytest.raises(PathError, match=r"no such file: .*missing.jsonl$"):
        load_dialogues(tmp_path / "missing.jsonl")


def test_the_shipped_corpora_by_name(data_dir, tmp_path, monkeypatch):
    from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus

    daily = load_dialogues("dailydialog", split="validation", data_dir=data_dir)
    corpus = load_dailydialog("validation", data_dir)
    assert daily["dialogue"] == corpus["dialogue"] and daily["speakers"] == corpus["speakers"]
    assert set(daily["condition"]) == {None}
    plus = load_dialogues("dailydialog-plusplus", split="validation", data_dir=data_dir)
    first = load_dailydialog_plusplus("validation", data_dir)[0]
    assert plus["dialogue"][:len(first["positive_responses"])] == [[*first["context"], reply]
                                                                   for reply in first["positive_responses"]]
    topical = load_dialogues("topical-chat", data_dir=data_dir)
    assert len(topical) > 1000 and all(len(set(speakers)) == 2 for speakers in topical["speakers"][:20])
    assert sum(condition is not None for condition in topical["condition"]) > len(topical) / 2  # the knowledge used
    with pytest.raises(OptionError, match="topical-chat is read whole .*: leave the split out"):
        load_dialogues("topical-chat", split="test_freq", data_dir=data_dir)
    with pytest.raises(UnknownNameError, match="reddit is not a shipped corpus"):
        shipped_corpus("reddit", data_dir=data_dir)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dailydialog").mkdir()  # a folder of the corpus's name is what the user means
    with pytest.raises(PathError, match="dailydialog is a folder that datasets.save_to_disk did not write"):
        load_dialogues("dailydialog", data_dir=data_dir)


def test_held_out_dialogues_are_seeded_and_never_trained_on():
    rows = [{"dialogue": [f"hello {i % 40}", f"reply {i % 40}"], "speakers": [], "condition": None}
            for i in range(80)]  # every dialogue twice
    dialogues = datasets.Dataset.from_list(rows)
    kept, held = held_out_dialogues(dialogues, 0.25, seed=3)
    assert len(kept) + len(held) == 80 and len(held) == 20  # a quarter of the 40 dialogues, both copies of each
    assert not {tuple(d) for d in kept["dialogue"]} & {tuple(d) for d in held["dialogue"]}
    assert held_out_dialogues(dialogues, 0.25, seed=3)[1]["dialogue"] == held["dialogue"]
    assert held_out_dialogues(dialogues, 0.25, seed=4)[1]["dialogue"] != held["dialogue"]
    assert [len(part) for part in held_out_dialogues(dialogues.select([0, 1]), 0.9, seed=0)] == [1, 1]  # never all
    with pytest.raises(OptionError, match="two different dialogues or more"):
        held_out_dialogues(dialogues.select([0, 40]), 0.5, seed=0)


def test_the_hash_names_the_rows_read(tmp_path):
    first = load_dialogues(write_jsonl(tmp_path / "a.jsonl", ROWS))
    assert rows_sha256(first) == rows_sha256(load_dialogues(write_jsonl(tmp_path / "b.jsonl", ROWS)))
    assert rows_sha256(first) != rows_sha256(first.select([1, 0]))


def test_ratings_and_dialogues_options_combine_with_their_columns_once(tmp_path):
    @dataclass
    class Both(RatingsOptions, DialoguesOptions, DialEvalTrainingOptions):
        pass

    names = [option.name for option in fields(Both)]
    assert len(names) == len(set(names)) and {"context_column", "dialogue_column", "score_column"} <= set(names)
    both = Both(output_dir=str(tmp_path / "run"), dialogues="d.jsonl", context_column="turns", context_separator="|")
    assert both.columns() == Columns(context="turns", context_separator="|")
    with pytest.raises(OptionError, match="--dialogues-split picks a split of --dialogues: give --dialogues too"):
        Both(output_dir=str(tmp_path / "run"), dialogues_split="test").check_before_training()
    with pytest.raises(OptionError, match="--ratings-split picks a split of --ratings: give --ratings too"):
        Both(output_dir=str(tmp_path / "run"), ratings_split="test").check_before_training()


@pytest.mark.parametrize(("options", "error"), [
    (["--corpora", "topical-chat"], "--corpora and --dialogues exclude each other: --dialogues names what the LM "
                                    "trains on (a shipped corpus name among them); leave --corpora out"),
    (["--train-splits", "train", "validation"], "--train-splits and --dialogues exclude each other: "
                                                "--dialogues-split picks a split of --dialogues; leave --train-splits "
                                                "out"),
    (["--dialogues-split", "test"], "--dialogues-split picks a split of --dialogues: give --dialogues too"),
])
def test_holistic_eval_dialogue_options_that_cannot_work_are_one_line(tmp_path, capsys, options, error):
    if "--dialogues-split" not in options:
        options = ["--dialogues", str(write_jsonl(tmp_path / "d.jsonl", ROWS)), *options]
    assert cli.main(["train", "holistic-eval", "--from-scratch", *options, "--output-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == f"hf-dialeval: error: {error}"
    assert not (tmp_path / "run").exists()
