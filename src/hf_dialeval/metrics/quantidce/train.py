"""The QuantiDCE training stages, behind ``hf-dialeval train quantidce-mlr`` / ``hf-dialeval train
quantidce-kd`` (the paper's two) and ``hf-dialeval train quantidce-selection`` (this package's response-selection
pre-training, the shipped default's first stage before MLR; their options: :mod:`.options`), each writing the run
layout every metric shares (:mod:`hf_dialeval.training.options`): the merged model, ``adapter/`` (LoRA on the
encoder + the full MLP head, trained or factored at ``adapter_rank``), ``full/``.
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import DataCollatorWithPadding, PreTrainedTokenizerBase

from hf_dialeval.data.corpora import load_dailydialog, load_dailydialog_plusplus, load_quantidce_dailydialog_eval
from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.data.subsets import limited
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.quantidce import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.quantidce.data import (
    DAILYDIALOG_PLUSPLUS_LEVELS,
    DIALOGUE_LEVELS,
    MultiLevelRankingCollator,
    ResponseSelectionCollator,
    add_parrot_negatives,
    build_pair_examples,
    build_ranking_examples,
    build_selection_examples,
    dialogue_levels,
)
from hf_dialeval.metrics.quantidce.modeling_quantidce import QuantiDCEModel
from hf_dialeval.metrics.quantidce.options import (
    QuantiDCEKDTrainingOptions,
    QuantiDCEMLRTrainingOptions,
    QuantiDCEModelOptions,
    QuantiDCESelectionTrainingOptions,
)
from hf_dialeval.metrics.quantidce.trainer import (
    DistillationTrainer,
    MultiLevelRankingTrainer,
    ResponseSelectionTrainer,
)
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.model_preparation import prepare_continued_model, prepare_model
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import StartingModel, open_run, starting_model, train_and_finish
from hf_dialeval.training.truncation import OLDEST_CONTEXT_FIRST, truncation_record

#: DailyDialog++ splits that have all three response levels (its train split has positives only).
MLR_SPLITS = ("validation", "test")


def check_model_options(args: QuantiDCEModelOptions) -> None:
    """Reject the combinations of a new or continued model's options that cannot hold."""
    if args.init_from is not None and args.lora_rank:
        raise OptionError("--init-from continues a full model, which LoRA adapters would not be relative to: "
                          "give --lora-rank 0")


