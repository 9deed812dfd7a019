"""A model output that is not a finite number (a damaged weight, an fp16 overflow) is a one-line error naming the
metric, the items, the checkpoint, the dtype and the fix, never a score; the ``nan`` of a score that does not apply
to an item stays. Every model-backed metric runs on a tiny random model built here, the word-embedding rows of one
word (or a whole weight) set to nan: only the items that hold the word fail, named by their places in the input."""

from __future__ import annotations

import json
import math

import pytest
import torch
from test_dial_m import tiny_causal_dial_m, tiny_dial_m, with_eou
from test_fined_eval import tiny_model as tiny_fined_eval
from test_holistic_eval import CUTOFF, gpt2_tokenizer, nli_folder, tiny_gpt2  # noqa: F401  (nli_folder: a fixture)
from test_quantidce import tiny_model as tiny_quantidce
from test_rade import tiny_rade_for
from transformers import AutoTokenizer

from hf_dialeval import DialEvalError, load_metric
from hf_dialeval.cli import main
from hf_dialeval.data.transcripts import ensure_pad_token
from hf_dialeval.inference.metric import NON_FINITE_FIX, NonFiniteOutputError
from hf_dialeval.metrics.dial_m.scoring import LOWEST_SCORE, DialMMetric
from hf_dialeval.metrics.fined_eval.encoding import add_utterance_token
from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric
from hf_dialeval.metrics.holistic_eval.consistency import NLIConsistencyScorer
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric
from hf_dialeval.metrics.quantidce.scoring import QuantiDCEMetric
from hf_dialeval.metrics.rade.scoring import RADEMetric
from hf_dialeval.modeling.offline_models import offline_backbone_path

from conftest import causal_tokenizer, save_tiny_bert

#: The label the metrics below carry as their checkpoint, which the error names.
CHECKPOINT = "tiny-damaged"


def minilm_tokenizer():
    return AutoTokenizer.from_pretrained(offline_backbone_path())


def poison(model: torch.nn.Module, tokenizer, word: str, value: float = math.nan) -> None:
    """Set the input-embedding rows of ``word``'s tokens (at the start of a text and after a space) to ``value``:
    every input that holds the word computes nan (a Transformer mixes every position into every later one), every
    other input is untouched (the rows are untied first from an LM head that shares them, whose nan logits would
    reach every input)."""
    rows = {row for text in (word, f" {word}") for row in tokenizer(text, add_special_tokens=False)["input_ids"]}
    embeddings = model.get_input_embeddings()
    embeddings.weight = torch.nn.Parameter(embeddings.weight.detach().clone())
    with torch.no_grad():
        embeddings.weight[sorted(rows)] = value


# Each builder: the metric (its model as trained, the checkpoint label CHECKPOINT) and its tokenizer.
def quantidce(tmp_path) -> tuple[QuantiDCEMetric, object]:
    tokenizer = minilm_tokenizer()
    return QuantiDCEMetric(tiny_quantidce(), tokenizer, device="cpu", checkpoint=CHECKPOINT), tokenizer


def rade(tmp_path) -> tuple[RADEMetric, object]:
    tokenizer = minilm_tokenizer()
    return RADEMetric(tiny_rade_for(tokenizer), tokenizer, device="cpu", checkpoint=CHECKPOINT), tokenizer


def dial_m(tmp_path) -> tuple[DialMMetric, object]:
    tokenizer = with_eou(minilm_tokenizer())
    return DialMMetric(tiny_dial_m(tokenizer, "bert"), tokenizer, device="cpu", checkpoint=CHECKPOINT), tokenizer


def dial_m_causal(tmp_path) -> tuple[DialMMetric, object]:
    tokenizer = causal_tokenizer("llama")
    model = tiny_causal_dial_m("llama", tokenizer)
    return DialMMetric(model, tokenizer, device="cpu", checkpoint=CHECKPOINT, variant="context-gain"), tokenizer


