"""The ``length`` floor on every canonical benchmark: the number each learned metric has to beat.

    python benchmarks/length/run.py [--data-dir DIR]

Each benchmark is one ``hf-dialeval benchmark --metric length`` command, in its own process: it writes
``results/<benchmark>.json`` and its printed table goes to ``results/<benchmark>.md``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
BENCHMARKS = ("fed-dialogue", "fed-turn", "usr-topical", "usr-persona", "predictive-engage", "holistic-context",
              "holistic-fluency", "grade-convai2", "grade-dailydialog", "rade-chitchat", "rade-emotion", "rade-persona")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    for benchmark in BENCHMARKS:
        with (RESULTS / f"{benchmark}.md").open("w", encoding="utf-8") as table:
            subprocess.run([sys.executable, "-m", "hf_dialeval.cli", "benchmark", "--metric", "length",
                            "--benchmark", benchmark, "--data-dir", args.data_dir,
                            "--output", str(RESULTS / f"{benchmark}.json")],
                           stdout=table, check=True)


if __name__ == "__main__":
    main()
