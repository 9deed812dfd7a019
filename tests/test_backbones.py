"""Every model family the metrics use goes through the family-agnostic training kit: LoRA on exactly its
Transformer layers' projections, layer-only training, SVD factoring into an adapter that reproduces the tuned
model, and a safetensors save/load round trip. The causal LMs (Llama, Gemma 3) also as LMs with their head: trained,
factored, saved and merged into their reloaded backbone."""

import copy

import pytest
import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    BertLMHeadModel,
    EncoderDecoderModel,
)

from hf_dialeval.modeling.adapters import holds_adapter_only, load_adapter
from hf_dialeval.modeling.backbones import build_backbone, layer_linear_modules
from hf_dialeval.modeling.checkpoint_sources import from_pretrained
from hf_dialeval.modeling.offline_models import offline_backbone_path
from hf_dialeval.training.lora import add_lora, factor_into_adapter, save_adapter
from hf_dialeval.training.model_preparation import train_layers_only

from conftest import TINY_FAMILIES, TINY_VOCAB, tiny_backbone, tiny_config

#: linear maps per layer: BERT/RoBERTa/MPNet 6, GPT-2 4 (c_attn, attn.c_proj, c_fc, mlp.c_proj),
#: BART encoder 6 + decoder 10 (self- and cross-attention), Llama and Gemma 3 7 (q, k, v, o, gate, up, down).
LAYER_LINEARS = {"bert": 12, "roberta-mlm": 12, "mpnet": 12, "gpt2": 8, "bart": 32, "llama": 14, "gemma3": 14}


def _inputs(model):
    ids = torch.randint(3, TINY_VOCAB, (2, 7), generator=torch.Generator().manual_seed(1))
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if model.config.is_encoder_decoder:
        inputs["decoder_input_ids"] = ids[:, :5]
    return inputs


def _forward(model, inputs):
    output = model(**inputs)
    return output.logits if hasattr(output, "logits") else output.last_hidden_state


