"""Shared training helpers: full fine-tuning of the Transformer layers and its factoring into a LoRA adapter.
Tiny random QuantiDCE/BERT models built here (hidden 32, 2 layers)."""

from __future__ import annotations

import copy

import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file

from hf_dialeval.metrics.quantidce import QuantiDCEConfig, QuantiDCEModel
from hf_dialeval.modeling.backbones import lora_target_pattern
from hf_dialeval.modeling.checkpoints import ADAPTER_WEIGHTS
from hf_dialeval.training.run import (
    average_checkpoints,
    factor_into_adapter,
    last_checkpoints,
    save_adapter,
    train_layers_only,
)

from conftest import tiny_config

HIDDEN = 32


def tiny_model(seed: int = 0) -> QuantiDCEModel:
    torch.manual_seed(seed)
    backbone = tiny_config("bert", vocab_size=100)
    return QuantiDCEModel(QuantiDCEConfig(backbone_config=backbone, mlp_hidden_sizes=(16, 8), max_seq_length=32))


def fine_tune_steps(model: QuantiDCEModel, steps: int = 3) -> None:
    """A few real optimiser steps on random inputs, so every trainable parameter moves."""
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    torch.manual_seed(1)
    for _ in range(steps):
        input_ids = torch.randint(5, 100, (4, 12))
        input_ids[:, 3] = 7  # the extra trainable embedding row is used
        loss = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).scores.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@pytest.fixture(scope="module")
def base_and_tuned() -> tuple[QuantiDCEModel, QuantiDCEModel]:
    base = tiny_model()
    tuned = copy.deepcopy(base)
    train_layers_only(tuned, embedding_rows=[7])
    fine_tune_steps(tuned)
    return base, tuned


def test_train_layers_only_moves_layers_heads_and_chosen_rows_only(base_and_tuned):
    base, tuned = base_and_tuned
    before, after = base.state_dict(), tuned.state_dict()
    embeddings = "encoder.embeddings.word_embeddings.weight"
    changed_rows = (after[embeddings] - before[embeddings]).abs().sum(1).nonzero().flatten().tolist()
    assert changed_rows == [7]
    for name in before:
        moved = not torch.equal(before[name], after[name])
        if "LayerNorm" in name or ("embeddings" in name and name != embeddings):
            assert not moved, name
        elif ".layer." in name and name.endswith(("weight", "bias")) or name.startswith("predictor"):
            assert moved, name


def test_full_rank_factoring_reproduces_the_fine_tuned_model(base_and_tuned):
    base, tuned = base_and_tuned
    adapted = factor_into_adapter(tuned, base, rank=HIDDEN, target_modules=lora_target_pattern(base),
                                  modules_to_save=["predictor"], embedding_rows=[7])
    merged = adapted.merge_and_unload()
    for name, value in tuned.state_dict().items():
        torch.testing.assert_close(merged.state_dict()[name], value, atol=1e-5, rtol=1e-4, msg=name)
    assert not torch.equal(base.state_dict()["encoder.encoder.layer.0.output.dense.weight"],
                           merged.state_dict()["encoder.encoder.layer.0.output.dense.weight"])


def test_low_rank_factoring_keeps_the_best_approximation(base_and_tuned):
    base, tuned = base_and_tuned
    rank = 2
    adapted = factor_into_adapter(tuned, base, rank=rank, target_modules=lora_target_pattern(base))
    name = "encoder.encoder.layer.1.intermediate.dense"
    delta = dict(tuned.named_modules())[name].weight - dict(base.named_modules())[name].weight
    module = dict(adapted.base_model.model.named_modules())[name]
    approximation = module.lora_B["default"].weight @ module.lora_A["default"].weight
    assert torch.linalg.matrix_rank(approximation).item() == rank
    singular = torch.linalg.svdvals(delta)
    # Eckart–Young: the error of the best rank-r approximation is the norm of the dropped singular values
    torch.testing.assert_close(torch.linalg.norm(delta - approximation), singular[rank:].square().sum().sqrt(),
                               atol=1e-5, rtol=1e-4)
    bias_change = dict(tuned.named_modules())[name].bias - dict(base.named_modules())[name].bias
    torch.testing.assert_close(module.lora_B["default"].bias, bias_change)


def test_save_adapter_halves_the_file_and_loads_back(tmp_path, base_and_tuned):
    base, tuned = base_and_tuned
    adapted = factor_into_adapter(tuned, base, rank=HIDDEN, target_modules=lora_target_pattern(base),
                                  modules_to_save=["predictor"], embedding_rows=[7])
    save_adapter(adapted, tmp_path / "float32", dtype=torch.float32)
    path = save_adapter(adapted, tmp_path / "float16")
    assert path.name == ADAPTER_WEIGHTS
    assert {t.dtype for t in load_file(str(path)).values()} == {torch.float16}
    assert path.stat().st_size < 0.6 * (tmp_path / "float32" / ADAPTER_WEIGHTS).stat().st_size
    loaded = PeftModel.from_pretrained(copy.deepcopy(base), str(tmp_path / "float16")).merge_and_unload().eval()
    input_ids = torch.randint(5, 100, (3, 10))
    mask = torch.ones_like(input_ids)
    with torch.no_grad():
        expected = tuned.eval()(input_ids=input_ids, attention_mask=mask).scores
        got = loaded(input_ids=input_ids, attention_mask=mask).scores
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=2e-3, rtol=0)


def test_average_checkpoints_loads_the_mean_of_the_last_ones(tmp_path, base_and_tuned):
    base, tuned = base_and_tuned
    third = copy.deepcopy(tuned)
    fine_tune_steps(third, steps=2)
    for step, model in ((100, base), (200, tuned), (300, third)):
        model.save_pretrained(tmp_path / f"checkpoint-{step}")
    chosen = last_checkpoints(tmp_path, 2)
    assert [path.name for path in chosen] == ["checkpoint-200", "checkpoint-300"]
    averaged = tiny_model(seed=5)
    average_checkpoints(averaged, chosen)
    for name, value in averaged.state_dict().items():
        torch.testing.assert_close(value, (tuned.state_dict()[name] + third.state_dict()[name]) / 2)
    with pytest.raises(ValueError, match="fewer than the 4"):
        last_checkpoints(tmp_path, 4)
    with pytest.raises(FileNotFoundError, match="full-model safetensors"):
        average_checkpoints(averaged, [tmp_path])
