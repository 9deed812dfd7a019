import pytest

from hf_dialeval import DialogueValidationError, load_metric
from hf_dialeval.inference.metric import DialogueMetric, length_sorted_batches
from hf_dialeval.inference.score_output import ScoreOutput


class ResponseLengthTurnMetric(DialogueMetric):
    """A turn-level toy metric: characters in the response, context size as a second dimension."""

    name = "toy-turn"
    level = "turn"
    dimensions = ("chars", "context")

    def _score_turns(self, contexts, responses, conditions, references):
        chars = [float(len(r)) for r in responses]
        return ScoreOutput({"chars": chars, "context": [float(len(c)) for c in contexts]}, chars,
                           [len(r) > 4 for r in responses])


class UtteranceCountDialogueMetric(DialogueMetric):
    name = "toy-dialogue"
    level = "dialogue"
    dimensions = ("utterances",)

    def _score_dialogues(self, dialogues, speakers):
        counts = [float(len(d)) for d in dialogues]
        return ScoreOutput({"utterances": counts}, counts)


def test_turn_metric_scores_a_dialogue_by_the_mean_over_system_turns():
    output = ResponseLengthTurnMetric().score_dialogues([["hi", "abc", "hey", "abcdefg"]])
    # System turns are utterances 1 and 3 (speakers unknown): lengths 3 and 7, contexts of 1 and 3.
    assert output.overall == [5.0]
    assert output.scores["context"] == [2.0]
    assert output.truncated == [True]


def test_turn_metric_uses_speakers_when_given():
    output = ResponseLengthTurnMetric().score_dialogues([["abcd", "x", "ab"]], speakers=[["bot", "user", "bot"]])
    assert output.overall == [3.0]


def test_dialogue_metric_scores_a_turn_as_context_plus_response():
    output = UtteranceCountDialogueMetric().score_turns([["a", "b"], []], ["c", "d"])
    assert output.overall == [3.0, 1.0]


def test_score_items_validates_first():
    with pytest.raises(DialogueValidationError, match="item 1, field 'dialogue'"):
        UtteranceCountDialogueMetric().score_items([{"dialogue": ["a"]}, {"dialogue": []}])


def test_scores_keep_input_order_across_chunks():
    metric = UtteranceCountDialogueMetric()
    metric.chunk_size = 2
    dialogues = [["a"] * n for n in (3, 1, 4, 1, 5)]
    assert metric.score_dialogues(dialogues).overall == [3.0, 1.0, 4.0, 1.0, 5.0]


def test_length_metric_both_levels():
    metric = load_metric("length")
    dialogue = metric.score_dialogues([["hello there", "one two three", "ok", "four five six seven eight"]])
    assert dialogue.overall == [4.0]
    assert metric.score_turns([["hi"]], ["one two three"]).scores["length"] == [3.0]
    with pytest.raises(ValueError, match="no checkpoint"):
        load_metric("length", checkpoint="x")
    with pytest.raises(KeyError, match="unknown metric"):
        load_metric("nope")


def test_length_sorted_batches_cover_every_index_longest_first():
    batches = list(length_sorted_batches([3, 9, 1, 7, 5], 2))
    assert batches == [[1, 3], [4, 0], [2]]


def test_records_and_select():
    output = ScoreOutput({"a": [1.0, 2.0]}, [0.5, 0.6], [False, True])
    assert output.records()[1] == {"scores": {"a": 2.0}, "overall": 0.6, "truncated": True, "empty": False}
    assert output.select("a") == [1.0, 2.0]
    with pytest.raises(KeyError, match="no score 'b'"):
        output.select("b")
