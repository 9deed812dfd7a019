"""The options of the train commands that build the two readers of consecutive utterances the shipped FineD-Eval adds
(:mod:`.readers`), importable without torch (``--help`` answers at once): ``hf-dialeval train
fined-eval-adjacency-encoder`` (step 4 of model_cards/fined_eval.md), ``fined-eval-pair-encoder`` and
``fined-eval-pair-weight`` (step 6). Their work is in :mod:`.reader_training` and :mod:`.pair_weight`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hf_dialeval.modeling.offline_models import MINILM_HUB_ID
from hf_dialeval.training.options import AT_LEAST_ONE, NOT_NEGATIVE, POSITIVE, DialEvalTrainingOptions, Range

#: The checklist's pairs per perturbation and split (its committed pairs are 200 per perturbation).
CHECKLIST_PAIRS = 200
#: The checklist's perturbations whose pairs ``fined-eval-pair-weight`` ranks by default (those of coherence).
PAIR_WEIGHT_PERTURBATIONS = ("shuffle", "random", "echo", "repeat")
#: The weights ``fined-eval-pair-weight`` tries by default.
PAIR_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)


@dataclass
class ReaderTrainingOptions(DialEvalTrainingOptions):
    """What the two reader trainings share: the encoder they start from, the steps and the checklist pairs that rank
    each evaluation. A step is one contrastive batch drawn anew from DailyDialog train, not a pass over a dataset, so
    the Trainer's run options (--adapter-rank, --average-last, --keep-checkpoints, --epochs) do not apply."""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {
        "backbone": f"give --backbone {MINILM_HUB_ID} (installed with the package)"}
    RANGES: ClassVar[dict[str, Range]] = {"max_steps": AT_LEAST_ONE, "eval_steps": AT_LEAST_ONE,
                                          "eval_pairs": AT_LEAST_ONE}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the folder of the trained encoder and its tokenizer, and training_record.json (the "
                                  "arguments, the win rates at every evaluation, the loss every 50 steps), written "
                                  "whole at the end"})
    backbone: str = field(default=MINILM_HUB_ID, metadata={"help": "the encoder to fine-tune (Hub id or folder)"})
    eval_pairs: int = field(default=CHECKLIST_PAIRS, metadata={
        "help": "checklist pairs per perturbation and split that each evaluation ranks"})
    # TrainingArguments fields, the readers' defaults
    max_steps: int = field(default=600, metadata={"help": "optimizer steps"})
    eval_steps: int = field(default=200, metadata={
        "help": "evaluate on the checklist pairs every N steps (and before the first, and after the last)"})
    seed: int = field(default=0, metadata={"help": "seed of the batches and of any new layer"})


@dataclass
class AdjacencyEncoderOptions(ReaderTrainingOptions):
    """Train FineD-Eval's adjacency encoder (step 4 of the shipped default's recipe), which hf-dialeval train
    fined-eval --adjacency-encoder then adds to a model: a sentence encoder whose Transformer layers' linear maps
    fine-tune on DailyDialog train. Each batch holds --batch-size dialogues (their first 12 utterances), every
    utterance encoded alone and mean-pooled; for every consecutive pair the cross-entropy of the scaled cosines picks
    the next utterance among the batch's others and, backwards, the previous one. Before training and every
    --eval-steps steps the mean cosine of consecutive utterances ranks the checklist's shuffle and random pairs of
    DailyDialog validation (what chooses the steps) and test (seed 0).

    transformers.TrainingArguments options are accepted as well; those that apply are --max-steps, --eval-steps,
    --learning-rate, --batch-size and --seed."""

    EXAMPLE: ClassVar[str] = """\
example (the shipped encoder's first run; its second continues it, model_cards/fined_eval.md step 4):
  hf-dialeval train fined-eval-adjacency-encoder --output-dir runs/next-utterance --data-dir ../shared/data \\
      --max-steps 1000 --eval-steps 200 --learning-rate 3e-5
"""

    RANGES: ClassVar[dict[str, Range]] = {"scale": POSITIVE}

    backbone: str = field(default=MINILM_HUB_ID, metadata={
        "help": "the sentence encoder to fine-tune (Hub id or folder, e.g. an earlier run of this command to "
                "continue)"})
    scale: float = field(default=20.0, metadata={"help": "cosine scale of the cross-entropy"})
    learning_rate: float = field(default=2e-5, metadata={"help": "learning rate of the encoder's layers (AdamW)"})
    per_device_train_batch_size: int = field(default=32, metadata={
        "aliases": ["--batch-size"], "help": "dialogues per batch"})


