"""The training behind ``hf-dialeval train fined-eval``: self-supervised pairs from DailyDialog, then the
ranking Trainer, in the run layout every metric shares (:mod:`hf_dialeval.training.options`).

The strategies given pick the heads: each strategy trains the head of its dimension (``strategy:dimension``
names another), so strategies of one dimension give a sub-metric model (M^q) and strategies of several
dimensions the multitask model (FineD-Eval_mu). With ``lora_rank`` > 0 the encoder is adapted with ``peft`` LoRA (the ``</UTT>`` embedding
row and the heads are trained in full). With ``lora_rank`` 0 the Transformer layers are fine-tuned in full
instead (embeddings and LayerNorms frozen, but the ``</UTT>`` row), and ``adapter_rank`` > 0 factors their
weight changes into a LoRA adapter of that rank afterwards: the few-MB adapter that ships as the default.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.fined_eval.constants import CORRUPTION_STRATEGIES, FINED_EVAL_DIMENSIONS, parse_strategy
from hf_dialeval.metrics.fined_eval.encoding import add_utterance_token
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import FineDEvalModel
from hf_dialeval.metrics.fined_eval.options import FineDEvalTrainingOptions
from hf_dialeval.metrics.fined_eval.pairs import (
    contradiction_scoring,
    echo_substitution,
    entailment_scoring,
    generic_substitution,
    generic_utterances,
    positive_emotions,
    qa_relevance,
    random_substitution,
    repeat_substitution,
    sample_pairs,
    speaker_shuffling,
    split_long_dialogues,
    utterance_shuffling,
)
from hf_dialeval.metrics.fined_eval.readers import load_pair_head
from hf_dialeval.metrics.fined_eval.trainer import FineDEvalTrainer, tokenize_pairs
from hf_dialeval.modeling.backbones import build_backbone
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.run import DialEvalTrainingArguments, finish_run, prepare_model
from hf_dialeval.training.steps import open_run, starting_model

logger = logging.getLogger(__name__)


@dataclass
class FineDEvalTrainingArguments(FineDEvalTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of FineD-Eval's training: :class:`~.options.FineDEvalTrainingOptions` (what
    ``hf-dialeval train fined-eval`` parses) with every ``transformers.TrainingArguments`` field."""


def build_pairs(dialogues: datasets.Dataset, targets: list[tuple[str, str]], dimensions: list[str],
                pairs_per_head: int, args: FineDEvalTrainingArguments, seed: int, generic: list[str]) -> datasets.Dataset:
    """Pairs of every (strategy, dimension) of ``targets``, ``pairs_per_head`` per head (shared equally among a
    head's strategies), so that the tasks are mixed uniformly once the Trainer shuffles them. ``generic``: the
    generic utterances of ``generic_substitution`` (taken from the training split for every split)."""
    dialogues = split_long_dialogues(dialogues)
    emotion_model = None if args.emotion_model == "gold" else args.emotion_model
    run = {
        "shuffling": lambda: utterance_shuffling(dialogues, seed=seed),
        "qa_relevance": lambda: qa_relevance(dialogues, args.qa_model),
        "contradiction": lambda: contradiction_scoring(dialogues, args.nli_model),
        "positive_emotions": lambda: positive_emotions(dialogues, emotion_model),
        "entailment": lambda: entailment_scoring(dialogues, args.nli_model),
        "generic_substitution": lambda: generic_substitution(dialogues, generic, seed=seed),
        "random_substitution": lambda: random_substitution(dialogues, seed=seed),
        "echo_substitution": lambda: echo_substitution(dialogues, seed=seed),
        "repeat_substitution": lambda: repeat_substitution(dialogues, seed=seed),
        "speaker_shuffling": lambda: speaker_shuffling(dialogues, seed=seed),
    }
    parts = []
    for strategy, dimension in targets:
        share = sum(d == dimension for _, d in targets)
        positives, negatives = run[strategy]()
        aligned = args.pair_with_original and strategy in CORRUPTION_STRATEGIES
        parts.append(sample_pairs(positives, negatives, pairs_per_head // share, dimensions.index(dimension), seed,
                                  length_matched=args.length_matched_pairs, aligned=aligned))
        logger.info("%s: %d pairs for %s", strategy, len(parts[-1]), dimension)
    return datasets.concatenate_datasets(parts).shuffle(seed=seed)


