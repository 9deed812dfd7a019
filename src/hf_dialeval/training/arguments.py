"""The ``TrainingArguments`` every metric's training shares: :class:`DialEvalTrainingArguments` (``TrainingArguments``
with the LoRA, adapter-rank and averaging knobs of :class:`~.options.DialEvalTrainingOptions`), how a train command's
arguments are built from its options (:func:`training_arguments`, :func:`parse_training_flags`: ``hf-dialeval train``
and ``adapt`` alike), and what a Trainer whose collator reads the examples' own columns needs of them
(:func:`require_collator_columns`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformers import HfArgumentParser, Trainer, TrainingArguments

from hf_dialeval.errors import DialEvalError, OptionError, one_line
from hf_dialeval.training.options import DialEvalTrainingOptions


@dataclass
class DialEvalTrainingArguments(DialEvalTrainingOptions, TrainingArguments):
    """``TrainingArguments`` with the knobs every metric's training shares (:class:`DialEvalTrainingOptions`);
    each train command's arguments subclass it with the metric's own options."""

    def __post_init__(self) -> None:
        lora_rank = getattr(self, "lora_rank", 0)  # the LoRA options of BackboneTrainingOptions, when present
        if lora_rank and self.adapter_rank:
            raise OptionError("--adapter-rank factors a full fine-tuning: give it with --lora-rank 0")
        if lora_rank and getattr(self, "freeze_encoder", False):
            raise OptionError("--freeze-encoder trains the head alone: give --lora-rank 0")
        if lora_rank and self.average_last:
            raise OptionError("--average-last averages full-model checkpoints: give it with --lora-rank 0")
        if lora_rank and self.lora_alpha is None:
            self.lora_alpha = 2 * lora_rank
        if self.average_last:  # the average replaces the final model: loading the best one first is wasted
            self.load_best_model_at_end = False
        if self.save_steps is None:
            self.save_steps = self.eval_steps or 500
        if self.save_total_limit is None and not self.keep_checkpoints:
            # the best checkpoint is kept besides the last one(s)
            self.save_total_limit = max(2, self.average_last + 1)
        super().__post_init__()

    def get_warmup_steps(self, num_training_steps: int) -> int:
        """The warm-up, at most half the steps: a warm-up over every step would train the whole run at a learning
        rate near 0 (one step: exactly 0, and nothing learnt)."""
        return min(super().get_warmup_steps(num_training_steps), num_training_steps // 2)


def training_arguments(arguments_class: type[DialEvalTrainingArguments], values: Mapping[str, Any]
                       ) -> DialEvalTrainingArguments:
    """A train command's arguments (``arguments_class``) from its parsed options ``values`` (other keys ignored);
    what ``TrainingArguments`` objects to in them (strategies that conflict, say) is the user's, in one line."""
    names = {field.name for field in dataclasses.fields(arguments_class) if field.init}
    try:
        return arguments_class(**{key: value for key, value in values.items() if key in names})
    except DialEvalError:
        raise
    except ValueError as error:  # TrainingArguments' own checks of the options given
        raise OptionError(one_line(error)) from error


def parse_training_flags(arguments_class: type[DialEvalTrainingArguments], flags: Sequence[str], command: str
                         ) -> DialEvalTrainingArguments:
    """A train command's arguments from its command-line ``flags``, parsed as ``hf-dialeval train COMMAND`` parses
    them; a flag the command does not take is refused, naming it."""
    parsed, unknown = HfArgumentParser(arguments_class).parse_known_args(list(flags))
    if unknown:
        raise OptionError(f"hf-dialeval train {command} takes no {' '.join(unknown)}: see "
                          f"'hf-dialeval train {command} --help' for its options")
    try:
        return training_arguments(arguments_class, vars(parsed))
    except OptionError as error:  # an objection to the options the command was given: say which command
        raise OptionError(f"hf-dialeval train {command}: {error}") from error


def require_collator_columns(trainer: Trainer) -> None:
    """Stop a Trainer whose collator reads the examples' own columns (levels, candidates, reference scores) when
    ``TrainingArguments.remove_unused_columns`` would drop them before the collator sees them."""
    if trainer.args.remove_unused_columns:
        raise ValueError(f"{type(trainer).__name__} needs TrainingArguments(remove_unused_columns=False): its "
                         "collator reads the examples' own columns")
