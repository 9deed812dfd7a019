"""The training behind ``hf-dialeval train fined-eval`` (options in :mod:`.command`): self-supervised pairs from
DailyDialog, then the ranking Trainer.

The strategies given pick the heads: each strategy trains the head of its dimension, so strategies of one
dimension give a sub-metric model (M^q) and strategies of several dimensions the multitask model
(FineD-Eval_mu). With ``--lora-rank`` > 0 the encoder is adapted with ``peft`` LoRA (the ``</UTT>``
embedding row and the heads are trained in full). With ``--lora-rank 0`` the Transformer layers are
fine-tuned in full instead (embeddings and LayerNorms frozen, but the ``</UTT>`` row), and ``--adapter-rank``
> 0 factors their weight changes into a LoRA adapter of that rank afterwards. With an adapter the output
folder holds the merged model (loads with ``AutoModel.from_pretrained``) and, in ``adapter/``, the few-MB
adapter that ships as the default; with ``--adapter-rank`` the unfactored model is kept in ``full/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import copy
import shutil
import sys
from pathlib import Path
from typing import Any

import datasets
from transformers import AutoTokenizer, TrainingArguments, set_seed

from ..corpora import load_dailydialog
from ..backbones import lora_target_pattern
from ..checkpoints import resolve_backbone_path
from ..training import (
    add_lora,
    average_checkpoints,
    factor_into_adapter,
    last_checkpoints,
    save_adapter,
    train_layers_only,
)
from .constants import STRATEGY_DIMENSIONS
from .modeling_fined_eval import FineDEvalModel, add_utterance_token
from .pairs import (
    contradiction_scoring,
    entailment_scoring,
    generic_substitution,
    generic_utterances,
    positive_emotions,
    qa_relevance,
    sample_pairs,
    split_long_dialogues,
    utterance_shuffling,
)
from .scoring import ADAPTER_DIR
from .trainer import FineDEvalTrainer, tokenize_pairs

logger = logging.getLogger(__name__)

def build_pairs(dialogues: datasets.Dataset, strategies: list[str], dimensions: list[str], pairs_per_head: int,
                args: argparse.Namespace, seed: int, generic: list[str]) -> datasets.Dataset:
    """Pairs of every strategy, ``pairs_per_head`` per head (shared equally among a head's strategies), so
    that the tasks are mixed uniformly once the Trainer shuffles them. ``generic``: the generic utterances
    of ``generic_substitution`` (taken from the training split for every split)."""
    dialogues = split_long_dialogues(dialogues)
    emotion_model = None if args.emotion_model == "gold" else args.emotion_model
    run = {
        "shuffling": lambda: utterance_shuffling(dialogues, seed=seed),
        "qa_relevance": lambda: qa_relevance(dialogues, args.qa_model),
        "contradiction": lambda: contradiction_scoring(dialogues, args.nli_model),
        "positive_emotions": lambda: positive_emotions(dialogues, emotion_model),
        "entailment": lambda: entailment_scoring(dialogues, args.nli_model),
        "generic_substitution": lambda: generic_substitution(dialogues, generic, seed=seed),
    }
    parts = []
    for strategy in strategies:
        dimension = STRATEGY_DIMENSIONS[strategy]
        share = sum(STRATEGY_DIMENSIONS[s] == dimension for s in strategies)
        positives, negatives = run[strategy]()
        parts.append(sample_pairs(positives, negatives, pairs_per_head // share, dimensions.index(dimension), seed,
                                  length_matched=args.length_matched_pairs))
        logger.info("%s: %d pairs for %s", strategy, len(parts[-1]), dimension)
    return datasets.concatenate_datasets(parts).shuffle(seed=seed)


def run_train(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    set_seed(args.seed)
    strategies = list(dict.fromkeys(args.strategies))
    dimensions = [d for d in ("coherence", "likability", "topic_depth")
                  if any(STRATEGY_DIMENSIONS[s] == d for s in strategies)]
    backbone = resolve_backbone_path(args.backbone)
    tokenizer = AutoTokenizer.from_pretrained(backbone)
    utterance_id = add_utterance_token(tokenizer)
    model = FineDEvalModel.from_backbone(args.backbone, tokenizer, dimensions, max_seq_length=args.max_tokens,
                                         long_dialogue=args.long_dialogue)

    train_dialogues = load_dailydialog("train", args.data_dir)
    generic = generic_utterances(train_dialogues, args.generic_min_count) if "generic_substitution" in strategies else []
    train_pairs = build_pairs(train_dialogues, strategies, dimensions, args.train_pairs, args, args.seed, generic)
    eval_pairs = build_pairs(load_dailydialog("validation", args.data_dir), strategies, dimensions, args.eval_pairs,
                             args, args.seed + 1, generic)
    train_dataset = tokenize_pairs(train_pairs, tokenizer, utterance_id, args.train_max_tokens)
    eval_dataset = tokenize_pairs(eval_pairs, tokenizer, utterance_id, args.train_max_tokens)

    if args.lora_rank > 0 and args.adapter_rank > 0:
        raise ValueError("--adapter-rank factors a full fine-tuning: give it with --lora-rank 0")
    if args.lora_rank > 0 and args.average_last > 0:
        raise ValueError("--average-last averages full-model checkpoints: give it with --lora-rank 0")
    trained: Any = model
    base = copy.deepcopy(model) if args.adapter_rank > 0 else None
    if args.lora_rank > 0:
        trained = add_lora(model, rank=args.lora_rank, alpha=args.lora_alpha, dropout=0.0,
                           modules_to_save=["score_heads"], embedding_rows=[utterance_id])
        trained.print_trainable_parameters()
    else:
        train_layers_only(model, embedding_rows=[utterance_id])

    output_dir = Path(args.output_dir)
    training_args = TrainingArguments(
        output_dir=str(output_dir / "checkpoints"), max_steps=args.max_steps, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=args.batch_size * 4,
        learning_rate=args.learning_rate, lr_scheduler_type="constant", weight_decay=0.0,
        eval_strategy="steps", eval_steps=args.eval_steps, save_strategy="steps", save_steps=args.eval_steps,
        # the best checkpoint is kept besides the last ones
        save_total_limit=None if args.keep_checkpoints else max(2, args.average_last + 1),
        # an averaged final model replaces the best checkpoint, so that one is not loaded for nothing
        load_best_model_at_end=args.average_last == 0, metric_for_best_model="accuracy", greater_is_better=True,
        logging_steps=10, report_to="none", seed=args.seed, remove_unused_columns=False,
        train_sampling_strategy="group_by_length", length_column_name="length",
    )
    trainer = FineDEvalTrainer(model=trained, args=training_args, train_dataset=train_dataset,
                               eval_dataset=eval_dataset, processing_class=tokenizer)
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    best_checkpoint = {"path": trainer.state.best_model_checkpoint, "accuracy": trainer.state.best_metric}
    if args.average_last > 0:
        average_checkpoints(model, last_checkpoints(output_dir / "checkpoints", args.average_last))
    metrics = trainer.evaluate()
    logger.info("validation of the final model: %s (best checkpoint: %s)", metrics, best_checkpoint)

    if base is not None:
        model.save_pretrained(str(output_dir / "full"))
        tokenizer.save_pretrained(str(output_dir / "full"))
        trained = factor_into_adapter(model, base, args.adapter_rank, lora_target_pattern(base),
                                      modules_to_save=["score_heads"], embedding_rows=[utterance_id])
    if base is not None or args.lora_rank > 0:
        adapter_dir = output_dir / ADAPTER_DIR
        save_adapter(trained, adapter_dir)
        model.config.save_pretrained(str(adapter_dir))
        tokenizer.save_pretrained(str(adapter_dir))
        model = trained.merge_and_unload()
    model.save_pretrained(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    record = {"arguments": {k: v for k, v in vars(args).items() if k != "func"}, "validation": metrics,
              "best_checkpoint": best_checkpoint,
              "train_pairs": len(train_dataset), "eval_pairs": len(eval_dataset)}
    (output_dir / "training_record.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if not args.keep_checkpoints:
        shutil.rmtree(output_dir / "checkpoints", ignore_errors=True)
