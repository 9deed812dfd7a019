"""Every train function owns its ``--output-dir`` (:func:`owns_output_dir`): the run trains into the scratch of an
:class:`~hf_dialeval.output_folder.OwnedFolder` beside it and swaps the finished folder in whole, and what it records
names the folder the user gave, not the scratch."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from hf_dialeval.output_folder import OwnedFolder, built_path
from hf_dialeval.training.options import TRAINING_RECORD, DialEvalTrainingOptions

Result = TypeVar("Result")


def is_main_process() -> bool:
    """Whether this is the process that owns the output under ``torchrun`` or ``accelerate launch`` (rank 0), or a
    single process: the launchers set ``RANK`` before the Trainer starts its process group."""
    return os.environ.get("RANK", "0") == "0"


def named(value: Any, paths: Mapping[str, str]) -> Any:
    """``value`` (a text, or a list or dict of them) with each key of ``paths`` (a scratch path) in its texts replaced
    by its value (what it stands for), the longest first: a record names what the user can find, not a folder that
    is gone."""
    if isinstance(value, str):
        for scratch in sorted(paths, key=len, reverse=True):
            value = value.replace(scratch, paths[scratch])
        return value
    if isinstance(value, list):
        return [named(element, paths) for element in value]
    if isinstance(value, dict):
        return {key: named(element, paths) for key, element in value.items()}
    return value


def name_paths(record_file: Path, paths: Mapping[str, str]) -> None:
    """The JSON file ``record_file`` (when there is one) rewritten with its texts :func:`named`."""
    if record_file.is_file():
        record = json.loads(record_file.read_text(encoding="utf-8"))
        record_file.write_text(json.dumps(named(record, paths), indent=2, default=str) + "\n", encoding="utf-8")


def owns_output_dir(train: Callable[..., Result]) -> Callable[..., Result]:
    """``train`` (a train function of its arguments, and of what else it takes) run as the owner of
    ``args.output_dir``: refused before anything loads where the folder cannot be this run's
    (:func:`~hf_dialeval.output_folder.check_output_folder`, the command's inputs included), trained into the scratch
    folder beside it, and swapped in whole when it returns. Under several processes the main one owns the folder; the
    others train into the same scratch path. A returned path of the scratch folder is returned as the folder given."""
    @functools.wraps(train)
    def owned(args: DialEvalTrainingOptions, *given_data: Any, **named_data: Any) -> Result:
        given = args.output_dir
        if not is_main_process():
            args.output_dir = str(built_path(given))
            try:
                return train(args, *given_data, **named_data)
            finally:
                args.output_dir = given
        with OwnedFolder(given, args.input_paths(), overwrite=args.overwrite_output_dir,
                         resume_from=args.resume_from_checkpoint, resumable=True) as folder:
            args.output_dir = str(folder.built)
            try:
                result = train(args, *given_data, **named_data)
            finally:
                args.output_dir = given
            name_paths(folder.built / TRAINING_RECORD, {str(folder.built): given})
            folder.commit()
        return Path(given) if isinstance(result, (str, os.PathLike)) and Path(result) == folder.built else result

    return owned
