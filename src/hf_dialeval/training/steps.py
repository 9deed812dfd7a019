"""The steps every ``hf-dialeval train`` function repeats, written once: open the run (:func:`open_run`), start from
a new or a continued model (:func:`starting_model`), copy options into a
model's config (:func:`config_fields`), and train and write the run (:func:`train_and_finish`, with the callbacks of
the :func:`training_callbacks` block it runs in)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peft import PeftModel
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainerCallback, set_seed

from hf_dialeval.freed_memory import return_freed_memory
from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.model_preparation import prepare_continued_model, prepare_model
from hf_dialeval.training.run_writing import finish_run

_CALLBACKS: ContextVar[tuple[TrainerCallback, ...]] = ContextVar("hf_dialeval_training_callbacks", default=())


def open_run(args: DialEvalTrainingArguments) -> None:
    """Fail before anything loads when the run cannot start (:meth:`~.options.DialEvalTrainingOptions.check_before_training`),
    then give freed memory back to the system as it trains (:func:`~hf_dialeval.freed_memory.return_freed_memory`)
    and seed every random generator with ``args.seed``."""
    args.check_before_training()
    return_freed_memory()
    set_seed(args.seed)


@dataclass
class StartingModel:
    """The model a run starts from, as built or loaded, with its tokenizer and the checkpoint it continues
    (``None``: a new model)."""

    model: DialEvalPreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    checkpoint: str | None = None

    def prepare(self, args: DialEvalTrainingArguments) -> tuple[PreTrainedModel | PeftModel, PreTrainedModel | None]:
        """The model to train and the base to factor against: a continued model as
        :func:`~.model_preparation.prepare_continued_model` prepares it (its adapter keeps training), a new one as
        :func:`~.model_preparation.prepare_model` does."""
        if self.checkpoint is not None:
            return prepare_continued_model(self.model, self.checkpoint, args)
        return prepare_model(self.model, args)


def starting_model(checkpoint: str | None,
                   load: Callable[[str], tuple[DialEvalPreTrainedModel, PreTrainedTokenizerBase]], backbone: str,
                   new: Callable[[PreTrainedTokenizerBase], DialEvalPreTrainedModel]) -> StartingModel:
    """The model of ``checkpoint`` and its tokenizer, as ``load`` gives them; or, with no checkpoint, ``new`` built
    for ``backbone``'s tokenizer (which ``new`` may change: a pad token, an added special token)."""
    if checkpoint is not None:
        return StartingModel(*load(checkpoint), checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
    return StartingModel(new(tokenizer), tokenizer)


def config_fields(options: object, names: Iterable[str]) -> dict[str, Any]:
    """The options ``names`` of ``options`` by name: the fields of a model's config that a run sets from its
    options (as a new config's arguments, or a continued config's update)."""
    return {name: getattr(options, name) for name in names}


@contextlib.contextmanager
def training_callbacks(*callbacks: TrainerCallback) -> Iterator[None]:
    """Within the block, :func:`train_and_finish` adds ``callbacks`` to the trainer it trains: how a caller of a train
    function (``hf-dialeval adapt``, timing each stage) reaches the Trainer the function builds."""
    token = _CALLBACKS.set((*_CALLBACKS.get(), *callbacks))
    try:
        yield
    finally:
        _CALLBACKS.reset(token)


def train_and_finish(trainer: Trainer, tokenizer: PreTrainedTokenizerBase | None, base: PreTrainedModel | None = None,
                     record: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None, *,
                     train: bool = True) -> Path:
    """Train (resuming from ``resume_from_checkpoint`` when the arguments give one; ``train=False``: the model as it
    is, untrained), write the run (:func:`~.run_writing.finish_run`) and return its folder. ``record`` joins the
    training record; a callable is called once trained, before the run is written, for what only the trained model
    tells (it gives the record)."""
    if train:
        for callback in _CALLBACKS.get():
            trainer.add_callback(callback)
        trainer.train(resume_from_checkpoint=trainer.args.resume_from_checkpoint)
    finish_run(trainer, tokenizer, base, record=record() if callable(record) else record)
    return Path(trainer.args.output_dir)
