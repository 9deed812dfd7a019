"""Step 4 of the shipped FineD-Eval's recipe: train its adjacency encoder (``hf_dialeval.metrics.fined_eval.readers``:
a sentence encoder fine-tuned to pick each utterance's neighbours), which ``hf-dialeval train fined-eval
--adjacency-encoder`` then adds to the model.

The encoder (default: the offline MiniLM) trains the linear maps of its Transformer layers on DailyDialog train: each
batch holds ``--dialogues`` dialogues (their first 12 utterances), every utterance encoded alone and mean-pooled, and
for every consecutive pair the cross-entropy of the scaled cosines picks the next utterance among the batch's others
and, backwards, the previous one. Before training and every ``--eval-steps`` steps the mean cosine of consecutive
utterances ranks the checklist's shuffle and random pairs of DailyDialog validation (what chooses the steps) and test
(200 each, seed 0). The shipped encoder is the one of model_cards/fined_eval.md's step 4:

    python benchmarks/fined_eval/recipes/adjacency_encoder.py --data-dir ../shared/data \\
        --output-dir runs/fe-adjacency-encoder --steps 1000

Writes the encoder and tokenizer to ``--output-dir`` and ``results/adjacency_encoder-<steps>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.evaluation.checklist import pairs_by_split, win_rate
from hf_dialeval.metrics.fined_eval.readers import MAX_UTTERANCES, SentenceReader, next_utterance_loss, train_reader
from hf_dialeval.training.run import train_layers_only

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--encoder", default=None, help="backbone id or path (default: the offline MiniLM)")
    parser.add_argument("--output-dir", required=True, help="where the fine-tuned encoder and tokenizer go")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-steps", type=int, default=200)
    parser.add_argument("--dialogues", type=int, default=32, help="dialogues per batch")
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--scale", type=float, default=20.0, help="cosine scale of the cross-entropy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    reader = SentenceReader(args.encoder)
    train = [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", args.data_dir)["dialogue"] if len(d) >= 3]
    checklist = pairs_by_split("dailydialog", args.data_dir, ("shuffle", "random"))

    train_layers_only(reader.model)
    trainable = [parameter for parameter in reader.model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.learning_rate, weight_decay=0.0)
    rng = random.Random(args.seed)

    def step_loss() -> torch.Tensor:
        batch = rng.sample(train, args.dialogues)
        texts = [u for d in batch for u in d]
        owner = [row for row, d in enumerate(batch) for _ in d]
        return next_utterance_loss(reader(texts), owner, args.scale)

    def evaluate() -> dict[str, float]:
        return {f"{split}/{name}": win_rate(reader.dialogue_scores(pairs.originals),
                                            reader.dialogue_scores(pairs.perturbed))["win_rate"]
                for split, per in checklist.items() for name, pairs in per.items()}

    results = {"arguments": vars(args), **train_reader(reader.model, step_loss, optimizer, args.steps,
                                                       args.eval_steps, evaluate, "adjacency encoder")}
    reader.save(args.output_dir)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"adjacency_encoder-{args.steps}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
