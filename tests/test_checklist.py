"""The perturbation checklist: each perturbation changes only the system's turns, pairs are the same for every
metric, win rates count ties half, and the command writes the table and a JSON record."""

from __future__ import annotations

import json
import re

import pytest

from hf_dialeval import cli
from hf_dialeval.cli import checklist as checklist_command
from hf_dialeval.data.perturbations import DEGENERATE_WORDS, PERTURBATIONS, PHRASE_REPEATS, negate, system_positions
from hf_dialeval.evaluation.checklist import (
    build_pairs,
    format_checklist,
    load_checklist_corpus,
    load_checklist_references,
    run_checklist,
    win_rate,
)
from hf_dialeval.inference import factory
from hf_dialeval.inference.factory import load_metric

DIALOGUES = [
    ["Hi , how was your weekend ?", "It was great , we went hiking in the mountains near the lake .",
     "That sounds lovely . Was it cold ?", "It is not cold in May , the weather was sunny and warm all day .",
     "Did you take pictures ?", "I took a lot of pictures of the lake and the old stone bridge ."],
    ["Can you recommend a good book ?", "I am reading a wonderful novel about a family of sailors .",
     "Is it long ?", "It is about four hundred pages , but the chapters are short and lively .",
     "Where did you buy it ?", "At the small bookshop on the corner of the main square ."],
    ["What do you do for a living ?", "I am a nurse at the children's hospital in the city centre .",
     "Do you like it ?", "I love helping the kids , even if the night shifts are very tiring .",
     "How long have you worked there ?", "Almost six years now , since I finished my studies ."],
]


def test_negation_rules():
    assert negate("I am happy .") == "I am not happy ."
    assert negate("It is not cold") == "It is cold"
    assert negate("I don't like it.") == "I do like it."
    assert negate("Can you help ?") is None and negate("I did it") is None


@pytest.mark.parametrize("name", list(PERTURBATIONS))
def test_perturbations_change_only_the_system_turns(name):
    perturbation = PERTURBATIONS[name]
    dialogue_pairs = build_pairs(perturbation, DIALOGUES, "dialogue", count=3, seed=1)
    assert dialogue_pairs.originals, f"{name} found no dialogue to perturb"
    for original, perturbed in zip(dialogue_pairs.originals, dialogue_pairs.perturbed):
        assert len(perturbed) == len(original) and perturbed != original
        users = [p for p in range(len(original)) if p not in system_positions(original)]
        assert all(perturbed[p] == original[p] for p in users)
    turn_pairs = build_pairs(perturbation, DIALOGUES, "turn", count=3, seed=1)
    assert turn_pairs.originals
    for context, original, perturbed in zip(turn_pairs.contexts, turn_pairs.originals, turn_pairs.perturbed):
        dialogue = next(d for d in DIALOGUES if d[:len(context)] == context)
        assert len(context) % 2 == 1 and dialogue[len(context)] == original and perturbed != original


def test_specific_perturbations():
    first = DIALOGUES[0]
    repeated = PERTURBATIONS["repeat"].perturb_dialogue(first, None, DIALOGUES)
    assert [repeated[p] for p in system_positions(first)] == [first[1]] * 3
    pairs = build_pairs(PERTURBATIONS["echo"], DIALOGUES, "turn", count=3)
    assert all(perturbed == context[-1] for context, perturbed in zip(pairs.contexts, pairs.perturbed))
    pairs = build_pairs(PERTURBATIONS["truncate"], DIALOGUES, "turn", count=3)
    assert all(original.startswith(perturbed) and len(perturbed) < len(original)
               for original, perturbed in zip(pairs.originals, pairs.perturbed))


def words_of(text):
    return {word.lower() for word in re.findall(r"\w+", text)}


def test_degenerate_perturbations_do_what_they_say():
    pairs = {name: build_pairs(PERTURBATIONS[name], DIALOGUES, "turn", count=3)
             for name in ("word-repeat", "phrase-repeat", "long", "gibberish")}
    for original, perturbed in zip(pairs["word-repeat"].originals, pairs["word-repeat"].perturbed):
        words = perturbed.split()
        assert len(words) == DEGENERATE_WORDS and len(set(words)) == 1 and words_of(words[0]) <= words_of(original)
    for original, perturbed in zip(pairs["phrase-repeat"].originals, pairs["phrase-repeat"].perturbed):
        assert perturbed == " ".join([original] * PHRASE_REPEATS)
    for context, original, perturbed in zip(pairs["long"].contexts, pairs["long"].originals, pairs["long"].perturbed):
        assert perturbed.startswith(original + " ") and len(perturbed.split()) >= DEGENERATE_WORDS
        own = next(d for d in DIALOGUES if d[:len(context)] == context)
        tail = perturbed[len(original) + 1:]  # utterances of the other dialogues
        assert not any(utterance in tail for utterance in own)
        assert words_of(tail) <= {word for d in DIALOGUES if d is not own for u in d for word in words_of(u)}
    for original, perturbed in zip(pairs["gibberish"].originals, pairs["gibberish"].perturbed):
        assert not words_of(perturbed) & words_of(original)
        assert len(original) <= len(perturbed) <= len(original) + 11  # the last word may overshoot


