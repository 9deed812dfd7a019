"""Adapting metrics to a domain's own data, through the user's path only: the data is written to plain JSONL files,
then ``hf-dialeval adapt`` adapts the shipped default on them and ``hf-dialeval score`` / ``hf-dialeval benchmark``
measure it on data it never trained on.

``ratings``: GRADE-ConvAI2's 600 coherence ratings (or another rated benchmark's, ``--benchmark``/``--dimension``: a
domain of someone else's) split in two halves by context (never one context in both);
``adapt METRIC --ratings`` fine-tunes the shipped default on one half (holding out its own share of that half for its
report) and ``score`` scores the other half, and the reverse. ``--metric quantidce`` (KD), ``rade`` (task-specific
fine-tuning) or ``panel`` (its combiner's weights refitted, members frozen); the files hold context, response, the
benchmark's reference (where it has them) and score. Each other half's Spearman, with its 95% bootstrap interval, is
reported for the shipped default, the adapted model and the floors (similarity, and reference-similarity for RADE:
they need no training, and are the bar an adapted metric must clear),
beside what ``adapt``'s own report measured. ``--init-from CHECKPOINT`` starts adapt from that checkpoint instead
(for the panel: one fitted without the benchmark's release, a start that never saw the domain, as a user's) and
scores it as the default.

``dialogues``: Topical-Chat's conversations (those sharing an utterance with a USR-Topical context left out) as
unlabelled dialogues; ``adapt METRIC --dialogues`` adapts the shipped default on them (``--metric`` holistic-eval,
fined-eval, dial-m or quantidce), and USR-Topical (the new domain) and a benchmark the default did well on are scored
before and after as ``hf-dialeval benchmark`` scores them (each benchmark once per checkpoint).

    python benchmarks/adaptation/run.py ratings --metric quantidce --data-dir ../shared/data --output-dir runs/adaptation --seed 0
    python benchmarks/adaptation/run.py ratings --metric quantidce --benchmark fed-turn --dimension Overall --data-dir ../shared/data --output-dir runs/adaptation-fed
    python benchmarks/adaptation/run.py ratings --metric panel --init-from runs/panel-without-grade --record panel-grade-convai2-seed0-unseen.json --data-dir ../shared/data --output-dir runs/adaptation-unseen
    python benchmarks/adaptation/run.py dialogues --metric holistic-eval --data-dir ../shared/data --output-dir runs/adaptation --seed 0 --bf16

Writes ``results/<metric>-<benchmark>-seed<SEED>.json`` and ``results/<metric>-topical-chat-seed<SEED>.json``
(the numbers, the commands, seconds and peak memory per run).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from hf_dialeval.adaptation.report import agreement
from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.corpora import load_topical_chat_for_training
from hf_dialeval.data.ratings import held_out_split
from hf_dialeval.inference.factory import load_metric

RESULTS = Path(__file__).resolve().parent / "results"


#: The ratings run's metrics: the columns their ratings files hold and the floors each is set beside. Both files
#: carry GRADE's human references: QuantiDCE does not train on them, but adapt's checklist takes them as the human
#: reply; RADE compares the reply with them, so it also meets the reference-similarity floor.
RATING_MEASURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "quantidce": (("context", "response", "reference", "score"), ("similarity",)),
    "rade": (("context", "response", "reference", "score"), ("similarity", "reference-similarity")),
    "panel": (("context", "response", "reference", "score"), ("similarity",)),
}


def write_halves(args: argparse.Namespace, folder: Path, columns: tuple[str, ...]) -> list[Path]:
    """``args.benchmark``'s ratings of ``args.dimension`` as two JSONL files of a user's own (``columns``; a
    benchmark without references has no ``reference`` column), split by context: the same halves for every metric of
    one seed."""
    rated = load_benchmark(args.benchmark, args.data_dir).rename_column(args.dimension, "score")
    if not any(rated["reference"]):
        columns = tuple(column for column in columns if column != "reference")
    halves = held_out_split(rated.select_columns(list(columns)), 0.5, args.seed)
    paths = []
    for name, half in zip("ab", halves):
        path = folder / f"{name}-{'-'.join(columns)}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in half))
        paths.append(path)
    return paths


def hf_dialeval(*arguments: str) -> float:
    """Run ``hf-dialeval`` with ``arguments`` as a user would; its wall-clock seconds (an adapt run's peak memory is
    its report's)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hf_dialeval.cli", *arguments], check=True)
    return time.perf_counter() - start


def scored_agreement(scored: Path, rated: Path, seed: int) -> dict:
    """Agreement of the scores ``hf-dialeval score`` wrote with the human scores of the same items."""
    predicted = [json.loads(line)["overall"] for line in scored.read_text().splitlines()]
    human = [json.loads(line)["score"] for line in rated.read_text().splitlines()]
    return {key: value for key, value in agreement(predicted, human, seed).items()
            if key in ("n", "spearman", "spearman_ci95")}


def adapt_on_ratings(args: argparse.Namespace, folder: Path) -> None:
    columns, floors = RATING_MEASURES[args.metric]
    halves = write_halves(args, folder, columns)
    record = {"metric": args.metric, "benchmark": args.benchmark, "dimension": args.dimension, "seed": args.seed,
              "halves": []}
    # a start other than the shipped default (--init-from) is also what the adapted model is compared with
    base, start = (["--checkpoint", args.init_from], ["--init-from", args.init_from]) if args.init_from else ([], [])
    if args.init_from:
        record["init_from"] = args.init_from
    compared = [("default", args.metric), ("adapted", args.metric), *((floor, floor) for floor in floors)]
    for trained_on, held_out in (halves, halves[::-1]):
        run = folder / f"{args.metric}-{trained_on.stem[0]}"
        adapt = ["adapt", args.metric, "--ratings", str(trained_on), "--output-dir", str(run),
                 "--overwrite-output-dir", "--seed", str(args.seed), *start]
        seconds = hf_dialeval(*adapt)
        report = json.loads((run / "adaptation_report.json").read_text())
        half = {"trained_on": trained_on.name, "held_out": held_out.name,
                "command": [argument.replace(str(folder), "OUTPUT_DIR") for argument in adapt],
                "adapt_seconds": round(seconds, 1), "peak_memory_mb": report["peak_memory_mb"],
                "adapt_report": {key: report[key] for key in ("data", "steps", "held_out", "checklist", "seconds")}}
        checkpoints = {"default": base, "adapted": ["--checkpoint", str(run)]}
        for name, metric in compared:
            scored = folder / f"{held_out.stem}-{args.metric}-{name}.jsonl"
            hf_dialeval("score", "--metric", metric, "--input", str(held_out), "--output", str(scored),
                        "--overwrite", *checkpoints.get(name, []))
            half[name] = scored_agreement(scored, held_out, args.seed)
        record["halves"].append(half)
        print(json.dumps({key: half[key] for key in ("trained_on", *(name for name, _ in compared))}), flush=True)
    for name, _ in compared:
        record[f"mean_spearman_{name}"] = round(sum(half[name]["spearman"] for half in record["halves"]) / 2, 3)
    write_record(record, args.record or f"{args.metric}-{args.benchmark}-seed{args.seed}.json")


#: What the dialogues run measures, per metric: the score keys correlated, and benchmark -> the rated dimensions kept.
#: USR-Topical is the new domain for every metric; the second benchmark is one the shipped default did well on, to
#: show what adapting costs there.
DIALOGUE_MEASURES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "holistic-eval": (("overall", "context_coherence"),
                      {"usr-topical": ("Overall", "Maintains Context"), "holistic-context": ("Coherence",)}),
    "fined-eval": (("overall",), {"usr-topical": ("Overall", "Maintains Context"), "fed-dialogue": ("Overall",)}),
    "dial-m": (("overall",), {"usr-topical": ("Overall", "Maintains Context"), "holistic-context": ("Coherence",)}),
    "quantidce": (("overall",), {"usr-topical": ("Overall", "Maintains Context"),
                                 "grade-dailydialog": ("Coherence",)}),
}