@dataclass
class QuantiDCEMLRTrainingArguments(QuantiDCEMLRTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of MLR pre-training: :class:`~.options.QuantiDCEMLRTrainingOptions` (what
    ``hf-dialeval train quantidce-mlr`` parses) with every ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        check_model_options(self)
        if not self.eval_contexts:
            self.eval_strategy = "no"
        super().__post_init__()


@dataclass
class QuantiDCESelectionTrainingArguments(QuantiDCESelectionTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of response-selection pre-training: :class:`~.options.QuantiDCESelectionTrainingOptions`
    (what ``hf-dialeval train quantidce-selection`` parses) with every ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        check_model_options(self)
        if self.every_earlier_repeat and not self.parrot_negatives:
            raise OptionError("--every-earlier-repeat widens the parrot negatives: give --parrot-negatives too")
        if not self.eval_dialogues:
            self.eval_strategy = "no"
        super().__post_init__()


@dataclass
class QuantiDCEKDTrainingArguments(QuantiDCEKDTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of KD fine-tuning: :class:`~.options.QuantiDCEKDTrainingOptions` (what
    ``hf-dialeval train quantidce-kd`` parses) with every ``transformers.TrainingArguments`` field."""


def train_and_held_out(corpus: datasets.Dataset, max_rows: int | None, held_out_rows: int, seed: int
                       ) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """``corpus`` shuffled with ``seed``: up to ``max_rows`` rows for training and ``held_out_rows`` held out
    (``None`` when 0)."""
    corpus = corpus.shuffle(seed=seed)
    if max_rows is not None:
        corpus = limited(corpus, max_rows + held_out_rows)
    if not held_out_rows:
        return corpus, None
    split = corpus.train_test_split(test_size=held_out_rows, seed=seed)
    return split["train"], split["test"]


def mlr_contexts(data_dir: str | os.PathLike | None = None, max_contexts: int | None = None, eval_contexts: int = 100,
                 seed: int = 42) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """The DailyDialog++ contexts of MLR pre-training (those of :data:`MLR_SPLITS`, which have all three
    levels), shuffled with ``seed``: up to ``max_contexts`` for training and ``eval_contexts`` held out
    (``None`` when 0). :func:`train_mlr` trains on the first; the second is its validation set."""
    corpus = datasets.concatenate_datasets([load_dailydialog_plusplus(s, data_dir) for s in MLR_SPLITS])
    return train_and_held_out(corpus, max_contexts, eval_contexts, seed)


def new_or_continued_model(args: QuantiDCEModelOptions) -> StartingModel:
    """The model a stage starts from: ``args.init_from``'s (its settings win), or a new one on ``args.backbone``.
    Either is fine-tuned as a new one (:func:`~hf_dialeval.training.model_preparation.prepare_model`): ``--init-from``
    continues a full model (:func:`check_model_options`)."""

    def new(tokenizer: PreTrainedTokenizerBase) -> QuantiDCEModel:
        return QuantiDCEModel.from_backbone(args.backbone, pooling=args.pooling,
                                            mlp_hidden_sizes=tuple(args.mlp_hidden_sizes),
                                            max_seq_length=args.max_seq_length, encoding=args.encoding,
                                            bi_context=args.bi_context, bi_features=args.bi_features,
                                            cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id)

    return starting_model(args.init_from, functools.partial(load_checkpoint, "quantidce"), args.backbone, new)


def selection_dialogues(data_dir: str | os.PathLike | None = None, max_dialogues: int | None = None,
                        eval_dialogues: int = 100, seed: int = 42) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """DailyDialog's train dialogues, shuffled with ``seed``: up to ``max_dialogues`` for training and
    ``eval_dialogues`` held out (``None`` when 0). Its validation and test splits are left alone: the checklist
    and the benchmarks draw on DailyDialog's test dialogues."""
    corpus = load_dailydialog("train", data_dir).select_columns(["dialogue"])
    return train_and_held_out(corpus, max_dialogues, eval_dialogues, seed)


@owns_output_dir
def train_selection(args: QuantiDCESelectionTrainingArguments, dialogues: datasets.Dataset | None = None) -> Path:
    """Response-selection pre-training (this package's addition): on DailyDialog's train dialogues
    (:func:`selection_dialogues`), on the user's (``args.dialogues``, a held-out share set apart: up to
    ``args.max_dialogues`` trained on and ``args.eval_dialogues`` of the held-out ones validated on), or on
    ``dialogues`` (a ``dialogue`` column), all used for training (give ``eval_dialogues=0``). Each turn's human reply
    is ranked against the batch's other replies and the hard negatives of :func:`~.data.build_selection_examples`
    (:class:`~.trainer.ResponseSelectionTrainer`)."""
    open_run(args)
    held_out, record = None, {}
    if args.dialogues is not None:  # read and checked before the model loads
        dialogues, held_out, record = args.training_dialogues(validate=args.eval_dialogues > 0)
        dialogues = limited(dialogues.shuffle(seed=args.seed), args.max_dialogues)
        held_out = limited(held_out, args.eval_dialogues) if held_out is not None else None
    elif dialogues is None:
        dialogues, held_out = selection_dialogues(args.data_dir, args.max_dialogues, args.eval_dialogues, args.seed)
    start = new_or_continued_model(args)
    model, tokenizer = start.model, start.tokenizer

    def examples(corpus: datasets.Dataset) -> datasets.Dataset:
        return build_selection_examples(corpus, later_turn_negatives=not args.no_later_turn_negatives,
                                        parrot_negatives=args.parrot_negatives,
                                        every_earlier_repeat=args.every_earlier_repeat, seed=args.seed)

    trained, base = prepare_model(model, args)
    train_examples = examples(dialogues)
    # validation batches in turn order would hold a turn and the next one, whose reply is the first's context's
    # last utterance (an echo): shuffled, like the training batches, they mix dialogues
    trainer = ResponseSelectionTrainer(
        model=trained, args=args, train_dataset=train_examples,
        eval_dataset=examples(held_out).shuffle(seed=args.seed) if held_out is not None else None,
        data_collator=ResponseSelectionCollator(tokenizer, model.config.max_seq_length), temperature=args.temperature,
    )
    return train_and_finish(trainer, tokenizer, base,
                            record={**record, "train_dialogues": len(dialogues), "train_turns": len(train_examples)})


def dialogue_contexts(args: QuantiDCEMLRTrainingArguments) -> tuple[datasets.Dataset, datasets.Dataset | None, dict]:
    """The MLR contexts of the user's dialogues (``args.dialogues``, levels :data:`~.data.DIALOGUE_LEVELS`), shuffled
    with ``args.seed``: up to ``args.max_contexts`` of the dialogues trained on, up to ``args.eval_contexts`` of
    those held out (``None`` when 0), and the record of the dialogues. Dialogues that give no context are refused in
    one line."""
    dialogues, held_dialogues, record = args.training_dialogues(validate=args.eval_contexts > 0)
    contexts = limited(dialogue_levels(dialogues, seed=args.seed).shuffle(seed=args.seed), args.max_contexts)
    if not len(contexts):
        raise OptionError(f"--dialogues {args.dialogues} has no turn whose speaker speaks again later, which MLR "
                          "needs (its adversarial level): give longer dialogues")
    held_out = None
    if held_dialogues is not None:
        held_out = limited(dialogue_levels(held_dialogues, seed=args.seed).shuffle(seed=args.seed), args.eval_contexts)
    return contexts, held_out, record


@owns_output_dir
def train_mlr(args: QuantiDCEMLRTrainingArguments, contexts: datasets.Dataset | None = None,
              level_columns: tuple[str, ...] = DAILYDIALOG_PLUSPLUS_LEVELS) -> Path:
    """Stage 1, MLR pre-training: by default on the DailyDialog++ contexts that have all three levels (random <
    adversarial < positive responses, K = 5 each), ``args.eval_contexts`` of them held out; on the contexts of the
    user's dialogues (``args.dialogues``: the levels of :func:`~.data.dialogue_levels`, validated on up to
    ``args.eval_contexts`` contexts of held-out dialogues); or on ``contexts`` (a dataset with ``context`` and the
    ``level_columns``, least coherent first), all used for training (no validation, so give ``eval_contexts=0``).
    ``args.parrot_negatives`` adds the echo and repeat of each training context to its least coherent level
    (:func:`~.data.add_parrot_negatives`); validation keeps the paper's levels."""
    open_run(args)
    held_out, record = None, {}
    if args.dialogues is not None:  # read and checked before the model loads
        contexts, held_out, record = dialogue_contexts(args)
        level_columns = DIALOGUE_LEVELS
    elif contexts is None:
        contexts, held_out = mlr_contexts(args.data_dir, args.max_contexts, args.eval_contexts, args.seed)
    start = new_or_continued_model(args)
    model, tokenizer = start.model, start.tokenizer
    max_seq_length = model.config.max_seq_length
    if args.parrot_negatives:
        contexts = add_parrot_negatives(contexts, level_columns[0])
    train_examples = build_ranking_examples(contexts, tokenizer, max_seq_length, level_columns)
    eval_examples = (build_ranking_examples(held_out, tokenizer, max_seq_length, level_columns)
                     if held_out is not None else None)
    trained, base = prepare_model(model, args)
    trainer = MultiLevelRankingTrainer(
        model=trained, args=args, train_dataset=train_examples, eval_dataset=eval_examples,
        data_collator=MultiLevelRankingCollator(tokenizer), separation_margin=args.separation_margin,
        compactness_margin=args.compactness_margin, use_ordering_loss=not args.no_ordering_loss,
    )
    return train_and_finish(trainer, tokenizer, base, record={
        **record, "train_contexts": len(contexts),
        "truncated": truncation_record(train_examples, max_seq_length, OLDEST_CONTEXT_FIRST)})


@owns_output_dir
def train_kd(args: QuantiDCEKDTrainingArguments, ratings: datasets.Dataset | None = None) -> Path:
    """Stage 2, KD fine-tuning, on human ratings: ``ratings`` (``context``, ``response``, ``score``, on any scale),
    else those of ``args.ratings`` (:func:`~hf_dialeval.data.ratings.load_ratings`), else the 270 DailyDialogEVAL
    training ratings (validation: the other 30). Of given ratings, ``args.held_out_share`` of the contexts are held
    out to validate on (0: none, so give ``eval_strategy="no"``). The student starts as the teacher
    (``args.teacher``, default the shipped QuantiDCE): a run with an ``adapter/`` (or an adapter folder) keeps
    training that adapter, a full model's Transformer layers are fine-tuned in full; ``no_distillation`` trains with
    the MSE term alone (the ablation)."""
    open_run(args)
    if ratings is None and args.ratings is not None:  # before any model loads: a bad file fails at once
        ratings = load_ratings(args.ratings, args.columns(), args.ratings_split)
    teacher = args.teacher or str(DEFAULT_CHECKPOINT)
    teacher_model, tokenizer = load_checkpoint("quantidce", teacher)
    config = teacher_model.config
    student, base = prepare_continued_model(copy.deepcopy(teacher_model), teacher, args)
    if ratings is None:
        train, validation = (load_quantidce_dailydialog_eval(split, args.data_dir) for split in ("train", "validation"))
    else:
        train, validation = held_out_split(ratings, args.held_out_share, args.seed)
    train_examples, validation_examples = (None if part is None else build_pair_examples(
        part, tokenizer, config.max_seq_length) for part in (train, validation))
    truncated = truncation_record(train_examples, config.max_seq_length, OLDEST_CONTEXT_FIRST)
    trainer = DistillationTrainer(
        model=student, args=args, train_dataset=train_examples.remove_columns("truncated"),
        eval_dataset=None if validation_examples is None else validation_examples.remove_columns("truncated"),
        data_collator=DataCollatorWithPadding(tokenizer), teacher_model=None if args.no_distillation else teacher_model,
        alpha=args.alpha, beta=args.beta, distill=not args.no_distillation,
    )
    record = {"train_ratings": len(train_examples), "truncated": truncated}
    if validation_examples is not None and ratings is not None:
        record["validation_ratings"] = len(validation_examples)
    return train_and_finish(trainer, tokenizer, base, record=record)
