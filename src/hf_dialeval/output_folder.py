"""One run owns an output folder (``hf-dialeval adapt``, every ``hf-dialeval train`` command), as ``score`` owns an
output file:

* refused before anything loads: the root, home or working folder (or one that holds them), a file, and a folder that
  is, holds or lies inside one of the run's inputs (``overwrite`` or not); a folder that is not empty, unless
  ``overwrite``, and then only one an earlier run wrote (:data:`RUN_FILES`): other files are the user's;
* the lock ``OUT.lock`` (:class:`~hf_dialeval.output_lock.OutputLock`) taken first: a second run is refused in one
  line;
* everything the run writes (its scratch data, its stages, its checkpoints, the folder it builds) lives in
  ``OUT.partial/``, beside ``OUT``, never in the system's temporary folder: a run that died leaves it there, and the
  next run over ``OUT`` removes it, saying so (a resumable run's checkpoints are kept for ``--resume-from-checkpoint``
  instead, unless ``overwrite``);
* the folder built (``OUT.partial/output``, :func:`built_path`) is swapped in whole when the run ends, in one atomic exchange where the
  system has one, so that a kill at any moment leaves the earlier ``OUT`` (or none) or the new one, never a mix; and
  ``OUT`` must then hold exactly what it held when the run started: a file that appeared in it meanwhile refuses the
  swap, and both are kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import errno
import os
import shutil
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from hf_dialeval.errors import DialEvalError
from hf_dialeval.output_lock import OutputLock, OutputLocked, StaleLockWarning

#: Files at the top of a folder that an earlier run wrote (a model, a run's record, an adaptation's report, a
#: reader's choice): only such a folder is replaced with ``--overwrite-output-dir``.
RUN_FILES = ("config.json", "adapter_config.json", "training_record.json", "adaptation_report.json",
             "pair_weight.json")
CHECKPOINT_PREFIX = "checkpoint-"  # the Trainer's checkpoint folders (transformers' PREFIX_CHECKPOINT_DIR)


#: The scratch folder of the run that owns an output folder in this context (:func:`run_scratch`).
_RUN_SCRATCH: contextvars.ContextVar[Path | None] = contextvars.ContextVar("run_scratch", default=None)


def run_scratch() -> Path | None:
    """The scratch folder of the run that owns an output folder here (``None`` outside one): where a reader may put
    a prepared copy of the user's data while it reads, so that none outlives the run, whatever ends it."""
    return _RUN_SCRATCH.get()


class OutputFolderError(DialEvalError, ValueError):
    """The output folder cannot be this run's: the message names it and the fix."""


def scratch_path(folder: str | os.PathLike) -> Path:
    """Where a run over ``folder`` writes until it ends: ``folder.partial`` beside it."""
    return Path(f"{os.fspath(folder)}.partial")


def built_path(folder: str | os.PathLike) -> Path:
    """Where a run over ``folder`` builds it, inside its scratch folder: under a name of its own, so that nothing
    else the run keeps there (its data, its stages) can take the place of the folder it swaps in."""
    return scratch_path(folder) / "output"


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_output_folder(folder: str | os.PathLike, inputs: Mapping[str, str | os.PathLike] | None = None,
                        option: str = "--output-dir") -> None:
    """Refuse, in one line, an output folder no run may replace whole: the root, home or working folder or one that
    holds them, a file, or a folder that is, holds or lies inside one of ``inputs`` (what names them, e.g.
    ``"--ratings"`` -> their path; those that are not paths, such as Hub ids, are left out)."""
    given = Path(folder).expanduser()
    resolved = given.resolve()
    for kept, name in ((Path("/"), "the root folder"), (Path.home().resolve(), "your home folder"),
                       (Path.cwd().resolve(), "the working folder")):
        if _inside(kept, resolved):
            what = "is" if kept == resolved else "holds"
            raise OutputFolderError(f"{option} {folder} {what} {name}, which the run would replace whole: give a "
                                    "new folder for its files")
    if given.exists() and not given.is_dir():
        raise OutputFolderError(f"{option} {folder} is a file: give a folder")
    for name, source in (inputs or {}).items():
        path = Path(source).expanduser()
        if not path.exists():
            continue
        path = path.resolve()
        if _inside(path, resolved):
            what = "is" if path == resolved else "holds"
        elif resolved in path.parents or (path.is_dir() and _inside(resolved, path)):
            what = "lies inside"
        else:
            continue
        raise OutputFolderError(f"{option} {folder} {what} the run's input {name} {source}: give an output folder "
                                "apart from the inputs")


def _listing(folder: Path) -> dict[str, tuple[int, int]] | None:
    """What ``folder`` holds (each path's size and modification time), or ``None`` when there is no folder."""
    if not folder.is_dir():
        return None
    found = {}
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(root, name)
            stat = path.lstat()
            found[str(path.relative_to(folder))] = (stat.st_size if name in files else 0, stat.st_mtime_ns)
    return found


