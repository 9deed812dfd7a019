"""Every registry entry against what it names: the classes its import paths reach, the names and levels they read from
it, its card and evaluate module, its train commands, and the package's public names."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import hf_dialeval
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.registry import EVALUATE_MODULES_DIR, METRICS, MetricEntry, metric_exports, resolve

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(METRICS))
def test_an_entrys_metric_class_reads_its_name_and_level(name):
    spec = METRICS[name]
    assert issubclass(spec.metric_class, DialogueMetric)
    assert (spec.metric_class.name, spec.metric_class.level) == (spec.name, spec.level)
    assert spec.level in ("turn", "dialogue") and spec.package == spec.metric_class.__module__.rpartition(".")[0]


@pytest.mark.parametrize("name", sorted(name for name, spec in METRICS.items() if spec.config is not None))
def test_an_entry_with_a_model_names_its_classes_card_module_and_repo(name):
    spec = METRICS[name]
    assert spec.model_class.config_class is spec.config_class
    assert (ROOT / "model_cards" / spec.card).is_file() and spec.card == f"{spec.name.replace('-', '_')}.md"
    script = EVALUATE_MODULES_DIR / spec.evaluate_module / f"{spec.evaluate_module}.py"
    loaded = importlib.util.spec_from_file_location(f"scripts.{spec.evaluate_module}", script)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    (module_class,) = [value for value in vars(module).values() if isinstance(value, type)
                       and value.__module__ == module.__name__]
    # the module reads the metric and its level from the entry whose evaluate_module is the script's name
    instance = module_class.__new__(module_class)
    assert instance.entry is spec and (instance.metric_name, instance.level) == (spec.name, spec.level)
    assert spec.hub_repo and spec.exportable


@pytest.mark.parametrize("name", sorted(METRICS))
def test_an_entrys_train_commands_resolve_to_their_classes(name):
    from transformers import TrainingArguments

    for command in METRICS[name].train_commands:
        assert command.package == METRICS[name].package
        assert issubclass(command.arguments_class, TrainingArguments) and callable(command.train_function)
        assert issubclass(command.arguments_class, command.options)
        assert isinstance(command.options.EXAMPLE, str)  # what its --help ends with
    # an adapt route starts from a checkpoint and measures one: a model and a shipped default
    spec = METRICS[name]
    commands = {command.name: command for command in spec.train_commands}
    for step in spec.adaptation:
        assert spec.model is not None and spec.default is not None, f"{name}: an adapt route needs both"
        assert step.start_option in {field.name for field in dataclasses.fields(commands[step.command].options)}


def test_the_package_exports_every_entrys_classes():
    exported = metric_exports()
    for spec in METRICS.values():
        for path in (spec.metric, spec.config, spec.model):
            if path is not None:
                attribute = path.partition(":")[2]
                assert attribute in exported and attribute in hf_dialeval.__all__
                assert getattr(hf_dialeval, attribute) is resolve(path, spec.package)
                assert getattr(importlib.import_module(spec.package), attribute) is resolve(path, spec.package)


def test_import_paths_resolve_once_absolute_or_relative():
    absolute = MetricEntry("toy", "turn", "a toy", metric="hf_dialeval.metrics.length.scoring:LengthMetric")
    relative = MetricEntry("toy", "turn", "a toy", metric=".scoring:LengthMetric", package="hf_dialeval.metrics.length")
    assert absolute.metric_class is relative.metric_class is hf_dialeval.LengthMetric
    # a metric without a model of its own has no card, evaluate module or Hub repo to derive
    assert (absolute.card, absolute.evaluate_module, absolute.hub_repo) == (None, None, None)


def test_importing_the_package_and_listing_metrics_import_no_deep_learning_library():
    code = ("import sys, hf_dialeval; from hf_dialeval.registry import METRICS; names = sorted(METRICS); "
            "dir(hf_dialeval); print(len(names), 'torch' in sys.modules, 'transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.split() == [str(len(METRICS)), "False", "False"]
