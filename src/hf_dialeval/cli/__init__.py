"""The ``hf-dialeval`` command line, one module per command family, each owning its parser and its handler:
:mod:`~hf_dialeval.cli.score`, :mod:`~hf_dialeval.cli.meta_evaluation` (``benchmark``, ``compare``,
``leaderboard``), :mod:`~hf_dialeval.cli.checklist`, :mod:`~hf_dialeval.cli.models` (list, install and verify the
pretrained models that load offline) and :mod:`~hf_dialeval.cli.train` (one sub-command per metric's training), :mod:`~hf_dialeval.cli.adapt` (a metric
fine-tuned on the user's own domain);
:mod:`~hf_dialeval.cli.options` holds the options several share, :mod:`~hf_dialeval.cli.errors` how a command fails.

It starts fast (``--help`` imports no deep-learning library: metrics and train commands come from the light
registry and load on use), every user error is one line on stderr with exit status 2 (``--debug`` shows the
traceback) while a bug shows its traceback, and library progress bars and warnings stay quiet unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from hf_dialeval.cli import adapt, checklist, meta_evaluation, models, score, train
from hf_dialeval.cli.errors import PROG, OneLineParser, exit_status, quiet_libraries
from hf_dialeval.cli.options import DEFAULT_METRIC
from hf_dialeval.registry import METRICS

EPILOG = """\
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
  hf-dialeval adapt quantidce --ratings my_ratings.jsonl --output-dir runs/my-quantidce
  hf-dialeval models install mpnet
"""


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of every command. A train command's options are added only when ``argv`` selects it (each imports
    its metric's training stack); the others are listed with their one-line help."""
    metrics = "\n".join(f"  {name:<21} {spec.level:<9} {spec.summary}{' (default)' if name == DEFAULT_METRIC else ''}"
                        for name, spec in sorted(METRICS.items()))
    parser = OneLineParser(prog=PROG, description="Learned dialogue-evaluation metrics.",
                           epilog=EPILOG.format(metrics=metrics), formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for family in (score, meta_evaluation, checklist, models, adapt):
        family.register(commands)
    train.register(commands, argv)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)

    def command() -> None:
        train.check_train_command(argv)
        parser = build_parser(argv)
        args, unknown = parser.parse_known_args(argv)
        if unknown and not getattr(args, "passes_on_unknown_options", False):
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.unknown_options = unknown  # adapt's: options of the train commands it runs
        with warnings.catch_warnings():  # the filters return to the caller's when the command ends
            if not args.verbose:
                quiet_libraries()
            args.func(args)

    return exit_status(command, show_traceback="--debug" in argv)