def test_reference_pairs_are_at_the_last_turn_with_another_human_reply():
    references = ["We saw the lake from the bridge .", "It is a lovely read .", "Six years , give or take ."]
    dialogues = [dialogue[:4] for dialogue in DIALOGUES]  # the reply (position 3) is the system's
    for name in ("gibberish", "repeat", "echo"):
        pairs = build_pairs(PERTURBATIONS[name], dialogues, "turn", count=3, references=references)
        assert len(pairs.references) == len(pairs.originals) == 3
        for context, original, reference in zip(pairs.contexts, pairs.originals, pairs.references):
            dialogue = dialogues[references.index(reference)]
            assert context == dialogue[:3] and original == dialogue[3] and reference != original
    assert not build_pairs(PERTURBATIONS["shuffle"], dialogues, "turn", count=3, references=references).originals
    assert not build_pairs(PERTURBATIONS["gibberish"], dialogues, "dialogue", count=3, references=references).references
    with pytest.raises(ValueError, match="2 references for 3 dialogues"):
        build_pairs(PERTURBATIONS["echo"], dialogues, "turn", references=references[:2])


def test_last_turn_pairs_are_at_each_items_reply_whatever_its_position():
    items = [dialogue[:3] for dialogue in DIALOGUES]  # a context of two utterances and its reply, at position 2
    for name in ("random", "generic", "echo"):
        pairs = build_pairs(PERTURBATIONS[name], items, "turn", count=3, last_turn=True)
        assert sorted(pairs.originals) == sorted(item[2] for item in items)
        assert all(context + [original] in items for context, original in zip(pairs.contexts, pairs.originals))
    # without it a pair is at a system turn: here the only one is the context's second utterance
    assert set(build_pairs(PERTURBATIONS["random"], items, "turn", count=3).originals) == {item[1] for item in items}


def test_dailydialog_plusplus_gives_each_context_a_reply_and_a_reference(data_dir):
    dialogues = load_checklist_corpus("dailydialog++", data_dir)
    references = load_checklist_references("dailydialog++", data_dir)
    assert len(dialogues) == len(references) > 1000
    # the reply is the system's (an odd position) and another human reply is its reference
    assert all(len(dialogue) % 2 == 0 and dialogue[-1] != reference
               for dialogue, reference in zip(dialogues, references))
    assert load_checklist_references("dailydialog", data_dir) is None


def test_a_reference_assisted_metric_runs_on_pairs_with_references():
    references = ["We saw the lake from the bridge .", "It is a lovely read .", "Six years , give or take ."]
    dialogues = [dialogue[:4] for dialogue in DIALOGUES]
    rows = run_checklist(load_metric("reference-similarity"), dialogues, count=3,
                         perturbations=["gibberish", "shuffle"], references=references)
    assert [row["n"] for row in rows] == [3, 0] and rows[1]["wins"] == {}  # no later system turn to shuffle in
    assert rows[0]["wins"]["overall"]["win_rate"] == 1.0
    assert "| shuffle | coherence | 0 | — |" in format_checklist(rows, "reference-similarity", ("similarity",), "toy")


def test_pairs_are_reproducible_and_seeded():
    one = build_pairs(PERTURBATIONS["random"], DIALOGUES, "turn", count=3, seed=5)
    two = build_pairs(PERTURBATIONS["random"], DIALOGUES, "turn", count=3, seed=5)
    assert (one.contexts, one.perturbed) == (two.contexts, two.perturbed)


def test_win_rate_counts_ties_half_and_rejects_nan():
    result = win_rate([1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 2.0, 0.5])
    assert result["win_rate"] == pytest.approx(0.625)
    assert 0.0 <= result["ci_low"] <= 0.625 <= result["ci_high"] <= 1.0
    assert win_rate([2.0, 3.0], [1.0, 1.0]) == {"win_rate": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    with pytest.raises(ValueError, match="NaN"):
        win_rate([1.0, float("nan")], [0.0, 0.0])


def test_length_floor_on_known_pairs():
    rows = {row["perturbation"]: row for row in run_checklist(load_metric("length"), DIALOGUES, count=3, seed=0)}
    assert rows["generic"]["wins"]["overall"]["win_rate"] == 1.0  # every human reply is longer than "OK."
    assert rows["truncate"]["wins"]["overall"]["win_rate"] == 1.0
    assert rows["jumble"]["wins"]["overall"]["win_rate"] == 0.5  # the same words: a tie
    table = format_checklist(list(rows.values()), "length", ("length",), "toy")
    assert "| generic | likability, topic_depth | 3 | 1.000 [1.00, 1.00] |" in table


def test_a_reference_assisted_metric_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="no second human reply .* dailydialog\\+\\+"):
        run_checklist(load_metric("reference-similarity"), DIALOGUES, count=3, seed=0)


