"""Step 6 of the shipped FineD-Eval's recipe, its first half: train its pair cross-encoder
(``hf_dialeval.metrics.fined_eval.readers.PairReader``: a previous utterance and a candidate read together), which
``hf-dialeval train fined-eval --pair-encoder`` then adds to the model at the weight ``pair_weight.py`` chooses.

The encoder (default: the offline MiniLM) reads ``[CLS] previous [SEP] utterance [SEP]``; a linear layer over its
mean-pooled output gives the pair a logit. It trains the linear maps of its Transformer layers and that layer on
DailyDialog train: each batch holds ``--dialogues`` dialogues (their first 12 utterances), from each one utterance
after the first, and the cross-entropy picks it, after its previous utterance, among ``--negatives`` others of the
same dialogue (an utterance of another dialogue where the dialogue has too few), one of another dialogue and, with
``--echo``, the previous utterance itself. Before training and every ``--eval-steps`` steps a dialogue's mean pair
logit ranks the checklist's pairs of DailyDialog validation (seed 0: what chooses the steps) and test (seeds 0, 1 and
2). The shipped encoder is the second of these runs, continued from the first (model_cards/fined_eval.md, step 6):

    python benchmarks/fined_eval/recipes/pair_encoder.py --data-dir ../shared/data --steps 1200 --eval-steps 300 \\
        --output-dir runs/pair-cross-encoder
    python benchmarks/fined_eval/recipes/pair_encoder.py --data-dir ../shared/data --encoder runs/pair-cross-encoder \\
        --echo --seed 1 --steps 400 --eval-steps 200 --output-dir runs/pair-cross-encoder-echo

Writes the encoder, tokenizer and pair layer to ``--output-dir`` and ``results/pair_encoder-<steps>[-echo].json``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch
import torch.nn.functional as F

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.evaluation.checklist import pairs_by_split, win_rate
from hf_dialeval.metrics.fined_eval.readers import MAX_UTTERANCES, PairReader, candidate_batch, train_reader
from hf_dialeval.training.run import train_layers_only

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--encoder", default=None, help="backbone id or path (default: the offline MiniLM), or a "
                                                        "folder this recipe wrote (its pair layer continues)")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-steps", type=int, default=200)
    parser.add_argument("--dialogues", type=int, default=16, help="dialogues per batch")
    parser.add_argument("--negatives", type=int, default=3, help="utterances of the same dialogue per candidate list")
    parser.add_argument("--learning-rate", type=float, default=3e-5, help="of the encoder's layers")
    parser.add_argument("--head-learning-rate", type=float, default=1e-3)
    parser.add_argument("--echo", action="store_true",
                        help="one more candidate, the previous utterance itself (the checklist's echo), and the echo "
                             "and repeat pairs evaluated too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default=None, help="where the trained encoder, tokenizer and pair layer go")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    reader = PairReader(args.encoder)
    train = [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", args.data_dir)["dialogue"] if len(d) >= 3]
    perturbations = ("shuffle", "random", "echo", "repeat") if args.echo else ("shuffle", "random")
    checklist = pairs_by_split("dailydialog", args.data_dir, perturbations, test_seeds=(0, 1, 2))

    train_layers_only(reader.encoder)
    layers = [parameter for parameter in reader.encoder.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW([{"params": layers, "lr": args.learning_rate},
                                   {"params": reader.head.parameters(), "lr": args.head_learning_rate}],
                                  weight_decay=0.0)
    rng = random.Random(args.seed)

    def step_loss() -> torch.Tensor:
        previous, candidates = candidate_batch(rng.sample(train, args.dialogues), train, args.negatives, rng, args.echo)
        logits = reader(previous, candidates).view(args.dialogues, -1)
        return F.cross_entropy(logits, torch.zeros(args.dialogues, dtype=torch.long))

    def evaluate() -> dict[str, float]:
        return {f"{split}/{name}": win_rate(reader.dialogue_scores(pairs.originals),
                                            reader.dialogue_scores(pairs.perturbed))["win_rate"]
                for split, per in checklist.items() for name, pairs in per.items()}

    results = {"arguments": vars(args), **train_reader(reader, step_loss, optimizer, args.steps, args.eval_steps,
                                                       evaluate, "pair encoder")}
    if args.output_dir:
        reader.save(args.output_dir)
    RESULTS.mkdir(exist_ok=True)
    name = f"pair_encoder-{args.steps}{'-echo' if args.echo else ''}"
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