def continued_model(args: FineDEvalTrainingArguments, targets: list[tuple[str, str]]
                    ) -> tuple[FineDEvalModel, PreTrainedTokenizerBase]:
    """The trained model of ``args.init_from`` (an adapter merged into its backbone), with a new adjacency head of
    ``args.adjacency_bins`` bins, a new adjacency MLP of ``args.adjacency_mlp_size``, the adjacency encoder
    ``args.adjacency_encoder`` and the pair encoder ``args.pair_encoder`` when it has none; every strategy must train
    one of its heads."""
    if args.lora_rank:
        raise OptionError("--init-from continues a trained model in full (or its heads with --freeze-encoder): give "
                          "--lora-rank 0, and --adapter-rank to factor the result against the backbone")
    model, tokenizer = load_checkpoint("fined-eval", args.init_from)
    if args.adjacency_bins and not model.config.adjacency_bins:
        model.add_adjacency_head(args.adjacency_bins)
    if args.adjacency_mlp_size and not model.config.adjacency_mlp_size:
        model.add_adjacency_mlp(args.adjacency_mlp_size)
    if args.adjacency_encoder is not None:
        model.add_adjacency_encoder(build_backbone(args.adjacency_encoder))
    if args.pair_encoder is not None:
        weights = {"coherence": args.pair_weight} if args.pair_weight else None
        model.add_pair_encoder(build_backbone(args.pair_encoder), tokenizer,
                               load_pair_head(args.pair_encoder) if weights else None, weights)
    missing = sorted({dimension for _, dimension in targets} - set(model.dimensions))
    if missing:
        raise OptionError(f"--strategies train {missing}, which {args.init_from} has no head for (its heads: "
                          f"{model.dimensions})")
    return model, tokenizer


def backbone_model(tokenizer: PreTrainedTokenizerBase, args: FineDEvalTrainingArguments,
                   targets: list[tuple[str, str]]) -> FineDEvalModel:
    """A new model on ``args.backbone`` with a head for each dimension ``targets`` train (in
    :data:`~.constants.FINED_EVAL_DIMENSIONS` order), ``tokenizer`` gaining the utterance token."""
    dimensions = [d for d in FINED_EVAL_DIMENSIONS if any(d == target for _, target in targets)]
    add_utterance_token(tokenizer)
    return FineDEvalModel.from_backbone(args.backbone, tokenizer, dimensions, max_seq_length=args.max_seq_length,
                                        long_dialogue=args.long_dialogue, adjacency_bins=args.adjacency_bins,
                                        adjacency_mlp_size=args.adjacency_mlp_size)


def train_fined_eval(args: FineDEvalTrainingArguments) -> Path:
    """Build the pairs of ``args.strategies``, train, and write the run to ``args.output_dir``."""
    open_run(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    for option, value in (("--adjacency-encoder", args.adjacency_encoder), ("--pair-encoder", args.pair_encoder)):
        if value is not None and args.init_from is None:
            raise OptionError(f"{option} is added to a trained model: give --init-from")
    if args.max_steps == 0 and args.init_from is None:
        raise OptionError("--max-steps 0 writes an --init-from model as assembled, untrained: give --init-from")
    if args.pair_weight and args.pair_encoder is None:
        raise OptionError("--pair-weight scales a new pair encoder's trained pair layer: give --pair-encoder")
    targets = list(dict.fromkeys(parse_strategy(spec) for spec in args.strategies))  # a repeated one counts once
    start = starting_model(args.init_from, lambda checkpoint: continued_model(args, targets), args.backbone,
                           lambda tokenizer: backbone_model(tokenizer, args, targets))
    model, tokenizer = start.model, start.tokenizer
    dimensions = model.dimensions
    if args.freeze_adjacency_mlp and model.adjacency_mlp is None:  # before the pairs are built, not after
        raise OptionError("--freeze-adjacency-mlp: the model has no adjacency MLP (add one with --adjacency-mlp-size)")
    utterance_id = model.config.utterance_token_id

    train_dialogues = load_dailydialog("train", args.data_dir)
    uses_generic = any(strategy == "generic_substitution" for strategy, _ in targets)
    generic = generic_utterances(train_dialogues, args.generic_min_count) if uses_generic else []
    train_pairs = build_pairs(train_dialogues, targets, dimensions, args.train_pairs, args, args.seed, generic)
    eval_pairs = build_pairs(load_dailydialog("validation", args.data_dir), targets, dimensions, args.eval_pairs,
                             args, args.seed + 1, generic)
    train_dataset = tokenize_pairs(train_pairs, tokenizer, utterance_id, args.train_max_seq_length)
    eval_dataset = tokenize_pairs(eval_pairs, tokenizer, utterance_id, args.train_max_seq_length)

    trained, base = prepare_model(model, args)  # a continued model too: continued_model refuses LoRA
    if args.freeze_encoder:
        for copy_of_backbone in (model.adjacency_encoder, model.pair_encoder):
            if copy_of_backbone is not None:
                copy_of_backbone.requires_grad_(False)
    if args.freeze_score_heads:
        model.score_heads.requires_grad_(False)
    if args.freeze_adjacency_mlp:
        model.adjacency_mlp.requires_grad_(False)
    trainer = FineDEvalTrainer(model=trained, args=args, train_dataset=train_dataset, eval_dataset=eval_dataset,
                               processing_class=tokenizer, margin=args.margin)
    if args.max_steps != 0:  # 0: the --init-from model as assembled (e.g. a pair encoder at --pair-weight)
        trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    finish_run(trainer, tokenizer, base, record={"train_pairs": len(train_dataset), "eval_pairs": len(eval_dataset)})
    return Path(args.output_dir)
