"""``hf-dialeval train dial-m-mlm`` and ``hf-dialeval train dial-m`` (options: :mod:`.options`): Dial-M's two
training stages, each a ``transformers.Trainer`` run in the layout every metric shares
(:mod:`hf_dialeval.training.options`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from transformers import (
    AutoConfig,
    DataCollatorForLanguageModeling,
    DataCollatorForTokenClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Trainer,
)

from hf_dialeval.data.dialogues import (
    VALIDATION_SHARE,
    dialogues_record,
    held_out_dialogues,
    is_shipped_corpus,
    load_dialogues,
)
from hf_dialeval.data.subsets import limited
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.metrics.dial_m.data import add_eou_token
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel
from hf_dialeval.metrics.dial_m.options import DialMMLMTrainingOptions, DialMTrainingOptions
from hf_dialeval.metrics.dial_m.training_data import (
    dialogue_turns,
    encode_causal_keyword_training,
    encode_keyword_masking,
    encode_lm_windows,
    encode_mlm_windows,
    held_out_texts,
    load_training_dialogues,
    own_training_dialogues,
)
from hf_dialeval.modeling.backbones import is_decoder_only
from hf_dialeval.modeling.loading import checkpoint_tokenizer
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import StartingModel, config_fields, open_run, starting_model, train_and_finish
from hf_dialeval.training.truncation import UTTERANCE_END, truncation_record

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


def build_dial_m(args: DialMMLMTrainingArguments | DialMTrainingArguments) -> StartingModel:
    """A Dial-M model and its tokenizer: a Dial-M checkpoint given as ``args.backbone`` (a stage-1 run, the shipped
    default) as it was trained (continued: its adapter, when it has one, keeps training), its settings kept but those
    the options give; or a new model around ``args.backbone``: a masked LM (or an encoder, given a fresh LM head), its
    tokenizer gaining ``args.eou_token``; or a causal LM. Either way the options left out are settled
    (:meth:`~.options._DialMOptions.settle`)."""
    names = tuple(args.NEW_MODEL_SETTINGS)

    def load(checkpoint: str) -> tuple[DialMModel, PreTrainedTokenizerBase]:
        model = DialMModel.from_pretrained(checkpoint)
        args.settle(model.config.to_dict())
        settings = config_fields(args, names)
        if model.config.lm_kind == "masked-lm":  # a masked LM reads the text as it is
            settings.pop("detokenize")
        model.config.update(settings)
        return model, ensure_pad_token(checkpoint_tokenizer(checkpoint, model.config))

    def new(tokenizer: PreTrainedTokenizerBase) -> DialMModel:
        args.settle()
        settings = config_fields(args, names)
        if is_decoder_only(args.backbone):  # this package's adaptation: the keywords predicted by a causal LM
            model = DialMModel.from_backbone(args.backbone, lm_kind="causal-lm", **settings)
            ensure_pad_token(tokenizer)
            return model
        settings.pop("detokenize")  # a masked LM reads the text as it is
        eou, added = add_eou_token(tokenizer, args.eou_token)
        return DialMModel.from_backbone(args.backbone, vocab_size=len(tokenizer), eou_token=args.eou_token,
                                        eou_token_id=eou, eou_token_added=added, **settings)

    checkpoint = args.backbone if _is_dial_m_checkpoint(args.backbone) else None
    return starting_model(checkpoint, load, args.backbone, new)


@dataclass
class TrainingDialogues:
    """What a run reads: the dialogues it trains on and those its validation loss is on (``None``: none), each a row
    of a dialogue and per utterance its condition (:func:`~.data.load_training_dialogues`), and what the training
    record says of them."""

    train: datasets.Dataset
    validation: datasets.Dataset | None
    record: dict[str, Any]


def corpus_dialogues(args: DialMMLMTrainingArguments | DialMTrainingArguments) -> TrainingDialogues:
    """The dialogues of ``args.corpora`` (train), and ``args.eval_dialogues`` of DailyDialog validation's."""
    validation = None
    if args.eval_dialogues:
        validation = _subset(load_training_dialogues(["dailydialog"], "validation", args.data_dir),
                             args.eval_dialogues, args.seed)
    return TrainingDialogues(load_training_dialogues(args.corpora, "train", args.data_dir), validation,
                             {"corpora": args.corpora})


