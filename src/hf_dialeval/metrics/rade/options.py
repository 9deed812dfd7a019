"""``hf-dialeval train rade``: its options, importable without torch (``--help`` answers at once). The training
itself is in :mod:`.train`, which takes them as ``TrainingArguments``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID
from hf_dialeval.training.data_options import RatingsOptions
from hf_dialeval.training.options import (
    AT_LEAST_ONE,
    POSITIVE,
    SHARE,
    ActivationCheckpointingOn,
    BackboneTrainingOptions,
    Range,
)

#: The paper's backbone (§6.2): the default when online; offline, give an installed encoder such as
#: sentence-transformers/all-MiniLM-L6-v2 (turned into an encoder–decoder).
PAPER_BACKBONE = "facebook/bart-base"
#: What --train-data trains on when neither it nor --ratings is given.
DEFAULT_TRAIN_DATA = ("rade-chitchat", "rade-emotion", "rade-persona")


@dataclass
class RADETrainingOptions(ActivationCheckpointingOn, RatingsOptions, BackboneTrainingOptions):
    """Train RADE: cross-domain pre-training (--stage pretrain: MSE of the candidate's score + reference generation)
    or task-specific fine-tuning (--stage finetune: both scores' MSE + generation + pairwise ranking), on RADE's
    domains (their train splits) and DailyDialog++ (levels mapped to scores). The checkpoint kept is the one with
    the best Spearman of the candidate's score on the validation splits of --eval-data (by default the mean of
    each domain's).

    Or fine-tune on your own ratings (--ratings, every rating with its reference; the paper's task-specific
    fine-tuning): the shipped RADE (or --init-from) keeps training, your scores mapped linearly onto RADE's 1-5
    (--score-range), the references' scores unknown (so MSE(reference) and the ranking term leave them out);
    --held-out-share of their contexts pick the checkpoint.

    Every transformers.TrainingArguments option is accepted as well (e.g. --bf16, --max-steps); the defaults below
    are the paper's (Adam β = (0.98, 0.97), lr 5e-5, up to 10 epochs)."""

    EXAMPLE: ClassVar[str] = """\
example (offline, MiniLM turned into an encoder-decoder; the shipped default's commands are in model_cards/rade.md):
  hf-dialeval train rade --backbone sentence-transformers/all-MiniLM-L6-v2 --train-data rade-emotion \\
      --output-dir runs/rade-emotion --data-dir ../shared/data --epochs 1
example (the shipped RADE fine-tuned on your own ratings, a CSV with a reference column, scored 0-10):
  hf-dialeval train rade --ratings my_ratings.csv --score-range 0 10 --output-dir runs/rade-mine --epochs 3
"""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {"backbone": (
        f"give --backbone {MINILM_HUB_ID} (an encoder made into an encoder-decoder, the shipped default's recipe)")}
    RANGES: ClassVar[dict[str, Range]] = {
        "head_learning_rate": POSITIVE, "max_seq_length": AT_LEAST_ONE, "max_reference_length": AT_LEAST_ONE,
        "degenerate_negatives": SHARE, "max_train_items": AT_LEAST_ONE, "max_eval_items": AT_LEAST_ONE}

    backbone: str = field(default=PAPER_BACKBONE, metadata={
        "help": "seq2seq checkpoint (BART), an encoder made into an encoder-decoder, or a decoder-only causal LM "
                "(e.g. HuggingFaceTB/SmolLM2-135M-Instruct: one LM reads the input and generates the reference, this "
                "package's adaptation) (Hub id or folder)"})
    stage: str = field(default="finetune", metadata={"choices": ("pretrain", "finetune"), "help": (
        "pretrain: MSE(candidate) + generation (Eq. 7); finetune: MSE(candidate) + MSE(reference) + generation + "
        "ranking (Eq. 9)")})
    init_from: str | None = field(default=None, metadata={
        "help": "a RADE checkpoint to continue (e.g. the pre-trained model to fine-tune): its model, tokenizer and "
                "settings replace --backbone and the model options; its adapter/ keeps training (default: a new model "
                "on --backbone; with --ratings, the shipped RADE)"})
    train_data: list[str] | None = field(default=None, metadata={
        "help": "training sources: rade-chitchat, rade-emotion, rade-persona (train splits), dailydialog-plusplus "
                f"(default: {' '.join(DEFAULT_TRAIN_DATA)}; none with --ratings)"})
    eval_data: list[str] | None = field(default=None, metadata={
        "help": "RADE domains whose validation splits pick the checkpoint (default: the RADE domains of --train-data)"})
    score_range: list[float] | None = field(default=None, metadata={
        "help": "LOW HIGH: the scale of the --ratings scores, mapped linearly onto RADE's 1-5 (LOW becomes 1, HIGH 5; "
                "the training record keeps both as score_range) (default: the lowest and the highest score given)"})
    head_learning_rate: float | None = field(default=None, metadata={
        "help": "learning rate of the score head (default: --learning-rate, as the paper; a fresh head learns slowly "
                "at a backbone's fine-tuning rate)"})
    no_ranking_loss: bool = field(default=False, metadata={"help": "drop L_PR (the paper's first ablation)"})
    no_generation_loss: bool = field(default=False, metadata={"help": "drop L_GEN (the paper's second ablation)"})
    max_seq_length: int = field(default=256, metadata={"help": "tokens per context [SEP] reference [SEP] candidate"})
    max_reference_length: int = field(default=64, metadata={"help": "tokens of the reference the generator learns"})
    pooling: str | None = field(default=None, metadata={"choices": ("segments", "mean", "first", "last"), "help": (
        "encoder output pooling: segments (means over all tokens, the reference's, the candidate's, and their "
        "difference; the default), mean, first (the first token) or last (the last token); a causal LM: last (the "
        "default) or mean")})
    detokenize: bool = field(default=False, metadata={
        "help": "a causal LM reads texts written back the ordinary way (DailyDialog's 'Hi , how are you ?' becomes "
                "'Hi, how are you?'), as a pretrained LM has read them"})
    length_features: bool = field(default=False, metadata={
        "help": "with segments pooling, also give the head log(1 + token count) of the reference and the candidate "
                "(this package's addition)"})
    balance_sources: bool = field(default=False, metadata={
        "help": "give every training source as many items per epoch as the largest has (smaller ones repeated), so "
                "a small domain is not drowned out (this package's addition)"})
    degenerate_negatives: float = field(default=0.0, metadata={
        "help": "this share of the training items is added again with its candidate degenerated (a word or the reply "
                "repeated, run on into other replies, gibberish) and rated the lowest score (this package's addition: "
                "RADE's data holds no such reply); 0: none"})
    max_train_items: int | None = field(default=None, metadata={"help": "train on at most this many items"})
    max_eval_items: int | None = field(default=None, metadata={
        "help": "validate on at most this many items of the --eval-data validation splits or held-out --ratings "
                "(default: all of them)"})
    # TrainingArguments fields, RADE's defaults (§6.2)
    num_train_epochs: float = field(default=10.0, metadata={"aliases": ["--epochs"], "help": "epochs"})
    per_device_train_batch_size: int = field(default=16, metadata={"aliases": ["--batch-size"], "help": "items per batch"})
    per_device_eval_batch_size: int = field(default=32, metadata={"help": "items per validation batch"})
    learning_rate: float = field(default=5e-5, metadata={"help": "peak learning rate"})
    adam_beta1: float = field(default=0.98, metadata={"help": "Adam β1 (the paper: 0.98)"})
    adam_beta2: float = field(default=0.97, metadata={"help": "Adam β2 (the paper: 0.97)"})
    warmup_steps: float = field(default=0.06, metadata={"help": "warm-up steps, or a ratio of all steps below 1"})
    eval_strategy: str = field(default="epoch", metadata={"help": "when to evaluate on the validation splits"})
    save_strategy: str = field(default="epoch", metadata={"help": "when to checkpoint"})
    load_best_model_at_end: bool = field(default=True, metadata={
        "help": "end with the checkpoint of the best validation Spearman (the paper picks it on the dev set)"})
    metric_for_best_model: str | None = field(default="mean_domain_spearman", metadata={
        "help": "what picks the checkpoint: mean_domain_spearman (the mean over --eval-data of the Spearman within "
                "each domain; with --ratings, over the held-out ratings), spearman (over all validation items "
                "pooled), pearson"})
    logging_steps: float = field(default=20, metadata={"help": "log every N steps"})
    label_names: list[str] | None = field(default_factory=lambda: ["candidate_score", "reference_score"], metadata={
        "help": "the batch's label columns"})

    def models_to_load(self) -> dict[str, str]:
        models = super().models_to_load()
        if self.ratings is not None:  # a RADE checkpoint is continued (the shipped one unless --init-from)
            models.pop("backbone", None)
        return models

    def check_before_training(self) -> None:
        """Also: --ratings replaces RADE's data, and --score-range maps the --ratings scores."""
        if self.ratings is not None:
            given = [f"--{name.replace('_', '-')}" for name in ("train_data", "eval_data", "balance_sources")
                     if getattr(self, name)]
            if given:
                raise OptionError(f"--ratings trains on your ratings instead of RADE's data: leave out "
                                  f"{' and '.join(given)}")
        if self.score_range is not None:
            if self.ratings is None:
                raise OptionError("--score-range is the scale of the --ratings scores: give --ratings too")
            scale = self.score_range
            if len(scale) != 2 or not all(map(math.isfinite, scale)) or scale[0] >= scale[1]:
                raise OptionError(f"--score-range takes LOW HIGH, two numbers with LOW below HIGH (e.g. --score-range "
                                  f"0 10), not {' '.join(map(str, self.score_range))}")
        super().check_before_training()