def adapt_on_dialogues(args: argparse.Namespace, folder: Path) -> None:
    run = folder / f"{args.metric}-topical-chat"
    score_keys, benchmarks = DIALOGUE_MEASURES[args.metric]
    record: dict = {"metric": args.metric, "seed": args.seed, "benchmarks": {}}
    if args.adapted is None:
        dialogues = folder / "topical-chat.jsonl"
        with dialogues.open("w", encoding="utf-8") as file:
            for dialogue in load_topical_chat_for_training(args.data_dir)["dialogue"]:
                file.write(json.dumps({"dialogue": dialogue}) + "\n")
        adapt = ["adapt", args.metric, "--dialogues", str(dialogues), "--output-dir", str(run),
                 "--overwrite-output-dir", "--seed", str(args.seed), *(["--bf16"] if args.bf16 else [])]
        seconds = hf_dialeval(*adapt)
        record |= {"command": [argument.replace(str(folder), "OUTPUT_DIR") for argument in adapt],
                   "adapt_seconds": round(seconds, 1)}
    else:  # a run of this command that adapted already (its benchmarks left to do)
        run = Path(args.adapted)
    report = json.loads((run / "adaptation_report.json").read_text())
    record["adapt_report"] = {key: report[key] for key in ("data", "steps", "checklist", "seconds", "peak_memory_mb")}
    for name, checkpoint in (("default", None), ("adapted", str(run))):
        metric = load_metric(args.metric, checkpoint)  # the benchmark command's scoring, each benchmark once
        for benchmark, dimensions in benchmarks.items():
            dataset = load_benchmark(benchmark, args.data_dir)
            output = metric.score_dataset(dataset, progress=f"{name}: {benchmark}")
            record["benchmarks"].setdefault(benchmark, {})[name] = {
                key: {dimension: scored_dimension(output.select(key), dataset[dimension], args.seed)
                      for dimension in dimensions} for key in score_keys}
            print(json.dumps({benchmark: {name: record["benchmarks"][benchmark][name]}}), flush=True)
    write_record(record, args.record or f"{args.metric}-topical-chat-seed{args.seed}.json")


