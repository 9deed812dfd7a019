"""How much of RADE's human scores can the offline encoders carry? A ceiling study for the paper's pre-trained row.

Each item's context (utterances joined by spaces), reference and candidate are embedded by a frozen sentence
encoder (the ``similarity`` floor's embedding: mean-pooled, unit length, the encoders' own recipe). A ridge
regression reads ``[c, r, a, a·r, |a−r|, a·c, cos(a, r), cos(a, c), cos(r, c), words(a), words(r), a = r]`` and predicts
the candidate's score; it is fitted on the train split, its ridge strength picked by the validation split's mean
within-domain Spearman, and scored on each domain's test split (Spearman). Two settings: one model per domain (the
table's per-domain variants) and one model for the three domains pooled (what the shipped default is). Nothing is
fine-tuned: a fine-tuned model can read more than a linear map of frozen embeddings, so this sizes what the
encoders' sentence embeddings make easy, not a hard limit.

``--causal-lm`` does the same with a pretrained causal LM as RADE's adaptation reads it: its final hidden states of
the posterior transcript (``A: …\\nB: …\\nReference: r\\nCandidate: c``, detokenised, bf16), last token and mean,
with the two responses' word counts and whether they are equal.

    python benchmarks/rade/studies/frozen_features.py --data-dir ../shared/data \\
        --encoder sentence-transformers/all-MiniLM-L6-v2 sentence-transformers/all-mpnet-base-v2
    python benchmarks/rade/studies/frozen_features.py --data-dir ../shared/data --encoder \\
        --causal-lm HuggingFaceTB/SmolLM2-135M-Instruct --max-train-items 1000

Writes ``results/frozen_features.json`` (adding to the encoders it already holds; a run with ``--max-train-items N``
is kept under the encoder's name with ``, N train items per domain``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats

from hf_dialeval import load_benchmark
from hf_dialeval.metrics.similarity.scoring import SimilarityMetric

RESULTS = Path(__file__).resolve().parents[1] / "results" / "frozen_features.json"
DOMAINS = ("rade-chitchat", "rade-emotion", "rade-persona")
ALPHAS = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
#: the paper's RADE (PT) Spearman on each test split (Table 3): the bar a default must reach
PAPER_PT = {"rade-chitchat": 0.491, "rade-emotion": 0.601, "rade-persona": 0.390}


def load_split(domain: str, split: str, data_dir: str | None, max_items: int | None) -> dict:
    """One split as columns; with ``max_items``, a seeded sample of that many items."""
    dataset = load_benchmark(domain, data_dir=data_dir, split=split)
    if max_items is not None and max_items < len(dataset):
        dataset = dataset.shuffle(seed=0).select(range(max_items))
    return dataset.to_dict()


def embed(texts: list[str], encoder_name: str) -> dict[str, np.ndarray]:
    """The ``similarity`` floor's embedding (mean-pooled, unit length, bf16, 256 tokens) with ``encoder_name``."""
    distinct = sorted(set(texts), key=len)
    vectors = SimilarityMetric.load(encoder_name, device="cpu", batch_size=64, dtype="bf16").embed(distinct)[0]
    return dict(zip(distinct, vectors.float().numpy()))


def length_features(split: dict) -> np.ndarray:
    """``[words(a), words(r), a = r]`` per item: the responses' log word counts and whether they are the same text."""
    words = [np.log1p([len(t.split()) for t in split[key]]) for key in ("response", "reference")]
    same = np.array([x == y for x, y in zip(split["response"], split["reference"])], dtype=float)
    return np.column_stack([*words, same])


def features(split: dict, vectors: dict[str, np.ndarray]) -> np.ndarray:
    c = np.stack([vectors[" ".join(context)] for context in split["context"]])
    r = np.stack([vectors[text] for text in split["reference"]])
    a = np.stack([vectors[text] for text in split["response"]])
    cosines = [(a * r).sum(1), (a * c).sum(1), (r * c).sum(1)]
    return np.column_stack([c, r, a, a * r, np.abs(a - r), a * c, *cosines, length_features(split)])


