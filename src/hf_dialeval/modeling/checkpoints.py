"""Whether a checkpoint's files can be trusted: the checks that ``check_checkpoint``
(:mod:`hf_dialeval.modeling.checkpoint_sources`) runs on a value as given, and :class:`CheckpointError`, which every
failed check raises.

* A value that looks like a path (:func:`looks_like_path`) and names no folder fails at once ("no such folder"); any
  other value that names no folder must be a Hub model in the local cache or found by one request to the Hub
  (:func:`hub_model_problem`), else it fails too (a relative path would otherwise spend ~50 s on Hub retries, offline).
* Weights load from ``safetensors`` only (never a pickle): a folder with ``pytorch_model.bin`` alone is
  refused, and a corrupt weights file is named with what is wrong with it (:func:`check_weights`).

This module imports no deep-learning library, so that the CLI starts fast.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from hf_dialeval.errors import DialEvalError
from hf_dialeval.modeling.file_record import file_sha256

SAFETENSORS_SUFFIX = ".safetensors"
#: File name of a saved ``peft`` adapter's weights.
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: The file that marks a folder as a ``peft`` adapter checkpoint.
ADAPTER_CONFIG = "adapter_config.json"
#: Weight files of the pickle formats, which are never loaded.
PICKLED_WEIGHTS = ("pytorch_model.bin", "adapter_model.bin", "pytorch_model.bin.index.json")


class CheckpointError(DialEvalError, ValueError):
    """A checkpoint cannot be used as given: the message names the path or file and what to do."""


def is_adapter_checkpoint(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local folder holding a ``peft`` adapter (``adapter_config.json``)."""
    return (Path(path) / ADAPTER_CONFIG).is_file()


class CheckedCheckpoint(str):
    """A name :func:`~hf_dialeval.modeling.checkpoint_sources.check_checkpoint` passed. Checking it again returns it as
    it is, so that one load checks its checkpoint once, whichever layer checked it first (the command line before
    torch imports, the factory before the metric's libraries, the loader for callers that come to it directly)."""


def checkpoint_names(checkpoint: str | os.PathLike | Sequence[str | os.PathLike] | None) -> list[str]:
    """The checkpoints ``checkpoint`` names: none (``None``: the metric's default), one, or several for an
    ensemble, as a list or comma-separated; blank parts are left out. Checked names are kept as they are."""
    if checkpoint is None:
        return []
    if isinstance(checkpoint, CheckedCheckpoint):
        return [checkpoint]
    parts = str(checkpoint).split(",") if isinstance(checkpoint, str | os.PathLike) else checkpoint
    names = [part if isinstance(part, CheckedCheckpoint) else str(part).strip() for part in parts]
    return [name for name in names if name]


def looks_like_path(value: str) -> bool:
    """Whether a checkpoint value means a local folder rather than a Hub id (``org/name``): absolute, starting
    with ``.``, ``..`` or ``~``, holding a backslash, or inside a folder that exists here (``runs/x``)."""
    if value.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in value or value in (".", ".."):
        return True
    parent = Path(value).parent
    return str(parent) not in ("", ".") and parent.is_dir()


#: Hub ids found on the Hub in this process: loading one checks it several times (metric, loader, backbone).
_FOUND_ON_HUB: set[str] = set()


def hub_model_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` cannot be loaded from the Hub (``None`` when it can): it is neither in the local Hub
    cache nor found by one quick request to the Hub. One request, no retries: a relative path such as
    ``runs/x`` in a folder without ``runs/`` reads as a Hub id, and the download code would retry for ~50 s.
    A model found is remembered for the process; a failure is not (the network may come back)."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, RepositoryNotFoundError

    if repo_id in _FOUND_ON_HUB:
        return None
    try:
        if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
            return None
    except HFValidationError as error:
        return f"it is not valid ({error})"
    if constants.HF_HUB_OFFLINE:
        return "it is not in the local Hub cache (HF_HUB_OFFLINE is set)"
    try:
        model_info(repo_id, timeout=10)
    except RepositoryNotFoundError:
        return "the Hub has no such model (or it is private: log in with `hf auth login`)"
    except Exception as error:  # no network, DNS, proxy, TLS, timeout: the Hub cannot be reached
        return f"it is not in the local Hub cache and the Hub cannot be reached ({type(error).__name__}: {error})"
    _FOUND_ON_HUB.add(repo_id)
    return None


def check_weights(folder: Path) -> None:
    """Every ``*.safetensors`` file of ``folder`` has a readable header that covers the file (a truncated or
    foreign file is named with what is wrong); a folder with pickled weights only is refused."""
    weights = sorted(folder.glob(f"*{SAFETENSORS_SUFFIX}"))
    pickled = [name for name in PICKLED_WEIGHTS if (folder / name).is_file()]
    if not weights and pickled:
        raise CheckpointError(
            f"{folder} holds {pickled[0]} but no safetensors weights, and pickled weights are never loaded: "
            "convert them with model.save_pretrained(folder, safe_serialization=True) in a trusted environment")
    for path in weights:
        stat = path.stat()
        _check_safetensors(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _check_safetensors(path: str, size: int, modified_ns: int) -> None:
    """Read a weights file's header once per process (a metric's loader, the model class and the adapter merge all
    check the folder they are given; the file's size and time say whether it is still the one checked)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="pt"):
            pass
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path} is not a valid safetensors file ({error}): re-save or re-download it") \
            from error


def folder_sha256(folder: Path) -> str:
    """One sha256 over the names and contents of a folder's files (not its sub-folders), in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(path.name.encode("utf-8"))
        digest.update(file_sha256(path).encode("ascii"))
    return digest.hexdigest()
