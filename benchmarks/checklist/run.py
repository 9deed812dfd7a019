"""The perturbation checklist of every registered metric (shipped defaults, floors included), 200 pairs per
perturbation, seed 0: the reference-free metrics on the held-out dialogues of DailyDialog and Topical-Chat, the
reference-assisted ones (rade, reference-similarity) on DailyDialog++ test, whose contexts have several human
replies (one the original, another the reference).

    python benchmarks/checklist/run.py [--data-dir DIR] [--metrics METRIC ...]

Each metric and corpus is one ``hf-dialeval checklist`` command, in its own process: it writes
``results/<metric>-<corpus>.json`` and its printed table goes to ``results/<metric>-<corpus>.md``. ``summarize.py``
prints the tables of docs/checklist.md from them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import hf_dialeval
from hf_dialeval.evaluation.checklist import CORPORA, REFERENCE_CORPORA

RESULTS = Path(__file__).resolve().parent / "results"
#: the metrics that need a reference, so are run on the corpora with several human replies per context
REFERENCE_METRICS = ("rade", "reference-similarity")
PAIRS = 200
SEED = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--metrics", nargs="+", choices=hf_dialeval.metric_names(),
                        help="re-run these metrics only (a default that changed); the others' files are kept")
    args = parser.parse_args()
    for metric in args.metrics or hf_dialeval.metric_names():
        corpora = REFERENCE_CORPORA if metric in REFERENCE_METRICS else CORPORA
        for corpus in corpora:
            name = f"{metric}-{corpus}"
            with (RESULTS / f"{name}.md").open("w", encoding="utf-8") as table:
                subprocess.run([sys.executable, "-m", "hf_dialeval.cli", "checklist", "--metric", metric,
                                "--corpus", corpus, "--data-dir", args.data_dir, "--pairs", str(PAIRS),
                                "--seed", str(SEED), "--output", str(RESULTS / f"{name}.json")],
                               stdout=table, check=True)


if __name__ == "__main__":
    main()
