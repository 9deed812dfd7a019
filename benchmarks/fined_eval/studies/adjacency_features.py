"""How far can adjacency features over frozen utterance embeddings separate the checklist's degraded dialogues?

Every utterance of DailyDialog train (4,000 dialogues) and of the checklist's held-out dialogues is embedded alone
(the ``similarity`` floor's embedding: mean-pooled, unit length, bf16) by a frozen encoder: a pretrained backbone, the
shipped FineD-Eval's dialogue encoder (``fined-eval``) or its adjacency encoder (``fined-eval-adjacency``). Over
the embeddings of consecutive utterances, three dialogue scores: the mean cosine (untrained); a linear head on the
11-bin cosine histogram (the adjacency head of ``adjacency_bins``); and an MLP on ``[a, b, a·b, |a−b|, cos]``
averaged over the pairs (the adjacency MLP of ``adjacency_mlp_size``, hidden 256). The two heads train alone, by the
margin ranking loss, on dialogue-level checklist pairs built from DailyDialog *train* (2,000 per perturbation:
random, shuffle, echo, repeat, generic), for ``--steps`` steps of 64 pairs, and are scored on the checklist's pairs
(200 per perturbation, seed 0) of DailyDialog test and Topical-Chat. With ``--combine`` the MLP's score is also added,
at several weights, to the FineD-Eval checkpoint's coherence logit (does it add what the model misses?). With
``--max-gap K`` the MLP is trained again for every k up to K with one MLP per gap 1…k, each over the pairs of
utterances that far apart (a shuffle also moves a system turn among the system's own turns, two apart), the gaps'
means summed.

This is a ceiling study, not the shipped recipe: the heads here train on the checklist's own perturbations, many
epochs over cached embeddings, while ``hf-dialeval train fined-eval`` trains them on the package's strategies.

    python benchmarks/fined_eval/studies/adjacency_features.py --data-dir ../shared/data \\
        --encoder fined-eval --steps 1500 --combine

Writes ``results/adjacency_features-<encoder>-<steps>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hf_dialeval import load_metric
from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.data.perturbations import GENERIC_REPLIES, PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import mean_by_owner, pair_features, soft_histogram
from hf_dialeval.metrics.similarity import SimilarityMetric
from hf_dialeval.modeling.loading import load_checkpoint

RESULTS = Path(__file__).resolve().parents[1] / "results"
PERTURBATION_NAMES = ("random", "shuffle", "echo", "repeat", "generic")
BINS = 11


def frozen_embedder(name: str) -> SimilarityMetric:
    """The similarity floor's embedding (mean-pooled, unit length, bf16) with ``name``'s encoder: ``fined-eval`` (the
    shipped default's dialogue encoder), ``fined-eval-adjacency`` (its adjacency encoder) or a backbone id or path."""
    if name in ("fined-eval", "fined-eval-adjacency"):
        model, tokenizer = load_checkpoint("fined-eval", None)
        if name == "fined-eval-adjacency" and model.adjacency_encoder is None:
            raise ValueError("the shipped FineD-Eval default has no adjacency encoder: give --encoder fined-eval")
        encoder = model.encoder if name == "fined-eval" else model.adjacency_encoder
        return SimilarityMetric(encoder, tokenizer, device="cpu", batch_size=128, dtype="bf16")
    return SimilarityMetric.load(name, device="cpu", batch_size=128, dtype="bf16")


def embed(texts: list[str], embedder: SimilarityMetric) -> dict[str, torch.Tensor]:
    distinct = sorted(set(texts), key=len)
    return dict(zip(distinct, embedder.embed(distinct)[0].float()))


class AdjacencyScorer(nn.Module):
    """A dialogue score from its consecutive utterance pairs, with the model's own features: ``cosine`` (their
    mean), ``histogram`` (a linear head on :func:`soft_histogram`) or ``mlp`` (on :func:`pair_features`, averaged);
    an ``mlp`` of ``max_gap`` k > 1 adds such a mean for every gap 2…k, one MLP each, over utterances that far
    apart."""

    def __init__(self, kind: str, hidden: int, max_gap: int = 1) -> None:
        super().__init__()
        self.kind = kind
        self.head = {"cosine": nn.Identity(), "histogram": nn.Linear(BINS, 1), "mlp": self.pair_mlp(hidden)}[kind]
        self.far_heads = nn.ModuleList(self.pair_mlp(hidden) for _ in range(max_gap - 1))

    @staticmethod
    def pair_mlp(hidden: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(4 * hidden + 1, 256), nn.GELU(), nn.Linear(256, 1))

    def forward(self, dialogues: list[list[str]], vectors: dict[str, torch.Tensor]) -> torch.Tensor:
        score = torch.zeros(len(dialogues))
        for gap, head in enumerate([self.head, *self.far_heads], start=1):
            earlier = torch.stack([vectors[u] for d in dialogues for u in d[:-gap]])
            later = torch.stack([vectors[u] for d in dialogues for u in d[gap:]])
            owner = torch.tensor([row for row, d in enumerate(dialogues) for _ in d[gap:]])
            if self.kind == "cosine":
                per_pair = (earlier * later).sum(-1, keepdim=True)
            elif self.kind == "histogram":
                return head(soft_histogram((earlier * later).sum(-1), owner, len(dialogues), BINS)).squeeze(1)
            else:
                per_pair = head(pair_features(earlier, later))
            score = score + mean_by_owner(per_pair, owner, len(dialogues)).squeeze(1)
        return score


def dialogue_pairs(dialogues: list[list[str]], count: int, seed: int) -> dict[str, tuple[list, list]]:
    return {name: (pairs.originals, pairs.perturbed) for name in PERTURBATION_NAMES
            for pairs in [build_pairs(PERTURBATIONS[name], dialogues, "dialogue", count=count, seed=seed)]}


def train(scorer: AdjacencyScorer, pairs: dict[str, tuple[list, list]], vectors, steps: int) -> None:
    originals = [d for name in pairs for d in pairs[name][0]]
    perturbed = [d for name in pairs for d in pairs[name][1]]
    optimizer = torch.optim.AdamW(scorer.parameters(), lr=3e-2 if scorer.kind == "histogram" else 1e-3)
    for step in range(steps):
        batch = random.Random(step).sample(range(len(originals)), 64)
        margin = scorer([originals[i] for i in batch], vectors) - scorer([perturbed[i] for i in batch], vectors)
        loss = F.relu(0.1 - margin).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--encoder", default="fined-eval",
                        help="fined-eval (the shipped default's dialogue encoder), fined-eval-adjacency (its adjacency "
                             "encoder) or a backbone id or path")
    parser.add_argument("--steps", type=int, default=1500, help="training steps of 64 pairs for each head")
    parser.add_argument("--max-gap", type=int, default=1, choices=(1, 2, 3),
                        help="also train the MLP over utterances up to this far apart, one MLP per gap (every "
                             "dialogue here holds 4 utterances or more)")
    parser.add_argument("--combine", action="store_true",
                        help="also add the MLP's score to the shipped FineD-Eval default's coherence logit")
    args = parser.parse_args()
    torch.manual_seed(0)
    train_dialogues = [list(d) for d in load_dailydialog("train", args.data_dir)["dialogue"] if len(d) >= 4]
    random.Random(0).shuffle(train_dialogues)
    train_dialogues = train_dialogues[:4000]
    held_out = {corpus: load_checklist_corpus(corpus, args.data_dir) for corpus in ("dailydialog", "topical-chat")}
    texts = [u for ds in (train_dialogues, *held_out.values()) for d in ds for u in d] + list(GENERIC_REPLIES)
    vectors = embed(texts, frozen_embedder(args.encoder))
    training_pairs = dialogue_pairs(train_dialogues, 2000, seed=1)
    checklist_pairs = {corpus: dialogue_pairs(dialogues, 200, seed=0) for corpus, dialogues in held_out.items()}
    results: dict = {"encoder": args.encoder, "steps": args.steps, "win_rates": {}}
    for kind, max_gap in [("cosine", 1), ("histogram", 1), *(("mlp", gap) for gap in range(1, args.max_gap + 1))]:
        scorer = AdjacencyScorer(kind, next(iter(vectors.values())).shape[0], max_gap)
        if kind != "cosine":
            train(scorer, training_pairs, vectors, args.steps)
        with torch.no_grad():
            scores = {corpus: {name: (scorer(o, vectors).numpy(), scorer(p, vectors).numpy())
                               for name, (o, p) in pairs.items()} for corpus, pairs in checklist_pairs.items()}
        label = kind if max_gap == 1 else f"mlp, gaps 1-{max_gap}"
        results["win_rates"][label] = {corpus: {name: win_rate(o, p)["win_rate"] for name, (o, p) in per.items()}
                                       for corpus, per in scores.items()}
        print(label, json.dumps(results["win_rates"][label]), flush=True)
        if label == "mlp":
            mlp_scores = scores["dailydialog"]
    if args.combine:
        metric = load_metric("fined-eval", device="cpu")
        results["combined"] = {}
        for name, (originals, perturbed) in checklist_pairs["dailydialog"].items():
            logits = [np.log(s / (1 - s)) for s in (np.array(metric.score_dialogues(d).scores["coherence"])
                                                     for d in (originals, perturbed))]
            mlp = mlp_scores[name]
            results["combined"][name] = {str(weight): win_rate(logits[0] + weight * mlp[0],
                                                               logits[1] + weight * mlp[1])["win_rate"]
                                         for weight in (0, 0.5, 1, 2, 4)}
        print("combined", json.dumps(results["combined"]))
    RESULTS.mkdir(exist_ok=True)
    name = Path(args.encoder).name.replace("/", "--") + (f"-gaps{args.max_gap}" if args.max_gap > 1 else "")
    (RESULTS / f"adjacency_features-{name}-{args.steps}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
