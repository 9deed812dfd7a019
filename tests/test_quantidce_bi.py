"""QuantiDCE with ``encoding="bi"``: the config, the split of the pair input, the residual head that starts as the
similarity floor, training (MLR with parrot negatives, a frozen encoder; KD), and a run through ``train_mlr``
whose head-only adapter reloads. Tiny random BERT backbones built here; the MiniLM tokenizer from its package."""

from __future__ import annotations

import copy

import datasets
import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, BertModel, TrainingArguments

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.metrics.quantidce import DistillationTrainer, MultiLevelRankingTrainer, QuantiDCEConfig, QuantiDCEModel
from hf_dialeval.metrics.quantidce.data import (
    MultiLevelRankingCollator,
    add_parrot_negatives,
    build_pair_examples,
    build_ranking_examples,
)
from hf_dialeval.metrics.quantidce.modeling_quantidce import BiEncoderHead, pair_segments
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.metrics.quantidce.train import QuantiDCEMLRTrainingArguments, train_mlr
from hf_dialeval.metrics.similarity import SimilarityMetric
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.offline_models import offline_backbone_path

from conftest import ranking_dataset, save_tiny_bert
from conftest import tiny_config as tiny_backbone_config

CONTEXTS = [["Hi, how are you?", "Fine, and you?"], ["Do you like tea?"], ["I sold my car.", "", "Why?"]]
RESPONSES = ["Great, thanks for asking.", "Yes, green tea especially.", "It was too old."]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(offline_backbone_path())


def bi_model(tokenizer, seed: int = 0, **kwargs) -> QuantiDCEModel:
    torch.manual_seed(seed)
    config = QuantiDCEConfig(backbone_config=tiny_backbone_config("bert", vocab_size=len(tokenizer)),
                             mlp_hidden_sizes=(16, 8), max_seq_length=64, pooling="mean", encoding="bi",
                             cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id, **kwargs)
    return QuantiDCEModel(config)


def _args(tmp_path, label: str, **kwargs) -> TrainingArguments:
    return TrainingArguments(output_dir=str(tmp_path), report_to=[], remove_unused_columns=False, label_names=[label],
                             use_cpu=True, **kwargs)


def test_config_values_and_errors():
    config = QuantiDCEConfig(backbone_config=tiny_backbone_config("bert"), encoding="bi", bi_context="all",
                             bi_features="cosines", cls_token_id=101, sep_token_id=102)
    loaded = QuantiDCEConfig.from_dict(config.to_dict())
    assert (loaded.encoding, loaded.bi_context, loaded.bi_features, loaded.cls_token_id, loaded.sep_token_id) == \
        ("bi", "all", "cosines", 101, 102)
    assert QuantiDCEConfig().encoding == "cross"
    with pytest.raises(ValueError, match=r"encoding must be one of \('cross', 'bi'\), not 'dual'"):
        QuantiDCEConfig(encoding="dual")
    with pytest.raises(ValueError, match="bi_context must be one of"):
        QuantiDCEConfig(encoding="bi", bi_context="first")
    with pytest.raises(ValueError, match="bi_features must be one of"):
        QuantiDCEConfig(encoding="bi", bi_features="tokens")
    with pytest.raises(ValueError, match="cls_token_id and sep_token_id"):
        QuantiDCEModel(QuantiDCEConfig(backbone_config=tiny_backbone_config("bert"), encoding="bi"))


def test_pair_segments_split_bert_and_roberta_pairs():
    bert = torch.tensor([[101, 5, 6, 102, 7, 102, 8, 9, 102, 0], [101, 3, 102, 4, 102, 0, 0, 0, 0, 0]])
    assert pair_segments(bert, (bert != 0).long(), 101, 102) == [[[5, 6], [7], [8, 9]], [[3], [4]]]
    roberta = torch.tensor([[0, 5, 2, 7, 2, 2, 8, 2, 1]])  # <s> u1 </s> u2 </s></s> response </s> <pad>
    assert pair_segments(roberta, (roberta != 1).long(), 0, 2) == [[[5], [7], [8]]]


