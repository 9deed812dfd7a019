"""``hf-dialeval adapt``: a metric fine-tuned on a user's own ratings from a tiny random QuantiDCE built here, the
held-out share measured before and after beside the floors, the folder written whole with its report and card and
loading where a checkpoint loads; bad input refused in one line before any model loads."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import evaluate
import pytest
from scipy import stats
from test_quantidce import tiny_model
from transformers import AutoConfig, AutoModel, AutoTokenizer

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.adaptation.report import agreement, report_markdown
from hf_dialeval.adaptation.workflow import (
    checklist_dialogues,
    prepare_adaptation,
)
from hf_dialeval.cli import main
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.data.tables import rows_sha256
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.metrics.quantidce import QuantiDCEModel
from hf_dialeval.modeling.offline_models import offline_backbone_path

TOPICS = ["tea", "the weather", "football", "a new job", "their holidays", "a film", "cooking", "music"]


def _ratings() -> list[dict]:
    rows = []  # 56 contexts: a fifth held out is more than the 10 a held-out share needs at least
    for topic, speaker in ((topic, speaker) for topic in TOPICS for speaker in ("Ann", "Bob", "Cy", "Di", "Ed", "Flo",
                                                                                  "Gus")):
        context = f"Hello, I am {speaker}!\nHi, shall we talk about {topic}?"
        rows += [{"context": context, "reply": f"Yes, I love talking about {topic}.", "rating": 5},
                 {"context": context, "reply": "I don't know.", "rating": 2},
                 {"context": context, "reply": "The train leaves at noon from platform nine.", "rating": 1}]
    return rows


@pytest.fixture
def ratings_csv(tmp_path):
    path = tmp_path / "my_ratings.csv"
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=["context", "reply", "rating"])
        writer.writeheader()
        writer.writerows(_ratings())
    return path


@pytest.fixture
def tiny_quantidce(tmp_path):
    folder = tmp_path / "tiny-quantidce"
    tiny_model(seed=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(offline_backbone_path()).save_pretrained(folder)
    return folder


def _adapt(*arguments: str) -> int:
    return main(["adapt", "quantidce", *arguments])


def test_adapt_on_ratings_measures_before_and_after_and_writes_a_checkpoint(tmp_path, ratings_csv, tiny_quantidce,
                                                                            capsys):
    output = tmp_path / "adapted"
    status = _adapt("--ratings", str(ratings_csv), "--response-column", "reply", "--score-column", "rating",
                    "--init-from", str(tiny_quantidce), "--output-dir", str(output), "--held-out-share", "0.25",
                    "--checklist-pairs", "4", "--max-steps", "2", "--batch-size", "4", "--learning-rate", "1e-3")
    assert status == 0
    summary = json.loads(capsys.readouterr().out)  # stdout is the summary alone: what the Trainer prints is on stderr
    report = json.loads((output / "adaptation_report.json").read_text())
    loaded = load_ratings(ratings_csv, columns=_columns())
    trained, held = held_out_split(loaded, 0.25, seed=0)
    assert report["data"]["ratings"] == {"source": str(ratings_csv), "rows": 168, "sha256": rows_sha256(loaded),
                                         "trained_on": len(trained), "held_out": len(held)}
    assert len(held) == 42  # 14 of the 56 contexts, all three replies of each
    record = json.loads((output / "training_record.json").read_text())
    assert record["train_ratings"] == len(trained) and record["arguments"]["max_steps"] == 2
    assert record["arguments"]["disable_tqdm"] is True  # stderr is no terminal here: no progress bar
    # the record names what the user can find: their data, the folder; not the scratch folder that is gone
    assert ".partial" not in (output / "training_record.json").read_text()
    assert record["arguments"]["output_dir"] == str(output)
    assert record["arguments"]["ratings"] == f"{ratings_csv} (the 126 ratings trained on)"
    assert [step["command"] for step in report["steps"]] == ["quantidce-kd"]
    flags = report["steps"][0]["arguments"]  # every flag the stage was given, the user's last
    assert flags[:2] == ["--epochs", "20"] and flags[-6:] == ["--max-steps", "2", "--batch-size", "4",
                                                             "--learning-rate", "1e-3"]
    assert {"--held-out-share", "--eval-strategy", "--seed", "--output-dir", str(tiny_quantidce)} <= set(flags)
    assert flags[flags.index("--ratings") + 1] == record["arguments"]["ratings"]
    assert " ".join(flags) in (output / "adaptation_report.md").read_text()
    truncated = report["steps"][0]["truncated"]  # what the stage cut to fit the model, said in the report
    assert truncated == {**record["truncated"], "of": 126} and truncated["token_limit"] == 32
    assert (f"{truncated['items']} of its 126 training inputs cut to 32 tokens (the oldest tokens of the context "
            "first)") in (output / "adaptation_report.md").read_text()
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith("adapted")) == ["adapted"]

    # before: the base as loaded; after: the folder as loaded, on the same held-out ratings
    held_out = report["held_out"]
    for when, checkpoint in (("before", tiny_quantidce), ("after", output)):
        scores = load_metric("quantidce", str(checkpoint)).score_turns(held["context"], held["response"]).overall
        assert held_out[when]["spearman"] == pytest.approx(stats.spearmanr(scores, held["score"]).statistic)
        assert held_out[when]["n"] == 42 and len(held_out[when]["pearson_ci95"]) == 2
    assert held_out["before"]["spearman"] != held_out["after"]["spearman"] or \
        held_out["before"]["pearson"] != held_out["after"]["pearson"]
    assert set(held_out["floors"]) == {"similarity", "length"}
    assert summary["spearman_after"] == held_out["after"]["spearman"]

    checklist = report["checklist"]
    assert set(checklist["before"]) == set(checklist["after"]) == {"random", "generic"}
    assert all(0 <= entry["win_rate"] <= 1 and entry["n"] == 4 for entry in checklist["after"].values())
    assert list(checklist["floors"]) == ["similarity"]
    assert checklist["floors"]["similarity"].keys() == checklist["before"].keys()

    card = (output / "README.md").read_text()
    assert str(tiny_quantidce) in card and rows_sha256(loaded)[:16] in card
    assert "| perturbation | pairs | before | after | floor: similarity |" in card
    assert "adapted to your domain" in (output / "adaptation_report.md").read_text()
    assert isinstance(AutoModel.from_pretrained(output), QuantiDCEModel)
    module = evaluate.load(hf_dialeval.evaluate_module("quantidce"))
    computed = module.compute(contexts=held["context"], responses=held["response"], checkpoint=str(output))
    assert computed["overall"] == pytest.approx(load_metric("quantidce", str(output)).score_turns(
        held["context"], held["response"]).overall)


def _columns():
    from hf_dialeval.data.columns import Columns

    return Columns(response="reply", score="rating")


def test_the_checklist_of_ratings_alone_takes_each_context_with_its_best_reply(tmp_path, ratings_csv):
    adaptation = prepare_adaptation("quantidce", tmp_path / "out", ratings=str(ratings_csv),
                                    columns=_columns(), held_out_share=0.25)
    dialogues, references = checklist_dialogues(adaptation)
    assert references is None and len(dialogues) == 14
    assert all(dialogue[-1].startswith("Yes, I love talking about") and len(dialogue) == 3 for dialogue in dialogues)


def test_the_checklist_of_ratings_pairs_each_held_out_reply_in_its_whole_context(tmp_path, ratings_csv):
    adaptation = prepare_adaptation("quantidce", tmp_path / "out", ratings=str(ratings_csv),
                                    columns=_columns(), held_out_share=0.25)
    metric = load_metric("similarity")
    scored, score_turns = [], metric.score_turns

    def recording(contexts, responses, **kwargs):
        scored.append((contexts, responses))
        return score_turns(contexts, responses, **kwargs)

    metric.score_turns = recording
    result = adaptation.checklist(metric)
    items, _ = checklist_dialogues(adaptation)
    assert [name for name in result] == ["random", "generic"] and len(scored) == 2
    for contexts, responses in scored:  # originals first, then the perturbed replies to the same contexts
        originals = len(responses) // 2
        assert originals and set(responses[:originals]) <= {item[-1] for item in items}
        assert all([*context, reply] in items for context, reply in zip(contexts, responses[:originals]))


@pytest.mark.parametrize(("metric", "original", "reference"), [
    ("quantidce", "Sure, {topic} is my favourite subject.", None),  # the human reference is the reply
    ("rade", "Yes, I love talking about {topic}.", "Sure, {topic} is my favourite subject."),  # not handed the win
])
def test_the_checklist_of_ratings_with_references_prefers_the_human_reply(tmp_path, metric, original, reference):
    path = tmp_path / "referenced.jsonl"
    with path.open("w", encoding="utf-8") as file:
        for row in _ratings():
            topic = row["context"].split("about ")[1].rstrip("?")
            file.write(json.dumps({"context": row["context"], "response": row["reply"], "score": row["rating"],
                                   "reference": f"Sure, {topic} is my favourite subject."}) + "\n")
    adaptation = prepare_adaptation(metric, tmp_path / "out", ratings=str(path), held_out_share=0.25)
    dialogues, references = checklist_dialogues(adaptation)
    topics = [dialogue[-2].split("about ")[1].rstrip("?") for dialogue in dialogues]
    assert len(dialogues) == 14
    assert [dialogue[-1] for dialogue in dialogues] == [original.format(topic=topic) for topic in topics]
    assert references == (None if reference is None else [reference.format(topic=topic) for topic in topics])


def _report(after: float, after_ci95: list[float], generic_after: float) -> dict:
    rates = {"random": {"n": 26, "win_rate": 0.731}, "generic": {"n": 26, "win_rate": 0.808}}
    return {"metric": "quantidce", "base": "base", "seed": 0, "steps": [],
            "data": {"ratings": {"source": "r.csv", "rows": 300, "sha256": "0" * 64, "trained_on": 240,
                                 "held_out": 60}},
            "held_out": {"n": 60, "before": {"spearman": 0.30, "spearman_ci95": [0.1, 0.5]},
                         "after": {"spearman": after, "spearman_ci95": after_ci95},
                         "floors": {"similarity": {"spearman": 0.39}, "length": {"spearman": 0.05}}},
            "checklist": {"dialogues": "held out", "before": rates, "floors": {"similarity": rates},
                          "after": {"random": rates["random"], "generic": {"n": 26, "win_rate": generic_after}}}}


def test_the_report_page_says_whether_adapting_paid():
    page = report_markdown(_report(0.62, [0.45, 0.75], 0.808))
    assert ("- Agreement: the adapted checkpoint beats the base checkpoint and every floor (Spearman +0.320 over the "
            "base checkpoint, +0.230 over the similarity floor and +0.570 over the length floor).") in page
    assert "- Checklist: the adapted checkpoint wins at least as many pairs as the base on every contrast." in page
    page = report_markdown(_report(0.35, [0.1, 0.55], 0.615))
    assert ("- Agreement: the adapted checkpoint does not beat the similarity floor: on data like this the similarity floor "
            "agrees with the ratings at least as well "
            "(Spearman +0.050 over the base checkpoint, -0.040 over the similarity floor and +0.300 over the length floor). "
            "A difference inside its 95% interval may be noise: adapt again with another --seed to see.") in page
    assert ("- Checklist: the adapted checkpoint wins fewer pairs than the base on generic (0.808 → 0.615 of 26 pairs). "
            "The similarity floor wins more pairs than it on generic (0.808 against 0.615).") in page


def test_agreement_gives_both_correlations_with_intervals():
    result = agreement([0.1, 0.4, 0.3, 0.9, 0.7], [1, 2, 3, 5, 4])
    assert result["n"] == 5
    assert result["spearman"] == pytest.approx(stats.spearmanr([0.1, 0.4, 0.3, 0.9, 0.7], [1, 2, 3, 5, 4]).statistic)
    assert result["pearson"] == pytest.approx(stats.pearsonr([0.1, 0.4, 0.3, 0.9, 0.7], [1, 2, 3, 5, 4]).statistic)
    low, high = result["spearman_ci95"]
    assert -1 <= low <= result["spearman"] <= high <= 1


@pytest.mark.parametrize(("arguments", "message"), [
    (["--output-dir", "OUT"], "quantidce adapts on dialogues and ratings: give --dialogues or --ratings"),
    (["--ratings", "RATINGS", "--response-column", "reply", "--output-dir", "OUT"],
     "has no column 'score' (the rating's score); its columns: context, reply, rating; name the one that holds it "
     "with --score-column"),
    (["--ratings", "RATINGS", "--score-column", "rating", "--response-column", "reply", "--output-dir", "OUT",
      "--max-stepz", "3"], "hf-dialeval train quantidce-kd takes no --max-stepz 3"),
    (["--ratings", "RATINGS", "--score-column", "rating", "--response-column", "reply", "--output-dir", "OUT",
      "--bf16", "--fp16"], "hf-dialeval train quantidce-kd: At most one of fp16 and bf16 can be True"),
    (["--ratings", "RATINGS", "--score-column", "rating", "--response-column", "reply", "--output-dir", "OUT",
      "--held-out-share", "1"], "the held-out share must be above 0 and below 1, not 1.0"),
    (["--ratings", "RATINGS", "--score-column", "rating", "--response-column", "reply", "--output-dir", "OUT",
      "--init-from", "/no/such/folder"], "/no/such/folder"),
])
def test_bad_input_is_one_line_before_any_model_loads(tmp_path, ratings_csv, capsys, monkeypatch, arguments, message):
    import hf_dialeval.adaptation.workflow as adaptation

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(adaptation, "load_metric", no_model)
    arguments = [str(ratings_csv) if a == "RATINGS" else str(tmp_path / "out") if a == "OUT" else a
                 for a in arguments]
    assert _adapt(*arguments) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error
    assert not (tmp_path / "out").exists()


def test_a_full_output_folder_is_kept_unless_overwritten(tmp_path, ratings_csv, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep me")
    assert _adapt("--ratings", str(ratings_csv), "--response-column", "reply", "--score-column", "rating",
                  "--output-dir", str(tmp_path / "out")) == 2
    assert "is not empty: give another folder, or --overwrite-output-dir" in capsys.readouterr().err
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep me"


def test_a_metric_without_a_route_names_those_with_one(tmp_path, ratings_csv):
    with pytest.raises(OptionError, match=r"similarity is not adapted in one command: adapt one of \[.*'quantidce'"):
        prepare_adaptation("similarity", tmp_path / "out", ratings=str(ratings_csv))


def test_adapt_holistic_eval_on_dialogues_runs_the_checklist_before_and_after(tmp_path, capsys):
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    dialogues = tmp_path / "my_dialogues.jsonl"
    dialogues.write_text("".join(json.dumps({"dialogue": [f"hi , are you {TOPICS[i % 8]} fan ?", "yes , very much .",
                                                          "why is that ?", f"i grew up with it , {i} years ."]}) + "\n"
                                 for i in range(50)))
    base = train_holistic_eval(HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "base"), dialogues=str(dialogues), from_scratch=True, scratch_vocab_size=300,
        scratch_layers=1, scratch_hidden_size=16, scratch_heads=2, max_seq_length=48, max_steps=1, eval_pairs=4,
        test_pairs=0, cutoff_pairs=8, use_cpu=True, report_to=[], disable_tqdm=True))
    output = tmp_path / "adapted"
    assert main(["adapt", "holistic-eval", "--dialogues", str(dialogues), "--init-from", str(base), "--output-dir",
                 str(output), "--max-steps", "2", "--lora-rank", "0", "--checklist-pairs", "5"]) == 0
    report = json.loads((output / "adaptation_report.json").read_text())
    assert report["data"]["dialogues"]["held_out"] == 10 and report["data"]["dialogues"]["trained_on"] == 40
    assert "held_out" not in report  # no ratings: nothing to agree with
    assert report["steps"][0]["arguments"][-4:] == ["--max-steps", "2", "--lora-rank", "0"]
    record = json.loads((output / "training_record.json").read_text())
    assert record["dialogues_count"] == 40 and record["arguments"]["max_steps"] == 2
    checklist = report["checklist"]
    assert checklist["dialogues"] == f"10 held-out dialogues of {dialogues}"
    assert {name: entry["n"] for name, entry in checklist["after"].items()} == {"random": 5, "generic": 5}
    assert AutoConfig.from_pretrained(output).prompt_format == AutoConfig.from_pretrained(base).prompt_format


@pytest.mark.parametrize(("metric", "rows", "share", "message"), [
    ("fined-eval", [{"dialogue": [f"hi {i} .", "hello ."]} for i in range(13)], "0.8",
     "(the 3 dialogues trained on) holds 3 different dialogue(s): give 4 or more"),
    ("quantidce", [{"context": [f"question {i} ?"], "response": f"answer {i} ."} for i in range(20)], "0.5",
     "(the 10 dialogues trained on) has no turn whose speaker speaks again later"),
])
def test_a_stage_refusing_the_data_it_reads_fails_before_any_model_loads(tmp_path, capsys, monkeypatch, metric, rows,
                                                                          share, message):
    import hf_dialeval.adaptation.workflow as adaptation

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(adaptation, "load_metric", no_model)
    dialogues = tmp_path / "mine.jsonl"
    dialogues.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["adapt", metric, "--dialogues", str(dialogues), "--held-out-share", share, "--output-dir",
                 str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and f"--dialogues {dialogues} {message}" in error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--generic-min-count", "1000"], "occurs --generic-min-count 1000 times or more: give a lower"),
    (["--pair-weight", "0.5"], "--pair-weight scales a new pair encoder's trained pair layer: give --pair-encoder"),
    (["--lora-rank", "4"], "--adapter-rank factors a full fine-tuning: give it with --lora-rank 0"),
])
def test_every_check_of_every_stage_runs_before_the_base_is_measured(tmp_path, capsys, monkeypatch, flags, message):
    """FineD-Eval's stage: its data (the generic-reply threshold), its options that need one another, and
    TrainingArguments' own checks all fail before the base checkpoint loads to be measured."""
    import hf_dialeval.adaptation.workflow as adaptation

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(adaptation, "load_metric", no_model)
    dialogues = tmp_path / "mine.jsonl"
    dialogues.write_text("".join(json.dumps({"dialogue": [f"hi {i} .", "hello .", f"bye {i} ."]}) + "\n"
                                 for i in range(60)))
    assert main(["adapt", "fined-eval", "--dialogues", str(dialogues), "--output-dir", str(tmp_path / "out"),
                 *flags]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error, error
    assert not (tmp_path / "out").exists()


def _adapt_arguments(ratings_csv, tiny_quantidce, output) -> list[str]:
    return ["--ratings", str(ratings_csv), "--response-column", "reply", "--score-column", "rating", "--init-from",
            str(tiny_quantidce), "--output-dir", str(output), "--held-out-share", "0.25", "--checklist-pairs", "2",
            "--max-steps", "1", "--batch-size", "4"]


def test_a_file_put_into_the_output_during_adapt_survives(tmp_path, ratings_csv, tiny_quantidce, capsys, monkeypatch):
    import hf_dialeval.adaptation.workflow as adaptation

    output = tmp_path / "data"
    floors = adaptation.Adaptation.floors

    def floors_while_someone_writes(self):
        output.mkdir()
        (output / "notes.txt").write_text("x")  # another process, while the run measures the floors
        return floors(self)

    monkeypatch.setattr(adaptation.Adaptation, "floors", floors_while_someone_writes)
    assert _adapt(*_adapt_arguments(ratings_csv, tiny_quantidce, output)) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{output} changed while the run was writing (notes.txt): nothing in it was replaced" in error
    assert sorted(path.name for path in output.iterdir()) == ["notes.txt"]
    kept = Path(error.rsplit("the run's folder is ", 1)[1])
    assert (kept / "adaptation_report.json").is_file() and (kept / "model.safetensors").is_file()
    assert not list(kept.glob("*.jsonl"))  # no copy of the user's data
    assert not (tmp_path / "adapted.partial").exists() and not (tmp_path / "adapted.lock").exists()


def test_a_kill_at_any_moment_leaves_the_earlier_folder_or_none_and_no_copy_of_the_data(tmp_path, ratings_csv,
                                                                                         tiny_quantidce):
    output, scratch = tmp_path / "adapted", tmp_path / "adapted.partial"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = {**os.environ, "TMPDIR": str(temporary), "HF_DATASETS_CACHE": str(temporary / "datasets")}
    command = [sys.executable, "-m", "hf_dialeval.cli", "adapt", "quantidce",
               *_adapt_arguments(ratings_csv, tiny_quantidce, output), "--overwrite-output-dir"]
    started = time.perf_counter()
    subprocess.run(command, env=environment, check=True, capture_output=True)
    took = time.perf_counter() - started
    earlier = {path.name: path.read_bytes() for path in output.iterdir() if path.is_file()}
    def killed(when) -> None:
        process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + 2 * took
        while not when() and time.perf_counter() < deadline:
            time.sleep(0.05)
        process.kill()
        process.wait()
        if output.exists():  # the earlier folder, whole, or the new one, whole
            now = {path.name: path.read_bytes() for path in output.iterdir() if path.is_file()}
            assert now == earlier or set(now) == set(earlier)
        # nothing of the run outside its own scratch beside the output: neither in the system's temporary folder nor
        # in the datasets cache
        assert not [path for path in temporary.rglob("*") if path.is_file()]

    for share in (0.15, 0.85):  # while loading; while measuring or swapping
        moment = time.perf_counter() + share * took
        killed(lambda moment=moment: time.perf_counter() > moment)
    # the stage is writing the adapted folder in the scratch
    killed(lambda: (scratch / "output").is_dir() and any((scratch / "output").iterdir()))
    assert scratch.is_dir()
    rerun = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    assert f"removed {scratch}, left by a run over {output} that did not finish" in rerun.stderr
    assert (output / "adaptation_report.json").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["adapted", "my_ratings.csv", "tiny-quantidce", "tmp"]
