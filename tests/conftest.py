"""Shared fixtures: the data directory, found the way the CLI finds it (skipped only when absent)."""

from pathlib import Path

import pytest

from hf_dialeval.data.paths import DATA_DIR_ENV, find_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    found = find_data_dir()
    if found is None:
        pytest.skip(f"benchmark data not found: set ${DATA_DIR_ENV} or place shared/data beside the checkout")
    return found


#: Tiny randomly initialised backbones of every family the metrics use (hidden 32, two layers): they run
#: exactly the code a full-size checkpoint runs.
TINY_VOCAB = 96


def tiny_config(family: str, **overrides):
    """The config of a tiny model of ``family`` (dropout off, so that training steps are deterministic)."""
    from transformers import (
        BartConfig,
        BertConfig,
        Gemma3TextConfig,
        GPT2Config,
        LlamaConfig,
        MPNetConfig,
        RobertaConfig,
    )

    common = dict(vocab_size=TINY_VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    if family == "bert":
        return BertConfig(**{**common, **overrides})
    if family == "roberta-mlm":
        return RobertaConfig(**common, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    if family == "mpnet":
        return MPNetConfig(**common)
    if family == "gpt2":
        return GPT2Config(vocab_size=TINY_VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                          bos_token_id=0, eos_token_id=0)
    if family == "bart":
        return BartConfig(vocab_size=TINY_VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2, decoder_start_token_id=2)
    # the causal LMs in the Llama layout: grouped-query attention (4 query heads over 2 key/value heads, Gemma 2
    # over 1), Gemma 3 with one sliding-window layer and one global one, as the real model alternates them
    if family == "llama":
        return LlamaConfig(**{**dict(vocab_size=TINY_VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
                                     pad_token_id=0, bos_token_id=1, eos_token_id=2), **overrides})
    if family == "gemma3":
        return Gemma3TextConfig(**{**dict(vocab_size=TINY_VOCAB, hidden_size=32, num_hidden_layers=2,
                                          num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                          query_pre_attn_scalar=16, intermediate_size=64, max_position_embeddings=128,
                                          sliding_window=4, layer_types=["sliding_attention", "full_attention"],
                                          pad_token_id=0, bos_token_id=2, eos_token_id=1), **overrides})
    raise KeyError(family)


TINY_FAMILIES = ("bert", "roberta-mlm", "mpnet", "gpt2", "bart", "llama", "gemma3")


def tiny_backbone(family: str, seed: int = 0):
    """A tiny random model of ``family``: BERT, MPNet, GPT-2, Llama and Gemma 3 encoders/decoders (no LM head),
    RoBERTa with its MLM head, BART as a seq2seq LM."""
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    torch.manual_seed(seed)
    config = tiny_config(family)
    builder = {"roberta-mlm": AutoModelForMaskedLM, "bart": AutoModelForSeq2SeqLM}.get(family, AutoModel)
    return builder.from_config(config).eval()


def save_tiny_bert(folder, vocab_size: int | None = None, seed: int = 0) -> str:
    """A tiny random BERT with the offline MiniLM's WordPiece tokenizer, saved to ``folder`` (a stand-in for
    any BERT-family checkpoint: the same files, a fraction of the size)."""
    import torch
    from transformers import AutoTokenizer, BertModel

    from hf_dialeval.modeling.offline_models import offline_backbone_path

    tokenizer = AutoTokenizer.from_pretrained(offline_backbone_path())
    torch.manual_seed(seed)
    BertModel(tiny_config("bert", vocab_size=vocab_size or len(tokenizer))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


#: The words the tiny causal tokenizers are trained on.
CAUSAL_WORDS = ("hi how are you today i am fine thanks do like tea yes with milk the train leaves at noon good morning "
                "sir my kids love mint chocolate chip ok what time is it a an cat dog park green red blue").split()


def causal_tokenizer(kind: str):
    """A tokenizer of a pretrained causal LM's kind, trained on a few hundred sentences: ``"llama"``, byte-level BPE
    whose pre-tokenizer splits words, no BOS (SmolLM2's); ``"gemma3"``, spaces written ``▁`` and no pre-tokenizer
    (one "word" per text, as Gemma's word ids say), BOS before every text. Pad 0, EOS 1, BOS 2."""
    import random

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(1)
    sentences = [" ".join(rng.choice(CAUSAL_WORDS) for _ in range(10)) + rng.choice([" .", " ?", " !", " ,"])
                 for _ in range(300)] + ["A: B: Background: Reference: Candidate: -\n"]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    if kind == "llama":
        backend = Tokenizer(models.BPE())
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # trained on words (no merge across a space, as Gemma's vocabulary has none), then used unsplit
        backend = Tokenizer(models.BPE(unk_token="<unk>"))
        backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
        backend.decoder = decoders.Replace("▁", " ")
        alphabet = sorted(set("".join(sentences).replace(" ", "▁")) | set("-:\n"))
    size = len(alphabet) + len(specials) + 150  # 150 merges: whole words and pieces of them
    backend.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=size, special_tokens=specials,
                                                               initial_alphabet=alphabet, show_progress=False))
    if kind == "gemma3":
        backend.pre_tokenizer = None
        backend.normalizer = normalizers.Replace(" ", "▁")
        backend.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", model_max_length=256)


def ranking_dataset():
    """A two-context DailyDialog++-shaped dataset: two responses per level (positive, adversarial, random)."""
    import datasets

    return datasets.Dataset.from_dict({
        "context": [["hi , how are you ?"], ["do you like tea ?", "yes , with milk ."]],
        "random_negative_responses": [["the train left .", "blue is a color ."], ["i sold my car .", "it rains ."]],
        "adversarial_negative_responses": [["how are you ?", "i like tea ."], ["milk is cheap .", "tea is a plant ."]],
        "positive_responses": [["fine , thanks .", "good , you ?"], ["me too !", "green tea for me ."]],
    })
