"""``hf-dialeval train holistic-eval-default``: a run of ``train holistic-eval`` (a tiny GPT-2, fully trained or as a
LoRA adapter) made the folder that ships, with its cutoffs refitted for the scoring settings, reloading to the scores
of the run's model under those settings."""

from __future__ import annotations

import json

import pytest
import torch
from test_holistic_eval import gpt2_tokenizer
from transformers import AutoModelForCausalLM

from hf_dialeval import cli
from hf_dialeval.data.copies import COPY_SPAN
from hf_dialeval.data.transcripts import ensure_pad_token
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, fit_dailydialog_cutoffs
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.lora import add_lora, save_adapter

from conftest import tiny_config

CONTEXTS = [["hi how are you ?"], ["do you like tea ?"], ["what time is it ?"]]
RESPONSES = ["i am fine thanks .", "yes with milk .", "the train leaves at noon ."]


def _full_run(folder, tokenizer) -> None:
    torch.manual_seed(0)
    HolisticEvalModel(HolisticEvalConfig(backbone_config=tiny_config("gpt2"), max_seq_length=48)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _adapter_run(folder, tokenizer) -> None:
    torch.manual_seed(0)
    backbone = folder.parent / "backbone"
    AutoModelForCausalLM.from_config(tiny_config("gpt2")).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    model = HolisticEvalModel.from_backbone(str(backbone), max_seq_length=48)
    adapted = add_lora(model, rank=4)
    with torch.no_grad():  # a trained adapter: lora_B is no longer zero
        for name, parameter in adapted.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)
    save_adapter(adapted, folder / "adapter")
    adapted.get_base_model().config.save_pretrained(folder / "adapter")
    tokenizer.save_pretrained(folder / "adapter")
    adapted.merge_and_unload().save_pretrained(folder)  # a run's folder holds the merged model too
    tokenizer.save_pretrained(folder)


@pytest.mark.parametrize("kind", ["full", "adapter"])
def test_the_default_folder_reloads_to_the_runs_scores_with_refitted_cutoffs(tmp_path, data_dir, kind):
    tokenizer = ensure_pad_token(gpt2_tokenizer())
    run = tmp_path / "run"
    (_full_run if kind == "full" else _adapter_run)(run, tokenizer)
    out = tmp_path / "default"
    assert cli.main(["train", "holistic-eval-default", "--run", str(run), "--output-dir", str(out), "--data-dir",
                     str(data_dir), "--token-reduction", "sum", "--context-coherence-measure", "pmi",
                     "--pmi-weight", "0.5", "--cutoff-pairs", "16", "--max-seq-length", "40"]) == 0
    names = {path.name for path in out.iterdir()}
    if kind == "full":
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
        assert not names & {"adapter_model.safetensors", "training_record.json"}
    else:  # the smallest folder: the adapter and the config; the tokenizer is the backbone's
        assert names == {"adapter_config.json", "adapter_model.safetensors", "config.json"}
    config = json.loads((out / "config.json").read_text())
    assert (config["token_reduction"], config["context_coherence_measure"], config["pmi_weight"],
            config["max_seq_length"]) == ("sum", "pmi", 0.5, 40)
    assert config["cutoff_reference"].startswith("dailydialog validation, 16 query-response pairs (seed 42)")

    # the cutoffs are the run's model's as stored (the adapter in float16), under the new settings
    shipped, shipped_tokenizer = load_checkpoint("holistic-eval", out)
    expected, expected_tokenizer = load_checkpoint("holistic-eval", run if kind == "full" else run / "adapter")
    assert config["copy_span"] == COPY_SPAN  # copies earn no credit unless --copy-span 0
    for key in ("token_reduction", "context_coherence_measure", "pmi_weight", "max_seq_length", "copy_span"):
        setattr(expected.config, key, config[key])
    cutoffs = fit_dailydialog_cutoffs(expected, expected_tokenizer, pairs=16, seed=42, data_dir=str(data_dir))
    assert config["fluency_cutoff"] == pytest.approx(cutoffs["fluency"], abs=1e-5)
    assert config["context_coherence_cutoff"] == pytest.approx(cutoffs["context_coherence"], abs=1e-5)
    if kind == "full":  # stored in bfloat16, scored in float32
        expected.to(torch.bfloat16).float()
    scores = [HolisticEvalMetric(model, tok, device="cpu").score_turns(CONTEXTS, RESPONSES).scores
              for model, tok in ((shipped, shipped_tokenizer), (expected, expected_tokenizer))]
    assert scores[0] == {name: pytest.approx(values, abs=1e-5) for name, values in scores[1].items()}
    assert all(torch.isfinite(torch.tensor(values)).all() for values in scores[0].values())


def test_a_non_empty_output_folder_is_refused_before_anything_loads(tmp_path, capsys):
    out = tmp_path / "default"
    out.mkdir()
    (out / "config.json").write_text("{}")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")  # a run folder, never loaded: the output is refused first
    assert cli.main(["train", "holistic-eval-default", "--run", str(tmp_path / "run"), "--output-dir", str(out),
                     "--token-reduction", "mean"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not empty: give another folder, or --overwrite-output-dir" in err, err
