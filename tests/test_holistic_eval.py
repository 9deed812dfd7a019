"""HolisticEval's language-model scores (Pang et al. 2020, §3.1–3.2): the raw mean response log-probabilities of
Eq. 1 and 3 against a hand computation over a tiny random GPT-2 and a tiny BERT made a causal LM, the percentile
normalisation of Eq. 2 with hand numbers, the scoring inputs (layout, special tokens, truncation), the metric, the
fitted cutoffs, the perplexity, the training loss and pairs, the LM corpus with its held-out benchmark texts, and a
miniature ``train_holistic_eval`` run. The GPT-2 tokenizer is a tiny word-level one with GPT-2's one boundary token
``<|endoftext|>`` and, like GPT-2's, no padding token; the BERT one is the offline MiniLM's WordPiece."""

from __future__ import annotations

import json
import math
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    BertLMHeadModel,
    DataCollatorForSeq2Seq,
    GPT2LMHeadModel,
)

import hf_dialeval  # noqa: F401  (registers HolisticEval with the Auto classes)
from hf_dialeval.data.transcripts import Layout, ensure_pad_token
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import LM_SCORES, HolisticEvalConfig
from hf_dialeval.metrics.holistic_eval.data import (
    HELD_OUT_BENCHMARKS,
    encode_scoring_inputs,
    encode_training_pairs,
    held_out_texts,
    load_lm_pairs,
)
from hf_dialeval.metrics.holistic_eval.diversity import response_entropy
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel, response_log_probs
from hf_dialeval.metrics.holistic_eval.scoring import (
    HolisticEvalMetric,
    fit_cutoffs,
    language_model_perplexity,
    raw_scores_of,
)
from hf_dialeval.modeling.calibration import percentile_normalise as normalise
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.training.truncation import OLDEST_CONTEXT_FIRST

from conftest import TINY_VOCAB, save_tiny_bert, tiny_config

BOUNDARY = "<|endoftext|>"
#: The tiny GPT-2 tokenizer's words: id 0 is GPT-2's boundary token (bos = sep = eos), as in tiny_config("gpt2").
WORDS = [BOUNDARY, "[UNK]", *"""hi how are you i am fine thanks do like tea yes with milk no the a it is . , ? !
what time train leaves at noon good morning sir can help me want to buy some bread sure here go that costs two
dollars too much see later bye nice day weather today sunny rain""".split()]
assert len(WORDS) <= TINY_VOCAB

#: Cutoffs of the metric's tiny GPT-2 (its raw mean log-probabilities are near −log 96 ≈ −4.6).
CUTOFF = -8.0
#: encode_scoring_inputs / encode_training_pairs keep ``query[len(query) - budget:]``: when the query is shorter
#: than the budget the start is negative and the slice wraps around.


