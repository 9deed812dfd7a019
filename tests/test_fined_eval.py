"""FineD-Eval: model, pairs, ranking Trainer, scoring, evaluate module, exporter (tiny random backbones)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import evaluate
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoTokenizer, BertConfig, TrainingArguments

import hf_dialeval
from hf_dialeval import cli, load_metric
from hf_dialeval.auxiliary.classifiers import PairClassifier
from hf_dialeval.data.paths import find_data_dir
from hf_dialeval.metrics.fined_eval import FineDEvalConfig, FineDEvalModel, add_utterance_token, encode_dialogues
from hf_dialeval.metrics.fined_eval import encoding as encoding_module
from hf_dialeval.metrics.fined_eval.constants import parse_strategy
from hf_dialeval.metrics.fined_eval.encoding import special_token_frame, utterance_windows
from hf_dialeval.metrics.fined_eval.pairs import (
    contradiction_scoring,
    echo_substitution,
    entailment_scoring,
    generic_substitution,
    generic_utterances,
    positive_emotions,
    qa_relevance,
    random_substitution,
    repeat_substitution,
    sample_pairs,
    speaker_shuffling,
    split_long_dialogues,
    utterance_shuffling,
)
from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric
from hf_dialeval.metrics.fined_eval.trainer import FineDEvalDataCollator, FineDEvalTrainer, ranking_loss, tokenize_pairs
from hf_dialeval.modeling.backbones import layer_linear_modules
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.offline_models import offline_backbone_path
from hf_dialeval.publishing import export_models

from conftest import save_tiny_bert

REPO = Path(__file__).resolve().parents[1]
DIALOGUES = [
    ["Hi! How are you?", "Great, I just got back from a long hike in the mountains.", "Nice, where did you go?"],
    ["What is your name?", "I like pizza."],
    ["Do you like music?", "Yes, mostly jazz.", "Who is your favourite?", "Miles Davis.", "Good choice!"],
]


@pytest.fixture(scope="module")
def tokenizer():
    tok = AutoTokenizer.from_pretrained(offline_backbone_path())
    add_utterance_token(tok)
    return tok


@pytest.fixture(scope="module")
def tiny_backbone(tmp_path_factory, tokenizer) -> str:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), vocab_size=len(tokenizer) - 1)


def tiny_model(tokenizer, backbone, dimensions=("coherence", "likability", "topic_depth"), **kwargs) -> FineDEvalModel:
    torch.manual_seed(1)
    kwargs.setdefault("max_seq_length", 128)
    return FineDEvalModel.from_backbone(backbone, tokenizer, dimensions, **kwargs).eval()


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory, tokenizer, tiny_backbone) -> str:
    path = tmp_path_factory.mktemp("tiny_fined_eval")
    model = tiny_model(tokenizer, tiny_backbone)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


# --- configuration and model -------------------------------------------------------------------------------

def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="dimensions"):
        FineDEvalConfig(backbone_config={}, dimensions=["fluency"])
    with pytest.raises(ValueError, match="long_dialogue"):
        FineDEvalConfig(backbone_config={}, long_dialogue="middle")
    with pytest.raises(ValueError, match="from_backbone"):
        FineDEvalModel(FineDEvalConfig())
    with pytest.raises(ValueError, match="adjacency_bins"):
        FineDEvalConfig(backbone_config={}, adjacency_bins=1)


def test_auto_classes_and_save_load_give_identical_scores(tmp_path, tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone, ["coherence"])
    assert model.config.utterance_token_id == tokenizer.convert_tokens_to_ids("</UTT>")
    assert model.get_input_embeddings().num_embeddings == len(tokenizer)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, FineDEvalModel) and loaded.config.dimensions == ["coherence"]
    reloaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded_tokenizer.convert_tokens_to_ids("</UTT>") == model.config.utterance_token_id
    ids = torch.tensor([tokenizer("hi </UTT> hello there")["input_ids"]])
    with torch.no_grad():
        before, after = model(input_ids=ids).scores, loaded(input_ids=ids).scores
    assert before.shape == (1, 1)
    torch.testing.assert_close(before, after, rtol=0, atol=0)


def test_mean_pooling_ignores_padding(tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone)
    short = tokenizer("a short one")["input_ids"]
    long = tokenizer("a much longer dialogue turn that needs padding for the short one")["input_ids"]
    padded = short + [tokenizer.pad_token_id] * (len(long) - len(short))
    ids = torch.tensor([padded, long])
    mask = torch.tensor([[1] * len(short) + [0] * (len(long) - len(short)), [1] * len(long)])
    with torch.no_grad():
        batched = model(input_ids=ids, attention_mask=mask)
        alone = model(input_ids=torch.tensor([short]))
    torch.testing.assert_close(batched.scores[0], alone.scores[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(batched.scores, torch.sigmoid(batched.logits))
    assert ((batched.scores > 0) & (batched.scores < 1)).all()


def embed_alone(encoder, tokenizer, utterance):
    """The mean-pooled embedding of one utterance encoded alone: what the adjacency histogram compares."""
    ids = torch.tensor([tokenizer(utterance)["input_ids"]])
    with torch.no_grad():
        return encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0].mean(0)


def test_adjacency_histogram_bins_the_cosines_of_consecutive_utterances(tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone, adjacency_bins=5)
    assert model.config.frame_lengths == [1, 1]
    dialogues = [DIALOGUES[0], ["Only one utterance here"], DIALOGUES[1]]
    encoded = encode_dialogues(tokenizer, dialogues, model.config.utterance_token_id, 128)
    batch = tokenizer.pad({"input_ids": encoded.input_ids}, return_tensors="pt")
    with torch.no_grad():
        histogram = model.adjacency_histogram(batch["input_ids"], batch["attention_mask"])
    expected = torch.zeros(3, 5)
    centres = [-1.0, -0.5, 0.0, 0.5, 1.0]
    for row, dialogue in ((0, dialogues[0]), (2, dialogues[2])):
        embeddings = [embed_alone(model.encoder, tokenizer, utterance) for utterance in dialogue]
        for first, second in zip(embeddings, embeddings[1:]):
            cosine = float(torch.nn.functional.cosine_similarity(first, second, dim=0))
            for index, centre in enumerate(centres):  # shared linearly between the two nearest centres
                expected[row, index] += max(0.0, 1 - abs(cosine - centre) / 0.5) / (len(dialogue) - 1)
    torch.testing.assert_close(histogram, expected, rtol=1e-4, atol=1e-5)
    assert histogram[0].sum() == pytest.approx(1.0) and histogram[1].abs().sum() == 0  # one utterance: no pair


def test_adjacency_head_starts_silent_then_adds_its_logit(tmp_path, tokenizer, tiny_backbone):
    extended = tiny_model(tokenizer, tiny_backbone)
    ids = torch.tensor(encode_dialogues(tokenizer, [DIALOGUES[2]], extended.config.utterance_token_id, 128).input_ids)
    with torch.no_grad():
        before = extended(input_ids=ids)
    extended.add_adjacency_head(4)
    with torch.no_grad():
        torch.testing.assert_close(extended(input_ids=ids).scores, before.scores, rtol=0, atol=0)
        extended.adjacency_heads.weight.copy_(torch.arange(12.0).view(3, 4))
        histogram = extended.adjacency_histogram(ids, torch.ones_like(ids))
        logits = extended(input_ids=ids).logits
    torch.testing.assert_close(logits, before.logits + histogram @ extended.adjacency_heads.weight.T)
    with pytest.raises(ValueError, match="already has"):
        extended.add_adjacency_head(4)
    extended.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert loaded.config.adjacency_bins == 4
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, logits, rtol=0, atol=0)


# --- encoding and windows ----------------------------------------------------------------------------------

def test_encode_joins_utterances_with_the_utterance_token(tokenizer):
    token_id = tokenizer.convert_tokens_to_ids("</UTT>")
    encoded = encode_dialogues(tokenizer, [["Hi there", "How are you?"]], token_id, 64)
    assert tokenizer.decode(encoded.input_ids[0]) == "[CLS] hi there </UTT> how are you? [SEP]"
    assert encoded.owners == [0] and encoded.truncated == [False]
    assert special_token_frame(tokenizer) == ([tokenizer.cls_token_id], [tokenizer.sep_token_id])


def test_utterance_windows_cover_every_utterance():
    assert utterance_windows([3, 3, 3, 3], budget=7) == [(0, 1), (2, 3)]
    assert utterance_windows([3, 3, 3, 3], budget=7, overlap=1) == [(0, 1), (1, 2), (2, 3)]
    assert utterance_windows([10, 2, 2], budget=7) == [(0, 0), (1, 2)]
    assert utterance_windows([2, 2], budget=100, overlap=3) == [(0, 1)]


@pytest.mark.parametrize("mode", ["window", "keep_start", "keep_end"])
def test_long_utterances_cut_before_tokenizing_keep_what_the_whole_dialogue_keeps(tokenizer, monkeypatch, mode):
    token_id = tokenizer.convert_tokens_to_ids("</UTT>")
    words = "the a cat , . ! ?? dog\n likes  runs hello-world don't 123 café naïve".split(" ")
    rng = np.random.default_rng(0)
    dialogues = [[" ".join(rng.choice(words, size=rng.integers(1, 90))) for _ in range(rng.integers(1, 8))]
                 for _ in range(40)]
    dialogues[0][1] = "word " * 5000  # far past any limit, in the middle
    dialogues[1][-1] = "hello " * 3000  # at the end
    cut = encode_dialogues(tokenizer, dialogues, token_id, 48, mode, window_overlap=1)
    monkeypatch.setattr(encoding_module, "kept_words", lambda dialogue, count, long_dialogue: list(dialogue))
    whole = encode_dialogues(tokenizer, dialogues, token_id, 48, mode, window_overlap=1)
    assert cut == whole and cut.truncated[0] and cut.truncated[1]


def test_long_dialogue_modes_flag_truncation(tokenizer):
    token_id = tokenizer.convert_tokens_to_ids("</UTT>")
    dialogue = [["one two three", "four five six", "seven eight nine"]]  # 3 + 3 + 3 words, 2 separators
    fits = encode_dialogues(tokenizer, dialogue, token_id, 13)
    assert len(fits.input_ids) == 1 and fits.truncated == [False]
    start = encode_dialogues(tokenizer, dialogue, token_id, 9, "keep_start")
    assert tokenizer.decode(start.input_ids[0]) == "[CLS] one two three </UTT> four five six [SEP]"
    assert start.truncated == [True]
    end = encode_dialogues(tokenizer, dialogue, token_id, 9, "keep_end")
    assert tokenizer.decode(end.input_ids[0]) == "[CLS] four five six </UTT> seven eight nine [SEP]"
    assert end.truncated == [True]
    windows = encode_dialogues(tokenizer, dialogue, token_id, 9, "window", window_overlap=1)
    assert [tokenizer.decode(ids) for ids in windows.input_ids] == [
        "[CLS] one two three </UTT> four five six [SEP]", "[CLS] four five six </UTT> seven eight nine [SEP]"]
    assert windows.owners == [0, 0] and windows.truncated == [False]
    too_long = encode_dialogues(tokenizer, [["a b c d e f g h i j", "k"]], token_id, 6, "window")
    assert too_long.truncated == [True] and len(too_long.input_ids) == 2


# --- pair strategies -----------------------------------------------------------------------------------------

def dialogue_dataset(dialogues, **columns) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"dialogue": dialogues, **columns})


def test_split_long_dialogues_for_training():
    dialogue = [f"u{i}" for i in range(23)]
    data = dialogue_dataset([dialogue, ["a", "b"]], emotions=[list(range(23)), [0, 1]], source=["x", "y"])
    split = split_long_dialogues(data)
    assert [len(d) for d in split["dialogue"]] == [8, 8, 7, 2]
    assert split["dialogue"][1] == dialogue[8:16] and split["emotions"][1] == list(range(8, 16))
    assert split["source"] == ["x", "x", "x", "y"]


def test_utterance_shuffling_permutes_every_negative():
    data = dialogue_dataset([["a", "b", "c", "d"], ["x", "y"], ["same", "same"]])
    positives, negatives = utterance_shuffling(data, seed=3)
    assert positives["dialogue"] == [["a", "b", "c", "d"], ["x", "y"]]
    assert negatives["dialogue"][1] == ["y", "x"]
    assert sorted(negatives["dialogue"][0]) == ["a", "b", "c", "d"] and negatives["dialogue"][0] != ["a", "b", "c", "d"]


def test_generic_utterances_are_the_frequent_ones_in_their_usual_spelling():
    data = dialogue_dataset([["OK .", "Tell me more about Rome ."], ["ok  .", "Thanks ."], ["OK .", "Thanks ."]])
    assert generic_utterances(data, min_count=2) == ["OK .", "Thanks ."]
    assert generic_utterances(data, min_count=3) == ["OK ."]


def test_generic_substitution_replaces_some_of_one_speakers_utterances():
    dialogues = [["a1", "b1", "a2", "b2", "a3", "b3"], ["x1", "y1", "x2"], ["OK .", "OK ."], ["solo"]]
    positives, negatives = generic_substitution(dialogue_dataset(dialogues), generic=["OK .", "Sure ."], seed=5)
    # ["OK .", "OK ."] has nothing but generic utterances and ["solo"] no second utterance: left out
    assert positives["dialogue"] == dialogues[:2]
    for original, corrupted in zip(positives["dialogue"], negatives["dialogue"]):
        changed = [i for i, (u, v) in enumerate(zip(original, corrupted)) if u != v]
        assert len(corrupted) == len(original) and changed
        assert len({i % 2 for i in changed}) == 1, "only one speaker's utterances are replaced"
        assert all(corrupted[i] in ("OK .", "Sure .") for i in changed)
    again = generic_substitution(dialogue_dataset(dialogues), generic=["OK .", "Sure ."], seed=5)[1]
    assert again["dialogue"] == negatives["dialogue"]
    with pytest.raises(ValueError, match="min_count"):
        generic_substitution(dialogue_dataset(dialogues), min_count=10)


def changed_positions(original: list[str], corrupted: list[str]) -> list[int]:
    assert len(corrupted) == len(original)
    return [i for i, (u, v) in enumerate(zip(original, corrupted)) if u != v]


SPEAKER_DIALOGUES = [["a1", "b1", "a2", "b2", "a3", "b3"], ["x1", "y1", "x2", "y2", "x3"], ["p", "q", "r"]]


def test_random_substitution_takes_utterances_of_other_dialogues():
    positives, negatives = random_substitution(dialogue_dataset(SPEAKER_DIALOGUES), seed=2)
    assert positives["dialogue"] == SPEAKER_DIALOGUES
    for original, corrupted in zip(positives["dialogue"], negatives["dialogue"]):
        changed = changed_positions(original, corrupted)
        assert changed and len({i % 2 for i in changed}) == 1, "only one speaker's utterances are replaced"
        others = {u for d in SPEAKER_DIALOGUES if d != original for u in d}
        assert all(corrupted[i] in others for i in changed)
    assert random_substitution(dialogue_dataset(SPEAKER_DIALOGUES), seed=2)[1]["dialogue"] == negatives["dialogue"]
    with pytest.raises(ValueError, match="at least two"):
        random_substitution(dialogue_dataset(SPEAKER_DIALOGUES[:1]))


def test_echo_substitution_parrots_the_previous_utterance():
    dialogues = SPEAKER_DIALOGUES + [["same", "same"]]
    positives, negatives = echo_substitution(dialogue_dataset(dialogues), seed=0)
    assert positives["dialogue"] == SPEAKER_DIALOGUES  # an echo of "same" changes nothing: left out
    for original, corrupted in zip(positives["dialogue"], negatives["dialogue"]):
        changed = changed_positions(original, corrupted)
        assert changed and len({i % 2 for i in changed}) == 1
        assert all(corrupted[i] == original[i - 1] for i in changed)


def test_repeat_substitution_says_an_earlier_utterance_of_the_same_speaker_again():
    dialogues = SPEAKER_DIALOGUES + [["first", "only"]]
    positives, negatives = repeat_substitution(dialogue_dataset(dialogues), seed=1)
    assert positives["dialogue"] == SPEAKER_DIALOGUES  # nobody speaks twice in ["first", "only"]
    for original, corrupted in zip(positives["dialogue"], negatives["dialogue"]):
        for i in changed_positions(original, corrupted):
            assert corrupted[i] in original[i % 2 : i : 2]


def test_speaker_shuffling_reorders_one_speakers_turns():
    dialogues = SPEAKER_DIALOGUES + [["hi", "hello"]]
    positives, negatives = speaker_shuffling(dialogue_dataset(dialogues), seed=4)
    assert positives["dialogue"] == SPEAKER_DIALOGUES
    for original, corrupted in zip(positives["dialogue"], negatives["dialogue"]):
        changed = changed_positions(original, corrupted)
        assert len(changed) >= 2 and len({i % 2 for i in changed}) == 1
        speaker = changed[0] % 2
        assert sorted(corrupted[speaker::2]) == sorted(original[speaker::2])


def test_strategy_specs_name_the_head_they_train():
    assert parse_strategy("echo_substitution") == ("echo_substitution", "coherence")
    assert parse_strategy("generic_substitution:likability") == ("generic_substitution", "likability")
    with pytest.raises(ValueError, match="unknown pair strategy 'echo'"):
        parse_strategy("echo")
    with pytest.raises(ValueError, match="dimension after ':'"):
        parse_strategy("shuffling:fluency")


def test_qa_relevance_thresholds_select_exactly():
    relevance = {"good": 0.995, "bad": 0.5, "mid": 0.9}
    seen = []

    def scorer(questions, answers):
        seen.extend(zip(questions, answers))
        return [relevance[a] for a in answers]

    data = dialogue_dataset([
        ["q1?", "good", "x", "y", "z"],      # 0.995 > 0.99: positive
        ["q2?", "bad", "x", "y", "z"],       # 0.5 < 0.85: negative
        ["q3?", "mid", "x", "y", "z"],       # 0.9: neither
        ["q4?", "good", "x", "y"],           # 4 utterances: not eligible
        ["no question", "bad", "x", "y", "z"],  # no QA pair: not eligible
        ["q5?", "good", "q6?", "bad", "z"],  # mean 0.7475: negative
    ])
    positives, negatives = qa_relevance(data, scorer)
    assert [d[0] for d in positives["dialogue"]] == ["q1?"]
    assert [d[0] for d in negatives["dialogue"]] == ["q2?", "q5?"]
    assert ("q5?", "good") in seen and ("q6?", "bad") in seen and not any(q == "q4?" for q, _ in seen)


def test_contradiction_scoring_thresholds_select_exactly():
    contradiction = {"calm": 0.1, "clash": 0.9}
    data = dialogue_dataset([["a", "calm", "calm"], ["a", "clash", "clash"], ["a", "calm", "clash"],
                             ["a", "calm", "calm", "clash"]])
    positives, negatives = contradiction_scoring(data, lambda first, second: [contradiction[s] for s in second])
    assert positives["dialogue"] == [["a", "calm", "calm"]]           # 0.1 < 0.20
    assert negatives["dialogue"] == [["a", "clash", "clash"], ["a", "calm", "clash"]]  # 0.9, 0.5 > 0.40
    # ["a", "calm", "calm", "clash"]: (0.1 + 0.1 + 0.9) / 3 = 0.367, between the thresholds


def test_entailment_scoring_uses_all_pairs_and_thresholds():
    calls = []

    def scorer(first, second):
        calls.append(len(first))
        return [1.0 if a == b else 0.0 for a, b in zip(first, second)]

    data = dialogue_dataset([["a", "b", "c"], ["x", "x", "y"], ["a", "b", "c", "d", "e", "a"]])
    positives, negatives = entailment_scoring(data, scorer)
    assert calls == [3 + 3 + 15]                     # k(k-1)/2 pairs per dialogue, one batched call
    assert positives["dialogue"] == [["a", "b", "c"]]  # 0 < 0.01
    assert negatives["dialogue"] == [["x", "x", "y"]]  # 1/3 > 0.10; the last one: 1/15 = 0.067, neither


def test_positive_emotions_with_classifier_and_gold_labels():
    labels = {"yay": "joy", "love it": "love", "meh": "neutral", "ugh": "anger"}
    data = dialogue_dataset([["yay", "love it"], ["yay", "meh", "ugh"], ["yay", "love it", "meh"], ["meh", "ugh"]])
    positives, negatives = positive_emotions(data, lambda texts: [labels[t] for t in texts])
    assert positives["dialogue"] == [["yay", "love it"]]
    assert negatives["dialogue"] == [["yay", "meh", "ugh"], ["meh", "ugh"]]

    names = ["no_emotion", "anger", "disgust", "fear", "happiness", "sadness", "surprise"]
    features = datasets.Features({"dialogue": datasets.Sequence(datasets.Value("string")),
                                  "emotions": datasets.Sequence(datasets.ClassLabel(names=names))})
    gold = datasets.Dataset.from_dict(
        {"dialogue": [["a", "b"], ["c", "d", "e"], ["f", "g"]], "emotions": [[4, 4], [4, 0, 4], [0, 6]]}, features=features)
    positives, negatives = positive_emotions(gold, classifier=None)
    assert positives["dialogue"] == [["a", "b"]] and negatives["dialogue"] == [["f", "g"]]
    with pytest.raises(ValueError, match="emotions"):
        positive_emotions(dialogue_dataset([["a"]]), classifier=None)


def test_pair_scorer_from_a_local_nli_model(tmp_path, tiny_backbone):
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig.from_pretrained(tiny_backbone, num_labels=3,
                                        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"})
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_backbone)
    tokenizer.save_pretrained(tmp_path)
    score = PairClassifier(str(tmp_path), "entailment", device="cpu")
    values = score(["it rains", "the sky"], ["it is wet", "is blue"])
    with torch.no_grad():
        expected = model(**tokenizer(["it rains", "the sky"], ["it is wet", "is blue"], padding=True,
                                     return_tensors="pt")).logits.softmax(-1)[:, 2]
    np.testing.assert_allclose(values, expected.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="label='qa_label': choose one of"):
        PairClassifier(str(tmp_path), "qa_label")


def test_sample_pairs_draws_from_positives_times_negatives():
    positives = dialogue_dataset([["p1"], ["p2"]])
    negatives = dialogue_dataset([["n1"], ["n2"], ["n3"]])
    everything = sample_pairs(positives, negatives, 100, task=2, seed=0)
    assert len(everything) == 6 and set(everything["task"]) == {2}
    assert {(p[0], n[0]) for p, n in zip(everything["positive"], everything["negative"])} == {
        (p, n) for p in ("p1", "p2") for n in ("n1", "n2", "n3")}
    some = sample_pairs(positives, negatives, 4, seed=0)
    assert len(some) == 4 and len({(p[0], n[0]) for p, n in zip(some["positive"], some["negative"])}) == 4
    with pytest.raises(ValueError, match="0 negative"):
        sample_pairs(positives, negatives.select([]), 4)


def test_aligned_pairs_pair_each_dialogue_with_its_own_corruption():
    positives, negatives = echo_substitution(dialogue_dataset(SPEAKER_DIALOGUES), seed=0)
    pairs = sample_pairs(positives, negatives, 100, task=1, seed=0, aligned=True)
    assert sorted(map(tuple, pairs["positive"])) == sorted(map(tuple, SPEAKER_DIALOGUES))
    for positive, negative in zip(pairs["positive"], pairs["negative"]):
        assert changed_positions(positive, negative)
    assert len(sample_pairs(positives, negatives, 2, aligned=True)) == 2
    with pytest.raises(ValueError, match="one negative per positive"):
        sample_pairs(positives, negatives.select([0]), 2, aligned=True)


def test_length_matched_pairs_pair_equal_or_nearest_utterance_counts():
    positives = dialogue_dataset([["p1", "a"], ["p2", "a", "b", "c", "d"]])
    negatives = dialogue_dataset([["n1", "a"], ["n2", "a"], ["n3", "a", "b"], ["n4"]])
    pairs = sample_pairs(positives, negatives, 100, seed=0, length_matched=True)
    # 2 utterances: n1, n2; 5 utterances: none, the nearest count present is 3 (n3)
    assert sorted((p[0], n[0]) for p, n in zip(pairs["positive"], pairs["negative"])) == [
        ("p1", "n1"), ("p1", "n2"), ("p2", "n3")]
    some = sample_pairs(positives, negatives, 2, seed=1, length_matched=True)
    assert len({(p[0], n[0]) for p, n in zip(some["positive"], some["negative"])}) == 2


# --- loss, collator and Trainer ------------------------------------------------------------------------------

def test_ranking_loss_value_and_gradient_direction():
    first = torch.tensor([0.5, 0.3], requires_grad=True)
    second = torch.tensor([0.45, 0.5], requires_grad=True)
    labels = torch.tensor([1.0, -1.0])
    # y=+1: max(0, -(0.5 - 0.45) + 0.1) = 0.05; y=-1: max(0, (0.3 - 0.5) + 0.1) = 0 -> mean 0.025
    loss = ranking_loss(first, second, labels, torch.tensor([0, 0]))
    assert loss.item() == pytest.approx(0.025)
    loss.backward()
    # descending the gradient raises the positive x1 (y=+1) and lowers x2 of that pair
    assert first.grad.tolist() == pytest.approx([-0.5, 0.0]) and second.grad.tolist() == pytest.approx([0.5, 0.0])
    # two tasks: per-task means are summed (L_coh + L_lik)
    assert ranking_loss(first.detach(), second.detach(), labels, torch.tensor([0, 1])).item() == pytest.approx(0.05)


def test_collator_holds_both_orderings(tokenizer):
    features = [{"positive_input_ids": [101, 1, 102], "negative_input_ids": [101, 2, 2, 102], "task": 0},
                {"positive_input_ids": [101, 3, 102], "negative_input_ids": [101, 4, 102], "task": 1}]
    batch = FineDEvalDataCollator(tokenizer)(features)
    assert batch["labels"].tolist() == [1.0, -1.0] and batch["task"].tolist() == [0, 1]
    assert batch["input_ids"].tolist() == [[101, 1, 102, 0], [101, 4, 102, 0], [101, 2, 2, 102], [101, 3, 102, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 0]]


def pair_dataset(tokenizer, size=8) -> datasets.Dataset:
    pairs = datasets.Dataset.from_dict({
        "positive": [["How are you?", "Fine, thanks, and you?"]] * size,
        "negative": [["Fine, thanks, and you?", "How are you?"]] * size,
        "task": [i % 2 for i in range(size)],
    })
    return tokenize_pairs(pairs, tokenizer, tokenizer.convert_tokens_to_ids("</UTT>"), 64)


def test_trainer_compute_loss_runs_one_forward_pass(tmp_path, tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone, ["coherence", "likability"])
    data = pair_dataset(tokenizer, 4)
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    trainer = FineDEvalTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    assert args.remove_unused_columns is False
    batch = trainer.data_collator([data[i] for i in range(4)])
    calls = []
    handle = model.register_forward_hook(lambda module, inputs, output: calls.append(output.scores.shape))
    loss, outputs = trainer.compute_loss(model, batch, return_outputs=True)
    handle.remove()
    assert calls == [torch.Size([8, 2])]
    with torch.no_grad():
        scores = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).scores
    heads = batch["task"].repeat(2)
    chosen = scores[torch.arange(8), heads]
    expected = ranking_loss(chosen[:4], chosen[4:], batch["labels"], batch["task"])
    assert loss.item() == pytest.approx(expected.item(), abs=1e-6)
    torch.testing.assert_close(outputs["first"], chosen[:4])


def test_trainer_trains_and_reports_pairwise_accuracy(tmp_path, tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone, ["coherence", "likability"])
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, max_steps=6,
                             per_device_train_batch_size=4, learning_rate=1e-3, logging_steps=3, save_strategy="no")
    trainer = FineDEvalTrainer(model=model, args=args, train_dataset=pair_dataset(tokenizer, 8),
                               eval_dataset=pair_dataset(tokenizer, 4), processing_class=tokenizer)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logged and all(0.0 <= entry["accuracy"] <= 1.0 for entry in logged)
    metrics = trainer.evaluate()
    assert {"eval_accuracy", "eval_accuracy_coherence", "eval_accuracy_likability"} <= set(metrics)
    # six steps of lr 1e-3 on one repeated pair: the original order now outranks the shuffled one on both heads
    assert metrics["eval_accuracy"] == 1.0


# --- scoring -----------------------------------------------------------------------------------------------

def test_metric_scores_match_one_at_a_time(tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone)
    metric = FineDEvalMetric([model], [tokenizer], batch_size=2)
    output = metric.score_dialogues(DIALOGUES)
    assert metric.dimensions == ("coherence", "likability", "topic_depth")
    token_id = model.config.utterance_token_id
    for index, dialogue in enumerate(DIALOGUES):
        ids = torch.tensor(encode_dialogues(tokenizer, [dialogue], token_id, 128).input_ids)
        with torch.no_grad():
            alone = model(input_ids=ids).scores[0]
        for column, dimension in enumerate(metric.dimensions):
            assert output.scores[dimension][index] == pytest.approx(alone[column].item(), abs=1e-5)
        assert output.overall[index] == pytest.approx(alone.mean().item(), abs=1e-5)
    assert output.truncated == [False, False, False]


def test_window_scores_are_the_mean_over_windows(tokenizer, tiny_backbone):
    model = tiny_model(tokenizer, tiny_backbone, ["coherence"], max_seq_length=14, window_overlap=1)
    dialogue = DIALOGUES[2]
    encoded = encode_dialogues(tokenizer, [dialogue], model.config.utterance_token_id, 14, "window", 1)
    assert len(encoded.input_ids) > 1
    with torch.no_grad():
        window_scores = [model(input_ids=torch.tensor([ids])).scores[0, 0].item() for ids in encoded.input_ids]
    window = FineDEvalMetric([model], [tokenizer]).score_dialogues([dialogue])
    assert window.overall[0] == pytest.approx(float(np.mean(window_scores)), abs=1e-5)
    assert window.truncated == [False]
    cut = FineDEvalMetric([model], [tokenizer], long_dialogue="keep_end").score_dialogues([dialogue])
    assert cut.truncated == [True]


def test_ensemble_averages_sub_metric_models(tokenizer, tiny_backbone):
    coherence = tiny_model(tokenizer, tiny_backbone, ["coherence"])
    torch.manual_seed(5)
    likability = tiny_model(tokenizer, tiny_backbone, ["likability"])
    torch.nn.init.normal_(likability.score_heads.weight)
    single = [FineDEvalMetric([m], [tokenizer]).score_dialogues(DIALOGUES) for m in (coherence, likability)]
    ensemble = FineDEvalMetric([coherence, likability], [tokenizer, tokenizer]).score_dialogues(DIALOGUES)
    assert ensemble.scores["coherence"] == pytest.approx(single[0].overall)
    assert ensemble.scores["likability"] == pytest.approx(single[1].overall)
    assert ensemble.overall == pytest.approx([(a + b) / 2 for a, b in zip(single[0].overall, single[1].overall)])


def test_adapter_folder_loads_like_the_merged_model(tmp_path, tokenizer, tiny_backbone):
    from peft import LoraConfig, get_peft_model

    model = tiny_model(tokenizer, tiny_backbone, ["coherence", "likability"])
    token_id = model.config.utterance_token_id
    peft_model = get_peft_model(model, LoraConfig(
        r=4, lora_alpha=8, target_modules=["query", "key", "value", "dense"], exclude_modules=r".*pooler.*",
        modules_to_save=["score_heads"], trainable_token_indices={"word_embeddings": [token_id]}, init_lora_weights=False))
    with torch.no_grad():
        peft_model.base_model.model.encoder.embeddings.word_embeddings.token_adapter.trainable_tokens_delta["default"].add_(1.0)
    peft_model.save_pretrained(tmp_path)
    model.config.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    merged = peft_model.merge_and_unload().eval()
    loaded, _ = load_checkpoint("fined-eval", str(tmp_path))
    ids = torch.tensor(encode_dialogues(tokenizer, [DIALOGUES[0]], token_id, 128).input_ids)
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).scores, merged(input_ids=ids).scores)


def test_evaluate_module_and_cli_with_a_checkpoint(tmp_path, tiny_checkpoint):
    module = evaluate.load(str(REPO / "metrics" / "fined_eval"))
    results = module.compute(dialogues=DIALOGUES, checkpoint=tiny_checkpoint)
    assert set(results) == {"coherence", "likability", "topic_depth", "overall", "truncated", "empty", "signature"}
    expected = load_metric("fined-eval", checkpoint=tiny_checkpoint).score_dialogues(DIALOGUES)
    assert results["overall"] == pytest.approx(expected.overall)
    ensemble = evaluate.load(str(REPO / "metrics" / "fined_eval"), "en")
    with pytest.raises(ValueError, match="sub-metric"):
        ensemble.compute(dialogues=DIALOGUES)

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"dialogue": d}) + "\n" for d in DIALOGUES))
    target = tmp_path / "out.jsonl"
    assert cli.main(["score", "--metric", "fined-eval", "--checkpoint", tiny_checkpoint,
                     "--input", str(source), "--output", str(target)]) == 0
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["overall"] for r in records] == pytest.approx(expected.overall)


def test_exported_folder_loads_with_auto_model(tmp_path, tiny_checkpoint, tokenizer):
    folders = export_models("fined-eval", tiny_checkpoint, tmp_path)
    assert len(folders) == 1
    files = {p.name for p in folders[0].iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= files
    model = AutoModel.from_pretrained(folders[0])
    original = AutoModel.from_pretrained(tiny_checkpoint)
    ids = torch.tensor([tokenizer("hi </UTT> hello")["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).scores, original(input_ids=ids).scores)


# --- the shipped default -----------------------------------------------------------------------------------

def test_shipped_default_scores_offline_and_exports(tmp_path):
    defaults = Path(hf_dialeval.metrics.fined_eval.DEFAULT_CHECKPOINT)
    # 10 MiB: the rank-32 deltas of the dialogue, adjacency and pair encoders, the heads and the tokenizer (9.2 MiB)
    assert sum(p.stat().st_size for p in defaults.iterdir()) <= 10 * 1024 * 1024
    results = evaluate.load(str(REPO / "metrics" / "fined_eval")).compute(dialogues=DIALOGUES)
    assert set(results) == {"coherence", "likability", "topic_depth", "overall", "truncated", "empty", "signature"}
    assert all(0.0 < value < 1.0 for value in results["overall"])
    folder = export_models("fined-eval", None, tmp_path)[0]
    exported = AutoModel.from_pretrained(folder)
    metric = FineDEvalMetric([exported.eval()], [AutoTokenizer.from_pretrained(folder)])
    assert metric.score_dialogues(DIALOGUES).overall == pytest.approx(results["overall"], abs=1e-5)


@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
def test_train_command_end_to_end(tmp_path, tiny_backbone):
    out = tmp_path / "run"
    assert cli.main(["train", "fined-eval", "--output-dir", str(out), "--backbone", tiny_backbone,
                     "--strategies", "shuffling", "echo_substitution", "positive_emotions", "generic_substitution",
                     "generic_substitution:likability", "--pair-with-original",
                     "--emotion-model", "gold", "--train-pairs", "16", "--eval-pairs", "8", "--max-steps", "2",
                     "--eval-steps", "2", "--lora-rank", "2", "--max-seq-length", "128", "--train-max-seq-length", "64"]) == 0
    record = json.loads((out / "training_record.json").read_text())
    assert record["train_pairs"] == 48 and "eval_accuracy" in record["validation"]
    full = load_metric("fined-eval", checkpoint=str(out)).score_dialogues(DIALOGUES)
    adapter = load_metric("fined-eval", checkpoint=str(out / "adapter")).score_dialogues(DIALOGUES)
    assert full.overall == pytest.approx(adapter.overall, abs=1e-5)
    assert list(full.scores) == ["coherence", "likability", "topic_depth"]


@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
def test_train_command_averages_the_last_checkpoints(tmp_path, tiny_backbone):
    out = tmp_path / "run"
    assert cli.main(["train", "fined-eval", "--output-dir", str(out), "--backbone", tiny_backbone,
                     "--strategies", "shuffling", "--train-pairs", "32", "--eval-pairs", "8", "--max-steps", "3",
                     "--eval-steps", "1", "--batch-size", "4", "--learning-rate", "1e-2", "--lora-rank", "0",
                     "--adapter-rank", "2", "--average-last", "2", "--keep-checkpoints",
                     "--max-seq-length", "128", "--train-max-seq-length", "64"]) == 0
    record = json.loads((out / "training_record.json").read_text())
    assert "eval_accuracy" in record["validation"] and record["best_checkpoint"]["path"]
    steps = [load_file(str(out / f"checkpoint-{step}" / "model.safetensors")) for step in (2, 3)]
    final = load_file(str(out / "full" / "model.safetensors"))
    name = "score_heads.weight"
    assert not torch.equal(steps[0][name], steps[1][name])
    torch.testing.assert_close(final[name], (steps[0][name] + steps[1][name]) / 2)
    layer = next(key for key in final if key.endswith("layer.0.attention.self.query.weight"))
    torch.testing.assert_close(final[layer], (steps[0][layer] + steps[1][layer]) / 2)


def test_adjacency_mlp_starts_silent_then_adds_the_mean_of_its_pair_logits(tmp_path, tokenizer, tiny_backbone):
    extended = tiny_model(tokenizer, tiny_backbone, adjacency_bins=3)
    dialogues = [DIALOGUES[2], ["Only one utterance here"]]
    encoded = encode_dialogues(tokenizer, dialogues, extended.config.utterance_token_id, 128)
    batch = tokenizer.pad({"input_ids": encoded.input_ids}, return_tensors="pt")
    with torch.no_grad():
        before = extended(**batch)
    extended.add_adjacency_mlp(8)
    assert extended.config.adjacency_mlp_size == 8 and "adjacency_mlp" in extended.head_names()
    with torch.no_grad():
        torch.testing.assert_close(extended(**batch).logits, before.logits, rtol=0, atol=0)
        torch.nn.init.normal_(extended.adjacency_mlp[-1].weight, generator=torch.Generator().manual_seed(0))
        logits = extended(**batch).logits
        # by hand: each utterance embedded alone, unit length, [a, b, a·b, |a−b|, cos] per consecutive pair
        embeddings = [torch.nn.functional.normalize(embed_alone(extended.encoder, tokenizer, u), dim=0) for u in dialogues[0]]
        pair_logits = [extended.adjacency_mlp(torch.cat([a, b, a * b, (a - b).abs(), (a * b).sum().view(1)]))
                       for a, b in zip(embeddings, embeddings[1:])]
    torch.testing.assert_close(logits[0] - before.logits[0], torch.stack(pair_logits).mean(0), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(logits[1], before.logits[1], rtol=0, atol=0)  # one utterance: no pair, nothing added
    with pytest.raises(ValueError, match="already has"):
        extended.add_adjacency_mlp(8)
    with pytest.raises(ValueError, match="adjacency_mlp_size"):
        FineDEvalConfig(backbone_config={}, adjacency_mlp_size=-1)
    extended.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert loaded.config.adjacency_mlp_size == 8 and loaded.config.adjacency_bins == 3
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, logits, rtol=0, atol=0)


@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
@pytest.mark.parametrize("option, size, config_field, new_weight", [
    ("--adjacency-bins", "3", "adjacency_bins", lambda model: model.adjacency_heads.weight),
    ("--adjacency-mlp-size", "4", "adjacency_mlp_size", lambda model: model.adjacency_mlp[-1].weight),
])
def test_train_command_adds_an_adjacency_head_to_a_trained_model(tmp_path, capsys, tiny_checkpoint, option, size,
                                                                 config_field, new_weight):
    out = tmp_path / "run"
    common = ["train", "fined-eval", "--output-dir", str(out), "--init-from", tiny_checkpoint, "--strategies",
              "random_substitution", "speaker_shuffling", "--pair-with-original", "--train-pairs", "16",
              "--eval-pairs", "8", "--max-steps", "2", "--eval-steps", "2", "--learning-rate", "1e-1",
              "--train-max-seq-length", "64"]
    assert cli.main(common + ["--lora-rank", "4"]) == 2
    assert "give --lora-rank 0" in capsys.readouterr().err
    assert cli.main(common + [option, size, "--freeze-encoder", "--freeze-score-heads", "--lora-rank", "0",
                              "--adapter-rank", "2"]) == 0
    trained = AutoModel.from_pretrained(out)
    start = AutoModel.from_pretrained(tiny_checkpoint)
    assert getattr(trained.config, config_field) == int(size) and trained.config.dimensions == start.config.dimensions
    assert new_weight(trained).abs().sum() > 0  # trained from zero
    trained_weights = trained.state_dict()
    for name, weight in start.state_dict().items():  # the encoder and the score heads were frozen
        torch.testing.assert_close(trained_weights[name], weight, rtol=0, atol=0)
    full = load_metric("fined-eval", checkpoint=str(out)).score_dialogues(DIALOGUES)
    adapter = load_metric("fined-eval", checkpoint=str(out / "adapter")).score_dialogues(DIALOGUES)
    assert full.overall == pytest.approx(adapter.overall, abs=1e-4)


@pytest.mark.slow
@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
def test_freeze_adjacency_mlp_trains_the_adjacency_head_alone(tmp_path, capsys, tiny_checkpoint):
    def train(out, init_from, *options):
        return cli.main(["train", "fined-eval", "--output-dir", str(out), "--init-from", str(init_from), *options,
                         "--freeze-encoder", "--freeze-score-heads", "--strategies", "random_substitution",
                         "speaker_shuffling", "--pair-with-original", "--train-pairs", "16", "--eval-pairs", "8",
                         "--max-steps", "2", "--eval-steps", "2", "--learning-rate", "1e-1", "--train-max-seq-length",
                         "64", "--lora-rank", "0"])

    assert train(tmp_path / "no-mlp", tiny_checkpoint, "--freeze-adjacency-mlp") == 2
    assert "has no adjacency MLP" in capsys.readouterr().err
    assert train(tmp_path / "mlp", tiny_checkpoint, "--adjacency-mlp-size", "4") == 0
    assert train(tmp_path / "head", tmp_path / "mlp", "--adjacency-bins", "3", "--freeze-adjacency-mlp") == 0
    start, trained = AutoModel.from_pretrained(tmp_path / "mlp"), AutoModel.from_pretrained(tmp_path / "head")
    assert trained.adjacency_heads.weight.abs().sum() > 0  # trained from zero
    trained_weights = trained.state_dict()
    for name, weight in start.state_dict().items():  # the encoder, the score heads and the adjacency MLP: frozen
        torch.testing.assert_close(trained_weights[name], weight, rtol=0, atol=0)


@pytest.fixture(scope="module")
def sentence_encoder(tmp_path_factory, tokenizer) -> str:
    """Another tiny BERT without the ``</UTT>`` row: a stand-in for a sentence encoder trained for adjacency."""
    return save_tiny_bert(tmp_path_factory.mktemp("sentence_encoder"), vocab_size=len(tokenizer) - 1, seed=5)


def test_adjacency_encoder_embeds_the_utterances_the_adjacency_mlp_reads(tmp_path, tokenizer, tiny_backbone,
                                                                        sentence_encoder):
    model = tiny_model(tokenizer, tiny_backbone, adjacency_mlp_size=8)
    with pytest.raises(ValueError, match="adjacency features"):
        tiny_model(tokenizer, tiny_backbone).add_adjacency_encoder(AutoModel.from_pretrained(sentence_encoder))
    with pytest.raises(ValueError, match="adjacency features"):
        FineDEvalConfig(backbone_config={}, adjacency_encoder=True)
    with torch.no_grad():
        torch.nn.init.normal_(model.adjacency_mlp[-1].weight, generator=torch.Generator().manual_seed(0))
    batch = tokenizer.pad({"input_ids": encode_dialogues(tokenizer, DIALOGUES, model.config.utterance_token_id,
                                                         128).input_ids}, return_tensors="pt")
    with torch.no_grad():
        before = model(**batch)
    encoder = AutoModel.from_pretrained(sentence_encoder).eval()
    model.add_adjacency_encoder(encoder)
    assert model.config.adjacency_encoder and "adjacency_encoder" not in model.head_names()
    rows = model.adjacency_encoder.get_input_embeddings().weight
    torch.testing.assert_close(rows[:-1], encoder.get_input_embeddings().weight, rtol=0, atol=0)
    torch.testing.assert_close(rows[-1], model.encoder.get_input_embeddings().weight[-1], rtol=0, atol=0)
    with torch.no_grad():
        after = model(**batch)
        # by hand: the sentence encoder's unit-length embeddings of each utterance, [a, b, a·b, |a−b|, cos] per pair
        embeddings = [torch.nn.functional.normalize(embed_alone(model.adjacency_encoder, tokenizer, u), dim=0)
                      for u in DIALOGUES[0]]
        mlp = torch.stack([model.adjacency_mlp(torch.cat([a, b, a * b, (a - b).abs(), (a * b).sum().view(1)]))
                           for a, b in zip(embeddings, embeddings[1:])]).mean(0)
        dialogue_logits = model.score_heads(after.pooled_output)
    torch.testing.assert_close(after.pooled_output, before.pooled_output, rtol=0, atol=0)  # the dialogue encoder
    torch.testing.assert_close(after.logits[0], dialogue_logits[0] + mlp, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(after.logits, before.logits)
    with pytest.raises(ValueError, match="already has"):
        model.add_adjacency_encoder(encoder)
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert loaded.config.adjacency_encoder
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, after.logits, rtol=0, atol=0)


def save_tuned_encoder(backbone: str, path: Path, seed: int) -> torch.nn.Module:
    """``backbone`` as the diagnostics train an encoder (only the Transformer layers' linear maps changed), saved."""
    encoder = AutoModel.from_pretrained(backbone)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, module in layer_linear_modules(encoder):
            module.weight.add_(0.05 * torch.randn(module.weight.shape, generator=generator))
    encoder.save_pretrained(path)
    return encoder


@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
def test_train_command_adds_a_frozen_adjacency_encoder_that_the_adapter_carries(tmp_path, capsys, tiny_checkpoint,
                                                                                tiny_backbone):
    encoder = save_tuned_encoder(tiny_backbone, tmp_path / "encoder", seed=3)
    out = tmp_path / "run"
    assert cli.main(["train", "fined-eval", "--output-dir", str(out), "--adjacency-encoder", str(tmp_path / "encoder"),
                     "--adjacency-mlp-size", "4", "--lora-rank", "0"]) == 2
    assert "give --init-from" in capsys.readouterr().err
    assert cli.main(["train", "fined-eval", "--output-dir", str(out), "--init-from", tiny_checkpoint,
                     "--adjacency-mlp-size", "4", "--adjacency-encoder", str(tmp_path / "encoder"), "--freeze-encoder",
                     "--freeze-score-heads", "--strategies", "random_substitution", "speaker_shuffling",
                     "--pair-with-original", "--train-pairs", "16", "--eval-pairs", "8", "--max-steps", "2",
                     "--eval-steps", "2", "--learning-rate", "1e-1", "--train-max-seq-length", "64", "--lora-rank", "0",
                     "--adapter-rank", "32"]) == 0
    trained = AutoModel.from_pretrained(out / "full")
    start = AutoModel.from_pretrained(tiny_checkpoint)
    assert trained.config.adjacency_encoder and trained.adjacency_mlp[-1].weight.abs().sum() > 0
    adjacency = trained.adjacency_encoder.state_dict()
    for name, weight in encoder.state_dict().items():  # frozen: the sentence encoder as given
        torch.testing.assert_close(adjacency[name][:len(weight)], weight, rtol=0, atol=0)
    trained_weights = trained.state_dict()
    for name, weight in start.state_dict().items():
        torch.testing.assert_close(trained_weights[name], weight, rtol=0, atol=0)
    # rank 32 is the tiny layers' full rank: the adapter over the backbone carries both encoders exactly
    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert any(name.startswith("base_model.model.adjacency_encoder.") for name in weights)
    full = load_metric("fined-eval", checkpoint=str(out / "full")).score_dialogues(DIALOGUES)
    from_adapter = load_metric("fined-eval", checkpoint=str(out / "adapter")).score_dialogues(DIALOGUES)
    assert full.overall == pytest.approx(from_adapter.overall, abs=1e-5)


def pair_reading(encoder, tokenizer, earlier, later, head, max_length=128):
    """The pair cross-encoder's logit of one pair, read as the tokenizer frames a text pair (``longest_first``)."""
    inputs = tokenizer(earlier, later, truncation=True, max_length=max_length, return_tensors="pt")
    return head(encoder(**inputs).last_hidden_state[0].mean(0))


def test_pair_encoder_reads_each_consecutive_pair_as_the_tokenizer_frames_it(tmp_path, tokenizer, tiny_backbone,
                                                                             sentence_encoder):
    model = tiny_model(tokenizer, tiny_backbone)
    batch = tokenizer.pad({"input_ids": encode_dialogues(tokenizer, DIALOGUES + [["Only one utterance here"]],
                                                         model.config.utterance_token_id, 128).input_ids},
                          return_tensors="pt")
    with torch.no_grad():
        before = model(**batch)
    encoder = AutoModel.from_pretrained(sentence_encoder).eval()
    silent = tiny_model(tokenizer, tiny_backbone)
    silent.add_pair_encoder(encoder, tokenizer)  # no trained pair layer: the heads start at zero
    with torch.no_grad():
        torch.testing.assert_close(silent(**batch).logits, before.logits, rtol=0, atol=0)
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    with pytest.raises(ValueError, match="heads are"):
        tiny_model(tokenizer, tiny_backbone, ["likability"]).add_pair_encoder(encoder, tokenizer, head,
                                                                              {"coherence": 1.0})
    with pytest.raises(ValueError, match="pair_head"):
        tiny_model(tokenizer, tiny_backbone).add_pair_encoder(encoder, tokenizer, None, {"coherence": 1.0})
    model.add_pair_encoder(encoder, tokenizer, head, {"coherence": 0.5})
    assert model.config.pair_encoder and "pair_encoder" not in model.head_names() and "pair_heads" in model.head_names()
    assert model.config.pair_separator == [tokenizer.sep_token_id] and model.config.pair_segment_type == 1
    with torch.no_grad():
        after = model(**batch)
        for row, dialogue in enumerate(DIALOGUES):
            pairs = [pair_reading(model.pair_encoder, tokenizer, a, b, head) for a, b in zip(dialogue, dialogue[1:])]
            expected = before.logits[row] + torch.cat([0.5 * torch.stack(pairs).mean(0), torch.zeros(2)])
            torch.testing.assert_close(after.logits[row], expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(after.logits[3], before.logits[3], rtol=0, atol=0)  # one utterance: no pair
    with pytest.raises(ValueError, match="already has"):
        model.add_pair_encoder(encoder, tokenizer)
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, after.logits, rtol=0, atol=0)


def test_pair_encoder_cuts_a_long_pair_as_the_tokenizer_does(tokenizer, tiny_backbone, sentence_encoder):
    model = tiny_model(tokenizer, tiny_backbone, pair_max_length=12)
    encoder = AutoModel.from_pretrained(sentence_encoder).eval()
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    model.add_pair_encoder(encoder, tokenizer, head, {"likability": 1.0})
    long, short = "one two three four five six seven eight nine ten", "yes indeed"
    # the shorter text keeps up to half the room (the first on a tie), the longer one the rest
    for dialogue in ([long, short], [short, long], [long, long], [long, "a b c d e f"], [short, short]):
        ids = torch.tensor(encode_dialogues(tokenizer, [dialogue], model.config.utterance_token_id, 128).input_ids)
        with torch.no_grad():
            parts = model.adjacency_logit_parts(ids, torch.ones_like(ids))
            expected = pair_reading(model.pair_encoder, tokenizer, *dialogue, head, max_length=12)
        torch.testing.assert_close(parts["pair_encoder"][0], torch.cat([torch.zeros(1), expected, torch.zeros(1)]),
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.skipif(find_data_dir() is None, reason="needs the DailyDialog corpus (HF_DIALEVAL_DATA_DIR)")
def test_train_command_adds_a_frozen_pair_encoder_whose_heads_train(tmp_path, capsys, tokenizer, tiny_checkpoint,
                                                                    tiny_backbone):
    # a pair cross-encoder saved as next_utterance_cross_encoder.py saves one, its pair layer beside it
    encoder = save_tuned_encoder(tiny_backbone, tmp_path / "reader", seed=4)
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    out = tmp_path / "run"
    common = ["train", "fined-eval", "--output-dir", str(out), "--lora-rank", "0"]
    assert cli.main(common + ["--pair-weight", "0.5"]) == 2
    assert "give --pair-encoder" in capsys.readouterr().err
    assert cli.main(common + ["--init-from", tiny_checkpoint, "--pair-encoder", str(tmp_path / "reader"),
                              "--pair-weight", "0.5"]) == 2
    assert "pair_head.safetensors" in capsys.readouterr().err
    save_file(head.state_dict(), str(tmp_path / "reader" / "pair_head.safetensors"))
    assert cli.main(common + ["--max-steps", "0"]) == 2
    assert "give --init-from" in capsys.readouterr().err
    run = ["--init-from", tiny_checkpoint, "--pair-encoder", str(tmp_path / "reader"), "--pair-weight", "0.5",
           "--freeze-encoder", "--freeze-score-heads", "--strategies", "random_substitution", "speaker_shuffling",
           "--pair-with-original", "--train-pairs", "16", "--eval-pairs", "8", "--eval-steps", "2",
           "--learning-rate", "1e-1", "--train-max-seq-length", "64", "--adapter-rank", "32"]
    assembled = tmp_path / "assembled"
    assert cli.main(["train", "fined-eval", "--output-dir", str(assembled), "--lora-rank", "0", "--max-steps", "0"]
                    + run) == 0  # untrained: the coherence row is the reader's pair layer at the weight given
    rows = AutoModel.from_pretrained(assembled / "full").pair_heads.weight.detach()
    torch.testing.assert_close(rows, torch.stack([0.5 * head.weight[0].detach(), torch.zeros(32), torch.zeros(32)]))
    assert cli.main(common + ["--max-steps", "2"] + run) == 0
    trained = AutoModel.from_pretrained(out / "full")
    assert trained.config.pair_encoder and trained.config.pair_separator == [tokenizer.sep_token_id]
    pair = trained.pair_encoder.state_dict()
    for name, weight in encoder.state_dict().items():  # frozen: the reader as given
        torch.testing.assert_close(pair[name][:len(weight)], weight, rtol=0, atol=0)
    start_row = 0.5 * head.weight[0].detach()
    assert not torch.allclose(trained.pair_heads.weight[0], start_row)  # trained from the reader's layer
    start = AutoModel.from_pretrained(tiny_checkpoint)
    torch.testing.assert_close(trained.score_heads.weight, start.score_heads.weight, rtol=0, atol=0)
    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert any(name.startswith("base_model.model.pair_encoder.") for name in weights)
    full = load_metric("fined-eval", checkpoint=str(out / "full")).score_dialogues(DIALOGUES)
    from_adapter = load_metric("fined-eval", checkpoint=str(out / "adapter")).score_dialogues(DIALOGUES)
    assert full.overall == pytest.approx(from_adapter.overall, abs=1e-5)
