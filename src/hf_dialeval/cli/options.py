"""The options several commands share, and the checks of their values that run before a model loads: the run options
(``--verbose``, ``--debug``, and ``--quiet`` where the command draws progress bars, :func:`show_progress`), the device
options, the model options (a metric with its checkpoint and its own options) and the statistics options of the
meta-evaluation commands.

Imports no deep-learning library: the registry lists the metrics and their options, and the checks import what they
need when they run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_dialeval.cli.errors import UsageError, one_line
from hf_dialeval.errors import DialEvalError
from hf_dialeval.inference.precision import PRECISIONS
from hf_dialeval.registry import METRICS, MetricChoice, metric_names, metric_options

DEFAULT_METRIC = "fined-eval"
#: meta_eval's defaults, restated so that --help imports no numerical library (a test keeps them equal).
BOOTSTRAP_RESAMPLES, PERMUTATIONS = 1000, 1000


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


def metric_choice(text: str) -> MetricChoice:
    """``NAME`` or ``NAME=CHECKPOINT`` of a registered metric, as an argparse type."""
    try:
        return MetricChoice.parse(text)
    except DialEvalError as error:
        raise argparse.ArgumentTypeError(one_line(error)) from None


def add_run_options(parser: argparse.ArgumentParser, progress_bars: bool = False) -> None:
    """``--verbose`` and ``--debug``; with ``progress_bars`` (the command draws its own), ``--quiet`` too."""
    parser.add_argument("--verbose", action="store_true", help="show library progress bars, logs and warnings")
    parser.add_argument("--debug", dest="show_traceback", action="store_true",
                        help="show the full traceback of an error")
    if progress_bars:
        parser.add_argument("--quiet", action="store_true",
                            help="no progress bar, even on a terminal (without it, one is drawn only when stderr is "
                                 "a terminal)")


def show_progress(quiet: bool) -> bool:
    """Whether a command draws its progress bars: not ``--quiet``, and stderr is a terminal (a file or a pipe would
    receive every refresh of the bar)."""
    try:
        return not quiet and sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stderr
        return False


def device_name(text: str) -> str:
    """``--device``: a torch device this machine has, checked as the command line is parsed, before anything
    loads."""
    from hf_dialeval.inference.model_metric import resolve_device

    try:
        resolve_device(text)
    except DialEvalError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_device_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=positive_int, default=32, help="items per forward pass (default: 32)")
    parser.add_argument("--device", default=None, type=device_name,
                        help="torch device, e.g. cpu or cuda:0 (default: cuda if available)")
    parser.add_argument("--dtype", default=None, choices=list(PRECISIONS),
                        help="precision the model computes in, under autocast: fp32, bf16 (2.2-3.0x faster than fp32 "
                             "on the CPU of the README's tables; slower on a CPU without bf16 instructions, which a "
                             "warning says) or fp16 (GPU); default: fp32, or the checkpoint's own where it names one "
                             "and the device computes it natively (HolisticEval's: bf16); metrics without a model "
                             "ignore it")


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--metric`` and ``--checkpoint``, the device options, every metric's own options and the run options."""
    parser.add_argument("--metric", default=DEFAULT_METRIC, choices=metric_names(),
                        help=f"metric to score with (default: {DEFAULT_METRIC})")
    parser.add_argument("--checkpoint", default=None,
                        help="Hub repo id or local folder of the metric's model (default: the metric's shipped default)")
    add_device_options(parser)
    for option in metric_options().values():  # each metric's own options, from its registry entry
        takers = ", ".join(name for name, spec in METRICS.items() if option in spec.options)
        parser.add_argument(option.flag, dest=option.name, default=None, choices=option.choices,
                            help=f"{takers} only: {option.help}")
    add_run_options(parser, progress_bars=True)


def add_statistics_options(parser: argparse.ArgumentParser) -> None:
    """The data and score cache folders, the resampling options, the device options and the run options."""
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
    add_device_options(parser)
    add_run_options(parser, progress_bars=True)


def add_dataclass_options(parser: argparse.ArgumentParser, options: Iterable[dataclasses.Field]) -> None:
    """Adds the fields ``options`` of an options dataclass (the train commands' own) to ``parser``, as those commands
    take them: same flag, default and help."""
    for option in options:
        told = option.default is None or "(default:" in option.metadata["help"]
        parser.add_argument(f"--{option.name.replace('_', '-')}", default=option.default,
                            help=option.metadata["help"] + ("" if told else f" (default: {option.default})"))


def load_metric_from(args: argparse.Namespace) -> Any:
    """The metric the model options name, with the metric-specific ones it takes (its registry ``options``)."""
    from hf_dialeval.inference.factory import load_metric

    given = {option: getattr(args, option.name) for option in metric_options().values()
             if getattr(args, option.name) is not None}
    for option in given:
        if option not in METRICS[args.metric].options:
            takers = [name for name, spec in METRICS.items() if option in spec.options]
            raise UsageError(f"{option.flag} is an option of {', '.join(takers)}: {args.metric} takes none")
    return load_metric(args.metric, checkpoint=args.checkpoint, device=args.device, batch_size=args.batch_size,
                       dtype=args.dtype, **{option.name: value for option, value in given.items()})


def check_writable(path: str, what: str) -> None:
    """Fail before any scoring when ``path`` (the value of the option ``what``) cannot be written."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{what} {path} is a folder: give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {what} {path}: no such folder {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"cannot write {what} {path}: permission denied")
