"""How the command line fails and warns: a user error (:class:`~hf_dialeval.errors.DialEvalError`, argparse's usage
errors) is one line on stderr with exit status 2 (``--debug`` shows its traceback); any other exception is a bug and
shows its traceback; Ctrl-C is one line and status 130. Library progress bars, logs and warnings stay quiet unless
``--verbose``, except the warnings the user's own choices earn, each one line.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from typing import NoReturn, TextIO

from hf_dialeval.data.tables import DroppedRowsWarning
from hf_dialeval.errors import DialEvalError, one_line
from hf_dialeval.inference.precision import SlowPrecisionWarning
from hf_dialeval.output_lock import StaleLockWarning

PROG = "hf-dialeval"


class UsageError(DialEvalError):
    """A mistake in how the command was called that argparse cannot see (a folder given for a file, two options that
    exclude each other)."""


class OneLineParser(argparse.ArgumentParser):
    """Reports a usage error on one line (with where to find help) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def exit_status(command: Callable[[], None], show_traceback: bool) -> int:
    """Run ``command`` and return the process's exit status: 0; 2 after a user error, told on one line; 130 after
    Ctrl-C; 0 when the reader of stdout went away (``| head``). Anything else is a bug: it propagates, and Python
    prints its traceback. ``show_traceback`` (``--debug``) lets user errors and Ctrl-C propagate too."""
    try:
        command()
    except BrokenPipeError:  # the reader stopped early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt as interrupt:  # what was written stays, and the message says how to go on
        if show_traceback:
            raise
        print(f"{PROG}: interrupted{': ' + one_line(interrupt) if str(interrupt) else ''}", file=sys.stderr)
        return 130
    except DialEvalError as error:
        if show_traceback:
            raise
        print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
        return 2
    return 0


def one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                     file: TextIO | None = None, line: str | None = None) -> None:
    """A warning as one line on stderr, on a line of its own even while a progress bar is drawn there (the signature
    of :func:`warnings.showwarning`)."""
    from tqdm.auto import tqdm

    text = one_line(message if isinstance(message, Warning) else Warning(message))
    tqdm.write(f"{PROG}: warning: {text}", file=sys.stderr)


def quiet_libraries() -> None:
    """No weight-loading bars, library logs or warnings (set before those libraries are imported), but the warnings
    about the user's own choices, one line each. Call it inside :func:`warnings.catch_warnings`, which restores the
    caller's filters afterwards."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    warnings.filterwarnings("default", category=SlowPrecisionWarning)  # the user's own choice costs time: say so
    warnings.filterwarnings("default", category=StaleLockWarning)  # a dead run's lock taken over: say whose
    warnings.filterwarnings("default", category=DroppedRowsWarning)  # rows of the user's data dropped: how many
    warnings.showwarning = one_line_warning
    if "transformers" in sys.modules:  # already imported (main() called in-process): its own switches
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
        transformers_logging.disable_progress_bar()
    if "datasets" in sys.modules:  # likewise: its environment variable is read once, on import
        import datasets

        datasets.disable_progress_bars()
