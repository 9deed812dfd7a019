"""The ``hf-dialeval`` command line: ``score``, ``benchmark``, ``compare``, ``leaderboard``, ``checklist``, the
``train`` group and ``models`` (list, install and verify the pretrained models that load offline:
:mod:`hf_dialeval.cli.models`).

It starts fast (``--help`` imports no deep-learning library: metrics and train commands come from the light
registry and load on use), every user error is one line on stderr with exit status 2 (``--debug`` shows the
traceback), and library progress bars and warnings stay quiet unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from hf_dialeval.data.benchmarks import BENCHMARKS
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.evaluation.checklist import CORPORA, DEFAULT_PAIRS, PERTURBATIONS, REFERENCE_CORPORA
from hf_dialeval.inference.output_lock import StaleLockWarning
from hf_dialeval.inference.precision import PRECISIONS, SlowPrecisionWarning
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.registry import METRICS, MetricChoice, TrainCommand, metric_names, metric_options, train_commands

DEFAULT_METRIC = "fined-eval"
PROG = "hf-dialeval"

MAIN_EPILOG = """\
metrics (--metric NAME; every exposed score is higher-is-better):
{metrics}

examples:
  hf-dialeval score --input examples/dialogues.jsonl
  hf-dialeval benchmark --metric length --benchmark fed-dialogue --data-dir ../shared/data
  hf-dialeval checklist --metric quantidce --data-dir ../shared/data
  hf-dialeval compare --metric similarity --metric quantidce --benchmark grade-convai2 --data-dir ../shared/data
  hf-dialeval leaderboard --data-dir ../shared/data
  hf-dialeval benchmark --metric rade --benchmark rade-emotion --data-dir ../shared/data
  hf-dialeval train fined-eval --help
  hf-dialeval models install mpnet
"""

SCORE_EPILOG = """\
input (JSONL, one item per line; --input FILE, or piped into stdin), either all dialogue level:
  {"dialogue": ["Hi!", "Hello, how are you?", "Fine."], "speakers": ["User", "System", "User"]}
or all turn level (condition and reference optional; reference-assisted metrics, rade and reference-similarity,
need the reference):
  {"context": ["Hi!", "Hello, how are you?"], "response": "Fine, thanks.", "condition": "...", "reference": "..."}
Empty utterances are data: they stay in place, and an empty response gets the metric's lowest score.

output (JSONL): each input item with "scores" (one value per dimension), "overall" (higher is better),
"truncated" (true when text was cut to fit the model) and "empty" (true when the item holds empty text).
The run's signature (metric, checkpoint, versions, settings, counts) goes to OUTPUT.signature.json, or to
stderr when the output is stdout.

CSV (.csv, .tsv: a header row naming the fields; a list field is a JSON array or one utterance per line of its
cell) and Parquet (.parquet) are read too.

Inputs of any size are read, scored and written --chunk-size items at a time, into OUTPUT.partial, renamed to
OUTPUT once every item is scored. One run at a time writes an output (OUTPUT.lock). After a kill, the same command
with --resume checks every kept line against the input and scores the rest; --overwrite discards the interrupted
run's OUTPUT.partial instead. Data-parallel:
  torchrun --nproc_per_node N -m hf_dialeval.cli score ... (or accelerate launch --multi_gpu --num_processes N)
scores whole chunks on each process, the output equal to one process's.

examples:
  hf-dialeval score --metric length --input examples/dialogues.jsonl --output scored.jsonl
  hf-dialeval score --metric quantidce --dtype bf16 --input turns.parquet --output scored.jsonl --resume
"""

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

CHECKLIST_EPILOG = """\
perturbations (each changes only the system's turns, the second speaker's):
{perturbations}

output: a markdown table on stdout: per perturbation, the share of pairs in which the original scores higher
(ties count half: 0.5 is a metric that cannot tell), with a bootstrap 95% interval, on "overall" and on each
dimension the perturbation should hurt; --output writes the same as JSON, signature included.

example:
  hf-dialeval checklist --metric length --corpus dailydialog --data-dir ../shared/data --pairs 50
"""

TRAIN_EPILOG = """\
Each command takes its metric's options and every transformers.TrainingArguments option, and writes one run
layout: the merged model (what --checkpoint takes), adapter/ (a LoRA adapter, trained or factored), full/ (the
unfactored model, with --adapter-rank) and training_record.json.

