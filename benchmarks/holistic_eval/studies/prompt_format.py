"""Chooses HolisticEval's input layout for a pretrained LM on DailyDialog validation data (never on a benchmark): the
per-word perplexity of each response given its query (the quantity context coherence reads), for every
``prompt_format`` with and without detokenisation, with the LM as it is (no fine-tuning).

    python benchmarks/holistic_eval/studies/prompt_format.py --data-dir ../shared/data \\
        --backbone HuggingFaceTB/SmolLM2-135M-Instruct

Prints one line per layout and writes ``results/prompt_format-<backbone>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from transformers import AutoTokenizer

from hf_dialeval.data.transcripts import PROMPT_FORMATS, ensure_pad_token
from hf_dialeval.metrics.holistic_eval.data import dailydialog_pairs
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel
from hf_dialeval.metrics.holistic_eval.scoring import language_model_perplexity
from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--backbone", required=True, help="a causal LM (Hub id or folder)")
    parser.add_argument("--pairs", type=int, default=500, help="DailyDialog validation pairs")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    pairs = dailydialog_pairs("validation", args.pairs, args.seed, args.data_dir)
    tokenizer = ensure_pad_token(AutoTokenizer.from_pretrained(resolve_backbone_path(args.backbone)))
    model = HolisticEvalModel.from_backbone(args.backbone).eval()
    results = {}
    for prompt_format in PROMPT_FORMATS:
        for detokenize in (False, True):
            model.config.update({"prompt_format": prompt_format, "detokenize": detokenize})
            start = time.perf_counter()
            result = language_model_perplexity(model, tokenizer, pairs["context"], pairs["response"], batch_size=16,
                                               dtype=args.dtype)
            name = f"{prompt_format}{' detokenized' if detokenize else ''}"
            results[name] = {**result, "seconds": time.perf_counter() - start}
            print(f"{name}: word perplexity {result['word_perplexity']:.1f} ({result['sequences']} responses, "
                  f"{results[name]['seconds']:.0f} s)", flush=True)
    chosen = min(results, key=lambda name: results[name]["word_perplexity"])
    print(f"chosen: {chosen}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"prompt_format-{args.backbone.rstrip('/').split('/')[-1]}.json"
    out.write_text(json.dumps({"backbone": args.backbone, "split": "dailydialog validation", "pairs": len(pairs),
                               "seed": args.seed, "dtype": args.dtype, "results": results, "chosen": chosen},
                              indent=2) + "\n")


if __name__ == "__main__":
    main()
