"""The scratch folders that installs write beside the installed models, and who may remove them.

An install downloads into ``.download-*`` and builds the folder in ``.<target name>-*`` inside ``models/`` (then
renames it into place), and removes both when it ends, however it ends, short of being killed outright. What a killed
install leaves is removed by the next install: but not while another process installs, whose scratch folders look
the same. So every install holds a shared lock on :data:`LOCK` beside ``models/`` (``models/`` holds models and
their scratch folders only) while it runs, and removes leftovers first only if it gets the lock exclusively (no other
install is running); else the leftovers wait for a later install.

Imports no deep-learning library.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

DOWNLOAD_PREFIX = ".download-"
#: The lock file, in the folder that holds ``models/``.
LOCK = ".install.lock"

#: How many :func:`install_lock` blocks this process is inside: a lock is taken once per process (a second
#: ``flock`` on another descriptor of the same file would wait for the first).
_depth = 0


def scratch_prefix(target: Path) -> str:
    """The name prefix of the folder in which ``target`` is built."""
    return f".{target.name}-"


def leftovers(models: Path, targets: Iterable[Path]) -> list[Path]:
    """The scratch folders in ``models`` of the installs of ``targets`` (and of their downloads), by name."""
    prefixes = (DOWNLOAD_PREFIX, *(scratch_prefix(target) for target in targets))
    if not models.is_dir():
        return []
    return sorted(path for path in models.iterdir() if path.name.startswith(prefixes) and path.is_dir()
                  and not path.is_symlink())


def disk_usage(path: Path) -> int:
    """Bytes that the files under ``path`` take on disk (allocated blocks, measured; links not followed)."""
    paths = [path, *path.rglob("*")] if path.is_dir() else [path]
    return sum(item.lstat().st_blocks * 512 for item in paths)


def install_running(models: Path) -> bool:
    """Whether another process is installing into ``models`` right now (holds the install lock)."""
    lock = models.parent / LOCK
    if not lock.is_file():
        return False
    with lock.open("rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


@contextlib.contextmanager
def install_lock(models: Path, targets: Iterable[Path]) -> Iterator[None]:
    """Held for the whole of an install into ``models``: on entry, the :func:`leftovers` of ``targets`` are removed
    when no other process installs; concurrent installs proceed side by side (each builds in its own scratch
    folder)."""
    global _depth
    if _depth:  # the install that called this one holds the lock and has cleaned up already
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    models.mkdir(parents=True, exist_ok=True)
    with (models.parent / LOCK).open("a+b") as handle:  # closing it releases the lock, also when the process dies
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another install runs: its scratch folders are in use
        else:
            for leftover in leftovers(models, targets):
                shutil.rmtree(leftover, ignore_errors=True)
        fcntl.flock(handle, fcntl.LOCK_SH)  # from exclusive to shared: no scratch folder of ours exists yet
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
