"""Make a run of ``hf-dialeval train holistic-eval`` the shipped default: fit the cutoffs for ``--token-reduction``
on the same DailyDialog validation pairs the train command fits on, and write the smallest folder that reloads the
model exactly — the run's adapter (with the config holding the new cutoffs) when it trained one, else the full model
in bfloat16 (the loader scores in float32) with its tokenizer. ``--scoring-dtype bf16`` makes bf16 autocast the
precision it scores in by default (where the CPU has bf16 instructions), once measured to change no benchmark's
Spearman by more than 0.01; the cutoffs are then fitted in it.

    python benchmarks/holistic_eval/ship_default.py --run runs/he-smollm2-gpu --token-reduction mean \\
        --scoring-dtype bf16 --context-coherence-measure pmi --max-seq-length 256 --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import torch

from hf_dialeval.metrics.holistic_eval import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.holistic_eval.scoring import fit_dailydialog_cutoffs
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.options import ADAPTER_DIR

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="run folder of hf-dialeval train holistic-eval")
    parser.add_argument("--token-reduction", choices=("mean", "sum"), required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cutoff-pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--scoring-dtype", choices=("fp32", "bf16"), default=None)
    parser.add_argument("--context-coherence-measure", choices=("likelihood", "pmi"), default="likelihood")
    parser.add_argument("--pmi-weight", type=float, default=1.0,
                        help="the pmi measure's weight of the response's own log-probability (1: the PMI)")
    parser.add_argument("--max-seq-length", type=int, default=None,
                        help="tokens per scoring input (default: the run's; a pretrained LM has room for more)")
    parser.add_argument("--out", default=str(DEFAULT_CHECKPOINT))
    args = parser.parse_args()

    run, out = Path(args.run), Path(args.out)
    adapter = run / ADAPTER_DIR
    has_adapter = (adapter / ADAPTER_FILES[0]).is_file()
    # from the adapter as it is stored (float16), so that the cutoffs are those of the model that ships
    model, tokenizer = load_checkpoint("holistic-eval", adapter if has_adapter else run)
    model.config.token_reduction = args.token_reduction
    model.config.scoring_dtype = args.scoring_dtype
    model.config.context_coherence_measure = args.context_coherence_measure
    model.config.pmi_weight = args.pmi_weight
    if args.max_seq_length is not None:
        model.config.max_seq_length = args.max_seq_length
    cutoffs = fit_dailydialog_cutoffs(model, tokenizer, pairs=args.cutoff_pairs, seed=args.seed, data_dir=args.data_dir)
    print("cutoffs", cutoffs)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if has_adapter:
        for name in ADAPTER_FILES:
            shutil.copy(adapter / name, out / name)
        model.config.save_pretrained(str(out))  # the tokenizer is the backbone's
    else:
        model.to(torch.bfloat16).save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
    for path in sorted(out.iterdir()):
        print(f"{path.stat().st_size:>10} {path}")
    print(f"{sum(p.stat().st_size for p in out.iterdir()):>10} bytes in all")


if __name__ == "__main__":
    main()
