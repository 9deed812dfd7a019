"""The errors a user's mistake raises: what they gave (inputs, files, paths, names, options) cannot work.

Each is a :class:`DialEvalError`, whose message is one line naming the file, item, field or option and the fix; the
command line prints that line and exits with status 2. Any other exception is a bug, and shows its traceback. Where
library callers catch a builtin (``ValueError``, ``KeyError``, ...), the error keeps it as a second base.

The errors of one layer live there: :class:`~hf_dialeval.data.model.DialogueValidationError` (an item),
:class:`~hf_dialeval.modeling.checkpoints.CheckpointError` (a checkpoint or installed model),
:class:`~hf_dialeval.cli.errors.UsageError` (how a command was called) and those of scoring into an output. This
module holds the base and the few that every layer raises; it imports nothing, so any layer can.
"""


def one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (its type's name when it has none): how a library's error is told."""
    return " ".join(str(error).split()) or type(error).__name__


class DialEvalError(Exception):
    """Something the user gave cannot work: one line naming it and the fix (the command line exits with status 2)."""


class OptionError(DialEvalError, ValueError):
    """An option's or argument's value, alone or with the others given, cannot work (a split, a device, a share, two
    options that exclude each other)."""


class UnknownNameError(OptionError, KeyError):
    """A name (a metric, benchmark, corpus, score, dimension) that is none of the known ones, which the message
    lists."""

    __str__ = Exception.__str__  # the message as given: KeyError's own quotes it


class PathError(DialEvalError, OSError):
    """A path the user gave, or a file the folder they gave should hold, is missing or of the wrong kind."""


class NotInstalledError(DialEvalError, ImportError):
    """A model or data package the run needs is not installed: the message gives the command that installs it."""
