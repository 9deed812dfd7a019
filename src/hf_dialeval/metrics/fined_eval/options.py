"""``hf-dialeval train fined-eval``: its options, importable without torch (``--help`` answers at once). The
training itself is :func:`.train.train_fined_eval`, which takes them as :class:`.train.FineDEvalTrainingArguments`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.fined_eval.constants import (
    DEFAULT_EMOTION_MODEL,
    DEFAULT_NLI_MODEL,
    DEFAULT_QA_EVALUATOR,
    LONG_DIALOGUE_MODES,
    OFFLINE_STRATEGIES,
    RANKING_MARGIN,
    STRATEGY_DIMENSIONS,
)
from hf_dialeval.training.data_options import DialoguesOptions
from hf_dialeval.training.options import (
    AT_LEAST_ONE,
    NOT_NEGATIVE,
    ActivationCheckpointingOn,
    BackboneTrainingOptions,
    Range,
)

#: The scoring settings a run writes into its model's config, with a new model's setting of each; a model continued
#: with ``--init-from`` keeps its own (:meth:`FineDEvalTrainingOptions.settle`).
NEW_MODEL_SETTINGS = {"max_seq_length": 512, "long_dialogue": "keep_start"}
#: How the help of a setting ends: what an option left out means.
_KEPT = "; left out: {} for a new model, a continued --init-from model's own"


@dataclass
class FineDEvalTrainingOptions(ActivationCheckpointingOn, DialoguesOptions, BackboneTrainingOptions):
    """Train FineD-Eval with self-supervised dialogue pairs (paper §3.3) built from DailyDialog, or from your own
    dialogues (--dialogues: the pairs of the strategies below, built from them as from DailyDialog; a tenth of the
    dialogues, at least 10 or half of fewer than 20, are held out and give the validation pairs). Continue a trained
    model, e.g. the shipped default, with --init-from.

    strategies (the dimension each trains; STRATEGY:DIMENSION trains another head with it, e.g.
    generic_substitution:likability):
      shuffling          coherence    original vs. utterance-permuted dialogue (offline)
      qa_relevance       coherence    QA evaluator relevance, thresholds 0.85/0.99 (--qa-model)
      contradiction      likability   NLI contradiction of adjacent utterances, 0.20/0.40 (--nli-model)
      positive_emotions  likability   all utterances positive vs. fewer than two (DailyDialog's own emotion
                                      labels, offline; --emotion-model a classifier instead, as the paper, and
                                      with --dialogues, which carry no emotion labels)
      entailment         topic_depth  NLI entailment of all utterance pairs, 0.01/0.10 (--nli-model)
    this package's additions (offline, not in the paper): original vs. 1 to all of one speaker's utterances
      generic_substitution topic_depth replaced by the training corpus's most frequent ones ("Thank you .",
                                      "OK ."; --generic-min-count)
      random_substitution  coherence  replaced by utterances of other dialogues
      echo_substitution    coherence  replaced by the utterance before them
      repeat_substitution  coherence  replaced by an earlier utterance of the same speaker
      speaker_shuffling    coherence  reordered among that speaker's turns

    Every transformers.TrainingArguments option is accepted as well (e.g. --gradient-accumulation-steps 4,
    --bf16, --report-to tensorboard); the defaults below are FineD-Eval's."""

    EXAMPLE: ClassVar[str] = """\
example (the shipped default's first three training steps, the third written to runs/fe-mlp/adapter; the fourth to
sixth, over an adjacency encoder and a pair encoder, are in model_cards/fined_eval.md):
  hf-dialeval train fined-eval --output-dir runs/fe-cl-s43 \\
      --strategies shuffling speaker_shuffling random_substitution echo_substitution repeat_substitution \\
          positive_emotions generic_substitution:likability generic_substitution repeat_substitution:topic_depth \\
      --emotion-model gold --pair-with-original --length-matched-pairs --lora-rank 0 --adapter-rank 32 \\
      --learning-rate 2e-5 --batch-size 8 --max-steps 1000 --eval-steps 100 --train-pairs 20000 --eval-pairs 500 \\
      --train-max-seq-length 256 --seed 43 --keep-checkpoints --average-last 5 --bf16 --use-cpu
  hf-dialeval train fined-eval --output-dir runs/fe-adj-c --init-from runs/fe-cl-s43/adapter \\
      --adjacency-bins 11 --freeze-encoder --freeze-score-heads --strategies <the same> \\
      --emotion-model gold --pair-with-original --length-matched-pairs --lora-rank 0 --adapter-rank 32 \\
      --learning-rate 3e-2 --batch-size 8 --max-steps 600 --eval-steps 200 --train-pairs 20000 --eval-pairs 300 \\
      --train-max-seq-length 256 --seed 43 --use-cpu
  hf-dialeval train fined-eval --output-dir runs/fe-mlp --init-from runs/fe-adj-c/adapter \\
      --adjacency-mlp-size 256 --freeze-encoder --freeze-score-heads --strategies <the same> \\
      --emotion-model gold --pair-with-original --length-matched-pairs --lora-rank 0 --adapter-rank 32 \\
      --learning-rate 2e-3 --batch-size 16 --max-steps 500 --eval-steps 100 --train-pairs 20000 --eval-pairs 150 \\
      --train-max-seq-length 256 --seed 43 --keep-checkpoints --bf16 --use-cpu
example (a trained model continued on your own dialogues, a JSONL file of {"dialogue": [...]} lines, by strategies
that need no labels; hf-dialeval adapt fined-eval continues the shipped default so, measured before and after):
  hf-dialeval train fined-eval --output-dir runs/fe-mine --init-from runs/fe-mlp/adapter \\
      --dialogues my_dialogues.jsonl --strategies shuffling speaker_shuffling random_substitution \\
          echo_substitution repeat_substitution --pair-with-original --lora-rank 0 --adapter-rank 32 \\
      --learning-rate 2e-5 --max-steps 500 --use-cpu
"""

    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = NEW_MODEL_SETTINGS
    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {
        **BackboneTrainingOptions.OFFLINE_CHOICES,
        "emotion_model": "give --emotion-model gold (DailyDialog's own emotion labels; not with --dialogues), or "
                         "leave positive_emotions out of --strategies",
        "qa_model": f"leave qa_relevance out of --strategies (offline: {', '.join(OFFLINE_STRATEGIES)})",
        "nli_model": f"leave contradiction and entailment out of --strategies (offline: {', '.join(OFFLINE_STRATEGIES)})",
    }
    RANGES: ClassVar[dict[str, Range]] = {
        "generic_min_count": AT_LEAST_ONE, "train_pairs": AT_LEAST_ONE, "eval_pairs": NOT_NEGATIVE,
        "adjacency_bins": NOT_NEGATIVE, "adjacency_mlp_size": NOT_NEGATIVE, "train_max_seq_length": AT_LEAST_ONE,
        "max_seq_length": AT_LEAST_ONE, "margin": NOT_NEGATIVE}

    strategies: list[str] = field(default_factory=lambda: ["shuffling", "positive_emotions"], metadata={
        "help": f"pair strategies, STRATEGY[:DIMENSION] (default: the paper's two that run offline, whose "
                f"positive_emotions reads DailyDialog's labels: give others with --dialogues; strategies: "
                f"{', '.join(sorted(STRATEGY_DIMENSIONS))})"})
    qa_model: str = field(default=DEFAULT_QA_EVALUATOR, metadata={"help": "QA relevance evaluator (id or path)"})
    nli_model: str = field(default=DEFAULT_NLI_MODEL, metadata={"help": "NLI model (id or path)"})
    emotion_model: str = field(default="gold", metadata={
        "help": f"positive_emotions' labels: 'gold', DailyDialog's own (offline), or an emotion classifier (Hub id or "
                f"path; the paper's: {DEFAULT_EMOTION_MODEL})"})
    generic_min_count: int = field(default=20, metadata={
        "help": "generic_substitution: utterances this frequent in the dialogues trained on (DailyDialog train, or "
                "--dialogues) are generic"})
    train_pairs: int = field(default=100_000, metadata={"help": "training pairs per head (paper: 100K)"})
    eval_pairs: int = field(default=10_000, metadata={"help": "validation pairs per head (paper: 10K)"})
    length_matched_pairs: bool = field(default=False, metadata={
        "help": "pair each positive only with negatives of its number of utterances (no length shortcut)"})
    pair_with_original: bool = field(default=False, metadata={
        "help": "pair each corrupted dialogue (shuffling and the substitutions) with the dialogue it was made from, "
                "not with another dialogue as the paper samples them"})
    adjacency_bins: int = field(default=0, metadata={
        "help": "this package's addition: a head over the histogram of the cosines of consecutive utterances, each "
                "encoded alone, in this many bins (0: the paper's model; added to an --init-from model that has none)"})
    adjacency_mlp_size: int = field(default=0, metadata={
        "help": "this package's addition: an MLP of this hidden size over each pair of consecutive utterances' "
                "embeddings, its mean logit added to every head (0: none; added to an --init-from model that has "
                "none)"})
    adjacency_encoder: str | None = field(default=None, metadata={
        "help": "this package's addition: a sentence encoder of the backbone's architecture (id or path; e.g. the "
                "--output-dir of hf-dialeval train fined-eval-adjacency-encoder) that the adjacency features "
                "read utterances through, added to an --init-from model that has none (frozen with --freeze-encoder)"})
    pair_encoder: str | None = field(default=None, metadata={
        "help": "this package's addition: a cross-encoder of the backbone's architecture (path; e.g. the --output-dir "
                "of hf-dialeval train fined-eval-pair-encoder) that reads each consecutive "
                "utterance pair together, added to an --init-from model that has none (frozen with --freeze-encoder); "
                "its pair heads start at zero, or from its trained pair layer with --pair-weight"})
    pair_weight: float = field(default=0.0, metadata={
        "help": "with --pair-encoder: the coherence head's pair row starts as this times the encoder's trained pair "
                "layer (its folder's pair_head.safetensors), the other heads' at zero (hf-dialeval train "
                "fined-eval-pair-weight chooses it)"})
    init_from: str | None = field(default=None, metadata={
        "help": "a FineD-Eval checkpoint to continue training, e.g. the shipped default (give --lora-rank 0): its "
                "model, tokenizer, heads and settings stay (a --backbone, --max-seq-length, --long-dialogue or "
                "adjacency size other than its own is refused); --adapter-rank factors the result against the "
                "backbone again"})
    freeze_encoder: bool = field(default=False, metadata={
        "help": "train the heads alone (with --init-from: e.g. a new adjacency head over a trained model)"})
    freeze_score_heads: bool = field(default=False, metadata={
        "help": "keep the score heads as they are (with --freeze-encoder and --adjacency-bins or "
                "--adjacency-mlp-size: the adjacency heads alone train, at --learning-rate)"})
    freeze_adjacency_mlp: bool = field(default=False, metadata={
        "help": "keep the adjacency MLP as it is (with --freeze-encoder and --freeze-score-heads: the adjacency head "
                "alone trains, e.g. recalibrated to the cosines of a new --adjacency-encoder at a higher "
                "--learning-rate)"})
    train_max_seq_length: int = field(default=256, metadata={"help": "tokens per training input"})
    max_seq_length: int | None = field(default=None, metadata={
        "help": "tokens per input when scoring (stored in the config)" + _KEPT.format(
            NEW_MODEL_SETTINGS["max_seq_length"])})
    long_dialogue: str | None = field(default=None, metadata={
        "choices": LONG_DIALOGUE_MODES, "help": "scoring of dialogues longer than --max-seq-length, stored in the "
                "config (keep_start: what the FED comparison in the model card favours)" + _KEPT.format(
                    NEW_MODEL_SETTINGS["long_dialogue"])})
    margin: float = field(default=RANKING_MARGIN, metadata={"help": "margin of the ranking loss (paper Eq. 1)"})
    # TrainingArguments fields, FineD-Eval's defaults
    lora_dropout: float = field(default=0.0, metadata={"help": "dropout on the LoRA input"})
    learning_rate: float = field(default=5e-4, metadata={"help": "peak learning rate"})
    lr_scheduler_type: str = field(default="constant", metadata={"help": "learning-rate schedule"})
    max_steps: int = field(default=600, metadata={
        "help": "optimizer steps; -1 runs --epochs; 0 writes an --init-from model as assembled (e.g. with a "
                "--pair-encoder at --pair-weight), evaluated and factored, untrained"})
    num_train_epochs: float = field(default=10.0, metadata={
        "aliases": ["--epochs"], "help": "epochs when --max-steps is -1 (paper: 10)"})
    per_device_eval_batch_size: int = field(default=32, metadata={"help": "pairs per validation batch"})
    eval_strategy: str = field(default="steps", metadata={"help": "when to evaluate (and checkpoint)"})
    eval_steps: float = field(default=100, metadata={"help": "evaluate and checkpoint every N steps"})
    logging_steps: float = field(default=10, metadata={"help": "log every N steps"})
    load_best_model_at_end: bool = field(default=True, metadata={
        "help": "the final model is the checkpoint of best validation accuracy (off with --average-last)"})
    metric_for_best_model: str = field(default="accuracy", metadata={"help": "pairwise accuracy, mean over heads"})
    train_sampling_strategy: str = field(default="group_by_length", metadata={
        "help": "batches of pairs of similar length"})

    def models_to_load(self) -> dict[str, str]:
        strategies = {spec.partition(":")[0] for spec in self.strategies}
        unused = {"qa_model": "qa_relevance" not in strategies,
                  "nli_model": not strategies & {"contradiction", "entailment"},
                  "emotion_model": "positive_emotions" not in strategies or self.emotion_model == "gold"}
        return {name: model for name, model in super().models_to_load().items() if not unused.get(name)}

    def check_before_training(self) -> None:
        """Also: options that need another, and a strategy that reads labels --dialogues do not carry."""
        for option, value in (("--adjacency-encoder", self.adjacency_encoder), ("--pair-encoder", self.pair_encoder)):
            if value is not None and self.init_from is None:
                raise OptionError(f"{option} is added to a trained model: give --init-from")
        if getattr(self, "max_steps", None) == 0 and self.init_from is None:  # a TrainingArguments option
            raise OptionError("--max-steps 0 writes an --init-from model as assembled, untrained: give --init-from")
        if self.pair_weight and self.pair_encoder is None:
            raise OptionError("--pair-weight scales a new pair encoder's trained pair layer: give --pair-encoder")
        strategies = {spec.partition(":")[0] for spec in self.strategies}
        if self.dialogues is not None and "positive_emotions" in strategies and self.emotion_model == "gold":
            raise OptionError(f"--strategies positive_emotions reads DailyDialog's own emotion labels (--emotion-model "
                              f"gold), which --dialogues {self.dialogues} does not carry: give --emotion-model an "
                              f"emotion classifier (id or folder; the paper's: {DEFAULT_EMOTION_MODEL}), or leave "
                              "positive_emotions out of --strategies")
        super().check_before_training()

    def settle(self, continued: Mapping[str, Any] | None = None, source: str = "") -> None:
        """Also: a continued model (``continued``, the config of the model of ``source``) keeps its scoring settings,
        so one given that differs is refused."""
        for name in self.NEW_MODEL_SETTINGS:
            given = getattr(self, name)
            if continued is not None and given is not None and given != continued[name]:
                flag = f"--{name.replace('_', '-')}"
                raise OptionError(f"{flag} {given}: --init-from {source} keeps its own {continued[name]}, which a "
                                  f"continued model scores with: leave {flag} out")
        super().settle(continued)
