"""Does a sentence encoder fine-tuned to tell each utterance's neighbours from the rest of its dialogue read the order
of shuffled system turns better than a frozen one?

The encoder (default: the offline MiniLM) is fine-tuned as a bi-encoder, the linear maps of its Transformer layers
(``train_layers_only``: the changes a FineD-Eval adapter can carry), on DailyDialog train: each batch
holds ``--dialogues`` dialogues (their first 12 utterances), every utterance encoded alone and mean-pooled, and for
every consecutive pair the cross-entropy of the scaled cosines picks the next utterance among all the batch's others
and, backwards, the previous one (in-batch negatives, the rest of the same dialogue among them: the utterances that
a shuffle puts in the wrong place). Every ``--eval-steps`` steps, and before training, the mean cosine of consecutive
utterances scores the checklist's shuffle and random pairs of DailyDialog validation (the choice of steps) and test
(200 each, seed 0). The encoder is saved with its tokenizer, so that ``adjacency_features.py --encoder <output>``
measures what heads over its frozen embeddings reach.

This is a probe for an adjacency encoder of this package's own (not in the paper), not a shipped recipe:

    python benchmarks/fined_eval/diagnostics/next_utterance_encoder.py --data-dir ../shared/data \
        --output-dir runs/next-utterance --steps 600
    python benchmarks/fined_eval/diagnostics/adjacency_features.py --data-dir ../shared/data \
        --encoder runs/next-utterance --steps 1500

Writes ``results/next_utterance_encoder-<steps>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from hf_dialeval.evaluation.checklist import PERTURBATIONS, build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import embed_pieces
from hf_dialeval.training.run import train_layers_only
from hf_dialeval.metrics.similarity.scoring import SimilarityMetric

RESULTS = Path(__file__).resolve().parent / "results"
MAX_UTTERANCES = 12
MAX_TOKENS = 64


class Embedder:
    """Unit-length, mean-pooled embeddings of utterances, each encoded alone (with its special tokens), bf16."""

    def __init__(self, encoder: str) -> None:
        floor = SimilarityMetric.load(encoder, device="cpu")
        self.model, self.tokenizer = floor.model, floor.tokenizer
        self.pad_id = self.tokenizer.pad_token_id or 0

    def __call__(self, texts: list[str]) -> torch.Tensor:
        ids = self.tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pooled = embed_pieces(self.model, [torch.tensor(i) for i in ids], self.pad_id)
        return F.normalize(pooled, dim=-1)

    @torch.no_grad()
    def dialogue_scores(self, dialogues: list[list[str]]) -> np.ndarray:
        """Mean cosine of consecutive utterances, per dialogue."""
        texts = list(dict.fromkeys(u for d in dialogues for u in d))
        vectors = dict(zip(texts, torch.cat([self(texts[i:i + 512]) for i in range(0, len(texts), 512)])))
        return np.array([float(np.mean([float(vectors[a] @ vectors[b]) for a, b in zip(d[:-1], d[1:])]))
                         for d in dialogues])


def checklist_pairs(data_dir: str | None, test_seeds: tuple[int, ...] = (0,),
                    perturbations: tuple[str, ...] = ("shuffle", "random")) -> dict[str, dict]:
    """DailyDialog's checklist pairs of ``perturbations`` (200 each): validation (seed 0, for choosing steps) and
    test, per seed of ``test_seeds`` (seed 0, the committed checklist's, named ``test``; the others ``test-<seed>``)."""
    validation, test = (load_checklist_corpus("dailydialog", data_dir, split) for split in ("validation", None))
    splits = [("validation", validation, 0)] + [("test" if seed == 0 else f"test-{seed}", test, seed)
                                                for seed in test_seeds]
    return {split: {name: build_pairs(PERTURBATIONS[name], dialogues, "dialogue", count=200, seed=seed)
                    for name in perturbations}
            for split, dialogues, seed in splits}


def checklist_training(model: nn.Module, dialogue_scores: Callable[[list[list[str]]], np.ndarray],
                       checklist: dict[str, dict], optimizer: torch.optim.Optimizer,
                       step_loss: Callable[[], torch.Tensor], steps: int, eval_steps: int, description: str) -> dict:
    """Train ``model`` for ``steps`` steps of ``step_loss()``. Before training, every ``eval_steps`` steps and at the
    end, ``dialogue_scores`` (``model`` in eval mode) ranks the :func:`checklist_pairs`. Returns the ``win_rates`` per
    step, the ``loss`` every 50 steps and the training ``seconds``."""

    def evaluate() -> dict[str, float]:
        model.eval()
        rates = {f"{split}/{name}": win_rate(dialogue_scores(pairs.originals), dialogue_scores(pairs.perturbed))
                 ["win_rate"] for split, per in checklist.items() for name, pairs in per.items()}
        model.train()
        return rates

    record: dict = {"win_rates": {0: evaluate()}, "loss": {}}
    print(0, record["win_rates"][0], flush=True)
    start = time.time()
    for step in tqdm(range(1, steps + 1), desc=description):
        loss = step_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            record["loss"][step] = round(loss.item(), 4)
        if step % eval_steps == 0 or step == steps:
            record["win_rates"][step] = evaluate()
            print(step, record["win_rates"][step], flush=True)
    record["seconds"] = round(time.time() - start)
    return record


def next_utterance_loss(embeddings: torch.Tensor, owner: list[int], scale: float) -> torch.Tensor:
    """Cross-entropy of each consecutive pair's cosine against every other utterance of the batch, both ways."""
    logits = (embeddings @ embeddings.T * scale).fill_diagonal_(-1e4)
    anchors, targets = [], []
    for index in range(1, len(owner)):
        if owner[index] == owner[index - 1]:
            anchors += [index - 1, index]
            targets += [index, index - 1]
    return F.cross_entropy(logits[anchors], torch.tensor(targets))


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
    embedder = Embedder(args.encoder)
    train = [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", args.data_dir)["dialogue"] if len(d) >= 3]
    checklist = checklist_pairs(args.data_dir)

    train_layers_only(embedder.model)
    trainable = [parameter for parameter in embedder.model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.learning_rate, weight_decay=0.0)
    rng = random.Random(args.seed)

    def step_loss() -> torch.Tensor:
        batch = rng.sample(train, args.dialogues)
        texts = [u for d in batch for u in d]
        owner = [row for row, d in enumerate(batch) for _ in d]
        return next_utterance_loss(embedder(texts), owner, args.scale)

    results = {"arguments": vars(args), **checklist_training(
        embedder.model, embedder.dialogue_scores, checklist, optimizer, step_loss, args.steps, args.eval_steps,
        "next-utterance fine-tuning")}
    embedder.model.save_pretrained(args.output_dir)
    embedder.tokenizer.save_pretrained(args.output_dir)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"next_utterance_encoder-{args.steps}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
