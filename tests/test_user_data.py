"""A user's ratings and dialogues files as adapt reads them (hf_dialeval.data.tables, .held_out): an empty or broken
file is one line, exact duplicate rows are dropped and counted, near-duplicate contexts and a rating's context and the
dialogues holding it land on one side of the held-out split, and a split too small to answer is refused."""

import csv
import json
import warnings

import datasets
import pytest

from hf_dialeval import cli
from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues, validation_split
from hf_dialeval.data.held_out import (
    MIN_HELD_OUT_CONTEXTS,
    MIN_HELD_OUT_DIALOGUES,
    context_key,
    held_out_parts,
    split_user_data,
)
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.data.table_chunks import CSV_DELIMITERS, PARQUET_SUFFIXES, is_csv, is_parquet
from hf_dialeval.data.tables import FILE_BUILDERS, DroppedRowsWarning, read_table
from hf_dialeval.errors import OptionError

SEEDS = range(8)
WEEKEND = ["Hi! How was your weekend? ", "hi! how was your weekend?", "Hi!  How was your weekend?",
           "HI! HOW WAS YOUR WEEKEND?", "Hi ! How was your weekend ?"]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def ratings_of(contexts, replies=("Fine.", "Purple.")):
    """Two ratings (of different scores) of each context."""
    return datasets.Dataset.from_list([{"context": context, "response": reply, "score": float(score)}
                                       for context in contexts for score, reply in enumerate(replies, start=1)])


def dialogues_of(dialogues):
    return datasets.Dataset.from_list([{"dialogue": dialogue, "speakers": [], "condition": None}
                                       for dialogue in dialogues])


def keys(rows, column):
    return {context_key(value) for value in rows[column]}


def holds(dialogue, context):
    """Whether ``dialogue`` holds ``context`` as consecutive utterances (compared by their keys)."""
    dialogue, context = context_key(dialogue), context_key(context)
    return any(dialogue[start:start + len(context)] == context for start in range(len(dialogue) - len(context) + 1))


# --- empty and broken files: one line -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "content"), [("header.csv", "context,response,score\n"),
                                               ("header.tsv", "context\tresponse\tscore\n"),
                                               ("blank.jsonl", "\n  \n\n"), ("list.json", "[]\n"),
                                               ("none.parquet", None)])
def test_a_file_without_rows_is_one_line(tmp_path, capfd, name, content):
    path = tmp_path / name
    if content is None:
        datasets.Dataset.from_dict({"context": [], "response": [], "score": []}).to_parquet(str(path))
    else:
        path.write_text(content, encoding="utf-8")
    capfd.readouterr()
    with pytest.raises(DialogueValidationError) as error:
        load_ratings(path)
    assert str(error.value) == f"{path} holds no ratings: give one per line or row"
    with pytest.raises(DialogueValidationError, match=f"^{path} holds no dialogues: give one per line or row$"):
        load_dialogues(path)


NOT_UTF8 = [("r.csv", b"context,response,score\nhi,yo,3\nh\xe9,yo,4\n",
             "line 3: not UTF-8 text (byte 0xe9 at byte 33 of the file: invalid continuation byte)"),
            ("r.jsonl", b'{"context": "hi", "response": "yo", "score": 3}\n{"context": "caf\xe9", "score": 4}\n',
             "line 2: not UTF-8 text (byte 0xe9 at byte 65 of the file: invalid continuation byte)"),
            ("r.json", b"\xff\xfe[\x00]\x00",  # UTF-16, as some editors save
             "line 1: not UTF-8 text (byte 0xff at byte 1 of the file: invalid start byte)")]


@pytest.mark.parametrize(("name", "content", "where"), NOT_UTF8)
def test_a_byte_that_is_not_utf8_is_one_line_naming_where_and_nothing_else(tmp_path, capfd, caplog, name, content,
                                                                           where):
    path = tmp_path / name
    path.write_bytes(content)
    capfd.readouterr()
    with pytest.raises(DialogueValidationError) as error:
        load_ratings(path)
    assert str(error.value) == f"{path}, {where}: save the file as UTF-8"
    assert capfd.readouterr() == ("", "") and not caplog.records