def holistic_eval(tmp_path) -> tuple[HolisticEvalMetric, object]:
    tokenizer = ensure_pad_token(gpt2_tokenizer())
    model = tiny_gpt2(context_coherence_cutoff=CUTOFF, fluency_cutoff=CUTOFF)
    return HolisticEvalMetric(model, tokenizer, device="cpu", checkpoint=CHECKPOINT), tokenizer


def fined_eval(tmp_path) -> tuple[FineDEvalMetric, object]:
    tokenizer = minilm_tokenizer()
    add_utterance_token(tokenizer)
    model = tiny_fined_eval(tokenizer, save_tiny_bert(tmp_path / "backbone", vocab_size=len(tokenizer) - 1))
    return FineDEvalMetric([model], [tokenizer], device="cpu", checkpoint=CHECKPOINT), tokenizer


def similarity(tmp_path) -> tuple[object, object]:
    folder = save_tiny_bert(tmp_path / "encoder")
    return load_metric("similarity", checkpoint=folder, device="cpu"), AutoTokenizer.from_pretrained(folder)


def reference_similarity(tmp_path) -> tuple[object, object]:
    folder = save_tiny_bert(tmp_path / "encoder")
    return load_metric("reference-similarity", checkpoint=folder, device="cpu"), AutoTokenizer.from_pretrained(folder)


#: Per metric: its builder and a word of its tokenizer's vocabulary that no other text below holds.
METRICS = {"quantidce": (quantidce, "zebra"), "rade": (rade, "zebra"), "dial-m": (dial_m, "zebra"),
           "dial-m-causal": (dial_m_causal, "chocolate"), "holistic-eval": (holistic_eval, "tea"),
           "fined-eval": (fined_eval, "zebra"), "similarity": (similarity, "zebra"),
           "reference-similarity": (reference_similarity, "zebra")}


def turn_items(word: str) -> list[dict]:
    """Four turns: item 1's response is empty (scored the lowest without the model), item 2's context holds
    ``word`` (its response too, for the metrics that read only the last utterance, the response or the
    reference)."""
    return [{"context": ["hi how are you"], "response": "i am fine thanks", "reference": "fine"},
            {"context": ["hi"], "response": "", "reference": "hello"},
            {"context": [f"do you like the {word}"], "response": f"yes the {word}", "reference": f"the {word}"},
            {"context": ["good morning"], "response": "good morning sir", "reference": "morning"}]


@pytest.fixture(params=sorted(METRICS))
def damaged(request, tmp_path) -> tuple[object, list[dict]]:
    """A metric whose model computes nan on every input holding its word, and the items of :func:`turn_items`."""
    build, word = METRICS[request.param]
    metric, tokenizer = build(tmp_path)
    poison(metric.models[0], tokenizer, word)
    return metric, turn_items(word)


def test_every_model_metric_raises_naming_the_items_checkpoint_dtype_and_fix(damaged):
    metric, items = damaged
    with pytest.raises(NonFiniteOutputError) as raised:
        metric.score_items(items)
    error = raised.value
    assert isinstance(error, DialEvalError)  # the CLI's one-line user error, exit status 2
    assert error.items == [2] and error.dtype == "float32"
    message = str(error)
    assert "\n" not in message and message.startswith(f"{metric.name}: the model's output for item 2 is not a finite")
    assert f"dtype float32): {NON_FINITE_FIX}" in message
    assert error.checkpoint == metric.checkpoint and f"checkpoint {metric.checkpoint}, " in message
    # without the damaged item every score is a number
    output = metric.score_items([item for index, item in enumerate(items) if index != 2])
    assert all(math.isfinite(value) for value in output.overall)


