"""``hf-dialeval train <metric>``: one sub-command per :class:`~hf_dialeval.registry.TrainCommand` of the registry,
each parsing its metric's options and every ``transformers.TrainingArguments`` option with ``HfArgumentParser``.

Only the command the arguments select gets its options (each imports its metric's training stack); ``--help`` lists
the light options dataclass without importing torch, and a run's light options are checked
(:func:`check_train_command`) before the seconds the training libraries take to import.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path

from hf_dialeval.cli.errors import PROG, OneLineParser
from hf_dialeval.cli.options import add_run_options
from hf_dialeval.registry import train_commands

EPILOG = """\
Each command takes its metric's options and every transformers.TrainingArguments option. A metric's training
writes one run layout: the merged model (what --checkpoint takes), adapter/ (a LoRA adapter, trained or factored),
full/ (the unfactored model, with --adapter-rank) and training_record.json; a step that builds part of a shipped
default (a reader, a weight, the default folder) writes what its --help says.

example:
  hf-dialeval train fined-eval --help
"""


class TrainHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description and example as written; each option's default after its help, unless it has none or the help
    tells it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        flag = action.nargs == 0  # a switch: off unless given
        told = "%(default)" in text or "(default:" in text  # the help says it in words
        if action.default not in (None, argparse.SUPPRESS) and not flag and not told:
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


def _one_line_argument_parser(help_only: bool) -> type[argparse.ArgumentParser]:
    return type("OneLineArgumentParser", (OneLineParser, argument_parser_class(help_only)), {})


def _is_help(argv: Sequence[str]) -> bool:
    return any(arg in ("-h", "--help") for arg in argv[2:])


def _selected(argv: Sequence[str]) -> str | None:
    """The train command ``argv`` runs or asks help for (``train <command> ...``), if any."""
    return argv[1] if len(argv) > 1 and argv[0] == "train" and argv[1] in train_commands() else None


def register(commands: argparse._SubParsersAction, argv: Sequence[str]) -> None:
    """Adds ``train`` and its sub-commands to the parser's sub-commands ``commands``: the one ``argv`` selects with
    its options, the others with their one-line help."""
    train = commands.add_parser("train", help="train a metric's model (one sub-command per metric)",
                                description="Train a metric's model with transformers.Trainer.", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    selected, help_only = _selected(argv), _is_help(argv)
    parser_class = OneLineParser if selected is None else _one_line_argument_parser(help_only)
    trainers = train.add_subparsers(dest="train_metric", required=True, metavar="METRIC", parser_class=parser_class)
    for name, command in sorted(train_commands().items()):
        if name != selected:
            trainers.add_parser(name, help=command.help)
            continue
        # --help lists the light options; a run parses (and validates) the full TrainingArguments subclass
        options = command.options
        required = [f"--{field.name.replace('_', '-')} {field.name.upper()}" for field in dataclasses.fields(options)
                    if field.metadata.get("required")]
        subparser = trainers.add_parser(
            name, help=command.help, usage=" ".join(["%(prog)s", *required, "[options]"]),
            dataclass_types=[options if help_only else command.arguments_class],
            description=inspect.cleandoc(options.__doc__), epilog=options.EXAMPLE, formatter_class=TrainHelpFormatter,
            conflict_handler="resolve")  # our --debug replaces TrainingArguments' --debug (a torch debug mode)
        add_run_options(subparser)
        subparser.set_defaults(func=run, train_command=command)


def check_train_command(argv: Sequence[str]) -> None:
    """For ``train <command> ...`` (not ``--help``): the command's light options parsed and checked
    (:meth:`~hf_dialeval.training.options.DialEvalTrainingOptions.check_before_training`) before the seconds the
    training libraries take to import: a non-empty output folder or a model that is not here fails at once."""
    name = _selected(argv)
    if name is None or _is_help(argv):
        return
    parser = _one_line_argument_parser(help_only=True)(dataclass_types=[train_commands()[name].options],
                                                       prog=f"{PROG} train {name}")
    options, _ = parser.parse_args_into_dataclasses(args=list(argv[2:]), return_remaining_strings=True)
    options.check_before_training()


def run(args: argparse.Namespace) -> None:
    from hf_dialeval.training.arguments import training_arguments

    args.train_command.train_function(training_arguments(args.train_command.arguments_class, vars(args)))
