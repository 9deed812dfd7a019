"""Adapting a metric to a domain's own ratings, through the user's path only: GRADE-ConvAI2's 600 coherence
ratings are written to two plain JSONL files, split in halves by context (never one context in both), then
``hf-dialeval train quantidce-kd --ratings`` fine-tunes the shipped QuantiDCE on one half and ``hf-dialeval score``
scores the other, and the reverse. Each held-out half's Spearman is reported for the shipped default, the adapted
model and the similarity floor (the floor needs no training: it is the bar an adapted metric must clear).

    python benchmarks/adaptation/run.py --data-dir ../shared/data --output-dir runs/adaptation

Writes ``results/quantidce-grade-convai2.json`` (each half's numbers, the commands, seconds per run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from scipy import stats

from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.ratings import held_out_split

RESULTS = Path(__file__).resolve().parent / "results"
BENCHMARK = "grade-convai2"
DIMENSION = "Coherence"


def write_halves(data_dir: str | None, folder: Path, seed: int) -> list[Path]:
    """The benchmark's ratings as two JSONL files of a user's own (``context``, ``response``, ``score``), split by
    context."""
    rated = load_benchmark(BENCHMARK, data_dir).rename_column(DIMENSION, "score")
    halves = held_out_split(rated.select_columns(["context", "response", "score"]), 0.5, seed)
    paths = []
    for name, half in zip("ab", halves):
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in half))
        paths.append(path)
    return paths


def hf_dialeval(*arguments: str) -> float:
    """Run ``hf-dialeval`` with ``arguments`` as a user would; its wall-clock seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hf_dialeval.cli", *arguments], check=True)
    return time.perf_counter() - start


def spearman(scored: Path, rated: Path) -> float:
    """Spearman of the scores ``hf-dialeval score`` wrote against the human scores of the same items."""
    predicted = [json.loads(line)["overall"] for line in scored.read_text().splitlines()]
    human = [json.loads(line)["score"] for line in rated.read_text().splitlines()]
    return float(stats.spearmanr(predicted, human).statistic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output-dir", required=True, help="where the halves, the runs and the scores go")
    parser.add_argument("--seed", type=int, default=0, help="seed of the halves and of training")
    parser.add_argument("--epochs", type=float, default=None, help="KD epochs (default: the command's)")
    args = parser.parse_args()
    folder = Path(args.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    halves = write_halves(args.data_dir, folder, args.seed)
    record = {"benchmark": BENCHMARK, "dimension": DIMENSION, "seed": args.seed, "halves": []}
    for trained_on, held_out in (halves, halves[::-1]):
        run = folder / f"quantidce-{trained_on.stem}"
        train = ["train", "quantidce-kd", "--ratings", str(trained_on), "--output-dir", str(run),
                 "--overwrite-output-dir", "--seed", str(args.seed)]
        if args.epochs is not None:
            train += ["--epochs", str(args.epochs)]
        seconds = hf_dialeval(*train)
        shown = [argument.replace(str(folder), "OUTPUT_DIR") for argument in train]  # no path of this machine
        half = {"trained_on": trained_on.name, "held_out": held_out.name, "train_command": shown,
                "train_seconds": round(seconds, 1), "items": len(held_out.read_text().splitlines())}
        for name, metric, checkpoint in (("default", "quantidce", None), ("adapted", "quantidce", run),
                                         ("similarity", "similarity", None)):
            scored = folder / f"{held_out.stem}-{name}.jsonl"
            hf_dialeval("score", "--metric", metric, "--input", str(held_out), "--output", str(scored),
                        "--overwrite", *(["--checkpoint", str(checkpoint)] if checkpoint else []))
            half[name] = round(spearman(scored, held_out), 3)
        record["halves"].append(half)
        print(json.dumps(half), flush=True)
    for name in ("default", "adapted", "similarity"):
        record[f"mean_{name}"] = round(sum(half[name] for half in record["halves"]) / 2, 3)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"quantidce-{BENCHMARK}.json").write_text(json.dumps(record, indent=1) + "\n")
    print({key: value for key, value in record.items() if key.startswith("mean_")})


if __name__ == "__main__":
    main()