def _output(model, inputs):
    with torch.no_grad():
        return _forward(model, inputs)


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_lora_targets_exactly_the_layer_projections(family):
    model = tiny_backbone(family)
    names = [name for name, _ in layer_linear_modules(model)]
    assert len(names) == LAYER_LINEARS[family]
    adapted = add_lora(copy.deepcopy(model), rank=4)
    lora_modules = [name for name, module in adapted.named_modules() if hasattr(module, "lora_A")]
    assert len(lora_modules) == LAYER_LINEARS[family]
    assert not any("embed" in name or "pooler" in name or "lm_head" in name for name in lora_modules)
    assert len(list(layer_linear_modules(model, layers=[1]))) == LAYER_LINEARS[family] // 2


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_lora_training_saves_and_merges_back(family, tmp_path):
    model = tiny_backbone(family)
    adapted = add_lora(copy.deepcopy(model), rank=4)
    inputs = _inputs(model)
    optimizer = torch.optim.AdamW([p for p in adapted.parameters() if p.requires_grad], lr=1e-2)
    adapted.train()
    for _ in range(3):
        loss = _forward(adapted, inputs).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    adapted.eval()
    expected = _output(adapted, inputs)
    assert not torch.allclose(expected, _output(model, inputs))
    save_adapter(adapted, tmp_path, dtype=torch.float32)
    merged = load_adapter(copy.deepcopy(model), tmp_path).merge_and_unload()
    torch.testing.assert_close(_output(merged, inputs), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_layer_only_training_factors_into_an_adapter(family):
    base = tiny_backbone(family)
    tuned = copy.deepcopy(base)
    train_layers_only(tuned)
    trainable = {name for name, p in tuned.named_parameters() if p.requires_grad}
    assert trainable and not any("embed" in name or "wte" in name or "norm" in name or "ln_" in name
                                 for name in trainable)
    with torch.no_grad():
        for _, module in layer_linear_modules(tuned):
            module.weight.add_(0.05 * torch.randn_like(module.weight))
            if module.bias is not None:  # Llama's and Gemma's projections have none
                module.bias.add_(0.05 * torch.randn_like(module.bias))
    inputs = _inputs(base)
    full_rank = max(max(module.weight.shape) for _, module in layer_linear_modules(base))
    adapted = factor_into_adapter(tuned, base, rank=full_rank, target_modules=None).eval()
    torch.testing.assert_close(_output(adapted, inputs), _output(tuned, inputs), atol=1e-4, rtol=1e-4)
    low = factor_into_adapter(tuned, base, rank=2, target_modules=None).eval()
    assert not torch.allclose(_output(low, inputs), _output(tuned, inputs), atol=1e-4)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_a_causal_lm_trains_factors_into_an_adapter_and_reloads(family, tmp_path):
    """Full fine-tuning of the layers with the LM loss, a few steps; factored at full rank into an adapter, saved,
    and merged into the backbone reloaded from its folder: the tuned model's logits, with no bias to carry."""
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_config(tiny_config(family)).eval()
    base.save_pretrained(tmp_path / "backbone")
    tuned = copy.deepcopy(base)
    train_layers_only(tuned)
    optimizer = torch.optim.AdamW([p for p in tuned.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    ids = torch.randint(3, TINY_VOCAB, (4, 12), generator=torch.Generator().manual_seed(2))
    tuned.train()
    losses = []
    for _ in range(4):
        loss = tuned(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    tuned.eval()
    assert losses[-1] < losses[0]
    inputs = _inputs(base)
    expected = _output(tuned, inputs)
    assert not torch.allclose(expected, _output(base, inputs), atol=1e-3)
    full_rank = max(max(module.weight.shape) for _, module in layer_linear_modules(base))
    adapted = factor_into_adapter(tuned, base, rank=full_rank, target_modules=None).eval()
    lora_layers = [module for module in adapted.modules() if hasattr(module, "lora_B")]
    assert len(lora_layers) == 14 and all(module.lora_B["default"].bias is None for module in lora_layers)
    save_adapter(adapted, tmp_path / "adapter", dtype=torch.float32)
    merged = load_adapter(from_pretrained(AutoModelForCausalLM, tmp_path / "backbone").eval(),
                          tmp_path / "adapter").merge_and_unload()
    torch.testing.assert_close(_output(merged, inputs), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_save_load_round_trip_is_exact(family, tmp_path):
    model = tiny_backbone(family)
    model.save_pretrained(tmp_path)
    loader = {"roberta-mlm": AutoModelForMaskedLM, "bart": AutoModelForSeq2SeqLM}.get(family, AutoModel)
    reloaded = loader.from_pretrained(tmp_path, use_safetensors=True).eval()
    inputs = _inputs(model)
    assert torch.equal(_output(reloaded, inputs), _output(model, inputs))


@pytest.mark.parametrize("kind, expected", [("masked-lm", "BertForMaskedLM"), ("causal-lm", BertLMHeadModel.__name__),
                                            ("seq2seq", EncoderDecoderModel.__name__)])
def test_an_encoder_becomes_each_kind_of_backbone(kind, expected):
    model = build_backbone(offline_backbone_path(), kind)
    assert type(model).__name__ == expected
    encoder = build_backbone(offline_backbone_path(), "encoder")
    inner = model.encoder if kind == "seq2seq" else model.bert
    assert torch.equal(inner.embeddings.word_embeddings.weight, encoder.embeddings.word_embeddings.weight)
    if kind == "causal-lm":
        assert model.config.is_decoder
    if kind == "seq2seq":
        assert model.config.decoder_start_token_id == 101 and model.config.pad_token_id == 0
        assert model.decoder.config.add_cross_attention


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_an_adapter_folder_over_a_tied_causal_lm_reloads_with_its_head_tied(family, tmp_path):
    """SmolLM2 and Gemma 3 tie their output layer to their embeddings: the model an adapter folder rebuilds over such a
    backbone ties them too (an untied head holds a copy of the embeddings: 671 MB more for Gemma 3 in fp32), and
    predicts as the merged model did."""
    from peft import LoraConfig, get_peft_model

    from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel

    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(tiny_config(family, tie_word_embeddings=True)).save_pretrained(tmp_path / "lm")
    model = DialMModel.from_backbone(str(tmp_path / "lm"), lm_kind="causal-lm")
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    model.config.save_pretrained(tmp_path / "adapter")
    merged = peft_model.merge_and_unload().eval()
    loaded = DialMModel.from_pretrained(tmp_path / "adapter")
    assert holds_adapter_only(tmp_path / "adapter")
    assert loaded.lm.get_output_embeddings().weight is loaded.lm.get_input_embeddings().weight
    ids = torch.randint(3, TINY_VOCAB, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(loaded.lm(input_ids=ids).logits, merged.lm(input_ids=ids).logits)