def own_dialogues(args: DialMMLMTrainingArguments | DialMTrainingArguments) -> TrainingDialogues:
    """The dialogues of ``args.dialogues``, each utterance with its dialogue's condition, with
    :data:`~hf_dialeval.data.dialogues.VALIDATION_SHARE` of them (at least one, at most ``args.eval_dialogues``) held out to validate on, none with
    ``--eval-dialogues 0``. A shipped corpus leaves out the held-out benchmarks' texts, as ``--corpora`` does."""
    dialogues = load_dialogues(args.dialogues, args.columns(), args.dialogues_split, args.data_dir)
    trained_on, held = dialogues, None
    if args.eval_dialogues:
        if len(set(map(tuple, dialogues["dialogue"]))) < 2:
            raise OptionError(f"--dialogues {args.dialogues} holds one dialogue (or one repeated), and validating "
                              "needs another held out: give more dialogues, or --eval-dialogues 0")
        count = min(args.eval_dialogues, max(1, round(VALIDATION_SHARE * len(dialogues))))
        trained_on, held = held_out_dialogues(dialogues, count / len(dialogues), args.seed)
    left_out = held_out_texts(args.data_dir) if is_shipped_corpus(args.dialogues) else frozenset()
    return TrainingDialogues(
        own_training_dialogues(trained_on, left_out), None if held is None else own_training_dialogues(held, left_out),
        dialogues_record(args.dialogues, dialogues, held))


def _layout(model: DialMModel, tokenizer: PreTrainedTokenizerBase) -> Layout:
    return Layout.of(tokenizer, "speaker-tags", model.config.detokenize)


def _subset(dataset: datasets.Dataset, count: int | None, seed: int) -> datasets.Dataset:
    return limited(dataset.shuffle(seed=seed), count)


def _run(args: DialEvalTrainingArguments, prepared: Prepared, tokenizer: PreTrainedTokenizerBase,
         train: datasets.Dataset, evaluation: datasets.Dataset | None, collator, record: dict) -> Path:
    trained, base = prepared
    trainer = Trainer(model=trained, args=args, train_dataset=train, eval_dataset=evaluation, data_collator=collator)
    return train_and_finish(trainer, tokenizer, base, record={"train_inputs": len(train), **record})


@owns_output_dir
def train_dial_m_mlm(args: DialMMLMTrainingArguments) -> Path:
    """Stage 1: MLM on windows of dialogue utterances joined by ``<eou>`` (no conditions); on a causal LM, causal-LM
    training on windows of speaker-tagged transcripts. The dialogues are ``args.dialogues`` (:func:`own_dialogues`)
    or else ``args.corpora``'s (:func:`corpus_dialogues`)."""
    open_run(args)
    own = own_dialogues(args) if args.dialogues is not None else None  # the user's data fails before a model loads
    start = build_dial_m(args)
    model, tokenizer = start.model, start.tokenizer
    prepared = start.prepare(args)  # before the corpora are read: a refused setting fails at once
    data = own or corpus_dialogues(args)
    causal = model.config.lm_kind == "causal-lm"

    def encode(dialogues: datasets.Dataset) -> datasets.Dataset:
        if causal:
            return encode_lm_windows(tokenizer, dialogues, _layout(model, tokenizer), args.max_seq_length)
        return encode_mlm_windows(tokenizer, dialogues, model.config.eou_token_id, args.max_seq_length)

    evaluation = None if data.validation is None else encode(data.validation).remove_columns("truncated")
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=not causal, mlm_probability=args.mlm_probability,
                                               seed=args.seed)
    train = _subset(encode(data.train), args.max_train_items, args.seed)
    # a window cuts only an utterance longer than a window by itself, at its end
    record = {"objective": "causal-lm"} if causal else {"mlm_probability": args.mlm_probability}
    record["truncated"] = truncation_record(train, args.max_seq_length, UTTERANCE_END)
    return _run(args, prepared, tokenizer, train.remove_columns("truncated"), evaluation, collator,
                {**data.record, **record})


@owns_output_dir
def train_dial_m(args: DialMTrainingArguments) -> Path:
    """Stage 2: keyword-masking fine-tuning of a stage-1 run (or of a plain masked LM); on a causal LM, learning to
    predict each response's keywords from everything before them. The utterances are those of ``args.dialogues``
    (:func:`own_dialogues`), each with its dialogue's condition, or else ``args.corpora``'s
    (:func:`corpus_dialogues`)."""
    open_run(args)
    own = own_dialogues(args) if args.dialogues is not None else None  # the user's data fails before a model loads
    start = build_dial_m(args)
    model, tokenizer = start.model, start.tokenizer
    prepared = start.prepare(args)  # before the corpora are read: a refused setting fails at once
    data = own or corpus_dialogues(args)
    config = model.config

    def encode(dialogues: datasets.Dataset, count: int | None) -> datasets.Dataset:
        turns = _subset(dialogue_turns(dialogues), count, args.seed)
        if config.lm_kind == "causal-lm":
            return encode_causal_keyword_training(tokenizer, turns, _layout(model, tokenizer), config.max_seq_length,
                                                  config.max_keywords, config.keyword_pos_tags, args.masking,
                                                  args.seed)
        return encode_keyword_masking(tokenizer, turns, config.eou_token_id, config.max_seq_length,
                                      config.max_keywords, config.keyword_pos_tags, args.masking, args.seed)

    evaluation = None if data.validation is None else encode(data.validation, None)
    return _run(args, prepared, tokenizer, encode(data.train, args.max_train_items), evaluation,
                DataCollatorForTokenClassification(tokenizer), {**data.record, "masking": args.masking})
