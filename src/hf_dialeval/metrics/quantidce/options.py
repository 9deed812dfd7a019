"""``hf-dialeval train quantidce-selection``, ``quantidce-mlr`` and ``quantidce-kd``: their options, importable
without torch (``--help`` answers at once). The training itself is in :mod:`.train`, which takes them as
``TrainingArguments``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hf_dialeval.training.data_options import DialoguesOptions, RatingsOptions
from hf_dialeval.training.options import (
    AT_LEAST_ONE,
    NOT_NEGATIVE,
    POSITIVE,
    ActivationCheckpointingOn,
    BackboneTrainingOptions,
    DialEvalTrainingOptions,
    Range,
)


@dataclass
class QuantiDCETrainingOptions(DialEvalTrainingOptions):
    """What both QuantiDCE stages share: the paper's optimisation (AdamW, 10% warm-up, linear decay, weight decay
    0.01), a validation and a checkpoint per epoch."""

    warmup_steps: float = field(default=0.1, metadata={"help": "warm-up steps, or a ratio of all steps below 1"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay"})
    eval_strategy: str = field(default="epoch", metadata={"help": "when to evaluate"})
    save_strategy: str = field(default="epoch", metadata={"help": "when to checkpoint"})
    prediction_loss_only: bool = field(default=True, metadata={"help": "validation reports the losses"})


@dataclass
class QuantiDCEModelOptions(BackboneTrainingOptions):
    """The options that build a new QuantiDCE model (or continue one), shared by the stages that start one."""

    RANGES: ClassVar[dict[str, Range]] = {"max_seq_length": AT_LEAST_ONE, "mlp_hidden_sizes": AT_LEAST_ONE}

    init_from: str | None = field(default=None, metadata={
        "help": "a QuantiDCE checkpoint to continue training (e.g. a quantidce-selection run): its model, tokenizer "
                "and settings replace --backbone, --max-seq-length, --pooling, --mlp-hidden-sizes, --encoding and "
                "--bi-*"})
    max_seq_length: int = field(default=128, metadata={"help": "tokens per (context, response) input"})
    pooling: str = field(default="mean", metadata={"choices": ("cls", "mean"), "help": "encoder output pooling"})
    encoding: str = field(default="cross", metadata={"choices": ("cross", "bi"), "help": (
        "cross: one [CLS] context [SEP] response [SEP] encoding (the paper); bi: the last utterance and the response "
        "encoded separately, a residual head on their cosine (starts as the similarity floor)")})
    bi_context: str = field(default="last", metadata={"choices": ("last", "all"), "help": (
        "with --encoding bi: compare the response with the last utterance, or also with every context utterance")})
    bi_features: str = field(default="full", metadata={"choices": ("full", "cosines"), "help": (
        "with --encoding bi: the head reads the embeddings and their cosines, or the cosines alone")})
    freeze_encoder: bool = field(default=False, metadata={
        "help": "train the head alone (give --lora-rank 0; --adapter-rank 1 then writes a head-sized adapter/)"})
    parrot_negatives: bool = field(default=False, metadata={
        "help": "this package's addition: the last utterance (echo) and the responder's previous turn (repeat) "
                "are negatives of each context"})
    mlp_hidden_sizes: list[int] = field(default_factory=lambda: [256, 64], metadata={
        "help": "hidden sizes of the 3-layer MLP head"})


@dataclass
class QuantiDCEMLRTrainingOptions(DialoguesOptions, QuantiDCETrainingOptions, QuantiDCEModelOptions):
    """Multi-level ranking (separation + compactness + ordering) pre-training of a QuantiDCE model (encoder +
    3-layer MLP) on DailyDialog++ (levels: random < adversarial < positive; parrot negatives join the first), or on
    your own dialogues (--dialogues: each turn whose speaker speaks again later is a context, its levels 5 utterances
    of other dialogues < a later turn of the same speaker, which shares the topic without answering < the human
    reply; a tenth of the dialogues, at least 10 or half of fewer than 20, are held out to validate on unless
    --eval-contexts 0).

    Every transformers.TrainingArguments option is accepted as well (e.g. --gradient-accumulation-steps 4,
    --bf16); the defaults below are QuantiDCE's."""

    EXAMPLE: ClassVar[str] = """\
example (a short run; the shipped default's commands are in model_cards/quantidce.md):
  hf-dialeval train quantidce-mlr --output-dir runs/quantidce-mlr --data-dir ../shared/data --max-contexts 200
example (the shipped default's head trained again on your own dialogues, a JSONL file of {"dialogue": [...]} lines):
  hf-dialeval train quantidce-mlr --init-from src/hf_dialeval/metrics/quantidce/defaults/quantidce-minilm-bi \
      --dialogues my_dialogues.jsonl --freeze-encoder --parrot-negatives --lora-rank 0 --adapter-rank 16 \
      --max-contexts 600 --learning-rate 1e-2 --output-dir runs/quantidce-mine
"""

    RANGES: ClassVar[dict[str, Range]] = {"separation_margin": NOT_NEGATIVE, "compactness_margin": NOT_NEGATIVE,
                                          "max_contexts": AT_LEAST_ONE, "eval_contexts": NOT_NEGATIVE}

    separation_margin: float = field(default=0.3, metadata={"help": "λ of the separation loss"})
    compactness_margin: float = field(default=0.1, metadata={"help": "μ of the compactness loss"})
    no_ordering_loss: bool = field(default=False, metadata={"help": "drop the ordering term (ablation)"})
    max_contexts: int | None = field(default=None, metadata={"help": "train on at most this many contexts"})
    eval_contexts: int = field(default=100, metadata={"help": "contexts held out for validation (0: none)"})
    # TrainingArguments fields, QuantiDCE stage 1's defaults
    num_train_epochs: float = field(default=1.0, metadata={"aliases": ["--epochs"], "help": "epochs"})
    per_device_train_batch_size: int = field(default=3, metadata={
        "aliases": ["--batch-size"], "help": "contexts per batch, each with L·K = 15 responses"})
    per_device_eval_batch_size: int = field(default=3, metadata={"help": "contexts per validation batch"})
    learning_rate: float = field(default=2e-4, metadata={"help": "peak learning rate"})
    logging_steps: float = field(default=20, metadata={"help": "log every N steps"})
    label_names: list[str] | None = field(default_factory=lambda: ["levels"], metadata={
        "help": "the batch's label column"})


