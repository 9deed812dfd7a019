import math
import re

import pytest

from hf_dialeval.data.model import (
    DialogueValidationError,
    dialogue_to_turns,
    item_level,
    system_turn_indices,
    turn_to_dialogue,
    validate_dialogue_item,
    validate_items,
    validate_score,
    validate_turn_item,
)


def test_valid_items_pass():
    validate_dialogue_item({"dialogue": ["hi", "hello"], "speakers": ["User", "System"]})
    validate_dialogue_item({"dialogue": ["hi"]})
    validate_turn_item({"context": [], "response": "fine", "condition": None, "reference": "ok"})


@pytest.mark.parametrize(
    "item, field",
    [
        ({"dialogue": []}, "'dialogue'"),
        ({"dialogue": ["hi", None]}, "'dialogue[1]'"),
        ({"dialogue": ["hi", 3]}, "'dialogue[1]'"),
        ({"dialogue": "hi there"}, "'dialogue'"),
        ({"dialogue": ["a", "b"], "speakers": ["User"]}, "'speakers'"),
        ({"context": ["a"]}, "'response'"),
        ({"response": "a"}, "'context'"),
        ({"context": ["a"], "response": 3}, "'response'"),
        ({"context": ["a", 3], "response": "b"}, "'context[1]'"),
        ({"context": ["a"], "response": "b", "reference": 7}, "'reference'"),
        ({"dialogue": ["a", "b"], "speakers": ["User", 2]}, "'speakers[1]'"),
    ],
)
def test_bad_items_name_item_and_field(item, field):
    validate = validate_dialogue_item if "dialogue" in item else validate_turn_item
    with pytest.raises(DialogueValidationError, match=re.escape(f"item 7, field {field}")):
        validate(item, 7)


def test_validate_items_reports_the_first_bad_index():
    items = [{"dialogue": ["a"]}, {"dialogue": ["b"]}, {"dialogue": []}]
    with pytest.raises(DialogueValidationError, match="item 2"):
        validate_items(items, "dialogue")


@pytest.mark.parametrize("value", [math.nan, math.inf, "3", True])
def test_non_finite_or_non_numeric_scores_are_rejected(value):
    with pytest.raises(DialogueValidationError, match="item 4, field 'Overall'"):
        validate_score(value, 4, "Overall")


def test_missing_score_is_allowed():
    validate_score(None, 0, "Overall")
    validate_score(3, 0, "Overall")


def test_item_level():
    assert item_level({"dialogue": ["a"]}) == "dialogue"
    assert item_level({"context": [], "response": "a"}) == "turn"
    with pytest.raises(DialogueValidationError, match="cannot tell"):
        item_level({"text": "a"})


def test_system_turns_from_speakers_or_alternation():
    assert system_turn_indices(5, ["User", "System", "User", "System", "User"]) == [1, 3]
    assert system_turn_indices(4, ["bot", "human", "bot", "human"]) == [0, 2]
    assert system_turn_indices(5, None) == [1, 3]
    assert system_turn_indices(4, ["A", "B", "A", "B"]) == [1, 3]
    assert system_turn_indices(1, None) == [0]


def test_levels_meet():
    assert turn_to_dialogue(["a", "b"], "c") == ["a", "b", "c"]
    assert dialogue_to_turns(["a", "b", "c", "d"], None) == [(["a"], "b"), (["a", "b", "c"], "d")]


@pytest.mark.parametrize("arguments, message", [
    ({"contexts": "Hi", "responses": ["Hello"]}, "'contexts' is a single text, not a list"),
    ({"contexts": [["Hi"]], "responses": "Hello"}, "'responses' is a single text, not a list"),
    ({"contexts": (c for c in [["Hi"]]), "responses": ["Hello"]}, "'contexts' is a generator, not a list"),
    ({"contexts": [["Hi"]], "responses": ["Hello"], "references": {"a": 1}}, "'references' is a dict, not a list"),
])
def test_arguments_that_are_not_lists_say_what_was_expected(arguments, message):
    from hf_dialeval import load_metric

    with pytest.raises(DialogueValidationError, match=message):
        load_metric("length").score_turns(**arguments)


def test_dialogues_that_are_not_a_list_say_what_was_expected():
    from hf_dialeval import load_metric

    with pytest.raises(DialogueValidationError, match="'dialogues' is a single text"):
        load_metric("length").score_dialogues("Hi there")
    with pytest.raises(DialogueValidationError, match="'dialogues' is a generator"):
        load_metric("length").score_dialogues(d for d in [["Hi", "Hello"]])
