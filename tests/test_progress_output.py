"""Progress as a user plans with it: bars drawn on a terminal only (never with ``--quiet``), so that a redirected
stderr holds lines, not every refresh of a bar; ``adapt`` saying how long each stage will take once it has timed a
step, and reporting each stage's seconds and peak memory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from test_adapt import _adapt_arguments, ratings_csv, tiny_quantidce  # noqa: F401  (fixtures)
from transformers import TrainerControl, TrainerState, TrainingArguments

from hf_dialeval.adaptation import costs
from hf_dialeval.adaptation.costs import PeakMemory, StageEstimate
from hf_dialeval.cli import build_parser, main
from hf_dialeval.cli.options import show_progress

#: What a tqdm bar leaves in a file: each refresh rewrites the line after a carriage return, with its rate.
BAR_MARKS = ("\r", "it/s", "item/s")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_unless_quiet(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert show_progress(quiet=False) and not show_progress(quiet=True)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a file or a pipe
    assert not show_progress(quiet=False)
    monkeypatch.setattr(sys, "stderr", None)  # a process started without one
    assert not show_progress(quiet=False)
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    assert not show_progress(quiet=False)


@pytest.mark.parametrize("command", [["score"], ["benchmark", "--benchmark", "fed-dialogue"], ["checklist"],
                                     ["compare", "--metric", "length", "--benchmark", "fed-dialogue"],
                                     ["leaderboard"], ["adapt", "quantidce", "--output-dir", "out"]])
def test_every_command_that_draws_bars_takes_quiet(command):
    args, _ = build_parser(command).parse_known_args([*command, "--quiet"])
    assert args.quiet is True


@pytest.mark.parametrize(("terminal", "quiet", "drawn"), [(True, False, True), (True, True, False),
                                                          (False, False, False)])
def test_score_draws_its_bar_on_a_terminal_only(tmp_path, monkeypatch, terminal, quiet, drawn):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"context": ["hi"], "response": f"reply {i}"}) + "\n" for i in range(5)))
    stderr = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(tmp_path / "out.jsonl"),
                 *(["--quiet"] if quiet else [])]) == 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 5
    written = stderr.getvalue()
    assert ("item/s" in written and "\r" in written) == drawn, written
    assert drawn or not any(mark in written for mark in BAR_MARKS), written


def _stage_steps(estimate: StageEstimate, steps: int, seconds: list[float], monkeypatch) -> None:
    """``estimate`` through a stage of ``steps`` optimizer steps, the clock reading ``seconds`` at each step's end."""
    clock = iter(seconds)
    monkeypatch.setattr(costs, "time", SimpleNamespace(perf_counter=lambda: next(clock)))  # this module's clock only
    arguments, state, control = TrainingArguments(output_dir="unused", report_to=[]), TrainerState(), TrainerControl()
    state.max_steps = steps
    estimate.on_train_begin(arguments, state, control)
    for step in range(1, min(steps, 3) + 1):
        state.global_step = step
        estimate.on_step_end(arguments, state, control)


def test_the_estimate_is_the_steps_times_the_second_step(capsys, monkeypatch):
    _stage_steps(StageEstimate("quantidce-kd"), 200, [10.0, 11.5, 13.0], monkeypatch)  # the first step: warm-up
    assert capsys.readouterr().err == "hf-dialeval: quantidce-kd: 200 steps, about 5 min (1.5 s a step measured)\n"
    _stage_steps(StageEstimate("fined-eval"), 9000, [0.0, 2.0], monkeypatch)
    assert capsys.readouterr().err == "hf-dialeval: fined-eval: 9000 steps, about 5.0 h (2 s a step measured)\n"
    _stage_steps(StageEstimate("rade"), 1, [0.0], monkeypatch)  # no second step to time: nothing said
    assert capsys.readouterr().err == ""


def test_a_stages_peak_is_its_own_and_the_whole_runs_peak_is_the_kernels():
    memory = PeakMemory()
    held = bytearray(300 * 1024 * 1024)
    held[::4096] = bytes(len(held[::4096]))  # every page written: resident
    peak = memory.process_mb()
    del held
    memory.reset()
    stage = memory.since_reset_mb()
    assert stage > 0 and memory.process_mb() >= peak >= 300
    assert stage < peak - 250  # the stage's own peak, not the process's


def test_adapt_into_a_file_writes_lines_an_estimate_and_each_stages_memory(tmp_path, ratings_csv,  # noqa: F811
                                                                            tiny_quantidce):  # noqa: F811
    output = tmp_path / "adapted"
    command = [sys.executable, "-m", "hf_dialeval.cli", "adapt", "quantidce",
               *_adapt_arguments(ratings_csv, tiny_quantidce, output), "--max-steps", "3"]
    with (tmp_path / "stderr.txt").open("w") as stderr:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, text=True, check=False)
    written = (tmp_path / "stderr.txt").read_text()
    assert done.returncode == 0, written
    assert json.loads(done.stdout)["output_dir"] == str(output)  # stdout: the summary alone
    assert not any(mark in written for mark in BAR_MARKS), written
    estimates = [line for line in written.splitlines() if "a step measured)" in line]
    assert len(estimates) == 1 and estimates[0].startswith("hf-dialeval: quantidce-kd: 3 steps, about "), written
    report = json.loads((output / "adaptation_report.json").read_text())
    stage = report["steps"][0]
    assert stage["seconds"] > 0 and 0 < stage["peak_memory_mb"] <= report["peak_memory_mb"]
    assert f"peak memory {stage['peak_memory_mb']} MB" in (output / "adaptation_report.md").read_text()
    assert json.loads((output / "training_record.json").read_text())["arguments"]["disable_tqdm"] is True