@dataclass
class QuantiDCESelectionTrainingOptions(ActivationCheckpointingOn, DialoguesOptions, QuantiDCETrainingOptions,
                                        QuantiDCEModelOptions):
    """Response-selection pre-training of a QuantiDCE model (this package's addition, before MLR) on DailyDialog's
    train dialogues or your own (--dialogues; a tenth of them, at least 10 or half of fewer than 20, held out to
    validate on unless --eval-dialogues 0): each context's human reply is ranked against every other reply and hard
    negative of the batch (InfoNCE over the model's logits, one forward pass); the hard negatives are a later turn of the
    same speaker in the same dialogue (the reply that comes too late), and with --parrot-negatives the echo and the
    repeat. It teaches the encoder what follows what in a conversation, which DailyDialog++'s 15 responses per
    context do not. The shipped default is such a run followed by `train quantidce-mlr --init-from` it with
    --freeze-encoder and --parrot-negatives, which trains the head alone (its commands: model_cards/quantidce.md).

    Every transformers.TrainingArguments option is accepted as well (e.g. --gradient-accumulation-steps 4,
    --bf16); the defaults below are this stage's."""

    EXAMPLE: ClassVar[str] = """\
example (a short run; the measured runs' commands are in benchmarks/quantidce/README.md):
  hf-dialeval train quantidce-selection --output-dir runs/quantidce-selection --data-dir ../shared/data \\
      --encoding bi --bi-context all --bi-features cosines --lora-rank 0 --max-steps 50
"""

    RANGES: ClassVar[dict[str, Range]] = {"temperature": POSITIVE, "max_dialogues": AT_LEAST_ONE,
                                          "eval_dialogues": NOT_NEGATIVE}

    no_later_turn_negatives: bool = field(default=False, metadata={
        "help": "leave out the hard negative that is a later turn of the same speaker (ablation)"})
    every_earlier_repeat: bool = field(default=False, metadata={
        "help": "with --parrot-negatives: every earlier turn of the speaker is a repeat negative, not only its last"})
    temperature: float = field(default=0.25, metadata={
        "help": "the softmax's temperature over the logits (0.25: an untrained bi head's 5·cos becomes 20·cos, "
                "the scale sentence encoders are trained at)"})
    max_dialogues: int | None = field(default=None, metadata={"help": "train on at most this many dialogues"})
    eval_dialogues: int = field(default=100, metadata={"help": "dialogues held out for validation (0: none)"})
    # TrainingArguments fields, this stage's defaults
    per_device_train_batch_size: int = field(default=32, metadata={
        "aliases": ["--batch-size"], "help": "replies per batch; each context is ranked against all of them"})
    per_device_eval_batch_size: int = field(default=32, metadata={"help": "replies per validation batch"})
    learning_rate: float = field(default=3e-5, metadata={"help": "peak learning rate"})
    logging_steps: float = field(default=25, metadata={"help": "log every N steps"})
    label_names: list[str] | None = field(default_factory=lambda: ["reply_index"], metadata={
        "help": "the batch's label column"})


