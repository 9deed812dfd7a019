"""The checkout's ``metrics/<name>/`` folders (what ``evaluate.load("metrics/<name>")`` reads) must serve
the very module scripts the package installs: a copy drifts (Dial-M's once lacked ``dtype``), a link cannot. And every
module checks its inputs as its metric's scoring does, before ``evaluate`` casts them and before any model loads."""

from pathlib import Path

import evaluate
import pytest

import hf_dialeval
from hf_dialeval import evaluate_modules
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.registry import METRICS

ROOT = Path(__file__).resolve().parents[1]
METRICS_DIR = ROOT / "metrics"
#: where the package's module scripts live in the checkout (``hf_dialeval.registry.EVALUATE_MODULES_DIR`` once installed)
MODULES_DIR = ROOT / "src/hf_dialeval/evaluate_modules"
METRIC_FOLDERS = sorted(path for path in METRICS_DIR.iterdir() if path.is_dir())
PACKAGED = sorted(path.name for path in MODULES_DIR.iterdir() if (path / f"{path.name}.py").is_file())


def test_every_packaged_module_has_a_metrics_folder():
    assert PACKAGED, f"no evaluate module found under {MODULES_DIR}"
    assert sorted(folder.name for folder in METRIC_FOLDERS) == PACKAGED


@pytest.mark.parametrize("folder", METRIC_FOLDERS, ids=lambda folder: folder.name)
def test_metrics_folder_links_the_packaged_script_and_has_its_card(folder):
    script = folder / f"{folder.name}.py"
    assert script.is_symlink(), f"{script} is a copy: replace it with a link to the packaged script"
    target = Path(script.readlink())
    assert not target.is_absolute(), f"{script} -> {target}: the link must be relative to work in any checkout"
    assert script.resolve() == (MODULES_DIR / folder.name / f"{folder.name}.py").resolve()
    assert (folder / "README.md").is_file(), f"{folder} has no metric card (README.md)"
    assert (folder / "requirements.txt").is_file(), f"{folder} has no requirements.txt"


# ---- bad inputs get the package's one-line error, as scoring gives it, before any model loads ----------------------

#: module, its inputs with one bad value, and the message scoring gives for the item
BAD_INPUTS = [
    ("rade", {"contexts": [["hi"], ["hi"]], "references": ["hello", None], "candidates": ["hey", "hey"]},
     "item 1, field 'reference': the item has no reference"),
    ("rade", {"contexts": [["hi"]], "references": [3], "candidates": ["hey"]},
     "item 0, field 'reference': expected a string, got int"),
    ("rade", {"contexts": [["hi"]], "references": [" "], "candidates": ["hey"]},
     "item 0, field 'reference': the reference is empty"),
    ("rade", {"contexts": [None], "references": ["hello"], "candidates": ["hey"]},
     "item 0, field 'context': expected a list of utterances, got NoneType"),
    ("rade", {"contexts": [["hi"]], "references": ["hello"], "candidates": [None]},
     "item 0, field 'response': expected a string, got NoneType"),
    ("quantidce", {"contexts": [[]], "responses": ["hey"]}, "item 0, field 'context': the context is empty"),
    ("quantidce", {"contexts": [["hi", None]], "responses": ["hey"]},
     "item 0, field 'context[1]': expected a string, got NoneType"),
    ("holistic_eval", {"contexts": [["hi"]], "responses": [None]},
     "item 0, field 'response': expected a string, got NoneType"),
    ("dial_m", {"contexts": [None], "responses": ["hey"]},
     "item 0, field 'context': expected a list of utterances, got NoneType"),
    ("fined_eval", {"dialogues": [["hi", "hey"], [None]]},
     "item 1, field 'dialogue[0]': expected a string, got NoneType"),
    ("fined_eval", {"dialogues": [None]}, "item 0, field 'dialogue': expected a list of utterances, got NoneType"),
]


@pytest.mark.parametrize("module, inputs, message", BAD_INPUTS, ids=[f"{module}-{index}" for index, (module, _, _)
                                                                     in enumerate(BAD_INPUTS)])
def test_bad_input_gets_the_message_scoring_gives_before_the_model_loads(monkeypatch, module, inputs, message):
    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded before the inputs were checked")

    monkeypatch.setattr(evaluate_modules, "load_metric", no_model)
    loaded = evaluate.load(hf_dialeval.evaluate_module(module))
    with pytest.raises(DialogueValidationError) as from_module:
        loaded.compute(**inputs)
    assert message in str(from_module.value) and "\n" not in str(from_module.value)
    # the very message the metric's scoring gives for the same items
    items = loaded._items(inputs)
    spec = next(spec for spec in METRICS.values() if spec.evaluate_module == module)
    with pytest.raises(DialogueValidationError) as from_scoring:
        spec.metric_class.check_items(items, spec.level)
    assert str(from_module.value) == str(from_scoring.value)


def test_compute_checks_each_item_once(monkeypatch):
    """``compute`` checks its items in ``add_batch``, before evaluate casts them; scoring them does not again."""
    from hf_dialeval.inference import metric as metric_module
    from hf_dialeval.inference.factory import load_metric

    checked = []
    validate_items = metric_module.validate_items
    monkeypatch.setattr(metric_module, "validate_items",
                        lambda items, *args: checked.append(len(items)) or validate_items(items, *args))
    monkeypatch.setattr(evaluate_modules, "load_metric", lambda *args, **kwargs: load_metric("length"))
    loaded = evaluate.load(hf_dialeval.evaluate_module("quantidce"))
    result = loaded.compute(contexts=[["hi"], ["hi", "hello"], ["how are you?"]], responses=["hey", "fine", "well"])
    assert result["overall"] == [1.0, 1.0, 1.0] and checked == [3]
