"""Does a cross-encoder that reads each pair of consecutive utterances together tell shuffled system turns from the
human order better than the readers over sentence embeddings (``adjacency_features.py``: about 0.90 at best on
DailyDialog's shuffles)?

The encoder (default: the offline MiniLM) reads ``[CLS] previous [SEP] utterance [SEP]``; a linear layer over its
mean-pooled output gives the pair a logit. It trains the linear maps of its Transformer layers
(``train_layers_only``) and that layer on DailyDialog train: each batch holds ``--dialogues`` dialogues (their first
12 utterances), from each one utterance after the first, and the cross-entropy picks it, after its previous
utterance, among ``--negatives`` others of the same dialogue (the utterances that a shuffle puts in its place; an
utterance of another dialogue where the dialogue has too few) and one of another dialogue. A dialogue's score is
the mean logit of its consecutive pairs. Every ``--eval-steps`` steps, and before training, that score ranks the
checklist's shuffle and random pairs of DailyDialog validation (seed 0: the choice of steps) and test (seeds 0, 1
and 2; seed 0 is the committed checklist's).

This is a probe for an adjacency reader of this package's own (not in the paper), not a shipped recipe:

    python benchmarks/fined_eval/diagnostics/next_utterance_cross_encoder.py --data-dir ../shared/data --steps 600

The reader that ``coherence_with_pair_reader.py`` adds to FineD-Eval was trained for 1,200 steps, then continued
from there (its encoder and pair layer) with echo candidates and another seed:

    python benchmarks/fined_eval/diagnostics/next_utterance_cross_encoder.py --data-dir ../shared/data --steps 1200 \
        --eval-steps 300 --output-dir runs/pair-cross-encoder
    python benchmarks/fined_eval/diagnostics/next_utterance_cross_encoder.py --data-dir ../shared/data \
        --encoder runs/pair-cross-encoder --echo --seed 1 --steps 400 --eval-steps 200 \
        --output-dir runs/pair-cross-encoder-echo

Writes ``results/next_utterance_cross_encoder-<steps>[-echo].json``; with ``--output-dir``, also the trained encoder and
tokenizer there, and the pair layer as ``pair_head.safetensors``: ``coherence_with_pair_reader.py`` reads them.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from next_utterance_encoder import MAX_UTTERANCES, RESULTS, checklist_pairs, checklist_training
from safetensors.torch import save_file
from torch import nn

from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.metrics.fined_eval.constants import PAIR_HEAD_FILE
from hf_dialeval.metrics.fined_eval.train import load_pair_head
from hf_dialeval.training.run import train_layers_only
from hf_dialeval.metrics.similarity.scoring import SimilarityMetric

MAX_PAIR_TOKENS = 128
SCORING_BATCH = 128


class PairScorer(nn.Module):
    """A logit per (previous utterance, utterance) pair, read together by one encoder, bf16 autocast. ``encoder``
    is a sentence encoder (a new pair layer) or this script's ``--output-dir`` (its trained pair layer)."""

    def __init__(self, encoder: str | None) -> None:
        super().__init__()
        floor = SimilarityMetric.load(encoder, device="cpu")
        self.encoder, self.tokenizer = floor.model, floor.tokenizer
        trained = encoder is not None and (Path(encoder) / PAIR_HEAD_FILE).is_file()
        self.head = load_pair_head(encoder) if trained else nn.Linear(self.encoder.config.hidden_size, 1)

    def forward(self, previous: list[str], utterances: list[str]) -> torch.Tensor:
        inputs = self.tokenizer(previous, utterances, truncation=True, max_length=MAX_PAIR_TOKENS, padding=True,
                                return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = self.encoder(**inputs).last_hidden_state
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden.float() * mask).sum(1) / mask.sum(1)
        return self.head(pooled).squeeze(-1)

    @torch.no_grad()
    def dialogue_scores(self, dialogues: list[list[str]]) -> np.ndarray:
        """Mean logit of consecutive utterance pairs, per dialogue."""
        # longest first, so that each batch pads to lengths near its own
        pairs = sorted(dict.fromkeys(pair for d in dialogues for pair in zip(d[:-1], d[1:])),
                       key=lambda pair: -len(pair[0]) - len(pair[1]))
        logits = torch.cat([self([a for a, _ in pairs[i:i + SCORING_BATCH]], [b for _, b in pairs[i:i + SCORING_BATCH]])
                            for i in range(0, len(pairs), SCORING_BATCH)])
        by_pair = dict(zip(pairs, logits.tolist()))
        return np.array([float(np.mean([by_pair[pair] for pair in zip(d[:-1], d[1:])])) for d in dialogues])


def candidate_batch(batch: list[list[str]], corpus: list[list[str]], negatives: int, rng: random.Random,
                    echo: bool = False) -> tuple[list[str], list[str]]:
    """Per dialogue: its previous utterance once per candidate, and as candidates the true next utterance first,
    then ``negatives`` others of the same dialogue (padded from other dialogues), then one of another, then with
    ``echo`` the previous utterance itself (one of another dialogue where it equals the true one)."""
    previous, candidates = [], []
    for dialogue in batch:
        position = rng.randrange(1, len(dialogue))
        target, before = dialogue[position], dialogue[position - 1]
        same = [u for p, u in enumerate(dialogue) if p not in (position - 1, position) and u != target]
        chosen = rng.sample(same, min(negatives, len(same)))
        while len(chosen) < negatives + 1:
            chosen.append(rng.choice(rng.choice(corpus)))
        if echo:
            chosen.append(before if before != target else rng.choice(rng.choice(corpus)))
        previous += [before] * (len(chosen) + 1)
        candidates += [target] + chosen
    return previous, candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--encoder", default=None, help="backbone id or path (default: the offline MiniLM)")
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
    scorer = PairScorer(args.encoder)
    train = [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", args.data_dir)["dialogue"] if len(d) >= 3]
    perturbations = ("shuffle", "random", "echo", "repeat") if args.echo else ("shuffle", "random")
    checklist = checklist_pairs(args.data_dir, test_seeds=(0, 1, 2), perturbations=perturbations)

    train_layers_only(scorer.encoder)
    layers = [parameter for parameter in scorer.encoder.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW([{"params": layers, "lr": args.learning_rate},
                                   {"params": scorer.head.parameters(), "lr": args.head_learning_rate}],
                                  weight_decay=0.0)
    rng = random.Random(args.seed)

    def step_loss() -> torch.Tensor:
        previous, candidates = candidate_batch(rng.sample(train, args.dialogues), train, args.negatives, rng, args.echo)
        logits = scorer(previous, candidates).view(args.dialogues, -1)
        return F.cross_entropy(logits, torch.zeros(args.dialogues, dtype=torch.long))

    results = {"arguments": vars(args), **checklist_training(
        scorer, scorer.dialogue_scores, checklist, optimizer, step_loss, args.steps, args.eval_steps,
        "next-utterance cross-encoder")}
    if args.output_dir:
        scorer.encoder.save_pretrained(args.output_dir)
        scorer.tokenizer.save_pretrained(args.output_dir)
        save_file(scorer.head.state_dict(), str(Path(args.output_dir) / PAIR_HEAD_FILE))
    RESULTS.mkdir(exist_ok=True)
    name = f"next_utterance_cross_encoder-{args.steps}{'-echo' if args.echo else ''}"
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
