"""Length rewarded up to a point: the shipped panel with the CDF value of HolisticEval's diversity, the score in it
that rewards a long reply, capped (a reply scores no higher on it than the reference replies' quantile ``CAP``:
a dull reply is still marked down, a run-on reply no longer gains). Per cap: the held-out means (each release
scored by CDFs fitted on the other releases' replies, the shipped weights) and the win rates on the checklist's
validation pairs (what ``run.py`` chooses by) and on its test pairs (the committed checklist's). The members,
weights and caps are fixed: this reads the test pairs and chooses nothing.

    python benchmarks/panel/studies/capped_length.py [--data-dir DIR]

Reads every score from the score cache that ``run.py`` and ``hf-dialeval checklist`` fill (it scores what is
missing) and writes ``results/capped_length.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.modeling_panel import PanelModel

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/panel/
from benchmarks.panel.run import CANDIDATES, RESULTS, TRUST, TRUST_SPLITS, Study
from benchmarks.panel.studies.members import means

#: The score whose CDF value is capped, and the caps tried (1: none).
CAPPED = "holistic-eval.diversity"
CAPS = (1.0, 0.8, 0.7, 0.6, 0.5)


class CappedStudy(Study):
    """A :class:`Study` whose ``CAPPED`` CDF values are at most ``cap``."""

    cap = 1.0

    def normalised(self, train: Sequence[str]) -> dict[str, np.ndarray]:
        column = CANDIDATES.index(CAPPED)
        capped = {}
        for name, values in super().normalised(train).items():
            values = values.copy()
            values[:, column] = np.minimum(values[:, column], self.cap)
            capped[name] = values
        return capped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    panel = PanelModel.from_pretrained(DEFAULT_CHECKPOINT, use_safetensors=True)
    features, weights = tuple(panel.config.features), panel.weights.detach().numpy().astype(float)
    validation = CappedStudy(args.data_dir)
    test = CappedStudy(args.data_dir, trust_splits=dict.fromkeys(TRUST_SPLITS))
    record = {"features": dict(zip(features, weights.tolist())), "capped": CAPPED, "caps": {}}
    for cap in CAPS:
        validation.cap = test.cap = cap
        scores = validation.lobo(features, "chosen", validation.benchmarks, weights)
        rates = {"validation": validation.win_rates(features, weights, validation.benchmarks),
                 "test": test.win_rates(features, weights, test.benchmarks)}
        record["caps"][cap] = {"held_out": scores, **means(scores), "win_rates": rates}
        row = record["caps"][cap]
        below = [f"{name} {rates['validation'][name]:.3f} / {rates['test'][name]:.3f}" for name in rates["test"]
                 if min(rates["validation"][name], rates["test"][name]) < TRUST]
        print(f"cap {cap:g}: mean {row['mean']:+.3f}, check mean {row['check_mean']:+.3f}; validation / test win "
              f"rates below {TRUST}: {', '.join(below)}", flush=True)
    (RESULTS / "capped_length.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
