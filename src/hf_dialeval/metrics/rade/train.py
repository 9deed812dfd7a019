"""``hf-dialeval train rade`` (its options: :mod:`.options`): either stage of RADE's training, writing the run
layout every metric shares (:mod:`hf_dialeval.training.options`)."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path

from transformers import AutoTokenizer, set_seed

from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.errors import UnknownNameError
from hf_dialeval.metrics.rade.data import (
    RADE_DOMAINS,
    RADECollator,
    add_degenerate_candidates,
    build_rade_examples,
    load_training_ratings,
)
from hf_dialeval.metrics.rade.modeling_rade import RADEModel
from hf_dialeval.metrics.rade.options import RADETrainingOptions
from hf_dialeval.metrics.rade.trainer import RADETrainer, candidate_correlations
from hf_dialeval.modeling.backbones import is_decoder_only
from hf_dialeval.modeling.checkpoints import resolve_backbone_path
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.run import DialEvalTrainingArguments, finish_run, prepare_continued_model, prepare_model


@dataclass
class RADETrainingArguments(RADETrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of RADE: :class:`~.options.RADETrainingOptions` (what ``hf-dialeval train rade``
    parses) with every ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        if self.eval_data is None:
            self.eval_data = [source for source in self.train_data if source in RADE_DOMAINS]
        unknown = [source for source in self.eval_data if source not in RADE_DOMAINS]
        if unknown:
            raise UnknownNameError(f"--eval-data takes RADE domains {list(RADE_DOMAINS)}, not {unknown}")
        if not self.eval_data:
            self.eval_strategy = "no"
            self.load_best_model_at_end = False
        super().__post_init__()


def train_rade(args: RADETrainingArguments) -> Path:
    """Train RADE (``args.stage``) on ``args.train_data``; validation on the ``args.eval_data`` domains' validation
    splits picks the checkpoint (Spearman of ŝ_a). ``args.init_from`` continues a RADE checkpoint (its adapter,
    when it has one)."""
    args.check_before_training()
    set_seed(args.seed)
    if args.init_from is not None:
        loaded, tokenizer = load_checkpoint("rade", args.init_from)
        trained, base = prepare_continued_model(copy.deepcopy(loaded), args.init_from, args)
        config = loaded.config
    else:
        tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(args.backbone))
        if is_decoder_only(args.backbone):  # this package's adaptation: one causal LM scores and generates
            ensure_pad_token(tokenizer)
            model = RADEModel.from_backbone(args.backbone, lm_kind="causal-lm", pooling=args.pooling or "last",
                                            detokenize=args.detokenize, max_seq_length=args.max_seq_length,
                                            max_reference_length=args.max_reference_length)
        else:
            model = RADEModel.from_backbone(args.backbone, max_seq_length=args.max_seq_length,
                                            max_reference_length=args.max_reference_length,
                                            pooling=args.pooling or "segments", length_features=args.length_features,
                                            sep_token_id=tokenizer.sep_token_id)
        config = model.config
        trained, base = prepare_model(model, args)
    ratings = load_training_ratings(args.train_data, "train", args.data_dir, seed=args.seed,
                                    balance_sources=args.balance_sources)
    if args.max_train_items is not None:
        ratings = ratings.select(range(min(args.max_train_items, len(ratings))))
    if args.degenerate_negatives:
        ratings = add_degenerate_candidates(ratings, args.degenerate_negatives, config.human_scale[0], seed=args.seed)
    layout = Layout.of(ensure_pad_token(tokenizer), "speaker-tags", config.detokenize) \
        if config.lm_kind == "causal-lm" else None
    train_examples = build_rade_examples(ratings, tokenizer, config.max_seq_length, config.max_reference_length,
                                         layout=layout)
    eval_examples, compute_metrics = None, None
    if args.eval_data:
        validation = load_training_ratings(args.eval_data, "validation", args.data_dir, seed=args.seed)
        if args.max_eval_items is not None:
            validation = validation.select(range(min(args.max_eval_items, len(validation))))
        eval_examples = build_rade_examples(validation, tokenizer, config.max_seq_length, config.max_reference_length,
                                            layout=layout)
        compute_metrics = functools.partial(candidate_correlations, domains=validation["source"])
    trainer = RADETrainer(
        model=trained, args=args, train_dataset=train_examples.remove_columns("truncated"),
        eval_dataset=eval_examples.remove_columns("truncated") if eval_examples is not None else None,
        data_collator=RADECollator(tokenizer), compute_metrics=compute_metrics,
        stage=args.stage, use_ranking_loss=not args.no_ranking_loss, use_generation_loss=not args.no_generation_loss,
        head_learning_rate=args.head_learning_rate,
    )
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    finish_run(trainer, tokenizer, base, record={"train_items": len(train_examples), "train_data": args.train_data})
    return Path(args.output_dir)
