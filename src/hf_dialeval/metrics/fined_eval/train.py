"""The training behind ``hf-dialeval train fined-eval``: self-supervised pairs from DailyDialog or the user's own
dialogues, then the ranking Trainer, in the run layout every metric shares (:mod:`hf_dialeval.training.options`).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.fined_eval.configuration_fined_eval import FineDEvalConfig
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
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.model_preparation import prepare_model
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run, starting_model, train_and_finish
from hf_dialeval.training.truncation import DIALOGUE_END, truncation_record

logger = logging.getLogger(__name__)

#: The fewest different ``--dialogues``: two to train on and two held out (a pair of random_substitution takes its
#: utterances from another dialogue).
MIN_DIALOGUES = 4


@dataclass
class FineDEvalTrainingArguments(FineDEvalTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of FineD-Eval's training: :class:`~.options.FineDEvalTrainingOptions` (what
    ``hf-dialeval train fined-eval`` parses) with every ``transformers.TrainingArguments`` field."""


@dataclass
class PairDialogues:
    """The dialogues a run builds its pairs from: those it trains on and those it validates on, what each is (the
    errors name them), and what the training record says of them."""

    train: datasets.Dataset
    validation: datasets.Dataset
    train_source: str
    validation_source: str
    record: dict[str, Any] = field(default_factory=dict)


def corpus_dialogues(args: FineDEvalTrainingArguments) -> PairDialogues:
    """DailyDialog's train and validation splits (with their emotion labels, which ``positive_emotions`` reads)."""
    return PairDialogues(load_dailydialog("train", args.data_dir), load_dailydialog("validation", args.data_dir),
                         "DailyDialog train", "DailyDialog validation")


def user_dialogues(args: FineDEvalTrainingArguments) -> PairDialogues:
    """The dialogues of ``args.dialogues``: a held-out share of them (:func:`~hf_dialeval.data.dialogues.validation_split`) to validate on, the others to train on."""
    kept, held, record = args.training_dialogues(fewest=MIN_DIALOGUES)
    return PairDialogues(kept, held, f"the {len(kept)} dialogues trained on of {args.dialogues}",
                         f"the {len(held)} held-out dialogues of {args.dialogues}", record)


def pair_dialogues(args: FineDEvalTrainingArguments) -> tuple[PairDialogues, list[str]]:
    """The dialogues the pairs are built from (the user's, or DailyDialog's) and the generic utterances of
    ``generic_substitution`` when a strategy uses them, refused in one line where they cannot give what the strategies
    need."""
    data = user_dialogues(args) if args.dialogues is not None else corpus_dialogues(args)
    if not any(parse_strategy(spec)[0] == "generic_substitution" for spec in args.strategies):
        return data, []
    generic = generic_utterances(data.train, args.generic_min_count)
    if not generic:
        raise OptionError(f"--strategies generic_substitution: no utterance of {data.train_source} occurs "
                          f"--generic-min-count {args.generic_min_count} times or more: give a lower "
                          "--generic-min-count, or leave generic_substitution out")
    return data, generic


def build_pairs(dialogues: datasets.Dataset, targets: list[tuple[str, str]], dimensions: list[str],
                pairs_per_head: int, args: FineDEvalTrainingArguments, seed: int, generic: list[str],
                source: str) -> tuple[datasets.Dataset, dict[str, int]]:
    """Pairs of every (strategy, dimension) of ``targets``, ``pairs_per_head`` per head (shared equally among a
    head's strategies), so that the tasks are mixed uniformly once the Trainer shuffles them, and how many each
    ``strategy:dimension`` gave. ``generic``: the generic utterances of ``generic_substitution`` (taken from the
    dialogues trained on for every split); ``source``: what ``dialogues`` are, for the errors."""
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
    parts, counts = [], {}
    for strategy, dimension in targets:
        share = sum(d == dimension for _, d in targets)
        positives, negatives = run[strategy]()
        if len(positives) == 0 or len(negatives) == 0:  # e.g. a few short dialogues, none of them usable
            raise OptionError(f"--strategies {strategy}: {source} give {len(positives)} positive and "
                              f"{len(negatives)} negative dialogues, and a pair needs one of each: give more "
                              f"dialogues, or leave {strategy} out")
        aligned = args.pair_with_original and strategy in CORRUPTION_STRATEGIES
        parts.append(sample_pairs(positives, negatives, pairs_per_head // share, dimensions.index(dimension), seed,
                                  length_matched=args.length_matched_pairs, aligned=aligned))
        counts[f"{strategy}:{dimension}"] = len(parts[-1])
        logger.info("%s: %d pairs for %s", strategy, len(parts[-1]), dimension)
    return datasets.concatenate_datasets(parts).shuffle(seed=seed), counts


