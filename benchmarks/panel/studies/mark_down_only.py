"""Scores that reward length marking a reply down only: ``run.py``'s procedure with each candidate of its
``MARK_DOWN_ONLY`` (HolisticEval's diversity, the length floor) counting, in any panel, at most at the weighted mean of
the panel's other scores (``PanelConfig.mark_down_only``). Its held-out numbers, leave one release out with every
choice nested as in ``run.py``; then, beside the shipped panel (chosen without the rule) and the shipped panel with the
rule, the panel the procedure chooses over every release with it: each one's held-out mean with its weights fixed
(each release scored by CDFs fitted on the other releases' replies) and its win rates on the checklist's validation
pairs, what the procedure chooses by. The checklist's test pairs are not read.

    python benchmarks/panel/studies/mark_down_only.py [--data-dir DIR]

Reads every score from the score cache that ``run.py`` fills (it scores what is missing) and writes ``results/mark_down_only.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval.metrics.panel import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.panel.modeling_panel import PanelModel

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/panel/
from benchmarks.panel.run import MARK_DOWN_ONLY, RESULTS, Study, nested
from benchmarks.panel.studies.members import means


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    validation = Study(args.data_dir)
    validation.mark_down_only = MARK_DOWN_ONLY
    rows, _ = nested(validation)
    held_out = {name: score for row in rows.values() for name, score in row["held_out"].items()}
    record = {"mark_down_only": MARK_DOWN_ONLY, "nested": rows, "nested_held_out": held_out, **means(held_out),
              "panels": {}}
    print(f"held out, chosen with the rule: mean {record['mean']:+.3f}, check mean {record['check_mean']:+.3f}",
          flush=True)
    chosen, _, chosen_weights, _ = validation.choose(validation.benchmarks)
    shipped = PanelModel.from_pretrained(DEFAULT_CHECKPOINT, use_safetensors=True)
    shipped_panel = (tuple(shipped.config.features), shipped.weights.detach().numpy().astype(float))
    panels = {"shipped": (*shipped_panel, ()), "shipped with the rule": (*shipped_panel, MARK_DOWN_ONLY),
              "chosen with the rule": (chosen, chosen_weights, MARK_DOWN_ONLY)}
    for name, (features, weights, rule) in panels.items():
        validation.mark_down_only = rule
        scores = validation.lobo(features, "chosen", validation.benchmarks, weights)
        rates = validation.win_rates(features, weights, validation.benchmarks)
        record["panels"][name] = {"features": dict(zip(features, weights.tolist())), "mark_down_only": rule,
                                  "held_out": scores, **means(scores), "win_rates": rates}
        row = record["panels"][name]
        print(f"{name}: {row['features']}: mean {row['mean']:+.3f}, check mean {row['check_mean']:+.3f}; validation "
              "win rates: " + ", ".join(f"{pairs} {rate:.3f}" for pairs, rate in rates.items()), flush=True)
    (RESULTS / "mark_down_only.json").write_text(json.dumps(record, indent=2, default=list) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
