"""Reference members: does RADE or the reference-similarity floor add to the panel where an item carries a reference
reply? Over the rated sets whose items all have one, grouped by release (USR's reference variants, GRADE, RADE):
the held-out panel's score of each item (``results/held_out_scores.json``: each release scored by a panel chosen and
fitted without it) joined by a reference member's CDF value, at a share of the panel's heaviest weight (``SHARES``),
the member's CDF fitted on the other releases' items. Each variant is read per set held out that way; then one is
chosen per release, nested: the variant with the best mean over the other releases' sets that no candidate trained
on (RADE's default trained on RADE's sets, so they choose nothing and their numbers are marked).

    python benchmarks/panel/studies/reference_members.py [--data-dir DIR]

Reads the members' scores from the score cache that ``hf-dialeval leaderboard`` fills (it scores what is missing)
and writes ``results/reference_members.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.modeling_panel import PanelModel, apply_cdf, fit_cdf_knots
from hf_dialeval.metrics.panel.train import headline

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/panel/
from benchmarks.panel.run import RESULTS, spearman

#: The rated sets whose items all carry a reference reply, by release (a release's sets are held out together).
RELEASES = {"USR": ("usr-topical-reference", "usr-persona-reference"),
            "GRADE": ("grade-convai2", "grade-dailydialog"),
            "RADE": ("rade-chitchat", "rade-emotion", "rade-persona")}
#: Sets a candidate trained on: RADE's default was trained on RADE's data. They choose nothing.
SEEN_IN_TRAINING = {"rade-chitchat", "rade-emotion", "rade-persona"}
CANDIDATES = ("rade", "reference-similarity")
#: A joining member's weight, as a share of the shipped panel's heaviest.
SHARES = (1.0, 0.5)


def variants() -> dict[str, dict[str, float]]:
    """Every variant tried: the panel alone, each candidate alone at each share, both at each share."""
    found: dict[str, dict[str, float]] = {"panel": {}}
    for share in SHARES:
        for candidate in CANDIDATES:
            found[f"panel + {candidate} x{share:g}"] = {candidate: share}
        found[f"panel + both x{share:g}"] = dict.fromkeys(CANDIDATES, share)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    panel = PanelModel.from_pretrained(DEFAULT_CHECKPOINT, use_safetensors=True)
    heaviest = float(panel.weights.detach().max())
    held_out = json.loads((RESULTS / "held_out_scores.json").read_text())["benchmarks"]
    names = [name for sets in RELEASES.values() for name in sets]
    loaded = {name: load_benchmark(name, args.data_dir) for name in names}
    ratings = {name: np.array([np.nan if r is None else r for r in dataset[headline(dataset)]], dtype=float)
               for name, dataset in loaded.items()}
    cache, scores = ScoreCache(), {}
    for candidate in CANDIDATES:
        metric = load_metric(candidate)
        scores[candidate] = {name: np.array(cache.scores(metric, dataset, name)[0].overall, dtype=float)
                             for name, dataset in loaded.items()}
        del metric

    # each candidate's CDF values of a release's items, the CDF fitted on the other releases' items (as the panel's)
    normalised: dict[str, dict[str, np.ndarray]] = {candidate: {} for candidate in CANDIDATES}
    for release, sets in RELEASES.items():
        train = [name for other, other_sets in RELEASES.items() if other != release for name in other_sets]
        for candidate in CANDIDATES:
            knots, levels = fit_cdf_knots(np.concatenate([scores[candidate][n] for n in train]).tolist(),
                                          panel.config.quantile_count)
            for name in sets:
                values = torch.tensor(scores[candidate][name], dtype=torch.float32).unsqueeze(1)
                normalised[candidate][name] = apply_cdf(values, knots.unsqueeze(0), levels.unsqueeze(0)
                                                        ).squeeze(1).double().numpy()

    def held_out_variant(shares: dict[str, float], release: str) -> dict[str, float]:
        """Spearman on each set of ``release`` of the held-out panel joined by ``shares``' members (their CDF values,
        fitted without ``release``)."""
        found = {}
        for name in RELEASES[release]:
            total, weight = np.array(held_out[name], dtype=float), 1.0
            for candidate, share in shares.items():
                total, weight = total + share * heaviest * normalised[candidate][name], weight + share * heaviest
            rated = ~np.isnan(ratings[name])
            found[name] = spearman(total[rated] / weight, ratings[name][rated])
        return found

    table = {label: {name: value for release in RELEASES for name, value in held_out_variant(shares, release).items()}
             for label, shares in variants().items()}
    chosen = {}
    for release, sets in RELEASES.items():
        choosers = [name for name in names if name not in sets and name not in SEEN_IN_TRAINING]
        label = max(table, key=lambda variant: np.mean([table[variant][name] for name in choosers]))
        chosen[release] = {"variant": label, "chosen_on": choosers}
    table["chosen per release (nested)"] = {name: table[chosen[release]["variant"]][name]
                                            for release, sets in RELEASES.items() for name in sets}
    unseen = [name for name in names if name not in SEEN_IN_TRAINING]
    record = {"releases": RELEASES, "seen_in_training": sorted(SEEN_IN_TRAINING), "heaviest_weight": heaviest,
              "chosen": chosen, "variants": {label: {"held_out": row, "mean": float(np.mean(list(row.values()))),
                                                     "unseen_mean": float(np.mean([row[n] for n in unseen]))}
                                             for label, row in table.items()}}
    for label, row in record["variants"].items():
        print(f"{label}: " + ", ".join(f"{name} {value:+.3f}" for name, value in row["held_out"].items())
              + f"; mean {row['mean']:+.3f}, unseen mean {row['unseen_mean']:+.3f}", flush=True)
    print("chosen:", {release: choice["variant"] for release, choice in chosen.items()})
    (RESULTS / "reference_members.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
