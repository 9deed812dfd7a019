"""One load resolves and checks its checkpoint once: through the factory (as the command line calls it, checking
first, and as a library caller does), the one loader (:func:`load_checkpoint`) and ``AutoModel.from_pretrained``
alike, an adapter checkpoint's folder is checked once, not again by each step inside."""

import os
import sys
from pathlib import Path

import pytest
from transformers import AutoModel

from hf_dialeval.inference.factory import check_checkpoints_for, load_metric
from hf_dialeval.metrics.quantidce import DEFAULT_CHECKPOINT
from hf_dialeval.modeling.adapters import holds_adapter_only
from hf_dialeval.modeling.checkpoint_sources import check_checkpoint
from hf_dialeval.modeling.checkpoints import CheckedCheckpoint
from hf_dialeval.modeling.loading import load_checkpoint


@pytest.fixture
def checked(monkeypatch) -> list[Path]:
    """The folders ``check_checkpoint`` checks from now on (a name it passed before is not checked again), wherever in
    the package it is called from."""
    folders = []

    def counting(value):
        if not isinstance(value, CheckedCheckpoint):
            folders.append(Path(os.fspath(value)).expanduser())
        return check_checkpoint(value)

    for module in [module for name, module in sys.modules.items() if name.startswith("hf_dialeval.")]:
        if getattr(module, "check_checkpoint", None) is check_checkpoint:
            monkeypatch.setattr(module, "check_checkpoint", counting)
    return folders


@pytest.mark.parametrize("load", [
    lambda: load_metric("quantidce", checkpoint=check_checkpoints_for("quantidce", str(DEFAULT_CHECKPOINT))),
    lambda: load_metric("quantidce", checkpoint=str(DEFAULT_CHECKPOINT)),
    lambda: load_checkpoint("quantidce"),
    lambda: AutoModel.from_pretrained(DEFAULT_CHECKPOINT)],
    ids=["command line", "load_metric", "load_checkpoint", "AutoModel.from_pretrained"])
def test_one_load_checks_an_adapter_checkpoint_once(checked, load):
    assert holds_adapter_only(DEFAULT_CHECKPOINT)  # the shipped default: an adapter over the offline MiniLM
    load()
    assert checked.count(Path(DEFAULT_CHECKPOINT)) == 1, checked
