"""What each member of the shipped panel contributes, leave one release out: the shipped member scores as the
weighted mean of their CDF values with the shipped weights (the shipped form), then the same with each member
metric's scores left out, and with each other candidate score added at the weight of the shipped panel's heaviest.
Each release is scored by CDFs fitted on the other releases' replies, as in ``run.py``.
The members are the shipped ones, fixed in hindsight: these numbers size a member's share, they choose nothing.

    python benchmarks/panel/studies/members.py [--data-dir DIR]

Reads every score from the score cache that ``run.py`` fills (it scores what is missing) and writes
``results/members.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.modeling_panel import PanelModel
from hf_dialeval.metrics.panel.members import split_feature

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/panel/
from benchmarks.panel.run import CANDIDATES, RESULTS, SEEN_IN_TRAINING, Study


def means(scores: dict[str, float]) -> dict[str, float]:
    """The mean over every benchmark, and over those no member trained on (the check mean)."""
    return {"mean": float(np.mean(list(scores.values()))),
            "check_mean": float(np.mean([v for name, v in scores.items() if name not in SEEN_IN_TRAINING]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    panel = PanelModel.from_pretrained(DEFAULT_CHECKPOINT, use_safetensors=True)
    weights = dict(zip(panel.config.features, panel.weights.tolist()))
    study = Study(args.data_dir)
    variants = {"shipped": weights}
    for metric in dict.fromkeys(split_feature(feature)[0] for feature in weights):
        variants[f"without {metric}"] = {f: w for f, w in weights.items() if split_feature(f)[0] != metric}
    for feature in CANDIDATES:
        if feature not in weights:
            variants[f"with {feature}"] = {**weights, feature: max(weights.values())}
    record = {"benchmarks": study.benchmarks, "seen_in_training": sorted(SEEN_IN_TRAINING), "variants": {}}
    for name, shares in variants.items():
        scores = study.lobo(tuple(shares), "chosen", study.benchmarks, list(shares.values()))
        record["variants"][name] = {"features": shares, "held_out": scores, **means(scores)}
        print(f"{name}: mean {record['variants'][name]['mean']:+.3f}, "
              f"check mean {record['variants'][name]['check_mean']:+.3f}", flush=True)
    (RESULTS / "members.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
