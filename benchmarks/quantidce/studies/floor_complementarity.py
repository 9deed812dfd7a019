"""Does a QuantiDCE checkpoint know anything the similarity floor does not? On every turn-level coherence
benchmark of ``coherence_benchmarks.py``: the Spearman of the checkpoint and of the ``similarity`` floor with the
human rating, the Spearman between the two metrics, and the Spearman of their rank average (an equal-weight
ensemble, fixed in advance, nothing fitted) with its paired-bootstrap difference from the floor alone (95%
interval). An ensemble that does not beat the floor means the checkpoint adds nothing the floor lacks.

    python benchmarks/quantidce/studies/floor_complementarity.py --data-dir ../shared/data

Writes ``results/floor_complementarity.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval import load_metric

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/common/
from benchmarks.common.coherence_comparison import FLOOR, floor_comparison  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "floor_complementarity.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", default=None,
                        help="QuantiDCE checkpoint (default: the shipped one, recorded as null)")
    args = parser.parse_args()
    comparison = floor_comparison(load_metric("quantidce", checkpoint=args.checkpoint, device="cpu"),
                                  load_metric("similarity", device="cpu"), args.data_dir)
    results = {"checkpoint": args.checkpoint, "floor": FLOOR, "benchmarks": comparison}  # None: the shipped default
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
