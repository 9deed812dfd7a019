"""Check that a built wheel holds every file of the package source it was built from: each module, each shipped
default (``metrics/*/defaults/**``) and each evaluate module script (``evaluate_modules/*/*.py``), which the package
loads by path at run time and which setuptools leaves out unless ``setup.cfg``'s package_data names them.

    python .ci/wheel_contents.py WHEEL SRC      # SRC: the folder that holds hf_dialeval/ (the tree the wheel came from)

Standard library only: it runs before anything is installed. Exit status 1, listing each missing file, when one is.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGE = "hf_dialeval"
#: the files that only package data brings (a module is packed as code); each group must also be non-empty, so that a
#: moved folder cannot make the check pass by matching nothing
DATA_GROUPS = {"shipped defaults": "metrics/*/defaults/**/*", "evaluate module scripts": "evaluate_modules/*/*.py"}


def source_files(src: Path) -> set[str]:
    """The package's files under ``src``, as wheel paths (byte-code caches left out)."""
    return {path.relative_to(src).as_posix() for path in (src / PACKAGE).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def main(wheel: str, src: str) -> int:
    packed = set(zipfile.ZipFile(wheel).namelist())
    expected = source_files(Path(src))
    missing = sorted(expected - packed)
    for group, pattern in DATA_GROUPS.items():
        files = [path for path in (Path(src) / PACKAGE).glob(pattern) if path.is_file()]
        if not files:
            missing.append(f"({group}: no file matches {PACKAGE}/{pattern} in {src})")
        else:
            print(f"{group}: {len(files)} files, {sum(path.stat().st_size for path in files) / 1e6:.1f} MB")
    for path in missing:
        print(f"missing from {Path(wheel).name}: {path}", file=sys.stderr)
    if missing:
        print(f"{len(missing)} package files are not in the wheel: add their patterns to [options.package_data] in "
              "setup.cfg", file=sys.stderr)
        return 1
    print(f"{Path(wheel).name} holds all {len(expected)} files of {src}/{PACKAGE}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
