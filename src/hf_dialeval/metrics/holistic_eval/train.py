"""``hf-dialeval train holistic-eval`` (its options: :mod:`.options`): fine-tune (or train from scratch) HolisticEval's
language model on query–response pairs (of the shipped corpora, or of the user's own dialogues), fit the percentile
cutoffs, measure test perplexity, and write the run layout every metric shares (:mod:`hf_dialeval.training.options`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from transformers import (
    AutoConfig,
    DataCollatorForSeq2Seq,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Trainer,
)

from hf_dialeval.data.dialogues import is_shipped_corpus
from hf_dialeval.data.subsets import limited
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.errors import OptionError
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.data import (
    dailydialog_pairs,
    dialogue_pairs,
    drawn_pairs,
    encode_training_pairs,
    held_out_texts,
    load_lm_pairs,
    pair_dataset,
)
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel
from hf_dialeval.metrics.holistic_eval.options import CONFIG_OPTIONS, HolisticEvalTrainingOptions
from hf_dialeval.metrics.holistic_eval.pmi_weight import fit_pmi_weight
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, fit_pair_cutoffs, language_model_perplexity
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import config_fields, open_run, starting_model, train_and_finish
from hf_dialeval.training.truncation import OLDEST_CONTEXT_FIRST, truncation_record

#: The scratch tokenizer's special tokens: GPT-2's one boundary token (BOS, EOS and turn separator) and a pad.
SCRATCH_BOUNDARY, SCRATCH_PAD = "<|endoftext|>", "<pad>"


@dataclass
class HolisticEvalTrainingArguments(HolisticEvalTrainingOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of HolisticEval: :class:`~.options.HolisticEvalTrainingOptions` (what
    ``hf-dialeval train holistic-eval`` parses) with every ``transformers.TrainingArguments`` field."""

    def __post_init__(self) -> None:
        if self.init_from is not None and self.from_scratch:
            raise OptionError("--init-from continues a trained LM and --from-scratch starts a new one: give one of them")
        if self.from_scratch:  # every weight of a new model trains: nothing to adapt or factor
            self.lora_rank = 0
            if self.adapter_rank:
                raise OptionError("--adapter-rank factors the fine-tuning of a pretrained backbone: drop it with "
                                  "--from-scratch")
        if self.eval_pairs == 0:
            self.eval_strategy = "no"
        self.prediction_loss_only = True
        super().__post_init__()


def _pair_texts(pairs: datasets.Dataset) -> Iterator[str]:
    for row in pairs:
        yield from row["context"]
        yield row["response"]


def train_scratch_tokenizer(pairs: datasets.Dataset, vocab_size: int) -> PreTrainedTokenizerFast:
    """A GPT-2-style byte-level BPE tokenizer of ``vocab_size`` trained on the pairs' texts (a 30k-word output
    layer is most of a small LM's cost; its own smaller vocabulary fits the corpus)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[SCRATCH_BOUNDARY, SCRATCH_PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_pair_texts(pairs), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=SCRATCH_BOUNDARY, eos_token=SCRATCH_BOUNDARY,
                                   unk_token=SCRATCH_BOUNDARY, pad_token=SCRATCH_PAD, model_max_length=1024)


def scratch_model(tokenizer: PreTrainedTokenizerBase, args: HolisticEvalTrainingArguments) -> HolisticEvalModel:
    """A new GPT-2 of the ``--scratch-*`` size for ``tokenizer`` (random weights, seeded by ``--seed``)."""
    backbone = AutoConfig.for_model(
        "gpt2", vocab_size=len(tokenizer), n_positions=args.max_seq_length, n_embd=args.scratch_hidden_size,
        n_layer=args.scratch_layers, n_head=args.scratch_heads, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return HolisticEvalModel(HolisticEvalConfig(backbone_config=backbone, **config_fields(args, CONFIG_OPTIONS)))


def backbone_model(tokenizer: PreTrainedTokenizerBase, args: HolisticEvalTrainingArguments) -> HolisticEvalModel:
    """A new model on the pretrained LM ``args.backbone``, whose ``tokenizer`` gains a pad token if it has none."""
    ensure_pad_token(tokenizer)
    return HolisticEvalModel.from_backbone(args.backbone, **config_fields(args, CONFIG_OPTIONS))


def check_token_limit(model: HolisticEvalModel, max_seq_length: int, source: str) -> None:
    """A one-line error when ``--max-seq-length`` exceeds the positions of the LM from ``source`` (not an index
    error inside its position embedding at the first long batch)."""
    backbone = model.config.backbone_config
    positions = getattr(backbone, "n_positions", None) or getattr(backbone, "max_position_embeddings", None)
    if positions is not None and max_seq_length > positions:
        raise OptionError(f"--max-seq-length {max_seq_length} is more than the {positions} positions of {source}'s "
                          f"LM: give --max-seq-length {positions} or less")


@dataclass
class LMData:
    """What a run reads: the pairs it trains on, the pairs its validation loss and its cutoffs draw from
    (``--eval-pairs`` and ``--cutoff-pairs`` of them), what the latter are, and what the training record says of the
    data."""

    train: datasets.Dataset
    validation: datasets.Dataset | None  # None: no validation (--eval-pairs 0)
    reference: datasets.Dataset
    reference_source: str
    record: dict[str, Any]
    #: the held-out dialogues of ``--dialogues`` (the PMI weight is refitted on them), ``None`` for the corpora
    held_dialogues: list[list[str]] | None = None


def corpus_data(args: HolisticEvalTrainingArguments) -> LMData:
    """The pairs of ``args.corpora`` (``args.train_splits``); DailyDialog validation's to validate on and
    ``args.cutoff_split``'s for the cutoffs."""
    train = datasets.concatenate_datasets([load_lm_pairs(args.corpora, split, args.data_dir)
                                           for split in args.train_splits])
    validation = load_lm_pairs(["dailydialog"], "validation", args.data_dir) if args.eval_pairs else None
    return LMData(train, validation, load_lm_pairs(["dailydialog"], args.cutoff_split, args.data_dir),
                  f"dailydialog {args.cutoff_split}", {"corpora": args.corpora, "train_splits": args.train_splits})