example:
  hf-dialeval train fined-eval --help
"""


class UsageError(Exception):
    """A mistake in how the command was called: one line on stderr, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """Reports a usage error on one line (with where to find help) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class TrainHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description and example as written; each option's default after its help, unless it has none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        flag = action.nargs == 0  # a switch: off unless given
        if action.default not in (None, argparse.SUPPRESS) and not flag and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def argument_parser_class(help_only: bool) -> type[argparse.ArgumentParser]:
    """``transformers.HfArgumentParser``. For ``--help``, while transformers is not imported yet, its module file
    is loaded on its own: it needs only the standard library and yaml, but importing it through the package
    first runs ``transformers/__init__`` (0.6 s here), which would take ``--help`` past a second."""
    spec = importlib.util.find_spec("transformers") if help_only and "transformers" not in sys.modules else None
    if spec is not None and spec.origin is not None:
        module_spec = importlib.util.spec_from_file_location(
            "hf_dialeval._hf_argparser", Path(spec.origin).with_name("hf_argparser.py"))
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
            return module.HfArgumentParser
        except (ImportError, OSError):  # a transformers whose argparser needs its package: the regular import
            pass
    from transformers import HfArgumentParser

    return HfArgumentParser


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    return _whole_number(text, 0)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true", help="show library progress bars, logs and warnings")
    parser.add_argument("--debug", dest="show_traceback", action="store_true",
                        help="show the full traceback of an error")




def _add_device_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=positive_int, default=32, help="items per forward pass (default: 32)")
    parser.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda:0 (default: cuda if available)")
    parser.add_argument("--dtype", default=None, choices=list(PRECISIONS),
                        help="precision the model computes in, under autocast: fp32, bf16 (2.2-3.0x faster than fp32 "
                             "on the CPU of the README's tables; slower on a CPU without bf16 instructions, which a "
                             "warning says) or fp16 (GPU); default: fp32, or the checkpoint's own where it names one "
                             "and the device computes it natively (HolisticEval's: bf16); metrics without a model "
                             "ignore it")


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", default=DEFAULT_METRIC, choices=metric_names(),
                        help=f"metric to score with (default: {DEFAULT_METRIC})")
    parser.add_argument("--checkpoint", default=None,
                        help="Hub repo id or local folder of the metric's model (default: the metric's shipped default)")
    _add_device_options(parser)
    for option in metric_options().values():  # each metric's own options, from its registry entry
        takers = ", ".join(name for name, spec in METRICS.items() if option in spec.options)
        parser.add_argument(option.flag, dest=option.name, default=None, choices=option.choices,
                            help=f"{takers} only: {option.help}")
    _add_run_options(parser)


def metric_choice(text: str) -> MetricChoice:
    try:
        return MetricChoice.parse(text)
    except (KeyError, ValueError) as error:
        raise argparse.ArgumentTypeError(_one_line(error)) from None


#: meta_eval's defaults, restated so that --help imports no numerical library (a test keeps them equal).
BOOTSTRAP_RESAMPLES, PERMUTATIONS = 1000, 1000


def _add_statistics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None,
                        help="folder holding benchmarks/ (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)")
    parser.add_argument("--cache-dir", default=None,
                        help="where scores are cached (default: scores/ in $HF_DIALEVAL_CACHE, else "
                             "~/.cache/hf-dialeval/scores)")
    parser.add_argument("--resamples", type=non_negative_int, default=BOOTSTRAP_RESAMPLES,
                        help=f"bootstrap resamples per interval (default: {BOOTSTRAP_RESAMPLES}; 0: no intervals)")
    parser.add_argument("--permutations", type=positive_int, default=PERMUTATIONS,
                        help=f"permutations per test (default: {PERMUTATIONS})")
    parser.add_argument("--seed", type=int, default=0, help="seed of resampling and permutations (default: 0)")
    _add_device_options(parser)
    _add_run_options(parser)


def _load_metric(args: argparse.Namespace) -> Any:
    """The metric the model options name, with the metric-specific ones it takes (its registry ``options``)."""
    from hf_dialeval.inference.metric import load_metric

    given = {option: getattr(args, option.name) for option in metric_options().values()
             if getattr(args, option.name) is not None}
    for option in given:
        if option not in METRICS[args.metric].options:
            takers = [name for name, spec in METRICS.items() if option in spec.options]
            raise UsageError(f"{option.flag} is an option of {', '.join(takers)}: {args.metric} takes none")
    return load_metric(args.metric, checkpoint=args.checkpoint, device=args.device, batch_size=args.batch_size,
                       dtype=args.dtype, **{option.name: value for option, value in given.items()})


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser. A train command's options are added only when ``argv`` selects it (each imports its
    metric's training stack); the others are listed with their one-line help."""
    metrics = "\n".join(f"  {name:<21} {spec.level:<9} {spec.summary}{' (default)' if name == DEFAULT_METRIC else ''}"
                        for name, spec in sorted(METRICS.items()))
    parser = OneLineParser(prog=PROG, description="Learned dialogue-evaluation metrics.",
                           epilog=MAIN_EPILOG.format(metrics=metrics),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    score = commands.add_parser("score", help="score a JSONL file of dialogues or turns",
                                description="Score dialogue-level or turn-level items with a metric.",
                                epilog=SCORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    score.add_argument("--input", default=None,
                       help="JSONL, CSV (.csv, .tsv) or Parquet (.parquet) file of items, of any size (default: JSONL "
                            "on stdin, when it is a pipe)")
    score.add_argument("--output", default="-", help="JSONL file to write, '-' for stdout (default)")
    score.add_argument("--chunk-size", type=positive_int, default=1024,
                       help="items read, scored and written at a time; under torchrun or accelerate launch each "
                            "process scores one chunk at a time (default: 1024)")
    score.add_argument("--resume", action="store_true",
                       help="continue an --output that a killed run left: keep its complete lines (each checked against "
                            "the input), score the rest")
    score.add_argument("--overwrite", action="store_true",
                       help="discard OUTPUT.partial, the work of an interrupted run, and score from the start (without "
                            "--resume or --overwrite such a file is an error, never lost silently)")
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
    bench.add_argument("--score-key", default="overall",
                       help="which of the metric's scores to correlate: 'overall' (default) or one of its dimensions")
    _add_model_options(bench)
    bench.set_defaults(func=run_benchmark)

    compare = commands.add_parser("compare", help="does one metric agree with people better than another?",
                                  description="Compare two metrics' correlations with human judgements on one "
                                              "benchmark, at every level, with intervals and significance tests.",
                                  epilog=COMPARE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("--metric", dest="metrics", action="append", required=True, type=metric_choice,
                         metavar="NAME[=CHECKPOINT]", help="a metric to compare; give exactly two")
    compare.add_argument("--benchmark", required=True, help="canonical benchmark name or json:<path>")
    compare.add_argument("--split", default="test", help="split, for benchmarks that have several (default: test)")
    compare.add_argument("--dimension", dest="dimensions", action="append", default=None,
                         help="a human-rated dimension to compare on (repeatable; default: all)")
    compare.add_argument("--output", default=None, help="write the comparison as JSON here")
    _add_statistics_options(compare)
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
    _add_statistics_options(leaderboard)
    leaderboard.set_defaults(func=run_leaderboard)

    checklist = commands.add_parser(
        "checklist", help="does the metric prefer human replies to degraded ones? (perturbation pairs)",
        description="Score pairs of a held-out human dialogue and the same dialogue with the system's turns degraded.",
        epilog=CHECKLIST_EPILOG.format(perturbations="\n".join(
            f"  {p.name:<{max(map(len, PERTURBATIONS))}} {p.description} (should hurt: {', '.join(p.hurts)})"
            for p in PERTURBATIONS.values())),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    checklist.add_argument("--corpus", default="dailydialog", choices=sorted({**CORPORA, **REFERENCE_CORPORA}),
                           help="held-out dialogues the pairs come from (default: dailydialog, its test split); "
                                "reference-assisted metrics (rade, reference-similarity) need "
                                f"{', '.join(REFERENCE_CORPORA)}, whose contexts have several human replies: one is "
                                "the original, another the reference")
    checklist.add_argument("--split", default=None,
                           help="the corpus split the pairs come from (default: its held-out one, DailyDialog test, "
                                "Topical-Chat test_freq and DailyDialog++ test; e.g. validation to choose between "
                                "models)")
    checklist.add_argument("--pairs", type=positive_int, default=DEFAULT_PAIRS,
                           help=f"pairs per perturbation (default: {DEFAULT_PAIRS})")
    checklist.add_argument("--perturbations", nargs="+", default=None, choices=list(PERTURBATIONS),
                           help="the perturbations to run (default: all)")
    checklist.add_argument("--seed", type=int, default=0, help="seed of the pair sampling (default: 0)")
    checklist.add_argument("--data-dir", default=None,
                           help="folder holding corpora/ (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)")
    checklist.add_argument("--output", default=None, help="write the results as JSON here")
    _add_model_options(checklist)
    checklist.set_defaults(func=run_checklist_command)

    from hf_dialeval.cli.models import add_models_commands  # here: it uses this module's run options

    add_models_commands(commands)

    train = commands.add_parser("train", help="train a metric's model (one sub-command per metric)",
                                description="Train a metric's model with transformers.Trainer.", epilog=TRAIN_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    commands_by_name = train_commands()
    selected = argv[1] if len(argv) > 1 and argv[0] == "train" and argv[1] in commands_by_name else None
    help_only = any(arg in ("-h", "--help") for arg in argv[2:])
    parser_class = OneLineParser
    if selected is not None:
        parser_class = type("OneLineArgumentParser", (OneLineParser, argument_parser_class(help_only)), {})
    trainers = train.add_subparsers(dest="train_metric", required=True, metavar="METRIC", parser_class=parser_class)
    for name, command in sorted(commands_by_name.items()):
        if name != selected:
            trainers.add_parser(name, help=command.help)
            continue
        # --help lists the light options; a run parses (and validates) the full TrainingArguments subclass
        options = command.options
        required = [f"--{field.name.replace('_', '-')} {field.name.upper()}" for field in dataclasses.fields(options)
                    if field.metadata.get("required")]
        subparser = trainers.add_parser(
            name, help=command.help, usage=" ".join(["%(prog)s", *required, "[options]"]),
            dataclass_types=[options if help_only else command.implementation()[0]],
            description=inspect.cleandoc(options.__doc__), epilog=options.EXAMPLE, formatter_class=TrainHelpFormatter,
            conflict_handler="resolve")  # our --debug replaces TrainingArguments' --debug (a torch debug mode)
        _add_run_options(subparser)
        subparser.set_defaults(func=run_train, train_command=command)
    return parser


def check_writable(path: str, what: str) -> None:
    """Fail before any scoring when ``path`` cannot be written."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{what} {path} is a folder: give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {what} {path}: no such folder {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"cannot write {what} {path}: permission denied")


def check_checkpoint_names(checkpoint: str | None) -> None:
    """A checkpoint path that does not exist fails before the seconds torch and transformers take to import (loading
    the metric checks it again: a library caller reaches that without the command line)."""
    from hf_dialeval.modeling.checkpoints import check_checkpoint, checkpoint_names

    for name in checkpoint_names(checkpoint):
        check_checkpoint(name)


def check_device(device: str | None) -> None:
    """A bad ``--device`` fails before any model is loaded."""
    if device is not None:
        from hf_dialeval.inference.model_metric import resolve_device

        resolve_device(device)


def run_score(args: argparse.Namespace) -> None:
    from hf_dialeval.inference.metric import check_items_for, json_ready
    from hf_dialeval.inference.process_group import ProcessGroup
    from hf_dialeval.inference.readers import is_csv, is_parquet, read_chunks, stdin_source
    from hf_dialeval.inference.streaming import ScoringRun

    if args.input is None or args.input == "-":
        source = stdin_source()
    elif Path(args.input).is_dir():
        raise UsageError(f"--input {args.input} is a folder: give a JSONL, CSV or Parquet file")
    elif not Path(args.input).is_file():
        raise UsageError(f"no such input file: {args.input}")
    else:
        source = args.input
    if args.output != "-":
        check_writable(args.output, "--output")
        if is_parquet(args.output) or is_csv(args.output):
            raise UsageError(f"--output {args.output}: the output is JSONL (one scored item per line); give a .jsonl "
                             "file")
    check_checkpoint_names(args.checkpoint)
    group = ProcessGroup(args.device)
    with ScoringRun(source, sys.stdout if args.output == "-" else args.output, resume=args.resume,
                    overwrite=args.overwrite, chunk_size=args.chunk_size, group=group) as run:
        if source is args.input:  # a file that does not parse, or items the metric cannot score, fail before it loads
            first_chunk = next(read_chunks(source, args.chunk_size), None)
            if first_chunk:
                check_items_for(args.metric, first_chunk)
        check_device(args.device)
        if args.device is None and group.device is not None:
            args.device = group.device  # the launcher's device for this process
        result = run.score(_load_metric(args), progress=True)
    if group.is_main and args.resume:
        print(f"resumed after {result.resumed} scored items; scored {result.scored} more", file=sys.stderr)
    if group.is_main and args.output == "-":
        print(f"signature: {json.dumps(result.signature, ensure_ascii=False)}", file=sys.stderr)
        if result.system_scores:
            print(f"system scores: {json.dumps(json_ready(result.system_scores), ensure_ascii=False)}",
                  file=sys.stderr)


def run_benchmark(args: argparse.Namespace) -> None:
    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.evaluation.plots import plot_scatter
    from hf_dialeval.evaluation.statistics import format_markdown, meta_evaluate, write_results
    from hf_dialeval.inference.metric import OVERALL, check_items_for

    if args.output:
        check_writable(args.output, "--output")
    if args.plot and Path(args.plot).exists() and not Path(args.plot).is_dir():
        raise UsageError(f"--plot {args.plot} is a file: give a folder")
    check_checkpoint_names(args.checkpoint)
    dataset = load_benchmark(args.benchmark, data_dir=args.data_dir, split=args.split)
    check_items_for(args.metric, list(dataset))  # e.g. a reference-assisted metric on items without references
    check_device(args.device)
    metric = _load_metric(args)
    result, output = meta_evaluate(metric, dataset, args.benchmark, metric_name=args.metric,
                                   score_key=args.score_key, progress=True)
    print(format_markdown(result))
    if args.output:
        write_results(result, args.output)
    if args.plot:
        # each human dimension against the metric's score of the same quality where it has one (plots.py)
        scores = {OVERALL: output.select(args.score_key), **(output.scores if args.score_key == OVERALL else {})}
        for path in plot_scatter(result, scores, dataset, args.plot):
            print(f"wrote {path}", file=sys.stderr)


def training_arguments(args: argparse.Namespace) -> Any:
    """The train command's ``TrainingArguments`` subclass, built (and validated) from its parsed options."""
    arguments_class = args.train_command.implementation()[0]
    names = {field.name for field in dataclasses.fields(arguments_class) if field.init}
    return arguments_class(**{key: value for key, value in vars(args).items() if key in names})


def run_checklist_command(args: argparse.Namespace) -> None:
    from hf_dialeval.evaluation.checklist import (
        checklist_record,
        format_checklist,
        load_checklist_corpus,
        load_checklist_references,
        run_checklist,
    )

    if args.output:
        check_writable(args.output, "--output")
    check_checkpoint_names(args.checkpoint)
    # the metric's class says whether it reads a reference (importing its module, loading no weights)
    if args.corpus not in REFERENCE_CORPORA and METRICS[args.metric].metric().needs_reference:
        raise UsageError(f"--metric {args.metric} scores a reply against a reference reply, and --corpus {args.corpus} "
                         "has one human reply per turn (the original: as the reference it would win every pair); give "
                         f"--corpus {' or '.join(REFERENCE_CORPORA)}, whose contexts have several human replies")
    dialogues = load_checklist_corpus(args.corpus, args.data_dir, args.split)
    references = load_checklist_references(args.corpus, args.data_dir, args.split)
    check_device(args.device)
    metric = _load_metric(args)
    rows = run_checklist(metric, dialogues, args.pairs, args.seed, args.perturbations, progress=True,
                         references=references)
    corpus = args.corpus if args.split is None else f"{args.corpus} ({args.split})"
    print(format_checklist(rows, args.metric, metric.dimensions, corpus))
    if args.output:
        record = checklist_record(metric, args.metric, rows, args.corpus, args.pairs, args.seed, args.split)
        Path(args.output).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run_compare(args: argparse.Namespace) -> None:
    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.evaluation.compare import compare_scores, format_comparison
    from hf_dialeval.inference.metric import load_metric
    from hf_dialeval.inference.score_cache import ScoreCache

    if len(args.metrics) != 2:
        raise UsageError(f"compare takes exactly two --metric options, not {len(args.metrics)}")
    if args.output:
        check_writable(args.output, "--output")
    for choice in args.metrics:
        check_checkpoint_names(choice.checkpoint)
    dataset = load_benchmark(args.benchmark, data_dir=args.data_dir, split=args.split)
    check_device(args.device)
    cache = ScoreCache(args.cache_dir)
    scores = []
    for choice in args.metrics:
        metric = load_metric(choice.name, checkpoint=choice.checkpoint, device=args.device, batch_size=args.batch_size,
                             dtype=args.dtype)
        output, cached = cache.scores(metric, dataset, args.benchmark, progress=True)
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
        update_readme,
        write_leaderboard,
    )
    from hf_dialeval.inference.score_cache import ScoreCache

    if args.readme and not Path(args.readme).is_file():
        raise UsageError(f"--readme {args.readme} does not exist")
    check_device(args.device)
    record = build_leaderboard(args.metrics or (), args.benchmarks or BENCHMARKS, data_dir=args.data_dir,
                               cache=ScoreCache(args.cache_dir), device=args.device, batch_size=args.batch_size,
                               dtype=args.dtype,
                               n_resamples=args.resamples, permutations=args.permutations, seed=args.seed)
    print(format_leaderboard(record))
    for path in write_leaderboard(record, args.output_dir):
        print(f"wrote {path}", file=sys.stderr)
    if args.readme:
        update_readme(args.readme, format_leaderboard(record, levels=("item",)))
        print(f"updated {args.readme}", file=sys.stderr)


def run_train(args: argparse.Namespace) -> None:
    command: TrainCommand = args.train_command
    command.implementation()[1](training_arguments(args))


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file=None,
                      line: str | None = None) -> None:
    """A warning as one line on stderr, on a line of its own even while a progress bar is drawn there."""
    from tqdm.auto import tqdm

    text = _one_line(message if isinstance(message, Warning) else Warning(message))
    tqdm.write(f"{PROG}: warning: {text}", file=sys.stderr)


def quiet_libraries() -> None:
    """No weight-loading bars, library logs or warnings (set before those libraries are imported)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    warnings.filterwarnings("default", category=SlowPrecisionWarning)  # the user's own choice costs time: say so
    warnings.filterwarnings("default", category=StaleLockWarning)  # a dead run's lock taken over: say whose
    warnings.showwarning = _one_line_warning
    if "transformers" in sys.modules:  # already imported (main() called in-process): its own switches
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
        transformers_logging.disable_progress_bar()


#: Errors that come from what the user gave (inputs, paths, names, options): one line, exit status 2.
USER_ERRORS = (UsageError, DialogueValidationError, CheckpointError, FileNotFoundError, PermissionError, KeyError,
               ValueError, OSError)


def _one_line(error: BaseException) -> str:
    text = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    return " ".join(str(text).split()) or type(error).__name__


def check_train_command(argv: Sequence[str]) -> None:
    """For ``train <command> ...`` (not ``--help``): the command's light options parsed and checked
    (:meth:`~hf_dialeval.training.options.DialEvalTrainingOptions.check_before_training`) before the seconds the
    training libraries take to import: a non-empty output folder or a model that is not here fails at once."""
    commands_by_name = train_commands()
    if len(argv) < 2 or argv[0] != "train" or argv[1] not in commands_by_name or \
            any(arg in ("-h", "--help") for arg in argv[2:]):
        return
    options_class = commands_by_name[argv[1]].options
    parser_class = type("OneLineArgumentParser", (OneLineParser, argument_parser_class(help_only=True)), {})
    parser = parser_class(dataclass_types=[options_class], prog=f"{PROG} train {argv[1]}")
    options, _ = parser.parse_args_into_dataclasses(args=list(argv[2:]), return_remaining_strings=True)
    options.check_before_training()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        check_train_command(argv)
    except USER_ERRORS as error:
        if "--debug" in argv:
            raise
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    args = build_parser(argv).parse_args(argv)
    try:
        with warnings.catch_warnings():  # the filters return to the caller's when the command ends
            if not args.verbose:
                quiet_libraries()
            args.func(args)
    except BrokenPipeError:  # the reader stopped early (e.g. `| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as interrupt:  # Ctrl-C: what was written stays, and the message says how to go on
        if args.show_traceback:
            raise
        print(f"{PROG}: interrupted{': ' + _one_line(interrupt) if str(interrupt) else ''}", file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        if args.show_traceback:
            raise
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug, not a user error: still one line, the traceback behind --debug
        if args.show_traceback:
            raise
        print(f"{PROG}: internal error: {type(error).__name__}: {_one_line(error)} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1
    return 0

