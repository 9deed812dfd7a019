"""``hf-dialeval train fined-eval-adjacency-encoder`` and ``fined-eval-pair-encoder`` (options:
:mod:`.reader_options`): train the two readers of consecutive utterances of :mod:`.readers` on DailyDialog train, each
evaluation ranking the checklist's DailyDialog pairs, and write the reader and ``training_record.json`` to the
output folder."""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.evaluation.checklist import PerturbationPairs, pairs_by_split, win_rate
from hf_dialeval.metrics.fined_eval.reader_options import AdjacencyEncoderOptions, PairEncoderOptions
from hf_dialeval.metrics.fined_eval.readers import (
    MAX_UTTERANCES,
    PairReader,
    SentenceReader,
    candidate_batch,
    next_utterance_loss,
    train_reader,
)
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.model_preparation import train_layers_only
from hf_dialeval.training.options import TRAINING_RECORD
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run


@dataclass
class AdjacencyEncoderArguments(AdjacencyEncoderOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of ``fined-eval-adjacency-encoder``: :class:`~.reader_options.AdjacencyEncoderOptions`
    with every ``transformers.TrainingArguments`` field."""


@dataclass
class PairEncoderArguments(PairEncoderOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of ``fined-eval-pair-encoder``: :class:`~.reader_options.PairEncoderOptions` with every
    ``transformers.TrainingArguments`` field."""


def training_dialogues(data_dir: str | None) -> list[list[str]]:
    """DailyDialog train's dialogues of three utterances or more, each cut to its first :data:`MAX_UTTERANCES`."""
    return [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", data_dir)["dialogue"] if len(d) >= 3]


def checklist_win_rates(reader: SentenceReader | PairReader,
                        checklist: dict[str, dict[str, PerturbationPairs]]) -> dict[str, float]:
    """The share of each split's pairs (``split/perturbation``) whose original dialogue ``reader`` scores higher."""
    return {f"{split}/{name}": win_rate(reader.dialogue_scores(pairs.originals),
                                        reader.dialogue_scores(pairs.perturbed))["win_rate"]
            for split, per in checklist.items() for name, pairs in per.items()}


def write_reader(reader: SentenceReader | PairReader, args: DialEvalTrainingArguments, record: dict[str, Any]) -> Path:
    """The reader and ``training_record.json`` (the arguments and ``record``) in ``args.output_dir`` (the run's own
    folder, swapped in whole: :func:`~hf_dialeval.training.run_folder.owns_output_dir`)."""
    output_dir = Path(args.output_dir)
    reader.save(output_dir)
    (output_dir / TRAINING_RECORD).write_text(json.dumps({"arguments": args.to_dict(), **record}, indent=2) + "\n",
                                              encoding="utf-8")
    return output_dir


@owns_output_dir
def train_adjacency_encoder(args: AdjacencyEncoderArguments) -> Path:
    """Fine-tune the adjacency encoder (:class:`~.readers.SentenceReader`) for ``args.max_steps`` steps of in-batch
    next-utterance cross-entropy; returns the output folder."""
    open_run(args)
    reader = SentenceReader(args.backbone)
    train = training_dialogues(args.data_dir)
    checklist = pairs_by_split("dailydialog", args.data_dir, ("shuffle", "random"), count=args.eval_pairs)

    train_layers_only(reader.model)
    trainable = [parameter for parameter in reader.model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.learning_rate, weight_decay=0.0)
    rng = random.Random(args.seed)

    def step_loss() -> torch.Tensor:
        batch = rng.sample(train, args.per_device_train_batch_size)
        texts = [u for d in batch for u in d]
        owner = [row for row, d in enumerate(batch) for _ in d]
        return next_utterance_loss(reader(texts), owner, args.scale)

    record = train_reader(reader.model, step_loss, optimizer, args.max_steps, args.eval_steps,
                          functools.partial(checklist_win_rates, reader, checklist), "adjacency encoder")
    return write_reader(reader, args, record)


@owns_output_dir
def train_pair_encoder(args: PairEncoderArguments) -> Path:
    """Train the pair cross-encoder (:class:`~.readers.PairReader`) for ``args.max_steps`` steps of listwise
    cross-entropy picking each true next utterance; returns the output folder."""
    open_run(args)  # the seed: the new pair layer's initialisation
    reader = PairReader(args.backbone)
    train = training_dialogues(args.data_dir)
    perturbations = ("shuffle", "random", "echo", "repeat") if args.echo else ("shuffle", "random")
    checklist = pairs_by_split("dailydialog", args.data_dir, perturbations, test_seeds=(0, 1, 2), count=args.eval_pairs)

    train_layers_only(reader.encoder)
    layers = [parameter for parameter in reader.encoder.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW([{"params": layers, "lr": args.learning_rate},
                                   {"params": reader.head.parameters(), "lr": args.head_learning_rate}],
                                  weight_decay=0.0)
    rng = random.Random(args.seed)
    dialogues = args.per_device_train_batch_size

    def step_loss() -> torch.Tensor:
        previous, candidates = candidate_batch(rng.sample(train, dialogues), train, args.negatives, rng, args.echo)
        logits = reader(previous, candidates).view(dialogues, -1)
        return F.cross_entropy(logits, torch.zeros(dialogues, dtype=torch.long))

    record = train_reader(reader, step_loss, optimizer, args.max_steps, args.eval_steps,
                          functools.partial(checklist_win_rates, reader, checklist), "pair encoder")
    return write_reader(reader, args, record)
