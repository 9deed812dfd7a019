"""The tables of benchmarks/panel/README.md and the panel's card, from ``results/panel.json`` (what ``run.py`` wrote):

    python benchmarks/panel/summarize.py [RESULTS_DIR]

It formats ``run.py``'s results; it measures nothing. Means are over the benchmarks fitted on (each release's items
once); "check" leaves out the benchmarks a member saw in training."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def means(values: Mapping[str, float], benchmarks: Sequence[str], seen: Sequence[str]) -> tuple[float, float]:
    """The mean over ``benchmarks`` and over those not in ``seen``."""
    return (float(np.mean([values[name] for name in benchmarks])),
            float(np.mean([values[name] for name in benchmarks if name not in seen])))


def row(label: str, values: Mapping[str, float], benchmarks: Sequence[str], seen: Sequence[str]) -> str:
    every, check = means(values, benchmarks, seen)
    return (f"| {label} | " + " | ".join(f"{values[name]:+.3f}" for name in benchmarks)
            + f" | {every:+.3f} | {check:+.3f} |")


def fold_label(record: Mapping, release: str) -> str:
    """A held-out release named by its benchmarks (two releases share their authors' names)."""
    return ", ".join(name for name, citation in record["releases"].items() if citation == release)


def tables(record: Mapping) -> str:
    benchmarks, seen = record["benchmarks"], list(record["seen_in_training"])
    header = ("| score | " + " | ".join(f"{name}{' (seen)' if name in seen else ''}" for name in benchmarks)
              + " | mean | check mean |\n|---|" + "---|" * (len(benchmarks) + 2))
    nested = {name: value for fold in record["nested"].values() for name, value in fold["held_out"].items()}
    singles = [row(feature, values, benchmarks, seen) for feature, values in record["singles"].items()]
    shipped = record["shipped"]
    forms = [row(f"{form} of the shipped scores", values, benchmarks, seen)
             for form, values in shipped["fixed_lobo"].items()]
    blind = record["members_overall_mean"]
    forms.append(row(f"plain mean of {', '.join(blind['features'])}", blind["lobo"], benchmarks, seen))
    floors = shipped["trace"]["trust_floors"]
    trust = "\n".join(f"| {name} | {rate:.3f} | {floors[name]:.2f} | {blind['win_rates'][name]:.3f} |"
                      for name, rate in shipped["trace"]["win_rates"].items())
    dialogues = [f"{name}: {value:+.3f}, by the fold that held out {fold_label(record, release)}"
                 for release, fold in record["nested"].items()
                 for name, value in fold.get("dialogue_held_out", {}).items()]
    # only where the data holds a dialogue-level benchmark of a release fitted on (FED's)
    dialogue_level = ["Dialogue level, each dialogue scored by the mean of the held-out panel's scores of its system "
                      "turns (Spearman with the dialogue's headline rating): " + "; ".join(dialogues) + ".",
                      ""] if dialogues else []
    choices = "\n".join(f"| {fold_label(record, release)} | {' '.join(fold['features'])} | {fold['form']} | "
                        + ", ".join(f"{w:.2f}" for w in fold["weights"]) + " |"
                        for release, fold in record["nested"].items())
    return "\n".join([
        "Held out, leave one release out (each release scored by a panel whose members, form and weights were all "
        "chosen and fitted without it):", "", header, row("**panel (held out)**", nested, benchmarks, seen), *singles,
        "", "The shipped scores under each combiner form, and the blind plain mean of the learned members' overall "
        "scores (each release held out in turn; scores fixed, so a choice seen in hindsight):", "", header, *forms, "",
        *dialogue_level,
        "What each fold chose on the other releases:", "",
        "| held-out release (its benchmarks) | member scores | form | weights |", "|---|---|---|---|", choices, "",
        "The shipped choice on the checklist's validation pairs (CDFs fitted on every release; share of pairs the "
        "human reply wins, what it had to reach, and the blind mean's win rate):", "",
        "| pairs | win rate | at least | blind mean |", "|---|---|---|---|", trust,
        "", f"Shipped: {', '.join(f'{f} ×{w:.3f}' for f, w in zip(shipped['features'], shipped['weights']))} "
        f"({shipped['form']})."])


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    print(tables(json.loads((folder / "panel.json").read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
