"""QuantiDCE's response-selection pre-training (this package's addition): its examples, collator, loss, trainer
and the ``quantidce-selection`` run, on tiny random backbones."""

from __future__ import annotations

import math

import datasets
import pytest
import torch
from transformers import AutoTokenizer, TrainingArguments

import hf_dialeval  # noqa: F401  (registers QuantiDCE with the Auto classes)
from hf_dialeval.metrics.quantidce import QuantiDCEConfig, QuantiDCEModel
from hf_dialeval.metrics.quantidce.data import ResponseSelectionCollator, build_selection_examples
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.metrics.quantidce.train import (
    QuantiDCEMLRTrainingArguments,
    QuantiDCESelectionTrainingArguments,
    train_mlr,
    train_selection,
)
from hf_dialeval.metrics.quantidce.trainer import ResponseSelectionTrainer, selection_loss
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.offline_models import offline_backbone_path

from conftest import save_tiny_bert
from conftest import tiny_config as tiny_backbone_config

DIALOGUES = datasets.Dataset.from_dict({"dialogue": [
    ["Hi!", "Hello, how are you?", "Fine. Any plans today?", "A walk in the park.", "Nice.", "Thank you."],
    ["Do you like tea?", "Yes, green tea.", "Me too.", "Thank you."],
]})


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(offline_backbone_path())


def bi_model(tokenizer) -> QuantiDCEModel:
    torch.manual_seed(0)
    config = QuantiDCEConfig(backbone_config=tiny_backbone_config("bert", vocab_size=len(tokenizer)),
                             mlp_hidden_sizes=(16, 8), max_seq_length=64, encoding="bi", bi_context="all",
                             bi_features="cosines", cls_token_id=tokenizer.cls_token_id,
                             sep_token_id=tokenizer.sep_token_id)
    return QuantiDCEModel(config)


def test_selection_examples_hold_each_turn_its_later_turn_and_its_parrots():
    plain = build_selection_examples(DIALOGUES, later_turn_negatives=False)
    assert len(plain) == 5 + 3 and all(row == [] for row in plain["negatives"])
    assert plain[2]["context"] == DIALOGUES[0]["dialogue"][:3] and plain[2]["reply"] == "A walk in the park."
    later = build_selection_examples(DIALOGUES, seed=1)
    dialogue = DIALOGUES[0]["dialogue"]
    # the reply at position 1 may be followed by its speaker's turns 3 and 5; the last two turns have none
    assert later[0]["negatives"][0] in (dialogue[3], dialogue[5])
    assert later[3]["negatives"] == [] and later[4]["negatives"] == []
    assert build_selection_examples(DIALOGUES, seed=1)["negatives"] == later["negatives"]  # seeded
    parrots = build_selection_examples(DIALOGUES, later_turn_negatives=False, parrot_negatives=True)
    assert parrots[0]["negatives"] == ["Hi!"]  # the second turn has no earlier turn of its own: the echo alone
    assert parrots[2]["negatives"] == ["Fine. Any plans today?", "Hello, how are you?"]  # echo, then repeat
    every = build_selection_examples(DIALOGUES, later_turn_negatives=False, parrot_negatives=True,
                                     every_earlier_repeat=True)
    # the echo, then the speaker's own turns, latest first
    assert every[4]["negatives"] == ["Nice.", "A walk in the park.", "Hello, how are you?"]
    assert every[:3]["negatives"] == parrots[:3]["negatives"]  # until a speaker has two earlier turns
    with pytest.raises(ValueError, match="'dialogue' column"):
        build_selection_examples(DIALOGUES.rename_column("dialogue", "turns"))


def test_collator_pairs_every_context_with_every_candidate(tokenizer):
    examples = build_selection_examples(DIALOGUES, later_turn_negatives=False, parrot_negatives=True)
    features = [examples[4], examples[7], examples[0]]  # two replies are "Thank you."
    batch = ResponseSelectionCollator(tokenizer, 64)(features)
    candidates = 3 + sum(len(f["negatives"]) for f in features)
    assert batch["input_ids"].shape[0] == 3 * candidates
    assert batch["reply_index"].tolist() == [0, 1, 2]
    mask = batch["candidate_mask"]
    assert mask.shape == (3, candidates)
    assert not mask[0, 1] and not mask[1, 0]  # the other "Thank you." is not a negative of either
    assert mask[0, 0] and mask[1, 1] and mask[2].all()
    second = tokenizer.decode(batch["input_ids"][candidates + 1], skip_special_tokens=True)
    assert second.endswith("thank you.") and "me too." in second


def test_selection_loss_against_hand_computed_numbers():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.5, 0.5, 3.0]])
    reply = torch.tensor([0, 1])
    everything = torch.ones(2, 3, dtype=torch.bool)
    terms = selection_loss(logits, reply, everything, temperature=1.0)
    first = -math.log(math.exp(2) / (math.exp(2) + math.exp(1) + 1))
    second = -math.log(math.exp(0.5) / (2 * math.exp(0.5) + math.exp(3)))
    assert terms["loss"].item() == pytest.approx((first + second) / 2, rel=1e-6)
    assert terms["accuracy"].item() == 0.5
    masked = everything.clone()
    masked[1, 2] = False  # the second context's third candidate is a copy of its reply
    terms = selection_loss(logits, reply, masked, temperature=0.5)
    first = -math.log(math.exp(4) / (math.exp(4) + math.exp(2) + 1))
    second = math.log(2)  # two equal logits left
    assert terms["loss"].item() == pytest.approx((first + second) / 2, rel=1e-6)
    with pytest.raises(ValueError, match="do not match"):
        selection_loss(logits, reply, everything[:, :2])


