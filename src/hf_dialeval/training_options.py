"""The training knobs every metric shares, as a plain dataclass that imports no deep-learning library.

Each train command's options are a subclass of :class:`DialEvalTrainingOptions`; combined with
``transformers.TrainingArguments`` (:class:`hf_dialeval.training.DialEvalTrainingArguments`, trl's
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

from .checkpoints import MINILM_HUB_ID

#: Sub-folders of a run (see the module docstring).
ADAPTER_DIR = "adapter"
FULL_MODEL_DIR = "full"
TRAINING_RECORD = "training_record.json"


@dataclass
class DialEvalTrainingOptions:
    """Options every ``hf-dialeval train`` command has."""

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the run folder: the merged model, adapter/, full/, training_record.json"})
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


@dataclass
class BackboneTrainingOptions(DialEvalTrainingOptions):
    """Options of a command that trains a new model on a pretrained backbone: which backbone, and LoRA."""

    backbone: str = field(default=MINILM_HUB_ID, metadata={"help": "encoder Hub id or folder (installed offline)"})
    lora_rank: int = field(default=16, metadata={
        "help": "LoRA rank; 0 fine-tunes the Transformer layers in full (embeddings and LayerNorms frozen)"})
    lora_alpha: int | None = field(default=None, metadata={"help": "LoRA alpha (default: 2 × --lora-rank)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    lora_layers: list[int] | None = field(default=None, metadata={
        "help": "Transformer layers that get LoRA adapters (default: all)"})
