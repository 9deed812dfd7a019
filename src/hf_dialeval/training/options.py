"""The training knobs every metric shares, as a plain dataclass that imports no deep-learning library.

Each train command's options are a subclass of :class:`DialEvalTrainingOptions`; combined with
``transformers.TrainingArguments`` (:class:`hf_dialeval.training.run.DialEvalTrainingArguments`, trl's
``RewardConfig`` pattern) they are what the command parses with ``HfArgumentParser`` and what its Trainer gets.
Kept apart from ``TrainingArguments`` (whose import takes seconds: it imports torch) so that ``--help`` lists
them at once. Fields named like a ``TrainingArguments`` field override its default for every metric.

A run's folder (``output_dir``) has one layout for every metric:

* the trained model, merged (loads with ``AutoModel.from_pretrained``; what ``--checkpoint`` takes),
* ``adapter/``: the LoRA adapter, when the run trained one (``lora_rank``) or factored one (``adapter_rank``),
* ``full/``: the unfactored fully fine-tuned model, when ``adapter_rank`` factored it,
* ``training_record.json``: the arguments, the final validation metrics and the training logs,
* ``checkpoint-<step>/``: the Trainer's checkpoints, removed at the end unless ``keep_checkpoints``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from hf_dialeval.modeling.checkpoints import MINILM_HUB_ID, CheckpointError, resolve_backbone_path

#: Sub-folders of a run (see the module docstring).
ADAPTER_DIR = "adapter"
FULL_MODEL_DIR = "full"
TRAINING_RECORD = "training_record.json"


@dataclass
class DialEvalTrainingOptions:
    """Options every ``hf-dialeval train`` command has."""

    #: Option name -> how to train offline instead, for each option that names a model (Hub id or folder) which may
    #: not be here: a model that cannot be loaded fails the run at once, naming the alternative.
    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the run folder: the merged model, adapter/, full/, training_record.json"})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "train into an --output-dir that is not empty (its files of the same names are replaced); without "
                "it a non-empty folder is refused, so that no earlier run is lost"})
    resume_from_checkpoint: str | None = field(default=None, metadata={
        "help": "continue the run of --output-dir from this checkpoint-<step>/ folder of it"})
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

    def models_to_load(self) -> dict[str, str]:
        """The models this run will load, by the option that names them (those of :attr:`OFFLINE_CHOICES`; a
        command whose options make one unused, such as a strategy left out, leaves it out)."""
        return {name: getattr(self, name) for name in self.OFFLINE_CHOICES if getattr(self, name) is not None}

    def check_before_training(self) -> None:
        """What can fail before any data or model loads, checked at once (by the command line before it imports the
        training libraries, and by every train function as it starts): the output folder holds no earlier run (unless ``overwrite_output_dir`` or
        ``resume_from_checkpoint``), and every model the run loads is here or on a reachable Hub, else a one-line
        error names the option that trains offline."""
        output = Path(self.output_dir or "")
        if (output.is_dir() and any(output.iterdir()) and not self.overwrite_output_dir
                and not self.resume_from_checkpoint):
            raise ValueError(f"--output-dir {self.output_dir} is not empty: give --overwrite-output-dir to train into "
                             "it anyway, or a new folder")
        if output.exists() and not output.is_dir():
            raise ValueError(f"--output-dir {self.output_dir} is a file: give a folder")
        for name, model in self.models_to_load().items():
            try:
                resolve_backbone_path(model)
            except CheckpointError as error:
                raise CheckpointError(f"--{name.replace('_', '-')} {model} cannot be loaded ({error}); offline, "
                                      f"{self.OFFLINE_CHOICES[name]}") from None


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

    backbone: str = field(default=MINILM_HUB_ID, metadata={"help": "encoder Hub id or folder (installed offline)"})
    lora_rank: int = field(default=16, metadata={
        "help": "LoRA rank; 0 fine-tunes the Transformer layers in full (embeddings and LayerNorms frozen)"})
    lora_alpha: int | None = field(default=None, metadata={"help": "LoRA alpha (default: 2 × --lora-rank)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    lora_layers: list[int] | None = field(default=None, metadata={
        "help": "Transformer layers that get LoRA adapters (default: all)"})
