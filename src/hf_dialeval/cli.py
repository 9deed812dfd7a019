"""The ``hf-dialeval`` command line: ``score``, ``benchmark`` and the ``train`` group."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from . import BENCHMARKS, METRICS, load_benchmark, load_metric
from .commands import TRAIN_COMMANDS
from .data import DialogueValidationError
from .meta_eval import format_markdown, meta_evaluate, plot_scatter, write_results
from .scoring import OVERALL

DEFAULT_METRIC = "fined-eval"

SCORE_EPILOG = """\
input (JSONL, one item per line), either all dialogue level:
  {"dialogue": ["Hi!", "Hello, how are you?", "Fine."], "speakers": ["User", "System", "User"]}
or all turn level (condition and reference optional):
  {"context": ["Hi!", "Hello, how are you?"], "response": "Fine, thanks.", "condition": "...", "reference": "..."}

output (JSONL): each input item with "scores" (one value per dimension), "overall" (higher is better)
and "truncated" (true when text was cut to fit the model).

example:
  hf-dialeval score --metric length --input examples/dialogues.jsonl --output scored.jsonl
"""

BENCHMARK_EPILOG = """\
benchmarks: {names}, or json:<path> for the generic release format
  {{"contexts": [[...], ...], "responses": [...], "references": [...], "scores": [...]}}
  (no "responses": dialogue-level items; a "NO REF" reference means none).

output: a markdown table on stdout (Pearson, Spearman, Kendall with p-values, n, bootstrap 95% CI of
Spearman per human-rated dimension); --output writes the same as JSON; --plot writes one scatter PNG per dimension.

example:
  hf-dialeval benchmark --metric length --benchmark fed-dialogue --data-dir ../shared/data --output r.json
"""


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", default=DEFAULT_METRIC, choices=sorted(METRICS),
                        help=f"metric to score with (default: {DEFAULT_METRIC})")
    parser.add_argument("--checkpoint", default=None,
                        help="Hub repo id or local folder of the metric's model (default: the metric's shipped default)")
    parser.add_argument("--batch-size", type=int, default=32, help="items per forward pass (default: 32)")
    parser.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda:0 (default: cuda if available)")
    parser.add_argument("--score-key", default=OVERALL,
                        help="which of the metric's scores to use: 'overall' (default) or one of its dimensions")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-dialeval", description="Learned dialogue-evaluation metrics.")
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a JSONL file of dialogues or turns",
                                description="Score dialogue-level or turn-level items with a metric.",
                                epilog=SCORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    score.add_argument("--input", default="-", help="JSONL file of items, '-' for stdin (default)")
    score.add_argument("--output", default="-", help="JSONL file to write, '-' for stdout (default)")
    _add_model_options(score)
    score.set_defaults(func=run_score)

    bench = commands.add_parser("benchmark", help="correlate a metric with human judgements",
                                description="Score every item of a benchmark and correlate with human ratings.",
                                epilog=BENCHMARK_EPILOG.format(names=", ".join(BENCHMARKS)),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--benchmark", required=True, help="canonical benchmark name or json:<path>")
    bench.add_argument("--split", default="test", help="split, for benchmarks that have several (default: test)")
    bench.add_argument("--data-dir", default=None,
                       help="folder holding benchmarks/ and corpora/ (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)")
    bench.add_argument("--output", default=None, help="write the results as JSON here")
    bench.add_argument("--plot", default=None, metavar="DIR", help="write a scatter plot PNG per dimension into DIR")
    _add_model_options(bench)
    bench.set_defaults(func=run_benchmark)

    train = commands.add_parser("train", help="train a metric's model (one sub-command per metric)",
                                description="Train a metric's model with transformers.Trainer.")
    trainers = train.add_subparsers(dest="train_metric", required=True, metavar="METRIC")
    for name, command in sorted(TRAIN_COMMANDS.items()):
        command.configure(trainers.add_parser(name, help=command.help, description=command.description,
                                              formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def _read_items(handle: TextIO) -> list[dict[str, Any]]:
    items = []
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise DialogueValidationError(f"input line {number} is not valid JSON: {error}") from error
    return items


def run_score(args: argparse.Namespace) -> None:
    with (sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")) as handle:
        items = _read_items(handle)
    metric = load_metric(args.metric, checkpoint=args.checkpoint, device=args.device, batch_size=args.batch_size)
    records = metric.score_items(items, progress=True).records()
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        for item, record in zip(items, records):
            out.write(json.dumps({**item, **record}, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


def run_benchmark(args: argparse.Namespace) -> None:
    dataset = load_benchmark(args.benchmark, data_dir=args.data_dir, split=args.split)
    metric = load_metric(args.metric, checkpoint=args.checkpoint, device=args.device, batch_size=args.batch_size)
    result, scores = meta_evaluate(metric, dataset, args.benchmark, metric_name=args.metric,
                                   score_key=args.score_key, progress=True)
    print(format_markdown(result))
    if args.output:
        write_results(result, args.output)
    if args.plot:
        for path in plot_scatter(result, scores, dataset, args.plot):
            print(f"wrote {path}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (DialogueValidationError, FileNotFoundError, KeyError, ValueError) as error:
        print(f"hf-dialeval: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
