"""Dial-M (Dey & Desarkar 2023): the keywords (YAKE! + POS tags, the all-words fallback) and the tokenizer words
they map to, the pair layout and its truncation, the keyword-masked copies of Eq. 1, the model's per-input
cross-entropy against a hand computation, the metric (Eq. 1, batching, empty responses, conditions, the
context-gain variant, truncation), both training stages in miniature on the real corpora (and the adapter of a run),
the evaluate module and the Auto-class round trip.

Two tokenizer families: BERT's WordPiece (the offline MiniLM's, ``[CLS] a [SEP] b [SEP]`` with segment ids) and a
tiny byte-level BPE RoBERTa tokenizer trained here (``<s> a </s></s> b </s>``, no segment ids); both gain ``<eou>``.
Models are tiny and random (hidden 32, two layers)."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import datasets
import evaluate
import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, BertConfig, RobertaConfig

import hf_dialeval  # noqa: F401  (registers Dial-M with the Auto classes)
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.transcripts import Layout
from hf_dialeval.metrics.dial_m import scoring as dial_m_scoring
from hf_dialeval.metrics.dial_m.configuration_dial_m import DialMConfig
from hf_dialeval.metrics.dial_m.data import (
    PairLayout,
    add_eou_token,
    causal_keyword_rows,
    layout_causal_turn,
    layout_turn,
    masked_keyword_copies,
    scored_keywords,
)
from hf_dialeval.metrics.dial_m.keywords import (
    KEYWORD_POS_TAGS,
    MAX_KEYWORDS,
    KeywordSpan,
    extract_keywords,
    keyword_spans,
    tokenizer_words,
)
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel, masked_token_losses
from hf_dialeval.metrics.dial_m.paper import PAPER_RESULTS
from hf_dialeval.metrics.dial_m.scoring import LOWEST_SCORE, DialMMetric, KeywordLoss, keyword_scores
from hf_dialeval.metrics.dial_m.training_data import (
    HELD_OUT_BENCHMARKS,
    TURN_FEATURES,
    dialogue_turns,
    encode_causal_keyword_training,
    encode_keyword_masking,
    encode_lm_windows,
    encode_mlm_windows,
    load_training_dialogues,
)
from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID
from hf_dialeval.publishing import export_models
from hf_dialeval.training.truncation import UTTERANCE_END

from conftest import causal_tokenizer, save_tiny_bert

FAMILIES = ("bert", "roberta")
#: Words of the tiny RoBERTa tokenizer's training sentences (words outside them split into several byte pieces).
WORDS = ("hi how are you today i am fine thanks do like tea yes with milk the train leaves at noon good morning sir "
         "can help me want to buy some bread sure here go that costs two dollars too much see later bye nice day "
         "weather sunny rain my three kids love mint chocolate chip ok what time is it and more").split()

CONTEXTS = [["hi , how are you ?"], ["what time is it ?", "it is noon ."], [], ["do you like tea ?"]]
RESPONSES = ["my kids love mint chocolate chip !", "the train leaves at two", "ok !", "yes , with milk ."]


# ---- tokenizers and tiny models ------------------------------------------------------------------------------------

def roberta_tokenizer():
    """A byte-level BPE tokenizer with RoBERTa's specials and pair format, trained on a few hundred sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaTokenizerFast

    rng = random.Random(0)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(12)) + rng.choice([" .", " ?", " !", " ,"])
                 for _ in range(300)]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(sentences, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                          add_prefix_space=False)
    return RobertaTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                model_max_length=512)


def bert_tokenizer():
    return AutoTokenizer.from_pretrained(resolve_backbone_path(MINILM_HUB_ID))


def with_eou(tokenizer):
    eou, added = add_eou_token(tokenizer, "<eou>")
    assert added and eou == len(tokenizer) - 1 and tokenizer.convert_ids_to_tokens(eou) == "<eou>"
    return tokenizer


@pytest.fixture(scope="module")
def bert_tok():
    return with_eou(bert_tokenizer())


@pytest.fixture(scope="module")
def roberta_tok():
    return with_eou(roberta_tokenizer())


def tiny_dial_m(tokenizer, family: str, seed: int = 0, **config_kwargs) -> DialMModel:
    common = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=37, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  initializer_range=0.3)  # wide weights: the context and condition visibly move the losses
    if family == "bert":
        backbone = BertConfig(max_position_embeddings=512, **common)
    else:
        backbone = RobertaConfig(max_position_embeddings=520, pad_token_id=tokenizer.pad_token_id, bos_token_id=0,
                                 eos_token_id=2, **common)
    torch.manual_seed(seed)
    config = DialMConfig(backbone_config=backbone, eou_token_id=tokenizer.convert_tokens_to_ids("<eou>"),
                         eou_token_added=True, **config_kwargs)
    return DialMModel(config).eval()


@pytest.fixture(scope="module")
def bert_model(bert_tok):
    return tiny_dial_m(bert_tok, "bert")


@pytest.fixture(scope="module")
def roberta_model(roberta_tok):
    return tiny_dial_m(roberta_tok, "roberta")


@pytest.fixture(params=FAMILIES)
def family(request):
    """``(family, tokenizer, model)`` of each family."""
    name = request.param
    return name, request.getfixturevalue(f"{name}_tok"), request.getfixturevalue(f"{name}_model")


@pytest.fixture(params=(*FAMILIES, "llama", "gemma3"))
def any_family(request):
    """``(family, tokenizer, model)`` of each family, the masked LMs' and the causal LMs'."""
    name = request.param
    if name in FAMILIES:
        return name, request.getfixturevalue(f"{name}_tok"), request.getfixturevalue(f"{name}_model")
    tokenizer = causal_tokenizer(name)
    return name, tokenizer, tiny_causal_dial_m(name, tokenizer)


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_tiny_roberta_tokenizer_has_roberta_pair_format(roberta_tok):
    pair = roberta_tok("a", "b")
    assert roberta_tok.convert_ids_to_tokens(pair["input_ids"]) == ["<s>", "a", "</s>", "</s>", "b", "</s>"]
    assert "token_type_ids" not in pair or not any(pair["token_type_ids"])
    assert (roberta_tok.pad_token_id, roberta_tok.mask_token_id) == (1, 4) and roberta_tok.is_fast


# ---- keywords ------------------------------------------------------------------------------------------------------

def test_keywords_of_a_known_sentence():
    text = "my three kids love mint chocolate chip !"
    keywords = extract_keywords(text)
    assert {"kids", "mint", "chocolate", "chip"} <= set(keywords)
    assert "my" not in keywords and "!" not in keywords  # no stop words, no punctuation
    assert all(k == k.lower() for k in keywords) and len(set(keywords)) == len(keywords)
    # YAKE!'s keywords come first, the POS-tagged words after them
    yake_only = extract_keywords(text, pos_tags=())
    assert yake_only and keywords[: len(yake_only)] == yake_only
    # best first: a smaller budget keeps the head of the list
    assert extract_keywords(text, max_keywords=2) == keywords[:2]
    assert extract_keywords(text, max_keywords=1) == keywords[:1]
    assert extract_keywords("Yes , I cook pasta every Sunday .") == ["sunday", "cook", "pasta"]  # lower-cased
    assert (MAX_KEYWORDS, KEYWORD_POS_TAGS[:3]) == (20, ("NN", "NNP", "NNS")) and len(KEYWORD_POS_TAGS) == 14


def test_keywords_are_extracted_once_per_response_and_callers_get_their_own_list():
    text = "we hiked the glacier trail near the old lighthouse"
    first = extract_keywords(text)
    first.append("edited by the caller")
    assert extract_keywords(text) == first[:-1]
    # a list of pos tags keys the same cache entry as the tuple
    assert extract_keywords(text, pos_tags=list(KEYWORD_POS_TAGS)) == first[:-1]


def test_keywords_of_nothing_and_of_non_text():
    assert extract_keywords("") == [] and extract_keywords("   \n") == []
    assert extract_keywords("ok !") == []
    for value in (None, 3, ["tea"]):
        with pytest.raises(TypeError, match="takes a str"):
            extract_keywords(value)
    with pytest.raises(ValueError, match="max_keywords"):
        extract_keywords("tea", max_keywords=0)


def test_keyword_spans_fall_back_to_every_word_with_a_letter_or_digit(bert_tok):
    _, words = tokenizer_words(bert_tok, "ok !")
    assert [w.word for w in words] == ["ok", "!"]
    assert keyword_spans(words, extract_keywords("ok !")) == [KeywordSpan("ok", (0,))]
    _, punctuation = tokenizer_words(bert_tok, "! ?")
    assert keyword_spans(punctuation, []) == punctuation  # no word with a letter or digit: every word
    _, numbers = tokenizer_words(bert_tok, "2 , 3 !")
    assert [s.word for s in keyword_spans(numbers, [])] == ["2", "3"]
    assert keyword_spans([], ["tea"]) == []


def test_keyword_spans_are_the_matching_words_in_response_order(bert_tok, roberta_tok):
    text = "Yes , I cook pasta every Sunday ."  # the evaluate module's example
    for tokenizer in (bert_tok, roberta_tok):
        _, words = tokenizer_words(tokenizer, text)
        assert [s.word for s in keyword_spans(words, extract_keywords(text))] == ["cook", "pasta", "Sunday"]


def test_every_occurrence_of_a_keyword_is_its_own_span(bert_tok, roberta_tok):
    text = "tea , tea and more Tea"
    assert extract_keywords(text) == ["tea"]
    for tokenizer in (bert_tok, roberta_tok):
        token_ids, words = tokenizer_words(tokenizer, text)
        spans = keyword_spans(words, ["tea"])
        assert [s.word for s in spans] == ["tea", "tea", "Tea"]
        positions = [p for s in spans for p in s.token_positions]
        assert len(set(positions)) == len(positions)  # three disjoint spans
        assert [tokenizer.decode([token_ids[p] for p in s.token_positions]).strip().lower() for s in spans] == \
            ["tea"] * 3