def scored_dimension(scores: list[float], human: list[float | None], seed: int) -> dict:
    """Spearman (with its interval) of ``scores`` with the rated items' human scores."""
    rated = [(score, rating) for score, rating in zip(scores, human) if rating is not None]
    result = agreement([score for score, _ in rated], [rating for _, rating in rated], seed)
    return {key: result[key] for key in ("n", "spearman", "spearman_ci95")}


def write_record(record: dict, name: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {RESULTS / name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", choices=("ratings", "dialogues"), help="which adaptation to measure")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output-dir", required=True, help="where the data files, the runs and the scores go")
    parser.add_argument("--seed", type=int, default=0, help="seed of the halves, of adapt's held-out share and of "
                                                             "training")
    parser.add_argument("--metric", default=None, choices=sorted({*DIALOGUE_MEASURES, *RATING_MEASURES}),
                        help="the metric adapted (ratings: quantidce, rade or panel, default quantidce; dialogues: "
                             "default holistic-eval)")
    parser.add_argument("--benchmark", default="grade-convai2", help="ratings: the rated benchmark split in halves")
    parser.add_argument("--dimension", default="Coherence", help="ratings: its rated dimension taken as the score")
    parser.add_argument("--bf16", action="store_true", help="dialogues: train in bf16 (a CPU with bf16 instructions)")
    parser.add_argument("--adapted", default=None, help="dialogues: the folder an earlier run adapted (benchmark it "
                                                        "without adapting again)")
    parser.add_argument("--init-from", default=None, help="ratings: the checkpoint adapt starts from and that is "
                                                          "scored as the default (default: the shipped one)")
    parser.add_argument("--record", default=None, help="the results file's name (default: <metric>-<benchmark>-"
                                                       "seed<SEED>.json; dialogues: <metric>-topical-chat-"
                                                       "seed<SEED>.json)")
    args = parser.parse_args()
    measures = RATING_MEASURES if args.data == "ratings" else DIALOGUE_MEASURES
    args.metric = args.metric or next(iter(measures))
    if args.metric not in measures:
        parser.error(f"{args.data} adapts one of {', '.join(measures)}, not {args.metric}")
    folder = Path(args.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (adapt_on_ratings if args.data == "ratings" else adapt_on_dialogues)(args, folder)


if __name__ == "__main__":
    main()
