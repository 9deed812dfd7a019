"""The ``similarity`` floor metric, on a tiny random BERT built here (hidden 32, 2 layers) with MiniLM's tokenizer."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, BertModel

from hf_dialeval import DialogueValidationError, load_metric

from conftest import save_tiny_bert


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_encoder"))


def mean_pooled(path: str, text: str, max_seq_length: int = 256) -> torch.Tensor:
    tokenizer, model = AutoTokenizer.from_pretrained(path), BertModel.from_pretrained(path).eval()
    inputs = tokenizer(text, truncation=True, max_length=max_seq_length, return_tensors="pt")
    with torch.no_grad():
        return model(**inputs).last_hidden_state[0].mean(0)


def test_cosine_of_last_utterance_and_response(tiny_encoder):
    metric = load_metric("similarity", checkpoint=tiny_encoder, batch_size=2)
    contexts = [["Hello there.", "Do you like hiking?"], ["Any plans?"], ["Hi.", "I had pasta for dinner."]]
    responses = ["Yes, I walk in the hills every weekend.", "Any plans?", "What did you put in the sauce?"]
    output = metric.score_turns(contexts, responses)
    expected = [float(F.cosine_similarity(mean_pooled(tiny_encoder, c[-1]), mean_pooled(tiny_encoder, r), dim=0))
                for c, r in zip(contexts, responses)]
    assert output.overall == pytest.approx(expected, abs=1e-5)
    assert output.overall[1] == pytest.approx(1.0, abs=1e-5)  # a response identical to the last utterance
    assert output.scores["similarity"] == output.overall and output.truncated == [False] * 3


def test_dialogue_level_is_the_mean_over_system_turns(tiny_encoder):
    metric = load_metric("similarity", checkpoint=tiny_encoder)
    dialogue = ["Hi, how are you?", "Fine, and you?", "Tired, long day.", "Get some rest then."]
    turns = metric.score_turns([dialogue[:1], dialogue[:3]], [dialogue[1], dialogue[3]]).overall
    assert metric.score_dialogues([dialogue]).overall == pytest.approx([sum(turns) / 2], abs=1e-6)


def test_long_texts_are_cut_and_flagged(tiny_encoder):
    metric = load_metric("similarity", checkpoint=tiny_encoder, max_seq_length=16)
    long_response = "word " * 40
    output = metric.score_turns([["Short question?"], ["Short question?"]], [long_response, "Short answer."])
    assert output.truncated == [True, False]
    cut = float(F.cosine_similarity(mean_pooled(tiny_encoder, "Short question?"),
                                    mean_pooled(tiny_encoder, long_response, max_seq_length=16), dim=0))
    assert output.overall[0] == pytest.approx(cut, abs=1e-5)


def test_a_turn_without_context_is_an_error_naming_the_item(tiny_encoder):
    metric = load_metric("similarity", checkpoint=tiny_encoder)
    with pytest.raises(DialogueValidationError, match=r"item 1, field 'context'"):
        metric.score_turns([["Hi."], []], ["Hello.", "Hello."])
    with pytest.raises(DialogueValidationError, match=r"item 0, field 'dialogue'"):
        metric.score_dialogues([["Only one utterance."]])
    with pytest.raises(DialogueValidationError, match=r"item 0, field 'dialogue'"):
        metric.score_dialogues([["System opens.", "User replies."]], speakers=[["system", "user"]])


def test_each_distinct_text_is_encoded_once(tiny_encoder):
    metric = load_metric("similarity", checkpoint=tiny_encoder, batch_size=2)
    encoded_rows = []
    hook = metric.model.register_forward_hook(
        lambda module, args, kwargs, output: encoded_rows.append(len(kwargs["input_ids"])), with_kwargs=True)
    contexts = [["Hi.", "Do you like hiking?"], ["Do you like hiking?"], ["Any plans?"]]
    responses = ["Yes, every weekend.", "Not really.", "Yes, every weekend."]
    try:
        output = metric.score_turns(contexts, responses)
    finally:
        hook.remove()
    assert sum(encoded_rows) == 2 + 2  # two distinct last utterances, two distinct responses
    expected = [float(F.cosine_similarity(mean_pooled(tiny_encoder, c[-1]), mean_pooled(tiny_encoder, r), dim=0))
                for c, r in zip(contexts, responses)]
    assert output.overall == pytest.approx(expected, abs=1e-5)
