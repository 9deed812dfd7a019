"""``hf-dialeval train rade`` (its options: :mod:`.options`): either stage of RADE's training, writing the run
layout every metric shares (:mod:`hf_dialeval.training.options`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.ratings import held_out_split, load_ratings
from hf_dialeval.data.subsets import limited
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.metrics.rade import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.rade.data import (
    RADE_DOMAINS,
    RADECollator,
    add_degenerate_candidates,
    build_rade_examples,
    load_training_ratings,
    user_score_range,
    user_training_ratings,
)
from hf_dialeval.metrics.rade.modeling_rade import RADEModel
from hf_dialeval.metrics.rade.options import DEFAULT_TRAIN_DATA, RADETrainingOptions
from hf_dialeval.metrics.rade.trainer import RADETrainer, candidate_correlations
from hf_dialeval.modeling.backbones import is_decoder_only
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run, starting_model, train_and_finish
from hf_dialeval.training.truncation import OLDEST_CONTEXT_FIRST, truncation_record


@dataclass
class RADETrainingArguments(RADETrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of RADE: :class:`~.options.RADETrainingOptions` (what ``hf-dialeval train rade``
    parses) with every ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        if self.ratings is None:  # with --ratings, RADE's data stays unset (check_before_training refuses it given)
            self.train_data = self.train_data or list(DEFAULT_TRAIN_DATA)
            if self.eval_data is None:
                self.eval_data = [source for source in self.train_data if source in RADE_DOMAINS]
            unknown = [source for source in self.eval_data if source not in RADE_DOMAINS]
            if unknown:
                raise UnknownNameError(f"--eval-data takes RADE domains {list(RADE_DOMAINS)}, not {unknown}")
            if not self.eval_data:
                self.eval_strategy = "no"
        if self.eval_strategy == "no":  # nothing validated: no best checkpoint to end with
            self.load_best_model_at_end = False
        super().__post_init__()


def backbone_model(tokenizer: PreTrainedTokenizerBase, args: RADETrainingArguments) -> RADEModel:
    """A new RADE model on ``args.backbone``: an encoder–decoder, or a causal LM that scores and generates (this
    package's adaptation), whose ``tokenizer`` gains a pad token if it has none."""
    if is_decoder_only(args.backbone):
        ensure_pad_token(tokenizer)
        return RADEModel.from_backbone(args.backbone, lm_kind="causal-lm", pooling=args.pooling or "last",
                                       detokenize=args.detokenize, max_seq_length=args.max_seq_length,
                                       max_reference_length=args.max_reference_length)
    return RADEModel.from_backbone(args.backbone, max_seq_length=args.max_seq_length,
                                   max_reference_length=args.max_reference_length,
                                   pooling=args.pooling or "segments", length_features=args.length_features,
                                   sep_token_id=tokenizer.sep_token_id)


def user_ratings(args: RADETrainingArguments) -> tuple[datasets.Dataset, tuple[float, float]]:
    """The user's ratings (``args.ratings``, each with its reference) and the range their scores are mapped from
    (``args.score_range``, or their lowest and highest), refused in one line where RADE cannot learn from them."""
    ratings = load_ratings(args.ratings, args.columns(), args.ratings_split, needs_reference=True)
    return ratings, user_score_range(list(ratings["score"]), args.score_range, args.ratings)


@owns_output_dir
def train_rade(args: RADETrainingArguments) -> Path:
    """Train RADE (``args.stage``) on ``args.train_data``; validation on the ``args.eval_data`` domains' validation
    splits picks the checkpoint (Spearman of ŝ_a). ``args.init_from`` continues a RADE checkpoint (its adapter,
    when it has one). With ``args.ratings`` (each with its reference), a RADE checkpoint (``args.init_from``, default
    the shipped one) is fine-tuned on them instead, their scores mapped linearly from ``args.score_range`` (default:
    the lowest and highest score) onto the model's human scale; ``args.held_out_share`` of their contexts (none: 0)
    are validated on."""
    open_run(args)
    ratings, score_range = user_ratings(args) if args.ratings is not None else (None, None)  # before any model loads
    init_from = args.init_from or (str(DEFAULT_CHECKPOINT) if ratings is not None else None)
    start = starting_model(init_from, functools.partial(load_checkpoint, "rade"), args.backbone,
                           lambda tokenizer: backbone_model(tokenizer, args))
    tokenizer, config = start.tokenizer, start.model.config
    trained, base = start.prepare(args)
    if ratings is not None:
        rows = user_training_ratings(ratings, score_range, config.human_scale)
        train, validation = held_out_split(rows, args.held_out_share, args.seed)
    else:
        train = load_training_ratings(args.train_data, "train", args.data_dir, seed=args.seed,
                                      balance_sources=args.balance_sources)
        validation = load_training_ratings(args.eval_data, "validation", args.data_dir, seed=args.seed) \
            if args.eval_data else None
    train = limited(train, args.max_train_items)
    if args.degenerate_negatives:
        train = add_degenerate_candidates(train, args.degenerate_negatives, config.human_scale[0], seed=args.seed)
    layout = Layout.of(ensure_pad_token(tokenizer), "speaker-tags", config.detokenize) \
        if config.lm_kind == "causal-lm" else None
    train_examples = build_rade_examples(train, tokenizer, config.max_seq_length, config.max_reference_length,
                                         layout=layout)
    eval_examples, compute_metrics = None, None
    if validation is not None:
        validation = limited(validation, args.max_eval_items)
        eval_examples = build_rade_examples(validation, tokenizer, config.max_seq_length, config.max_reference_length,
                                            layout=layout)
        # RADE's domains: the Spearman within each; the user's ratings: over all of them
        compute_metrics = functools.partial(candidate_correlations,
                                            domains=None if ratings is not None else validation["source"])
    trainer = RADETrainer(
        model=trained, args=args, train_dataset=train_examples.remove_columns("truncated"),
        eval_dataset=eval_examples.remove_columns("truncated") if eval_examples is not None else None,
        data_collator=RADECollator(tokenizer), compute_metrics=compute_metrics,
        stage=args.stage, use_ranking_loss=not args.no_ranking_loss, use_generation_loss=not args.no_generation_loss,
        head_learning_rate=args.head_learning_rate,
    )
    truncated = truncation_record(train_examples, config.max_seq_length, OLDEST_CONTEXT_FIRST)
    if ratings is None:
        record = {"train_items": len(train_examples), "train_data": args.train_data, "truncated": truncated}
    else:
        record = {"ratings": args.ratings, "truncated": truncated, "continued": init_from, "train_ratings": len(train_examples),
                  "score_range": {"ratings": list(score_range), "model": list(config.human_scale)}}
        if eval_examples is not None:
            record["validation_ratings"] = len(eval_examples)
    return train_and_finish(trainer, tokenizer, base, record=record)
