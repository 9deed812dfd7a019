"""Data-parallel training: ``hf-dialeval train`` under ``torchrun`` and ``accelerate launch``, two CPU processes
(gloo), with the Trainer's own distribution — for a pairwise trainer (``train fined-eval``: FineDEvalTrainer scores
both dialogues of every pair) and a regression trainer (``train rade``: RADETrainer regresses the human scores).

Every run is a real subprocess of the launcher on a tiny random BERT (hidden 32, two layers), a few optimizer
steps, with a ``timeout`` so that a hang fails instead of blocking CI. What is checked:

* that two processes ran and shared the data: the launcher started ranks 0 and 1 of a world of 2, and an epoch of
  N examples at a per-device batch B took N / (2 B) optimizer steps (one process would need N / B);
* that the run layout is complete and loads: ``training_record.json`` is valid JSON with the sharded step
  counts, the merged model and ``adapter/`` load with the package's loaders and score finite (and equal) values,
  no ``checkpoint-*`` is left behind;
* that two processes at per-device batch B train exactly like one process at batch 2B (FineD-Eval, whose loss is
  a per-pair mean with no dropout at the options used: the same losses, gradient norms and final weights), also
  with gradient accumulation (2 processes × B/2 × 2 steps). RADE is not compared so: its head's dropout (0.1,
  not a command-line option) draws other masks per process, and its generation loss is a per-token mean;
* that only the main process writes the run layout (a ``sitecustomize`` on the workers' ``PYTHONPATH`` records
  every file a process of rank > 0 opens for writing, or removes, inside the run folder; the Trainer's own
  checkpoints are written by rank 0 alone, so rank > 0 has nothing to write there but its ``rng_state_<rank>``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hf_dialeval.modeling.loading import load_checkpoint

from conftest import save_tiny_bert

pytestmark = [pytest.mark.slow,  # multi-process launches
              pytest.mark.skipif(not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
                                 reason="torch.distributed with the gloo backend is needed")]

#: Seconds a launched run may take (a tiny run takes about 10 s on two cores): past it the run is killed.
RUN_TIMEOUT = 240
WORLD_SIZE = 2

DIALOGUES = [
    ["Hi! How are you?", "Great, I just got back from a long hike in the mountains.", "Nice, where did you go?"],
    ["What is your name?", "I like pizza."],
    ["Do you like music?", "Yes, mostly jazz.", "Who is your favourite?", "Miles Davis.", "Good choice!"],
]
RADE_CONTEXTS = [["hello there friend", "how are you today"], ["do you like tea ?"]]
RADE_RESPONSES = ["not bad at all", "yes"]
RADE_REFERENCES = ["i am fine", "no , coffee"]

#: FineD-Eval on 8 self-supervised pairs of one head (shuffling needs no auxiliary model), 2 epochs, LoRA with no
#: dropout: evaluated (and checkpointed) at step 2 only, so the final model is the last one.
FINED_EVAL_PAIRS = 8
FINED_EVAL = ["fined-eval", "--strategies", "shuffling", "--train-pairs", str(FINED_EVAL_PAIRS), "--eval-pairs", "8",
              "--max-steps", "-1", "--epochs", "2", "--eval-steps", "2", "--lora-rank", "2", "--max-seq-length", "128",
              "--train-max-seq-length", "64", "--learning-rate", "1e-2", "--logging-steps", "1", "--use-cpu"]
#: RADE fine-tuning (the paper's full loss) on 16 rade-chitchat ratings, one epoch, validation on its validation split.
RADE_ITEMS = 16
RADE = ["rade", "--train-data", "rade-chitchat", "--max-train-items", str(RADE_ITEMS), "--epochs", "1",
        "--warmup-steps", "0", "--max-seq-length", "64", "--max-reference-length", "16", "--lora-rank", "4",
        "--learning-rate", "1e-3", "--logging-steps", "1", "--per-device-eval-batch-size", "64", "--use-cpu"]
PER_DEVICE_BATCH = 4

#: Imported by every Python process of a run (it is on their PYTHONPATH). In a launched worker (``RANK`` set) it
#: notes the rank and world size; in a worker of rank > 0 it notes every file opened for writing inside the run
#: folder (the per-process ``checkpoint-*/rng_state_<rank>.pth`` aside) and every folder removed inside it.
SITECUSTOMIZE = textwrap.dedent('''
    import os

    _rank, _log, _watch = (os.environ.get(name) for name in ("RANK", "DDP_TEST_PROCESS_LOG", "DDP_TEST_RUN_DIR"))
    if _rank is not None and _log and _watch:
        import builtins
        import io
        import shutil

        _watch = os.path.realpath(_watch)
        _builtin_open, _rmtree, _record = builtins.open, shutil.rmtree, f"{_log}.rank{_rank}"

        def _note(line):
            with _builtin_open(_record, "a", encoding="utf-8") as handle:
                handle.write(line + "\\n")

        def _inside(path, checkpoints):
            try:
                path = os.path.realpath(os.fspath(path))
            except TypeError:  # a file descriptor
                return None
            if path != _watch and not path.startswith(_watch + os.sep):
                return None
            relative = os.path.relpath(path, _watch)
            if not checkpoints and relative.split(os.sep)[0].startswith("checkpoint-"):
                return None
            return relative

        def _open(file, mode="r", *args, **kwargs):
            relative = _inside(file, checkpoints=False) if any(flag in mode for flag in "wax+") else None
            if relative is not None:
                _note(f"write {relative}")
            return _builtin_open(file, mode, *args, **kwargs)

        def _remove_tree(path, *args, **kwargs):
            relative = _inside(path, checkpoints=True)
            if relative is not None:
                _note(f"rmtree {relative}")
            return _rmtree(path, *args, **kwargs)

        _note(f"start world_size={os.environ.get('WORLD_SIZE')}")
        if _rank != "0":
            builtins.open = io.open = _open
            shutil.rmtree = _remove_tree
''')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launcher_command(launcher: str) -> list[str]:
    """The command that starts ``hf-dialeval`` (``-m hf_dialeval.cli``): ``torchrun`` or ``accelerate launch``
    with two processes, or one plain process (``single``)."""
    cli = ["-m", "hf_dialeval.cli", "train"]
    if launcher == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(WORLD_SIZE), "--standalone",
                *cli]
    if launcher == "accelerate":
        # `accelerate launch --cpu --num_processes 2` starts ONE process (its multi-CPU mode goes through mpirun):
        # --multi_gpu is accelerate's torchrun launcher, and --use-cpu keeps the Trainer (and gloo) on the CPU
        return [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch", "--multi_gpu",
                "--num_processes", str(WORLD_SIZE), "--num_machines", "1", "--mixed_precision", "no",
                "--dynamo_backend", "no", "--main_process_port", str(_free_port()), *cli]
    if launcher == "single":
        return [sys.executable, *cli]
    raise KeyError(launcher)


class Run:
    """A finished launched run: its folder, the launcher's output and what the sitecustomize noted per rank."""

    def __init__(self, output_dir: Path, log: str, notes: dict[int, list[str]]) -> None:
        self.output_dir, self.log, self.notes = output_dir, log, notes

    @property
    def record(self) -> dict:
        return json.loads((self.output_dir / "training_record.json").read_text(encoding="utf-8"))

    def steps(self) -> list[dict]:
        """The training-loss log entries (one per optimizer step at ``--logging-steps 1``)."""
        return [entry for entry in self.record["log_history"] if "loss" in entry]

    def rank_writes(self) -> list[str]:
        """What processes of rank > 0 wrote or removed inside the run folder."""
        return [f"rank {rank}: {line}" for rank, lines in sorted(self.notes.items()) if rank
                for line in lines if not line.startswith("start ")]


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> str:
    """A tiny random BERT with MiniLM's tokenizer (FineD-Eval adds its </UTT> row itself)."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def launch(tmp_path_factory, backbone, data_dir):
    """``launch(name, launcher, *options)``: the run of that train command under that launcher (cached per
    ``name``: each distinct run is trained once per module)."""
    hooks = tmp_path_factory.mktemp("ddp_hooks")
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    runs_dir = tmp_path_factory.mktemp("ddp_runs")
    cache: dict[str, Run] = {}

    def run(name: str, launcher: str, *options: str) -> Run:
        if name in cache:
            return cache[name]
        output_dir, log_file = runs_dir / name, runs_dir / f"{name}.log"
        env = {key: value for key, value in os.environ.items()
               if key not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", CI="true", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DIALEVAL_DATA_DIR=str(data_dir),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(hooks), env.get("PYTHONPATH")])),
                   DDP_TEST_PROCESS_LOG=str(runs_dir / f"{name}.processes"), DDP_TEST_RUN_DIR=str(output_dir))
        command = [*launcher_command(launcher), *options, "--output-dir", str(output_dir), "--backbone", backbone]
        if launcher != "single":
            command += ["--ddp-backend", "gloo"]
        with open(log_file, "w", encoding="utf-8") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=runs_dir,
                                       start_new_session=True)
            try:
                process.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the launcher and its workers: their own session
                process.wait()
                pytest.fail(f"{' '.join(command)} hung: killed after {RUN_TIMEOUT} s\n"
                            f"{log_file.read_text(encoding='utf-8')[-4000:]}")
        output = log_file.read_text(encoding="utf-8")
        assert process.returncode == 0, f"{' '.join(command)} exited {process.returncode}:\n{output[-6000:]}"
        notes = {int(path.name.rsplit(".rank", 1)[1]): path.read_text(encoding="utf-8").splitlines()
                 for path in runs_dir.glob(f"{name}.processes.rank*")}
        cache[name] = Run(output_dir, output, notes)
        return cache[name]

    return run


def fined_eval_run(launch, launcher: str) -> Run:
    return launch(f"fined-eval-{launcher}", launcher, *FINED_EVAL, "--batch-size", str(PER_DEVICE_BATCH))


def rade_run(launch, launcher: str) -> Run:
    return launch(f"rade-{launcher}", launcher, *RADE, "--batch-size", str(PER_DEVICE_BATCH))


def assert_two_processes(run: Run) -> None:
    assert sorted(run.notes) == list(range(WORLD_SIZE)), f"ranks started: {sorted(run.notes)}\n{run.log[-3000:]}"
    for rank, lines in run.notes.items():
        assert lines[0] == f"start world_size={WORLD_SIZE}", (rank, lines[:1])


def assert_layout(run: Run) -> None:
    names = {path.name for path in run.output_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training_record.json",
            "adapter"} <= names, names
    assert not [name for name in names if name.startswith("checkpoint-")], names
    assert {"adapter_config.json", "adapter_model.safetensors", "config.json", "tokenizer.json"} <= {
        path.name for path in (run.output_dir / "adapter").iterdir()}
    best = run.record["best_checkpoint"]["path"]
    assert best is None or Path(best).parent == run.output_dir


def assert_finite(values: list[float]) -> None:
    assert values and all(math.isfinite(value) for value in values), values


LAUNCHERS = ["torchrun", pytest.param("accelerate", marks=pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None, reason="accelerate is not installed"))]


# ---- pairwise: FineD-Eval -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_pairwise_fined_eval_trains_data_parallel(launch, launcher):
    from hf_dialeval import load_metric

    run = fined_eval_run(launch, launcher)
    assert_two_processes(run)
    record = run.record
    assert record["train_pairs"] == FINED_EVAL_PAIRS and "eval_accuracy" in record["validation"]
    # 8 pairs at 4 per device: one optimizer step per epoch over two processes (one process would take two)
    steps = run.steps()
    assert [entry["step"] for entry in steps] == [1, 2], steps
    assert [entry["epoch"] for entry in steps] == [1.0, 2.0], steps
    assert all(math.isfinite(entry["loss"]) and math.isfinite(entry["grad_norm"]) for entry in steps)
    assert_layout(run)
    assert Path(record["best_checkpoint"]["path"]).name == "checkpoint-2"

    merged = load_metric("fined-eval", checkpoint=str(run.output_dir), device="cpu").score_dialogues(DIALOGUES)
    assert_finite(merged.overall)
    assert list(merged.scores) == ["coherence"]
    adapter = load_metric("fined-eval", checkpoint=str(run.output_dir / "adapter"), device="cpu")
    assert adapter.score_dialogues(DIALOGUES).overall == pytest.approx(merged.overall, abs=1e-5)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_pairwise_two_processes_train_like_one_process_with_twice_the_batch(launch, launcher):
    """Each step covers all 8 pairs in both runs (2 × 4 or 1 × 8), the loss is a per-pair mean and nothing is
    random once the model is built: DDP's averaged gradient is the full batch's, step for step."""
    distributed = fined_eval_run(launch, launcher)
    single = launch("fined-eval-single-batch8", "single", *FINED_EVAL, "--batch-size", str(2 * PER_DEVICE_BATCH))
    one, two = single.steps(), distributed.steps()
    assert [entry["step"] for entry in one] == [entry["step"] for entry in two] == [1, 2]
    for first, second in zip(one, two):
        assert second["loss"] == pytest.approx(first["loss"], rel=1e-5, abs=1e-7)
        assert second["grad_norm"] == pytest.approx(first["grad_norm"], rel=1e-4, abs=1e-7)
    best = [Path(run.record["best_checkpoint"]["path"]).name for run in (single, distributed)]
    assert best == ["checkpoint-2", "checkpoint-2"], best
    expected, actual = load_file(str(single.output_dir / "model.safetensors")), load_file(
        str(distributed.output_dir / "model.safetensors"))
    assert expected.keys() == actual.keys()
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], atol=1e-6, rtol=1e-5, msg=name)
    moved = load_file(str(distributed.output_dir / "adapter" / "adapter_model.safetensors"))
    assert any(name.endswith("lora_B.weight") and bool(tensor.abs().sum() > 0) for name, tensor in moved.items())


def test_pairwise_gradient_accumulation_over_two_processes_trains_like_one_batch(launch):
    """2 processes × 2 pairs × 2 accumulation steps is the effective batch of 8 of one process at batch 8."""
    accumulated = launch("fined-eval-torchrun-accumulate2", "torchrun", *FINED_EVAL, "--batch-size", "2",
                         "--gradient-accumulation-steps", "2")
    single = launch("fined-eval-single-batch8", "single", *FINED_EVAL, "--batch-size", str(2 * PER_DEVICE_BATCH))
    assert_two_processes(accumulated)
    one, two = single.steps(), accumulated.steps()
    assert [entry["step"] for entry in two] == [1, 2], two
    for first, second in zip(one, two):
        assert second["loss"] == pytest.approx(first["loss"], rel=1e-5)
        assert second["grad_norm"] == pytest.approx(first["grad_norm"], rel=1e-4)


# ---- regression: RADE ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_regression_rade_trains_data_parallel(launch, launcher):
    from hf_dialeval.metrics.rade.scoring import RADEMetric

    run = rade_run(launch, launcher)
    assert_two_processes(run)
    record = run.record
    assert record["train_items"] == RADE_ITEMS and record["train_data"] == ["rade-chitchat"]
    assert -1.0 <= record["validation"]["eval_spearman"] <= 1.0
    # 16 ratings at 4 per device: two optimizer steps for the epoch over two processes (one process would take four)
    steps = run.steps()
    assert [entry["step"] for entry in steps] == [1, 2], steps
    assert [entry["epoch"] for entry in steps] == [0.5, 1.0], steps
    for entry in steps:
        assert {"mse_candidate", "mse_reference", "ranking", "generation"} <= entry.keys()
        assert math.isfinite(entry["loss"]) and math.isfinite(entry["grad_norm"])
    assert steps[0]["loss"] != steps[1]["loss"]
    assert_layout(run)

    model, tokenizer = load_checkpoint("rade", run.output_dir)
    merged = RADEMetric(model, tokenizer, device="cpu").score_turns(RADE_CONTEXTS, RADE_RESPONSES,
                                                                    references=RADE_REFERENCES).overall
    assert_finite(merged)
    model, tokenizer = load_checkpoint("rade", run.output_dir / "adapter")
    assert RADEMetric(model, tokenizer, device="cpu").score_turns(
        RADE_CONTEXTS, RADE_RESPONSES, references=RADE_REFERENCES).overall == pytest.approx(merged, abs=1e-3)


# ---- one writer ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric, launcher", [("fined-eval", "torchrun"), ("fined-eval", "accelerate"),
                                              ("rade", "torchrun"), ("rade", "accelerate")])
def test_only_the_main_process_writes_the_run(launch, metric, launcher):
    if launcher == "accelerate":
        pytest.importorskip("accelerate")
    run = (fined_eval_run if metric == "fined-eval" else rade_run)(launch, launcher)
    assert_two_processes(run)
    writes = run.rank_writes()
    assert not writes, "processes of rank > 0 wrote inside the run folder:\n" + "\n".join(writes)