def test_tokenizer_words_bert_wordpiece(bert_tok):
    text = "Snowboarding is fun , chocolate-chip !"
    token_ids, words = tokenizer_words(bert_tok, text)
    assert token_ids == ids(bert_tok, text)
    assert [w.word for w in words] == ["Snowboarding", "is", "fun", ",", "chocolate", "-", "chip", "!"]
    snow = words[0]
    assert bert_tok.convert_ids_to_tokens([token_ids[p] for p in snow.token_positions]) == ["snow", "##boarding"]
    assert snow.token_positions == (0, 1) and words[1].token_positions == (2,)
    # the words cover every token exactly once, in order
    assert [p for w in words for p in w.token_positions] == list(range(len(token_ids)))
    for word in words:
        assert bert_tok.decode([token_ids[p] for p in word.token_positions]) == word.word.lower()


def test_tokenizer_words_roberta_bpe(roberta_tok):
    text = "my zebra loves mint chocolate !"
    token_ids, words = tokenizer_words(roberta_tok, text)
    assert token_ids == ids(roberta_tok, text)
    assert [w.word for w in words] == ["my", "zebra", "loves", "mint", "chocolate", "!"]
    assert [p for w in words for p in w.token_positions] == list(range(len(token_ids)))
    zebra = words[1]
    assert len(zebra.token_positions) > 1  # an unseen word: several byte-level pieces
    for index, word in enumerate(words):
        decoded = roberta_tok.decode([token_ids[p] for p in word.token_positions])
        assert decoded.strip() == word.word and not word.word.startswith(" ")
        # the leading space lives in the word's first token (the first word has none)
        assert decoded.startswith(" ") == (index > 0)


def test_tokenizer_words_needs_a_fast_tokenizer():
    class SlowTokenizer:  # transformers 5 has no slow BERT tokenizer left: a stand-in without word ids
        is_fast = False

    with pytest.raises(ValueError, match="SlowTokenizer is a slow tokenizer"):
        tokenizer_words(SlowTokenizer(), "hi")


# ---- layout --------------------------------------------------------------------------------------------------------

def test_pair_layout_bert(bert_tok):
    layout = PairLayout.of(bert_tok)
    cls, sep = bert_tok.cls_token_id, bert_tok.sep_token_id
    assert layout == PairLayout((cls,), (sep,), (sep,), True)
    a, b = ids(bert_tok, "hi there"), ids(bert_tok, "i like tea")
    joined, types = layout.join(a, b)
    pair = bert_tok("hi there", "i like tea")
    assert joined == pair["input_ids"] == [cls, *a, sep, *b, sep]
    assert types == pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert layout.join(a, None) == ([cls, *a, sep], [0] * (len(a) + 2))
    assert layout.join(a, []) == layout.join(a, None)  # an empty second segment is none
    assert (layout.overhead(False), layout.overhead(True)) == (2, 3)


def test_pair_layout_roberta(roberta_tok):
    layout = PairLayout.of(roberta_tok)
    assert layout == PairLayout((0,), (2, 2), (2,), False)
    a, b = ids(roberta_tok, "hi there"), ids(roberta_tok, "i like tea")
    joined, types = layout.join(a, b)
    assert joined == roberta_tok("hi there", "i like tea")["input_ids"] == [0, *a, 2, 2, *b, 2]
    assert types == [0] * len(joined)
    assert layout.join(a, None) == ([0, *a, 2], [0] * (len(a) + 2))
    assert (layout.overhead(False), layout.overhead(True)) == (2, 4)


# Token ids written out: <s>=0, </s>=2, <eou>=9; context [[11, 12, 13], [21, 22, 23]], response [31, 32],
# condition [41, 42, 43]. Overhead with a condition: <s> + </s></s> + </s> = 4, and the response's <eou>.
ROBERTA_LAYOUT = PairLayout((0,), (2, 2), (2,), False)
OLDER, PREVIOUS, RESPONSE, CONDITION = [11, 12, 13], [21, 22, 23], [31, 32], [41, 42, 43]


@pytest.mark.parametrize("max_length, first, condition, truncated", [
    (20, [11, 12, 13, 9, 21, 22, 23, 9], CONDITION, False),  # everything fits (18 tokens)
    (18, [11, 12, 13, 9, 21, 22, 23, 9], CONDITION, False),  # exactly
    (17, [12, 13, 9, 21, 22, 23, 9], CONDITION, True),  # the oldest utterance's start goes first
    (14, [21, 22, 23, 9], CONDITION, True),  # then all of the older context
    (13, [21, 22, 23, 9], [41, 42], True),  # then the condition's end
    (11, [21, 22, 23, 9], [], True),  # the whole condition (no second segment left)
    (9, [23, 9], [], True),  # then the previous utterance's start
    (7, [], [], True),  # nothing but the response
])
def test_layout_turn_cuts_oldest_context_then_condition_end_then_previous_start(max_length, first, condition,
                                                                                truncated):
    turn = layout_turn(ROBERTA_LAYOUT, 9, [OLDER, PREVIOUS], RESPONSE, CONDITION, max_length)
    expected = [0, *first, *RESPONSE, 9, *([2, 2, *condition] if condition else []), 2]
    assert turn.input_ids == expected and len(turn.input_ids) <= max_length
    assert turn.token_type_ids == [0] * len(expected)
    assert turn.truncated is truncated
    assert turn.response_length == 2 and turn.input_ids[turn.response_start : turn.response_start + 2] == RESPONSE


def test_layout_turn_cuts_the_response_only_when_it_alone_does_not_fit():
    response = list(range(31, 41))  # 10 tokens
    turn = layout_turn(ROBERTA_LAYOUT, 9, [OLDER, PREVIOUS], response, CONDITION, 9)
    # budget 9 − 4 − 1 = 4 response tokens, nothing else
    assert turn.input_ids == [0, 31, 32, 33, 34, 9, 2] and turn.response_start == 1
    assert turn.response_length == 4 and turn.truncated
    alone = layout_turn(ROBERTA_LAYOUT, 9, [], response, None, 13)  # 10 + <eou> + <s> + </s>: fits
    assert alone.input_ids == [0, *response, 9, 2] and not alone.truncated and alone.response_length == 10
    cut = layout_turn(ROBERTA_LAYOUT, 9, [], response, None, 12)
    assert cut.input_ids == [0, *response[:9], 9, 2] and cut.truncated and cut.response_length == 9


def test_layout_turn_bert_types_and_no_context(bert_tok):
    layout = PairLayout.of(bert_tok)
    eou = bert_tok.convert_tokens_to_ids("<eou>")
    context, response, condition = ids(bert_tok, "do you like tea ?"), ids(bert_tok, "yes"), ids(bert_tok, "i do")
    turn = layout_turn(layout, eou, [context], response, condition, 64)
    assert bert_tok.convert_ids_to_tokens(turn.input_ids) == [
        "[CLS]", "do", "you", "like", "tea", "?", "<eou>", "yes", "<eou>", "[SEP]", "i", "do", "[SEP]"]
    assert turn.token_type_ids == [0] * 10 + [1] * 3
    assert turn.response_start == 7 and not turn.truncated
    alone = layout_turn(layout, eou, [], response, None, 64)
    assert bert_tok.convert_ids_to_tokens(alone.input_ids) == ["[CLS]", "yes", "<eou>", "[SEP]"]
    assert alone.response_start == 1 and alone.token_type_ids == [0] * 4


# ---- keyword-masked copies (Eq. 1's inputs) ------------------------------------------------------------------------

def test_masked_keyword_copies(family):
    name, tokenizer, model = family
    eou = model.config.eou_token_id
    contexts = [["hi , how are you ?", "fine ."], ["do you like tea ?"], ["hi"]]
    responses = ["tea , tea and mint chocolate", "", "ok !"]
    conditions = ["i like tea .", None, None]
    copies = masked_keyword_copies(tokenizer, contexts, responses, conditions, eou, 128, 20, KEYWORD_POS_TAGS)
    response_ids, words = tokenizer_words(tokenizer, responses[0])
    spans = keyword_spans(words, extract_keywords(responses[0]))
    assert [s.word for s in spans] == ["tea", "tea", "mint", "chocolate"]
    # one copy per keyword occurrence; the empty response has none; "ok !" masks its one word
    assert copies.owners == [0, 0, 0, 0, 2] and copies.words == ["tea", "tea", "mint", "chocolate", "ok"]
    assert copies.truncated == [False, False, False]
    assert set(copies.rows) == {"input_ids", "token_type_ids", "labels"}
    layout = PairLayout.of(tokenizer)
    turn = layout_turn(layout, eou, [ids(tokenizer, u) for u in contexts[0]], response_ids,
                       ids(tokenizer, conditions[0]), 128)
    for copy, span in zip(range(4), spans):
        masked = {turn.response_start + p for p in span.token_positions}
        input_ids, labels = copies.rows["input_ids"][copy], copies.rows["labels"][copy]
        assert len(input_ids) == len(labels) == len(turn.input_ids)
        assert copies.rows["token_type_ids"][copy] == turn.token_type_ids
        for position, (original, token, label) in enumerate(zip(turn.input_ids, input_ids, labels)):
            if position in masked:
                assert token == tokenizer.mask_token_id and label == original
            else:
                assert token == original and label == -100
    assert tokenizer.decode([copies.rows["labels"][2][p] for p in range(len(turn.input_ids))
                             if copies.rows["labels"][2][p] != -100]).strip() == "mint"
    if name == "bert":  # the condition is segment B
        assert 1 in copies.rows["token_type_ids"][0] and not any(copies.rows["token_type_ids"][4])


