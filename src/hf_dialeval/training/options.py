"""The training knobs every metric shares, as a plain dataclass that imports no deep-learning library.

Each train command's options are a subclass of :class:`DialEvalTrainingOptions`; combined with
``transformers.TrainingArguments`` (:class:`hf_dialeval.training.arguments.DialEvalTrainingArguments`, trl's
``RewardConfig`` pattern) they are what the command parses with ``HfArgumentParser`` and what its Trainer gets.
Kept apart from ``TrainingArguments`` (whose import takes seconds: it imports torch) so that ``--help`` lists
them at once. Fields named like a ``TrainingArguments`` field override its default for every metric.

A run's folder (``output_dir``) has one layout for every metric:

* the trained model, merged (loads with ``AutoModel.from_pretrained``; what ``--checkpoint`` takes),
* ``adapter/``: the LoRA adapter, when the run trained one (``lora_rank``) or factored one (``adapter_rank``),
* ``full/``: the unfactored fully fine-tuned model, when ``adapter_rank`` factored it,
* ``training_record.json``: the arguments, the final validation metrics and the training logs,
* ``checkpoint-<step>/``: the Trainer's checkpoints, removed at the end unless ``keep_checkpoints``.

Every numeric option has the range of values it takes (:class:`Range`, each options class's ``RANGES``), checked
as the options are made (``__post_init__``): a value out of range, or not finite (inf, nan), is a one-line error
naming the option, before a train command loads, writes or creates anything (the Trainer creates ``output_dir``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

#: Sub-folders of a run (see the module docstring).
ADAPTER_DIR = "adapter"
FULL_MODEL_DIR = "full"
TRAINING_RECORD = "training_record.json"


@dataclass(frozen=True)
class Range:
    """The values a numeric option takes: ``holds`` tests one, ``text`` says which (after "must be")."""

    text: str
    holds: Callable[[float], bool]


AT_LEAST_ONE = Range("1 or more", lambda value: value >= 1)
NOT_NEGATIVE = Range("0 or more", lambda value: value >= 0)
POSITIVE = Range("above 0", lambda value: value > 0)
SHARE = Range("in [0, 1]", lambda value: 0 <= value <= 1)
BELOW_ONE = Range("in [0, 1)", lambda value: 0 <= value < 1)


@dataclass
class DialEvalTrainingOptions:
    """Options every ``hf-dialeval train`` command has."""

    #: Option name -> how to train offline instead, for each option that names a model (Hub id or folder) which may
    #: not be here: a model that cannot be loaded fails the run at once, naming the alternative.
    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {}
    #: Option name -> its :class:`Range`, for the numeric options a class declares (each class its own: they are
    #: merged along the class hierarchy); here also the ``transformers.TrainingArguments`` ones, checked once the
    #: training arguments hold them. ``None`` (an option left to its default) passes; a list's values are each
    #: checked.
    RANGES: ClassVar[dict[str, Range]] = {
        "adapter_rank": NOT_NEGATIVE, "average_last": NOT_NEGATIVE,
        "per_device_train_batch_size": AT_LEAST_ONE, "per_device_eval_batch_size": AT_LEAST_ONE,
        "gradient_accumulation_steps": AT_LEAST_ONE, "eval_accumulation_steps": AT_LEAST_ONE,
        "num_train_epochs": POSITIVE, "max_steps": Range("-1 (train --epochs) or more", lambda value: value >= -1),
        "learning_rate": POSITIVE, "weight_decay": NOT_NEGATIVE, "warmup_steps": NOT_NEGATIVE,
        "adam_beta1": BELOW_ONE, "adam_beta2": BELOW_ONE, "adam_epsilon": NOT_NEGATIVE, "max_grad_norm": NOT_NEGATIVE,
        "label_smoothing_factor": BELOW_ONE,
        # steps below 1 are a ratio of all steps
        "logging_steps": POSITIVE, "eval_steps": POSITIVE, "save_steps": POSITIVE, "eval_delay": NOT_NEGATIVE,
        "save_total_limit": AT_LEAST_ONE, "seed": NOT_NEGATIVE, "data_seed": NOT_NEGATIVE,
        "dataloader_num_workers": NOT_NEGATIVE, "dataloader_prefetch_factor": AT_LEAST_ONE,
    }

    #: The options a run writes into its model's config that default to ``None``: the setting of a new model for each,
    #: which a model continued from a checkpoint replaces with its own (:meth:`settle`), so that continuing a model
    #: never silently changes how it scores.
    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = {}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the run folder: the merged model, adapter/, full/, training_record.json (written in "
                                  "OUTPUT_DIR.partial/ beside it and swapped in whole when the run ends)"})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "replace an --output-dir that an earlier run wrote, whole, once this run has finished; without it a "
                "non-empty folder is refused, so that no earlier run is lost"})
    resume_from_checkpoint: str | None = field(default=None, metadata={
        "help": "continue a run from this checkpoint-<step>/ folder: of --output-dir (kept with --keep-checkpoints), "
                "or of OUTPUT_DIR.partial/ where a run that did not finish left it"})
    data_dir: str | None = field(default=None, metadata={
        "help": "folder holding the corpora (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)"})
    adapter_rank: int = field(default=0, metadata={
        "help": "with the Transformer layers fine-tuned in full: factor their weight changes into a LoRA adapter of this "
                "rank (SVD) in adapter/, the unfactored model kept in full/"})
    average_last: int = field(default=0, metadata={
        "help": "with the Transformer layers fine-tuned in full: the final model is the weight average of the last K checkpoints (tail "
                "averaging, against checkpoint noise) instead of the last or best one; 0: off"})
    keep_checkpoints: bool = field(default=False, metadata={
        "help": "keep the Trainer's checkpoint-<step>/ folders (otherwise removed when the run ends)"})
    # TrainingArguments fields whose default differs for every metric
    per_device_train_batch_size: int = field(default=8, metadata={
        "aliases": ["--batch-size"], "help": "training examples per batch"})
    num_train_epochs: float = field(default=3.0, metadata={
        "aliases": ["--epochs"], "help": "epochs (when --max-steps is -1)"})
    save_steps: float | None = field(default=None, metadata={
        "help": "checkpoint every N steps (default: at every evaluation, --eval-steps)"})
    remove_unused_columns: bool = field(default=False, metadata={
        "help": "the collators read the metric's own columns, so they are kept"})

    def __post_init__(self) -> None:
        self.check_ranges()
        if hasattr(super(), "__post_init__"):  # TrainingArguments', when these options are part of them
            super().__post_init__()

    def settle(self, continued: Mapping[str, Any] | None = None) -> None:
        """Each setting left out (:attr:`NEW_MODEL_SETTINGS`) becomes ``continued``'s (a continued model's config), or
        a new model's."""
        for name, setting in self.NEW_MODEL_SETTINGS.items():
            if getattr(self, name) is None:
                setattr(self, name, setting if continued is None else continued[name])

    @classmethod
    def option_ranges(cls) -> dict[str, Range]:
        """The :attr:`RANGES` of this class and of every class it derives from."""
        ranges: dict[str, Range] = {}
        for base in reversed(cls.__mro__):
            ranges.update(vars(base).get("RANGES", {}))
        return ranges

    def check_ranges(self) -> None:
        """Raise a one-line :class:`~hf_dialeval.errors.OptionError` naming the first option whose value is out of its range
        (:meth:`option_ranges`) or not finite (inf, -inf, nan)."""
        options = {option.name: option for option in dataclasses.fields(self)}
        for name, allowed in self.option_ranges().items():
            value = getattr(self, name, None)  # a TrainingArguments option of the options alone: checked later
            values = value if isinstance(value, list) else [value]
            # inf passes a bound ("above 0") but no training runs with it: a float must be finite too
            not_finite = any(isinstance(element, float) and not math.isfinite(element) for element in values)
            if not_finite or any(element is not None and not allowed.holds(element) for element in values):
                aliases = options[name].metadata.get("aliases", [])
                flag = f"--{name.replace('_', '-')}" + "".join(f" ({alias})" for alias in aliases)
                each = " each" if isinstance(value, list) else ""
                finite = "finite and " if not_finite else ""
                raise OptionError(f"{flag} must be {finite}{allowed.text}{each}, not {value}")

    def models_to_load(self) -> dict[str, str]:
        """The models this run will load, by the option that names them (those of :attr:`OFFLINE_CHOICES`; a
        command whose options make one unused, such as a strategy left out, leaves it out)."""
        return {name: getattr(self, name) for name in self.OFFLINE_CHOICES if getattr(self, name) is not None}

    def input_paths(self) -> dict[str, str]:
        """What the run reads from disk, by its option: each of the command's own options (not ``TrainingArguments``'
        ones) that names an existing file or folder, and the data folder. The output folder may be none of them, hold
        one or lie inside one (:func:`~hf_dialeval.output_folder.check_output_folder`)."""
        from hf_dialeval.data.paths import find_data_dir

        own = set().union(*(vars(cls).get("__annotations__", {}) for cls in type(self).__mro__
                            if cls.__module__.startswith("hf_dialeval.")))
        choices = {option.name for option in dataclasses.fields(self) if "choices" in option.metadata}  # not paths
        inputs = {}
        for name in sorted(own - choices - {"output_dir", "resume_from_checkpoint"}):
            value = getattr(self, name, None)
            for index, path in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(path, str) and path and Path(path).expanduser().exists():
                    inputs[f"--{name.replace('_', '-')}" + (f" ({index + 1})" if isinstance(value, list) else "")] = path
        data_dir = self.data_dir or find_data_dir()
        if data_dir is not None:
            inputs["--data-dir"] = str(data_dir)
        return inputs

    def check_before_training(self) -> None:
        """What can fail before any data or model loads, checked at once (by the command line before it imports the
        training libraries, and by every train function as it starts): every model the run loads is here or on a
        reachable Hub, else a one-line error names the option that trains offline. (The output folder is checked as
        the run takes it: :func:`~hf_dialeval.training.run_folder.owns_output_dir`.)"""
        for name, model in self.models_to_load().items():
            try:
                resolve_backbone_path(model)
            except CheckpointError as error:
                raise CheckpointError(f"--{name.replace('_', '-')} {model} cannot be loaded ({error}); offline, "
                                      f"{self.OFFLINE_CHOICES[name]}") from None


