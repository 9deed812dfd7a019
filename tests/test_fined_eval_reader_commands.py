"""The train commands that build the shipped FineD-Eval's readers of consecutive utterances and choose the pair
encoder's weight (``fined-eval-adjacency-encoder``, ``fined-eval-pair-encoder``, ``fined-eval-pair-weight``), each
run for a couple of steps over tiny random BERTs on DailyDialog and a few checklist pairs."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

from hf_dialeval import cli
from hf_dialeval.metrics.fined_eval import FineDEvalModel, add_utterance_token
from hf_dialeval.metrics.fined_eval.constants import PAIR_HEAD_FILE
from hf_dialeval.metrics.fined_eval.readers import PairReader, SentenceReader
from hf_dialeval.modeling.offline_models import offline_backbone_path

from conftest import save_tiny_bert

#: Few checklist pairs per perturbation and split, so that each evaluation takes a moment.
PAIRS = "6"


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_encoder"))


def _win_rates(record: dict) -> list[float]:
    return [rate for rates in record["win_rates"].values() for rate in rates.values()]


@pytest.mark.slow  # 35 s: DailyDialog train and the checklist pairs, three evaluations
def test_adjacency_encoder_command_trains_the_encoder_and_records_each_evaluation(tmp_path, tiny_encoder, data_dir):
    out = tmp_path / "adjacency"
    assert cli.main(["train", "fined-eval-adjacency-encoder", "--backbone", tiny_encoder, "--output-dir", str(out),
                     "--data-dir", str(data_dir), "--max-steps", "2", "--eval-steps", "1", "--batch-size", "4",
                     "--eval-pairs", PAIRS, "--learning-rate", "1e-3"]) == 0
    record = json.loads((out / "training_record.json").read_text())
    assert list(record["win_rates"]) == ["0", "1", "2"]  # before training, every --eval-steps, and at the end
    assert set(record["win_rates"]["2"]) == {"validation/shuffle", "validation/random", "test/shuffle", "test/random"}
    assert all(0.0 <= rate <= 1.0 for rate in _win_rates(record))
    assert record["arguments"]["max_steps"] == 2 and record["arguments"]["scale"] == 20.0
    trained, start = AutoModel.from_pretrained(out), AutoModel.from_pretrained(tiny_encoder)
    layer = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(trained.state_dict()[layer], start.state_dict()[layer])  # the layers trained
    embeddings = "embeddings.word_embeddings.weight"
    assert torch.equal(trained.state_dict()[embeddings], start.state_dict()[embeddings])  # as an adapter carries
    scores = SentenceReader(str(out)).dialogue_scores([["Hi there .", "Hello !", "How are you ?"]])
    assert math.isfinite(float(scores[0]))


@pytest.mark.slow  # 80 s: two runs, each evaluated on five splits
def test_pair_encoder_command_trains_a_pair_layer_that_a_second_run_continues(tmp_path, tiny_encoder, data_dir):
    first, second = tmp_path / "pair", tmp_path / "pair-echo"
    common = ["--data-dir", str(data_dir), "--max-steps", "2", "--eval-steps", "2", "--batch-size", "3",
              "--eval-pairs", PAIRS, "--head-learning-rate", "1e-2"]
    assert cli.main(["train", "fined-eval-pair-encoder", "--backbone", tiny_encoder, "--output-dir", str(first),
                     *common]) == 0
    record = json.loads((first / "training_record.json").read_text())
    assert list(record["win_rates"]) == ["0", "2"]
    assert {key.split("/")[0] for key in record["win_rates"]["2"]} == {"validation", "test", "test-1", "test-2"}
    assert {key.split("/")[1] for key in record["win_rates"]["2"]} == {"shuffle", "random"}
    head = load_file(str(first / PAIR_HEAD_FILE))
    assert head["weight"].shape == (1, 32) and torch.isfinite(head["weight"]).all()
    reader = PairReader(str(first))
    torch.testing.assert_close(reader.head.weight.data, head["weight"], rtol=0, atol=0)  # the trained layer reloads
    assert AutoTokenizer.from_pretrained(first).get_vocab() == AutoTokenizer.from_pretrained(tiny_encoder).get_vocab()

    assert cli.main(["train", "fined-eval-pair-encoder", "--backbone", str(first), "--echo", "--seed", "1",
                     "--output-dir", str(second), *common]) == 0
    record = json.loads((second / "training_record.json").read_text())
    assert {key.split("/")[1] for key in record["win_rates"]["0"]} == {"shuffle", "random", "echo", "repeat"}
    # the second run starts from the first one's pair layer (its step-0 rates are the first run's reader's)
    assert record["win_rates"]["0"]["validation/shuffle"] == json.loads(
        (first / "training_record.json").read_text())["win_rates"]["2"]["validation/shuffle"]
    assert not torch.equal(load_file(str(second / PAIR_HEAD_FILE))["weight"], head["weight"])


def test_pair_weight_command_chooses_the_candidate_with_the_best_validation_win_rate(tmp_path, tiny_encoder,
                                                                                    data_dir):
    tokenizer = AutoTokenizer.from_pretrained(offline_backbone_path())
    add_utterance_token(tokenizer)
    backbone = save_tiny_bert(tmp_path / "backbone", vocab_size=len(tokenizer) - 1)
    torch.manual_seed(1)
    checkpoint = tmp_path / "fined-eval"
    FineDEvalModel.from_backbone(backbone, tokenizer, ("coherence", "likability"), max_seq_length=128,
                                 long_dialogue="keep_start").save_pretrained(
        checkpoint)
    tokenizer.save_pretrained(checkpoint)
    pair_encoder = tmp_path / "pair"
    PairReader(tiny_encoder).save(pair_encoder)

    out = tmp_path / "weight"
    weights = [0.0, 0.5, 2.0]
    assert cli.main(["train", "fined-eval-pair-weight", "--checkpoint", str(checkpoint), "--pair-encoder",
                     str(pair_encoder), "--output-dir", str(out), "--data-dir", str(data_dir), "--eval-pairs", PAIRS,
                     "--perturbations", "shuffle", "random", "--validation-seeds", "0", "1",
                     "--weights", *map(str, weights)]) == 0
    record = json.loads((out / "pair_weight.json").read_text())
    assert record["weight"] in weights
    by_weight = {float(weight): rates for weight, rates in record["sum_by_weight"].items()}
    assert sorted(by_weight) == weights
    validation = {weight: sum(rate for split, rate in rates.items() if split.startswith("validation"))
                  for weight, rates in by_weight.items()}
    best = max(validation.values())
    assert record["weight"] == min(weight for weight, total in validation.items() if total == best)
    assert set(record["win_rates"]) == {f"{split}/{name}" for split in ("validation", "validation-1", "test", "test-1",
                                                                        "test-2") for name in ("shuffle", "random")}
    for split, row in record["win_rates"].items():
        assert row["sum"] == by_weight[record["weight"]][split]
        assert all(0.0 <= value <= 1.0 for value in row.values())
    assert row["fined-eval"] == by_weight[0.0][split]  # weight 0: FineD-Eval alone


def test_pair_weight_command_names_an_unknown_perturbation(tmp_path, capsys, tiny_encoder):
    assert cli.main(["train", "fined-eval-pair-weight", "--pair-encoder", tiny_encoder, "--output-dir",
                     str(tmp_path / "out"), "--perturbations", "shuffle", "wobble"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--perturbations takes the checklist's" in err and "wobble" in err, err
