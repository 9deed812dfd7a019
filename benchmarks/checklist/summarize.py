"""The README's checklist tables from the committed results: per corpus, the overall win rate of every metric on
every perturbation, and for a metric with dimensions the win rate of each dimension the perturbation should hurt
(— where a perturbation found no pair: DailyDialog++'s turn pairs are at a context's reply, with no later system
turn to shuffle in).

    python benchmarks/checklist/summarize.py [RESULTS_DIR]

Prints markdown on stdout (``results/`` beside this script by default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hf_dialeval.evaluation.checklist import CORPORA, REFERENCE_CORPORA

RESULTS = Path(__file__).resolve().parent / "results"


def corpus_tables(results: Path, corpus: str) -> str:
    """The overall table of ``corpus`` (one column per metric), then one per metric with dimensions that the
    perturbations hurt."""
    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(results.glob(f"*-{corpus}.json"))]
    if not records:
        raise SystemExit(f"no checklist results for {corpus!r} in {results}: run benchmarks/checklist/run.py")
    by_name = [{row["perturbation"]: row for row in record["rows"]} for record in records]
    perturbations = {name: row["hurts"] for rows in by_name for name, row in rows.items()}
    metrics = [record["metric"] for record in records]
    lines = ["| perturbation | should hurt | " + " | ".join(metrics) + " |", "|---|---|" + "---|" * len(metrics)]
    for name, hurts in perturbations.items():
        cells = [_rate(rows.get(name), "overall") for rows in by_name]
        lines.append(f"| {name} | {', '.join(hurts)} | " + " | ".join(cells) + " |")
    for record in records:
        # a table per metric with several dimensions, where a perturbation should hurt at least one of them (none of
        # the panel's member scores measures one quality)
        dimensions = record["dimensions"] if len(record["dimensions"]) > 1 else []
        if not any(dimension in row["wins"] for row in record["rows"] for dimension in dimensions):
            continue
        lines += ["", f"{record['metric']} by dimension (— where the perturbation should not hurt it):", "",
                  "| perturbation | " + " | ".join(dimensions) + " |", "|---|" + "---|" * len(dimensions)]
        for row in record["rows"]:
            cells = [_rate(row, dimension) for dimension in dimensions]
            lines.append(f"| {row['perturbation']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(row: dict | None, key: str) -> str:
    """The win rate of ``key`` in a checklist row; — where the row has none (not hurt, or no pair, or no row)."""
    return f"{row['wins'][key]['win_rate']:.3f}" if row is not None and key in row["wins"] else "—"


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    for corpus, (_, split) in {**CORPORA, **REFERENCE_CORPORA}.items():
        print(f"{corpus} ({split}):\n\n{corpus_tables(results, corpus)}\n")


if __name__ == "__main__":
    main()
