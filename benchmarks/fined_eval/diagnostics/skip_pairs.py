"""Would the adjacency MLP catch more shuffled system turns if it also read utterances two or three apart?

A shuffle moves a system turn next to user turns it does not answer (consecutive pairs) and out of its place among
the system's own turns (pairs two apart). Every utterance of 3,000 DailyDialog train dialogues (at most 10
utterances each) and of the checklist's dialogues is embedded once by the shipped FineD-Eval's adjacency encoder
(unit length, as the model embeds them). Over those embeddings, one MLP per gap (hidden 256 on
``[a, b, a·b, |a−b|, cos]``, its logit averaged over the dialogue's pairs at that gap, the gaps' means summed) is
trained alone by the margin ranking loss (margin 0.1, 32 pairs a step, 3 epochs) on the checklist's own shuffle
applied to the train dialogues, for gaps {1}, {1, 2} and {1, 2, 3}, and scored after each epoch on the checklist's
shuffle pairs of DailyDialog validation (300, seed 0) and test (600, seed 5: pairs the committed tables do not use).

A ceiling probe, not the shipped recipe: the MLPs train on the very perturbation they are scored on.

    python benchmarks/fined_eval/diagnostics/skip_pairs.py --data-dir ../shared/data

Writes ``--output`` (default ``results/skip_pairs.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import torch
from torch import nn

from hf_dialeval import load_metric
from hf_dialeval.checklist import PERTURBATIONS, PerturbationPairs, build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.corpora import load_dailydialog
from hf_dialeval.fined_eval.modeling_fined_eval import pair_features

RESULTS = Path(__file__).resolve().parent / "results"
TRAIN_DIALOGUES = 3000
MAX_UTTERANCES = 10
GAP_SETS = ([1], [1, 2], [1, 2, 3])
EPOCHS = 3
BATCH = 32
MARGIN = 0.1


@torch.inference_mode()
def embed_all(checkpoint: str | None, utterances: list[str], chunk: int = 256) -> dict[str, torch.Tensor]:
    """Each distinct utterance's unit-length embedding by the FineD-Eval model's adjacency encoder."""
    metric = load_metric("fined-eval", checkpoint=checkpoint)
    model, tokenizer = metric.models[0], metric.tokenizers[0]
    distinct = list(dict.fromkeys(utterances))
    embeddings: dict[str, torch.Tensor] = {}
    for start in range(0, len(distinct), chunk):
        texts = distinct[start:start + chunk]
        pieces = [torch.tensor(tokenizer(text)["input_ids"]) for text in texts]
        vectors = nn.functional.normalize(model.embed_utterances(pieces).float(), dim=-1)
        embeddings.update(zip(texts, vectors))
    return embeddings


class GapScorer(nn.Module):
    """One pair MLP per gap; a dialogue's score is the sum over gaps of the mean logit of its pairs at that gap."""

    def __init__(self, gaps: list[int], hidden: int, size: int = 256) -> None:
        super().__init__()
        self.gaps = gaps
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(4 * hidden + 1, size), nn.GELU(), nn.Linear(size, 1))
                                  for _ in gaps)

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        score = embeddings.new_zeros(())
        for gap, mlp in zip(self.gaps, self.mlps):
            if len(embeddings) > gap:
                score = score + mlp(pair_features(embeddings[:-gap], embeddings[gap:])).mean()
        return score


def win_rates(scorer: GapScorer, pairs: PerturbationPairs, embed: dict[str, torch.Tensor]) -> dict[str, float]:
    with torch.no_grad():
        original = [float(scorer(torch.stack([embed[u] for u in d]))) for d in pairs.originals]
        perturbed = [float(scorer(torch.stack([embed[u] for u in d]))) for d in pairs.perturbed]
    return win_rate(original, perturbed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None, help="FineD-Eval checkpoint (default: the shipped one)")
    parser.add_argument("--output", type=Path, default=RESULTS / "skip_pairs.json")
    args = parser.parse_args()
    shuffle = PERTURBATIONS["shuffle"]
    train = [list(d)[:MAX_UTTERANCES] for d in load_dailydialog("train", args.data_dir)["dialogue"]
             if len(d) >= 4][:TRAIN_DIALOGUES]
    held_out = {"validation": build_pairs(shuffle, load_checklist_corpus("dailydialog", args.data_dir, "validation"),
                                          "dialogue", 300, 0),
                "test": build_pairs(shuffle, load_checklist_corpus("dailydialog", args.data_dir), "dialogue", 600, 5)}
    embed = embed_all(args.checkpoint, [u for d in train for u in d]
                      + [u for pairs in held_out.values() for d in pairs.originals for u in d])
    rng = random.Random(1)
    training_pairs = [(d, p) for d in train if (p := shuffle.perturb_dialogue(d, rng, train)) is not None]
    record: dict = {"arguments": {**vars(args), "output": os.path.relpath(args.output)}, "training_pairs": len(training_pairs),
                    "runs": {}}
    for gaps in GAP_SETS:
        torch.manual_seed(0)
        scorer = GapScorer(gaps, next(iter(embed.values())).numel())
        optimizer = torch.optim.Adam(scorer.parameters(), lr=1e-3)
        epochs = []
        for epoch in range(EPOCHS):
            random.Random(epoch).shuffle(training_pairs)
            for start in range(0, len(training_pairs), BATCH):
                batch = training_pairs[start:start + BATCH]
                loss = sum(torch.relu(MARGIN - scorer(torch.stack([embed[u] for u in o]))
                                      + scorer(torch.stack([embed[u] for u in p]))) for o, p in batch) / len(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            epochs.append({split: win_rates(scorer, pairs, embed) for split, pairs in held_out.items()})
            print(f"gaps {gaps} epoch {epoch + 1}: " + ", ".join(
                f"{split} {rates['win_rate']:.3f} [{rates['ci_low']:.2f}, {rates['ci_high']:.2f}]"
                for split, rates in epochs[-1].items()), flush=True)
        record["runs"][" ".join(map(str, gaps))] = epochs
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