def test_masked_keyword_copies_of_nothing(bert_tok, bert_model):
    copies = masked_keyword_copies(bert_tok, [["hi"]], [""], [None], bert_model.config.eou_token_id, 64, 20,
                                   KEYWORD_POS_TAGS)
    assert copies.owners == [] and copies.words == [] and copies.rows["input_ids"] == []
    assert copies.truncated == [False]


# ---- the model -----------------------------------------------------------------------------------------------------

def test_masked_token_losses_average_each_rows_tokens():
    token_losses = torch.tensor([1.0, 3.0, 5.0])
    losses = masked_token_losses(token_losses, torch.tensor([0, 0, 2]), 3)
    assert losses[0].item() == 2.0 and losses[2].item() == 5.0
    assert math.isnan(losses[1].item())  # a row without a label


def test_the_vocabulary_projection_at_labelled_positions_equals_the_full_masked_lm(family):
    _, tokenizer, model = family
    input_ids = torch.tensor([tokenizer("hi , how are you ?", "i like tea .")["input_ids"]])
    labels = torch.full_like(input_ids, -100)
    labels[0, 3] = input_ids[0, 3]
    input_ids[0, 3] = tokenizer.mask_token_id
    with torch.no_grad():
        full = model.mlm(input_ids=input_ids, labels=labels)
        ours = model(input_ids=input_ids, labels=labels)
    assert ours.loss.item() == pytest.approx(full.loss.item(), abs=1e-5)
    assert ours.logits is None  # given labels, the losses come back, not a vocabulary-wide row per label


def _three_masked_tokens_a_row(tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """Two rows of one pair, three tokens of each masked and labelled (positions 2–4 and 3–5)."""
    input_ids = torch.tensor([tokenizer("hi , how are you ?", "i like tea .")["input_ids"]] * 2)
    labels = torch.full_like(input_ids, -100)
    labels[0, 2:5], labels[1, 3:6] = input_ids[0, 2:5], input_ids[1, 3:6]
    input_ids[labels != -100] = tokenizer.mask_token_id
    return input_ids, labels


def test_labelled_positions_are_projected_a_bounded_chunk_at_a_time(family, monkeypatch):
    # a degenerate reply (one keyword said hundreds of times) labels hundreds of rows, each a vocabulary wide: one
    # row per chunk must give the same losses as the whole batch at once, and both the masked LM's own
    from hf_dialeval.modeling import lm_head

    _, tokenizer, model = family
    input_ids, labels = _three_masked_tokens_a_row(tokenizer)
    with torch.no_grad():
        whole = model(input_ids=input_ids, labels=labels).scores
        monkeypatch.setattr(lm_head, "MAX_LOGITS", model.backbone.config.vocab_size)
        chunked = model(input_ids=input_ids, labels=labels).scores
        log_probs = torch.log_softmax(model.mlm(input_ids=input_ids).logits.double(), -1)
    expected = [-log_probs[row, positions, labels[row, positions]].mean().item()
                for row, positions in ((0, torch.arange(2, 5)), (1, torch.arange(3, 6)))]
    # a matrix product's summation order depends on its shape on some CPUs: the chunks may differ in the last bits
    torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-6)
    assert whole.tolist() == pytest.approx(expected, abs=1e-5)


def test_training_keeps_no_chunk_of_logits_for_the_backward_pass_and_gets_the_same_gradients(family, monkeypatch):
    # every chunk's vocabulary-wide logits held for the backward pass at once added to what took Dial-M's adaptation
    # past 4 GB: they are computed again there, a chunk at a time, and the gradients are those of the whole projection
    from hf_dialeval.modeling import lm_head

    _, tokenizer, model = family
    input_ids, labels = _three_masked_tokens_a_row(tokenizer)
    vocab = model.backbone.config.vocab_size

    def loss_and_gradients(loss_of) -> tuple[float, list[torch.Tensor], int]:
        model.zero_grad()
        widest = 0

        def keep(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal widest
            widest = max(widest, tensor.shape[-1] if tensor.dim() else 0)
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
            loss = loss_of()
        loss.backward()
        return loss.item(), [p.grad.clone() for p in model.parameters() if p.grad is not None], widest

    monkeypatch.setattr(lm_head, "MAX_LOGITS", vocab)  # a chunk a row
    ours, our_gradients, our_widest = loss_and_gradients(lambda: model(input_ids=input_ids, labels=labels).loss)
    full, full_gradients, full_widest = loss_and_gradients(lambda: model.mlm(input_ids=input_ids, labels=labels).loss)
    assert full_widest == vocab and our_widest < vocab
    assert ours == pytest.approx(full, abs=1e-5)
    assert len(our_gradients) == len(full_gradients)
    for mine, theirs in zip(our_gradients, full_gradients):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


def test_model_scores_and_loss_equal_a_hand_computation(family):
    _, tokenizer, model = family
    input_ids = torch.tensor([tokenizer("hi , how are you ?", "i like tea .")["input_ids"]] * 2)
    original = input_ids.clone()
    labels = torch.full_like(input_ids, -100)
    for row, positions in ((0, [2, 3]), (1, [5])):
        labels[row, positions] = original[row, positions]
        input_ids[row, positions] = tokenizer.mask_token_id
    with torch.no_grad():
        output = model(input_ids=input_ids, labels=labels)
        logits = model.mlm(input_ids=input_ids).logits.double()
        assert torch.equal(model(input_ids=input_ids).logits, logits.float())  # no labels: logits only
    assert model(input_ids=input_ids).loss is None
    terms = {row: [-torch.log_softmax(logits[row, p], -1)[original[row, p]].item() for p in positions]
             for row, positions in ((0, [2, 3]), (1, [5]))}
    assert output.scores.dtype == torch.float32 and output.scores.shape == (2,)
    assert output.scores.tolist() == pytest.approx([sum(terms[0]) / 2, terms[1][0]], abs=1e-5)
    everything = terms[0] + terms[1]
    assert output.loss.item() == pytest.approx(sum(everything) / 3, abs=1e-5)  # per token, not per row
    # a row without labels: nan score, and the loss over the other rows' tokens
    labels[1] = -100
    with torch.no_grad():
        partial = model(input_ids=input_ids, labels=labels)
    assert math.isnan(partial.scores[1].item()) and partial.loss.item() == pytest.approx(sum(terms[0]) / 2, abs=1e-5)


def test_config_checks_and_round_trips(tmp_path, bert_model):
    with pytest.raises(ValueError, match="max_keywords"):
        DialMConfig(max_keywords=0)
    defaults = DialMConfig()
    assert (defaults.eou_token, defaults.eou_token_id, defaults.eou_token_added, defaults.max_keywords,
            defaults.max_seq_length) == ("<eou>", None, False, 20, 512)
    assert defaults.keyword_pos_tags == list(KEYWORD_POS_TAGS)
    bert_model.config.save_pretrained(tmp_path)
    again = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(again, DialMConfig) and again.backbone_config.model_type == "bert"
    assert (again.eou_token_id, again.eou_token_added) == (bert_model.config.eou_token_id, True)
    assert bert_model.added_token_ids() == [bert_model.config.eou_token_id]
    assert bert_model.head_names() == ["mlm.cls.predictions.transform"]


def test_add_eou_token_without_a_token_uses_the_separator(bert_tok, roberta_tok):
    assert add_eou_token(bert_tok, None) == (bert_tok.sep_token_id, False)
    assert add_eou_token(roberta_tok, None) == (2, False)
    assert add_eou_token(bert_tok, "<eou>") == (bert_tok.convert_tokens_to_ids("<eou>"), False)  # already there


# ---- the metric ----------------------------------------------------------------------------------------------------

def hand_keyword_loss(model, tokenizer, context: list[str], response: str, word: str) -> float:
    """The mean cross-entropy of ``word``'s tokens, masked in ``<cls> context <eou> response <eou> <sep>``: the
    input written out, the softmax taken here in float64."""
    eou = model.config.eou_token_id
    layout = PairLayout.of(tokenizer)
    response_ids, words = tokenizer_words(tokenizer, response)
    span = next(w for w in words if w.word == word)
    first = [t for u in context for t in (*ids(tokenizer, u), eou)]
    start = len(layout.prefix) + len(first)
    input_ids = [*layout.prefix, *first, *response_ids, eou, *layout.suffix]
    masked = list(input_ids)
    for p in span.token_positions:
        masked[start + p] = tokenizer.mask_token_id
    with torch.no_grad():
        logits = model.mlm(input_ids=torch.tensor([masked])).logits[0].double()
    terms = [-torch.log_softmax(logits[start + p], -1)[input_ids[start + p]].item() for p in span.token_positions]
    return sum(terms) / len(terms)


def test_metric_is_minus_eq_1(family):
    _, tokenizer, model = family
    metric = DialMMetric(model, tokenizer, device="cpu", batch_size=3)
    assert metric.dimensions == ("dial_m",) and metric.lowest_score == LOWEST_SCORE == -100.0
    found, truncated = metric.keyword_losses(CONTEXTS, RESPONSES)
    assert [[k.word for k in keywords] for keywords in found] == [
        ["kids", "love", "mint", "chocolate", "chip"], ["train", "leaves"], ["ok"], ["milk"]]
    assert truncated == [False] * 4
    output = metric.score_turns(CONTEXTS, RESPONSES)
    losses, _ = metric.losses(CONTEXTS, RESPONSES)
    for i, keywords in enumerate(found):
        mean = sum(k.loss for k in keywords) / len(keywords)
        assert losses[i] == pytest.approx(mean, abs=1e-9)
        assert output.scores["dial_m"][i] == pytest.approx(-mean, abs=1e-9) == output.overall[i]
        assert 0 < mean < 30  # a real loss of a random model
    # each keyword loss is its own masked input: the hand computation
    assert found[0][3].loss == pytest.approx(hand_keyword_loss(model, tokenizer, CONTEXTS[0], RESPONSES[0],
                                                               "chocolate"), abs=1e-5)
    assert found[2][0].loss == pytest.approx(hand_keyword_loss(model, tokenizer, [], "ok !", "ok"), abs=1e-5)
    assert output.truncated == [False] * 4 and output.empty == [False] * 4
    settings = metric.settings()
    assert (settings["variant"], settings["max_keywords"], settings["eou_token"], settings["copy_span"]) == (
        "eq1", 20, "<eou>", 0)


def test_batch_size_does_not_change_scores(any_family):
    _, tokenizer, model = any_family
    one = DialMMetric(model, tokenizer, device="cpu", batch_size=1).score_turns(CONTEXTS, RESPONSES)
    many = DialMMetric(model, tokenizer, device="cpu", batch_size=64).score_turns(CONTEXTS, RESPONSES)
    assert one.overall == pytest.approx(many.overall, abs=1e-5)
    alone = DialMMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS[1:2], RESPONSES[1:2])
    assert alone.overall[0] == pytest.approx(many.overall[1], abs=1e-5)  # each item's own score, in input order