@dataclass
class PairEncoderOptions(ReaderTrainingOptions):
    """Train FineD-Eval's pair cross-encoder (step 6 of the shipped default's recipe), which hf-dialeval train
    fined-eval --pair-encoder then adds to a model at the weight fined-eval-pair-weight chooses. The encoder reads
    [CLS] previous [SEP] utterance [SEP]; a linear layer over its mean-pooled output gives the pair a logit. Its
    Transformer layers' linear maps and that layer train on DailyDialog train: each batch holds --batch-size dialogues
    (their first 12 utterances), from each one utterance after the first, and the cross-entropy picks it, after its
    previous utterance, among --negatives others of the same dialogue (an utterance of another dialogue where the
    dialogue has too few), one of another dialogue and, with --echo, the previous utterance itself. Before training
    and every --eval-steps steps a dialogue's mean pair logit ranks the checklist's pairs of DailyDialog validation
    (seed 0: what chooses the steps) and test (seeds 0, 1 and 2).

    transformers.TrainingArguments options are accepted as well; those that apply are --max-steps, --eval-steps,
    --learning-rate, --batch-size and --seed."""

    EXAMPLE: ClassVar[str] = """\
example (the shipped encoder's first run; its second continues it with --echo, model_cards/fined_eval.md step 6):
  hf-dialeval train fined-eval-pair-encoder --output-dir runs/pair-cross-encoder --data-dir ../shared/data \\
      --max-steps 1200 --eval-steps 300
"""

    RANGES: ClassVar[dict[str, Range]] = {"negatives": NOT_NEGATIVE, "head_learning_rate": POSITIVE}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the folder of the trained encoder, its tokenizer and pair layer "
                                  "(pair_head.safetensors: what fined-eval --pair-encoder reads), and "
                                  "training_record.json (the arguments, the win rates at every evaluation, the loss "
                                  "every 50 steps), written whole at the end"})
    backbone: str = field(default=MINILM_HUB_ID, metadata={
        "help": "the encoder to fine-tune (Hub id or folder; a new pair layer), or an earlier run of this command "
                "(its pair layer continues)"})
    negatives: int = field(default=3, metadata={"help": "utterances of the same dialogue per candidate list"})
    head_learning_rate: float = field(default=1e-3, metadata={"help": "learning rate of the pair layer"})
    echo: bool = field(default=False, metadata={
        "help": "one more candidate, the previous utterance itself (the checklist's echo), and the echo and repeat "
                "pairs evaluated too"})
    learning_rate: float = field(default=3e-5, metadata={"help": "learning rate of the encoder's layers (AdamW)"})
    per_device_train_batch_size: int = field(default=16, metadata={
        "aliases": ["--batch-size"], "help": "dialogues per batch"})


@dataclass
class PairWeightOptions(DialEvalTrainingOptions):
    """Choose the weight at which a pair cross-encoder (fined-eval-pair-encoder) joins FineD-Eval's coherence head,
    on validation pairs alone: the --pair-weight of hf-dialeval train fined-eval --pair-encoder (step 6 of the
    shipped default's recipe). On the checklist's DailyDialog pairs of --perturbations (validation seeds
    --validation-seeds, test seeds 0, 1 and 2), each pair's coherence logit difference (original minus perturbed)
    of the --checkpoint and its dialogue-score difference by the pair encoder are added as
    fined-eval + w × pair encoder. The weight w is the one of --weights with the best mean win rate over the
    validation pairs (the smaller on a tie); every split then reports FineD-Eval alone, the pair encoder alone and
    the sum at that weight, and the share of pairs each loses that the other wins; sum_by_weight holds the sum's
    rates at every weight tried.

    transformers.TrainingArguments options are accepted as well; none of them applies (nothing trains)."""

    EXAMPLE: ClassVar[str] = """\
example (the shipped weight, 0.5; model_cards/fined_eval.md step 6):
  hf-dialeval train fined-eval-pair-weight --output-dir runs/pair-weight-echo --data-dir ../shared/data \\
      --checkpoint runs/fe-stage5/adapter --pair-encoder runs/pair-cross-encoder-echo --validation-seeds 0 1 2
"""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {
        "checkpoint": "leave --checkpoint out (the shipped FineD-Eval)",
        "pair_encoder": "give --pair-encoder the --output-dir of hf-dialeval train fined-eval-pair-encoder"}
    RANGES: ClassVar[dict[str, Range]] = {"weights": NOT_NEGATIVE, "validation_seeds": NOT_NEGATIVE,
                                          "eval_pairs": AT_LEAST_ONE}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the folder of pair_weight.json (the weight chosen, the win rates of every split, "
                                  "the sum's at every weight), written whole at the end"})
    pair_encoder: str | None = field(default=None, metadata={
        "required": True, "help": "the --output-dir of hf-dialeval train fined-eval-pair-encoder"})
    checkpoint: str | None = field(default=None, metadata={
        "help": "the FineD-Eval checkpoint the pair encoder joins (default: the shipped one)"})
    perturbations: list[str] = field(default_factory=lambda: list(PAIR_WEIGHT_PERTURBATIONS), metadata={
        "help": "the checklist's perturbations whose pairs are ranked (hf-dialeval checklist --help lists them)"})
    validation_seeds: list[int] = field(default_factory=lambda: [0], metadata={
        "help": "seeds of the validation pairs the weight is chosen on (seed 0: 'validation', the others "
                "'validation-<seed>')"})
    weights: list[float] = field(default_factory=lambda: list(PAIR_WEIGHTS), metadata={
        "help": "the weights tried"})
    eval_pairs: int = field(default=CHECKLIST_PAIRS, metadata={
        "help": "checklist pairs per perturbation and split"})
