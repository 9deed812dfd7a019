"""The contract every registered metric passes, on its shipped default: input order kept, batch size without
effect, an exact ``save_pretrained`` → ``AutoModel`` round trip, the truncation flag, an exporter folder that
loads and scores the same, the evaluate module and the CLI agreeing with the API, and the data model's errors."""

import json
from pathlib import Path

import evaluate
import pytest
import torch
from transformers import AutoModel

import hf_dialeval
from hf_dialeval.cli import main
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.modeling.offline_models import OFFLINE_BACKBONES
from hf_dialeval.publishing import export_models
from hf_dialeval.registry import METRICS, exportable_metrics, metric_names

pytestmark = pytest.mark.slow  # every shipped default, loaded and scored

CONTEXTS = [
    ["Hi! How are you?", "Great, I just got back from a hike."],
    ["Do you like to cook?"],
    ["I adopted a puppy last week.", "Oh, what breed?", "A beagle. She is very loud."],
    ["What are you reading these days?", "A history of the Roman empire."],
    ["Any plans for the weekend?"],
]
RESPONSES = ["Nice, where did you go?", "Yes, mostly Italian food and a lot of pasta.", "Beagles are great, and loud indeed!",
             "That sounds long. Do you like it so far?", "Not yet, maybe a movie."]
#: A reference response per item (reference-assisted metrics need one; the others ignore it).
REFERENCES = ["Oh nice! Where did you hike?", "I do, I make soup every Sunday.", "Ha, beagles always are.",
              "Wow. Is it a good read?", "I will visit my parents."]
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 70)
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def loaded():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = load_metric(name, device="cpu")
        return cache[name]

    return get


def model_metrics():
    return [name for name in metric_names() if METRICS[name].uses_checkpoint]


@pytest.mark.parametrize("name", metric_names())
def test_scores_keep_the_input_order(loaded, name):
    metric = loaded(name)
    forward = metric.score_turns(CONTEXTS, RESPONSES, references=REFERENCES).overall
    backward = metric.score_turns(CONTEXTS[::-1], RESPONSES[::-1], references=REFERENCES[::-1]).overall
    assert backward[::-1] == pytest.approx(forward, abs=TOLERANCE)
    assert len(set(round(score, 6) for score in forward)) > 1


@pytest.mark.parametrize("name", model_metrics())
def test_batch_size_does_not_change_scores(name):
    metric = load_metric(name, device="cpu", dtype="fp32")  # bf16 rounds differently with each batch's padding
    scores = {}
    for batch_size in (1, 7, 32):
        metric.batch_size = batch_size
        scores[batch_size] = metric.score_turns(CONTEXTS * 3, RESPONSES * 3, references=REFERENCES * 3).overall
    assert scores[1] == pytest.approx(scores[32], abs=TOLERANCE)
    assert scores[7] == pytest.approx(scores[32], abs=TOLERANCE)


@pytest.mark.parametrize("name", model_metrics())
def test_save_pretrained_round_trip_is_exact(loaded, name, tmp_path):
    for index, model in enumerate(loaded(name).models):
        model.save_pretrained(tmp_path / str(index))
        reloaded = AutoModel.from_pretrained(tmp_path / str(index))
        assert type(reloaded) is type(model)
        original, copy = model.state_dict(), reloaded.state_dict()
        assert original.keys() == copy.keys()
        assert all(torch.equal(original[key], copy[key]) for key in original)


@pytest.mark.parametrize("name", model_metrics())
def test_the_truncation_flag_says_when_text_was_cut(loaded, name):
    output = loaded(name).score_turns([[LONG], ["Hi there!"]], [LONG, "Hello! How are you?"],
                                      references=["Hello.", "Hi! Good to see you."])
    assert output.truncated == [True, False]
    assert output.signature["truncated"] == 1


@pytest.mark.parametrize("name", exportable_metrics())
def test_the_exported_folder_loads_and_scores_the_same(loaded, name, tmp_path):
    folder = export_models(name, None, tmp_path)[0]
    assert isinstance(AutoModel.from_pretrained(folder), type(loaded(name).models[0]))
    exported = load_metric(name, checkpoint=str(folder), device="cpu")
    assert exported.score_turns(CONTEXTS, RESPONSES, references=REFERENCES).overall == pytest.approx(
        loaded(name).score_turns(CONTEXTS, RESPONSES, references=REFERENCES).overall, abs=TOLERANCE)


@pytest.mark.parametrize("name", metric_names())
def test_the_cli_and_the_evaluate_module_agree_with_the_api(loaded, name, tmp_path, capsys):
    expected = loaded(name).score_turns(CONTEXTS, RESPONSES, references=REFERENCES).overall
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"context": c, "response": r, "reference": f}) + "\n"
                              for c, r, f in zip(CONTEXTS, RESPONSES, REFERENCES)))
    assert main(["score", "--metric", name, "--input", str(source), "--output", str(target)]) == 0
    assert [json.loads(line)["overall"] for line in target.read_text().splitlines()] == pytest.approx(expected, abs=TOLERANCE)
    try:
        path = hf_dialeval.evaluate_module(name)
    except KeyError:
        return  # a floor without an evaluate module
    module = evaluate.load(path)
    if loaded(name).needs_reference:
        result = module.compute(contexts=CONTEXTS, references=REFERENCES, candidates=RESPONSES)
    elif METRICS[name].level == "turn":
        result = module.compute(contexts=CONTEXTS, responses=RESPONSES)
    else:
        result = module.compute(dialogues=[[*c, r] for c, r in zip(CONTEXTS, RESPONSES)])
    assert result["overall"] == pytest.approx(expected, abs=TOLERANCE)


@pytest.mark.parametrize("name", metric_names())
def test_bad_input_gets_the_data_model_errors(loaded, name):
    metric = loaded(name)
    with pytest.raises(DialogueValidationError, match=r"item 1, field 'response': expected a string"):
        metric.score_items([{"context": ["hi"], "response": "hello"}, {"context": ["hi"], "response": 3}])
    with pytest.raises(DialogueValidationError, match="item 0, field 'dialogue': the dialogue has no utterances"):
        metric.score_dialogues([[]])


@pytest.mark.parametrize("name", [name for name in metric_names() if METRICS[name].metric_class.needs_reference])
def test_a_reference_assisted_metric_names_the_item_without_a_reference(loaded, name):
    metric = loaded(name)
    assert metric.needs_reference
    with pytest.raises(DialogueValidationError, match=r"item 1, field 'reference': the item has no reference"):
        metric.score_items([{"context": ["hi"], "response": "hello", "reference": "hey"},
                            {"context": ["hi"], "response": "hello"}])
    with pytest.raises(DialogueValidationError, match=r"item 0, field 'reference': the reference is empty"):
        metric.score_turns([["hi"]], ["hello"], references=["  "])
    with pytest.raises(DialogueValidationError, match=r"field 'dialogue': .* a dialogue-level item lacks"):
        metric.score_dialogues([["hi", "hello"]])


@pytest.mark.parametrize("name", metric_names())
def test_the_registry_names_a_default_that_exists(name):
    spec = METRICS[name]
    if not spec.uses_checkpoint:
        assert spec.default is None
        return
    default = spec.default
    assert default in OFFLINE_BACKBONES or (Path(default) / "config.json").is_file()