def _checkpoints(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*/{CHECKPOINT_PREFIX}*")) if folder.is_dir() else []


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where the system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd, rename_exchange = -100, 2
    if renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # a file system or kernel without the exchange
        return False
    raise OSError(code, os.strerror(code), os.fspath(second))


class OwnedFolder:
    """``with OwnedFolder(folder, inputs, overwrite) as owned:`` write into ``owned.built`` (and scratch files into
    ``owned.scratch``), then ``owned.commit()`` swaps the folder built in (see the module). Leaving the block releases
    the lock and removes the scratch folder; when the block failed, a resumable run's checkpoints are kept.

    ``resume_from``: the checkpoint a resumed run continues; inside the scratch of a run that died, that scratch is
    continued; inside ``folder``, the run continues ``folder``'s own run, which it replaces."""

    def __init__(self, folder: str | os.PathLike, inputs: Mapping[str, str | os.PathLike] | None = None,
                 overwrite: bool = False, resume_from: str | os.PathLike | None = None, resumable: bool = False,
                 option: str = "--output-dir") -> None:
        self.folder = Path(folder).expanduser()
        self.scratch = scratch_path(self.folder)
        self.built = built_path(self.folder)
        self.inputs = dict(inputs or {})
        self.overwrite = overwrite
        self.resume_from = None if resume_from is None else Path(resume_from).expanduser().resolve()
        self.resumable = resumable
        self.option = option
        self._before: dict[str, tuple[int, int]] | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> OwnedFolder:
        check_output_folder(self.folder, self.inputs, self.option)
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            try:
                lock = stack.enter_context(OutputLock(self.folder, self.option))
            except OutputLocked as error:
                raise OutputFolderError(str(error)) from None
            if lock.took_over_message():
                warnings.warn(lock.took_over_message(), StaleLockWarning, stacklevel=2)
            self._clear_leftovers()
            self._check_existing()
            self._before = _listing(self.folder)
            self.built.mkdir(parents=True, exist_ok=True)
            stack.callback(_RUN_SCRATCH.reset, _RUN_SCRATCH.set(self.scratch))
            self._stack = stack.pop_all()  # the lock is held until the block is left
        return self

    def _resumes(self, folder: Path) -> bool:
        return self.resume_from is not None and _inside(self.resume_from, folder.resolve())

    def _clear_leftovers(self) -> None:
        """The scratch folder of a run that died (the lock is ours, so none is running): removed, saying so; a
        resumable run's checkpoints are kept unless the run continues them or starts again (``overwrite``)."""
        if not self.scratch.exists() or self._resumes(self.scratch):
            return
        checkpoints = _checkpoints(self.scratch)
        if self.resumable and checkpoints and not self.overwrite:
            raise OutputFolderError(
                f"{self.scratch} holds {checkpoints[-1].name} of a run over {self.folder} that did not finish: "
                f"--resume-from-checkpoint {checkpoints[-1]} continues it, --overwrite-output-dir starts again "
                "(removing it)")
        shutil.rmtree(self.scratch)
        warnings.warn(f"removed {self.scratch}, left by a run over {self.folder} that did not finish", StaleLockWarning,
                      stacklevel=3)

    def _check_existing(self) -> None:
        if not self.folder.is_dir() or not any(self.folder.iterdir()) or self._resumes(self.folder):
            return
        if not self.overwrite:
            raise OutputFolderError(f"{self.option} {self.folder} is not empty: give another folder, or "
                                    "--overwrite-output-dir to replace it once the run has finished")
        if not any((self.folder / name).is_file() for name in RUN_FILES):
            held = ", ".join(sorted(path.name for path in self.folder.iterdir())[:3])
            raise OutputFolderError(f"{self.option} {self.folder} holds files no run wrote ({held}, ...): "
                                    "--overwrite-output-dir replaces only an earlier run's folder; give another "
                                    "folder, or move them out")

    def commit(self) -> None:
        """Swap the folder built in for ``folder`` (see the module); refused, keeping both, when ``folder`` no longer
        holds what it held when the run started."""
        if self._before is None:
            try:
                os.rename(self.built, self.folder)  # replaces an empty folder made meanwhile, never a non-empty one
            except OSError as error:
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                self._refuse(_listing(self.folder) or {})
            return
        set_aside = self.scratch / f"{self.folder.name}.replaced"
        exchanged = _exchange(self.built, self.folder)
        if exchanged:
            set_aside = self.built  # the earlier folder now stands where the new one was built
        else:
            os.rename(self.folder, set_aside)
        now = _listing(set_aside) or {}
        if now != self._before:
            if exchanged:
                _exchange(self.built, self.folder)
            else:
                os.rename(set_aside, self.folder)
            self._refuse(now)
        if not exchanged:
            os.rename(self.built, self.folder)

    def _refuse(self, now: dict[str, tuple[int, int]]) -> None:
        kept = self.folder.with_name(f"{self.folder.name}.kept-{time.strftime('%Y%m%d-%H%M%S')}")
        os.rename(self.built, kept)
        changed = sorted(set(now).symmetric_difference(self._before or {}) |
                         {path for path in now if path in (self._before or {}) and now[path] != self._before[path]})
        raise OutputFolderError(f"{self.folder} changed while the run was writing ({', '.join(changed[:3])}): nothing "
                                f"in it was replaced; the run's folder is {kept}")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        with self._stack:  # the lock is released last, once the scratch folder is gone (and no longer the run's)
            if error is None or not (self.resumable and _checkpoints(self.scratch)):
                shutil.rmtree(self.scratch, ignore_errors=True)
