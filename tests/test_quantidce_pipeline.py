"""QuantiDCE end to end on the real training data with a tiny random backbone: MLR pre-training, KD and
MSE-only fine-tuning, adapter and full checkpoints, export of the Hub folder and loading it back with
``AutoModel.from_pretrained``."""

from __future__ import annotations

import json

import pytest
from transformers import AutoModel, AutoTokenizer

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.metrics.quantidce import QuantiDCEModel
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.metrics.quantidce.train import (
    QuantiDCEKDTrainingArguments,
    QuantiDCEMLRTrainingArguments,
    train_kd,
    train_mlr,
)
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.publishing import export_models

from conftest import save_tiny_bert

CONTEXTS = [["Hi, how are you?", "Fine, and you?"], ["Do you like tea?"]]
RESPONSES = ["Great, thanks for asking.", "Yes, green tea especially."]


def _scores(model, tokenizer) -> list[float]:
    return QuantiDCEMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall


@pytest.mark.slow
def test_two_stages_adapter_checkpoints_and_export(tmp_path, data_dir):
    backbone = save_tiny_bert(tmp_path / "backbone")
    mlr = train_mlr(QuantiDCEMLRTrainingArguments(
        output_dir=str(tmp_path / "mlr"), backbone=backbone, data_dir=data_dir, max_contexts=6, eval_contexts=3,
        max_seq_length=48, mlp_hidden_sizes=[16, 8], lora_rank=4, lora_layers=[1], logging_steps=1))
    assert (mlr / "adapter" / "adapter_model.safetensors").is_file() and (mlr / "model.safetensors").is_file()
    assert not list(mlr.glob("checkpoint-*"))
    teacher, tokenizer = load_checkpoint("quantidce", mlr)
    assert isinstance(teacher, QuantiDCEModel) and not teacher.training
    # the shipped adapter is stored in float16: the merged model it reloads as differs in the 5th digit
    assert _scores(teacher, tokenizer) == pytest.approx(_scores(*load_checkpoint("quantidce", mlr / "adapter")), abs=1e-3)

    def kd_arguments(output: str, **options) -> QuantiDCEKDTrainingArguments:
        return QuantiDCEKDTrainingArguments(output_dir=str(tmp_path / output), teacher=str(mlr), data_dir=data_dir,
                                            num_train_epochs=1, per_device_train_batch_size=30, learning_rate=1e-3,
                                            **options)

    kd = train_kd(kd_arguments("kd"))
    mse = train_kd(kd_arguments("mse", no_distillation=True))
    assert (kd / "adapter" / "adapter_model.safetensors").is_file()
    assert "eval_loss" in json.loads((kd / "training_record.json").read_text())["validation"]
    student, _ = load_checkpoint("quantidce", kd)
    mse_student, _ = load_checkpoint("quantidce", mse)
    teacher_scores, kd_scores, mse_scores = (_scores(m, tokenizer) for m in (teacher, student, mse_student))
    assert kd_scores != teacher_scores and kd_scores != mse_scores
    assert all(1.0 <= s <= 5.0 for s in kd_scores)

    folder, = export_models("quantidce", str(kd), tmp_path / "hub")
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {p.name for p in folder.iterdir()}
    exported = AutoModel.from_pretrained(folder)
    assert isinstance(exported, QuantiDCEModel)
    assert _scores(exported, AutoTokenizer.from_pretrained(folder)) == kd_scores


def test_full_fine_tuning_checkpoint(tmp_path, data_dir):
    backbone = save_tiny_bert(tmp_path / "backbone")
    full = train_mlr(QuantiDCEMLRTrainingArguments(
        output_dir=str(tmp_path / "full"), backbone=backbone, data_dir=data_dir, max_contexts=3, eval_contexts=0,
        max_seq_length=48, mlp_hidden_sizes=[16, 8], lora_rank=0))
    assert (full / "model.safetensors").is_file() and (full / "tokenizer.json").is_file()
    assert not (full / "adapter").exists()
    model, tokenizer = load_checkpoint("quantidce", full)
    reloaded = AutoModel.from_pretrained(full)
    assert _scores(model, tokenizer) == _scores(reloaded, tokenizer)