def gpt2_tokenizer():
    """A GPT-2-style fast tokenizer (word level): ``<|endoftext|>`` as BOS and EOS, no SEP, CLS or PAD token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({word: i for i, word in enumerate(WORDS)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOUNDARY, eos_token=BOUNDARY,
                                   unk_token="[UNK]", model_max_length=64)


def tiny_gpt2(seed: int = 0, max_seq_length: int = 48, **config_kwargs) -> HolisticEvalModel:
    torch.manual_seed(seed)
    return HolisticEvalModel(HolisticEvalConfig(backbone_config=tiny_config("gpt2"), max_seq_length=max_seq_length,
                                                **config_kwargs)).eval()


@pytest.fixture(scope="module")
def gpt2_tok():
    return ensure_pad_token(gpt2_tokenizer())


@pytest.fixture(scope="module")
def gpt2_model():
    return tiny_gpt2(context_coherence_cutoff=CUTOFF, fluency_cutoff=CUTOFF)


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def bert_tok(bert_folder):
    return AutoTokenizer.from_pretrained(bert_folder)


@pytest.fixture(scope="module")
def bert_model(bert_folder):
    return HolisticEvalModel.from_backbone(bert_folder, max_seq_length=48).eval()


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def boundaries(tokenizer) -> tuple[int, int, int]:
    """``<bos>``, ``<sep>``, ``<eos>`` written out: GPT-2's one boundary token; BERT's [CLS], [SEP], [SEP]."""
    if tokenizer.bos_token_id is not None:
        return tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.eos_token_id
    return tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.sep_token_id


def hand_mean_log_prob(lm, input_ids: list[int], first_scored: int) -> float:
    """Mean over t ≥ first_scored of log P(x_t | x_<t): the LM run on the ids alone, in float64."""
    with torch.no_grad():
        logits = lm(input_ids=torch.tensor([input_ids])).logits[0].double()
    log_probs = torch.log_softmax(logits, dim=-1)
    picked = [log_probs[t - 1, input_ids[t]].item() for t in range(first_scored, len(input_ids))]
    return sum(picked) / len(picked)


# ---- tokenizer, backbone -----------------------------------------------------------------------------------------

def test_gpt2_tokenizer_gets_its_eos_as_padding_and_a_padded_tokenizer_keeps_its_own(bert_tok):
    tokenizer = gpt2_tokenizer()
    assert tokenizer.pad_token_id is None and tokenizer.sep_token_id is None and tokenizer.cls_token_id is None
    assert ensure_pad_token(tokenizer) is tokenizer
    assert tokenizer.pad_token == BOUNDARY and tokenizer.pad_token_id == 0 == tokenizer.eos_token_id
    pad = bert_tok.pad_token_id
    assert ensure_pad_token(bert_tok).pad_token_id == pad == bert_tok.convert_tokens_to_ids("[PAD]")


def test_backbones_are_causal_language_models(gpt2_model, bert_model, bert_folder):
    assert isinstance(gpt2_model.lm, GPT2LMHeadModel) and gpt2_model.backbone is gpt2_model.lm
    assert gpt2_model.head_names() == []  # GPT-2's head is its tied embeddings
    assert isinstance(bert_model.lm, BertLMHeadModel) and bert_model.lm.config.is_decoder
    assert bert_model.config.backbone_name_or_path == bert_folder and bert_model.config.max_seq_length == 48
    assert bert_model.head_names() == ["lm.cls.predictions.transform"]
    # causal: the logits at a position do not depend on later tokens
    sequence = torch.tensor([[101, 2054, 2051, 2003, 2009, 102]])
    changed = sequence.clone()
    changed[0, -2] = 2748
    with torch.no_grad():
        a, b = bert_model.lm(input_ids=sequence).logits, bert_model.lm(input_ids=changed).logits
    assert torch.allclose(a[0, :-2], b[0, :-2], atol=1e-6) and not torch.allclose(a[0, -2:], b[0, -2:])


# ---- Eq. 1 and 3: mean response-token log-probabilities ---------------------------------------------------------

def tiny_causal_lm(family: str):
    """A tiny random causal LM of ``family``; Gemma's with a final logit soft-cap (Gemma 2's), so that the
    projection at the scored positions is checked to apply it."""
    torch.manual_seed(1)
    if family == "bert":
        return BertLMHeadModel(tiny_config("bert", is_decoder=True)).eval()
    if family == "gemma3":
        return AutoModelForCausalLM.from_config(tiny_config("gemma3", final_logit_softcapping=2.0)).eval()
    return AutoModelForCausalLM.from_config(tiny_config(family)).eval()


@pytest.mark.parametrize("softmax_rows", [None, 2])  # the default slice (every row at once here), and 2 rows a slice
@pytest.mark.parametrize("family", ["gpt2", "bert", "llama", "gemma3"])
def test_response_log_probs_matches_a_loop_over_the_full_logits(family, softmax_rows, monkeypatch):
    from hf_dialeval.modeling import lm_head

    lm = tiny_causal_lm(family)
    if softmax_rows:
        monkeypatch.setattr(lm_head, "SOFTMAX_LOGITS", softmax_rows * lm.config.vocab_size)
    torch.manual_seed(2)
    input_ids = torch.randint(3, TINY_VOCAB, (3, 6))
    attention_mask = torch.ones_like(input_ids)
    score_mask = torch.tensor([[0, 0, 1, 1, 1, 0], [0, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 1]])
    with torch.no_grad():
        logits = lm(input_ids=input_ids, attention_mask=attention_mask).logits.double()
        if family == "gemma3":
            assert logits.abs().max() <= 2.0  # the soft-cap is on
        mean = response_log_probs(lm, input_ids, attention_mask, score_mask)
        total = response_log_probs(lm, input_ids, attention_mask, score_mask, "sum")
        first = score_mask.clone()
        first[:, 0] = 1  # position 0 is predicted from nothing: a mask there counts nothing
        assert torch.equal(response_log_probs(lm, input_ids, attention_mask, first), mean)
    expected, totals = [], []
    for row in range(3):
        values = [torch.log_softmax(logits[row, t - 1], -1)[input_ids[row, t]].item()
                  for t in range(1, 6) if score_mask[row, t]]
        expected.append(sum(values) / len(values))
        totals.append(sum(values))
    assert mean.tolist() == pytest.approx(expected, abs=1e-5)
    assert total.tolist() == pytest.approx(totals, abs=1e-5)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_response_log_probs_projects_a_bounded_chunk_at_a_time(family, monkeypatch):
    """A batch whose scored positions outnumber a chunk scores as it does in one projection, and no projection holds
    more than ``MAX_LOGITS`` logits (a long response on Gemma's 262k-token vocabulary once took 24 GB at batch 32)."""
    from hf_dialeval.modeling import lm_head

    lm = tiny_causal_lm(family)
    torch.manual_seed(3)
    input_ids = torch.randint(3, TINY_VOCAB, (4, 9))
    score_mask = torch.ones_like(input_ids)
    with torch.no_grad():
        whole = response_log_probs(lm, input_ids, None, score_mask)
        projected: list[int] = []
        lm_head.prediction_head(lm).register_forward_hook(lambda head, rows, logits: projected.append(len(logits)))
        monkeypatch.setattr(lm_head, "MAX_LOGITS", 5 * lm.config.vocab_size)
        chunked = response_log_probs(lm, input_ids, None, score_mask)
    assert projected == [5] * 6 + [2]  # 4 × 8 predicted positions
    assert torch.allclose(chunked, whole, atol=1e-6)


def test_a_loaded_metric_stores_its_lm_in_bf16_and_scores_as_autocast_does(gpt2_model, gpt2_tok, tmp_path):
    """Loaded in bf16, the metric owns its LM: the body's and the prediction head's weights are stored in bf16 once,
    the tied embeddings stay fp32, and every score is what autocast computes from the fp32 weights. A model handed
    to the metric (one a Trainer still trains) keeps its fp32 weights."""
    gpt2_model.save_pretrained(tmp_path)
    gpt2_tok.save_pretrained(tmp_path)
    loaded = load_metric("holistic-eval", str(tmp_path), device="cpu", dtype="bf16")
    handed = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", dtype="bf16")
    lm = loaded.model.lm
    assert lm.transformer.h[0].attn.c_attn.weight.dtype == lm.lm_head.weight.dtype == torch.bfloat16
    assert lm.transformer.wte.weight.dtype == torch.float32
    assert {parameter.dtype for parameter in gpt2_model.parameters()} == {torch.float32}
    items = [{"context": ["hi , how are you ?", "i am fine"], "response": "do you like tea with milk ?"},
             {"context": ["good morning sir"], "response": "good morning"}]
    expected = handed.raw_scores(*zip(*[(item["context"], item["response"]) for item in items]))
    got = loaded.raw_scores(*zip(*[(item["context"], item["response"]) for item in items]))
    assert (got.coherence, got.fluency) == (expected.coherence, expected.fluency)
    assert loaded.score_items(items).overall == handed.score_items(items).overall


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_scores_equal_a_hand_computation(family, request):
    model = request.getfixturevalue(f"{family}_model")
    tokenizer = request.getfixturevalue(f"{family}_tok")
    bos, sep, _ = boundaries(tokenizer)
    context, response = ["hi , how are you ?", "i am fine"], "do you like tea with milk ?"
    query = ids(tokenizer, context[0]) + [sep] + ids(tokenizer, context[1])
    r = ids(tokenizer, response)
    coherence_ids, fluency_ids = [bos, *query, sep, *r], [bos, *r]
    c_raw = hand_mean_log_prob(model.lm, coherence_ids, len(query) + 2)
    f_raw = hand_mean_log_prob(model.lm, fluency_ids, 1)
    assert c_raw < 0 and f_raw < 0 and c_raw != pytest.approx(f_raw, abs=1e-4)

    rows, coherence_rows, truncated = encode_scoring_inputs(tokenizer, [context], [response], 48)
    assert rows["input_ids"] == [fluency_ids, coherence_ids] and coherence_rows == [1] and truncated == [False]
    assert rows["score_mask"] == [[0] + [1] * len(r), [0] * (len(query) + 2) + [1] * len(r)]
    with torch.no_grad():
        scores = model(input_ids=torch.tensor([coherence_ids]), score_mask=torch.tensor([rows["score_mask"][1]])).scores
    assert scores.tolist() == pytest.approx([c_raw], abs=1e-5)

    metric = HolisticEvalMetric(model, tokenizer, device="cpu", batch_size=4)
    raw = metric.raw_scores([context], [response])
    coherence, fluency, cut = raw.coherence, raw.fluency, raw.truncated
    assert coherence == pytest.approx([c_raw], abs=1e-5) and fluency == pytest.approx([f_raw], abs=1e-5)
    assert cut == [False]


@pytest.mark.parametrize("sliding_window, shares", [(None, True), (4, False)])
def test_replies_to_one_context_run_it_once_and_score_as_each_alone(gpt2_tok, sliding_window, shares):
    """Several replies to one context (several systems scored on one benchmark) run the context once; each scores as
    it does alone. An LM whose sliding window is shorter than an input runs every row whole."""
    model = tiny_gpt2()
    if sliding_window is not None:
        model.lm.config.sliding_window = sliding_window
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu", batch_size=2)
    context, responses = ["hi , how are you ?", "i am fine"], ["do you like tea ?", "yes , with milk .", "no"]
    rows: list[int] = []
    model.lm.base_model.register_forward_pre_hook(lambda _, args, kwargs: rows.append(len(kwargs["input_ids"])),
                                                  with_kwargs=True)
    together = metric.raw_scores([context] * 3, responses)
    # shared: two rows, the context with the three replies after it and the replies' common opener with them alone
    assert sum(rows) == (2 if shares else 6)
    alone = [metric.raw_scores([context], [response]) for response in responses]
    for field in ("coherence", "fluency", "fluency_of_coherence_tokens"):
        assert getattr(together, field) == pytest.approx([getattr(one, field)[0] for one in alone], abs=1e-5)


def test_query_tokens_are_conditioned_on_but_not_counted(gpt2_model, gpt2_tok):
    response = "yes , with milk ."
    rows, _, _ = encode_scoring_inputs(gpt2_tok, [["do you like tea ?"], ["do you like bread ?"]],
                                       [response, response], 48)
    t_r = len(ids(gpt2_tok, response))
    assert [sum(mask) for mask in rows["score_mask"]] == [t_r] * 4  # T_r in every row, queries never counted
    metric = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu")
    raw = metric.raw_scores([["do you like tea ?"], ["do you like bread ?"]], [response, response])
    (tea, bread), (fluency_tea, fluency_bread) = raw.coherence, raw.fluency
    assert tea != pytest.approx(bread, abs=1e-4)  # c_raw depends on the query
    assert fluency_tea == fluency_bread  # f_raw does not
    # the hand mean over the response tokens of the second query: divided by T_r, not by T_q + T_r
    bos, sep, _ = boundaries(gpt2_tok)
    query = ids(gpt2_tok, "do you like bread ?")
    assert bread == pytest.approx(hand_mean_log_prob(
        gpt2_model.lm, [bos, *query, sep, *ids(gpt2_tok, response)], len(query) + 2), abs=1e-5)


# ---- Eq. 2: normalisation ----------------------------------------------------------------------------------------

def test_normalise_hand_numbers(gpt2_model):
    raw = torch.tensor([-5.0, -4.0, -3.0, -2.0, -1.0, 0.0])
    assert normalise(raw, -4.0).tolist() == pytest.approx([0.0, 0.0, 0.25, 0.5, 0.75, 1.0])
    assert normalise(torch.tensor([-12.0, -6.0, math.nan]), -8.0)[:2].tolist() == pytest.approx([0.0, 0.25])
    assert math.isnan(normalise(torch.tensor([math.nan]), -8.0).item())
    for score in LM_SCORES:
        assert gpt2_model.config.normalise(torch.tensor([-10.0, -2.0]), score).tolist() == pytest.approx([0.0, 0.75])


def test_config_checks_its_cutoffs_and_round_trips(tmp_path):
    with pytest.raises(ValueError, match="negative"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2"), fluency_cutoff=0.5)
    with pytest.raises(ValueError, match="percentile"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2"), percentile=50)
    with pytest.raises(ValueError, match="fit_cutoffs"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2")).cutoff("fluency")
    HolisticEvalConfig(backbone_config=tiny_config("gpt2"), context_coherence_cutoff=-3.25, fluency_cutoff=-4.5,
                       cutoff_reference="ref", percentile=10).save_pretrained(tmp_path)
    again = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(again, HolisticEvalConfig) and again.backbone_config.model_type == "gpt2"
    assert (again.cutoff("context_coherence"), again.cutoff("fluency")) == (-3.25, -4.5)
    assert again.cutoff_reference == "ref" and again.percentile == 10.0


# ---- scoring inputs ----------------------------------------------------------------------------------------------

def test_scoring_inputs_layout_gpt2(gpt2_tok):
    rows, coherence_rows, truncated = encode_scoring_inputs(
        gpt2_tok, [["hi", "how are you ?"], [], ["good morning"]], ["i am fine", "yes", "hi sir"], 48)
    hi, how_are_you, i_am_fine = ids(gpt2_tok, "hi"), ids(gpt2_tok, "how are you ?"), ids(gpt2_tok, "i am fine")
    assert hi == [2] and i_am_fine == [6, 7, 8] and 1 not in how_are_you  # no unknown words
    assert rows["input_ids"] == [
        [0, *i_am_fine], [0, *ids(gpt2_tok, "yes")], [0, *ids(gpt2_tok, "hi sir")],  # fluency rows, item order
        [0, *hi, 0, *how_are_you, 0, *i_am_fine],  # <|endoftext|> as bos, utterance separator and sep
        [0, *ids(gpt2_tok, "good morning"), 0, *ids(gpt2_tok, "hi sir")]]
    assert rows["score_mask"] == [[0, 1, 1, 1], [0, 1], [0, 1, 1], [0] * 8 + [1] * 3, [0] * 4 + [1] * 2]
    assert rows["attention_mask"] == [[1] * len(row) for row in rows["input_ids"]]
    assert coherence_rows == [3, None, 4] and truncated == [False] * 3
    texts = [text for context in CONTEXTS for text in context] + RESPONSES  # the metric tests' words are all known
    assert all(1 not in ids(gpt2_tok, text) for text in texts)


def test_scoring_inputs_layout_bert(bert_tok):
    rows, coherence_rows, truncated = encode_scoring_inputs(bert_tok, [["hi there", "how are you ?"]],
                                                            ["i am fine"], 48)
    assert [bert_tok.convert_ids_to_tokens(row) for row in rows["input_ids"]] == [
        ["[CLS]", "i", "am", "fine"],
        ["[CLS]", "hi", "there", "[SEP]", "how", "are", "you", "?", "[SEP]", "i", "am", "fine"]]
    assert rows["score_mask"] == [[0, 1, 1, 1], [0] * 9 + [1] * 3]
    assert coherence_rows == [1] and truncated == [False]


@pytest.mark.parametrize("max_length, kept", [(11, ["hi", BOUNDARY, "how", "are", "you", "?"]),
                                              (9, ["how", "are", "you", "?"]), (7, ["you", "?"]), (5, [])])
def test_truncation_cuts_the_oldest_query_tokens_first(gpt2_tok, max_length, kept):
    # query: hi <sep> how are you ? (6 tokens); response: i am fine (3); room for the query: max_length − 5
    rows, coherence_rows, truncated = encode_scoring_inputs(gpt2_tok, [["hi", "how are you ?"]], ["i am fine"],
                                                            max_length)
    joint = rows["input_ids"][coherence_rows[0]]
    assert len(joint) <= max_length
    assert gpt2_tok.convert_ids_to_tokens(joint) == [BOUNDARY, *kept, BOUNDARY, "i", "am", "fine"]
    assert rows["score_mask"][coherence_rows[0]] == [0] * (len(kept) + 2) + [1] * 3
    assert rows["input_ids"][0] == [0, 6, 7, 8]  # the response is never cut while it fits
    assert truncated == [len(kept) < 6]


def test_a_query_that_fits_is_kept_whole(gpt2_tok):
    # max_length 16: budget 16 − 2 − 3 = 11 ≥ 6 query tokens, so nothing is cut; data.py keeps query[-5:]
    rows, coherence_rows, truncated = encode_scoring_inputs(gpt2_tok, [["hi", "how are you ?"]], ["i am fine"], 16)
    assert gpt2_tok.convert_ids_to_tokens(rows["input_ids"][coherence_rows[0]]) == [
        BOUNDARY, "hi", BOUNDARY, "how", "are", "you", "?", BOUNDARY, "i", "am", "fine"]
    assert truncated == [False]


def test_a_response_too_long_alone_loses_its_end_and_the_query(gpt2_tok):
    response = "what time is it ? the train leaves at noon , sir"  # 12 tokens
    r = ids(gpt2_tok, response)
    assert len(r) == 12 and 1 not in r
    rows, coherence_rows, truncated = encode_scoring_inputs(gpt2_tok, [["hi"], []], [response, response], 8)
    assert rows["input_ids"][:2] == [[0, *r[:7]], [0, *r[:7]]]  # fluency: <bos> and the first 7 tokens
    assert rows["input_ids"][coherence_rows[0]] == [0, 0, *r[:6]]  # no room for any query token
    assert rows["score_mask"][coherence_rows[0]] == [0, 0] + [1] * 6
    assert coherence_rows == [2, None] and truncated == [True, True]
    _, _, fits = encode_scoring_inputs(gpt2_tok, [[]], [response], 13)  # 12 tokens + <bos>: not cut
    assert fits == [False]


# ---- the metric --------------------------------------------------------------------------------------------------

CONTEXTS = [["hi , how are you ?"], ["what time is it ?", "it is noon ."], [], ["can you help me ?"],
            ["good morning sir"], ["do you like tea ?", "yes , with milk .", "me too"], ["bye"]]
RESPONSES = ["i am fine , thanks .", "the train leaves at two", "nice day today", "sure , here you go",
             "good morning", "no", "see you later ! bye !"]


def test_metric_scores_are_eq_2_of_the_raw_scores(gpt2_model, gpt2_tok):
    metric = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", batch_size=3)
    assert metric.dimensions == LM_SCORES
    output = metric.score_turns(CONTEXTS, RESPONSES)
    assert set(output.scores) == {"context_coherence", "fluency"}
    raw = metric.raw_scores(CONTEXTS, RESPONSES)
    coherence_raw, fluency_raw = raw.coherence, raw.fluency
    for i in range(len(RESPONSES)):
        assert output.scores["fluency"][i] == pytest.approx((fluency_raw[i] - CUTOFF) / -CUTOFF, abs=1e-9)
        assert 0.0 <= output.scores["fluency"][i] <= 1.0
        if i == 2:  # no context: no coherence, overall = fluency
            assert math.isnan(coherence_raw[i]) and math.isnan(output.scores["context_coherence"][i])
            assert output.overall[i] == output.scores["fluency"][i]
            continue
        coherence = output.scores["context_coherence"][i]
        assert coherence == pytest.approx((coherence_raw[i] - CUTOFF) / -CUTOFF, abs=1e-9) and 0.0 <= coherence <= 1.0
        assert output.overall[i] == pytest.approx((coherence + output.scores["fluency"][i]) / 2, abs=1e-12)
    assert 0.0 < min(output.scores["fluency"]) and max(output.scores["fluency"]) < 1.0  # mid-scale, not clipped
    assert output.truncated == [False] * len(RESPONSES)


def test_metric_batch_size_and_order_do_not_change_scores(gpt2_model, gpt2_tok):
    one = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", batch_size=1).score_turns(CONTEXTS, RESPONSES)
    seven = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", batch_size=7).score_turns(CONTEXTS, RESPONSES)
    for name in LM_SCORES:
        np.testing.assert_allclose(one.scores[name], seven.scores[name], atol=1e-5)
    np.testing.assert_allclose(one.overall, seven.overall, atol=1e-5)
    reversed_output = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", batch_size=4).score_turns(
        CONTEXTS[::-1], RESPONSES[::-1])
    for name in LM_SCORES:
        np.testing.assert_allclose(reversed_output.scores[name][::-1], seven.scores[name], atol=1e-5)
    # length sorting groups items; the scores still come back in input order, each the item's own
    single = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu").score_turns(CONTEXTS[4:5], RESPONSES[4:5])
    assert single.overall[0] == pytest.approx(seven.overall[4], abs=1e-5)


def test_empty_response_gets_the_lowest_score_without_the_model(gpt2_model, gpt2_tok, monkeypatch):
    metric = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu")
    reference = metric.score_turns([["hi , how are you ?"]], ["i am fine"])

    def no_model(*args, **kwargs):
        raise AssertionError("the model ran for an empty response")

    with monkeypatch.context() as patch:
        patch.setattr(metric.model, "forward", no_model)
        output = metric.score_turns([["hi , how are you ?"], []], ["", "  "])
    assert output.overall == [0.0, 0.0] and output.empty == [True, True]
    assert all(output.scores[name] == [0.0, 0.0] for name in LM_SCORES)
    mixed = metric.score_turns([["hi , how are you ?"], ["hi , how are you ?"]], ["", "i am fine"])
    assert mixed.overall[0] == 0.0 and mixed.overall[1] == pytest.approx(reference.overall[0], abs=1e-6)


def test_metric_without_cutoffs_names_fit_cutoffs(gpt2_tok):
    metric = HolisticEvalMetric(tiny_gpt2(), gpt2_tok, device="cpu")
    with pytest.raises(ValueError, match="fit_cutoffs"):
        metric.score_turns([["hi"]], ["hi sir"])


# ---- fitted cutoffs ----------------------------------------------------------------------------------------------

def test_fit_cutoffs_are_the_5th_percentile_of_the_raw_scores(gpt2_tok):
    model = tiny_gpt2(seed=3)
    assert model.config.context_coherence_cutoff is None and model.config.percentile == 5.0
    cutoffs = fit_cutoffs(model, gpt2_tok, CONTEXTS, RESPONSES, reference="seven pairs", batch_size=2)
    raw = HolisticEvalMetric(model, gpt2_tok, device="cpu").raw_scores(CONTEXTS, RESPONSES)
    coherence_raw, fluency_raw = raw.coherence, raw.fluency
    entropy = [response_entropy(response) for response in RESPONSES]
    expected = {"context_coherence": float(np.percentile([v for v in coherence_raw if not math.isnan(v)], 5)),
                "fluency": float(np.percentile(fluency_raw, 5)), "diversity": float(np.percentile(entropy, 5)),
                "diversity_upper": float(np.percentile(entropy, 95))}
    assert cutoffs == pytest.approx(expected, abs=1e-6)
    assert (model.config.diversity_cutoff, model.config.diversity_upper_cutoff) == (
        cutoffs["diversity"], cutoffs["diversity_upper"])
    assert model.config.context_coherence_cutoff == cutoffs["context_coherence"] < 0
    assert model.config.fluency_cutoff == cutoffs["fluency"] < 0
    assert model.config.cutoff_reference == "seven pairs"
    # 0 at or below the 5th percentile: of 7 fluency scores only the lowest (the cutoff lies above it)
    scores = HolisticEvalMetric(model, gpt2_tok, device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert sum(value == 0.0 for value in scores.scores["fluency"]) == 1
    tenth = fit_cutoffs(tiny_gpt2(seed=3), gpt2_tok, CONTEXTS, RESPONSES, percentile=10)
    assert tenth["fluency"] == pytest.approx(float(np.percentile(fluency_raw, 10)), abs=1e-6)
    with pytest.raises(ValueError, match="reference pairs"):
        fit_cutoffs(model, gpt2_tok, [], [])
    with pytest.raises(ValueError, match="context"):
        fit_cutoffs(tiny_gpt2(), gpt2_tok, [[], []], ["hi", "yes"])


def test_fitted_cutoffs_survive_auto_model_round_trip(gpt2_tok, tmp_path):
    from transformers import AutoModel

    model = tiny_gpt2(seed=3)
    cutoffs = fit_cutoffs(model, gpt2_tok, CONTEXTS, RESPONSES, reference="seven pairs")
    before = HolisticEvalMetric(model, gpt2_tok, device="cpu").score_turns(CONTEXTS, RESPONSES)
    model.save_pretrained(tmp_path)
    reloaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(reloaded, HolisticEvalModel)
    assert reloaded.config.context_coherence_cutoff == cutoffs["context_coherence"]
    assert reloaded.config.fluency_cutoff == cutoffs["fluency"]
    assert reloaded.config.cutoff_reference == "seven pairs" and (tmp_path / "model.safetensors").is_file()
    after = HolisticEvalMetric(reloaded, gpt2_tok, device="cpu").score_turns(CONTEXTS, RESPONSES)
    for name in LM_SCORES:
        np.testing.assert_array_equal(after.scores[name], before.scores[name])


# ---- perplexity, training loss, training pairs -------------------------------------------------------------------

PAIRS = ([["hi , how are you ?"], ["what time is it ?", "it is noon ."], ["can you help me ?"]],
         ["i am fine , thanks .", "the train leaves at two", "sure"])


def test_language_model_perplexity_equals_a_hand_computation(gpt2_model, gpt2_tok):
    # the responses' tokens given their queries (what context coherence reads), never a query's or <eos>
    contexts, responses = PAIRS
    total, tokens = 0.0, 0
    for context, response in zip(contexts, responses):
        query = ids(gpt2_tok, context[0]) + [tok for utterance in context[1:] for tok in [0, *ids(gpt2_tok, utterance)]]
        r = ids(gpt2_tok, response)
        sequence = [0, *query, 0, *r]
        total += hand_mean_log_prob(gpt2_model.lm, sequence, len(sequence) - len(r)) * len(r)
        tokens += len(r)
    words = 4 + 5 + 1  # the detokenised responses' words: "i am fine, thanks." is 4
    result = language_model_perplexity(gpt2_model, gpt2_tok, contexts, responses, batch_size=2)
    assert (result["tokens"], result["words"], result["sequences"]) == (tokens, words, 3)
    assert result["token_perplexity"] == pytest.approx(math.exp(-total / tokens), rel=1e-5)
    assert result["word_perplexity"] == pytest.approx(math.exp(-total / words), rel=1e-5)
    assert result["token_perplexity"] > 1.0


def test_training_loss_is_next_token_cross_entropy_ignoring_unlabelled_tokens(gpt2_model):
    torch.manual_seed(5)
    input_ids = torch.randint(0, TINY_VOCAB, (2, 7))
    attention_mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
    labels = input_ids.clone()
    labels[1, 5:] = -100  # padding
    labels[0, 2] = -100  # an unlabelled token inside a sequence
    with torch.no_grad():
        output = gpt2_model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        logits = gpt2_model.lm(input_ids=input_ids, attention_mask=attention_mask).logits.double()
        own = gpt2_model.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    terms = [-torch.log_softmax(logits[b, t - 1], -1)[labels[b, t]].item()
             for b in range(2) for t in range(1, 7) if labels[b, t] != -100]
    assert len(terms) == 5 + 4
    assert output.loss.item() == pytest.approx(sum(terms) / len(terms), abs=1e-5)
    assert output.loss.item() == pytest.approx(own.item(), abs=1e-5)
    shifted = F.cross_entropy(logits[:, :-1].reshape(-1, TINY_VOCAB), labels[:, 1:].reshape(-1), ignore_index=-100)
    assert output.loss.item() == pytest.approx(shifted.item(), abs=1e-5)
    assert output.scores is None


def test_training_pairs_and_their_collator(gpt2_model, gpt2_tok, bert_tok):
    pairs = datasets.Dataset.from_dict({"context": [["hi , how are you ?"], ["do you like tea ?", "yes"], []],
                                        "response": ["i am fine", "me too", "bye"]})
    encoded = encode_training_pairs(gpt2_tok, pairs, 48)
    assert encoded.column_names == ["input_ids", "attention_mask", "labels", "truncated"]
    assert encoded["truncated"] == [False, False, False]
    encoded = encoded.remove_columns("truncated")
    how = ids(gpt2_tok, "hi , how are you ?")
    assert encoded[0]["input_ids"] == [0, *how, 0, *ids(gpt2_tok, "i am fine"), 0]
    assert encoded[1]["input_ids"] == [0, *ids(gpt2_tok, "do you like tea ?"), 0, *ids(gpt2_tok, "yes"), 0,
                                       *ids(gpt2_tok, "me too"), 0]
    assert encoded[2]["input_ids"] == [0, *ids(gpt2_tok, "bye"), 0]  # no context: <bos> response <eos>
    assert all(row["labels"] == row["input_ids"] and row["attention_mask"] == [1] * len(row["input_ids"])
               for row in encoded)
    bert = encode_training_pairs(bert_tok, pairs.select([0]), 48)[0]["input_ids"]
    assert bert_tok.convert_ids_to_tokens(bert) == ["[CLS]", "hi", ",", "how", "are", "you", "?", "[SEP]", "i", "am",
                                                    "fine", "[SEP]"]
    # a cut pair keeps the query's newest tokens and the whole response: 8 = <bos> + 2 + <sep> + 3 + <eos>
    cut = encode_training_pairs(gpt2_tok, pairs.select([0]), 8)[0]
    assert cut["input_ids"] == [0, *how[-2:], 0, *ids(gpt2_tok, "i am fine"), 0] and cut["truncated"]
    # a reply longer than the limit by itself loses its end, and is counted as cut too
    alone = datasets.Dataset.from_dict({"context": [[]], "response": ["i am fine , thank you"]})
    assert encode_training_pairs(gpt2_tok, alone, 4)[0] | {"labels": None, "attention_mask": None} == {
        "input_ids": [0, *ids(gpt2_tok, "i am")[:2], 0], "labels": None, "attention_mask": None, "truncated": True}

    batch = DataCollatorForSeq2Seq(gpt2_tok, label_pad_token_id=-100)([encoded[0], encoded[2]])
    short = len(encoded[2]["input_ids"])
    length = len(encoded[0]["input_ids"])
    assert batch["input_ids"][1].tolist() == encoded[2]["input_ids"] + [0] * (length - short)
    assert batch["labels"][1].tolist() == encoded[2]["input_ids"] + [-100] * (length - short)
    assert batch["labels"][1, short - 1].item() == 0  # the eos that is also the pad token is still a label
    assert batch["attention_mask"][1].tolist() == [1] * short + [0] * (length - short)
    with torch.no_grad():
        loss = gpt2_model(**batch).loss.item()
        alone = [gpt2_model(input_ids=torch.tensor([row["input_ids"]]),
                            labels=torch.tensor([row["labels"]])).loss.item() for row in (encoded[0], encoded[2])]
    counts = [length - 1, short - 1]
    assert loss == pytest.approx((alone[0] * counts[0] + alone[1] * counts[1]) / sum(counts), abs=1e-5)


def test_a_training_query_that_fits_is_kept_whole(gpt2_tok):
    pairs = datasets.Dataset.from_dict({"context": [["hi , how are you ?"]], "response": ["i am fine"]})
    # max_length 16: 16 − 3 − 3 = 10 ≥ 6 query tokens; data.py keeps query[-4:]
    kept = encode_training_pairs(gpt2_tok, pairs, 16)[0]
    assert kept["input_ids"] == [0, *ids(gpt2_tok, "hi , how are you ?"), 0, *ids(gpt2_tok, "i am fine"), 0]
    assert not kept["truncated"]


# ---- the LM corpus -----------------------------------------------------------------------------------------------

def test_lm_pairs_are_consecutive_utterances_without_held_out_texts(data_dir):
    from hf_dialeval.data.benchmarks import load_benchmark
    from hf_dialeval.data.corpora import load_dailydialog

    def normalised(text):
        return " ".join(text.split())

    held_out = held_out_texts(data_dir)
    assert HELD_OUT_BENCHMARKS == ("holistic-context", "holistic-fluency")
    fluency = load_benchmark("holistic-fluency", data_dir)
    assert {normalised(text) for text in fluency["response"]} <= held_out
    pairs = load_lm_pairs(["dailydialog"], "validation", data_dir)
    assert pairs.column_names == ["context", "response"]
    dialogues = load_dailydialog("validation", data_dir)["dialogue"]
    every = [([d[i - 1]], d[i]) for d in dialogues for i in range(1, len(d))]
    kept = [(c, r) for c, r in every if normalised(r) not in held_out and normalised(c[0]) not in held_out]
    assert len(kept) < len(every)  # the benchmarks hold some DailyDialog validation utterances
    assert list(zip(pairs["context"], pairs["response"])) == kept
    assert not any(normalised(text) in held_out for row in pairs for text in [*row["context"], row["response"]])
    with pytest.raises(ValueError, match="unknown LM corpora"):
        load_lm_pairs(["dailydialog", "reddit"], "train", data_dir)


# ---- train_holistic_eval in miniature ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scratch_run(data_dir, tmp_path_factory):
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    args = HolisticEvalTrainingArguments(
        output_dir=str(tmp_path_factory.mktemp("run")), data_dir=str(data_dir), from_scratch=True,
        scratch_vocab_size=300, scratch_layers=1, scratch_hidden_size=16, scratch_heads=2, max_steps=2,
        max_train_items=64, eval_pairs=8, cutoff_pairs=16, max_seq_length=64, per_device_train_batch_size=8,
        per_device_eval_batch_size=64, learning_rate=1e-3, logging_steps=1, use_cpu=True, report_to=[],
        disable_tqdm=True)
    return train_holistic_eval(args), args


@pytest.mark.slow
def test_train_from_scratch_writes_the_run(scratch_run, data_dir):
    out, _ = scratch_run
    names = {path.name for path in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "training_record.json"} <= names
    assert not list(out.glob("checkpoint-*"))
    record = json.loads((out / "training_record.json").read_text())
    assert record["train_pairs"] == 64 and record["corpora"] == ["dailydialog"]
    truncated = record["truncated"]
    assert (truncated["of"], truncated["token_limit"], truncated["cut"]) == (64, 64, OLDEST_CONTEXT_FIRST)
    assert 0 <= truncated["items"] <= 64
    assert sum("loss" in entry for entry in record["log_history"]) == 2
    assert "eval_loss" in record["validation"]
    assert set(record["cutoffs"]) == {*LM_SCORES, "diversity", "diversity_upper"}
    assert all(record["cutoffs"][name] < 0 for name in LM_SCORES)
    assert 0 <= record["cutoffs"]["diversity"] < record["cutoffs"]["diversity_upper"]
    perplexity = record["dailydialog_test_perplexity"]
    assert perplexity["sequences"] == len(load_lm_pairs(["dailydialog"], "test", data_dir))
    assert perplexity["token_perplexity"] > 1 and perplexity["word_perplexity"] > 1
    config = AutoConfig.from_pretrained(out)
    assert isinstance(config, HolisticEvalConfig) and config.backbone_config.model_type == "gpt2"
    assert config.context_coherence_cutoff == record["cutoffs"]["context_coherence"]
    assert config.fluency_cutoff == record["cutoffs"]["fluency"]
    assert (config.diversity_cutoff, config.diversity_upper_cutoff) == (
        record["cutoffs"]["diversity"], record["cutoffs"]["diversity_upper"])
    assert config.cutoff_reference.startswith("dailydialog validation, 16 query-response pairs")
    assert config.max_seq_length == 64 and config.backbone_config.n_embd == 16
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert len(tokenizer) <= 300 and config.backbone_config.vocab_size == len(tokenizer)
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == (BOUNDARY, BOUNDARY, "<pad>")


@pytest.mark.slow  # reads the run the scratch_run fixture trains
def test_train_from_scratch_run_loads_and_scores(scratch_run):
    from hf_dialeval.metrics.holistic_eval.data import dailydialog_pairs

    out, args = scratch_run
    model, tokenizer = load_checkpoint("holistic-eval", out)
    assert isinstance(model, HolisticEvalModel) and not model.training
    record = json.loads((out / "training_record.json").read_text())
    reference = dailydialog_pairs("validation", 16, args.seed, args.data_dir)
    raw = HolisticEvalMetric(model, tokenizer, device="cpu").raw_scores(reference["context"], reference["response"])
    coherence, fluency = raw.coherence, raw.fluency
    assert record["cutoffs"]["fluency"] == pytest.approx(float(np.percentile(fluency, 5)), abs=1e-5)
    assert record["cutoffs"]["context_coherence"] == pytest.approx(float(np.percentile(coherence, 5)), abs=1e-5)
    output = HolisticEvalMetric(model, tokenizer, device="cpu").score_turns(
        [["hi , how are you ?"], []], ["fine , thanks .", "ok"])
    assert all(0.0 <= value <= 1.0 for value in output.scores["fluency"] + output.overall)
    assert 0.0 <= output.scores["context_coherence"][0] <= 1.0 and math.isnan(output.scores["context_coherence"][1])


@pytest.mark.slow
def test_init_from_continues_a_run_with_its_tokenizer_and_refits_the_cutoffs(scratch_run, data_dir, tmp_path):
    from safetensors.torch import load_file

    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    first, _ = scratch_run
    args = HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "continued"), data_dir=str(data_dir), init_from=str(first), lora_rank=0,
        token_reduction="sum", max_steps=2, max_train_items=32, eval_pairs=8, cutoff_pairs=16, max_seq_length=48,
        per_device_train_batch_size=8, per_device_eval_batch_size=64, learning_rate=1e-2, use_cpu=True, report_to=[],
        disable_tqdm=True)
    out = train_holistic_eval(args)
    assert AutoTokenizer.from_pretrained(out).get_vocab() == AutoTokenizer.from_pretrained(first).get_vocab()
    config = AutoConfig.from_pretrained(out)
    assert (config.token_reduction, config.max_seq_length) == ("sum", 48)  # this run's options, not the first's
    before, after = load_file(first / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys()
    layer = next(name for name in before if ".h.0.attn.c_attn.weight" in name)
    embedding = next(name for name in before if name.endswith("wte.weight"))
    assert not torch.equal(before[layer], after[layer])  # the layers kept training from the first run's weights
    assert torch.equal(before[embedding], after[embedding])  # embeddings frozen, as for any fine-tuned backbone
    record = json.loads((out / "training_record.json").read_text())
    assert record["cutoffs"]["fluency"] == config.fluency_cutoff
    assert record["cutoffs"] != json.loads((first / "training_record.json").read_text())["cutoffs"]


@pytest.mark.slow  # reads the run the scratch_run fixture trains
def test_init_from_refuses_more_tokens_than_the_lm_has_positions(scratch_run, data_dir, tmp_path):
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    first, _ = scratch_run  # its GPT-2 has 64 positions
    args = HolisticEvalTrainingArguments(output_dir=str(tmp_path), data_dir=str(data_dir), init_from=str(first),
                                         lora_rank=0, max_seq_length=65, max_train_items=8, use_cpu=True, report_to=[])
    with pytest.raises(ValueError, match="--max-seq-length 65 is more than the 64 positions of .*give --max-seq-length "
                                         "64 or less"):
        train_holistic_eval(args)


def test_a_new_lm_refuses_more_tokens_than_its_backbone_has_positions(bert_folder, data_dir, tmp_path):
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    positions = AutoConfig.from_pretrained(bert_folder).max_position_embeddings
    args = HolisticEvalTrainingArguments(output_dir=str(tmp_path), data_dir=str(data_dir), backbone=str(bert_folder),
                                         max_seq_length=positions + 1, max_train_items=8, use_cpu=True, report_to=[])
    with pytest.raises(ValueError, match=f"--max-seq-length {positions + 1} is more than the {positions} positions"):
        train_holistic_eval(args)


def test_init_from_and_from_scratch_exclude_each_other(tmp_path):
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments

    with pytest.raises(ValueError, match="--init-from continues a trained LM and --from-scratch starts a new one"):
        HolisticEvalTrainingArguments(output_dir=str(tmp_path), init_from="runs/he", from_scratch=True, use_cpu=True)


def _scratch_run_on_dialogues(tmp_path: Path, dialogues: list[list[str]], **options):
    """A tiny scratch run of ``train_holistic_eval`` on ``dialogues`` written to a JSONL file: the file, the
    arguments, the run folder and its training record."""
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    source = tmp_path / "mine.jsonl"
    source.write_text("".join(json.dumps({"dialogue": dialogue}) + "\n" for dialogue in dialogues))
    args = HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "run"), dialogues=str(source), from_scratch=True, scratch_vocab_size=300,
        scratch_layers=1, scratch_hidden_size=16, scratch_heads=2, max_steps=2, test_pairs=0, max_seq_length=64,
        per_device_train_batch_size=8, per_device_eval_batch_size=64, learning_rate=1e-3, use_cpu=True,
        report_to=[], disable_tqdm=True, **options)
    out = train_holistic_eval(args)
    return source, args, out, json.loads((out / "training_record.json").read_text())


def test_train_on_your_own_dialogues_fits_the_cutoffs_on_held_out_ones(tmp_path):
    # --dialogues instead of the corpora: no data directory read (no DailyDialog validation or test pairs), a held-out
    # share of the user's dialogues validated on and fitted on, and the record naming the data
    from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues
    from hf_dialeval.data.tables import rows_sha256
    from hf_dialeval.metrics.holistic_eval.data import dialogue_pairs

    source, args, out, record = _scratch_run_on_dialogues(
        tmp_path, [[f"hi , how are you {i} ?", "i am fine , thanks .", "do you like tea ?", f"yes , with milk {i % 7} ."]
                   for i in range(30)], eval_pairs=8, logging_steps=1)
    dialogues = load_dialogues(source)
    assert (record["dialogues"], record["dialogues_count"], record["held_out_dialogues"]) == (str(source), 30, 10)
    assert record["dialogues_sha256"] == rows_sha256(dialogues) and "corpora" not in record
    assert record["train_pairs"] == 20 * 3 and "eval_loss" in record["validation"]
    assert "dailydialog_test_perplexity" not in record
    held = held_out_dialogues(dialogues, 10 / 30, args.seed)[1]  # the 10 of 30 the run held out
    pairs = dialogue_pairs(held["dialogue"])
    config = AutoConfig.from_pretrained(out)
    assert config.cutoff_reference == f"{source}, 10 held-out dialogues, 30 query-response pairs (seed 42)"
    model, tokenizer = load_checkpoint("holistic-eval", out)
    raw = HolisticEvalMetric(model, tokenizer, device="cpu").raw_scores(
        [pair["context"] for pair in pairs], [pair["response"] for pair in pairs])
    coherence, fluency = raw.coherence, raw.fluency
    assert record["cutoffs"]["fluency"] == pytest.approx(float(np.percentile(fluency, 5)), abs=1e-5)
    assert record["cutoffs"]["context_coherence"] == pytest.approx(float(np.percentile(coherence, 5)), abs=1e-5)


@pytest.mark.parametrize("given_weight", [None, 0.4])
def test_train_on_your_own_dialogues_refits_the_pmi_weight_unless_it_is_given(tmp_path, given_weight):
    from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues
    from hf_dialeval.metrics.holistic_eval.data import dialogue_pairs
    from hf_dialeval.metrics.holistic_eval.pmi_weight import WEIGHTS, weight_win_rates
    from hf_dialeval.metrics.holistic_eval.scoring import pointwise_mutual_information

    source, args, out, record = _scratch_run_on_dialogues(
        tmp_path, [[f"hi , how are you {i} ?", f"i am fine , thanks {i % 5} .", "do you like tea ?",
                    f"yes , with milk {i % 7} .", "ok ."] for i in range(30)],
        eval_pairs=0, context_coherence_measure="pmi", pmi_weight=given_weight)
    model, tokenizer = load_checkpoint("holistic-eval", out)
    if given_weight is not None:
        assert "pmi_weight_refit" not in record and model.config.pmi_weight == given_weight
        return
    refit = record["pmi_weight_refit"]
    held = held_out_dialogues(load_dialogues(source), 10 / 30, args.seed)[1]
    rates = weight_win_rates(HolisticEvalMetric(model, tokenizer, device="cpu"),
                             [list(d) for d in held["dialogue"]], seed=args.seed)
    assert refit["weights"] == list(WEIGHTS) and refit["dialogues"] == 10
    assert {name: pytest.approx(values, abs=1e-6) for name, values in rates.items()} == refit["win_rates"]
    means = [(a + b) / 2 for a, b in zip(rates["random"], rates["generic"])]
    best = max(range(len(WEIGHTS)), key=lambda i: (means[i], WEIGHTS[i]))
    assert model.config.pmi_weight == refit["pmi_weight"] == WEIGHTS[best]
    # the cutoffs are fitted for the refitted weight, on the held-out dialogues' pairs
    pairs = dialogue_pairs(held["dialogue"])
    raw = HolisticEvalMetric(model, tokenizer, device="cpu").raw_scores(
        [pair["context"] for pair in pairs], [pair["response"] for pair in pairs])
    pmi = pointwise_mutual_information(raw.coherence, raw.fluency_of_coherence_tokens, refit["pmi_weight"])
    assert record["cutoffs"]["context_coherence"] == pytest.approx(float(np.percentile(pmi, 5)), abs=1e-5)


# ---- logical self-consistency (§3.4), unavailable scores, system-level scores, the CLI and evaluate schema ---------

#: The tiny NLI classifier's labels, in roberta-large-mnli's order (contradiction is column 0).
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def nli_tokenizer():
    """A word-level tokenizer over this module's words with RoBERTa's specials and pair format
    (``<s> premise </s></s> hypothesis </s>``), as tests/test_consistency.py builds its own."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {token: index for index, token in enumerate(specials + WORDS[2:])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", pad_token="<pad>", unk_token="<unk>", model_max_length=128,
                                   model_input_names=["input_ids", "attention_mask"])


@pytest.fixture(scope="module")
def nli_folder(tmp_path_factory) -> str:
    """A tiny random RoBERTa MNLI-style classifier (safetensors) with its tokenizer, saved to a folder."""
    from transformers import RobertaConfig, RobertaForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-nli")
    tokenizer = nli_tokenizer()
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                           id2label=NLI_LABELS, label2id={label: index for index, label in NLI_LABELS.items()},
                           initializer_range=0.5)  # wide weights: premises give far-apart probabilities
    torch.manual_seed(11)
    RobertaForSequenceClassification(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def nli_metric(gpt2_model, gpt2_tok, nli_folder):
    from hf_dialeval.metrics.holistic_eval.consistency import NLIConsistencyScorer

    return HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu", batch_size=3,
                              nli=NLIConsistencyScorer(nli_folder, device="cpu", batch_size=2))


def hand_contradiction(scorer, premise: str, hypothesis: str) -> float:
    """P(contradiction) of one pair: the classifier on ``<s> premise </s></s> hypothesis </s>`` written out, the
    softmax taken here, in float64."""
    vocab = scorer.nli.tokenizer.get_vocab()
    pair = [0, *(vocab[word] for word in premise.split()), 2, 2, *(vocab[word] for word in hypothesis.split()), 2]
    assert scorer.nli.tokenizer(premise, hypothesis)["input_ids"] == pair and vocab["<unk>"] not in pair
    with torch.no_grad():
        logits = scorer.nli.model(input_ids=torch.tensor([pair])).logits[0].double()
    return torch.softmax(logits, dim=-1)[0].item()


def test_consistency_is_one_minus_the_contradiction_of_the_speakers_earlier_utterance(nli_metric, gpt2_model,
                                                                                      gpt2_tok, nli_folder):
    assert nli_metric.dimensions == ("context_coherence", "fluency", "consistency")
    assert nli_metric.nli.nli.column == 0
    assert nli_metric.settings()["nli_checkpoint"] == nli_folder
    contexts = [["do you like tea ?", "yes , with milk .", "me too"], ["hi , how are you ?"]]
    responses = ["no , i like bread", "i am fine , thanks ."]
    output = nli_metric.score_turns(contexts, responses)
    assert set(output.scores) == {"context_coherence", "fluency", "consistency"} and output.unavailable == {}
    # three utterances: the responding speaker said context[-2] (context[-4] does not exist)
    p = hand_contradiction(nli_metric.nli, "yes , with milk .", "no , i like bread")
    assert 0.05 < p < 0.95
    consistency = output.select("consistency")
    assert consistency[0] == pytest.approx(1 - p, abs=1e-5)
    for other in ("me too", "do you like tea ?"):  # the other speaker's utterances are no premise
        assert abs(hand_contradiction(nli_metric.nli, other, "no , i like bread") - p) > 0.1
    # the language-model scores are those of the metric without NLI
    plain = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu").score_turns(contexts, responses)
    for name in LM_SCORES:
        np.testing.assert_allclose(output.scores[name], plain.scores[name], atol=1e-6)
    coherence, fluency = output.scores["context_coherence"], output.scores["fluency"]
    # overall: the response in its dialogue (coherence, consistency) weighs as much as the response alone (fluency)
    assert output.overall[0] == pytest.approx(((coherence[0] + consistency[0]) / 2 + fluency[0]) / 2, abs=1e-9)
    # one utterance: the speaker said nothing before, so no consistency, and overall is the mean of the other two
    assert math.isnan(consistency[1]) and not math.isnan(coherence[1])
    assert output.overall[1] == pytest.approx((coherence[1] + fluency[1]) / 2, abs=1e-9)
    assert output.overall[1] == pytest.approx(plain.overall[1], abs=1e-6)


def test_consistency_without_nli_names_the_option(gpt2_model, gpt2_tok):
    metric = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu")
    assert "consistency" not in metric.dimensions and "nli_checkpoint" not in metric.settings()
    output = metric.score_turns(CONTEXTS[:2], RESPONSES[:2])
    assert set(output.unavailable) == {"consistency"} and "consistency" not in output.scores
    with pytest.raises(KeyError) as error:
        output.select("consistency")
    message = error.value.args[0]
    assert "nli_checkpoint" in message and "--nli-checkpoint" in message and "\n" not in message
    assert output.select("fluency") == output.scores["fluency"] and len(output.select("fluency")) == 2
    assert output.select("overall") == output.overall
    with pytest.raises(KeyError, match="has no score 'coherence'"):
        output.select("coherence")


def test_consistency_without_nli_names_the_option_for_an_empty_input(gpt2_model, gpt2_tok):
    output = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu").score_items([])
    with pytest.raises(KeyError, match="--nli-checkpoint"):
        output.select("consistency")


def test_system_scores_are_per_system_entropies_and_means(nli_metric):
    from hf_dialeval.metrics.holistic_eval.diversity import ngram_entropy

    items = [{"context": ["do you like tea ?", "yes , with milk .", "me too"], "response": "no , i like bread",
              "system": "a"},
             {"context": ["good morning sir"], "response": "good morning", "system": "b"},
             {"context": ["what time is it ?", "it is noon .", "what train ?"], "response": "the train leaves at two",
              "system": "a"}]
    output = nli_metric.score_items(items)
    assert set(output.system_scores) == {"a", "b"}
    for system, indices in (("a", [0, 2]), ("b", [1])):
        scores = output.system_scores[system]
        assert set(scores) == {"entropy_1", "entropy_2", "entropy_3", "mean_context_coherence", "mean_fluency",
                               "mean_consistency", "mean_overall"}
        responses = [items[i]["response"] for i in indices]
        for n in (1, 2, 3):
            assert scores[f"entropy_{n}"] == pytest.approx(ngram_entropy(responses, n), abs=1e-12)
        for name in ("context_coherence", "fluency"):
            assert scores[f"mean_{name}"] == pytest.approx(np.mean([output.scores[name][i] for i in indices]), abs=1e-9)
        assert scores["mean_overall"] == pytest.approx(np.mean([output.overall[i] for i in indices]), abs=1e-9)
    # "a": 5 + 5 distinct words, each once: entropy ln 10; "b": one 2-word response is one bigram
    assert output.system_scores["a"]["entropy_1"] == pytest.approx(math.log(10), abs=1e-12)
    assert output.system_scores["b"]["entropy_1"] == pytest.approx(math.log(2), abs=1e-12)
    assert output.system_scores["b"]["entropy_2"] == 0.0
    # consistency: both of "a" have one, "b" (a one-utterance context) none
    consistency = output.scores["consistency"]
    assert output.system_scores["a"]["mean_consistency"] == pytest.approx((consistency[0] + consistency[2]) / 2)
    assert math.isnan(consistency[1]) and math.isnan(output.system_scores["b"]["mean_consistency"])

    # items without a system (or with an empty one) are pooled under "all"
    pooled = nli_metric.score_items([{k: v for k, v in item.items() if k != "system"} for item in items[:2]]
                                    + [{**items[2], "system": ""}])
    assert set(pooled.system_scores) == {"all"}
    responses = [item["response"] for item in items]
    for n in (1, 2, 3):
        assert pooled.system_scores["all"][f"entropy_{n}"] == pytest.approx(ngram_entropy(responses, n), abs=1e-12)
    assert pooled.system_scores["all"]["mean_fluency"] == pytest.approx(np.mean(pooled.scores["fluency"]), abs=1e-9)
    np.testing.assert_allclose(pooled.scores["fluency"], output.scores["fluency"], atol=1e-6)


def test_dialogue_level_items_get_system_scores(gpt2_model, gpt2_tok):
    metric = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu")
    dialogue = ["hi , how are you ?", "i am fine , thanks .", "do you like tea ?", "yes , with milk ."]
    output = metric.score_dialogues([dialogue])
    turns = metric.score_turns([dialogue[:1], dialogue[:3]], [dialogue[1], dialogue[3]])
    assert output.overall[0] == pytest.approx(np.mean(turns.overall), abs=1e-6)
    assert set(output.system_scores) == {"all"}


def test_cli_nli_checkpoint_only_for_holistic_eval(tmp_path, capsys):
    from hf_dialeval.cli import main

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"context": ["hi"], "response": "one two"}) + "\n")
    assert main(["score", "--metric", "length", "--nli-checkpoint", "x", "--input", str(source)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-dialeval: error: ")
    assert "--nli-checkpoint" in lines[0] and "length" in lines[0]


def test_json_ready_turns_nan_into_null():
    from hf_dialeval.inference.score_output import json_ready

    value = {"scores": {"a": math.nan, "b": 0.5}, "overall": [math.nan, 1.0, {"c": [math.nan, "x"]}],
             "numpy": np.float64("nan"), "flag": True, "none": None, "n": 3}
    assert json_ready(value) == {"scores": {"a": None, "b": 0.5}, "overall": [None, 1.0, {"c": [None, "x"]}],
                                   "numpy": None, "flag": True, "none": None, "n": 3}
    assert json_ready(math.nan) is None and json_ready(math.inf) == math.inf
    assert json.loads(json.dumps(json_ready(value), allow_nan=False))["overall"][2] == {"c": [None, "x"]}


def test_cli_score_writes_consistency_and_system_scores(gpt2_model, gpt2_tok, nli_folder, nli_metric, tmp_path,
                                                        capsys):
    from hf_dialeval.cli import main

    checkpoint = tmp_path / "holistic"
    gpt2_model.save_pretrained(checkpoint)
    gpt2_tok.save_pretrained(checkpoint)
    items = [{"context": ["do you like tea ?", "yes , with milk .", "me too"], "response": "no , i like bread",
              "system": "a"},
             {"context": ["good morning sir"], "response": "good morning", "system": "b"}]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in items))
    assert main(["score", "--metric", "holistic-eval", "--checkpoint", str(checkpoint), "--nli-checkpoint",
                 nli_folder, "--device", "cpu", "--input", str(source), "--output", str(target)]) == 0, \
        capsys.readouterr().err
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    expected = nli_metric.score_items(items)
    assert rows[0]["scores"]["consistency"] == pytest.approx(expected.scores["consistency"][0], abs=1e-5)
    assert rows[1]["scores"]["consistency"] is None  # nan written as null
    assert rows[0]["overall"] == pytest.approx(expected.overall[0], abs=1e-5)
    systems = json.loads((tmp_path / "out.jsonl.systems.json").read_text())
    assert set(systems) == {"a", "b"} and systems["b"]["mean_consistency"] is None
    assert systems["a"]["entropy_1"] == pytest.approx(expected.system_scores["a"]["entropy_1"], abs=1e-12)
    assert systems["a"]["mean_consistency"] == pytest.approx(expected.scores["consistency"][0], abs=1e-5)
    signature = json.loads((tmp_path / "out.jsonl.signature.json").read_text())
    assert nli_folder in json.dumps(signature)


def test_the_output_dict_adds_system_scores_only_when_there_are_some(gpt2_model, gpt2_tok):
    from hf_dialeval.inference.score_output import ScoreOutput, json_ready

    output = HolisticEvalMetric(gpt2_model, gpt2_tok, device="cpu").score_items(
        [{"context": ["hi"], "response": "good morning", "system": "a"}])
    schema = output.to_dict()
    assert schema["system_scores"] == output.system_scores and set(schema["system_scores"]) == {"a"}
    assert set(schema) == {"context_coherence", "fluency", "overall", "truncated", "empty", "signature",
                           "system_scores", "unavailable"}
    assert schema["unavailable"] == {"consistency": output.unavailable["consistency"]}
    assert schema["fluency"] == output.scores["fluency"] and schema["overall"] == output.overall
    plain = ScoreOutput(scores={"length": [2.0]}, overall=[2.0]).to_dict()
    assert "system_scores" not in plain and "unavailable" not in plain
    assert plain == {"length": [2.0], "overall": [2.0], "truncated": [False], "empty": [False], "signature": None}
    # the one serialisation reads back as it was written, through JSON (nan as null)
    back = ScoreOutput.from_dict(json.loads(json.dumps(json_ready(schema))))
    assert back.to_dict().keys() == schema.keys() and back.system_scores == output.system_scores
    assert ScoreOutput.from_records(output.records(), list(output.scores)).overall == output.overall


# ---- the speaker-tags layout of a pretrained LM (a tiny Llama with a byte-level BPE tokenizer) --------------------

TAGGED_TEXTS = ["Hi, how are you?", "I am fine, thanks.", "Do you like tea with milk?", "Yes, I do. What time is it?",
                "It is noon, the train leaves at two."]


def bpe_tokenizer(adds_bos: bool):
    """A byte-level BPE tokenizer (GPT-2's pre-tokenizer: a newline and a tag's colon are tokens of their own), with
    ``<|endoftext|>`` as BOS and EOS; ``adds_bos``: it puts BOS in front of every text, as Gemma's does."""
    from tokenizers.processors import TemplateProcessing

    from hf_dialeval.metrics.holistic_eval.train import train_scratch_tokenizer

    pairs = datasets.Dataset.from_dict({"context": [[text] for text in TAGGED_TEXTS[:-1]],
                                        "response": TAGGED_TEXTS[1:]})
    tokenizer = train_scratch_tokenizer(pairs, 300)
    if adds_bos:
        tokenizer._tokenizer.post_processor = TemplateProcessing(single=f"{BOUNDARY} $A",
                                                                 special_tokens=[(BOUNDARY, tokenizer.bos_token_id)])
    return tokenizer


def tagged_model(tokenizer, detokenize: bool = False) -> HolisticEvalModel:
    torch.manual_seed(0)
    backbone = tiny_config("llama", vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                           eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    config = HolisticEvalConfig(backbone_config=backbone, max_seq_length=64, prompt_format="speaker-tags",
                                detokenize=detokenize, context_coherence_cutoff=CUTOFF, fluency_cutoff=CUTOFF)
    return HolisticEvalModel(config).eval()


@pytest.mark.parametrize("adds_bos", [False, True])
def test_speaker_tags_rows_are_the_tagged_transcript_and_score_the_response_only(adds_bos):
    tokenizer = bpe_tokenizer(adds_bos)
    start = [tokenizer.bos_token_id] if adds_bos else []
    context, response = ["Hi, how are you?", "I am fine, thanks."], "Do you like tea with milk?"
    rows, coherence_rows, truncated = encode_scoring_inputs(
        tokenizer, [context], [response], 64, Layout.of(tokenizer, "speaker-tags"))
    transcript = "A: Hi, how are you?\nB: I am fine, thanks.\nA: Do you like tea with milk?"
    # the rows are what the tokenizer makes of the whole transcript: tags and newlines tokenise on their own
    assert rows["input_ids"][1] == start + ids(tokenizer, transcript)
    assert rows["input_ids"][0] == start + ids(tokenizer, f"A: {response}")  # fluency: the response alone, tagged A
    r = ids(tokenizer, f" {response}")
    assert rows["score_mask"][1] == [0] * (len(rows["input_ids"][1]) - len(r)) + [1] * len(r)
    assert rows["score_mask"][0] == [0] * (len(rows["input_ids"][0]) - len(r)) + [1] * len(r)
    assert coherence_rows == [1] and truncated == [False]
    assert tokenizer.decode([i for i, m in zip(rows["input_ids"][1], rows["score_mask"][1]) if m]) == f" {response}"


def test_speaker_tags_training_sequence_is_the_transcript_and_eos_every_token_a_label():
    tokenizer = ensure_pad_token(bpe_tokenizer(adds_bos=False))
    pairs = datasets.Dataset.from_dict({"context": [["Hi , how are you ?"], []], "response": ["I am fine .", "Yes ."]})
    encoded = encode_training_pairs(tokenizer, pairs, 64, Layout.of(tokenizer, "speaker-tags", detokenize_texts=True))
    eos = tokenizer.eos_token_id
    assert encoded[0]["input_ids"] == ids(tokenizer, "A: Hi, how are you?\nB: I am fine.") + [eos]
    assert encoded[1]["input_ids"] == ids(tokenizer, "A: Yes.") + [eos]  # no query: the reply alone, tagged A
    assert all(row["labels"] == row["input_ids"] for row in encoded)


def test_speaker_tags_scores_equal_a_hand_computation_on_a_tiny_llama():
    tokenizer = ensure_pad_token(bpe_tokenizer(adds_bos=True))
    model = tagged_model(tokenizer, detokenize=True)
    context, response = ["Hi , how are you ?"], "I am fine , thanks ."
    start = [tokenizer.bos_token_id]
    coherence_ids = start + ids(tokenizer, "A: Hi, how are you?\nB: I am fine, thanks.")
    fluency_ids = start + ids(tokenizer, "A: I am fine, thanks.")
    scored = len(ids(tokenizer, " I am fine, thanks."))
    metric = HolisticEvalMetric(model, tokenizer, device="cpu")
    raw = metric.raw_scores([context], [response])
    (coherence,), (fluency,) = raw.coherence, raw.fluency
    first_scored = len(coherence_ids) - scored
    assert coherence == pytest.approx(hand_mean_log_prob(model.lm, coherence_ids, first_scored), abs=1e-5)
    assert fluency == pytest.approx(hand_mean_log_prob(model.lm, fluency_ids, len(fluency_ids) - scored), abs=1e-5)
    # the perplexity reads the same log-probabilities, over the detokenised response's words
    result = language_model_perplexity(model, tokenizer, [context], [response])
    assert result["words"] == 4 and result["tokens"] == scored
    assert result["word_perplexity"] == pytest.approx(math.exp(-coherence * scored / 4), rel=1e-5)


def test_prompt_format_is_checked_and_saved(tmp_path):
    with pytest.raises(ValueError, match="prompt_format must be one of"):
        HolisticEvalConfig(backbone_config=tiny_config("llama"), prompt_format="chat")
    HolisticEvalConfig(backbone_config=tiny_config("llama"), prompt_format="speaker-tags",
                       detokenize=True).save_pretrained(tmp_path)
    again = AutoConfig.from_pretrained(tmp_path)
    assert (again.prompt_format, again.detokenize) == ("speaker-tags", True)


@pytest.mark.parametrize("instructions, expected", [(("avx512_bf16",), torch.bfloat16), ((), torch.float32),
                                                    (None, torch.float32)])
def test_the_config_scoring_dtype_is_the_default_where_the_cpu_computes_it_natively(monkeypatch, gpt2_tok,
                                                                                    instructions, expected):
    from hf_dialeval.inference import model_metric

    monkeypatch.setattr(model_metric, "cpu_bf16_instructions", lambda: instructions)
    model = tiny_gpt2(scoring_dtype="bf16", context_coherence_cutoff=CUTOFF, fluency_cutoff=CUTOFF)
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu")
    assert metric.dtype == expected and metric.settings()["dtype"] == str(expected).removeprefix("torch.")
    assert HolisticEvalMetric(model, gpt2_tok, device="cpu", dtype="fp32").dtype == torch.float32  # asked for
    assert HolisticEvalMetric(tiny_gpt2(), gpt2_tok, device="cpu").dtype == torch.float32  # none in the config
    monkeypatch.setattr(model_metric, "cpu_bf16_instructions", lambda: ("avx512_bf16",))
    with pytest.raises(ValueError, match="not a precision"):
        HolisticEvalMetric(tiny_gpt2(scoring_dtype="int4"), gpt2_tok, device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("family, adapter", [("llama", "lora"), ("gemma3", "factored")])
def test_a_pretrained_causal_lm_trains_into_an_adapter_that_reloads_with_its_scores(family, adapter, data_dir,
                                                                                    tmp_path):
    # a tiny Llama (SmolLM2's family) with LoRA, a tiny Gemma 3 fine-tuned in full and factored into an adapter: the
    # run's adapter folder reloads over the backbone's own weights and scores as the trained model did
    from transformers import AutoModelForCausalLM

    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    tokenizer = ensure_pad_token(bpe_tokenizer(adds_bos=family == "gemma3"))
    torch.manual_seed(0)
    backbone = tmp_path / "backbone"
    AutoModelForCausalLM.from_config(tiny_config(family, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                                 bos_token_id=tokenizer.bos_token_id,
                                                 eos_token_id=tokenizer.eos_token_id)).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    options = {"lora_rank": 4} if adapter == "lora" else {"lora_rank": 0, "adapter_rank": 32}
    args = HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "run"), data_dir=str(data_dir), backbone=str(backbone), prompt_format="speaker-tags",
        detokenize=True, max_steps=3, max_train_items=48, eval_pairs=8, cutoff_pairs=16, test_pairs=8,
        max_seq_length=64, per_device_train_batch_size=8, per_device_eval_batch_size=16, learning_rate=5e-3,
        use_cpu=True, report_to=[], disable_tqdm=True, **options)
    out = train_holistic_eval(args)
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    merged, _ = load_checkpoint("holistic-eval", out)
    reloaded, reloaded_tokenizer = load_checkpoint("holistic-eval", out / "adapter")
    assert reloaded.config.backbone_name_or_path == str(backbone)
    assert (reloaded.config.prompt_format, reloaded.config.detokenize) == ("speaker-tags", True)
    untrained = HolisticEvalModel.from_backbone(str(backbone)).eval()
    contexts, responses = [["Hi , how are you ?"], ["Do you like tea ?"]], ["I am fine .", "Yes , with milk ."]
    scored = [HolisticEvalMetric(model, reloaded_tokenizer, device="cpu").score_turns(contexts, responses)
              for model in (merged, reloaded)]
    assert scored[0].scores == {name: pytest.approx(values, abs=1e-4) for name, values in scored[1].scores.items()}
    assert not torch.allclose(untrained.lm.model.layers[0].self_attn.q_proj.weight,
                              reloaded.lm.model.layers[0].self_attn.q_proj.weight)  # the adapter changed the layers


# ---- context coherence as pointwise mutual information ------------------------------------------------------------

def test_range_normalise_hand_numbers():
    from hf_dialeval.modeling.calibration import range_normalise

    raw = torch.tensor([-2.0, -1.0, 0.0, 1.0, 3.0, 4.0])
    assert range_normalise(raw, -1.0, 3.0).tolist() == pytest.approx([0.0, 0.0, 0.25, 0.5, 1.0, 1.0])
    assert range_normalise(1.0, -1.0, 3.0) == 0.5 and range_normalise(9.0, -1.0, 3.0) == 1.0


def test_pmi_coherence_is_the_likelihood_the_query_adds_between_its_fitted_percentiles(gpt2_tok):
    model = tiny_gpt2(context_coherence_measure="pmi")
    contexts, responses = CONTEXTS, RESPONSES
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu")
    raw = metric.raw_scores(contexts, responses)
    coherence, fluency = raw.coherence, raw.fluency
    pmi = [c - f for c, f in zip(coherence, fluency)]
    cutoffs = fit_cutoffs(model, gpt2_tok, contexts[:5], responses[:5], percentile=10, reference="five pairs")
    fitted = [value for value in pmi[:5] if not math.isnan(value)]
    assert cutoffs["context_coherence"] == pytest.approx(float(np.percentile(fitted, 10)), abs=1e-6)
    assert cutoffs["context_coherence_upper"] == pytest.approx(float(np.percentile(fitted, 90)), abs=1e-6)
    assert model.config.context_coherence_upper_cutoff == cutoffs["context_coherence_upper"]
    low, high = cutoffs["context_coherence"], cutoffs["context_coherence_upper"]
    output = metric.score_turns(contexts, responses)
    for score, value in zip(output.scores["context_coherence"], pmi):
        if math.isnan(value):
            assert math.isnan(score)
        else:
            assert score == pytest.approx(min(max((value - low) / (high - low), 0.0), 1.0), abs=1e-5)
    assert output.scores["fluency"] == pytest.approx(normalise(torch.tensor(fluency), model.config.fluency_cutoff)
                                                     .tolist(), abs=1e-6)  # fluency is Eq. 2 as before
    assert metric.settings()["context_coherence_measure"] == "pmi"


def test_copied_tokens_earn_no_credit(gpt2_tok):
    # a parrot, a loop and a reply of its own, each against the same question
    model = tiny_gpt2(context_coherence_measure="pmi", pmi_weight=0.7, copy_span=4, context_coherence_cutoff=-1.0,
                      context_coherence_upper_cutoff=1.0, fluency_cutoff=CUTOFF)
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu")
    context = ["do you like tea with milk ?"]
    echo, loop, own = "do you like tea with milk ?", "yes , with milk . yes , with milk .", "no , i like bread"
    tokens = metric.scored_tokens([context] * 3, [echo, loop, own])
    assert [len(response) for response in tokens.fluency_tokens] == [7, 10, 5]  # a word a token
    raw = raw_scores_of(model.config, tokens)
    # the echo copies the question whole: nothing of it is its own in context, all of it alone
    assert raw.coherence_share[0] == 0 and math.isnan(raw.coherence[0]) and raw.fluency_share[0] == 1
    # the loop's second half copies its first (five tokens), with the question or without; "with milk" (two) is
    # no copy of the question
    assert raw.coherence_share[1] == raw.fluency_share[1] == 0.5
    first_half = tokens.fluency_log_probs[1][:5]
    assert raw.fluency[1] == pytest.approx(sum(first_half) / 5, abs=1e-9)
    assert raw.coherence[1] == pytest.approx(sum(tokens.coherence_log_probs[1][:5]) / 5, abs=1e-9)
    assert raw.fluency_of_coherence_tokens[1] == pytest.approx(raw.fluency[1], abs=1e-9)
    assert raw.coherence_share[2] == raw.fluency_share[2] == 1
    output = metric.score_turns([context] * 3, [echo, loop, own])
    coherence, fluency = output.scores["context_coherence"], output.scores["fluency"]
    assert coherence[0] == 0.0  # a copied token counts as one at the cutoff
    assert fluency[1] == pytest.approx(0.5 * float(normalise(torch.tensor(raw.fluency[1]), CUTOFF)), abs=1e-6)
    pmi = raw.coherence[1] - 0.7 * raw.fluency[1]
    assert coherence[1] == pytest.approx(0.5 * min(max((pmi + 1.0) / 2.0, 0.0), 1.0), abs=1e-9)
    assert metric.settings()["copy_span"] == 4  # the scores' signature says how copies were scored
    # without a copy span every token is scored, as in the paper
    model.config.copy_span = 0
    raw = raw_scores_of(model.config, tokens)
    assert raw.coherence_share == raw.fluency_share == [1.0] * 3
    assert raw.fluency[1] == pytest.approx(sum(tokens.fluency_log_probs[1]) / 10, abs=1e-9)


def test_diversity_is_the_replys_own_entropy_and_overall_weighs_the_dialogue_as_much_as_the_reply(gpt2_tok):
    model = tiny_gpt2(context_coherence_cutoff=CUTOFF, fluency_cutoff=CUTOFF, diversity_cutoff=0.5,
                      diversity_upper_cutoff=2.5)
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu")
    assert metric.dimensions == ("context_coherence", "fluency", "diversity")
    output = metric.score_turns(CONTEXTS, RESPONSES)
    for item, response in enumerate(RESPONSES):
        assert output.scores["diversity"][item] == pytest.approx(
            min(max((response_entropy(response) - 0.5) / 2.0, 0.0), 1.0), abs=1e-9)
        coherence, fluency, diversity = (output.scores[name][item] for name in metric.dimensions)
        alone = (fluency + diversity) / 2
        assert output.overall[item] == pytest.approx(alone if math.isnan(coherence) else (coherence + alone) / 2,
                                                     abs=1e-9)
    assert output.scores["diversity"][5] == 0.0  # "no": one word, no entropy
    with pytest.raises(ValueError, match="diversity_cutoff"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2"), diversity_cutoff=1.0)


def test_pmi_weight_keeps_part_of_the_response_likelihood_and_its_cutoffs_are_fitted_for_it(gpt2_tok):
    model = tiny_gpt2(context_coherence_measure="pmi", pmi_weight=0.7)
    metric = HolisticEvalMetric(model, gpt2_tok, device="cpu")
    raw = metric.raw_scores(CONTEXTS, RESPONSES)
    coherence, fluency = raw.coherence, raw.fluency
    weighted = [c - 0.7 * f for c, f in zip(coherence, fluency)]
    assert not any(math.isclose(w, c - f) for w, c, f in zip(weighted, coherence, fluency) if not math.isnan(w))
    cutoffs = fit_cutoffs(model, gpt2_tok, CONTEXTS, RESPONSES, percentile=10, reference="the pairs")
    fitted = [value for value in weighted if not math.isnan(value)]
    assert cutoffs["context_coherence"] == pytest.approx(float(np.percentile(fitted, 10)), abs=1e-6)
    assert cutoffs["context_coherence_upper"] == pytest.approx(float(np.percentile(fitted, 90)), abs=1e-6)
    low, high = cutoffs["context_coherence"], cutoffs["context_coherence_upper"]
    scores = metric.score_turns(CONTEXTS, RESPONSES).scores["context_coherence"]
    for score, value in zip(scores, weighted):
        assert math.isnan(score) if math.isnan(value) else score == pytest.approx(
            min(max((value - low) / (high - low), 0.0), 1.0), abs=1e-5)
    assert metric.settings()["pmi_weight"] == 0.7
    for weight in (1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match="pmi_weight must be in \\[0, 1\\]"):
            HolisticEvalConfig(backbone_config=tiny_config("gpt2"), context_coherence_measure="pmi",
                               pmi_weight=weight)


def test_pmi_config_checks_its_cutoffs_and_names_what_to_fit(gpt2_tok):
    with pytest.raises(ValueError, match="context_coherence_measure must be one of"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2"), context_coherence_measure="ratio")
    with pytest.raises(ValueError, match="the lower below the upper"):
        HolisticEvalConfig(backbone_config=tiny_config("gpt2"), context_coherence_measure="pmi",
                           context_coherence_cutoff=1.0, context_coherence_upper_cutoff=-1.0)
    # a PMI's lower percentile may be positive; a log-probability's may not
    assert HolisticEvalConfig(backbone_config=tiny_config("gpt2"), context_coherence_measure="pmi",
                              context_coherence_cutoff=0.5, context_coherence_upper_cutoff=2.0).cutoff(
                                  "context_coherence") == 0.5
    model = tiny_gpt2(context_coherence_measure="pmi", context_coherence_cutoff=-1.0, fluency_cutoff=CUTOFF)
    with pytest.raises(ValueError, match="no context_coherence_upper_cutoff: fit the percentiles"):
        HolisticEvalMetric(model, gpt2_tok, device="cpu").score_turns([["hi"]], ["hi sir"])


def test_a_continued_model_keeps_its_settings_unless_an_option_gives_one(tmp_path):
    # a run continued with --init-from (the shipped default's route to a new domain) must not fall back to a new
    # model's prompt format or measure: only the settings given change
    from hf_dialeval.metrics.holistic_eval.train import HolisticEvalTrainingArguments, train_holistic_eval

    source = tmp_path / "mine.jsonl"
    source.write_text("".join(json.dumps({"dialogue": [f"hi {i} .", "hello .", "tea ?", f"yes {i % 5} ."]}) + "\n"
                              for i in range(24)))
    tiny = dict(dialogues=str(source), max_steps=1, eval_pairs=4, test_pairs=0, cutoff_pairs=8,
                per_device_train_batch_size=8, use_cpu=True, report_to=[], disable_tqdm=True)
    first = train_holistic_eval(HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "first"), from_scratch=True, scratch_vocab_size=300, scratch_layers=1,
        scratch_hidden_size=16, scratch_heads=2, max_seq_length=48, prompt_format="speaker-tags", detokenize=True,
        context_coherence_measure="pmi", pmi_weight=0.7, token_reduction="sum", **tiny))
    kept = train_holistic_eval(HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "kept"), init_from=str(first), lora_rank=0, **tiny))
    changed = train_holistic_eval(HolisticEvalTrainingArguments(
        output_dir=str(tmp_path / "changed"), init_from=str(first), lora_rank=0, pmi_weight=0.5, **tiny))
    settings = ("prompt_format", "detokenize", "context_coherence_measure", "pmi_weight", "token_reduction",
                "max_seq_length", "percentile")
    expected = {"prompt_format": "speaker-tags", "detokenize": True, "context_coherence_measure": "pmi",
                "pmi_weight": 0.7, "token_reduction": "sum", "max_seq_length": 48, "percentile": 5.0}
    # with --dialogues, the pmi measure's weight left out is refitted on the held-out dialogues
    refit = json.loads((kept / "training_record.json").read_text())["pmi_weight_refit"]["pmi_weight"]
    assert {name: getattr(AutoConfig.from_pretrained(kept), name) for name in settings} == expected | {
        "pmi_weight": refit}
    assert {name: getattr(AutoConfig.from_pretrained(changed), name) for name in settings} == expected | {
        "pmi_weight": 0.5}
    with pytest.raises(OptionError, match="--pmi-weight weighs the pmi measure"):
        HolisticEvalTrainingArguments(output_dir=str(tmp_path / "new"), pmi_weight=0.5, use_cpu=True
                                      ).check_before_training()
