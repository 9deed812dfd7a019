"""Lower precision (``dtype=``, ``--dtype``): names resolve, the forward passes run under autocast, score heads and
pooling stay in fp32, every shipped model metric in bf16 stays close to fp32 and says so in its signature."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from conftest import TINY_VOCAB, tiny_config
from test_contract import CONTEXTS, REFERENCES, RESPONSES
from torch import nn
from transformers import AutoTokenizer, DataCollatorWithPadding

from hf_dialeval import cli
from hf_dialeval.cli.errors import one_line_warning
from hf_dialeval.inference import model_metric
from hf_dialeval.inference.composite import CompositeMetric
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.model_metric import autocast, batched_forward, resolve_dtype
from hf_dialeval.inference.precision import BF16_INSTRUCTIONS, PRECISIONS, SlowPrecisionWarning, cpu_bf16_instructions
from hf_dialeval.modeling.base import masked_mean_pool, run_head
from hf_dialeval.modeling.offline_models import offline_backbone_path
from hf_dialeval.registry import METRICS, metric_names

#: The largest change of a shipped default's score in bf16, on scores of unit scale ([0, 1], 1–5).
BF16_TOLERANCE = 0.02
#: Dial-M's score is a keyword loss in nats (−2 to −5 on these items): bf16 moves it by up to 0.025 here (under 1%),
#: and its benchmarks' Spearman by at most 0.0016 (model_cards/dial_m.md).
BF16_TOLERANCES = {"dial-m": 0.04}


@pytest.mark.parametrize("name, expected", [
    (None, torch.float32), ("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16),
    ("bfloat16", torch.bfloat16), ("float16", torch.float16), (torch.bfloat16, torch.bfloat16)])
def test_precision_names_resolve(name, expected):
    assert resolve_dtype(name) is expected


@pytest.mark.parametrize("name", ["int8", "half", torch.float64, 16])
def test_an_unknown_precision_is_a_one_line_error(name):
    with pytest.raises(ValueError, match=r"not a precision .* use one of \['fp32', 'bf16', 'fp16'\]"):
        resolve_dtype(name)


def test_the_command_line_offers_the_precisions_the_package_has(capsys):
    assert [resolve_dtype(name) for name in PRECISIONS] == [torch.float32, torch.bfloat16, torch.float16]
    with pytest.raises(SystemExit):
        cli.main(["score", "--help"])
    assert "{fp32,bf16,fp16}" in capsys.readouterr().out


def test_a_wrong_precision_fails_before_any_model_loads(monkeypatch):
    from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the precision was checked")

    monkeypatch.setattr(FineDEvalMetric, "load", classmethod(no_model))
    with pytest.raises(ValueError, match=r"dtype 'int4' is not a precision"):
        load_metric("fined-eval", dtype="int4")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batched_forward_runs_under_autocast_and_returns_fp32_rows(dtype):
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    seen = []

    def forward(input_ids, attention_mask):
        output = layer(input_ids.float())
        seen.append(output.dtype)
        return output

    encoding = {"input_ids": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]}
    tokenizer = AutoTokenizer.from_pretrained(offline_backbone_path())
    rows = batched_forward(forward, encoding, 2, DataCollatorWithPadding(tokenizer, return_tensors="pt"), "cpu", dtype)
    assert set(seen) == {dtype} and rows.dtype == torch.float32
    with torch.no_grad():
        expected = layer(torch.tensor(encoding["input_ids"]).float())
    assert torch.allclose(rows, expected, atol=0.05 if dtype == torch.bfloat16 else 1e-6)


def test_heads_and_pooling_stay_in_fp32_under_autocast():
    torch.manual_seed(0)
    head = nn.Linear(8, 1)
    hidden = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        pooled = masked_mean_pool(hidden.bfloat16(), mask)
        scored, plain = run_head(head, pooled), head(pooled)
    assert pooled.dtype == torch.float32 and scored.dtype == torch.float32 and plain.dtype == torch.bfloat16
    assert torch.allclose(pooled[0], hidden[0, :3].bfloat16().float().mean(0), atol=1e-6)


@pytest.mark.parametrize("family", ["gpt2", "bert", "llama", "gemma3"])
def test_weights_stored_in_bf16_compute_exactly_what_autocast_computes(family):
    """The body's and the LM head's weights stored in bf16 once give the logits autocast gives from fp32 weights,
    bit for bit; a head tied to the embeddings gets its own copy, and the embeddings and norms stay fp32."""
    from transformers import AutoModelForCausalLM, BertLMHeadModel
    from transformers.pytorch_utils import Conv1D

    from hf_dialeval.modeling.lm_head import prediction_head

    torch.manual_seed(0)
    config = tiny_config(family, is_decoder=True) if family == "bert" else tiny_config(family)
    lm = (BertLMHeadModel(config) if family == "bert" else AutoModelForCausalLM.from_config(config)).eval()
    ids = torch.randint(3, TINY_VOCAB, (2, 7))
    with torch.inference_mode(), autocast(torch.device("cpu"), torch.bfloat16):
        before = lm(input_ids=ids).logits
    embeddings = lm.get_input_embeddings().weight
    tied = prediction_head(lm) is not None and any(p is embeddings for p in prediction_head(lm).parameters())
    model_metric.store_linear_weights_in(lm, [lm.base_model, prediction_head(lm)], torch.bfloat16)
    with torch.inference_mode(), autocast(torch.device("cpu"), torch.bfloat16):
        after = lm(input_ids=ids).logits
    assert torch.equal(before, after)
    assert lm.get_input_embeddings().weight is embeddings and embeddings.dtype == torch.float32
    if tied:
        assert all(p is not embeddings for p in prediction_head(lm).parameters())
    layers = [m for m in lm.modules() if isinstance(m, (nn.Linear, Conv1D))]
    assert layers and {m.weight.dtype for m in layers} == {torch.bfloat16}
    assert {m.weight.dtype for m in lm.modules() if isinstance(m, nn.LayerNorm)} <= {torch.float32}


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in metric_names() if METRICS[name].uses_checkpoint])
def test_every_shipped_model_metric_scores_in_bf16_close_to_fp32(name):
    fp32 = load_metric(name, device="cpu", dtype="fp32").score_turns(CONTEXTS, RESPONSES, references=REFERENCES)
    bf16 = load_metric(name, device="cpu", dtype="bf16").score_turns(CONTEXTS, RESPONSES, references=REFERENCES)
    assert (fp32.signature["dtype"], bf16.signature["dtype"]) == ("float32", "bfloat16")
    differences = [abs(a - b) for a, b in zip(fp32.overall, bf16.overall)]
    assert max(differences) <= BF16_TOLERANCES.get(name, BF16_TOLERANCE)
    assert max(differences) > 0  # autocast did run in bf16


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in metric_names() if METRICS[name].uses_checkpoint])
def test_every_shipped_default_computes_in_bf16_where_the_cpu_does_and_fp32_when_asked(name):
    metric = load_metric(name, device="cpu")
    # a panel: each member with a model in its own default, as its signature records it (the length floor has none)
    dtypes = ({settings["dtype"] for settings in metric.member_settings.values() if "dtype" in settings}
              if isinstance(metric, CompositeMetric) else {str(metric.dtype).removeprefix("torch.")})
    assert dtypes == {"bfloat16" if cpu_bf16_instructions() else "float32"}
    assert load_metric(name, device="cpu", dtype="fp32").score_turns(
        CONTEXTS, RESPONSES, references=REFERENCES).signature["dtype"] == "float32"


def test_the_cli_scores_in_the_dtype_asked_for(tmp_path):
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(CONTEXTS, RESPONSES)))
    assert cli.main(["score", "--metric", "similarity", "--dtype", "bf16", "--input", str(source), "--output",
                     str(output)]) == 0
    assert json.loads((tmp_path / "out.jsonl.signature.json").read_text())["dtype"] == "bfloat16"
    # a metric without a model ignores the precision
    assert cli.main(["score", "--metric", "length", "--dtype", "bf16", "--input", str(source), "--output",
                     str(output)]) == 0


def test_this_cpu_bf16_instructions_are_read_or_unknown():
    found = cpu_bf16_instructions()
    assert found is None or set(found) <= set(BF16_INSTRUCTIONS)


@pytest.mark.parametrize("instructions, warns", [((), True), (("avx512_bf16",), False), (None, False)])
def test_bf16_warns_only_on_a_cpu_known_to_lack_bf16_instructions(monkeypatch, instructions, warns):
    monkeypatch.setattr(model_metric, "cpu_bf16_instructions", lambda: instructions)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        autocast(torch.device("cpu"), torch.bfloat16)
        autocast(torch.device("cpu"), torch.float32)
    assert [w.category for w in caught] == ([SlowPrecisionWarning] if warns else [])


def test_the_cli_says_in_one_line_that_bf16_is_slow_on_this_cpu(tmp_path, monkeypatch, capsys):
    """Library warnings are quiet without --verbose; this one is about the user's own option, so it is shown."""
    monkeypatch.setattr(model_metric, "cpu_bf16_instructions", lambda: ())
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(CONTEXTS, RESPONSES)))
    capsys.readouterr()
    assert cli.main(["score", "--metric", "similarity", "--dtype", "bf16", "--device", "cpu", "--input",
                     str(source), "--output", str(output)]) == 0
    warning_lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warning_lines == ["hf-dialeval: warning: bf16 on this CPU, which has no bf16 instructions (avx512_bf16, "
                             "amx_bf16 or bf16 in /proc/cpuinfo), is emulated and was measured 2.7-3.6x slower than "
                             "fp32: use fp32 here"]


def test_the_cli_warning_gets_its_own_line_while_a_progress_bar_is_drawn(capsys):
    from tqdm.auto import tqdm

    with tqdm(total=2, desc="scoring"):
        one_line_warning(SlowPrecisionWarning("slow here"), SlowPrecisionWarning, "file.py", 1)
    assert "hf-dialeval: warning: slow here" in capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("name", ["quantidce", "fined-eval"])
def test_the_evaluate_modules_take_the_dtype(name):
    import evaluate

    import hf_dialeval

    module = evaluate.load(hf_dialeval.evaluate_module(name))
    inputs = ({"contexts": CONTEXTS, "responses": RESPONSES} if METRICS[name].level == "turn"
              else {"dialogues": [[*c, r] for c, r in zip(CONTEXTS, RESPONSES)]})
    assert module.compute(**inputs, dtype="bf16")["signature"]["dtype"] == "bfloat16"