def test_untrained_bi_model_scores_the_cosine_of_the_pooled_embeddings(tokenizer):
    model = bi_model(tokenizer).eval()
    metric = QuantiDCEMetric(model, tokenizer, device="cpu")
    cosines = SimilarityMetric(model.encoder, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    assert len(set(round(c, 3) for c in cosines)) == 3  # three different values, not a degenerate case
    batch = tokenizer.pad(metric.encode(CONTEXTS, RESPONSES)[0], return_tensors="pt")
    with torch.no_grad():
        output = model(**batch)
    assert output.logits.tolist() == pytest.approx([5 * c for c in cosines], abs=1e-5)  # the floor's cosine, × 5
    assert torch.equal(output.scores, torch.sigmoid(output.logits))
    scores = metric.score_turns(CONTEXTS, RESPONSES).overall
    assert scores == pytest.approx([1 + 4 * torch.sigmoid(torch.tensor(5 * c)).item() for c in cosines], abs=1e-5)
    with_context = bi_model(tokenizer, bi_context="all")
    assert QuantiDCEMetric(with_context, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall \
        == pytest.approx(scores, abs=1e-5)


def test_all_context_features_see_a_repeat_of_an_earlier_turn(tokenizer):
    model = bi_model(tokenizer, bi_context="all").eval()
    encoding, _ = QuantiDCEMetric(model, tokenizer, device="cpu").encode([CONTEXTS[0]] * 2, [CONTEXTS[0][0], "Hello."])
    batch = tokenizer.pad(encoding, return_tensors="pt")
    with torch.no_grad():
        pooled = model(**batch).pooled_output
    assert pooled.shape == (2, 4 * 32 + 3)
    assert pooled[0, -1].item() == pytest.approx(1.0, abs=1e-5)  # the closest context utterance is the repeat
    assert pooled[1, -1].item() < 0.999
    cosines_only = bi_model(tokenizer, bi_context="all", bi_features="cosines").eval()
    with torch.no_grad():
        assert torch.allclose(cosines_only(**batch).pooled_output, pooled[:, -3:])


def test_round_trip_saves_safetensors_and_scores_exactly(tokenizer, tmp_path):
    model = bi_model(tokenizer, bi_context="all").eval()
    with torch.no_grad():
        model.predictor.out.weight.normal_()  # a trained-looking head
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file() and not list(tmp_path.glob("*.bin"))
    loaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(loaded.predictor, BiEncoderHead) and isinstance(AutoConfig.from_pretrained(tmp_path), QuantiDCEConfig)
    assert QuantiDCEMetric(loaded, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall == \
        QuantiDCEMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall


def test_parrot_negatives_join_the_lowest_level(tokenizer):
    parroted = add_parrot_negatives(ranking_dataset())
    assert parroted["random_negative_responses"] == [
        ["the train left .", "blue is a color .", "hi , how are you ?", "hi , how are you ?"],
        ["i sold my car .", "it rains .", "yes , with milk .", "do you like tea ?"]]
    assert build_ranking_examples(parroted, tokenizer, 32)[0]["levels"] == [0, 0, 0, 0, 1, 1, 2, 2]


def test_mlr_step_with_a_frozen_encoder_moves_the_head_only(tokenizer, tmp_path):
    model = bi_model(tokenizer)
    model.encoder.requires_grad_(False)
    examples = build_ranking_examples(add_parrot_negatives(ranking_dataset()), tokenizer, 64)
    encoder_before = copy.deepcopy(model.encoder.state_dict())
    metric = QuantiDCEMetric(model, tokenizer, device="cpu")
    before = metric.score_turns(CONTEXTS, RESPONSES).overall
    trainer = MultiLevelRankingTrainer(model=model, args=_args(tmp_path, "levels", max_steps=2, learning_rate=1e-2,
                                                               per_device_train_batch_size=2),
                                       train_dataset=examples, data_collator=MultiLevelRankingCollator(tokenizer))
    trainer.train()
    after = metric.score_turns(CONTEXTS, RESPONSES).overall
    assert all(abs(a - b) > 1e-4 for a, b in zip(after, before))
    assert all(torch.equal(value, model.encoder.state_dict()[key]) for key, value in encoder_before.items())


def test_distillation_between_bi_models(tokenizer, tmp_path):
    teacher = bi_model(tokenizer).eval()
    student = copy.deepcopy(teacher)
    pairs = datasets.Dataset.from_dict({"context": CONTEXTS, "response": RESPONSES, "score": [4.0, 5.0, 2.0]})
    batch = tokenizer.pad(list(build_pair_examples(pairs, tokenizer, 64).remove_columns("truncated")),
                          return_tensors="pt")
    trainer = DistillationTrainer(model=student, args=_args(tmp_path, "labels"), teacher_model=teacher)
    loss = trainer.compute_loss(student.eval(), dict(batch))
    with torch.no_grad():
        human = teacher(**{k: v for k, v in batch.items() if k != "labels"}).human_scores
    # the student is still the teacher: the distillation terms are zero, the loss is the MSE
    assert loss.item() == pytest.approx(((human - batch["labels"]) ** 2).mean().item(), rel=1e-5)


def test_train_mlr_frozen_bi_run_writes_a_head_sized_adapter(tmp_path, data_dir, tokenizer):
    backbone = save_tiny_bert(tmp_path / "backbone")
    run = train_mlr(QuantiDCEMLRTrainingArguments(
        output_dir=str(tmp_path / "mlr"), backbone=backbone, data_dir=data_dir, max_contexts=6, eval_contexts=3,
        max_seq_length=64, mlp_hidden_sizes=[16, 8], encoding="bi", bi_context="all", freeze_encoder=True,
        parrot_negatives=True, lora_rank=0, adapter_rank=1, learning_rate=1e-2, logging_steps=1))
    merged, _ = load_checkpoint("quantidce", run)
    adapted, _ = load_checkpoint("quantidce", run / "adapter")
    assert merged.config.encoding == "bi" and merged.config.sep_token_id == tokenizer.sep_token_id
    backbone_weights = BertModel.from_pretrained(backbone).state_dict()
    assert all(torch.equal(value, merged.encoder.state_dict()[key]) for key, value in backbone_weights.items())
    scores = QuantiDCEMetric(merged, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    # the adapter is stored in float16
    assert QuantiDCEMetric(adapted, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall == \
        pytest.approx(scores, abs=1e-3)
    with pytest.raises(ValueError, match="--freeze-encoder trains the head alone"):
        QuantiDCEMLRTrainingArguments(output_dir=str(tmp_path / "x"), freeze_encoder=True, lora_rank=4)


def test_bi_model_on_an_mpnet_backbone_which_has_no_sdpa(tmp_path):
    from conftest import tiny_backbone

    tiny_backbone("mpnet").save_pretrained(tmp_path)
    model = QuantiDCEModel.from_backbone(str(tmp_path), encoding="bi", bi_context="all", bi_features="cosines",
                                         pooling="mean", cls_token_id=0, sep_token_id=2, mlp_hidden_sizes=(16, 8))
    assert model.config._attn_implementation == "eager"
    pair = torch.tensor([[0, 5, 6, 2, 7, 2, 2, 8, 9, 2]])  # <s> u1 </s> u2 </s></s> response </s>
    with torch.no_grad():
        output = model.eval()(pair)
    # untrained: the logit is 5 × the cosine of the last utterance and the response (the first cosine feature)
    assert output.scores.shape == (1,)
    assert output.logits.item() == pytest.approx(5 * output.pooled_output[0, 0].item())
    # a saved model loads again: from_pretrained's default SDPA falls back to eager attention for MPNet
    model.save_pretrained(tmp_path / "saved")
    reloaded = QuantiDCEModel.from_pretrained(tmp_path / "saved").eval()
    assert reloaded.config._attn_implementation == "eager"
    with torch.no_grad():
        assert reloaded(pair).logits.item() == pytest.approx(output.logits.item(), abs=1e-6)
