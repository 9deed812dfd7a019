"""The train commands whose default is activation checkpointing (memory bounded on long inputs) train the same
weights as without it: each runs two steps both ways on a tiny backbone, from the same seed."""

import csv
import json
import random
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from conftest import save_tiny_bert

WORDS = "the a cat dog likes runs home blue tea coffee very much i you we go".split()


def _data(folder):
    rng = random.Random(0)
    with (folder / "dialogues.jsonl").open("w", encoding="utf-8") as file:
        for _ in range(12):
            file.write(json.dumps({"dialogue": [" ".join(rng.choices(WORDS, k=rng.randint(3, 9))) for _ in range(6)]})
                       + "\n")
    with (folder / "ratings.csv").open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["context", "response", "reference", "score"])
        for _ in range(24):
            writer.writerow([json.dumps([" ".join(rng.choices(WORDS, k=5)) for _ in range(3)]),
                             " ".join(rng.choices(WORDS, k=5)), " ".join(rng.choices(WORDS, k=5)), rng.randint(1, 5)])


COMMANDS = {
    "quantidce-selection": ["--dialogues", "dialogues.jsonl", "--eval-dialogues", "0", "--encoding", "cross"],
    "rade": ["--ratings", "ratings.csv", "--held-out-share", "0", "--eval-strategy", "no"],
    "holistic-eval": ["--dialogues", "dialogues.jsonl", "--max-seq-length", "64"],
    "fined-eval": ["--dialogues", "dialogues.jsonl", "--strategies", "shuffling", "random_substitution"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_activation_checkpointing_is_on_by_default_and_changes_no_weight(tmp_path, command):
    backbone = save_tiny_bert(tmp_path / "backbone")
    _data(tmp_path)
    weights = {}
    for checkpointing in ("default", "false"):
        output = tmp_path / checkpointing
        flags = [] if checkpointing == "default" else ["--activation-checkpointing", "false"]
        run = subprocess.run([sys.executable, "-m", "hf_dialeval.cli", "train", command, "--backbone", backbone,
                              *COMMANDS[command], "--batch-size", "4", "--max-steps", "2", "--seed", "0", "--use-cpu",
                              "--output-dir", str(output), *flags], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        record = json.loads((output / "training_record.json").read_text())
        assert record["arguments"]["activation_checkpointing"] is (checkpointing == "default")
        weights[checkpointing] = load_file(output / "adapter" / "adapter_model.safetensors")
    assert weights["default"].keys() == weights["false"].keys()
    for name, tensor in weights["default"].items():
        # the adapter is saved in fp16: the recomputed activations round differently on some CPUs (AVX-512 bf16
        # without AMX), which can move a weight across an fp16 rounding boundary, one step of 2**-10 of its size
        torch.testing.assert_close(tensor.float(), weights["false"][name].float(), rtol=2**-10, atol=1e-5, msg=name)
    assert max(float(t.abs().max()) for n, t in weights["default"].items() if "lora_B" in n) > 0  # it trained
