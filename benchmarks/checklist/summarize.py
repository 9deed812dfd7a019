"""The README's checklist tables from the committed results: per corpus, the overall win rate of every metric on
every perturbation, and for a metric with dimensions the win rate of each dimension the perturbation should hurt.

    python benchmarks/checklist/summarize.py [RESULTS_DIR]

Prints markdown on stdout (``results/`` beside this script by default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hf_dialeval.evaluation.checklist import CORPORA

RESULTS = Path(__file__).resolve().parent / "results"


def corpus_tables(results: Path, corpus: str) -> str:
    """The overall table of ``corpus`` (one column per metric), then one per metric with dimensions."""
    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(results.glob(f"*-{corpus}.json"))]
    if not records:
        raise SystemExit(f"no checklist results for {corpus!r} in {results}: run benchmarks/checklist/run.sh")
    rows = records[0]["rows"]
    metrics = [record["metric"] for record in records]
    lines = ["| perturbation | should hurt | " + " | ".join(metrics) + " |", "|---|---|" + "---|" * len(metrics)]
    for index, row in enumerate(rows):
        cells = [f"{record['rows'][index]['wins']['overall']['win_rate']:.3f}" for record in records]
        lines.append(f"| {row['perturbation']} | {', '.join(row['hurts'])} | " + " | ".join(cells) + " |")
    for record in records:
        dimensions = record["dimensions"] if len(record["dimensions"]) > 1 else []
        if not dimensions:
            continue
        lines += ["", f"{record['metric']} by dimension (— where the perturbation should not hurt it):", "",
                  "| perturbation | " + " | ".join(dimensions) + " |", "|---|" + "---|" * len(dimensions)]
        for row in record["rows"]:
            cells = [f"{row['wins'][d]['win_rate']:.3f}" if d in row["wins"] else "—" for d in dimensions]
            lines.append(f"| {row['perturbation']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    for corpus, (_, split) in CORPORA.items():
        print(f"{corpus} ({split}):\n\n{corpus_tables(results, corpus)}\n")


if __name__ == "__main__":
    main()
