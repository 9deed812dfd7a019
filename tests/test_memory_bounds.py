"""The adapt routes of the shipped defaults train on long human-bot conversations within 4 GB, and a 1 MB reply or
utterance costs nothing more: each command runs in a subprocess, its peak resident size read from the kernel's
accounting of children."""

import csv
import json
import random
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a real adaptation of the shipped default

#: The bound every adapt route and train command keeps on 2 cores, whatever the input.
PEAK_BYTES = 4 * 2**30
WORDS = ("the a cat dog likes runs home blue tea coffee very much i you we go went see movie book read weekend plans "
         "music jazz cook pasta hike mountains because really think maybe").split()
GENERIC = ("i see", "okay", "that's nice", "i don't know")


def _long_ratings(path, contexts: int = 60) -> None:
    """``contexts`` rated replies after 35 utterances of about 300 words in all (FED-like), each with a reference
    reply, one reply of 1 MB."""
    rng = random.Random(0)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["context", "response", "reference", "score"])
        for index in range(contexts):
            context = [" ".join(rng.choices(WORDS, k=rng.randint(3, 15))) for _ in range(35)]
            reply = " ".join(rng.choices(WORDS, k=2**18 if index == 0 else rng.randint(3, 20)))
            reference = " ".join(rng.choices(WORDS, k=rng.randint(3, 20)))
            writer.writerow([json.dumps(context), reply, reference, rng.randint(1, 5)])


def _long_dialogues(path, dialogues: int = 60) -> None:
    """``dialogues`` conversations of 36 utterances (FED-like), now and then a short reply people say often (which
    FineD-Eval's route reads as generic), one utterance of 1 MB, as JSONL."""
    rng = random.Random(1)
    with path.open("w", encoding="utf-8") as file:
        for index in range(dialogues):
            dialogue = [rng.choice(GENERIC) if rng.random() < 0.1 else " ".join(rng.choices(WORDS, k=rng.randint(3, 15)))
                        for _ in range(36)]
            if index == 0:
                dialogue[20] = " ".join(rng.choices(WORDS, k=2**18))
            file.write(json.dumps({"dialogue": dialogue}) + "\n")


def _peak_of(command: list[str]) -> tuple[int, subprocess.CompletedProcess]:
    """The peak resident size in bytes of ``command``, run alone in a fresh child of a fresh process."""
    probe = ("import resource, subprocess, sys; run = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "print(run.stderr[-3000:], file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True)
    status, peak_kib = done.stdout.split()
    return int(peak_kib) * 1024, subprocess.CompletedProcess(command, int(status), "", done.stderr)


@pytest.mark.parametrize("metric, kind, steps", [
    ("quantidce", "ratings", 6), ("rade", "ratings", 6), ("panel", "ratings", 6), ("quantidce", "dialogues", 2),
    ("holistic-eval", "dialogues", 2), ("fined-eval", "dialogues", 2), ("dial-m", "dialogues", 2),
])
def test_each_adapt_route_on_long_conversations_stays_within_4_gb(tmp_path, metric, kind, steps):
    data = tmp_path / ("long.csv" if kind == "ratings" else "long.jsonl")
    (_long_ratings if kind == "ratings" else _long_dialogues)(data)
    output = tmp_path / "adapted"
    peak, run = _peak_of([sys.executable, "-m", "hf_dialeval.cli", "adapt", metric, f"--{kind}", str(data),
                          "--output-dir", str(output), "--max-steps", str(steps), "--checklist-pairs", "10"])
    assert run.returncode == 0, run.stderr
    assert peak <= PEAK_BYTES, f"peak {peak / 2**30:.2f} GB"
    report = json.loads((output / "adaptation_report.json").read_text())
    assert report["peak_memory_mb"] * 2**20 <= PEAK_BYTES


@pytest.mark.parametrize("command, kind, flags", [
    ("quantidce-kd", "ratings", []), ("quantidce-mlr", "dialogues", []),
    ("rade", "ratings", ["--backbone", "sentence-transformers/all-MiniLM-L6-v2"]),
])
def test_train_commands_with_their_defaults_on_long_conversations_stay_within_4_gb(tmp_path, command, kind, flags):
    data = tmp_path / ("long.csv" if kind == "ratings" else "long.jsonl")
    (_long_ratings if kind == "ratings" else _long_dialogues)(data)
    peak, run = _peak_of([sys.executable, "-m", "hf_dialeval.cli", "train", command, f"--{kind}", str(data),
                          "--output-dir", str(tmp_path / "run"), "--max-steps", "2", *flags])
    assert run.returncode == 0, run.stderr
    assert peak <= PEAK_BYTES, f"peak {peak / 2**30:.2f} GB"