def causal_lm_features(splits: dict, backbone: str) -> dict:
    """Per domain and split, the causal LM's features of each item (see the module's description)."""
    import torch
    from transformers import AutoTokenizer

    from hf_dialeval.data.transcripts import Layout
    from hf_dialeval.metrics.rade.data import context_lines, encode_causal_posterior
    from hf_dialeval.metrics.rade.modeling_rade import RADEModel
    from hf_dialeval.metrics.rade.scoring import RADEMetric
    from hf_dialeval.modeling.base import masked_mean_pool
    from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
    model = RADEModel.from_backbone(backbone, lm_kind="causal-lm", pooling="last", detokenize=True,
                                    scoring_dtype="bf16")
    metric = RADEMetric(model.eval(), tokenizer, device="cpu", batch_size=16)
    layout = Layout.of(tokenizer, "speaker-tags", True)

    def pooled(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        output = model(input_ids, attention_mask, output_hidden_states=True)
        return torch.cat([output.pooled_output.float(),
                          masked_mean_pool(output.hidden_states[-1], attention_mask)], dim=-1)

    found = {}
    for domain, per in splits.items():
        for name, split in per.items():
            lines = context_lines(tokenizer, layout, split["context"])
            encoding, _ = encode_causal_posterior(tokenizer, layout, lines, split["reference"], split["response"],
                                                  model.config.max_seq_length)
            hidden = metric.forward_rows(pooled, encoding).numpy()
            found[domain, name] = np.column_stack([hidden, length_features(split)])
            print(domain, name, hidden.shape, flush=True)
    return found


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mean, scale = x.mean(0), x.std(0) + 1e-6
    z = (x - mean) / scale
    weights = np.linalg.solve(z.T @ z + alpha * np.eye(z.shape[1]), z.T @ (y - y.mean()))
    return weights, mean, scale, y.mean()


def predict(model: tuple, x: np.ndarray) -> np.ndarray:
    weights, mean, scale, offset = model
    return ((x - mean) / scale) @ weights + offset


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.spearmanr(a, b).statistic)


def fit_and_score(train: dict, validation: dict, test: dict) -> dict:
    """Ridge fitted on ``train`` (domain -> (x, y)), alpha picked by the validation domains' mean Spearman."""
    x, y = np.concatenate([v[0] for v in train.values()]), np.concatenate([v[1] for v in train.values()])
    best = max(ALPHAS, key=lambda alpha: np.mean([spearman(predict(ridge(x, y, alpha), vx), vy)
                                                  for vx, vy in validation.values()]))
    model = ridge(x, y, best)
    return {"alpha": best, "test": {d: spearman(predict(model, tx), ty) for d, (tx, ty) in test.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--encoder", nargs="*", default=["sentence-transformers/all-MiniLM-L6-v2"])
    parser.add_argument("--causal-lm", nargs="*", default=[], help="pretrained causal LMs, read as RADE's adaptation "
                                                                   "reads one")
    parser.add_argument("--max-train-items", type=int, default=None,
                        help="fit on at most this many train items per domain, a seeded sample (default: all)")
    args = parser.parse_args()
    splits = {d: {s: load_split(d, s, args.data_dir, args.max_train_items if s == "train" else None)
                  for s in ("train", "validation", "test")} for d in DOMAINS}
    texts = [t for per in splits.values() for split in per.values()
             for t in [" ".join(c) for c in split["context"]] + split["reference"] + split["response"]]
    # encoders measured before (another run of this script) are kept beside the ones measured now
    earlier = json.loads(RESULTS.read_text(encoding="utf-8"))["encoders"] if RESULTS.is_file() else {}
    results = {"paper_pt": PAPER_PT, "encoders": earlier}
    sources = [(encoder, None) for encoder in args.encoder] + [(lm, "causal-lm") for lm in args.causal_lm]
    for encoder, kind in sources:
        if kind is None:
            vectors = embed(texts, encoder)
            data = {d: {s: (features(split, vectors), np.array(split["Overall"])) for s, split in per.items()}
                    for d, per in splits.items()}
        else:
            found = causal_lm_features(splits, encoder)
            data = {d: {s: (found[d, s], np.array(split["Overall"])) for s, split in per.items()}
                    for d, per in splits.items()}
        per_domain = {d: fit_and_score({d: data[d]["train"]}, {d: data[d]["validation"]}, {d: data[d]["test"]})
                      for d in DOMAINS}
        pooled = fit_and_score({d: data[d]["train"] for d in DOMAINS}, {d: data[d]["validation"] for d in DOMAINS},
                               {d: data[d]["test"] for d in DOMAINS})
        key = encoder if args.max_train_items is None else f"{encoder}, {args.max_train_items} train items per domain"
        results["encoders"][key] = {"kind": kind or "sentence-encoder", "max_train_items": args.max_train_items,
                                        "per_domain": {d: per_domain[d]["test"][d] for d in DOMAINS},
                                        "per_domain_alpha": {d: per_domain[d]["alpha"] for d in DOMAINS},
                                        "pooled": pooled["test"], "pooled_alpha": pooled["alpha"]}
        print(key, json.dumps(results["encoders"][key]), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
