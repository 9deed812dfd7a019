import json

import pytest

from hf_dialeval.data.benchmarks import (
    BENCHMARKS,
    human_dimensions,
    load_benchmark,
    mean_rating,
    split_by_context,
)
from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus
from hf_dialeval.data.model import DialogueValidationError

EXPECTED = {
    # name: (split, rows, number of dimensions, level)
    "fed-dialogue": ("test", 125, 11, "dialogue"),
    "fed-turn": ("test", 375, 9, "turn"),
    "usr-topical": ("test", 360, 6, "turn"),
    "usr-persona": ("test", 300, 6, "turn"),
    "usr-topical-reference": ("test", 300, 6, "turn"),
    "usr-persona-reference": ("test", 240, 6, "turn"),
    "predictive-engage": ("test", 1800, 1, "turn"),
    "holistic-context": ("test", 200, 1, "turn"),
    "holistic-fluency": ("test", 200, 1, "turn"),
    "grade-convai2": ("test", 600, 1, "turn"),
    "grade-dailydialog": ("test", 300, 1, "turn"),
    "rade-chitchat": ("test", 370, 1, "turn"),
    "rade-emotion": ("test", 594, 1, "turn"),
    "rade-persona": ("test", 600, 1, "turn"),
}


def test_every_benchmark_is_covered():
    assert set(EXPECTED) == set(BENCHMARKS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_benchmark_counts(name, data_dir):
    split, rows, dims, level = EXPECTED[name]
    dataset = load_benchmark(name, data_dir, split=split)
    assert len(dataset) == rows
    assert len(human_dimensions(dataset)) == dims
    assert ("dialogue" in dataset.column_names) == (level == "dialogue")  # a dialogue's items are whole dialogues


def test_mean_rating_skips_not_applicable():
    assert mean_rating([2, "N/A (no errors)", 1]) == 1.5
    assert mean_rating(["N/A (no errors)", "N/A"]) is None
    assert mean_rating(["3", "4", ""]) == 3.5


def test_fed_dialogue_na_handling(data_dir):
    dataset = load_benchmark("fed-dialogue", data_dir)
    first = dataset[0]
    # Error recovery of the first dialogue: [N/A, 1, 1, N/A, 2] -> mean of the three numbers.
    assert first["Error recovery"] == pytest.approx(4 / 3)
    assert first["Overall"] == pytest.approx((3 + 1 + 2 + 3 + 4) / 5)
    assert first["speakers"][:2] == ["User", "System"]
    assert first["dialogue"][0] == "Hi!"
    # One dialogue has only N/A ratings for Error recovery: None there, left out of that correlation.
    assert dataset["Error recovery"].count(None) == 1


def test_rade_splits_are_disjoint_by_context_and_deterministic(data_dir):
    splits = {s: load_benchmark("rade-chitchat", data_dir, split=s) for s in ("train", "validation", "test")}
    assert [len(d) for d in splits.values()] == [1850, 370, 370]
    contexts = {s: {json.dumps(c) for c in d["context"]} for s, d in splits.items()}
    assert not contexts["train"] & contexts["test"]
    assert not contexts["validation"] & contexts["test"]
    assert not contexts["train"] & contexts["validation"]
    assert load_benchmark("rade-chitchat", data_dir)["response"] == splits["test"]["response"]


def test_split_by_context_keeps_contexts_together():
    contexts = [["a"], ["b"], ["a"], ["c"], ["d"], ["b"], ["e"]]
    assignment = split_by_context(contexts, (5, 1, 1))
    for i, context in enumerate(contexts):
        for j, other in enumerate(contexts):
            if context == other:
                assert assignment[i] == assignment[j]
    assert assignment == split_by_context(list(reversed(contexts)), (5, 1, 1))[::-1]


def test_grade_keeps_system_and_reference(data_dir):
    dataset = load_benchmark("grade-convai2", data_dir)
    assert sorted(set(dataset["system"])) == ["bert_ranker", "dialogGPT", "transformer_generator", "transformer_ranker"]
    assert all(dataset["reference"])
    assert len(dataset[0]["context"]) >= 1


def test_usr_condition_is_the_fact(data_dir):
    dataset = load_benchmark("usr-persona", data_dir)
    assert dataset[0]["condition"].startswith("your persona:")
    assert dataset[0]["system"] == "Original Ground Truth"


def test_unknown_benchmark_and_split():
    with pytest.raises(KeyError, match="unknown benchmark"):
        load_benchmark("nope")
    with pytest.raises(ValueError, match="splits"):
        load_benchmark("fed-dialogue", split="train")


def test_json_release_turn_level(tmp_path):
    path = tmp_path / "release.json"
    path.write_text(json.dumps({
        "contexts": [["hi", "hello"], ["how are you?"], ["bye"]],
        "responses": ["how are you?", "fine", "see you"],
        "references": ["what's up?", "NO REF", "bye bye"],
        "scores": [4, [3, "N/A", 5], {"x": 1, "score": "N/A (not applicable)"}],
    }))
    dataset = load_benchmark(f"json:{path}")
    assert len(dataset) == 3 and "dialogue" not in dataset.column_names  # turn-level items
    assert dataset["reference"] == ["what's up?", None, "bye bye"]
    assert dataset["score"] == [4.0, 4.0, None]  # an "N/A" rating is left out, alone as in a list
    assert dataset["x"] == [None, None, 1.0]


def test_json_release_dialogue_level(tmp_path):
    path = tmp_path / "release.json"
    path.write_text(json.dumps({"contexts": [["hi", "hello"], ["a", "b", "c"]], "scores": [1, 2]}))
    dataset = load_benchmark(f"json:{path}")
    assert dataset["dialogue"] == [["hi", "hello"], ["a", "b", "c"]]


@pytest.mark.parametrize(
    "release, message",
    [
        ({"contexts": [["a"]]}, "'scores' is missing"),
        ({"contexts": [["a"]], "responses": ["b", "c"], "scores": [1]}, "'responses' has 2 entries"),
        ({"contexts": [["a"]], "responses": [3], "scores": [1]}, "item 0, field 'response'"),
        ({"contexts": [["a"]], "responses": ["b"], "scores": [float("nan")]}, "item 0, field 'scores.score'"),
        ({"contexts": [["a"]], "responses": ["b"], "scores": ["good"]}, "human score 'good' is not a finite number"),
    ],
)
def test_json_release_errors(tmp_path, release, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(release))
    with pytest.raises(DialogueValidationError, match=message):
        load_benchmark(f"json:{path}")


def test_dailydialog_counts_and_labels(data_dir):
    validation = load_dailydialog("validation", data_dir)
    assert len(validation) == 1000
    assert len(load_dailydialog("test", data_dir)) == 1000
    # One train line's labels do not match its utterances: it is left out.
    assert len(load_dailydialog("train", data_dir)) == 11117
    row = validation[0]
    assert len(row["dialogue"]) == len(row["emotions"]) == len(row["acts"]) == len(row["speakers"])
    assert validation.features["emotions"].feature.names[4] == "happiness"
    assert validation.features["acts"].feature.names[1] == "question"


def test_dailydialog_plusplus_counts(data_dir):
    dev = load_dailydialog_plusplus("validation", data_dir)
    assert len(dev) == 1028
    assert len(load_dailydialog_plusplus("test", data_dir)) == 1142
    train = load_dailydialog_plusplus("train", data_dir)
    assert len(train) == 7641 and train[0]["random_negative_responses"] == []
    assert all(len(dev[0][k]) == 5 for k in ("positive_responses", "adversarial_negative_responses",
                                               "random_negative_responses"))


def test_usr_with_the_ground_truth_as_reference(data_dir):
    plain, assisted = load_benchmark("usr-persona", data_dir), load_benchmark("usr-persona-reference", data_dir)
    truths = [row for row in plain if row["system"] == "Original Ground Truth"]
    assert len(truths) == 60 and "Original Ground Truth" not in assisted["system"]
    first_context = [row for row in assisted if row["context"] == truths[0]["context"]]
    assert len(first_context) == 4 and {row["reference"] for row in first_context} == {truths[0]["response"]}
    assert "reference_score" not in load_benchmark("usr-persona-reference", data_dir).column_names


def test_rade_items_carry_the_reference_score_as_an_item_column(data_dir):
    from hf_dialeval.data.benchmarks import human_dimensions

    dataset = load_benchmark("rade-emotion", data_dir, split="train")
    assert human_dimensions(dataset) == ["Overall"]
    first = dataset[0]
    assert 1.0 <= first["reference_score"] <= 5.0 and first["reference"]
