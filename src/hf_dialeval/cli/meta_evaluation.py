"""The commands that set metrics against human judgements (:mod:`hf_dialeval.evaluation`): ``benchmark`` (one metric
on one benchmark), ``compare`` (does one metric agree with people better than another?) and ``leaderboard`` (every
metric on every benchmark)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval.cli.errors import UsageError
from hf_dialeval.cli.options import (
    add_dataclass_options,
    add_model_options,
    add_statistics_options,
    check_writable,
    load_metric_from,
    metric_choice,
    show_progress,
)
from hf_dialeval.data.benchmarks import BENCHMARKS
from hf_dialeval.training.data_options import columns_from, item_column_options

BENCHMARK_EPILOG = """\
benchmarks: {names}, or json:<path> for the generic release format
  {{"contexts": [[...], ...], "responses": [...], "references": [...], "systems": [...], "scores": [...]}}
  (no "responses": dialogue-level items; a "NO REF" reference means none; "systems", optional, names each
  item's system; empty texts are kept).

output: a markdown table on stdout (Pearson, Spearman, Kendall with p-values, n, bootstrap 95% CI of
Spearman per human-rated dimension) with the counts of truncated and empty items; --output writes the
same as JSON, signature included; --plot writes one scatter PNG per dimension.

example:
  hf-dialeval benchmark --metric length --benchmark fed-dialogue --data-dir ../shared/data --output r.json
"""

COMPARE_EPILOG = """\
levels: item; system (the mean score of each system, where the benchmark names the systems: FED, USR, GRADE,
a json: release with "systems"); grouped (the correlation among the candidates of each context, averaged: turn
level, contexts with 3 or more candidates).

output: per human dimension and level, each metric's Spearman with its bootstrap 95% interval (resampling items;
systems and contexts together at the system level of a systems x contexts design; contexts when grouped), the
difference first - second with its interval from the same resamples, the paired permutation test's two-sided
p-value and the Williams test's one-sided p-value (item and system levels). Scores are cached (--cache-dir).

example:
  hf-dialeval compare --metric similarity --metric quantidce --benchmark grade-convai2 --data-dir ../shared/data