def test_empty_response_gets_the_lowest_score(bert_model, bert_tok):
    metric = DialMMetric(bert_model, bert_tok, device="cpu")
    output = metric.score_turns([["hi"], ["hi , how are you ?"], ["hi"]], ["", "i am fine", "  "])
    assert output.overall[0] == output.overall[2] == LOWEST_SCORE and output.empty == [True, False, True]
    assert output.overall[1] > LOWEST_SCORE
    found, _ = metric.keyword_losses([["hi"]], [""])
    losses, _ = metric.losses([["hi"]], [""])
    assert found == [[]] and math.isnan(losses[0])


def test_a_condition_changes_the_score(any_family):
    _, tokenizer, model = any_family
    metric = DialMMetric(model, tokenizer, device="cpu")
    plain = metric.score_turns(CONTEXTS, RESPONSES)
    conditioned = metric.score_turns(CONTEXTS, RESPONSES, conditions=["my kids love tea ."] * 4)
    assert all(abs(a - b) > 1e-4 for a, b in zip(plain.overall, conditioned.overall))
    # an empty condition is none
    blank = metric.score_turns(CONTEXTS, RESPONSES, conditions=["", None, "  ", ""])
    assert blank.overall == pytest.approx(plain.overall, abs=1e-6)


def test_context_gain_variant(any_family):
    _, tokenizer, model = any_family
    eq1 = DialMMetric(model, tokenizer, device="cpu")
    gain = DialMMetric(model, tokenizer, device="cpu", variant="context-gain")
    conditions = [None, "the train is late .", None, None]
    output = gain.score_turns(CONTEXTS, RESPONSES, conditions)
    with_context, _ = eq1.losses(CONTEXTS, RESPONSES, conditions)
    alone, _ = eq1.losses([[] for _ in RESPONSES], RESPONSES)
    assert output.overall == pytest.approx([a - b for a, b in zip(alone, with_context)], abs=1e-6)
    assert output.overall[2] == pytest.approx(0.0, abs=1e-5)  # no context, no condition: no gain
    assert output.overall[0] != pytest.approx(0.0, abs=1e-5)
    assert gain.settings()["variant"] == "context-gain"
    assert gain.score_turns([["hi"]], [""]).overall == [LOWEST_SCORE]
    with pytest.raises(ValueError, match=r"variant must be one of \('eq1', 'context-gain'\), not 'sum'"):
        DialMMetric(model, tokenizer, device="cpu", variant="sum")


def test_a_copied_keyword_scores_the_lowest_score():
    found = [[KeywordLoss("tea", 2.0), KeywordLoss("milk", 3.0, copied=True), KeywordLoss("cup", 1.0)],
             [KeywordLoss("ok", 1.0)], [KeywordLoss("ok", 1.0, copied=True)], []]
    alone = [[KeywordLoss("tea", 5.0), KeywordLoss("milk", 4.0), KeywordLoss("cup", 2.0)], [KeywordLoss("ok", 1.5)],
             [KeywordLoss("ok", 1.5)], []]
    own_gain = (5 + 2) / 2 - (2 + 1) / 2
    assert keyword_scores(found, alone, 1.0) == pytest.approx(
        [(2 * own_gain + LOWEST_SCORE) / 3, 0.5, LOWEST_SCORE, LOWEST_SCORE])
    assert keyword_scores(found, [[]] * 4, 0.0) == pytest.approx(
        [(2 * -1.5 + LOWEST_SCORE) / 3, -1.0, LOWEST_SCORE, LOWEST_SCORE])  # Eq. 1 needs no response-alone loss


ECHOED = "i like to drink green tea with milk every single morning ."


def test_echoes_and_loops_score_their_copied_keywords_lowest(any_family, monkeypatch):
    family, tokenizer, model = any_family
    contexts = [[ECHOED], [ECHOED], [ECHOED], [ECHOED]]
    responses = [ECHOED, "my kids love mint chocolate chip !", "the train leaves at two , " * 4, "green tea ."]
    conditions = [None, ECHOED, None, None]  # a copy of the condition (the knowledge) is no copy of the dialogue
    paper = {variant: DialMMetric(model, tokenizer, device="cpu", variant=variant).score_turns(
        contexts, responses, conditions).overall for variant in ("eq1", "context-gain")}
    monkeypatch.setattr(model.config, "copy_span", 8)
    eq1 = DialMMetric(model, tokenizer, device="cpu", variant="eq1")
    found, _ = eq1.keyword_losses(contexts, responses, conditions)
    alone, _ = eq1.keyword_losses([[] for _ in responses], responses)
    assert [[k.copied for k in keywords] for keywords in (found[0], found[1], found[3])] == [
        [True] * len(found[0]), [False] * len(found[1]), [False] * len(found[3])]
    # a loop: the first round's keywords are the reply's own, the rounds after it copy it
    assert [(k.word, k.copied) for k in found[2]] == [("train", False), ("leaves", False), *[("train", True),
                                                                                           ("leaves", True)] * 3]
    scores = {variant: DialMMetric(model, tokenizer, device="cpu", variant=variant).score_turns(
        contexts, responses, conditions).overall for variant in ("eq1", "context-gain")}
    for variant, (echo, fresh, loop, short) in scores.items():
        assert echo == LOWEST_SCORE  # every keyword copied: as an empty reply
        assert fresh == pytest.approx(paper[variant][1], abs=1e-6)  # nothing copied: the paper's score
        assert short == pytest.approx(paper[variant][3], abs=1e-6)  # a short phrase of the context is no copy
    first_round = [a.loss - k.loss for k, a in zip(found[2][:2], alone[2][:2])]
    assert scores["context-gain"][2] == pytest.approx((sum(first_round) + 6 * LOWEST_SCORE) / 8, abs=1e-5)
    assert scores["eq1"][2] == pytest.approx((-found[2][0].loss - found[2][1].loss + 6 * LOWEST_SCORE) / 8, abs=1e-5)


def test_copy_span_is_checked_and_saved(tmp_path):
    with pytest.raises(ValueError, match="copy_span must be a whole number of tokens, 0 .none. or more, not -1"):
        DialMConfig(copy_span=-1)
    DialMConfig(copy_span=8).save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).copy_span == 8 and DialMConfig().copy_span == 0


def test_the_checkpoint_chooses_the_variant_unless_asked(any_family):
    _, tokenizer, model = any_family
    conditions = [None, "the train is late .", None, None]
    eq1 = DialMMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES, conditions).overall
    gain = DialMMetric(model, tokenizer, device="cpu", variant="context-gain").score_turns(CONTEXTS, RESPONSES,
                                                                                        conditions).overall
    assert model.config.variant == "eq1" and eq1 != pytest.approx(gain, abs=1e-4)
    model.config.variant = "context-gain"
    try:
        by_config = DialMMetric(model, tokenizer, device="cpu")
        assert by_config.variant == "context-gain" and by_config.settings()["variant"] == "context-gain"
        assert by_config.score_turns(CONTEXTS, RESPONSES, conditions).overall == pytest.approx(gain, abs=1e-6)
        asked = DialMMetric(model, tokenizer, device="cpu", variant="eq1")
        assert asked.score_turns(CONTEXTS, RESPONSES, conditions).overall == pytest.approx(eq1, abs=1e-6)
    finally:
        model.config.variant = "eq1"
    with pytest.raises(ValueError, match=r"variant must be one of \('eq1', 'context-gain'\), not 'gain'"):
        DialMConfig(variant="gain")


