"""QuantiDCE against the similarity floor on every turn-level benchmark here with a coherence-like rating.

grade-convai2 (Coherence; the paper's Table 1), usr-topical and usr-persona (Maintains Context), holistic-context
(Coherence) and fed-turn (Relevant): Spearman of each checkpoint, of the ``similarity`` floor (untrained MiniLM,
cosine of the last context utterance and the response), and the paired-bootstrap difference checkpoint − floor.
grade-dailydialog is left out: its 300 ratings are the DailyDialogEVAL set that KD fine-tuning trains on.

    python benchmarks/quantidce/studies/coherence_benchmarks.py --data-dir ../shared/data \\
        --checkpoint full-ft-kd=runs/qd-kd-full --checkpoint full-ft-mlr=runs/qd-mlr-full/full

Writes ``results/coherence_benchmarks.{json,md}``; the row ``default`` is the shipped checkpoint. The committed
results (``results/cross_default/``) are those of the former cross-encoder default; the bi-encoder default's are
in ``results/bi_encoder.{json,md}`` (``bi_encoder.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval import load_metric
from hf_dialeval.evaluation.statistics import compare_spearman, correlate

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/common/
from benchmarks.common.coherence_comparison import FLOOR, score_coherence_benchmarks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                        help="another QuantiDCE checkpoint to compare (repeatable)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args = parser.parse_args()
    checkpoints: dict[str, str | None] = {"default": None}
    for entry in args.checkpoint:
        name, separator, path = entry.partition("=")
        if not separator or not name or not path:
            raise SystemExit(f"--checkpoint {entry!r}: give NAME=PATH")
        checkpoints[name] = path

    metrics = {name: load_metric("quantidce", checkpoint=path, device="cpu") for name, path in checkpoints.items()}
    metrics[FLOOR] = load_metric("similarity", device="cpu")
    results: dict = {"checkpoints": checkpoints, "benchmarks": {}}
    lines = ["| benchmark (rating) | n | " + " | ".join(metrics) + " | " +
             " | ".join(f"{name} − floor" for name in checkpoints) + " |",
             "|---" * (2 + len(metrics) + len(checkpoints)) + "|"]
    for benchmark, rating, humans, scores in score_coherence_benchmarks(metrics, args.data_dir):
        entry = {"rating": rating, "spearman": {}, "minus_floor": {}}
        for name, values in scores.items():
            entry["spearman"][name] = correlate(values, humans)
        for name in checkpoints:
            entry["minus_floor"][name] = compare_spearman(scores[name], scores[FLOOR], humans)
        results["benchmarks"][benchmark] = entry
        cells = [f"{entry['spearman'][name]['spearman']:+.3f}" for name in metrics]
        cells += ["{difference:+.3f} [{low:+.3f}, {high:+.3f}]".format(
            difference=entry["minus_floor"][name]["spearman_difference"], low=entry["minus_floor"][name]["ci95"][0],
            high=entry["minus_floor"][name]["ci95"][1]) for name in checkpoints]
        lines.append(f"| {benchmark} ({rating}) | {entry['spearman'][FLOOR]['n']} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "coherence_benchmarks.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "coherence_benchmarks.md").write_text(
        "Spearman with each benchmark's coherence-like rating; last columns: paired-bootstrap difference from the "
        "similarity floor (95% interval).\n\n" + "\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
