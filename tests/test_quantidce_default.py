"""The shipped QuantiDCE default (a MiniLM bi-encoder: head + rank-16 adapter, within 5 MB): offline scoring
through ``evaluate.load``, the registry and the export of its Hub folder."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

import hf_dialeval
from hf_dialeval.metrics.quantidce import DEFAULT_CHECKPOINT, QuantiDCEModel
from hf_dialeval.publishing import export_models

METRIC_DIR = Path(__file__).resolve().parents[1] / "metrics" / "quantidce"
CONTEXT = ["Hi! How are you?", "Great, I just got back from a hike in the mountains."]
COHERENT = "Nice, which trail did you take?"
INCOHERENT = "My favourite colour is the number seven on Tuesdays."


def test_default_fits_the_size_budget():
    files = [p for p in DEFAULT_CHECKPOINT.iterdir() if p.is_file()]
    assert {p.suffix for p in files} <= {".json", ".safetensors"}
    assert sum(p.stat().st_size for p in files) < 5 * 1024 * 1024


def test_evaluate_module_scores_with_the_default():
    metric = evaluate.load(str(METRIC_DIR))
    results = metric.compute(contexts=[CONTEXT, CONTEXT], responses=[COHERENT, INCOHERENT])
    assert sorted(results) == ["coherence", "empty", "overall", "signature", "truncated"]
    assert all(1.0 <= s <= 5.0 for s in results["coherence"])
    assert results["coherence"][0] > results["coherence"][1]
    assert results["overall"] == results["coherence"]
    assert results["truncated"] == [False, False] and results["empty"] == [False, False]


def test_default_prefers_the_human_reply_to_parrots():
    """Issue 13's opening failure: the reply that echoes the user, or repeats the responder's own last turn, must
    not beat a coherent one (the untrained similarity prefers the echo: its cosine with the last utterance is 1)."""
    metric = hf_dialeval.load_metric("quantidce", device="cpu")
    echo, repeat = CONTEXT[-1], CONTEXT[-2]
    coherent, echoed, repeated = metric.score_turns([CONTEXT] * 3, [COHERENT, echo, repeat]).overall
    assert coherent > echoed and coherent > repeated


def test_registry_default_and_export_round_trip(tmp_path):
    # the exported model as AutoModel runs it: in fp32, as the default does when asked
    metric = hf_dialeval.load_metric("quantidce", device="cpu", dtype="fp32")
    expected = metric.score_turns([CONTEXT], [COHERENT]).overall
    folder, = export_models("quantidce", None, tmp_path)
    assert folder.name == DEFAULT_CHECKPOINT.name
    assert (folder / "README.md").read_text(encoding="utf-8").startswith("---")
    model = AutoModel.from_pretrained(folder)
    assert isinstance(model, QuantiDCEModel)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(" [SEP] ".join(CONTEXT), COHERENT, return_tensors="pt")
    with torch.inference_mode():
        human = model(**batch).human_scores.item()
    assert human == pytest.approx(expected[0], abs=1e-5)
