"""The perturbation checklist: each perturbation changes only the system's turns, pairs are the same for every
metric, win rates count ties half, and the command writes the table and a JSON record."""

from __future__ import annotations

import json

import pytest

from hf_dialeval import cli
from hf_dialeval.evaluation.checklist import (
    PERTURBATIONS,
    build_pairs,
    format_checklist,
    negate,
    run_checklist,
    system_positions,
    win_rate,
)
from hf_dialeval.inference.metric import load_metric

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
    with pytest.raises(ValueError, match="no second human reply"):
        run_checklist(load_metric("reference-similarity"), DIALOGUES, count=3, seed=0)


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
