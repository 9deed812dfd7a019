"""The one registry of metrics. A metric is its entry: a :class:`MetricEntry` named ``ENTRY`` (``ENTRIES`` for a
package that holds several) in its package under :mod:`hf_dialeval.metrics`, found there by :data:`METRICS`.

An entry is declarative: it says everything the rest of the package needs to serve the metric, as data. Its name,
level and one-line summary, its shipped default, the command-line options of its factory, its ``train`` commands and
its paper's numbers; and the classes that implement it, named by import path (``".scoring:QuantiDCEMetric"``: the
module, relative to the metric's package when it starts with a dot, and the attribute), which the registry imports
once, on first use: listing the metrics (``hf-dialeval --help``) imports no deep-learning library. What follows
from the name is not stated again: the model card (``model_cards/<name>.md``) and the evaluate module
(``evaluate_modules/<name>/``) of a metric with a model of its own, and the Hub repo of its export (its default
folder's name); the metric class and the evaluate module read ``name`` and ``level`` from the entry, and the
package's public names include every entry's classes. One generic loader
(:func:`hf_dialeval.modeling.loading.load_checkpoint`), factory (:func:`hf_dialeval.inference.factory.load_metric`,
which calls the metric class's ``load``) and exporter (:func:`hf_dialeval.publishing.export_models`) serve every
entry.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_dialeval.errors import OptionError, UnknownNameError

#: Where the evaluate module scripts ship: ``<folder>/<name>/<name>.py``.
EVALUATE_MODULES_DIR = Path(__file__).resolve().parent / "evaluate_modules"


@functools.cache
def resolve(path: str, package: str = "") -> Any:
    """The object an import path names: ``"module:attribute"``, the module relative to ``package`` when it starts
    with a dot. Imported once per process."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module, package or None), attribute)


def _module_path(path: str, package: str) -> str:
    """The absolute module of an import path (``".scoring:X"`` in ``hf_dialeval.metrics.length``:
    ``hf_dialeval.metrics.length.scoring``)."""
    module = path.partition(":")[0]
    return importlib.util.resolve_name(module, package) if module.startswith(".") else module


def snake_case(name: str) -> str:
    """A metric's name as a file or folder name: ``fined-eval`` -> ``fined_eval``."""
    return name.replace("-", "_")


@dataclass(frozen=True)
class MetricOption:
    """A keyword option of a metric's factory that the command line offers as ``--name`` (``nli_checkpoint`` is
    ``--nli-checkpoint``) to the commands that load a metric."""

    name: str
    help: str
    choices: tuple[str, ...] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class TrainCommand:
    """``hf-dialeval train <name>``. ``options`` is its light options dataclass (``--help`` lists it without importing
    torch); ``arguments`` and ``train`` are the import paths of the ``TrainingArguments`` subclass a run is parsed
    into and of the function that trains with it (relative to ``package``, which its entry sets). ``check``, where
    a run refuses some of the user's data only once it reads it, is the import path of the function (of the parsed
    arguments, the user's data given) that reads and checks it as the run will, before any model loads:
    ``hf-dialeval adapt`` calls it for every stage before it measures anything."""

    name: str
    help: str
    options: type
    arguments: str
    train: str
    check: str = ""
    package: str = ""

    @property
    def arguments_class(self) -> type:
        return resolve(self.arguments, self.package)

    @property
    def train_function(self) -> Any:
        return resolve(self.train, self.package)

    @property
    def check_function(self) -> Any:
        return resolve(self.check, self.package) if self.check else None