def test_a_file_datasets_cannot_parse_is_one_line_and_datasets_logs_nothing(tmp_path, capfd, caplog):
    path = tmp_path / "r.csv"
    path.write_text("context,response,score\nhi,yo,3\nhi,yo,3,4,5\n", encoding="utf-8")
    verbosity = datasets.logging.get_verbosity()
    capfd.readouterr()
    with pytest.raises(DialogueValidationError, match="could not be read as csv .*Expected 3 fields in line 3"):
        load_ratings(path)
    assert "Failed to read" not in capfd.readouterr().err and not caplog.records
    assert datasets.logging.get_verbosity() == verbosity  # restored


@pytest.mark.parametrize("content", ['{"context": "hi", "response": "yo", "score": 3}',
                                     '{\n  "contexts": [["hi"]], "responses": ["yo"], "scores": [3]\n}\n'])
def test_a_json_file_of_one_object_is_one_line(tmp_path, content):
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DialogueValidationError) as error:
        load_ratings(path)
    assert str(error.value) == (f"{path} holds one JSON object: give a list of objects, one per rating ([{{...}}, "
                                "{...}]), or JSON lines (one object per line)")


def test_json_lines_and_a_list_in_a_json_file_still_read(tmp_path):
    rows = [{"context": "hi", "response": "yo", "score": 3}, {"context": "hey", "response": "yo", "score": 4}]
    (tmp_path / "list.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "lines.json").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    for name in ("list.json", "lines.json"):
        assert load_ratings(tmp_path / name)["score"] == [3.0, 4.0]


def test_pq_is_parquet_for_every_reader(tmp_path):
    path = tmp_path / "r.pq"
    datasets.Dataset.from_list([{"context": "hi", "response": "yo", "score": 3}]).to_parquet(str(path))
    assert load_ratings(path)["response"] == ["yo"]
    assert len(read_table(path)) == 1 and is_parquet(path) and is_csv("r.tsv")
    assert {*PARQUET_SUFFIXES, *CSV_DELIMITERS} <= set(FILE_BUILDERS) and CSV_DELIMITERS[".tsv"] == "\t"
    (tmp_path / "text.pq").write_text("{}\n", encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=r"text\.pq is not a Parquet file .*: re-save it as Parquet"):
        load_ratings(tmp_path / "text.pq")


# --- exact duplicate rows -------------------------------------------------------------------------------------------

def test_exact_duplicate_ratings_are_dropped_and_counted_and_raters_kept(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("context,response,score,rater\n"
                    "Hi!,Hello.,4,ann\n"
                    "Hi!,Hello.,4,ann\n"  # the same row again
                    "Hi!,Hello.,4,bob\n"  # another rater's equal score: a judgement of its own
                    "Hi!,Hello.,4,ann\n"
                    "Tea?,Green.,5,ann\n", encoding="utf-8")
    with pytest.warns(DroppedRowsWarning) as told:
        ratings = load_ratings(path)
    assert ratings["score"] == [4.0, 4.0, 5.0]
    assert [str(warning.message) for warning in told] == [
        f"{path}: 2 duplicate rows dropped (identical in every column to an earlier row)"]


def test_an_error_names_the_row_of_the_file_and_comes_alone_and_no_duplicates_say_nothing(tmp_path):
    rows = [{"context": "Hi!", "response": "Hello.", "score": 4}] * 2 + [{"context": "Tea?", "response": "Green."}]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DroppedRowsWarning)
        with pytest.raises(DialogueValidationError, match=r"r\.jsonl, row 2, column 'score': no score"):
            load_ratings(write_jsonl(tmp_path / "r.jsonl", rows))  # row 2 of the file, though row 1 is a duplicate
        load_ratings(write_jsonl(tmp_path / "distinct.jsonl", rows[1:2]))


def test_exact_duplicate_dialogues_are_dropped_and_counted(tmp_path):
    rows = [{"dialogue": ["Hi!", "Hello."], "source": "a"}, {"dialogue": ["Hi!", "Hello."], "source": "a"},
            {"dialogue": ["Hi!", "Hello."], "source": "b"}, {"dialogue": ["Tea?", "Green."], "source": "a"}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.warns(DroppedRowsWarning) as told:
        dialogues = load_dialogues(path)
    assert dialogues["dialogue"] == [["Hi!", "Hello."], ["Hi!", "Hello."], ["Tea?", "Green."]]
    assert [str(warning.message) for warning in told] == [
        f"{path}: 1 duplicate rows dropped (identical in every column to an earlier row)"]


# --- near-duplicate contexts and linked data on one side -------------------------------------------------------------

def test_context_key_joins_what_differs_only_in_case_spacing_and_form():
    assert len({context_key([text]) for text in WEEKEND}) == 1
    assert context_key(["hi , how are you ?"]) == context_key(["hi, how are you?"])
    assert context_key(["I ' m fine", "\uff21 \u2019quote\u2019"]) == context_key(["i'm fine", "a 'quote'"])
    assert context_key(["Hi!", "How are you?"]) != context_key(["Hi! How are you?"])  # utterances stay apart
    assert context_key(["hi there"]) != context_key(["hit here"])


@pytest.mark.parametrize("seed", SEEDS)
def test_near_duplicate_contexts_and_dialogues_land_on_one_side(seed):
    others = [[f"question {number}?"] for number in range(40)]
    ratings = ratings_of([[text] for text in WEEKEND] + others)
    dialogues = dialogues_of([[text, "It was fine."] for text in WEEKEND] + [[f"chat {n}", "ok"] for n in range(40)])
    split = split_user_data(ratings, dialogues, 0.3, seed)
    weekend = context_key([WEEKEND[0]])
    assert (weekend in keys(split.ratings_held_out, "context")) != (weekend in keys(split.ratings_trained, "context"))
    trained, held = held_out_split(ratings, 0.3, seed)
    assert len({tuple(context) for context in held["context"] if context_key(context) == weekend}) in (0, 5)
    assert len({tuple(context) for context in trained["context"] if context_key(context) == weekend}) in (0, 5)
    held = held_out_dialogues(dialogues, 0.3, seed)[1]
    assert sum(context_key(d) == context_key([WEEKEND[0], "It was fine."]) for d in held["dialogue"]) in (0, 5)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_held_out_context_is_not_trained_on_in_a_dialogue_nor_a_held_out_dialogue_through_a_rating(seed):
    conversations = [[f"hello {n}!", f"how is your {n}th day?", f"fine, {n}.", f"bye {n}."] for n in range(40)]
    # ratings of every second conversation's first two turns (typed the way people retype them), and of other contexts
    contexts = ([[f"Hello {n} !", f"How is your {n}th day?"] for n in range(0, 40, 2)]
                + [[f"topic {n}"] for n in range(40)])
    split = split_user_data(ratings_of(contexts), dialogues_of(conversations), 0.25, seed)
    for context in split.ratings_held_out["context"]:
        assert not any(holds(dialogue, context) for dialogue in split.dialogues_trained["dialogue"])
    for dialogue in split.dialogues_held_out["dialogue"]:
        assert not any(holds(dialogue, context) for context in split.ratings_trained["context"])
    linked = [context for context in split.ratings_held_out["context"] if context[0].startswith("Hello")]
    assert len(linked) == 2 * sum(any(holds(d, c) for c in contexts) for d in split.dialogues_held_out["dialogue"])


def test_the_share_holds_when_every_dialogue_holds_rated_contexts():
    """Ratings of each turn of the conversations: holding out a conversation holds out all its contexts, and the
    share stays about the one asked for (drawing contexts and dialogues apart would link most of them in)."""
    conversations = [[f"turn {turn} of talk {n}" for turn in range(6)] for n in range(100)]
    contexts = [conversation[:turn] for conversation in conversations for turn in range(1, 6)]
    for seed in SEEDS:
        split = split_user_data(ratings_of(contexts), dialogues_of(conversations), 0.2, seed)
        assert 20 <= len(split.dialogues_held_out) <= 25 and len(split.ratings_held_out) == 10 * len(
            split.dialogues_held_out)


def test_without_links_the_draw_is_the_ratings_and_dialogues_own():
    ratings = ratings_of([[f"q {n}"] for n in range(40)])
    dialogues = dialogues_of([[f"a {n}", "b"] for n in range(40)])
    for seed in SEEDS:
        split = split_user_data(ratings, dialogues, 0.25, seed)
        assert split.ratings_held_out["context"] == held_out_split(ratings, 0.25, seed)[1]["context"]
        assert split.dialogues_held_out["dialogue"] == held_out_dialogues(dialogues, 0.25, seed)[1]["dialogue"]
        assert len(keys(split.ratings_held_out, "context")) == len(split.dialogues_held_out) == 10
    alone = split_user_data(ratings, None, 0.25, 0)
    assert alone.dialogues_trained is None and alone.dialogues_held_out is None and len(alone.ratings_held_out) == 20
    # 8 different dialogues, each typed 5 ways: half of them validated on (of fewer than 20, half), all 5 ways of each
    validated = validation_split(dialogues_of([[WEEKEND[n % 5], f"b {n // 5}"] for n in range(40)]), 0)[1]
    assert len(validated) == 20 and len(keys(validated, "dialogue")) == 4


# --- refusals -------------------------------------------------------------------------------------------------------

def test_too_few_held_out_contexts_are_refused():
    ratings = ratings_of([[f"question {n}"] for n in range(20)])
    with pytest.raises(OptionError) as error:
        split_user_data(ratings, None, 0.25, 0, ratings_source="my.csv")
    assert str(error.value) == (
        "my.csv: 5 of its 20 rated contexts held out, fewer than 10: below 10 a Spearman correlation must reach 0.70 "
        "or more before it differs from chance at p < 0.05, so before and after could not be told apart: give "
        "ratings of more contexts (about 40 at --held-out-share 0.25), or a larger --held-out-share")
    assert MIN_HELD_OUT_CONTEXTS == 10 and len(split_user_data(ratings, None, 0.5, 0).ratings_held_out) == 20
    with pytest.raises(OptionError, match=r"my\.csv: 0 of its 1 rated contexts .*at --held-out-share 0\.5\)$"):
        split_user_data(ratings_of([["hi"]]), None, 0.5, 0, ratings_source="my.csv")  # no larger share helps


def test_held_out_ratings_of_one_score_are_refused():
    one_score = datasets.Dataset.from_list([{"context": [f"q {n}"], "response": "r", "score": 3.0} for n in range(40)])
    with pytest.raises(OptionError) as error:
        split_user_data(one_score, None, 0.25, 0, ratings_source="my.csv")
    assert str(error.value) == ("my.csv: every rating scores 3.0: a correlation needs different scores: give ratings of "
                                "different scores")
    held = {tuple(context) for context in held_out_split(one_score, 0.25, 0)[1]["context"]}
    varied = datasets.Dataset.from_list([{**row, "score": 3.0 if tuple(row["context"]) in held else 1.0}
                                         for row in one_score])  # the same contexts: the same split
    with pytest.raises(OptionError) as error:
        split_user_data(varied, None, 0.25, 0, ratings_source="my.csv")
    assert str(error.value) == ("my.csv: the 10 held-out ratings all score 3.0: a correlation needs different scores: "
                                "give another --seed, or a larger --held-out-share")


def test_too_few_held_out_dialogues_are_refused():
    ratings = ratings_of([[f"q {n}"] for n in range(40)])
    dialogues = dialogues_of([[f"a {n}", "b"] for n in range(12)])
    with pytest.raises(OptionError) as error:
        split_user_data(ratings, dialogues, 0.25, 0, dialogues_source="my.jsonl")
    assert str(error.value) == (
        "my.jsonl: 3 of its 12 dialogues held out, fewer than 10: the checklist's pairs are cut from them, and from "
        "fewer its win rates say more about those few conversations than about the metric: give more dialogues "
        "(about 40 at --held-out-share 0.25), or a larger --held-out-share")
    assert MIN_HELD_OUT_DIALOGUES == 10


def test_a_kind_left_with_nothing_to_train_on_is_refused():
    talk = [f"line {n}" for n in range(40)]
    ratings = ratings_of([[line] for line in talk])  # every rated context is a line of one conversation
    dialogues = dialogues_of([talk] + [[f"a {n}", "b"] for n in range(40)])
    with pytest.raises(OptionError) as error:
        split_user_data(ratings, dialogues, 0.25, 0, ratings_source="r.csv", dialogues_source="d.jsonl")
    assert str(error.value) == ("r.csv: no rating is left to train on: each rated context is held out or in a held-out "
                                "dialogue of d.jsonl: give ratings of contexts those dialogues do not hold, or a "
                                "smaller --held-out-share")
    opening = dialogues_of([["Hi!", f"a {n}"] for n in range(40)])  # every dialogue holds the rated "hi!"
    with pytest.raises(OptionError) as error:
        split_user_data(ratings_of([["hi !"]] + [[f"q {n}"] for n in range(40)]), opening, 0.25, 0,
                        ratings_source="r.csv", dialogues_source="d.jsonl")
    assert str(error.value) == ("d.jsonl: no dialogue is left to train on: each is held out or holds a held-out rated "
                                "context of r.csv: give dialogues that hold none of the rated contexts, or a smaller "
                                "--held-out-share")


def test_data_without_near_duplicates_is_held_out_as_before_contexts_were_normalised():
    """The draw of a share by sorted seeded hashes of the texts as given (how every earlier run split its data): data
    without near-duplicates, such as a benchmark's, is split the same, so the splits of recorded runs reproduce."""
    import hashlib

    def earlier(texts, share, seed):
        keys = [hashlib.sha256(f"{seed}\x1e{chr(0x1f).join(text)}".encode()).hexdigest() for text in texts]
        distinct = sorted(set(keys))
        held = set(distinct[:min(len(distinct) - 1, max(1, round(share * len(distinct))))])
        return [index for index, key in enumerate(keys) if key in held]

    contexts = [[f"hi , what do you think of topic {n} ?", "i like it ."] for n in range(60)]
    ratings = ratings_of(contexts)  # two ratings of each context
    dialogues = dialogues_of([[f"hello , number {n} .", "hi ."] for n in range(40)])
    for seed in (0, 1, 7):
        split = held_out_parts(ratings, dialogues, 0.2, seed)
        assert sorted(map(tuple, split.ratings_held_out["context"])) == sorted(
            tuple(ratings[index]["context"]) for index in earlier(ratings["context"], 0.2, seed))
        assert sorted(map(tuple, split.dialogues_held_out["dialogue"])) == sorted(
            tuple(dialogue) for dialogue in dialogues.select(earlier(dialogues["dialogue"], 0.2, seed))["dialogue"])


def test_one_csv_gives_score_and_adapt_the_same_contexts(tmp_path):
    """One file, one rule: ``score`` (streamed) and ``adapt`` (the whole-table reader) read a context held in one cell
    alike, and so does ``benchmark`` (a ``json:`` table), with the same column flags: a JSON array, lines (a Windows line end, a closing line break), one
    utterance, none, and text that merely opens with a bracket."""
    from hf_dialeval.training.data_options import columns_from

    contexts = ['["Hi!", "Hello, how are you?"]', "Hi!\r\nGood, you?\n", "Just one.", "", "[laughs] sure\nok"]
    expected = [["Hi!", "Hello, how are you?"], ["Hi!", "Good, you?"], ["Just one."], [], ["[laughs] sure", "ok"]]
    source = tmp_path / "mine.csv"
    with source.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["turns", "reply", "rating"])
        writer.writerows([context, f"reply {index}", index] for index, context in enumerate(contexts))
    flags = ["--context-column", "turns", "--response-column", "reply"]
    scored = tmp_path / "scored.jsonl"
    assert cli.main(["score", "--metric", "length", "--input", str(source), "--output", str(scored), *flags]) == 0
    scored_contexts = [json.loads(line)["context"] for line in scored.read_text(encoding="utf-8").splitlines()]
    adapt_args = cli.build_parser(["adapt"]).parse_known_args(
        ["adapt", "quantidce", "--ratings", str(source), "--score-column", "rating", "--output-dir",
         str(tmp_path / "run"), *flags])[0]
    adapted_contexts = load_ratings(source, columns_from(adapt_args))["context"]
    benchmark_args = cli.build_parser(["benchmark"]).parse_args(
        ["benchmark", "--metric", "length", "--benchmark", f"json:{source}", "--score-column", "rating", *flags])
    benchmark = load_benchmark(benchmark_args.benchmark, columns=columns_from(benchmark_args))
    assert scored_contexts == adapted_contexts == benchmark["context"] == expected
    assert benchmark["score"] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_mapped_column_beside_one_of_its_fields_name_is_refused_by_every_reader(tmp_path, capsys):
    from hf_dialeval.data.columns import Columns

    source = tmp_path / "both.csv"
    source.write_text("context,turns,response,score\nHi!,Hello!,Fine.,3\n", encoding="utf-8")
    message = "the columns 'turns' and 'context' both give the context: rename or drop one, or name the other with " \
              "--context-column"
    assert cli.main(["score", "--metric", "length", "--input", str(source), "--context-column", "turns"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == f"hf-dialeval: error: {source}, line 2: {message}"
    with pytest.raises(DialogueValidationError, match=f"^{source}: {message}$"):
        load_ratings(source, Columns(context="turns"))
    with pytest.raises(DialogueValidationError, match=f"^{source}: {message}$"):
        load_dialogues(source, Columns(context="turns"))
