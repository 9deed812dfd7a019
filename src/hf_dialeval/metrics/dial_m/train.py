"""``hf-dialeval train dial-m-mlm`` and ``hf-dialeval train dial-m`` (options: :mod:`.options`): Dial-M's two
training stages, each a ``transformers.Trainer`` run in the layout every metric shares
(:mod:`hf_dialeval.training.options`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import (
    AutoConfig,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    DataCollatorForTokenClassification,
    PreTrainedTokenizerBase,
    Trainer,
    set_seed,
)

from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.metrics.dial_m.data import (
    add_eou_token,
    dialogue_turns,
    encode_keyword_masking,
    encode_mlm_windows,
    load_training_dialogues,
)
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel
from hf_dialeval.metrics.dial_m.options import DialMMLMTrainingOptions, DialMTrainingOptions
from hf_dialeval.modeling.checkpoints import resolve_backbone_path
from hf_dialeval.training.run import DialEvalTrainingArguments, finish_run, prepare_model


class _DialMArguments:
    def __post_init__(self) -> None:
        if self.eval_dialogues < 0:
            raise ValueError("--eval-dialogues must be 0 or more")
        if self.eval_dialogues == 0:
            self.eval_strategy = "no"
        self.prediction_loss_only = True
        super().__post_init__()


@dataclass
class DialMMLMTrainingArguments(_DialMArguments, DialMMLMTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of Dial-M's pre-training: :class:`~.options.DialMMLMTrainingOptions` with every
    ``transformers.TrainingArguments`` field."""


@dataclass
class DialMTrainingArguments(_DialMArguments, DialMTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of Dial-M's keyword-masking fine-tuning: :class:`~.options.DialMTrainingOptions` with
    every ``transformers.TrainingArguments`` field."""


def _is_dial_m_checkpoint(name_or_path: str) -> bool:
    path = Path(name_or_path)
    return (path / "config.json").is_file() and AutoConfig.from_pretrained(path).model_type == DialMConfig.model_type


def build_dial_m(backbone: str, eou_token: str | None, max_seq_length: int, **config_kwargs
                 ) -> tuple[DialMModel, PreTrainedTokenizerBase]:
    """A Dial-M model and its tokenizer: a stage-1 run folder as it was trained, or a new model around the masked
    LM (or encoder, given a fresh LM head) ``backbone``, its tokenizer gaining ``eou_token``."""
    if _is_dial_m_checkpoint(backbone):
        model = DialMModel.from_pretrained(backbone)
        model.config.max_seq_length = max_seq_length
        model.config.update(config_kwargs)
        return model, AutoTokenizer.from_pretrained(backbone)
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
    eou, added = add_eou_token(tokenizer, eou_token)
    model = DialMModel.from_backbone(backbone, vocab_size=len(tokenizer), eou_token=eou_token, eou_token_id=eou,
                                     eou_token_added=added, max_seq_length=max_seq_length, **config_kwargs)
    return model, tokenizer


def _subset(dataset: datasets.Dataset, count: int | None, seed: int) -> datasets.Dataset:
    dataset = dataset.shuffle(seed=seed)
    return dataset.select(range(min(count, len(dataset)))) if count is not None else dataset


def _run(args: DialEvalTrainingArguments, model: DialMModel, tokenizer: PreTrainedTokenizerBase,
         train: datasets.Dataset, evaluation: datasets.Dataset | None, collator, record: dict) -> Path:
    trained, base = prepare_model(model, args)
    trainer = Trainer(model=trained, args=args, train_dataset=train, eval_dataset=evaluation, data_collator=collator)
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    finish_run(trainer, tokenizer, base, record={"train_inputs": len(train), "corpora": args.corpora, **record})
    return Path(args.output_dir)


def train_dial_m_mlm(args: DialMMLMTrainingArguments) -> Path:
    """Stage 1: MLM on windows of dialogue utterances joined by ``<eou>`` (no conditions)."""
    args.check_before_training()
    set_seed(args.seed)
    model, tokenizer = build_dial_m(args.backbone, args.eou_token, args.max_seq_length)
    eou = model.config.eou_token_id
    windows = encode_mlm_windows(tokenizer, load_training_dialogues(args.corpora, "train", args.data_dir), eou,
                                 args.max_seq_length)
    evaluation = None
    if args.eval_dialogues:
        dialogues = _subset(load_training_dialogues(["dailydialog"], "validation", args.data_dir), args.eval_dialogues,
                            args.seed)
        evaluation = encode_mlm_windows(tokenizer, dialogues, eou, args.max_seq_length)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.mlm_probability, seed=args.seed)
    return _run(args, model, tokenizer, _subset(windows, args.max_train_items, args.seed), evaluation, collator,
                {"mlm_probability": args.mlm_probability})


def train_dial_m(args: DialMTrainingArguments) -> Path:
    """Stage 2: keyword-masking fine-tuning of a stage-1 run (or of a plain masked LM)."""
    args.check_before_training()
    set_seed(args.seed)
    model, tokenizer = build_dial_m(args.backbone, args.eou_token, args.max_seq_length, max_keywords=args.max_keywords)
    config = model.config

    def encode(dialogues: datasets.Dataset, count: int | None) -> datasets.Dataset:
        turns = _subset(dialogue_turns(dialogues), count, args.seed)
        return encode_keyword_masking(tokenizer, turns, config.eou_token_id, config.max_seq_length,
                                      config.max_keywords, config.keyword_pos_tags, args.masking, args.seed)

    train = encode(load_training_dialogues(args.corpora, "train", args.data_dir), args.max_train_items)
    evaluation = None
    if args.eval_dialogues:
        evaluation = encode(_subset(load_training_dialogues(["dailydialog"], "validation", args.data_dir),
                                    args.eval_dialogues, args.seed), None)
    return _run(args, model, tokenizer, train, evaluation, DataCollatorForTokenClassification(tokenizer),
                {"masking": args.masking})