def continued_model(args: FineDEvalTrainingArguments, targets: list[tuple[str, str]]
                    ) -> tuple[FineDEvalModel, PreTrainedTokenizerBase]:
    """The trained model of ``args.init_from`` (an adapter merged into its backbone), with its settings and heads
    (an option that would change them is refused, :func:`refuse_conflicts`), and a new adjacency head of
    ``args.adjacency_bins`` bins, a new adjacency MLP of ``args.adjacency_mlp_size``, the adjacency encoder
    ``args.adjacency_encoder`` and the pair encoder ``args.pair_encoder`` when it has none; every strategy must train
    one of its heads."""
    if args.lora_rank:
        raise OptionError("--init-from continues a trained model in full (or its heads with --freeze-encoder): give "
                          "--lora-rank 0, and --adapter-rank to factor the result against the backbone")
    model, tokenizer = load_checkpoint("fined-eval", args.init_from)
    refuse_conflicts(model.config, args)
    args.settle(model.config.to_dict(), args.init_from)
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


def refuse_conflicts(config: FineDEvalConfig, args: FineDEvalTrainingArguments) -> None:
    """A one-line error for an option that would change what the model of ``args.init_from`` (``config``) has: its
    backbone, its adjacency head's bins or MLP's size, an adjacency or pair encoder it has already (what the model
    lacks, the options add)."""
    if args.backbone not in (FineDEvalTrainingOptions.backbone, config.backbone_name_or_path):
        raise OptionError(f"--backbone {args.backbone}: --init-from {args.init_from} brings its own "
                          f"({config.backbone_name_or_path}): leave --backbone out")
    for name, what in (("adjacency_bins", "an adjacency head of {} bins"),
                       ("adjacency_mlp_size", "an adjacency MLP of hidden size {}")):
        given, own = getattr(args, name), getattr(config, name)
        if given and own and given != own:
            flag = f"--{name.replace('_', '-')}"
            raise OptionError(f"{flag} {given}: --init-from {args.init_from} has {what.format(own)}, which it keeps: "
                              f"leave {flag} out")
    for name, what in (("adjacency_encoder", "an adjacency encoder"), ("pair_encoder", "a pair encoder")):
        if getattr(args, name) is not None and getattr(config, name):
            flag = f"--{name.replace('_', '-')}"
            raise OptionError(f"{flag}: --init-from {args.init_from} has {what}, which it keeps: leave {flag} out")
    if args.adjacency_encoder is not None and not (config.adjacency_bins or config.adjacency_mlp_size or
                                                   args.adjacency_bins or args.adjacency_mlp_size):
        raise OptionError(f"--adjacency-encoder reads the utterances of the adjacency features, which --init-from "
                          f"{args.init_from} has none of: give --adjacency-bins or --adjacency-mlp-size too")


def backbone_model(tokenizer: PreTrainedTokenizerBase, args: FineDEvalTrainingArguments,
                   targets: list[tuple[str, str]]) -> FineDEvalModel:
    """A new model on ``args.backbone`` with a head for each dimension ``targets`` train (in
    :data:`~.constants.FINED_EVAL_DIMENSIONS` order), ``tokenizer`` gaining the utterance token."""
    dimensions = [d for d in FINED_EVAL_DIMENSIONS if any(d == target for _, target in targets)]
    add_utterance_token(tokenizer)
    return FineDEvalModel.from_backbone(args.backbone, tokenizer, dimensions, max_seq_length=args.max_seq_length,
                                        long_dialogue=args.long_dialogue, adjacency_bins=args.adjacency_bins,
                                        adjacency_mlp_size=args.adjacency_mlp_size)


@owns_output_dir
def train_fined_eval(args: FineDEvalTrainingArguments) -> Path:
    """Build the pairs of ``args.strategies``, train, and write the run to ``args.output_dir``."""
    open_run(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    targets = list(dict.fromkeys(parse_strategy(spec) for spec in args.strategies))  # a repeated one counts once
    data, generic = pair_dialogues(args)  # the data before the model: a mistake in it fails at once
    if args.init_from is None:
        args.settle()  # a continued model's own settings are known once it loads (continued_model)
    start = starting_model(args.init_from, lambda checkpoint: continued_model(args, targets), args.backbone,
                           lambda tokenizer: backbone_model(tokenizer, args, targets))
    model, tokenizer = start.model, start.tokenizer
    dimensions = model.dimensions
    if args.freeze_adjacency_mlp and model.adjacency_mlp is None:  # before the pairs are built, not after
        raise OptionError("--freeze-adjacency-mlp: the model has no adjacency MLP (add one with --adjacency-mlp-size)")
    utterance_id = model.config.utterance_token_id
    train_pairs, train_counts = build_pairs(data.train, targets, dimensions, args.train_pairs, args, args.seed,
                                            generic, data.train_source)
    eval_pairs, eval_counts = build_pairs(data.validation, targets, dimensions, args.eval_pairs, args,
                                          args.seed + 1, generic, data.validation_source)
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
    strategies = {name: {"train_pairs": count, "eval_pairs": eval_counts[name]} for name, count in train_counts.items()}
    # --max-steps 0: the --init-from model as assembled, untrained (e.g. a pair encoder at --pair-weight)
    return train_and_finish(trainer, tokenizer, base, record={"train_pairs": len(train_dataset),
                                                              "eval_pairs": len(eval_dataset),
                                                              "strategies": strategies, **data.record,
                                                              "truncated": truncation_record(
                                                                  train_dataset, args.train_max_seq_length,
                                                                  DIALOGUE_END)},
                            train=args.max_steps != 0)