def test_long_context_is_cut_but_every_keyword_is_scored(family):
    name, tokenizer, _ = family
    short = tiny_dial_m(tokenizer, name, max_seq_length=24)
    context = ["hi , how are you today ? i am fine , thanks ."] * 6 + ["do you like tea ?"]
    response = "my kids love mint chocolate chip !"
    full = DialMMetric(tiny_dial_m(tokenizer, name), tokenizer, device="cpu")
    metric = DialMMetric(short, tokenizer, device="cpu")
    assert metric.max_seq_length == 24
    output = metric.score_turns([context, ["hi"]], [response, "ok"])
    assert output.truncated == [True, False] and output.overall[0] > LOWEST_SCORE
    found, truncated = metric.keyword_losses([context], [response])
    reference, _ = full.keyword_losses([context], [response])
    assert truncated == [True]
    assert [k.word for k in found[0]] == [k.word for k in reference[0]] == ["kids", "love", "mint", "chocolate",
                                                                            "chip"]
    copies = masked_keyword_copies(tokenizer, [context], [response], [None], short.config.eou_token_id, 24, 20,
                                   KEYWORD_POS_TAGS)
    assert all(len(row) == 24 for row in copies.rows["input_ids"])
    # a response too long alone loses its end, and the keywords there go unscored
    long_response = "my kids love mint chocolate chip ! " * 4 + "and the train leaves at noon"
    found, truncated = metric.keyword_losses([["hi"]], [long_response])
    words = [k.word for k in found[0]]
    assert truncated == [True] and words and "train" not in words and set(words) <= {"kids", "love", "mint",
                                                                                       "chocolate", "chip"}


def test_a_reply_past_what_the_tagger_takes_is_keyed_on_the_part_the_model_reads(any_family):
    name, tokenizer, model = any_family
    metric = DialMMetric(model, tokenizer, device="cpu")
    sentence = "my kids love mint chocolate chip ! "
    huge = sentence * 40_000  # 1.4 MB: spaCy refuses a text of a million characters
    found, truncated = metric.keyword_losses([["hi"]], [huge])
    assert truncated == [True] and {k.word for k in found[0]} == {"kids", "love", "mint", "chocolate", "chip"}
    # what lies past the cut changes nothing: the same part is read, the same keywords scored
    output = metric.score_turns([["hi"], ["hi"]], [huge, sentence * 100])
    assert output.truncated == [True, True] and output.overall[0] == output.overall[1] > LOWEST_SCORE


def test_paper_results_are_the_negated_raw_loss_correlations():
    assert PAPER_RESULTS[("dial-m", "usr-topical")]["Overall"] == {"pearson": 0.432, "spearman": 0.463}
    assert PAPER_RESULTS[("dial-m", "holistic-context")]["Coherence"] == {"pearson": 0.590, "spearman": 0.598}
    assert PAPER_RESULTS[("dial-m", "usr-persona")]["Engaging"] == {"pearson": 0.33, "spearman": 0.34}
    assert PAPER_RESULTS[("dial-m:untrained", "usr-persona")]["Overall"]["pearson"] == pytest.approx(0.154)


# ---- the evaluate module, saving and loading -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def roberta_checkpoint(tmp_path_factory, roberta_model, roberta_tok) -> str:
    folder = tmp_path_factory.mktemp("dial-m-roberta")
    roberta_model.save_pretrained(folder)
    roberta_tok.save_pretrained(folder)
    return str(folder)


def test_saved_model_reloads_with_auto_model_and_scores_the_same(roberta_checkpoint, roberta_model, roberta_tok):
    reloaded = AutoModel.from_pretrained(roberta_checkpoint)
    assert isinstance(reloaded, DialMModel) and reloaded.config.eou_token_id == roberta_model.config.eou_token_id
    tokenizer = AutoTokenizer.from_pretrained(roberta_checkpoint)
    assert tokenizer("hi , how are you ?", "ok")["input_ids"] == roberta_tok("hi , how are you ?", "ok")["input_ids"]
    assert tokenizer.convert_tokens_to_ids("<eou>") == roberta_model.config.eou_token_id
    before = DialMMetric(roberta_model, roberta_tok, device="cpu").score_turns(CONTEXTS, RESPONSES)
    after = DialMMetric(reloaded, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert after.overall == before.overall
    model, loaded_tokenizer = load_checkpoint("dial-m", roberta_checkpoint)
    assert isinstance(model, DialMModel) and not model.training and model.dtype == torch.float32
    assert DialMMetric.load(roberta_checkpoint, device="cpu").score_turns(CONTEXTS, RESPONSES).overall == before.overall


def test_export_writes_a_folder_that_auto_model_loads(roberta_checkpoint, tmp_path, monkeypatch):
    import hf_dialeval.publishing as publishing

    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "dial_m.md").write_text("# Dial-M\n")
    monkeypatch.setattr(publishing, "MODEL_CARDS_DIR", cards)
    [folder] = export_models("dial-m", roberta_checkpoint, tmp_path / "out")
    assert folder == tmp_path / "out" / Path(roberta_checkpoint).name
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {p.name for p in folder.iterdir()}
    exported = AutoModel.from_pretrained(folder)
    assert isinstance(exported, DialMModel)
    expected = DialMMetric.load(roberta_checkpoint, device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    assert DialMMetric.load(str(folder), device="cpu").score_turns(CONTEXTS, RESPONSES).overall == \
        pytest.approx(expected, abs=1e-6)


@pytest.fixture(scope="module")
def dial_m_module():
    return evaluate.load(hf_dialeval.evaluate_module("dial_m"))


def test_evaluate_module_with_and_without_conditions(dial_m_module, roberta_checkpoint):
    expected = DialMMetric.load(roberta_checkpoint, device="cpu")
    conditions = ["my kids love tea .", None, "", "i like milk ."]
    plain = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, checkpoint=roberta_checkpoint, device="cpu")
    assert plain["dial_m"] == pytest.approx(expected.score_turns(CONTEXTS, RESPONSES).overall, abs=1e-6)
    assert plain["overall"] == plain["dial_m"] and plain["dial_m_loss"] == [-s for s in plain["dial_m"]]
    assert plain["truncated"] == [False] * 4 and plain["empty"] == [False] * 4 and plain["signature"]
    conditioned = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, conditions=conditions,
                                        checkpoint=roberta_checkpoint, device="cpu")
    assert conditioned["dial_m"] == pytest.approx(
        expected.score_turns(CONTEXTS, RESPONSES, conditions).overall, abs=1e-6)
    assert conditioned["dial_m"][0] != pytest.approx(plain["dial_m"][0], abs=1e-4)
    assert conditioned["dial_m"][1:3] == pytest.approx(plain["dial_m"][1:3], abs=1e-6)  # None and "" are none
    with pytest.raises(DialogueValidationError, match="'conditions' has 3 entries for 4 responses"):
        dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, conditions=conditions[:3],
                              checkpoint=roberta_checkpoint, device="cpu")
    with pytest.raises(DialogueValidationError, match="'conditions' is a .*, not a list"):
        dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, conditions="tea",
                              checkpoint=roberta_checkpoint, device="cpu")
    with pytest.raises(DialogueValidationError, match="item 1, field 'condition': expected a string, got int"):
        dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, conditions=["tea", 3, None, None],
                              checkpoint=roberta_checkpoint, device="cpu")


def test_evaluate_module_keywords_and_variant(dial_m_module, roberta_checkpoint, monkeypatch):
    responses = [*RESPONSES[:3], ""]
    calls = []
    keyword_losses = DialMMetric._keyword_losses
    monkeypatch.setattr(DialMMetric, "_keyword_losses",
                        lambda self, *args: calls.append(1) or keyword_losses(self, *args))
    result = dial_m_module.compute(contexts=CONTEXTS, responses=responses, checkpoint=roberta_checkpoint,
                                   device="cpu", return_keywords=True, batch_size=2)
    assert len(calls) == 1  # the keywords come from the scoring's own forward passes
    keywords = result["keywords"]
    assert [[k["word"] for k in row] for row in keywords] == [
        ["kids", "love", "mint", "chocolate", "chip"], ["train", "leaves"], ["ok"], []]
    for row, loss, score in zip(keywords[:3], result["dial_m_loss"], result["dial_m"]):
        assert set(row[0]) == {"word", "loss", "copied"} and not any(k["copied"] for k in row)
        assert sum(k["loss"] for k in row) / len(row) == pytest.approx(loss, abs=1e-6)
        assert score == -loss
    assert result["dial_m"][3] == LOWEST_SCORE and result["empty"] == [False, False, False, True]
    gain = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, checkpoint=roberta_checkpoint,
                                 device="cpu", variant="context-gain")
    assert "dial_m_loss" not in gain and gain["dial_m"][2] == pytest.approx(0.0, abs=1e-5)
    expected = DialMMetric.load(roberta_checkpoint, device="cpu", variant="context-gain")
    assert gain["dial_m"] == pytest.approx(expected.score_turns(CONTEXTS, RESPONSES).overall, abs=1e-6)


def test_evaluate_module_follows_the_checkpoints_variant(dial_m_module, roberta_checkpoint, tmp_path):
    gain_checkpoint = shutil.copytree(roberta_checkpoint, tmp_path / "gain")
    config = DialMConfig.from_pretrained(gain_checkpoint)
    config.variant = "context-gain"
    config.save_pretrained(gain_checkpoint)
    by_config = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, checkpoint=str(gain_checkpoint),
                                      device="cpu")
    asked = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, checkpoint=roberta_checkpoint,
                                  device="cpu", variant="context-gain")
    assert "dial_m_loss" not in by_config and by_config["dial_m"] == pytest.approx(asked["dial_m"], abs=1e-6)
    assert by_config["signature"]["variant"] == "context-gain"
    eq1 = dial_m_module.compute(contexts=CONTEXTS, responses=RESPONSES, checkpoint=str(gain_checkpoint),
                                device="cpu", variant="eq1")
    assert eq1["dial_m"] == [-loss for loss in eq1["dial_m_loss"]]


# ---- training data -------------------------------------------------------------------------------------------------

