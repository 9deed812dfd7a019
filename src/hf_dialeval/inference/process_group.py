"""This process's place among data-parallel scoring processes (under ``torchrun`` or ``accelerate launch``)."""

from __future__ import annotations

import os
from typing import Any

from hf_dialeval.errors import DialEvalError


class ProcessGroup:
    """This process's place among data-parallel scoring processes (one process without a launcher). ``device``:
    the one the user named, if any; the processes run on the CPU (gloo) when it is ``cpu`` or no CUDA GPU exists."""

    def __init__(self, device: str | None = None) -> None:
        self.size = int(os.environ.get("WORLD_SIZE", "1"))
        self.state = None
        if self.size > 1:
            import torch
            from accelerate import PartialState

            self.state = PartialState(cpu=device == "cpu" or not torch.cuda.is_available())
            if self.state.num_processes != self.size:
                raise DialEvalError(f"launched as {self.size} processes (WORLD_SIZE), but accelerate set up "
                                    f"{self.state.num_processes}: launch with torchrun or accelerate launch --multi_gpu")

    @property
    def is_main(self) -> bool:
        return self.state is None or self.state.is_main_process

    @property
    def device(self) -> str | None:
        """The device the launcher gave this process (``None`` alone: the metric's own default)."""
        return None if self.state is None else str(self.state.device)

    @property
    def rank(self) -> int:
        return 0 if self.state is None else self.state.process_index

    def gather(self, records: list[Any]) -> list[Any]:
        """Every process's ``records``, concatenated in process order (on every process)."""
        if self.state is None:
            return records
        from accelerate.utils import gather_object

        return gather_object(records)

    def wait(self) -> None:
        if self.state is not None:
            self.state.wait_for_everyone()
