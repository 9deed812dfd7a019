"""The ``evaluate`` side of hf-dialeval: one base class for every metric's evaluate module, and where the
modules are installed.

The module scripts ship inside the package (``hf_dialeval/evaluate_modules/<name>/<name>.py``), so that

    evaluate.load(hf_dialeval.evaluate_module("fined_eval"))

works from any directory after ``pip install``; a source checkout also keeps ``evaluate.load("metrics/…")``
(``metrics/<name>/<name>.py`` is a link to the same file).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import datasets
import evaluate

from hf_dialeval.data.model import DialogueValidationError, item_list, validate_optional_texts
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.inference.factory import check_items_for, load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.modeling.checkpoints import checkpoint_names
from hf_dialeval.registry import METRICS, MetricEntry


def evaluate_module(name: str) -> str:
    """The folder of a metric's evaluate module, for ``evaluate.load``: by its registry name (``"fined-eval"``) or
    its module's (``"fined_eval"``)."""
    by_module = {spec.evaluate_module: spec for spec in METRICS.values() if spec.evaluate_module is not None}
    spec = by_module.get(name) or METRICS.get(name)
    if spec is None or spec.evaluate_module is None:
        raise UnknownNameError(f"no evaluate module {name!r}; installed: {sorted(by_module)}")
    return str(spec.evaluate_module_folder())