def test_training_dialogues_leave_out_the_benchmark_texts(data_dir):
    from hf_dialeval.data.benchmarks import benchmark_texts, normalised_text
    from hf_dialeval.data.corpora import load_dailydialog

    assert HELD_OUT_BENCHMARKS == ("usr-topical", "usr-persona", "predictive-engage", "holistic-context")
    held_out = benchmark_texts(HELD_OUT_BENCHMARKS, data_dir)
    dialogues = load_training_dialogues(["dailydialog", "topical-chat"], "train", data_dir)
    assert dialogues.column_names == ["dialogue", "conditions"]
    assert not any(normalised_text(u) in held_out for dialogue in dialogues["dialogue"] for u in dialogue)
    assert all(len(d) == len(c) for d, c in zip(dialogues["dialogue"], dialogues["conditions"]))
    # DailyDialog validation holds benchmark texts: each such dialogue ends before the first of them
    raw = load_dailydialog("validation", data_dir)["dialogue"]
    validation = load_training_dialogues(["dailydialog"], "validation", data_dir)
    expected = []
    for dialogue in raw:
        end = next((i for i, u in enumerate(dialogue) if normalised_text(u) in held_out), len(dialogue))
        if end:
            expected.append(dialogue[:end])
    assert validation["dialogue"] == expected
    assert sum(len(d) for d in expected) < sum(len(d) for d in raw)  # something was left out
    assert not any(c for conditions in validation["conditions"] for c in conditions)  # no conditions
    with pytest.raises(ValueError, match="unknown Dial-M corpora"):
        load_training_dialogues(["dailydialog", "reddit"], "train", data_dir)


def test_topical_chat_dialogues_carry_wiki_lead_conditions(data_dir):
    topical = load_training_dialogues(["topical-chat"], "train", data_dir)
    assert len(topical) > 2000
    conditions = [c for row in topical["conditions"] for c in row]
    assert sum(bool(c.strip()) for c in conditions) > len(conditions) / 2
    assert max(len(c.split()) for c in conditions) > 100  # paragraphs of Wikipedia leads
    turns = dialogue_turns(topical.select(range(3)))
    first = topical[0]
    assert turns[0] == {"context": first["dialogue"][:1], "response": first["dialogue"][1],
                        "condition": first["conditions"][1]}
    assert len(turns) == sum(len([u for u in d[1:] if u.strip()]) for d in topical.select(range(3))["dialogue"])


def test_training_dialogues_of_a_corpus_without_the_split_are_empty(data_dir):
    empty = load_training_dialogues(["topical-chat"], "validation", data_dir)
    assert len(empty) == 0 and empty.column_names == ["dialogue", "conditions"]


def test_keyword_masking_inputs(bert_tok, bert_model):
    turns = datasets.Dataset.from_dict({"context": [["do you like tea ?"], ["hi"], ["hi"]],
                                        "response": ["yes , tea with milk .", "ok !", "i like the weather today"],
                                        "condition": ["", "", "it is sunny ."]})
    eou = bert_model.config.eou_token_id
    encoded = encode_keyword_masking(bert_tok, turns, eou, 64, 20, KEYWORD_POS_TAGS)
    assert len(encoded) == 2  # "ok !" has no keyword: left out in training
    labels = encoded[0]["labels"]
    masked = [p for p, label in enumerate(labels) if label != -100]
    assert bert_tok.convert_ids_to_tokens([labels[p] for p in masked]) == ["tea", "milk"]  # all at once
    assert all(encoded[0]["input_ids"][p] == bert_tok.mask_token_id for p in masked)
    assert 1 in encoded[1]["token_type_ids"]  # the condition, segment B
    random_masked = encode_keyword_masking(bert_tok, turns, eou, 64, 20, KEYWORD_POS_TAGS, masking="random", seed=0)
    assert len(random_masked) == 3  # every response has a word
    assert [sum(label != -100 for label in row) for row in random_masked["labels"]] == [1, 1, 1]  # 15% of ≤ 6 words
    with pytest.raises(ValueError, match="masking must be one of"):
        encode_keyword_masking(bert_tok, turns, eou, 64, 20, KEYWORD_POS_TAGS, masking="all")


@pytest.mark.parametrize("max_length, windows", [
    (8, [["hi", "<eou>"], ["how", "are", "you", "?", "<eou>"], ["fine", "<eou>"],
         ["one", "two", "three", "four", "five", "<eou>"], ["ok", "<eou>"]]),  # an utterance beyond a window is cut
    (16, [["hi", "<eou>", "how", "are", "you", "?", "<eou>", "fine", "<eou>"],
          ["one", "two", "three", "four", "five", "six", "seven", "eight", "<eou>", "ok", "<eou>"]]),
])
def test_mlm_windows_pack_whole_utterances_in_order(bert_tok, bert_model, max_length, windows):
    dialogues = datasets.Dataset.from_dict({
        "dialogue": [["hi", "how are you ?", "fine"], ["one two three four five six seven eight", "ok"]],
        "conditions": [["", "", ""], ["", "knowledge is never read in pre-training"]]})
    encoded = encode_mlm_windows(bert_tok, dialogues, bert_model.config.eou_token_id, max_length)
    assert encoded.column_names == ["input_ids", "token_type_ids", "truncated"]
    assert [bert_tok.convert_ids_to_tokens(row) for row in encoded["input_ids"]] == \
        [["[CLS]", *window, "[SEP]"] for window in windows]
    # only the window holding the eight-word utterance, cut at 8 tokens, lost anything
    assert encoded["truncated"] == [window[:5] == ["one", "two", "three", "four", "five"] and max_length == 8
                                    for window in windows]
    assert all(len(row) <= max_length and not any(types)
               for row, types in zip(encoded["input_ids"], encoded["token_type_ids"]))


# ---- both training stages in miniature -----------------------------------------------------------------------------

def _train_args(cls, argv: list[str]):
    from transformers import HfArgumentParser

    [args] = HfArgumentParser(cls).parse_args_into_dataclasses(
        [*argv, "--max-steps", "2", "--batch-size", "4", "--learning-rate", "1e-3", "--max-seq-length", "64",
         "--logging-steps", "1", "--use-cpu", "--report-to", "none", "--disable-tqdm", "true"])
    return args