def test_checklist_command_refuses_a_reference_metric_without_references_before_loading_it(monkeypatch, capsys):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the corpus was checked")

    monkeypatch.setattr(factory, "load_metric", no_model)
    monkeypatch.setattr(checklist_command, "load_metric_from", no_model)
    for metric in ("rade", "reference-similarity"):
        assert cli.main(["checklist", "--metric", metric, "--corpus", "dailydialog", "--data-dir", "missing"]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"--metric {metric} scores a reply against a reference" in error
        assert "give --corpus dailydialog++" in error


def test_checklist_command_runs_either_kind_of_metric_on_dailydialog_plusplus(tmp_path, capsys, data_dir):
    output = tmp_path / "reference.json"
    for metric in ("reference-similarity", "length"):
        argv = ["checklist", "--metric", metric, "--corpus", "dailydialog++", "--data-dir", str(data_dir), "--pairs",
                "10", "--perturbations", "word-repeat", "shuffle", "--output", str(output)]
        assert cli.main(argv) == 0
        record = json.loads(output.read_text())
        assert (record["corpus"], record["split"]) == ("dailydialog++", "test")
        shuffled = 0 if metric == "reference-similarity" else 10  # a dialogue-level metric shuffles the context's
        assert [row["n"] for row in record["rows"]] == [10, shuffled]
    assert "**dailydialog++**" in capsys.readouterr().out


def test_checklist_command_writes_table_and_record(tmp_path, capsys, data_dir):
    output = tmp_path / "length.json"
    argv = ["checklist", "--metric", "length", "--data-dir", str(data_dir), "--pairs", "20", "--output", str(output)]
    assert cli.main(argv) == 0
    table = capsys.readouterr().out
    record = json.loads(output.read_text())
    assert [row["perturbation"] for row in record["rows"]] == list(PERTURBATIONS)
    assert all(row["n"] == 20 for row in record["rows"]) and record["signature"]["metric"] == "length"
    assert record["signature"]["items"] == 2 * 20 * len(PERTURBATIONS)
    assert "| generic | likability, topic_depth | 20 | 1.000" in table
    assert cli.main(argv) == 0 and json.loads(output.read_text())["rows"] == record["rows"]
    assert record["split"] == "test"


def test_checklist_command_takes_pairs_from_another_split(tmp_path, capsys, data_dir):
    output = tmp_path / "validation.json"
    argv = ["checklist", "--metric", "length", "--data-dir", str(data_dir), "--pairs", "20", "--perturbations",
            "random", "--output", str(output)]
    assert cli.main(argv + ["--split", "validation"]) == 0
    assert "**dailydialog (validation)**" in capsys.readouterr().out
    validation = json.loads(output.read_text())
    assert validation["split"] == "validation"
    assert cli.main(argv) == 0
    assert json.loads(output.read_text())["rows"] != validation["rows"]  # other dialogues, other pairs
    assert cli.main(argv + ["--split", "dev"]) == 2
    assert "not 'dev'" in capsys.readouterr().err


def test_progress_bars_name_the_metric_and_the_perturbation(capsys):
    run_checklist(load_metric("length"), DIALOGUES, count=2, perturbations=["echo", "gibberish"], progress=True)
    error = capsys.readouterr().err
    assert "length: echo" in error and "length: gibberish" in error


def test_turn_level_pairs_are_scored_once_through_a_given_cache(tmp_path):
    from hf_dialeval.inference.score_cache import ScoreCache

    metric, cache = load_metric("similarity", device="cpu"), ScoreCache(tmp_path)
    first = run_checklist(metric, DIALOGUES, count=3, perturbations=["echo", "random"], cache=cache)
    assert sorted(path.name.split("-")[1] for path in (tmp_path / "similarity").glob("*.json")) == ["echo", "random"]
    assert first == run_checklist(metric, DIALOGUES, count=3, perturbations=["echo", "random"])  # as without one

    def refuse(*args, **kwargs):
        raise AssertionError("a pair scored again")

    metric.score_dataset = refuse
    assert run_checklist(metric, DIALOGUES, count=3, perturbations=["echo", "random"], cache=cache) == first