def test_trainer_step_lowers_the_loss_on_its_batch(tokenizer, tmp_path):
    model = bi_model(tokenizer)
    examples = build_selection_examples(DIALOGUES, parrot_negatives=True)
    collator = ResponseSelectionCollator(tokenizer, 64)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], remove_unused_columns=False, use_cpu=True,
                             label_names=["reply_index"], max_steps=5, learning_rate=1e-2,
                             per_device_train_batch_size=len(examples), save_strategy="no")
    trainer = ResponseSelectionTrainer(model=model, args=args, train_dataset=examples, data_collator=collator)
    batch = collator(list(examples))
    with torch.no_grad():
        before = trainer.compute_loss(model.eval(), batch).item()
    trainer.train()
    with torch.no_grad():
        after = trainer.compute_loss(model.eval(), batch).item()
    assert after < before
    with pytest.raises(ValueError, match="remove_unused_columns=False"):
        ResponseSelectionTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), use_cpu=True,
                                                                     remove_unused_columns=True))


def test_cross_encoder_in_slices_gives_the_whole_batch_gradient_and_validation_loss(tokenizer, tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = QuantiDCEModel(QuantiDCEConfig(backbone_config=tiny_backbone_config("bert", vocab_size=len(tokenizer)),
                                           mlp_hidden_sizes=(16, 8), max_seq_length=64))
    examples = build_selection_examples(DIALOGUES, parrot_negatives=True)
    batch = ResponseSelectionCollator(tokenizer, 64)(list(examples))
    contexts, candidates = batch["candidate_mask"].shape
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], remove_unused_columns=False, use_cpu=True,
                             label_names=["reply_index"])
    trainer = ResponseSelectionTrainer(model=model, args=args, data_collator=ResponseSelectionCollator(tokenizer, 64))
    trainer.current_gradient_accumulation_steps = 1  # what train() sets before its first step

    def step() -> tuple[float, list[torch.Tensor]]:
        model.zero_grad()
        loss = trainer.training_step(model, dict(batch)).item()
        return loss, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    def validation_loss() -> float:
        with torch.no_grad():
            return trainer.compute_loss(model.eval(), dict(batch)).item()

    whole_loss, whole = step()
    whole_validation = validation_loss()
    monkeypatch.setattr("hf_dialeval.metrics.quantidce.trainer.MAX_PAIRS_AT_ONCE", 3 * candidates)
    sliced_loss, sliced = step()  # 8 contexts, 3 at a time: slices of 3, 3 and 2
    assert validation_loss() == pytest.approx(whole_validation, rel=1e-5)
    assert contexts == 8 and whole_loss > 0
    assert sliced_loss == pytest.approx(whole_loss, rel=1e-5)
    assert len(sliced) == len(whole) and all(torch.allclose(a, b, atol=1e-6) for a, b in zip(sliced, whole))


def test_selection_run_then_mlr_head_from_it(tmp_path, data_dir, tokenizer):
    backbone = save_tiny_bert(tmp_path / "backbone")
    run = train_selection(QuantiDCESelectionTrainingArguments(
        output_dir=str(tmp_path / "selection"), backbone=backbone, data_dir=data_dir, max_dialogues=6,
        eval_dialogues=2, max_seq_length=64, mlp_hidden_sizes=[16, 8], encoding="bi", bi_context="all",
        bi_features="cosines", lora_rank=0, per_device_train_batch_size=8, max_steps=2, logging_steps=1, save_strategy="no"))
    record = (run / "training_record.json").read_text()
    assert '"train_dialogues": 6' in record and '"eval_accuracy"' in record
    selected, _ = load_checkpoint("quantidce", run)
    assert selected.config.bi_context == "all" and selected.config.encoding == "bi"
    # MLR then trains the head alone over the selection run's encoder; the adapter is relative to the backbone
    mlr = train_mlr(QuantiDCEMLRTrainingArguments(
        output_dir=str(tmp_path / "mlr"), init_from=str(run), data_dir=data_dir, max_contexts=4, eval_contexts=0,
        freeze_encoder=True, parrot_negatives=True, lora_rank=0, adapter_rank=32, learning_rate=1e-2,
        logging_steps=1))
    full, _ = load_checkpoint("quantidce", mlr / "full")
    assert all(torch.equal(value, full.encoder.state_dict()[key])
               for key, value in selected.encoder.state_dict().items())
    merged, _ = load_checkpoint("quantidce", mlr)
    adapted, _ = load_checkpoint("quantidce", mlr / "adapter")
    contexts, responses = [["Do you like tea?"], ["Hi!", "Hello."]], ["Yes, green tea.", "How are you?"]
    assert QuantiDCEMetric(adapted, tokenizer, device="cpu").score_turns(contexts, responses).overall == \
        pytest.approx(QuantiDCEMetric(merged, tokenizer, device="cpu").score_turns(contexts, responses).overall,
                      abs=2e-3)
    with pytest.raises(ValueError, match="give --parrot-negatives too"):
        QuantiDCESelectionTrainingArguments(output_dir=str(tmp_path / "x"), every_earlier_repeat=True)
    with pytest.raises(ValueError, match="--temperature must be above 0"):
        QuantiDCESelectionTrainingArguments(output_dir=str(tmp_path / "x"), temperature=0.0)