@pytest.fixture(scope="module")
def stage_one(tmp_path_factory, data_dir):
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, train_dial_m_mlm

    root = tmp_path_factory.mktemp("dial-m-train")
    backbone = save_tiny_bert(root / "backbone")
    args = _train_args(DialMMLMTrainingArguments, [
        "--output-dir", str(root / "mlm"), "--backbone", backbone, "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "2"])
    return train_dial_m_mlm(args), backbone


@pytest.fixture(scope="module")
def stage_two(stage_one, data_dir):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    mlm, _ = stage_one
    args = _train_args(DialMTrainingArguments, [
        "--output-dir", str(mlm.parent / "keywords"), "--backbone", str(mlm), "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "2", "--adapter-rank", "4", "--max-keywords", "8"])
    return train_dial_m(args)


def test_training_arguments_check_eval_dialogues(tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, DialMTrainingArguments

    with pytest.raises(ValueError, match="--eval-dialogues must be 0 or more"):
        DialMTrainingArguments(output_dir=str(tmp_path), eval_dialogues=-1)
    args = DialMMLMTrainingArguments(output_dir=str(tmp_path), eval_dialogues=0, report_to=[])
    assert args.eval_strategy == "no" and args.prediction_loss_only
    defaults = DialMTrainingArguments(output_dir=str(tmp_path), report_to=[])
    assert (defaults.masking, defaults.max_keywords, defaults.lora_rank, defaults.learning_rate) == \
        ("keywords", None, 0, 1e-5)  # left out: a new model's 20, or a continued checkpoint's own


def test_stage_one_writes_a_dial_m_run(stage_one, bert_tok):
    run, backbone = stage_one
    record = json.loads((run / "training_record.json").read_text())
    assert record["train_inputs"] == 16 and record["corpora"] == ["dailydialog"] and record["mlm_probability"] == 0.15
    assert record["truncated"] == {"items": 0, "of": 16, "token_limit": 64, "cut": UTTERANCE_END}
    assert sum("loss" in entry for entry in record["log_history"]) == 2 and "eval_loss" in record["validation"]
    config = AutoConfig.from_pretrained(run)
    assert isinstance(config, DialMConfig) and config.backbone_name_or_path == backbone
    assert config.eou_token_added and config.max_seq_length == 64
    tokenizer = AutoTokenizer.from_pretrained(run)
    assert config.eou_token_id == tokenizer.convert_tokens_to_ids("<eou>") == len(tokenizer) - 1 == \
        bert_tok.convert_tokens_to_ids("<eou>")
    assert config.backbone_config.vocab_size == len(tokenizer) == len(bert_tok)
    output = DialMMetric.load(str(run), device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert all(0 < -score < 20 for score in output.overall)


def test_stage_two_from_the_stage_one_run_and_its_adapter(stage_one, stage_two):
    mlm, backbone = stage_one
    run = stage_two
    record = json.loads((run / "training_record.json").read_text())
    assert 0 < record["train_inputs"] <= 16 and record["masking"] == "keywords"
    assert sum("loss" in entry for entry in record["log_history"]) == 2 and "eval_loss" in record["validation"]
    config = AutoConfig.from_pretrained(run)
    assert isinstance(config, DialMConfig) and config.max_keywords == 8 and config.backbone_name_or_path == backbone
    assert {"adapter", "full"} <= {p.name for p in run.iterdir()}
    tokenizer = AutoTokenizer.from_pretrained(run)  # the stage-1 tokenizer: <eou> is not added twice
    assert len(tokenizer) == len(AutoTokenizer.from_pretrained(mlm)) and tokenizer.convert_tokens_to_ids("<eou>") == \
        config.eou_token_id == AutoConfig.from_pretrained(mlm).eou_token_id
    # stage 2 starts from stage 1's weights and changes them
    trained, stage_one_model = AutoModel.from_pretrained(run), AutoModel.from_pretrained(mlm)
    layer = "mlm.bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(trained.state_dict()[layer], stage_one_model.state_dict()[layer])
    merged = DialMMetric.load(str(run), device="cpu").score_turns(CONTEXTS, RESPONSES)
    adapter = DialMMetric.load(str(run / "adapter"), device="cpu").score_turns(CONTEXTS, RESPONSES)
    full = DialMMetric.load(str(run / "full"), device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert all(0 < -score < 20 for score in merged.overall)
    # the run's model is the rank-4 factoring of the weight changes merged in: close to full/, the unfactored one
    assert merged.overall == pytest.approx(full.overall, abs=1e-3)
    # adapter/ (float16, over the backbone its config names, <eou>'s row with it) rebuilds the run's model
    assert adapter.overall == pytest.approx(merged.overall, abs=1e-3)


def test_stage_two_with_random_masking(stage_one, data_dir):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    mlm, _ = stage_one
    args = _train_args(DialMTrainingArguments, [
        "--output-dir", str(mlm.parent / "random"), "--backbone", str(mlm), "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "0", "--masking", "random"])
    assert args.eval_strategy == "no"
    run = train_dial_m(args)
    record = json.loads((run / "training_record.json").read_text())
    assert record["masking"] == "random" and record["train_inputs"] == 16  # every turn has a word to mask
    assert record["validation"] == {}
    output = DialMMetric.load(str(run), device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert all(0 < -score < 20 for score in output.overall)


def test_keyword_losses_name_inputs_of_unequal_length(bert_tok, bert_model):
    metric = DialMMetric(bert_model, bert_tok, device="cpu")
    with pytest.raises(ValueError, match="'conditions' has 1 entries for 2 responses"):
        metric.keyword_losses([["hi"], ["hi"]], ["yes , tea .", "no"], ["persona"])


# ---- on a causal LM (this package's adaptation): Llama with a byte-level BPE, Gemma 3 with an unsplit one ----------

CAUSAL_FAMILIES = ("llama", "gemma3")


def tiny_causal_dial_m(family: str, tokenizer, **config_kwargs) -> DialMModel:
    from conftest import tiny_config

    torch.manual_seed(0)
    backbone = tiny_config(family, vocab_size=len(tokenizer), pad_token_id=0, eos_token_id=1, bos_token_id=2,
                           initializer_range=0.3)  # wide weights: the context and condition visibly move the losses
    config = DialMConfig(backbone_config=backbone, lm_kind="causal-lm", max_seq_length=96, **config_kwargs)
    return DialMModel(config).eval()


@pytest.fixture(scope="module", params=CAUSAL_FAMILIES)
def causal(request):
    """``(family, tokenizer, model)`` of each causal family."""
    tokenizer = causal_tokenizer(request.param)
    return request.param, tokenizer, tiny_causal_dial_m(request.param, tokenizer)


def test_replies_to_one_context_share_its_run_and_score_as_whole_rows(causal, monkeypatch):
    """Replies to one context (and every reply alone) run what precedes them once, the replies after it in one row;
    each keyword's loss is the one a whole row of the item gives, a row said twice runs once."""
    family, tokenizer, model = causal
    metric = DialMMetric(model, tokenizer, device="cpu", batch_size=2, variant="context-gain")
    contexts = [["do you like tea ?", "i do , with mint ."]] * 3 + [["what did you read ?"]] * 2
    responses = ["i love mint chocolate chip tea", "my kids read books at night", "no", "a book about tea",
                 "a book about tea"]
    rows: list[tuple[int, ...]] = []
    model.lm.base_model.register_forward_pre_hook(lambda _, args, kwargs: rows.append(tuple(
        kwargs["input_ids"].shape)), with_kwargs=True)
    shared = metric.score_turns(contexts, responses)
    if family == "gemma3":  # a sliding window of 4 tokens: a branch would read past it, so every row runs whole
        assert not dial_m_scoring.runs_shared_prefixes(model.lm, model.config.max_seq_length)
    else:  # the two contexts with their replies, then the replies alone after their speaker tag; a reply said
        # twice to one context ran once
        assert sum(batch for batch, _ in rows) == 2 + 1 and shared.overall[3] == shared.overall[4]
    monkeypatch.setattr(dial_m_scoring, "runs_shared_prefixes", lambda lm, max_length: False)
    whole = metric.score_turns(contexts, responses)
    assert shared.overall == pytest.approx(whole.overall, abs=1e-5)


@pytest.mark.parametrize("family", CAUSAL_FAMILIES)
def test_tokenizer_words_of_any_tokenizer_cover_each_word_and_its_leading_space(family):
    tokenizer = causal_tokenizer(family)
    text = " i like mint-chocolate tea, sir ! ok"
    token_ids, words = tokenizer_words(tokenizer, text)
    assert token_ids == ids(tokenizer, text)
    assert [w.word for w in words] == ["i", "like", "mint", "-", "chocolate", "tea", ",", "sir", "!", "ok"]
    if family == "gemma3":  # Gemma's kind: its word ids make one word of the whole text
        assert set(tokenizer(text, add_special_tokens=False).word_ids()) == {0}
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    covered = [p for w in words for p in w.token_positions]
    assert sorted(set(covered)) == list(range(len(token_ids)))  # every token is some word's
    position = 0
    for word in words:
        start = text.index(word.word, position)
        position = start + len(word.word)
        spans = [offsets[p] for p in word.token_positions]
        assert min(s for s, _ in spans) <= start and max(e for _, e in spans) >= position  # the word is covered
        decoded = tokenizer.decode([token_ids[p] for p in word.token_positions])
        assert word.word in decoded.replace("▁", " ")


def test_causal_rows_are_the_tagged_transcript_with_the_keywords_labelled(causal):
    family, tokenizer, model = causal
    layout = Layout.of(tokenizer, "speaker-tags")
    start = [tokenizer.bos_token_id] if family == "gemma3" else []
    rows = causal_keyword_rows(tokenizer, layout, [["hi , how are you ?"], []], ["i like tea with milk .", "ok !"],
                               ["i am a sir .", None], 96, scored_keywords(20, KEYWORD_POS_TAGS))
    assert rows.owners == [0, 1] and rows.truncated == [False, False]
    assert rows.words == [["like", "tea", "milk"], ["ok"]]  # in the response's order
    input_ids = rows.rows["input_ids"][0]
    assert input_ids[: len(start)] == start
    transcript = "Background: i am a sir .\nA: hi , how are you ?\nB: i like tea with milk ."
    assert tokenizer.decode(input_ids[len(start):]) == transcript
    assert tokenizer.decode(rows.rows["input_ids"][1][len(start):]) == "A: ok !"
    for row in range(2):
        labels, keyword_ids, input_ids = (rows.rows[key][row] for key in ("labels", "keyword_ids", "input_ids"))
        assert [label != -100 for label in labels] == [k > 0 for k in keyword_ids]
        for number, word in enumerate(rows.words[row], start=1):
            tokens = [input_ids[p] for p, k in enumerate(keyword_ids) if k == number]
            assert tokens == [labels[p] for p, k in enumerate(keyword_ids) if k == number]
            assert tokenizer.decode(tokens).replace("▁", " ").strip() == word


def test_causal_layout_cuts_the_oldest_context_then_the_condition_then_the_previous_start():
    layout = Layout((9,), (5,), ((6,), (7,)), (8,))  # start 9, "A:" 5, "\nA:" 6, "\nB:" 7
    condition, context, response = [40, 41, 42], [[10, 11], [20, 21, 22]], [30, 31]
    full = layout_causal_turn(layout, condition, context, response, 20)
    assert full.input_ids == [9, 40, 41, 42, 5, 10, 11, 7, 20, 21, 22, 6, 30, 31] and not full.truncated
    assert (full.response_start, full.response_length) == (12, 2)
    assert layout_causal_turn(layout, condition, context, response, 11).input_ids == [
        9, 40, 41, 42, 7, 20, 21, 22, 6, 30, 31]
    assert layout_causal_turn(layout, condition, context, response, 9).input_ids == [9, 40, 7, 20, 21, 22, 6, 30, 31]
    cut = layout_causal_turn(layout, condition, context, response, 6)
    assert cut.input_ids == [9, 21, 22, 6, 30, 31] and cut.truncated
    assert layout_causal_turn(layout, [], [], [30, 31, 32], 3).input_ids == [9, 5, 30]


def hand_causal_keyword_losses(model, input_ids: list[int], keyword_ids: list[int]) -> list[float]:
    """Each keyword's mean −log P(token | everything before it): the causal LM run on the whole input, in float64."""
    with torch.no_grad():
        log_probs = torch.log_softmax(model.lm(input_ids=torch.tensor([input_ids])).logits[0].double(), -1)
    losses = []
    for number in range(1, max(keyword_ids) + 1):
        terms = [-log_probs[p - 1, input_ids[p]].item() for p, k in enumerate(keyword_ids) if k == number]
        losses.append(sum(terms) / len(terms))
    return losses


def test_causal_metric_is_minus_eq_1_with_every_keyword_from_one_forward_pass(causal):
    family, tokenizer, model = causal
    metric = DialMMetric(model, tokenizer, device="cpu", batch_size=3)
    calls = []
    hook = model.lm.base_model.register_forward_hook(lambda module, args, output: calls.append(1))
    try:
        found, truncated = metric.keyword_losses(CONTEXTS, RESPONSES)
    finally:
        hook.remove()
    assert len(calls) == 2  # four items, three a batch: two forward passes, whatever the number of keywords
    assert [[k.word for k in keywords] for keywords in found] == [
        ["kids", "love", "mint", "chocolate", "chip"], ["train", "leaves"], ["ok"], ["milk"]]
    rows = causal_keyword_rows(tokenizer, metric.layout, CONTEXTS, RESPONSES, [None] * 4, 96,
                               scored_keywords(20, KEYWORD_POS_TAGS))
    for row, owner in enumerate(rows.owners):
        hand = hand_causal_keyword_losses(model, rows.rows["input_ids"][row], rows.rows["keyword_ids"][row])
        assert [k.loss for k in found[owner]] == pytest.approx(hand, abs=1e-4)
    output = metric.score_turns(CONTEXTS, RESPONSES)
    for i, keywords in enumerate(found):
        mean = sum(k.loss for k in keywords) / len(keywords)
        assert output.overall[i] == pytest.approx(-mean, abs=1e-6) and 0 < mean < 30
    assert truncated == [False] * 4
    empty = metric.score_turns([["hi"]], [""])
    assert empty.overall == [LOWEST_SCORE] and empty.empty == [True]


def test_causal_dial_m_round_trips_and_builds_from_a_causal_lm_folder(causal, tmp_path):
    family, tokenizer, model = causal
    model.save_pretrained(tmp_path / "dial-m")
    tokenizer.save_pretrained(tmp_path / "dial-m")
    loaded = AutoModel.from_pretrained(tmp_path / "dial-m")
    assert isinstance(loaded, DialMModel) and loaded.config.lm_kind == "causal-lm" and hasattr(loaded, "lm")
    assert loaded.config.eou_token is None and loaded.config.eou_token_id is None
    before = DialMMetric(model, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    after = DialMMetric.load(str(tmp_path / "dial-m"), device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    assert after == pytest.approx(before, abs=1e-6)
    model.lm.save_pretrained(tmp_path / "lm")  # a plain causal LM checkpoint as the backbone
    tokenizer.save_pretrained(tmp_path / "lm")
    built = DialMModel.from_backbone(str(tmp_path / "lm"), lm_kind="causal-lm", max_seq_length=96).eval()
    assert built.backbone_kind == "causal-lm" and type(built.lm).__name__.endswith("ForCausalLM")
    rebuilt = DialMMetric(built, tokenizer, device="cpu").score_turns(CONTEXTS, RESPONSES).overall
    assert rebuilt == pytest.approx(before, abs=1e-6)
    with pytest.raises(ValueError, match="lm_kind must be one of"):
        DialMConfig(lm_kind="seq2seq")


def test_causal_training_inputs_label_the_keywords_or_random_words():
    tokenizer = causal_tokenizer("llama")
    layout = Layout.of(tokenizer, "speaker-tags")
    turns = datasets.Dataset.from_dict({"context": [["hi , how are you ?"], ["do you like tea ?"]],
                                        "response": ["i like tea with milk .", "ok !"], "condition": ["", ""]},
                                       features=TURN_FEATURES)
    encoded = encode_causal_keyword_training(tokenizer, turns, layout, 64, 20, KEYWORD_POS_TAGS)
    assert len(encoded) == 1  # "ok !" has no keyword: left out of training (scoring would take every word)
    labelled = [label for label in encoded[0]["labels"] if label != -100]
    assert tokenizer.decode(labelled) == " like tea milk"
    assert set(encoded.column_names) == {"input_ids", "attention_mask", "labels"}
    randomly = encode_causal_keyword_training(tokenizer, turns, layout, 64, 20, KEYWORD_POS_TAGS, masking="random")
    assert len(randomly) == 2 and all(sum(label != -100 for label in row) >= 1 for row in randomly["labels"])


def test_causal_lm_windows_are_tagged_transcripts_packed_in_order():
    tokenizer = causal_tokenizer("gemma3")
    layout = Layout.of(tokenizer, "speaker-tags", detokenize_texts=True)
    dialogues = datasets.Dataset.from_dict({"dialogue": [["hi , how are you ?", "i am fine .", "do you like tea ?"]],
                                            "conditions": [["", "", ""]]})
    one = encode_lm_windows(tokenizer, dialogues, layout, 96)
    assert len(one) == 1 and one[0]["input_ids"][0] == tokenizer.bos_token_id
    assert tokenizer.decode(one[0]["input_ids"][1:]) == "A: hi, how are you?\nB: i am fine.\nA: do you like tea?"
    limit = len(one[0]["input_ids"]) - 2  # the last utterance no longer fits
    windows = encode_lm_windows(tokenizer, dialogues, layout, limit)
    assert len(windows) == 2 and all(len(ids) <= limit for ids in windows["input_ids"])
    assert tokenizer.decode(windows[1]["input_ids"][1:]) == "A: do you like tea?"
    assert all(tokenizer.decode(ids[1:]).startswith("A: ") for ids in windows["input_ids"])  # tags restart at A
    assert one["truncated"] == [False] and windows["truncated"] == [False, False]
    cut = encode_lm_windows(tokenizer, dialogues, layout, 6)  # a window an utterance: the 1st and 3rd are cut
    assert tokenizer.decode(cut[1]["input_ids"][1:]) == "A: i am fine."  # fits exactly
    assert all(len(ids) == 6 for ids in cut["input_ids"]) and cut["truncated"] == [True, False, True]


@pytest.fixture(scope="module")
def causal_stages(tmp_path_factory, data_dir):
    from hf_dialeval.metrics.dial_m.train import (
        DialMMLMTrainingArguments,
        DialMTrainingArguments,
        train_dial_m,
        train_dial_m_mlm,
    )

    root = tmp_path_factory.mktemp("dial-m-causal")
    tokenizer = causal_tokenizer("llama")
    tiny_causal_dial_m("llama", tokenizer).lm.save_pretrained(root / "lm")
    tokenizer.save_pretrained(root / "lm")
    stage_one = train_dial_m_mlm(_train_args(DialMMLMTrainingArguments, [
        "--output-dir", str(root / "lm-stage"), "--backbone", str(root / "lm"), "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "2", "--detokenize", "--lora-rank", "4"]))
    stage_two = train_dial_m(_train_args(DialMTrainingArguments, [
        "--output-dir", str(root / "keywords"), "--backbone", str(stage_one), "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "2", "--lora-rank", "4"]))
    return root / "lm", stage_one, stage_two


def test_causal_stages_train_from_a_causal_lm_and_keep_its_layout(causal_stages):
    backbone, stage_one, stage_two = causal_stages
    first = json.loads((stage_one / "training_record.json").read_text())
    assert first["objective"] == "causal-lm" and first["train_inputs"] == 16 and "eval_loss" in first["validation"]
    config = AutoConfig.from_pretrained(stage_one)
    assert (config.lm_kind, config.detokenize, config.eou_token) == ("causal-lm", True, None)
    assert config.backbone_name_or_path == str(backbone)
    second = json.loads((stage_two / "training_record.json").read_text())
    assert 0 < second["train_inputs"] <= 16 and second["masking"] == "keywords"
    assert AutoConfig.from_pretrained(stage_two).detokenize  # stage 1's layout, though stage 2 did not ask for it
    trained, before = AutoModel.from_pretrained(stage_two), AutoModel.from_pretrained(stage_one)
    layer = "lm.model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(trained.state_dict()[layer], before.state_dict()[layer])
    merged = DialMMetric.load(str(stage_two), device="cpu").score_turns(CONTEXTS, RESPONSES)
    adapter = DialMMetric.load(str(stage_two / "adapter"), device="cpu").score_turns(CONTEXTS, RESPONSES)
    assert all(0 < -score < 20 for score in merged.overall)
    assert adapter.overall == pytest.approx(merged.overall, abs=1e-3)
    # the adapter is over the backbone, not over the stage-1 run folder it continued
    assert json.loads((stage_two / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"] is None
    assert AutoConfig.from_pretrained(stage_two / "adapter").architectures == ["DialMModel"]


def test_lora_over_a_fully_fine_tuned_run_is_refused(causal, tmp_path):
    from hf_dialeval.metrics.dial_m.train import DialMTrainingArguments, train_dial_m

    _, tokenizer, model = causal
    model.save_pretrained(tmp_path / "full")  # a Dial-M checkpoint with its own weights and no adapter
    tokenizer.save_pretrained(tmp_path / "full")
    args = _train_args(DialMTrainingArguments, ["--output-dir", str(tmp_path / "out"), "--backbone",
                                                str(tmp_path / "full"), "--lora-rank", "4", "--eval-dialogues", "0"])
    with pytest.raises(ValueError, match="is fully fine-tuned, so a LoRA adapter trained on it would be saved"):
        train_dial_m(args)


def test_stage_one_continues_a_folder_without_a_tokenizer(causal_stages, data_dir, tmp_path):
    """A folder laid out as the shipped default (config and adapter, no tokenizer) keeps training on its backbone's
    tokenizer, and the continued run saves that tokenizer."""
    from hf_dialeval.metrics.dial_m.train import DialMMLMTrainingArguments, train_dial_m_mlm

    backbone, stage_one, _ = causal_stages
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for name in ("config.json", "adapter_config.json", "adapter_model.safetensors"):
        shutil.copy(stage_one / "adapter" / name, shipped / name)
    continued = train_dial_m_mlm(_train_args(DialMMLMTrainingArguments, [
        "--output-dir", str(tmp_path / "continued"), "--backbone", str(shipped), "--data-dir", str(data_dir),
        "--max-train-items", "16", "--eval-dialogues", "0", "--lora-rank", "4", "--seed", "43"]))
    assert AutoTokenizer.from_pretrained(continued).get_vocab() == AutoTokenizer.from_pretrained(backbone).get_vocab()
    layer = "lm.model.layers.0.self_attn.q_proj.weight"
    before, after = AutoModel.from_pretrained(shipped), AutoModel.from_pretrained(continued)
    assert not torch.equal(after.state_dict()[layer], before.state_dict()[layer])