def test_items_are_named_by_their_place_in_the_input_across_chunks_and_dialogues():
    metric, tokenizer = quantidce(None)
    poison(metric.model, tokenizer, "zebra")
    # a turn-level metric scores a dialogue by its system turns: a damaged turn names its dialogue
    dialogues = [["hi", "hello", "how are you", "fine"], ["hi", "", "do you like the zebra", "yes"],
                 ["hi", "zebra"]]
    with pytest.raises(NonFiniteOutputError) as raised:
        metric.score_dialogues(dialogues)
    assert raised.value.items == [1, 2] and "for items 1, 2 is not" in str(raised.value)
    metric.chunk_size = 2  # item 2 is the first of the second chunk
    with pytest.raises(NonFiniteOutputError, match=r"for item 2 is not a finite number"):
        metric.score_items(turn_items("zebra"))


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_whole_weight_not_finite_fails_every_item_the_model_reads(value):
    metric, _ = quantidce(None)
    with torch.no_grad():
        metric.model.get_input_embeddings().weight.fill_(value)
    with pytest.raises(NonFiniteOutputError) as raised:
        metric.score_items(turn_items("zebra"))
    assert raised.value.items == [0, 2, 3]  # item 1, an empty response, scores the lowest without the model


def test_a_damaged_nli_model_names_its_checkpoint(nli_folder):  # noqa: F811
    metric, _ = holistic_eval(None)
    metric.nli = NLIConsistencyScorer(nli_folder, device="cpu")
    with torch.no_grad():
        metric.nli.nli.model.get_input_embeddings().weight.fill_(math.nan)
    items = [{"context": ["yes", "do you like tea", "no"], "response": "yes"},
             {"context": ["hi"], "response": "hi"}]  # the speaker said nothing before: consistency does not apply
    with pytest.raises(NonFiniteOutputError) as raised:
        metric.score_items(items)
    assert raised.value.items == [0] and raised.value.checkpoint == f"NLI {nli_folder}"
    assert str(raised.value).startswith("holistic-eval consistency: the model's output for item 0 is not")


def test_scores_that_do_not_apply_stay_nan(nli_folder):  # noqa: F811
    metric, _ = holistic_eval(None)
    output = metric.score_items([{"context": [], "response": "i am fine"},
                                 {"context": ["do you like tea"], "response": "yes"}])
    assert math.isnan(output.scores["context_coherence"][0]) and 0.0 <= output.scores["fluency"][0] <= 1.0
    assert math.isfinite(output.scores["context_coherence"][1]) and "consistency" in output.unavailable
    metric.nli = NLIConsistencyScorer(nli_folder, device="cpu")
    metric.dimensions = (*metric.dimensions, "consistency")
    consistency = metric.score_items([{"context": ["hi"], "response": "yes"},
                                      {"context": ["yes", "do you like tea"], "response": "no"}]).scores["consistency"]
    assert math.isnan(consistency[0]) and 0.0 <= consistency[1] <= 1.0

    dial_m_metric, _ = dial_m(None)
    losses, _ = dial_m_metric.losses([["hi how are you"], ["hi how are you"]], ["", "i am fine"])
    assert math.isnan(losses[0]) and math.isfinite(losses[1])  # a response without a word: no keyword loss
    assert dial_m_metric.score_turns([["hi how are you"]], [""]).overall == [LOWEST_SCORE]


def test_the_command_line_prints_one_line_and_exits_2(tmp_path, capsys):
    metric, tokenizer = quantidce(None)
    poison(metric.model, tokenizer, "zebra")
    checkpoint = tmp_path / "damaged"
    metric.model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in turn_items("zebra")))
    capsys.readouterr()  # what saving printed
    assert main(["score", "--metric", "quantidce", "--checkpoint", str(checkpoint), "--input", str(source),
                 "--output", str(tmp_path / "out.jsonl")]) == 2
    error = capsys.readouterr().err.splitlines()[-1]  # after the progress bar
    assert error.startswith("hf-dialeval: error: quantidce: the model's output for item 2 is not a finite number")
    assert error.endswith(f"checkpoint {checkpoint}, dtype float32): {NON_FINITE_FIX}")