def dialogue_data(args: HolisticEvalTrainingArguments) -> LMData:
    """The pairs of ``args.dialogues``: those of the dialogues trained on, and those of a held-out share of them
    (:func:`~hf_dialeval.data.dialogues.validation_split`) to validate on and fit the cutoffs on. A shipped corpus leaves out
    the held-out benchmarks' texts, as ``--corpora`` does."""
    kept, held, record = args.training_dialogues()
    left_out = held_out_texts(args.data_dir) if is_shipped_corpus(args.dialogues) else frozenset()
    reference = pair_dataset(dialogue_pairs(held["dialogue"]), left_out)
    return LMData(pair_dataset(dialogue_pairs(kept["dialogue"]), left_out), reference if args.eval_pairs else None,
                  reference, f"{args.dialogues}, {len(held)} held-out dialogues", record,
                  [list(dialogue) for dialogue in held["dialogue"]])


@owns_output_dir
def train_holistic_eval(args: HolisticEvalTrainingArguments) -> Path:
    """Train HolisticEval's LM (new from ``args.backbone``, from scratch, or continued from ``args.init_from``) on
    ``args.dialogues`` (:func:`dialogue_data`) or else ``args.corpora`` (:func:`corpus_data`), fit the cutoffs on the
    reference pairs of either, record the DailyDialog test perplexity, and write the run. With ``--dialogues`` and
    the PMI measure, a PMI weight the options leave out is refitted on the held-out dialogues first
    (:func:`~.pmi_weight.fit_pmi_weight`)."""
    open_run(args)
    data = dialogue_data(args) if args.dialogues is not None else corpus_data(args)
    refit_pmi_weight = data.held_dialogues is not None and args.pmi_weight is None  # before settle() fills it in
    pairs = limited(data.train.shuffle(seed=args.seed), args.max_train_items)
    if args.init_from is None:
        args.settle()
    if args.from_scratch:
        tokenizer = train_scratch_tokenizer(pairs, args.scratch_vocab_size)
        trained, base = scratch_model(tokenizer, args), None
    else:
        start = starting_model(args.init_from, functools.partial(load_checkpoint, "holistic-eval"), args.backbone,
                               lambda backbone_tokenizer: backbone_model(backbone_tokenizer, args))
        tokenizer = start.tokenizer
        if start.checkpoint is not None:  # the continued model keeps its settings but those the options give
            args.settle(start.model.config.to_dict())
            start.model.config.update(config_fields(args, CONFIG_OPTIONS))
        check_token_limit(start.model, args.max_seq_length, start.checkpoint or args.backbone)
        trained, base = start.prepare(args)
    layout = Layout.of_config(tokenizer, trained.config)
    eval_examples = None
    if data.validation is not None:
        eval_examples = encode_training_pairs(tokenizer, drawn_pairs(data.validation, args.eval_pairs, args.seed),
                                              args.max_seq_length, layout).remove_columns("truncated")
    train_examples = encode_training_pairs(tokenizer, pairs, args.max_seq_length, layout)
    truncated = truncation_record(train_examples, args.max_seq_length, OLDEST_CONTEXT_FIRST)
    trainer = Trainer(model=trained, args=args, train_dataset=train_examples.remove_columns("truncated"),
                      eval_dataset=eval_examples,
                      data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100))

    def trained_record() -> dict[str, Any]:
        """The record of the trained model: the refitted PMI weight, the cutoffs and the test perplexity."""
        model = trainer.model.get_base_model() if hasattr(trainer.model, "get_base_model") else trainer.model
        model.eval()
        refit = {}
        if refit_pmi_weight and model.config.context_coherence_measure == "pmi":
            metric = HolisticEvalMetric(model, tokenizer, device=str(model.device),
                                        batch_size=args.per_device_eval_batch_size)
            refit["pmi_weight_refit"] = fit_pmi_weight(metric, data.held_dialogues, seed=args.seed)
        cutoffs = fit_pair_cutoffs(model, tokenizer, data.reference, data.reference_source, args.cutoff_pairs,
                                   args.seed, args.percentile, batch_size=args.per_device_eval_batch_size)
        record = {"train_pairs": len(pairs), **data.record, **refit, "cutoffs": cutoffs, "truncated": truncated}
        if args.test_pairs != 0:
            test = dailydialog_pairs("test", args.test_pairs, args.seed, args.data_dir)
            record["dailydialog_test_pairs"] = len(test)
            record["dailydialog_test_perplexity"] = language_model_perplexity(
                model, tokenizer, test["context"], test["response"], batch_size=args.per_device_eval_batch_size)
        return record

    return train_and_finish(trainer, tokenizer, base, record=trained_record)
