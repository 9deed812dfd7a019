"""The README's leaderboard: every registered metric's shipped default on every benchmark it can score.

    python benchmarks/leaderboard/run.py [--data-dir DIR]

One ``hf-dialeval leaderboard`` command, with this folder's ``results/`` as its output, the repository's README.md
as the file whose table it rewrites and the panel's held-out scores as its only ones (``benchmarks/panel/run.py``'s,
FED's dialogues' replaced by those of ``benchmarks/panel/studies/dialogue_member.py``, which score them as the shipped
panel does, with FineD-Eval):
``results/leaderboard.{json,md,png}`` and the table between README.md's leaderboard markers. Scores are cached (the
command's default ``--cache-dir``), so a re-run scores only what changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hf_dialeval.cli import main as hf_dialeval

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parents[2] / "README.md"
#: The panel's held-out scores: the only ones of it the leaderboard shows. Of the turn-level benchmarks, from
#: benchmarks/panel/run.py; of FED's dialogues, from the study that scores them as the shipped panel does, the later
#: file's replacing the turn means of the first.
PANEL_HELD_OUT = [Path(__file__).resolve().parents[1] / "panel" / "results" / name
                  for name in ("held_out_scores.json", "held_out_dialogue_scores.json")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    return hf_dialeval(["leaderboard", "--data-dir", args.data_dir, "--output-dir", str(RESULTS),
                        "--readme", str(README),
                        *(option for path in PANEL_HELD_OUT for option in ("--held-out", f"panel={path}"))])


if __name__ == "__main__":
    sys.exit(main())
