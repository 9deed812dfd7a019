"""Which part of FineD-Eval's coherence logit wins, and which loses, the checklist's dialogue-level pairs?

The coherence logit is a sum: the score head over the pooled dialogue encoding, the adjacency head over the
histogram of consecutive utterances' cosines, and the adjacency MLP's mean over those pairs (the parts the
checkpoint has). Each part, and each sum of parts, is scored on the checklist's pairs of ``--corpus`` (200 per
perturbation, seed ``--seed``) as the checklist scores the whole model: the share of pairs the original wins, ties
half; beside it, the mean and the spread of the part's original-minus-perturbed difference.

    python benchmarks/fined_eval/diagnostics/coherence_logit_parts.py --data-dir ../shared/data \
        --perturbations shuffle random

Writes ``--output`` (default ``results/coherence_logit_parts-<corpus>-<seed>.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
import torch

from hf_dialeval import load_metric
from hf_dialeval.evaluation.checklist import PERTURBATIONS, build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.metrics.fined_eval import encode_dialogues
from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric
from hf_dialeval.modeling.base import encoder_inputs, masked_mean_pool, run_head
from hf_dialeval.inference.model_metric import padded_batches

RESULTS = Path(__file__).resolve().parent / "results"


@torch.inference_mode()
def logit_parts(metric: FineDEvalMetric, dialogues: list[list[str]], dimension: str = "coherence",
                batch_size: int = 32) -> dict[str, np.ndarray]:
    """Per dialogue, each part of ``dimension``'s logit (``score``, ``adjacency_head``, ``adjacency_mlp``: those
    the model has), in the dialogues' order; dialogues are encoded as the metric encodes them."""
    model, tokenizer = metric.models[0], metric.tokenizers[0]
    config = model.config
    column = config.dimensions.index(dimension)
    encoded = encode_dialogues(tokenizer, dialogues, config.utterance_token_id, config.max_seq_length,
                               config.long_dialogue, config.window_overlap)
    if len(encoded.input_ids) != len(dialogues):
        raise ValueError("a dialogue was scored in windows: use a truncating long_dialogue mode")
    parts: dict[str, list[torch.Tensor]] = {"score": []}
    order: list[int] = []
    for indices, batch in padded_batches({"input_ids": encoded.input_ids}, batch_size, metric.collators[0]):
        inputs = encoder_inputs(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))
        pooled = masked_mean_pool(model.encoder(**inputs).last_hidden_state, inputs["attention_mask"])
        parts["score"].append(run_head(model.score_heads, pooled)[:, column])
        adjacency = model.adjacency_logit_parts(batch["input_ids"], inputs["attention_mask"])
        for name, logits in adjacency.items():
            parts.setdefault(name, []).append(logits[:, column])
        order += indices
    restore = np.argsort(order)
    return {name: torch.cat(values).float().numpy()[restore] for name, values in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None, help="FineD-Eval checkpoint (default: the shipped one)")
    parser.add_argument("--corpus", default="dailydialog")
    parser.add_argument("--split", default=None, help="the corpus split (default: the checklist's held-out one)")
    parser.add_argument("--perturbations", nargs="+", default=["shuffle", "random"], choices=sorted(PERTURBATIONS))
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None, help="the results file (JSON)")
    args = parser.parse_args()
    path = args.output or RESULTS / f"coherence_logit_parts-{args.corpus}-{args.split or 'test'}-{args.seed}.json"
    metric = load_metric("fined-eval", checkpoint=args.checkpoint)
    dialogues = load_checklist_corpus(args.corpus, args.data_dir, args.split)
    record: dict = {"arguments": {**vars(args), "output": str(path)}, "perturbations": {}}
    for name in args.perturbations:
        pairs = build_pairs(PERTURBATIONS[name], dialogues, "dialogue", args.pairs, args.seed)
        original, perturbed = logit_parts(metric, pairs.originals), logit_parts(metric, pairs.perturbed)
        row = {}
        for size in range(1, len(original) + 1):
            for combination in itertools.combinations(original, size):
                difference = sum(original[part] - perturbed[part] for part in combination)
                row[" + ".join(combination)] = {
                    "win_rate": win_rate(difference, np.zeros_like(difference), args.seed)["win_rate"],
                    "mean_difference": float(np.mean(difference)), "std_difference": float(np.std(difference))}
        record["perturbations"][name] = row
        print(f"{name} ({len(pairs.originals)} pairs):")
        for parts, values in row.items():
            print(f"  {parts:45s} win {values['win_rate']:.3f}  difference {values['mean_difference']:+.3f} "
                  f"± {values['std_difference']:.3f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
