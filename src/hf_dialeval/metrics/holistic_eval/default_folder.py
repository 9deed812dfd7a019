"""``hf-dialeval train holistic-eval-default`` (options: :mod:`.default_options`): a run of ``hf-dialeval train
holistic-eval`` made the folder that ships, with its cutoffs refitted for the scoring settings it ships with."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from hf_dialeval.metrics.holistic_eval.default_options import HolisticEvalDefaultOptions
from hf_dialeval.metrics.holistic_eval.scoring import fit_dailydialog_cutoffs
from hf_dialeval.modeling.checkpoints import ADAPTER_CONFIG, ADAPTER_WEIGHTS
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.options import ADAPTER_DIR
from hf_dialeval.training.run_folder import owns_output_dir
from hf_dialeval.training.steps import open_run


@dataclass
class HolisticEvalDefaultArguments(HolisticEvalDefaultOptions, DialEvalTrainingArguments):
    """``TrainingArguments`` of ``holistic-eval-default``: :class:`~.default_options.HolisticEvalDefaultOptions` with
    every ``transformers.TrainingArguments`` field."""


@owns_output_dir
def write_default_folder(args: HolisticEvalDefaultArguments) -> Path:
    """Refit the cutoffs of the run ``args.run`` for the scoring settings of ``args`` and write the folder that ships
    (the adapter and config, or the bfloat16 model and tokenizer) as ``args.output_dir``; returns it."""
    open_run(args)
    run = Path(args.run)
    adapter = run / ADAPTER_DIR
    has_adapter = (adapter / ADAPTER_CONFIG).is_file()
    # from the adapter as it is stored (float16), so that the cutoffs are those of the model that ships
    model, tokenizer = load_checkpoint("holistic-eval", adapter if has_adapter else run)
    model.config.token_reduction = args.token_reduction
    model.config.scoring_dtype = args.scoring_dtype
    model.config.context_coherence_measure = args.context_coherence_measure
    model.config.pmi_weight = args.pmi_weight
    model.config.copy_span = args.copy_span
    if args.max_seq_length is not None:
        model.config.max_seq_length = args.max_seq_length
    cutoffs = fit_dailydialog_cutoffs(model, tokenizer, pairs=args.cutoff_pairs, seed=args.seed, data_dir=args.data_dir)
    print("cutoffs", cutoffs)
    output_dir = Path(args.output_dir)
    if has_adapter:
        for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
            shutil.copy(adapter / name, output_dir / name)
        model.config.save_pretrained(str(output_dir))  # the tokenizer is the backbone's
    else:
        model.to(torch.bfloat16).save_pretrained(str(output_dir))
        tokenizer.save_pretrained(str(output_dir))
    files = sorted(output_dir.iterdir())
    for path in files:
        print(f"{path.stat().st_size:>10} {path}")
    print(f"{sum(path.stat().st_size for path in files):>10} bytes in all")
    return output_dir