@dataclass
class ActivationCheckpointingOn:
    """The ``TrainingArguments`` field ``activation_checkpointing`` on by default: for a command whose batch holds
    more activations than 4 GB with its paper's settings on long inputs (recomputed in the backward pass, the same
    gradients)."""

    activation_checkpointing: bool = field(default=True, metadata={
        "help": "compute each layer's activations again in the backward pass rather than keep them (memory "
                "bounded, slower; false to keep them)"})


@dataclass
class BackboneTrainingOptions(DialEvalTrainingOptions):
    """Options of a command that trains a new model on a pretrained backbone: which backbone, and LoRA."""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {
        "backbone": f"give --backbone {MINILM_HUB_ID} (installed with the package)"}

    def models_to_load(self) -> dict[str, str]:
        models = super().models_to_load()
        if getattr(self, "init_from", None) is not None:  # the checkpoint continued brings its own backbone
            models.pop("backbone", None)
        return models

    RANGES: ClassVar[dict[str, Range]] = {"lora_rank": NOT_NEGATIVE, "lora_alpha": POSITIVE, "lora_dropout": BELOW_ONE,
                                          "lora_layers": NOT_NEGATIVE}

    backbone: str = field(default=MINILM_HUB_ID, metadata={"help": "encoder Hub id or folder (installed offline)"})
    lora_rank: int = field(default=16, metadata={
        "help": "LoRA rank; 0 fine-tunes the Transformer layers in full (embeddings and LayerNorms frozen)"})
    lora_alpha: int | None = field(default=None, metadata={"help": "LoRA alpha (default: 2 × --lora-rank)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    lora_layers: list[int] | None = field(default=None, metadata={
        "help": "Transformer layers that get LoRA adapters (default: all)"})
