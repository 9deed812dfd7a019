"""Where ``adapt panel``'s ranking loss starts, chosen on rated benchmarks that its measured runs do not use: each
benchmark's halves (split by context, as ``benchmarks/adaptation/run.py`` splits them, two seeds), a refit on one
half (less the share ``adapt`` holds out) scored on the other, beside the shipped panel unchanged. GRADE-ConvAI2 and
FED, the sets ``adapt panel`` is measured on through the user's path, are left out, so the choice never sees them.

    python benchmarks/panel/studies/adapt_start.py [--data-dir DIR]

The members' scores come from the score cache (what is missing is scored first, about 15 minutes on 2 cores); the
refits take a minute. Writes ``results/adapt_start.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from hf_dialeval.adaptation.workflow import DEFAULT_HELD_OUT_SHARE
from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.ratings import held_out_split
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.data import NO_WEIGHT, RatedScores, correlation_weights, finite_column
from hf_dialeval.metrics.panel.members import feature_rows, member_loaders
from hf_dialeval.metrics.panel.modeling_panel import PanelModel
from hf_dialeval.metrics.panel.train import PanelTrainingArguments, combiner_trainer, headline

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: Every rated turn-level benchmark the panel is fitted on, but those ``adapt panel``'s runs are measured on.
BENCHMARKS = ("usr-topical", "usr-persona", "grade-dailydialog", "rade-chitchat", "rade-emotion", "rade-persona",
              "predictive-engage", "holistic-context")
SEEDS = (0, 1)


def ranked(model: PanelModel, train: RatedScores, seed: int) -> PanelModel:
    """``model``'s weights trained by the ranking loss on ``train``, with ``train panel``'s defaults."""
    with tempfile.TemporaryDirectory() as folder:
        args = PanelTrainingArguments(output_dir=folder, report_to="none", seed=seed, save_strategy="no",
                                      logging_strategy="no", disable_tqdm=True, use_cpu=True)
        combiner_trainer(model, args, [train]).train()
    return model


def with_weights(model: PanelModel, weights: list[float]) -> PanelModel:
    model.set_weights(weights)
    return model


def with_cdfs(model: PanelModel, train: RatedScores) -> PanelModel:
    model.set_cdfs([finite_column([train], index) for index in range(len(model.config.features))])
    return model


def mme_crs(train: RatedScores, power: float) -> list[float]:
    return [max(weight ** power, NO_WEIGHT) for weight in correlation_weights([train])]


#: Each start: the refit panel, from a copy of the shipped one, its half trained on and the seed.
VARIANTS: dict[str, Callable[[PanelModel, RatedScores, int], PanelModel]] = {
    "shipped weights, then ranking": lambda m, t, s: ranked(m, t, s),
    "correlation (MME-CRS, k=1), untrained": lambda m, t, s: with_weights(m, mme_crs(t, 1)),
    "correlation (MME-CRS, k=2), untrained": lambda m, t, s: with_weights(m, mme_crs(t, 2)),
    "correlation (MME-CRS, k=1), then ranking": lambda m, t, s: ranked(with_weights(m, mme_crs(t, 1)), t, s),
    "CDFs refitted on the half, shipped weights": lambda m, t, s: with_cdfs(m, t),
    "CDFs refitted on the half, then ranking": lambda m, t, s: ranked(with_cdfs(m, t), t, s),
}


def spearman(model: PanelModel, test: RatedScores) -> float:
    with torch.no_grad():
        scores = model(features=torch.tensor(test.features, dtype=torch.float32)).scores.numpy()
    return float(stats.spearmanr(scores, test.ratings).statistic)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    shipped = PanelModel.from_pretrained(DEFAULT_CHECKPOINT, use_safetensors=True)
    config, cache = shipped.config, ScoreCache()
    members = {name: load(batch_size=32) for name, load in member_loaders(config).items()}
    rows = []
    for name in BENCHMARKS:
        dataset = load_benchmark(name, args.data_dir)
        rating = headline(dataset)
        outputs = {member: cache.scores(metric, dataset, name)[0] for member, metric in members.items()}
        features = feature_rows(config.features, outputs, len(dataset))
        dataset = dataset.add_column("item", list(range(len(dataset))))

        def rated(part, name=name, rating=rating, features=features) -> RatedScores:
            kept = [(features[i], r) for i, r in zip(part["item"], part[rating]) if r is not None and math.isfinite(r)]
            return RatedScores(name, [row for row, _ in kept], [r for _, r in kept])

        for seed in SEEDS:
            halves = held_out_split(dataset, 0.5, seed)
            for trained_on, held_out in (halves, halves[::-1]):
                train, test = rated(held_out_split(trained_on, DEFAULT_HELD_OUT_SHARE, seed)[0]), rated(held_out)
                row = {"benchmark": name, "seed": seed, "trained_on": len(train.ratings),
                       "held_out": len(test.ratings), "shipped": spearman(shipped, test)}
                for variant, refit in VARIANTS.items():
                    row[variant] = spearman(refit(copy.deepcopy(shipped), train, seed), test)
                rows.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    summary = {}
    for variant in VARIANTS:
        gains = np.array([row[variant] - row["shipped"] for row in rows])
        summary[variant] = {"mean": float(np.mean([row[variant] for row in rows])), "mean_gain": float(gains.mean()),
                            "halves_won": int((gains > 0).sum()), "worst_gain": float(gains.min())}
        print(f"{variant}: mean {summary[variant]['mean']:.3f}, gain {gains.mean():+.3f}, won "
              f"{summary[variant]['halves_won']} of {len(rows)}, worst {gains.min():+.3f}", flush=True)
    record = {"benchmarks": list(BENCHMARKS), "seeds": list(SEEDS),
              "shipped_mean": float(np.mean([row["shipped"] for row in rows])), "variants": summary, "halves": rows}
    (RESULTS / "adapt_start.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