@dataclass
class QuantiDCEKDTrainingOptions(RatingsOptions, QuantiDCETrainingOptions):
    """Fine-tune an MLR-trained QuantiDCE model on human ratings with MSE + TinyBERT-style distillation from the
    frozen MLR model (or MSE only with --no-distillation): by default the DailyDialogEVAL ratings (270 to train on,
    30 to validate on), or your own (--ratings; --held-out-share of their contexts validated on). The student starts
    as the teacher: a teacher run's adapter/ (or an adapter folder, or the shipped default) keeps training; a full
    model's Transformer layers are fine-tuned in full.

    Every transformers.TrainingArguments option is accepted as well (e.g. --gradient-accumulation-steps 4,
    --bf16); the defaults below are QuantiDCE's."""

    EXAMPLE: ClassVar[str] = """\
example (stage 2 on the output of quantidce-mlr):
  hf-dialeval train quantidce-kd --teacher runs/quantidce-mlr --output-dir runs/quantidce-kd --data-dir ../shared/data
example (the shipped default fine-tuned on your own ratings, a CSV whose score column is named rating):
  hf-dialeval train quantidce-kd --ratings my_ratings.csv --score-column rating --output-dir runs/quantidce-mine
"""

    RANGES: ClassVar[dict[str, Range]] = {"alpha": NOT_NEGATIVE, "beta": NOT_NEGATIVE}

    teacher: str | None = field(default=None, metadata={
        "help": "the checkpoint the student starts as and learns from: stage 1's run folder, its adapter/, or a "
                "full model (default: the shipped QuantiDCE)"})
    no_distillation: bool = field(default=False, metadata={"help": "MSE only, no teacher (ablation)"})
    alpha: float = field(default=1.0, metadata={"help": "weight of the MSE term"})
    beta: float = field(default=5.0, metadata={"help": "weight of the distillation term"})
    # TrainingArguments fields, QuantiDCE stage 2's defaults
    num_train_epochs: float = field(default=20.0, metadata={"aliases": ["--epochs"], "help": "epochs"})
    per_device_train_batch_size: int = field(default=10, metadata={"aliases": ["--batch-size"], "help": "pairs per batch"})
    per_device_eval_batch_size: int = field(default=10, metadata={"help": "pairs per validation batch"})
    learning_rate: float = field(default=5e-5, metadata={"help": "peak learning rate"})
    logging_steps: float = field(default=10, metadata={"help": "log every N steps"})
    label_names: list[str] | None = field(default_factory=lambda: ["labels"], metadata={
        "help": "the batch's label column"})
