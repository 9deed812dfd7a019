"""``hf-dialeval train dial-m-mlm`` and ``hf-dialeval train dial-m`` (options: :mod:`.options`): Dial-M's two
training stages, each a ``transformers.Trainer`` run in the layout every metric shares
(:mod:`hf_dialeval.training.options`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import (
    AutoConfig,
    DataCollatorForLanguageModeling,
    DataCollatorForTokenClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Trainer,
)

from hf_dialeval.data.subsets import limited
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.metrics.dial_m.data import (
    add_eou_token,
    dialogue_turns,
    encode_causal_keyword_training,
    encode_keyword_masking,
    encode_lm_windows,
    encode_mlm_windows,
    load_training_dialogues,
)
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel
from hf_dialeval.metrics.dial_m.options import DialMMLMTrainingOptions, DialMTrainingOptions
from hf_dialeval.modeling.backbones import is_decoder_only
from hf_dialeval.modeling.loading import checkpoint_tokenizer
from hf_dialeval.training.run import DialEvalTrainingArguments
from hf_dialeval.training.steps import StartingModel, open_run, starting_model, train_and_finish

#: The model to train (a peft model under LoRA) and the untrained one its fine-tuning is factored against, if any.
Prepared = tuple[PreTrainedModel, PreTrainedModel | None]


class _DialMArguments:
    def __post_init__(self) -> None:
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


def build_dial_m(backbone: str, eou_token: str | None, max_seq_length: int, **config_kwargs) -> StartingModel:
    """A Dial-M model and its tokenizer: a stage-1 run folder as it was trained (continued: its adapter, when it has
    one, keeps training), or a new model around ``backbone``: a masked LM (or an encoder, given a fresh LM head), its
    tokenizer gaining ``eou_token``; or a causal LM."""

    def load(checkpoint: str) -> tuple[DialMModel, PreTrainedTokenizerBase]:  # a stage-1 run keeps its own layout
        config_kwargs.pop("detokenize", None)
        model = DialMModel.from_pretrained(checkpoint)
        model.config.max_seq_length = max_seq_length
        model.config.update(config_kwargs)
        return model, ensure_pad_token(checkpoint_tokenizer(checkpoint, model.config))

    def new(tokenizer: PreTrainedTokenizerBase) -> DialMModel:
        if is_decoder_only(backbone):  # this package's adaptation: the keywords predicted by a causal LM
            model = DialMModel.from_backbone(backbone, lm_kind="causal-lm", max_seq_length=max_seq_length,
                                             **config_kwargs)
            ensure_pad_token(tokenizer)
            return model
        config_kwargs.pop("detokenize", None)  # a masked LM reads the text as it is
        eou, added = add_eou_token(tokenizer, eou_token)
        return DialMModel.from_backbone(backbone, vocab_size=len(tokenizer), eou_token=eou_token, eou_token_id=eou,
                                        eou_token_added=added, max_seq_length=max_seq_length, **config_kwargs)

    return starting_model(backbone if _is_dial_m_checkpoint(backbone) else None, load, backbone, new)


def _layout(model: DialMModel, tokenizer: PreTrainedTokenizerBase) -> Layout:
    return Layout.of(tokenizer, "speaker-tags", model.config.detokenize)


def _subset(dataset: datasets.Dataset, count: int | None, seed: int) -> datasets.Dataset:
    return limited(dataset.shuffle(seed=seed), count)


def _run(args: DialEvalTrainingArguments, prepared: Prepared, tokenizer: PreTrainedTokenizerBase,
         train: datasets.Dataset, evaluation: datasets.Dataset | None, collator, record: dict) -> Path:
    trained, base = prepared
    trainer = Trainer(model=trained, args=args, train_dataset=train, eval_dataset=evaluation, data_collator=collator)
    return train_and_finish(trainer, tokenizer, base,
                            record={"train_inputs": len(train), "corpora": args.corpora, **record})


def train_dial_m_mlm(args: DialMMLMTrainingArguments) -> Path:
    """Stage 1: MLM on windows of dialogue utterances joined by ``<eou>`` (no conditions); on a causal LM, causal-LM
    training on windows of speaker-tagged transcripts."""
    open_run(args)
    start = build_dial_m(args.backbone, args.eou_token, args.max_seq_length, detokenize=args.detokenize)
    model, tokenizer = start.model, start.tokenizer
    prepared = start.prepare(args)  # before any data is read: a refused setting fails at once
    causal = model.config.lm_kind == "causal-lm"

    def encode(dialogues: datasets.Dataset) -> datasets.Dataset:
        if causal:
            return encode_lm_windows(tokenizer, dialogues, _layout(model, tokenizer), args.max_seq_length)
        return encode_mlm_windows(tokenizer, dialogues, model.config.eou_token_id, args.max_seq_length)

    windows = encode(load_training_dialogues(args.corpora, "train", args.data_dir))
    evaluation = None
    if args.eval_dialogues:
        evaluation = encode(_subset(load_training_dialogues(["dailydialog"], "validation", args.data_dir),
                                    args.eval_dialogues, args.seed))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=not causal, mlm_probability=args.mlm_probability,
                                               seed=args.seed)
    record = {"objective": "causal-lm"} if causal else {"mlm_probability": args.mlm_probability}
    return _run(args, prepared, tokenizer, _subset(windows, args.max_train_items, args.seed), evaluation, collator,
                record)


def train_dial_m(args: DialMTrainingArguments) -> Path:
    """Stage 2: keyword-masking fine-tuning of a stage-1 run (or of a plain masked LM); on a causal LM, learning to
    predict each response's keywords from everything before them."""
    open_run(args)
    start = build_dial_m(args.backbone, args.eou_token, args.max_seq_length, max_keywords=args.max_keywords,
                         detokenize=args.detokenize)
    model, tokenizer = start.model, start.tokenizer
    prepared = start.prepare(args)  # before any data is read: a refused setting fails at once
    config = model.config

    def encode(dialogues: datasets.Dataset, count: int | None) -> datasets.Dataset:
        turns = _subset(dialogue_turns(dialogues), count, args.seed)
        if config.lm_kind == "causal-lm":
            return encode_causal_keyword_training(tokenizer, turns, _layout(model, tokenizer), config.max_seq_length,
                                                  config.max_keywords, config.keyword_pos_tags, args.masking,
                                                  args.seed)
        return encode_keyword_masking(tokenizer, turns, config.eou_token_id, config.max_seq_length,
                                      config.max_keywords, config.keyword_pos_tags, args.masking, args.seed)

    train = encode(load_training_dialogues(args.corpora, "train", args.data_dir), args.max_train_items)
    evaluation = None
    if args.eval_dialogues:
        evaluation = encode(_subset(load_training_dialogues(["dailydialog"], "validation", args.data_dir),
                                    args.eval_dialogues, args.seed), None)
    return _run(args, prepared, tokenizer, train, evaluation, DataCollatorForTokenClassification(tokenizer),
                {"masking": args.masking})