class DialogueEvaluationModule(evaluate.Metric):
    """Base of hf-dialeval's evaluate modules (a module script imports this module, not the class: evaluate
    takes the first ``EvaluationModule`` subclass in the script's namespace for the module's own class).

    Inputs are checked once, where they come in, as the metric's scoring checks them (the data model, and a context
    or a reference where the metric needs one): the features by ``add`` and ``add_batch`` (which ``compute`` calls),
    before ``evaluate`` casts them, which would turn the integer ``3`` into the text ``"3"`` and reject a ``None``
    reference with a format error that names neither item nor field; optional inputs, which ``compute`` passes on to
    ``_compute`` past ``add_batch``, with the items there. The scorer is loaded once per set of options and kept on
    the instance, and every module returns one schema: a list per dimension, ``overall``, ``truncated``, ``empty``
    (the item holds an empty utterance or response) and the run's ``signature``.
    """

    #: the module's inputs and the data-model field each fills (default: those of ``level``); a
    #: reference-assisted module takes ``{"contexts": "context", "references": "reference", "candidates":
    #: "response"}``
    inputs: ClassVar[dict[str, str] | None] = None
    #: inputs a caller may leave out, passed to ``_compute`` as keyword arguments (not features), and the data-model
    #: field each fills: Dial-M's ``{"conditions": "condition"}``
    optional_inputs: ClassVar[dict[str, str]] = {}
    #: the module card's links (its texts are the script's ``_DESCRIPTION``, ``_CITATION`` and
    #: ``_KWARGS_DESCRIPTION``, the evaluate convention)
    codebase_url: ClassVar[str]
    paper_url: ClassVar[str]
    #: evaluate configuration names the module accepts
    config_names: ClassVar[tuple[str, ...]] = ("default",)

    @functools.cached_property
    def entry(self) -> MetricEntry:
        """This module's registry entry: the one whose ``evaluate_module`` is the script's name (evaluate imports a
        script as a module named after its file, ``<name>.py``)."""
        script = type(self).__module__.rpartition(".")[2]
        return next(spec for spec in METRICS.values() if spec.evaluate_module == script)

    @property
    def metric_name(self) -> str:
        """The metric's registry name (``hf_dialeval.registry.METRICS``)."""
        return self.entry.name

    @property
    def level(self) -> str:
        """``"dialogue"`` (input ``dialogues``) or ``"turn"`` (inputs ``contexts`` and ``responses``)."""
        return self.entry.level

    def _info(self) -> evaluate.MetricInfo:
        if self.config_name not in self.config_names:
            raise UnknownNameError(f"unknown configuration {self.config_name!r}: use one of {list(self.config_names)}")
        string = datasets.Value("string")
        features = {name: datasets.Sequence(string) if field in ("dialogue", "context") else string
                    for name, field in self._input_fields().items()}
        script = sys.modules[type(self).__module__]
        return evaluate.MetricInfo(
            description=script._DESCRIPTION, citation=script._CITATION, inputs_description=script._KWARGS_DESCRIPTION,
            features=datasets.Features(features), homepage=self.codebase_url, codebase_urls=[self.codebase_url],
            reference_urls=[self.paper_url],
        )

    def _input_fields(self) -> dict[str, str]:
        if self.inputs is not None:
            return dict(self.inputs)
        return {"dialogues": "dialogue"} if self.level == "dialogue" else {"contexts": "context", "responses": "response"}

    def _input_names(self) -> tuple[str, ...]:
        return tuple(self._input_fields())

    def _items(self, inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The items of the features as a caller gives them: every feature a list, one entry per entry of the last
        (the texts being scored)."""
        names = self._input_names()
        missing = [name for name in names if inputs.get(name) is None]
        if missing:
            raise DialogueValidationError(f"the input '{missing[0]}' is missing: give {', '.join(names)}")
        columns = {name: item_list(inputs[name], name) for name in names}
        self._check_lengths(columns, len(columns[names[-1]]))
        return self._rows(columns, self._input_fields())

    def _stored_items(self, inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The items of the features ``_compute`` receives: what ``add`` and ``add_batch`` checked and evaluate
        stored, one row per item; with the optional inputs given, one entry per item each."""
        features = {name: inputs[name] for name in self._input_names()}
        optional = {name: item_list(inputs[name], name) for name in self.optional_inputs
                    if inputs.get(name) is not None}
        self._check_lengths(optional, len(features[self._input_names()[-1]]))
        return self._rows({**features, **optional}, {**self._input_fields(), **self.optional_inputs})

    def _check_lengths(self, columns: Mapping[str, Sequence[Any]], items: int) -> None:
        """Every column holds one entry per entry of the last feature (the texts being scored)."""
        last = self._input_names()[-1]
        for name, values in columns.items():
            if len(values) != items:
                raise DialogueValidationError(f"'{name}' has {len(values)} entries for {items} {last}: "
                                              f"give one per entry of '{last}'")

    @staticmethod
    def _rows(columns: Mapping[str, Sequence[Any]], fields: Mapping[str, str]) -> list[dict[str, Any]]:
        """The items of equal-length ``columns``, each input named by the data-model field it fills."""
        count = len(next(iter(columns.values())))
        return [{fields[name]: values[i] for name, values in columns.items()} for i in range(count)]

    def add_batch(self, **kwargs: Any) -> None:
        """Add a batch of items, checked as the metric's scoring checks them first."""
        check_items_for(self.metric_name, self._items(kwargs))
        super().add_batch(**kwargs)

    def add(self, **kwargs: Any) -> None:
        """Add one item, checked as the metric's scoring checks them first."""
        check_items_for(self.metric_name, self._items({name: [kwargs.get(name)] for name in self._input_names()}))
        super().add(**kwargs)

    def scorer(self, checkpoint: str | Sequence[str] | None, device: str | None, batch_size: int,
               **options: Any) -> DialogueMetric:
        """The metric for these options, loaded once per instance."""
        key = (tuple(checkpoint_names(checkpoint)), device, batch_size, tuple(sorted(options.items())))
        cache = self.__dict__.setdefault("_scorers", {})
        if key not in cache:
            cache[key] = load_metric(self.metric_name, checkpoint=checkpoint, device=device, batch_size=batch_size,
                                     **{name: value for name, value in options.items() if value is not None})
        return cache[key]

    def score(self, inputs: Mapping[str, Any], checkpoint: str | Sequence[str] | None = None, device: str | None = None,
              batch_size: int = 32, **options: Any) -> dict[str, Any]:
        """The module's output for ``inputs`` (as ``_compute`` receives them)."""
        return self.scored(self.scorer(checkpoint, device, batch_size, **options), inputs).to_dict()

    def scored(self, metric: DialogueMetric, inputs: Mapping[str, Any]) -> ScoreOutput:
        """``metric``'s output for ``inputs`` (as ``_compute`` receives them): the features' items were checked by
        ``add`` or ``add_batch``; an optional input, which comes in here, is checked here."""
        items = self._stored_items(inputs)
        for name, field in self.optional_inputs.items():
            if inputs.get(name) is not None:
                validate_optional_texts([item[field] for item in items], field)
        return metric.score_checked_items(items)
