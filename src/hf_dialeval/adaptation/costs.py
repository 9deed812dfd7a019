"""What each stage of ``hf-dialeval adapt`` costs, as the user plans with it: how long it will take
(:class:`StageEstimate`, one line on stderr once the stage has timed a step) and the memory it peaked at
(:class:`PeakMemory`, in the report)."""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments


def _seconds(seconds: float) -> str:
    return f"{seconds:.2g}" if seconds < 10 else f"{seconds:.0f}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{_seconds(seconds)} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class StageEstimate(TrainerCallback):
    """Says, once, how long the stage ``stage`` will take: at the end of its second optimizer step, its steps times
    that step's seconds, as one line on stderr. The second step, for the first carries the warm-up (the first batch,
    the optimizer's state, caches); a stage of one step says nothing."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.first_step = 0
        self.first_step_ended: float | None = None

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       **kwargs: Any) -> None:
        self.first_step = state.global_step  # a resumed run counts its steps from its checkpoint's
        self.first_step_ended = None

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        done = state.global_step - self.first_step
        if done == 1:
            self.first_step_ended = time.perf_counter()
        elif done == 2 and self.first_step_ended is not None and state.is_world_process_zero:
            from tqdm.auto import tqdm

            seconds = time.perf_counter() - self.first_step_ended
            steps = state.max_steps - self.first_step
            # on a line of its own while the training bar is drawn on stderr
            tqdm.write(f"hf-dialeval: {self.stage}: {steps} steps, about {_duration(steps * seconds)} "
                       f"({_seconds(seconds)} s a step measured)", file=sys.stderr)


def _resident_mb() -> int | None:
    """This process's resident memory now (Linux), in MB; ``None`` where it is not to be read."""
    with contextlib.suppress(OSError):
        return round(int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20)
    return None


class PeakMemory:
    """This process's peak resident memory in MB: over the whole process (the kernel's ``ru_maxrss``, never reset:
    what ``/usr/bin/time`` reports too) and since the last :meth:`reset` (a stage's, sampled every
    :data:`SAMPLE_SECONDS` by a thread, so a peak shorter than that may be missed). Where ``/proc/self/statm`` is not
    to be read, a stage's peak is the process's peak so far."""

    SAMPLE_SECONDS = 0.1

    def __init__(self) -> None:
        self.stage_mb = 0
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def reset(self) -> None:
        """Start measuring a stage's peak."""
        self._finish()
        self.stage_mb = _resident_mb() or 0
        self._stop.clear()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(self.SAMPLE_SECONDS):
            self.stage_mb = max(self.stage_mb, _resident_mb() or 0)

    def _finish(self) -> None:
        if self._sampler is not None:
            self._stop.set()
            self._sampler.join()
            self._sampler = None

    def since_reset_mb(self) -> int:
        """The peak since the last :meth:`reset` (see the class)."""
        self._finish()
        now = _resident_mb()
        if now is None:
            return self.process_mb()
        self.stage_mb = max(self.stage_mb, now)
        return self.stage_mb

    def process_mb(self) -> int:
        """The whole process's peak, until now."""
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform == "darwin" else 1)
        return round(kb / 1024)  # ru_maxrss is in bytes on macOS, in kB elsewhere
