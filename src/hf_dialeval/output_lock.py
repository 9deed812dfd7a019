"""One run at a time per output, a file or a folder: a lock file beside it (``OUTPUT.lock``).

Two runs writing the same ``--output`` would interleave their lines in one ``OUTPUT.partial``. The lock is an
operating-system lock on ``OUTPUT.lock`` (``flock``), which the system releases
when its process ends however it ends, so a killed run never blocks the next one: a lock file whose process is
gone is taken over, saying so. The file records the holder's process id, host and start time, so that a refused
run can name it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from hf_dialeval.errors import DialEvalError


def _try_lock(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class OutputLocked(DialEvalError, ValueError):
    """Another run is writing the same output."""


class OutputWriteError(DialEvalError, ValueError):
    """The output or a file beside it could not be written (a full disk, a quota): the message names the file and how
    to go on."""


class StaleLockWarning(UserWarning):
    """A lock file left by a run that is no longer running was taken over, or what such a run left removed (shown even
    without ``--verbose``)."""


def lock_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.lock")


class OutputLock:
    """Held while a run owns ``output``: ``with OutputLock(output) as lock: ...``. Entering raises
    :class:`OutputLocked` (one line naming the other run's process) when another process holds it, and
    :class:`OutputWriteError` when the lock file cannot be written (a full disk), leaving no lock file;
    :attr:`took_over` names the dead process whose lock file was left behind, if any."""

    def __init__(self, output: str | os.PathLike, option: str = "--output") -> None:
        self.output = Path(output)
        self.option = option
        self.path = lock_path(output)
        self.took_over: dict | None = None
        self._descriptor: int | None = None

    def __enter__(self) -> OutputLock:
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(descriptor):
                holder = _holder(descriptor)
                os.close(descriptor)
                raise OutputLocked(f"{self.output} is being written by another run ({_describe(holder)}): wait for it "
                                   f"to finish, or give another {self.option}")
            # the file may have been removed by its last holder between our open and our lock: lock the one at the path
            try:
                same = os.path.samestat(os.fstat(descriptor), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(descriptor)
        left = _holder(descriptor)
        self.took_over = left or None
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        try:
            os.ftruncate(descriptor, 0)
            os.lseek(descriptor, 0, os.SEEK_SET)
            os.write(descriptor, (json.dumps(record) + "\n").encode("utf-8"))
        except OSError as error:
            self.path.unlink(missing_ok=True)  # while still locked, as on exit: no empty lock file is left behind
            os.close(descriptor)
            raise OutputWriteError(f"cannot write {self.path}: {error.strerror or error}; make room, then run the same "
                                   "command again") from None
        self._descriptor = descriptor
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.path.unlink(missing_ok=True)  # while still locked: the next run finds no file left by a finished one
        os.close(self._descriptor)
        self._descriptor = None

    def took_over_message(self) -> str | None:
        """What to tell the user when a dead run's lock file was taken over."""
        if self.took_over is None:
            return None
        return (f"took over {self.path}, left by a run that is no longer running ({_describe(self.took_over)}); "
                f"its output, if any, is kept")


def _holder(descriptor: int) -> dict:
    """What a lock file says of the process that wrote it (empty when it says nothing readable)."""
    try:
        os.lseek(descriptor, 0, os.SEEK_SET)
        text = os.read(descriptor, 4096).decode("utf-8")
        holder = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict) -> str:
    if not holder.get("pid"):
        return "process unknown"
    where = f" on {holder['host']}" if holder.get("host") and holder["host"] != socket.gethostname() else ""
    since = f", started {holder['started']}" if holder.get("started") else ""
    return f"process {holder['pid']}{where}{since}"