@dataclass(frozen=True)
class AdaptationStep:
    """One stage of ``hf-dialeval adapt``, the paper's route to a new domain: the train command that runs it
    (:class:`TrainCommand` of the same entry), the kind of the user's data it reads (``"ratings"`` or
    ``"dialogues"``: it runs when that data is given), the option of that command naming the checkpoint it
    continues, and its arguments sized for a CPU (command-line flags; the user's own come after them and win)."""

    command: str
    data: str
    start_option: str
    arguments: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric.

    ``metric`` names its :class:`~hf_dialeval.inference.metric.DialogueMetric` subclass, whose ``load`` is its
    factory; ``config`` and ``model`` the classes registered with ``AutoConfig``/``AutoModel`` (none for a metric
    without a model of its own); each an import path (see :func:`resolve`), relative to ``package`` (the metric's
    package, ``package=__name__`` in its ``__init__``) when it starts with a dot. ``default`` is what ``checkpoint=None`` loads: a folder
    shipped in the package or an offline backbone's Hub id (``None``: the metric has no model). ``hub_repo`` names
    the exported repo of the default (default: the default folder's name), ``card`` its model card in
    ``model_cards/`` and ``evaluate_module`` its module's folder under :data:`EVALUATE_MODULES_DIR` (default, for a
    metric with a model of its own: its name in snake case). ``options`` are its factory's own keyword options,
    ``ensemble`` whether it averages several checkpoints, ``paper_results`` maps ``(metric or sub-metric row,
    benchmark)`` to the paper's ``{dimension: {statistic: value}}``; ``adaptation`` are the stages of
    ``hf-dialeval adapt`` (none: the metric is not adapted in one command)."""

    name: str
    level: str
    summary: str
    metric: str
    config: str | None = None
    model: str | None = None
    default: str | Path | None = None
    hub_repo: str | None = None
    card: str | None = None
    evaluate_module: str | None = None
    options: tuple[MetricOption, ...] = ()
    train_commands: tuple[TrainCommand, ...] = ()
    adaptation: tuple[AdaptationStep, ...] = ()
    paper_results: Mapping[tuple[str, str], dict[str, dict[str, float]]] = field(default_factory=dict)
    ensemble: bool = False
    fitted_on_benchmarks: bool = False
    package: str = ""

    def __post_init__(self) -> None:
        derived = {"train_commands": tuple(dataclasses.replace(command, package=self.package)
                                           for command in self.train_commands)}
        if self.config is not None:  # a model of its own: a card and an evaluate module, named after the metric
            derived["card"] = self.card or f"{snake_case(self.name)}.md"
            derived["evaluate_module"] = self.evaluate_module or snake_case(self.name)
            if self.hub_repo is None and isinstance(self.default, Path):
                derived["hub_repo"] = self.default.name
        for key, value in derived.items():
            object.__setattr__(self, key, value)

    @property
    def metric_class(self) -> type:
        return resolve(self.metric, self.package)

    @property
    def config_class(self) -> type | None:
        return None if self.config is None else resolve(self.config, self.package)

    @property
    def model_class(self) -> type | None:
        return None if self.model is None else resolve(self.model, self.package)

    @property
    def exports(self) -> dict[str, str]:
        """The public names of its classes, each with its absolute module."""
        return {path.partition(":")[2]: _module_path(path, self.package)
                for path in (self.metric, self.config, self.model) if path is not None}

    @property
    def uses_checkpoint(self) -> bool:
        """Whether the metric runs a model (and so takes a checkpoint)."""
        return self.default is not None

    @property
    def exportable(self) -> bool:
        """Whether ``push_to_hub.py models`` publishes its model: it has one of its own and a card."""
        return self.model is not None and self.card is not None

    def evaluate_module_folder(self) -> Path | None:
        """The folder ``evaluate.load`` takes for this metric's evaluate module (``None``: it has none)."""
        return None if self.evaluate_module is None else EVALUATE_MODULES_DIR / self.evaluate_module


def _discover() -> dict[str, MetricEntry]:
    """The entries of the metric packages under :mod:`hf_dialeval.metrics`, by name (a package's ``__init__`` holds
    its entry and imports no deep-learning library)."""
    from hf_dialeval import metrics

    found: dict[str, MetricEntry] = {}
    for package in pkgutil.iter_modules(metrics.__path__):
        module = importlib.import_module(f"{metrics.__name__}.{package.name}")
        entries = getattr(module, "ENTRIES", None) or ((module.ENTRY,) if hasattr(module, "ENTRY") else ())
        for entry in entries:
            if entry.name in found:
                raise RuntimeError(f"two metrics are named {entry.name!r}: {module.__name__} and another package")
            found[entry.name] = entry
    return dict(sorted(found.items()))


