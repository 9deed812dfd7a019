"""Averaging the weights of a run's last checkpoints (:func:`last_checkpoints`, :func:`average_checkpoints`): tail
averaging, as in stochastic weight averaging."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import PreTrainedModel
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import SAFE_WEIGHTS_NAME

from hf_dialeval.errors import OptionError

logger = logging.getLogger(__name__)


def last_checkpoints(checkpoints_dir: str | Path, count: int) -> list[Path]:
    """The ``count`` Trainer checkpoints (``checkpoint-<step>``) of ``checkpoints_dir`` with the highest steps,
    oldest first."""
    found = sorted(Path(checkpoints_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*"),
                   key=lambda path: int(path.name.rsplit("-", 1)[1]))
    if len(found) < count:
        raise OptionError(f"{checkpoints_dir} holds {len(found)} checkpoints, fewer than the {count} to average: "
                          "save more (a smaller --eval-steps) or average fewer")
    return found[-count:]


def average_checkpoints(model: PreTrainedModel, checkpoints: Sequence[str | Path]) -> None:
    """Load into ``model`` the uniform average of the weights saved in ``checkpoints`` (folders of full-model
    checkpoints, e.g. a run's last few: tail averaging as in stochastic weight averaging, which smooths the
    checkpoint-to-checkpoint noise of a run). Averaged in float64; non-float tensors come from the last one."""
    if not checkpoints:
        raise ValueError("average_checkpoints needs at least one checkpoint folder")
    total: dict[str, torch.Tensor] = {}
    for checkpoint in checkpoints:
        path = Path(checkpoint) / SAFE_WEIGHTS_NAME
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: averaging needs full-model safetensors checkpoints "
                                    "(a LoRA run's checkpoints hold adapters only)")
        for name, tensor in load_file(str(path)).items():
            if tensor.is_floating_point():
                total[name] = total[name] + tensor.double() if name in total else tensor.double()
            else:
                total[name] = tensor
    state = model.state_dict()
    unexpected = [name for name in total if name not in state]
    if unexpected:
        raise ValueError(f"the checkpoints hold weights the model does not have: {unexpected[:5]}")
    averaged = {name: (value / len(checkpoints) if value.is_floating_point() else value).to(state[name].dtype)
                for name, value in total.items()}
    missing = [name for name in state if name not in averaged]
    # a tied weight is saved once, under one of its names
    saved_storage = {state[name].data_ptr() for name in averaged}
    untied = [name for name in missing if state[name].data_ptr() not in saved_storage]
    if untied:
        raise ValueError(f"the checkpoints lack weights of the model: {untied[:5]}")
    model.load_state_dict(averaged, strict=False)
    logger.info("weights averaged over %d checkpoints: %s", len(checkpoints),
                ", ".join(Path(c).name for c in checkpoints))