"""

LEADERBOARD_EPILOG = """\
Every metric (default: every registered metric's shipped default; NAME=CHECKPOINT for another checkpoint) on every
benchmark it can score (a metric that needs a reference or a context skips benchmarks without them). Scores are
cached per (metric signature, benchmark) under --cache-dir, so a re-run scores only what changed.

output (--output-dir): leaderboard.json (every rated dimension at every level), leaderboard.md (Spearman with its
bootstrap 95% interval per cell at each level, the paper's number beside, the best per column in bold and every
metric not significantly worse than it starred) and leaderboard.png (a heatmap); --readme FILE rewrites the
item-level table between the file's <!-- leaderboard:begin --> and <!-- leaderboard:end --> lines.

example:
  hf-dialeval leaderboard --data-dir ../shared/data --metric length --metric similarity --benchmark fed-turn
"""


def register(commands: argparse._SubParsersAction) -> None:
    """Adds ``benchmark``, ``compare`` and ``leaderboard`` to the parser's sub-commands ``commands``."""
    bench = commands.add_parser("benchmark", help="correlate a metric with human judgements",
                                description="Score every item of a benchmark and correlate with human ratings.",
                                epilog=BENCHMARK_EPILOG.format(names=", ".join(BENCHMARKS)),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--benchmark", required=True,
                       help="canonical benchmark name, or json:<path> (a release file, or a table of your own ratings)")
    bench.add_argument("--split", default="test", help="split, for benchmarks that have several (default: test)")
    bench.add_argument("--data-dir", default=None,
                       help="folder holding benchmarks/ and corpora/ (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)")
    bench.add_argument("--output", default=None, help="write the results as JSON here")
    bench.add_argument("--plot", default=None, metavar="DIR", help="write a scatter plot PNG per dimension into DIR")
    bench.add_argument("--score-key", default="overall",
                       help="which of the metric's scores to correlate: 'overall' (default) or one of its dimensions")
    add_dataclass_options(bench, item_column_options("score_column"))  # a json: table's, as score and adapt read it
    add_model_options(bench)
    bench.set_defaults(func=run_benchmark)

    compare = commands.add_parser("compare", help="does one metric agree with people better than another?",
                                  description="Compare two metrics' correlations with human judgements on one "
                                              "benchmark, at every level, with intervals and significance tests.",
                                  epilog=COMPARE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("--metric", dest="metrics", action="append", required=True, type=metric_choice,
                         metavar="NAME[=CHECKPOINT]", help="a metric to compare; give exactly two")
    compare.add_argument("--benchmark", required=True,
                       help="canonical benchmark name, or json:<path> (a release file, or a table of your own ratings)")
    compare.add_argument("--split", default="test", help="split, for benchmarks that have several (default: test)")
    compare.add_argument("--dimension", dest="dimensions", action="append", default=None,
                         help="a human-rated dimension to compare on (repeatable; default: all)")
    compare.add_argument("--output", default=None, help="write the comparison as JSON here")
    add_dataclass_options(compare, item_column_options("score_column"))
    add_statistics_options(compare)
    compare.set_defaults(func=run_compare)

    leaderboard = commands.add_parser("leaderboard", help="every metric on every benchmark: one table, JSON, heatmap",
                                      description="Score every registered metric on every benchmark it can score.",
                                      epilog=LEADERBOARD_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    leaderboard.add_argument("--metric", dest="metrics", action="append", default=None, type=metric_choice,
                             metavar="NAME[=CHECKPOINT]", help="a metric to run (repeatable; default: every one)")
    leaderboard.add_argument("--benchmark", dest="benchmarks", action="append", default=None, metavar="NAME",
                             help="a benchmark to run, canonical name or json:<path> (repeatable; default: every "
                                  "registered one)")
    leaderboard.add_argument("--output-dir", default="leaderboard",
                             help="folder for leaderboard.json, .md and .png (default: ./leaderboard)")
    leaderboard.add_argument("--readme", default=None, metavar="FILE",
                             help="rewrite the item-level table between FILE's leaderboard markers")
    leaderboard.add_argument("--held-out", dest="held_out", action="append", default=[], metavar="NAME=FILE",
                             help="the held-out scores of a metric fitted on the rated benchmarks (the panel), as "
                                  "benchmarks/panel/run.py writes them: shown, marked, in place of its in-sample "
                                  "scores, which are never shown (repeatable; of several files of one metric, a later "
                                  "one's scores of a benchmark replace an earlier one's)")
    add_statistics_options(leaderboard)
    leaderboard.set_defaults(func=run_leaderboard)


def run_benchmark(args: argparse.Namespace) -> None:
    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.evaluation.meta_evaluation import format_markdown, meta_evaluate, write_results
    from hf_dialeval.evaluation.plots import plot_scatter
    from hf_dialeval.inference.factory import check_checkpoints_for, check_items_for
    from hf_dialeval.inference.score_output import OVERALL

    if args.output:
        check_writable(args.output, "--output")
    if args.plot and Path(args.plot).exists() and not Path(args.plot).is_dir():
        raise UsageError(f"--plot {args.plot} is a file: give a folder")
    args.checkpoint = check_checkpoints_for(args.metric, args.checkpoint)
    dataset = load_benchmark(args.benchmark, data_dir=args.data_dir, split=args.split, columns=columns_from(args))
    check_items_for(args.metric, list(dataset))  # e.g. a reference-assisted metric on items without references
    metric = load_metric_from(args)
    result, output = meta_evaluate(metric, dataset, args.benchmark, metric_name=args.metric,
                                   score_key=args.score_key, progress=show_progress(args.quiet))
    print(format_markdown(result))
    if args.output:
        write_results(result, args.output)
    if args.plot:
        # each human dimension against the metric's score of the same quality where it has one (plots.py)
        scores = {OVERALL: output.select(args.score_key), **(output.scores if args.score_key == OVERALL else {})}
        for path in plot_scatter(result, scores, dataset, args.plot):
            print(f"wrote {path}", file=sys.stderr)


def run_compare(args: argparse.Namespace) -> None:
    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.evaluation.compare import compare_scores, format_comparison
    from hf_dialeval.inference.factory import check_checkpoints_for, load_metric
    from hf_dialeval.inference.score_cache import ScoreCache

    if len(args.metrics) != 2:
        raise UsageError(f"compare takes exactly two --metric options, not {len(args.metrics)}")
    if args.output:
        check_writable(args.output, "--output")
    checkpoints = [check_checkpoints_for(choice.name, choice.checkpoint) for choice in args.metrics]
    dataset = load_benchmark(args.benchmark, data_dir=args.data_dir, split=args.split, columns=columns_from(args))
    cache = ScoreCache(args.cache_dir)
    scores = []
    for choice, checkpoint in zip(args.metrics, checkpoints):
        metric = load_metric(choice.name, checkpoint=checkpoint, device=args.device, batch_size=args.batch_size,
                             dtype=args.dtype)
        output, cached = cache.scores(metric, dataset, args.benchmark, progress=show_progress(args.quiet))
        print(f"{choice.label}: {'cached scores' if cached else 'scored'} ({cache.path(metric, dataset, args.benchmark)})",
              file=sys.stderr)
        scores.append(output.overall)
    comparison = compare_scores(*scores, dataset, args.dimensions, n_resamples=args.resamples,
                                permutations=args.permutations, seed=args.seed)
    first, second = (choice.label for choice in args.metrics)
    print(format_comparison(comparison, first, second, args.benchmark))
    if args.output:
        record = {"first": first, "second": second, "benchmark": args.benchmark, "comparison": comparison}
        Path(args.output).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def run_leaderboard(args: argparse.Namespace) -> None:
    from hf_dialeval.evaluation.leaderboard import (
        build_leaderboard,
        format_leaderboard,
        read_held_out,
        update_readme,
        write_leaderboard,
    )
    from hf_dialeval.inference.score_cache import ScoreCache

    if args.readme and not Path(args.readme).is_file():
        raise UsageError(f"--readme {args.readme} does not exist")
    held_out: dict[str, dict[str, list[float]]] = {}
    given_by: dict[tuple[str, str], str] = {}
    for pair in args.held_out:
        name, _, path = pair.partition("=")
        if not path:
            raise UsageError(f"--held-out takes NAME=FILE, not {pair!r}")
        for benchmark, scores in read_held_out(path).items():
            if (name, benchmark) in given_by:
                print(f"--held-out: {name}'s scores of {benchmark} from {path}, not {given_by[name, benchmark]}",
                      file=sys.stderr)
            given_by[name, benchmark] = path
            held_out.setdefault(name, {})[benchmark] = scores
    record = build_leaderboard(args.metrics or (), args.benchmarks or BENCHMARKS, data_dir=args.data_dir,
                               cache=ScoreCache(args.cache_dir), device=args.device, batch_size=args.batch_size,
                               dtype=args.dtype, n_resamples=args.resamples, permutations=args.permutations,
                               seed=args.seed, held_out=held_out, progress=show_progress(args.quiet))
    print(format_leaderboard(record))
    for path in write_leaderboard(record, args.output_dir):
        print(f"wrote {path}", file=sys.stderr)
    if args.readme:
        update_readme(args.readme, format_leaderboard(record, levels=("item",)))
        print(f"updated {args.readme}", file=sys.stderr)