class _Registry(Mapping[str, MetricEntry]):
    """:data:`METRICS`: the entries, found on first use (so that ``import hf_dialeval.registry`` costs nothing)."""

    def __init__(self) -> None:
        self._entries: dict[str, MetricEntry] | None = None

    @property
    def entries(self) -> dict[str, MetricEntry]:
        if self._entries is None:
            self._entries = _discover()
        return self._entries

    def __getitem__(self, name: str) -> MetricEntry:
        return self.entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __setitem__(self, name: str, entry: MetricEntry) -> None:
        """Register a metric defined outside the package (tests, a user's own metric)."""
        self.entries[name] = entry

    def __delitem__(self, name: str) -> None:
        del self.entries[name]


#: Every registered metric, by name.
METRICS = _Registry()


def entry(name: str) -> MetricEntry:
    """The entry of metric ``name``; an unknown name is a one-line error listing the known ones."""
    if name not in METRICS:
        raise UnknownNameError(f"unknown metric {name!r}; choose one of {sorted(METRICS)}")
    return METRICS[name]


@dataclass(frozen=True)
class MetricChoice:
    """A registered metric as a command names it: ``name`` or ``name=CHECKPOINT`` (``None``: its shipped
    default). The label is the text as given, so that one metric can appear with two checkpoints."""

    name: str
    checkpoint: str | None = None

    @classmethod
    def parse(cls, text: str) -> MetricChoice:
        name, _, checkpoint = text.partition("=")
        if name not in METRICS:
            raise UnknownNameError(f"unknown metric {name!r}; choose among {sorted(METRICS)} (optionally NAME=CHECKPOINT)")
        if "=" in text and not checkpoint:
            raise OptionError(f"{text!r} names no checkpoint after '='; give NAME=CHECKPOINT, or NAME alone for the "
                              "shipped default")
        if checkpoint and not METRICS[name].uses_checkpoint:
            raise OptionError(f"{name} has no model, so it takes no checkpoint ({text!r})")
        return cls(name, checkpoint or None)

    @property
    def label(self) -> str:
        return self.name if self.checkpoint is None else f"{self.name}={self.checkpoint}"


def metric_names() -> list[str]:
    return sorted(METRICS)


def metric_options() -> dict[str, MetricOption]:
    """Every metric's factory options by name, each once (the command line offers their union)."""
    return {option.name: option for spec in METRICS.values() for option in spec.options}


def train_commands() -> dict[str, TrainCommand]:
    """Every ``hf-dialeval train`` command, by name."""
    return {command.name: command for spec in METRICS.values() for command in spec.train_commands}


def paper_results(metric: str, benchmark: str, score: str = "overall") -> dict[str, dict[str, float]]:
    """The paper's numbers for a metric (or a sub-metric row such as ``fined-eval:coherence``) on a benchmark, per
    human dimension, where they are of the metric's ``score``: a paper's number is of the metric's ``overall`` unless
    its entry names another of its scores (``"score"``, as HolisticEval's Table 3 is of context coherence alone).
    ``{}`` where there is none."""
    spec = METRICS.get(metric.split(":")[0])
    found = {} if spec is None else spec.paper_results.get((metric, benchmark), {})
    return {dimension: numbers for dimension, numbers in found.items() if numbers.get("score", "overall") == score}


def metric_exports() -> dict[str, str]:
    """Every entry's classes by public name, each with its absolute module (the package's public names)."""
    return {name: module for spec in METRICS.values() for name, module in spec.exports.items()}


def exportable_metrics() -> list[str]:
    return sorted(name for name, spec in METRICS.items() if spec.exportable)
