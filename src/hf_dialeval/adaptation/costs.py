"""What each stage of ``hf-dialeval adapt`` costs, as the user plans with it: how long it will take
(:class:`StageEstimate`, one line on stderr before the stage trains, from a step it times) and the memory it peaked at
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

from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments


def _seconds(seconds: float) -> str:
    return f"{seconds:.2g}" if seconds < 10 else f"{seconds:.0f}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{_seconds(seconds)} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class StageEstimate(TrainerCallback):
    """Says, before the stage ``stage`` trains, how long it will take: its optimizer steps times the seconds of one
    training step (forward and backward of each accumulated batch) timed on a batch of its own data, after a first
    untimed one that carries the warm-up (the first batch, caches), as one line on stderr. The two steps change
    nothing that trains: their batch comes from a pass of the loader of its own (the Trainer's sampler draws its order
    anew for each pass, from the random state these steps leave as they found it), and their gradients are dropped
    before the first real step. ``trainer``: set by :func:`~hf_dialeval.training.steps.train_and_finish` when it adds
    the callback (the callback events hand over the model, not the Trainer that steps it)."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.trainer: Trainer | None = None

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       train_dataloader: Any = None, **kwargs: Any) -> None:
        steps = state.max_steps - state.global_step  # a resumed run counts its steps from its checkpoint's
        if self.trainer is None or train_dataloader is None or steps < 1:
            return
        seconds = self._time_a_step(train_dataloader) * args.gradient_accumulation_steps
        if state.is_world_process_zero:
            from tqdm.auto import tqdm

            # on a line of its own while the training bar is drawn on stderr
            tqdm.write(f"hf-dialeval: {self.stage}: {steps} steps, about {_duration(steps * seconds)} "
                       f"({_seconds(seconds)} s a step measured)", file=sys.stderr)

    def _time_a_step(self, train_dataloader: Any) -> float:
        """Seconds of the second of two forward and backward passes of the Trainer's own training step on the
        loader's first batch."""
        import torch

        trainer = self.trainer
        # the plain loader under accelerate's wrapper: a pass of the wrapper would count as an epoch begun
        loader = getattr(train_dataloader, "base_dataloader", train_dataloader)
        with torch.random.fork_rng(devices=[]):  # the sampler's draw and any dropout leave no trace
            batch = next(iter(loader))
            trainer.current_gradient_accumulation_steps = 1  # the loop sets it for each real step
            trainer.training_step(trainer.model_wrapped, batch)  # the warm-up
            started = time.perf_counter()
            trainer.training_step(trainer.model_wrapped, batch)
            seconds = time.perf_counter() - started
        trainer.model_wrapped.zero_grad(set_to_none=True)
        return seconds


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
