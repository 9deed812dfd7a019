"""Ending a run in the one layout every metric shares (:mod:`hf_dialeval.training.options`): :func:`finish_run`
averages the last checkpoints and evaluates the final model, :func:`write_run` writes the merged model, ``adapter/``,
``full/`` and ``training_record.json``."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from peft import PeftModel
from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from hf_dialeval.modeling.backbones import lora_target_pattern
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.checkpoint_averaging import average_checkpoints, last_checkpoints
from hf_dialeval.training.lora import factor_into_adapter, save_adapter
from hf_dialeval.training.options import ADAPTER_DIR, FULL_MODEL_DIR, TRAINING_RECORD

logger = logging.getLogger(__name__)


def finish_run(trainer: Trainer, tokenizer: PreTrainedTokenizerBase | None, base: PreTrainedModel | None = None,
               record: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """End a run in the layout of :mod:`~hf_dialeval.training.options`: average the last checkpoints
    (``average_last``), evaluate the final model, write the merged model, ``adapter/`` (a trained LoRA adapter,
    or the weight changes factored against ``base`` at ``adapter_rank``), ``full/``, and
    ``training_record.json`` (the arguments, the validation metrics, the logs and ``record``), then remove the
    checkpoints unless ``keep_checkpoints``. Returns the record."""
    args: DialEvalTrainingArguments = trainer.args
    output_dir = Path(args.output_dir)
    trained = trainer.model
    model = trained.get_base_model() if isinstance(trained, PeftModel) else trained
    if args.average_last:
        average_checkpoints(model, last_checkpoints(output_dir, args.average_last))
    validation = trainer.evaluate() if trainer.eval_dataset is not None else {}  # every process: a collective
    best = {"path": trainer.state.best_model_checkpoint, "metric": trainer.state.best_metric}
    full_record = {"arguments": args.to_dict(), "validation": validation, "best_checkpoint": best,
                   "log_history": trainer.state.log_history, **(record or {})}
    if trainer.is_world_process_zero():  # one writer of the run folder under torchrun / accelerate launch
        write_run(args, model, trained, tokenizer, base, full_record)
    trainer.accelerator.wait_for_everyone()
    logger.info("run written to %s; validation of the final model: %s", output_dir, validation)
    return full_record


def write_run(args: DialEvalTrainingArguments, model: PreTrainedModel, trained: PreTrainedModel,
              tokenizer: PreTrainedTokenizerBase | None, base: PreTrainedModel | None, record: Mapping[str, Any]) -> None:
    """Write the run layout (see :func:`finish_run`): ``full/`` and the factored adapter when ``base`` is given,
    ``adapter/`` for a peft model, the merged model, ``training_record.json``; then remove the checkpoints unless
    ``keep_checkpoints``."""
    output_dir = Path(args.output_dir)
    if base is not None:
        model.save_pretrained(str(output_dir / FULL_MODEL_DIR))
        tokenizer.save_pretrained(str(output_dir / FULL_MODEL_DIR))
        trained = factor_into_adapter(model, base, args.adapter_rank, lora_target_pattern(base),
                                      modules_to_save=model.head_names(), embedding_rows=model.added_token_ids())
    if isinstance(trained, PeftModel):
        save_adapter(trained, output_dir / ADAPTER_DIR)
        adapted = trained.get_base_model()
        adapted.config.architectures = [type(adapted).__name__]  # as save_pretrained records it: the Hub reads it
        adapted.config.save_pretrained(str(output_dir / ADAPTER_DIR))
        tokenizer.save_pretrained(str(output_dir / ADAPTER_DIR))
        model = trained.merge_and_unload()
    model.save_pretrained(str(output_dir))
    if tokenizer is not None:  # a model that reads no text (the panel reads its members' scores) has none
        tokenizer.save_pretrained(str(output_dir))
    # default=str: paths given as Path objects
    (output_dir / TRAINING_RECORD).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    if not args.keep_checkpoints:
        for checkpoint in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
            shutil.rmtree(checkpoint, ignore_errors=True)
