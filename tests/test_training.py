"""Shared training helpers: full fine-tuning of the Transformer layers and its factoring into a LoRA adapter, and the
steps every train function shares (:mod:`hf_dialeval.training.steps`). Tiny random QuantiDCE/BERT models built here
(hidden 32, 2 layers)."""

from __future__ import annotations

import copy

import datasets
import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file

from hf_dialeval.data.subsets import limited
from hf_dialeval.metrics.holistic_eval import HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.options import CONFIG_OPTIONS, HolisticEvalTrainingOptions
from hf_dialeval.metrics.quantidce import QuantiDCEConfig, QuantiDCEModel
from hf_dialeval.modeling.backbones import lora_target_pattern
from hf_dialeval.modeling.checkpoints import ADAPTER_WEIGHTS
from hf_dialeval.training import steps
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.checkpoint_averaging import average_checkpoints, last_checkpoints
from hf_dialeval.training.lora import factor_into_adapter, save_adapter
from hf_dialeval.training.model_preparation import train_layers_only
from hf_dialeval.training.steps import StartingModel, config_fields, open_run, starting_model

from conftest import save_tiny_bert, tiny_config

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


def test_open_run_seeds(tmp_path):
    args = DialEvalTrainingArguments(output_dir=str(tmp_path / "run"), report_to="none", use_cpu=True, seed=7)
    torch.manual_seed(0)
    open_run(args)
    drawn = torch.rand(3)
    torch.manual_seed(7)
    assert torch.equal(drawn, torch.rand(3))


def test_limited_keeps_the_first_rows():
    dataset = datasets.Dataset.from_dict({"row": list(range(5))})
    assert limited(dataset, 3)["row"] == [0, 1, 2]
    assert limited(dataset, 0)["row"] == []
    assert limited(dataset, 9)["row"] == list(range(5))  # fewer rows than asked: all of them
    assert limited(dataset, None) is dataset


def test_config_fields_carry_the_holistic_eval_options_into_its_config():
    options = HolisticEvalTrainingOptions(output_dir="run", max_seq_length=64, percentile=10.0,
                                          token_reduction="sum", detokenize=True)
    options.settle()  # a new model's settings where none is given, as a run does before building its config
    assert (options.prompt_format, options.pmi_weight) == ("special-tokens", 1.0)
    fields = config_fields(options, CONFIG_OPTIONS)
    assert list(fields) == list(CONFIG_OPTIONS)
    new = HolisticEvalConfig(**fields)
    continued = HolisticEvalConfig()
    continued.update(fields)
    for name in CONFIG_OPTIONS:
        assert getattr(new, name) == getattr(continued, name) == getattr(options, name), name


def test_starting_model_loads_the_checkpoint_or_builds_on_the_backbone(tmp_path):
    def refuse(*_):
        raise AssertionError("the other branch was taken")

    model, tokenizer = tiny_model(), object()
    continued = starting_model("runs/earlier", lambda checkpoint: (model, tokenizer), "unused", refuse)
    assert (continued.model, continued.tokenizer, continued.checkpoint) == (model, tokenizer, "runs/earlier")

    seen = []

    def new(backbone_tokenizer):
        seen.append(backbone_tokenizer)
        backbone_tokenizer.add_tokens(["<new>"])  # the start keeps what ``new`` did to the tokenizer
        return model

    fresh = starting_model(None, refuse, save_tiny_bert(tmp_path / "bert"), new)
    assert (fresh.model, fresh.tokenizer, fresh.checkpoint) == (model, seen[0], None)
    assert "<new>" in fresh.tokenizer.get_vocab()


def test_starting_model_prepares_a_continued_model_as_continued(monkeypatch):
    calls = []
    monkeypatch.setattr(steps, "prepare_model", lambda model, args: calls.append(("new", model, args)) or "new")
    monkeypatch.setattr(steps, "prepare_continued_model",
                        lambda model, checkpoint, args: calls.append(("continued", model, checkpoint, args)) or "cont")
    model, args = tiny_model(), object()
    assert StartingModel(model, object()).prepare(args) == "new"
    assert StartingModel(model, object(), "runs/earlier").prepare(args) == "cont"
    assert calls == [("new", model, args), ("continued", model, "runs/earlier", args)]
