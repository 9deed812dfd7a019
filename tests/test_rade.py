"""RADE: the paper's loss (Eq. 7 and 9–11) against hand-computed numbers, the model over a tiny BART and a tiny
BERT-to-BERT (scores, generation loss, save/load, padding), the backbone built from an encoder, the data
(posterior and generator inputs, training ratings, DailyDialog++ mapping), the collator, the metric, a few steps of
``RADETrainer`` and a miniature ``train_rade`` run. Tiny random backbones built here (hidden 32, 2 layers); the MiniLM
tokenizer from its package."""

from __future__ import annotations

import json
import math
from collections import Counter

import datasets
import numpy as np
import pytest
import torch
from peft import LoraConfig, get_peft_model
from peft.utils import ModulesToSaveWrapper
from safetensors.torch import load_file
from scipy import stats
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoTokenizer,
    BartForConditionalGeneration,
    EncoderDecoderConfig,
    EncoderDecoderModel,
    EvalPrediction,
    TrainingArguments,
)

import hf_dialeval  # noqa: F401  (registers RADE with the Auto classes)
from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.data.transcripts import Layout, utterance_ids
from hf_dialeval.metrics.rade.configuration_rade import RADEConfig
from hf_dialeval.metrics.rade.data import (
    RADECollator,
    build_rade_examples,
    context_lines,
    dailydialog_plusplus_ratings,
    encode_causal_generation,
    encode_causal_posterior,
    encode_context,
    encode_posterior,
    load_training_ratings,
)
from hf_dialeval.metrics.rade.modeling_rade import RADEModel
from hf_dialeval.metrics.rade.scoring import RADEMetric
from hf_dialeval.metrics.rade.train import RADETrainingArguments, train_rade
from hf_dialeval.metrics.rade.trainer import RADETrainer, candidate_correlations, rade_loss
from hf_dialeval.modeling.adapters import load_adapter
from hf_dialeval.modeling.backbones import build_backbone, lora_target_pattern
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.offline_models import offline_backbone_path
from hf_dialeval.training.lora import add_lora

from conftest import TINY_VOCAB, causal_tokenizer, save_tiny_bert, tiny_config

pytestmark = pytest.mark.filterwarnings("ignore:Version v4.12.0 introduces:FutureWarning")  # EncoderDecoderModel's


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(offline_backbone_path())


def bert2bert_config(vocab_size: int = TINY_VOCAB, decoder_start_token_id: int = 2, pad_token_id: int = 0
                     ) -> EncoderDecoderConfig:
    """A tiny BERT-to-BERT config: the decoder a copy of the encoder with causal self-attention and cross-attention."""
    encoder = tiny_config("bert", vocab_size=vocab_size)
    decoder = tiny_config("bert", vocab_size=vocab_size, is_decoder=True, add_cross_attention=True)
    config = EncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id = decoder_start_token_id
    config.pad_token_id = pad_token_id
    return config


#: The separator of the synthetic posterior inputs below (``context SEP reference SEP candidate SEP``).
SEP = 3
#: Tiny backbones: name -> (backbone config factory, pad token id).
BACKBONES = {"bart": (lambda: tiny_config("bart"), 1), "bert2bert": (bert2bert_config, 0)}


def tiny_rade(backbone: str, seed: int = 0, **kwargs) -> RADEModel:
    make_config, _ = BACKBONES[backbone]
    torch.manual_seed(seed)
    kwargs.setdefault("sep_token_id", SEP)
    return RADEModel(RADEConfig(backbone_config=make_config(), max_seq_length=32, max_reference_length=8, **kwargs))


def tiny_rade_for(tokenizer, seed: int = 0, **kwargs) -> RADEModel:
    """A tiny BERT-to-BERT RADE over the MiniLM tokenizer's vocabulary."""
    torch.manual_seed(seed)
    kwargs.setdefault("sep_token_id", tokenizer.sep_token_id)
    config = bert2bert_config(len(tokenizer), tokenizer.cls_token_id, tokenizer.pad_token_id)
    return RADEModel(RADEConfig(backbone_config=config, max_seq_length=48, max_reference_length=12, **kwargs))


# ---- the loss (Eq. 7, 9–11) ------------------------------------------------------------------------------------

def log_candidate_wins(reference_predicted: float, candidate_predicted: float) -> float:
    """log(e^ŝ_a / (e^ŝ_h + e^ŝ_a)), written out."""
    return math.log(math.exp(candidate_predicted) / (math.exp(reference_predicted) + math.exp(candidate_predicted)))


# item 0: s_h < s_a (g = 1); item 1: a tie (g = 0); item 2: s_h > s_a (g = 0). The predictions of items 1 and 2
# rank the reference far above the candidate: counting them in L_PR would add log(1 + e)/3 ≈ 0.44 and
# log(1 + e^3.5)/3 ≈ 1.18.
CANDIDATE_PREDICTED = torch.tensor([3.0, 2.0, 1.0])
REFERENCE_PREDICTED = torch.tensor([2.5, 3.0, 4.5])
CANDIDATE_SCORE = torch.tensor([4.0, 2.0, 3.0])
REFERENCE_SCORE = torch.tensor([3.0, 2.0, 5.0])
GENERATION = torch.tensor(1.7)


def test_finetune_loss_matches_hand_computed_values():
    terms = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, GENERATION,
                      stage="finetune")
    mse_candidate = ((3.0 - 4.0) ** 2 + (2.0 - 2.0) ** 2 + (1.0 - 3.0) ** 2) / 3      # 5/3
    mse_reference = ((2.5 - 3.0) ** 2 + (3.0 - 2.0) ** 2 + (4.5 - 5.0) ** 2) / 3     # 1.5/3
    ranking = -(1 * log_candidate_wins(2.5, 3.0) + 0 + 0) / 3                         # log(1 + e^-0.5) / 3
    assert ranking == pytest.approx(math.log(1 + math.exp(-0.5)) / 3)
    assert set(terms) == {"loss", "mse_candidate", "mse_reference", "ranking", "generation"}
    assert terms["mse_candidate"].item() == pytest.approx(mse_candidate, abs=1e-6)
    assert terms["mse_reference"].item() == pytest.approx(mse_reference, abs=1e-6)
    assert terms["ranking"].item() == pytest.approx(ranking, abs=1e-6)
    assert terms["generation"].item() == pytest.approx(1.7, abs=1e-6)
    assert terms["loss"].item() == pytest.approx(mse_candidate + mse_reference + ranking + 1.7, abs=1e-6)


def test_ranking_loss_labels_ties_and_reversed_pairs_zero():
    """g(s_h, s_a) = 1 only for s_h < s_a: ties and s_h > s_a add nothing, whatever the predictions."""
    predicted_a, predicted_h = torch.tensor([0.0, 1.0]), torch.tensor([4.0, 0.0])
    tie = rade_loss(predicted_a, predicted_h, torch.tensor([3.0, 3.0]), torch.tensor([3.0, 3.0]),
                    use_generation_loss=False)
    reversed_pair = rade_loss(predicted_a, predicted_h, torch.tensor([2.0, 2.0]), torch.tensor([3.0, 4.0]),
                              use_generation_loss=False)
    assert tie["ranking"].item() == 0.0 and reversed_pair["ranking"].item() == 0.0
    # both pairs with s_h < s_a: −log σ(0 − 4) and −log σ(1 − 0), averaged
    ordered = rade_loss(predicted_a, predicted_h, torch.tensor([4.0, 5.0]), torch.tensor([3.0, 4.0]),
                        use_generation_loss=False)
    expected = (math.log(1 + math.exp(4.0)) + math.log(1 + math.exp(-1.0))) / 2
    assert ordered["ranking"].item() == pytest.approx(expected, abs=1e-6)
    assert ordered["loss"].item() == pytest.approx(
        ((0 - 4) ** 2 + (1 - 5) ** 2) / 2 + ((4 - 3) ** 2 + (0 - 4) ** 2) / 2 + expected, abs=1e-5)


def test_unknown_reference_scores_are_left_out_of_reference_terms():
    # item 1's reference score is unknown: read as 0 it would give g = 1 and a term of log(1 + e^1.5), and an MSE
    # of 3.5²; it counts in neither. MSE_h is the mean over the known items; L_PR, a batch mean, counts it as 0.
    candidate_predicted = torch.tensor([3.0, 2.0], requires_grad=True)
    reference_predicted = torch.tensor([2.0, 3.5], requires_grad=True)
    terms = rade_loss(candidate_predicted, reference_predicted, torch.tensor([4.0, 5.0]), torch.tensor([3.0, math.nan]),
                      torch.tensor(0.5))
    assert terms["mse_candidate"].item() == pytest.approx(((3 - 4) ** 2 + (2 - 5) ** 2) / 2, abs=1e-6)
    assert terms["mse_reference"].item() == pytest.approx((2.0 - 3.0) ** 2, abs=1e-6)
    assert terms["ranking"].item() == pytest.approx(math.log(1 + math.exp(-1.0)) / 2, abs=1e-6)
    assert terms["loss"].item() == pytest.approx(5.0 + 1.0 + math.log(1 + math.exp(-1.0)) / 2 + 0.5, abs=1e-6)
    terms["loss"].backward()
    assert torch.isfinite(candidate_predicted.grad).all() and torch.isfinite(reference_predicted.grad).all()
    assert reference_predicted.grad[1].item() == 0.0  # the unknown item pulls ŝ_h nowhere

    unknown = rade_loss(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.0]), torch.tensor([2.0, 2.0]),
                        torch.tensor([math.nan, math.nan]), use_generation_loss=False)
    assert unknown["mse_reference"].item() == 0.0 and unknown["ranking"].item() == 0.0
    assert unknown["loss"].item() == pytest.approx(((1 - 2) ** 2 + 0) / 2, abs=1e-6)


def test_pretrain_loss_is_candidate_mse_plus_generation():
    # the reference's score is not used in pre-training (unknown there): even NaN changes nothing
    for reference_score in (REFERENCE_SCORE, torch.full((3,), math.nan)):
        terms = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, reference_score, GENERATION,
                          stage="pretrain")
        assert set(terms) == {"loss", "mse_candidate", "generation"}
        assert terms["loss"].item() == pytest.approx(5 / 3 + 1.7, abs=1e-6)


def test_ablations_drop_their_terms():
    mse_candidate, mse_reference = 5 / 3, 1.5 / 3
    ranking = math.log(1 + math.exp(-0.5)) / 3
    no_ranking = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, GENERATION,
                           use_ranking_loss=False)
    assert set(no_ranking) == {"loss", "mse_candidate", "mse_reference", "generation"}
    assert no_ranking["loss"].item() == pytest.approx(mse_candidate + mse_reference + 1.7, abs=1e-6)
    no_generation = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, None,
                              use_generation_loss=False)
    assert set(no_generation) == {"loss", "mse_candidate", "mse_reference", "ranking"}
    assert no_generation["loss"].item() == pytest.approx(mse_candidate + mse_reference + ranking, abs=1e-6)
    # a generation loss given anyway is not added
    ignored = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, GENERATION,
                        use_generation_loss=False)
    assert ignored["loss"].item() == pytest.approx(no_generation["loss"].item(), abs=1e-7)
    pretrain = rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, None,
                         stage="pretrain", use_generation_loss=False)
    assert set(pretrain) == {"loss", "mse_candidate"} and pretrain["loss"].item() == pytest.approx(5 / 3, abs=1e-6)


def test_loss_rejects_bad_arguments():
    with pytest.raises(ValueError, match="stage"):
        rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, GENERATION,
                  stage="fine-tune")
    with pytest.raises(ValueError, match="generator"):
        rade_loss(CANDIDATE_PREDICTED, REFERENCE_PREDICTED, CANDIDATE_SCORE, REFERENCE_SCORE, None)


# ---- config ----------------------------------------------------------------------------------------------------

def test_config_validates_and_round_trips(tmp_path):
    RADEConfig(backbone_config=tiny_config("bart"), pooling="first", max_reference_length=16, human_scale=(0, 10),
               head_dropout=0.0).save_pretrained(tmp_path)
    again = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(again, RADEConfig)
    assert (again.pooling, again.max_reference_length, again.human_scale, again.head_dropout) == ("first", 16,
                                                                                                 [0.0, 10.0], 0.0)
    assert again.backbone_config.model_type == "bart" and again.backbone_config.d_model == 32
    for bad in ({"pooling": "max"}, {"max_reference_length": 2}, {"human_scale": (5, 1)}, {"human_scale": (1, 2, 3)},
                {"head_dropout": 1.0}):
        with pytest.raises(ValueError):
            RADEConfig(backbone_config=tiny_config("bart"), **bad)


# ---- model -----------------------------------------------------------------------------------------------------

def _padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    return ids, mask


POSTERIOR_ROWS = [[5, SEP, 6, SEP, 7, SEP], [8, 9, SEP, 10, 11, SEP, 12, 13, SEP]]


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_forward_scores_both_responses_mid_scale(backbone):
    model = tiny_rade(backbone).eval()
    assert isinstance(model.seq2seq, EncoderDecoderModel if backbone == "bert2bert" else BartForConditionalGeneration)
    assert model.head_names() == ["head"]
    assert model.head.out.bias.tolist() == [3.0, 3.0]  # the middle of (1, 5)
    ids, mask = _padded(POSTERIOR_ROWS, BACKBONES[backbone][1])
    with torch.no_grad():
        output = model(ids, mask, labels=torch.tensor([4.0, 2.0]))
    assert output.scores.shape == (2,) and output.reference_scores.shape == (2,) and output.logits.shape == (2, 2)
    assert torch.equal(output.logits[:, 1], output.scores) and torch.equal(output.logits[:, 0], output.reference_scores)
    assert torch.allclose(output.scores, torch.full((2,), 3.0), atol=0.25)
    assert not torch.equal(output.scores, output.reference_scores)  # two outputs, not one copied
    assert output.generation_loss is None
    expected_mse = ((output.scores - torch.tensor([4.0, 2.0])) ** 2).mean().item()
    assert output.loss.item() == pytest.approx(expected_mse, rel=1e-6)
    assert tiny_rade(backbone, human_scale=(0, 10)).head.out.bias.tolist() == [5.0, 5.0]


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_generation_loss_ignores_label_padding(backbone):
    model = tiny_rade(backbone).eval()
    pad = BACKBONES[backbone][1]
    contexts, context_mask = _padded([[5, 6, 7, 8, 9, 3], [10, 11, 12, 3]], pad)
    posterior, posterior_mask = _padded(POSTERIOR_ROWS, pad)

    def generation_loss(rows: slice, labels: torch.Tensor, width: int | None = None) -> float:
        with torch.no_grad():
            output = model(posterior[rows], posterior_mask[rows], generator_input_ids=contexts[rows, :width],
                           generator_attention_mask=context_mask[rows, :width], generator_labels=labels)
        return output.generation_loss.item()

    batch = generation_loss(slice(None), torch.tensor([[20, 21, 22, 3], [23, 3, -100, -100]]))
    assert math.isfinite(batch) and batch > 0
    # the mean token NLL over the 4 + 2 real label tokens: each row's own loss, weighted by its tokens
    first = generation_loss(slice(0, 1), torch.tensor([[20, 21, 22, 3]]))
    second = generation_loss(slice(1, 2), torch.tensor([[23, 3]]), width=4)
    assert batch == pytest.approx((4 * first + 2 * second) / 6, abs=1e-5)
    # real tokens where -100 stood do count
    unpadded = generation_loss(slice(None), torch.tensor([[20, 21, 22, 3], [23, 3, 40, 41]]))
    assert unpadded != pytest.approx(batch, abs=1e-4)
    with pytest.raises(ValueError, match="generator_input_ids"):
        model(posterior, posterior_mask, generator_labels=torch.tensor([[20, 3], [21, 3]]))


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_scores_do_not_depend_on_padding(backbone):
    model = tiny_rade(backbone).eval()
    with torch.no_grad():  # a head whose output varies with the input by more than its initial ±0.02
        torch.nn.init.normal_(model.head.out.weight, std=1.0)
    pad = BACKBONES[backbone][1]
    alone_ids = torch.tensor([POSTERIOR_ROWS[0]])
    batch_ids, batch_mask = _padded(POSTERIOR_ROWS, pad)
    with torch.no_grad():
        alone = model(alone_ids, torch.ones_like(alone_ids))
        batched = model(batch_ids, batch_mask)
        unmasked = model(batch_ids, torch.ones_like(batch_ids))
    assert batched.scores[0].item() == pytest.approx(alone.scores[0].item(), abs=1e-5)
    assert batched.reference_scores[0].item() == pytest.approx(alone.reference_scores[0].item(), abs=1e-5)
    assert torch.allclose(batched.pooled_output[0], alone.pooled_output[0], atol=1e-5)
    # the mask is what keeps it so: attending to the padding moves the score
    assert abs(unmasked.scores[0].item() - alone.scores[0].item()) > 1e-3


@pytest.mark.parametrize("pooling", ["segments", "mean", "first"])
def test_pooling_reads_the_encoder_output(pooling):
    model = tiny_rade("bert2bert", pooling=pooling).eval()
    ids, mask = _padded(POSTERIOR_ROWS, 0)
    with torch.no_grad():
        output = model(ids, mask, output_hidden_states=True)
    last = output.hidden_states[-1]
    means = torch.stack([last[0, :6].mean(0), last[1].mean(0)])
    if pooling == "first":
        expected = last[:, 0]
    elif pooling == "mean":
        expected = means
    else:  # the reference is the text between the last-but-one and the last-but-two separators
        reference = torch.stack([last[0, 2], last[1, 3:5].mean(0)])
        candidate = torch.stack([last[0, 4], last[1, 6:8].mean(0)])
        expected = torch.cat([means, reference, candidate, candidate - reference], -1)
    assert torch.allclose(output.pooled_output, expected, atol=1e-6)


def test_length_features_give_the_head_the_responses_token_counts():
    model = tiny_rade("bert2bert", length_features=True).eval()
    ids, mask = _padded(POSTERIOR_ROWS, 0)
    with torch.no_grad():
        output = model(ids, mask)
    assert output.pooled_output.shape == (2, 4 * 32 + 2)
    # references of 1 and 2 tokens, candidates of 1 and 2 tokens (POSTERIOR_ROWS)
    assert output.pooled_output[:, -2:].flatten().tolist() == pytest.approx([math.log(2)] * 2 + [math.log(3)] * 2)
    with pytest.raises(ValueError, match="length_features"):
        RADEConfig(backbone_config=tiny_config("bart"), pooling="mean", length_features=True)


def test_segments_pooling_finds_the_responses_in_bart_and_bert_inputs(tokenizer):
    from hf_dialeval.metrics.rade.modeling_rade import response_masks

    # BART's pair format doubles the separator between the context and the second segment
    ids = torch.tensor([[0, 5, 6, 2, 2, 7, 8, 2, 9, 2, 1, 1]])
    reference, candidate = response_masks(ids, (ids != 1).long(), 2)
    assert reference.tolist() == [[0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]]
    assert candidate.tolist() == [[0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]]
    encoding, _ = encode_posterior(tokenizer, [["hi there", "how are you"]], ["i am fine"], ["good thanks"], 64)
    ids = torch.tensor(encoding["input_ids"])
    reference, candidate = response_masks(ids, torch.ones_like(ids), tokenizer.sep_token_id)
    assert tokenizer.decode(ids[reference.bool()]) == "i am fine"
    assert tokenizer.decode(ids[candidate.bool()]) == "good thanks"
    with pytest.raises(ValueError, match="sep_token_id"):
        RADEModel(RADEConfig(backbone_config=tiny_config("bart")))


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_save_and_auto_model_round_trip(backbone, tmp_path):
    model = tiny_rade(backbone).eval()
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    assert type(loaded) is RADEModel and type(loaded.seq2seq) is type(model.seq2seq)
    assert loaded.config.max_reference_length == 8 and loaded.config.human_scale == [1.0, 5.0]
    saved, reloaded = model.state_dict(), loaded.state_dict()
    assert saved.keys() == reloaded.keys()
    assert all(torch.equal(saved[key], reloaded[key]) for key in saved)
    ids, mask = _padded(POSTERIOR_ROWS, BACKBONES[backbone][1])
    with torch.no_grad():
        assert torch.equal(model(ids, mask).logits, loaded.eval()(ids, mask).logits)


# ---- backbone from an encoder checkpoint ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_bert_folder(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _equal_state(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor]) -> bool:
    return first.keys() == second.keys() and all(torch.equal(first[key], second[key]) for key in first)


def test_seq2seq_backbone_from_an_encoder_is_reproducible(tiny_bert_folder, tokenizer):
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    first = build_backbone(tiny_bert_folder, "seq2seq")
    assert torch.equal(torch.rand(3), expected_draw)  # the fixed seed does not touch the caller's random state
    torch.manual_seed(7)  # nor does the caller's seed reach the fresh weights
    second = build_backbone(tiny_bert_folder, "seq2seq")
    assert isinstance(first, EncoderDecoderModel)
    assert (first.config.decoder_start_token_id, first.config.pad_token_id) == (tokenizer.cls_token_id,
                                                                                tokenizer.pad_token_id)
    state = first.state_dict()
    cross = [key for key in state if "crossattention" in key and key.endswith("query.weight")]
    assert len(cross) == 2 and state[cross[0]].std() > 0.005  # drawn weights, not a constant
    assert _equal_state(state, second.state_dict())
    # the encoder's and the decoder's self-attention are the checkpoint's
    assert torch.equal(state["encoder.encoder.layer.0.attention.self.query.weight"],
                       state["decoder.bert.encoder.layer.0.attention.self.query.weight"])


def test_from_backbone_and_untrained_copy(tiny_bert_folder):
    model = RADEModel.from_backbone(tiny_bert_folder, max_seq_length=32, max_reference_length=8, sep_token_id=102)
    assert isinstance(model.seq2seq, EncoderDecoderModel)
    assert model.config.backbone_name_or_path == tiny_bert_folder
    pretrained = build_backbone(tiny_bert_folder, "seq2seq").state_dict()
    assert _equal_state(model.seq2seq.state_dict(), pretrained)
    first, second = model.untrained_copy(), model.untrained_copy()
    assert type(first) is RADEModel
    # every weight outside the fresh (randomly initialised) head is the same in both: what an adapter is relative to
    first_state, second_state = first.state_dict(), second.state_dict()
    assert first_state.keys() == second_state.keys()
    backbone_keys = [key for key in first_state if not key.startswith("head.")]
    assert len(backbone_keys) > 100 and all(torch.equal(first_state[key], second_state[key]) for key in backbone_keys)
    assert _equal_state(first.seq2seq.state_dict(), pretrained)
    assert first.head.out.bias.tolist() == [3.0, 3.0]


# ---- data --------------------------------------------------------------------------------------------------------

CONTEXT = ["hello there friend", "how are you today"]
REFERENCE, CANDIDATE = "i am fine", "not bad at all"


def test_posterior_input_is_context_reference_candidate(tokenizer):
    encoding, truncated = encode_posterior(tokenizer, [CONTEXT], [REFERENCE], [CANDIDATE], 64)
    ids = encoding["input_ids"][0]
    assert tokenizer.decode(ids) == ("[CLS] hello there friend [SEP] how are you today [SEP] i am fine [SEP] "
                                     "not bad at all [SEP]")
    assert truncated == [False]
    # the context is the first segment, reference and candidate the second
    second = ids.index(tokenizer.sep_token_id, ids.index(tokenizer.sep_token_id) + 1)  # the pair's separator
    assert encoding["token_type_ids"][0] == [0] * (second + 1) + [1] * (len(ids) - second - 1)
    assert set(encoding) == {"input_ids", "token_type_ids", "attention_mask"}

    # three tokens too many: "hello there friend", the oldest context tokens, go
    cut, truncated = encode_posterior(tokenizer, [CONTEXT], [REFERENCE], [CANDIDATE], len(ids) - 3)
    assert truncated == [True]
    assert cut["input_ids"][0] == ids[:1] + ids[4:]
    assert tokenizer.decode(cut["input_ids"][0]) == ("[CLS] [SEP] how are you today [SEP] i am fine [SEP] "  # the
                                                     "not bad at all [SEP]")  # first [SEP]: the utterances' joiner
    # the whole context too many: reference and candidate intact
    no_context, _ = encode_posterior(tokenizer, [CONTEXT], [REFERENCE], [CANDIDATE], len(ids) - 8)
    assert tokenizer.decode(no_context["input_ids"][0]) == "[CLS] [SEP] i am fine [SEP] not bad at all [SEP]"


def test_generator_input_keeps_special_tokens_and_drops_oldest(tokenizer):
    full, = encode_context(tokenizer, [CONTEXT], 64)
    assert tokenizer.decode(full) == "[CLS] hello there friend [SEP] how are you today [SEP]"
    cut, = encode_context(tokenizer, [CONTEXT], 6)
    assert len(cut) == 6 and cut[0] == tokenizer.cls_token_id and cut[-1] == tokenizer.sep_token_id
    assert cut == [full[0], *full[-5:]]
    assert tokenizer.decode(cut) == "[CLS] how are you today [SEP]"  # the first utterance and its separator went


def test_build_rade_examples(tokenizer):
    long_reference = "yes i do , green tea with milk and honey every single morning"
    dataset = datasets.Dataset.from_dict({
        "context": [CONTEXT, ["do you like tea ?"]], "response": [CANDIDATE, "no"],
        "reference": [REFERENCE, long_reference], "reference_score": [3.5, None], "Overall": [4, 2.5]})
    examples = build_rade_examples(dataset, tokenizer, max_seq_length=64, max_reference_length=8)
    assert set(examples.column_names) == {"input_ids", "token_type_ids", "attention_mask", "generator_input_ids",
                                          "generator_attention_mask", "generator_labels", "candidate_score",
                                          "reference_score", "truncated"}
    first, second = examples[0], examples[1]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert first["generator_labels"] == [cls, *tokenizer.encode(REFERENCE, add_special_tokens=False), sep]
    assert second["generator_labels"] == [cls, *tokenizer.encode(long_reference, add_special_tokens=False)[:6], sep]
    assert tokenizer.decode(second["generator_labels"]) == "[CLS] yes i do, green tea [SEP]"
    assert tokenizer.decode(first["input_ids"]) == ("[CLS] hello there friend [SEP] how are you today [SEP] i am fine "
                                                    "[SEP] not bad at all [SEP]")
    assert tokenizer.decode(first["generator_input_ids"]) == "[CLS] hello there friend [SEP] how are you today [SEP]"
    assert first["generator_attention_mask"] == [1] * len(first["generator_input_ids"])
    assert first["candidate_score"] == 4.0 and first["reference_score"] == 3.5
    assert second["candidate_score"] == 2.5 and math.isnan(second["reference_score"])
    assert examples["truncated"] == [False, False]

    blank = dataset.map(lambda row, i: {"reference": "  " if i == 1 else row["reference"]}, with_indices=True)
    with pytest.raises(ValueError, match="no reference"):
        build_rade_examples(blank, tokenizer, 64, 8)
    with pytest.raises(ValueError, match="lacks"):
        build_rade_examples(dataset.remove_columns("Overall"), tokenizer, 64, 8)
    # without a reference_score column every s_h is unknown
    unknown = build_rade_examples(dataset.remove_columns("reference_score"), tokenizer, 64, 8)
    assert all(math.isnan(score) for score in unknown["reference_score"])


def test_collator_pads_each_input_on_its_own(tokenizer):
    dataset = datasets.Dataset.from_dict({
        "context": [["hi"], ["do you like green tea with milk ?", "sometimes , and you ?", "every day"]],
        "response": ["hello there , how are you doing on this fine day ?", "me too"],
        "reference": ["hey", "i love it , with lemon and honey"], "reference_score": [4.0, None],
        "Overall": [3.0, 5.0]})
    features = list(build_rade_examples(dataset, tokenizer, 64, 16).remove_columns("truncated"))
    batch = RADECollator(tokenizer)(features)
    lengths = {key: [len(f[key]) for f in features] for key in ("input_ids", "generator_input_ids", "generator_labels")}
    assert batch["input_ids"].shape == (2, max(lengths["input_ids"]))
    assert batch["generator_input_ids"].shape == (2, max(lengths["generator_input_ids"]))
    assert batch["generator_labels"].shape == (2, max(lengths["generator_labels"]))
    assert batch["input_ids"].shape[1] != batch["generator_input_ids"].shape[1]  # not padded to one width
    for row, feature in enumerate(features):
        for key, mask_key, pad in (("input_ids", "attention_mask", tokenizer.pad_token_id),
                                   ("generator_input_ids", "generator_attention_mask", tokenizer.pad_token_id),
                                   ("generator_labels", None, -100)):
            n = len(feature[key])
            assert batch[key][row, :n].tolist() == feature[key]
            assert (batch[key][row, n:] == pad).all()
            if mask_key is not None:
                assert batch[mask_key][row].tolist() == [1] * n + [0] * (batch[key].shape[1] - n)
    assert -100 in batch["generator_labels"][0].tolist() and -100 not in batch["generator_labels"][1].tolist()
    assert batch["token_type_ids"].shape == batch["input_ids"].shape
    assert batch["candidate_score"].dtype == torch.float and batch["candidate_score"].tolist() == [3.0, 5.0]
    assert batch["reference_score"][0].item() == 4.0 and math.isnan(batch["reference_score"][1].item())


def test_training_ratings_of_a_domain(data_dir):
    train = load_training_ratings(["rade-chitchat"], "train", data_dir)
    validation = load_training_ratings(["rade-chitchat"], "validation", data_dir)
    assert train.column_names == ["context", "response", "reference", "reference_score", "Overall", "source"]
    assert set(train["source"]) == {"rade-chitchat"}
    assert len(train) > 1000 and len(validation) > 100
    assert all(isinstance(score, float) for score in train["Overall"][:50])
    assert all(reference.strip() for reference in train["reference"])
    assert not {tuple(c) for c in train["context"]} & {tuple(c) for c in validation["context"]}
    assert load_training_ratings(["rade-chitchat"], "train", data_dir)["response"] == train["response"]  # seeded
    with pytest.raises(ValueError, match="unknown training source"):
        load_training_ratings(["rade-news"], "train", data_dir)
    with pytest.raises(ValueError, match="no validation data"):
        load_training_ratings(["dailydialog-plusplus"], "validation", data_dir)


def test_balanced_sources_repeat_the_smaller_domain(data_dir):
    sizes = {domain: len(load_benchmark(domain, data_dir, split="train")) for domain in ("rade-chitchat", "rade-persona")}
    pooled = load_training_ratings(list(sizes), "train", data_dir)
    balanced = load_training_ratings(list(sizes), "train", data_dir, balance_sources=True)
    assert Counter(pooled["source"]) == sizes
    largest = max(sizes.values())
    assert Counter(balanced["source"]) == {domain: largest for domain in sizes}
    # every item of the smaller domain is there, some of them twice as often as in its split (the release
    # repeats a few items, so a count can also grow by half)
    def items(ratings: datasets.Dataset) -> Counter:
        return Counter((tuple(row["context"]), row["reference"], row["response"])
                       for row in ratings if row["source"] == "rade-chitchat")
    once, repeated = items(pooled), items(balanced)
    assert repeated.keys() == once.keys()
    ratios = {repeated[item] / once[item] for item in once}
    assert min(ratios) >= 1.0 and max(ratios) == 2.0
    assert balanced["source"][:20] != sorted(balanced["source"][:20])  # shuffled, not in interleaved blocks


def test_dailydialog_plusplus_levels_become_scores(data_dir):
    ratings = dailydialog_plusplus_ratings(data_dir, splits=("validation",), per_level=1)
    assert len(ratings) > 0 and len(ratings) % 3 == 0
    assert set(ratings["reference_score"]) == {4.0}
    rows = list(ratings)
    for start in range(0, len(rows), 3):
        triple = rows[start:start + 3]
        assert [row["Overall"] for row in triple] == [4.0, 2.0, 1.0]
        assert all(row["context"] == triple[0]["context"] and row["reference"] == triple[0]["reference"]
                   for row in triple)
        # the other positive and the adversarial negative (the random negative: see the next test)
        assert triple[0]["reference"] not in [row["response"] for row in triple[:2]]
    again = dailydialog_plusplus_ratings(data_dir, splits=("validation",), per_level=1)
    assert again["response"] == ratings["response"]  # the draw is seeded
    assert len(dailydialog_plusplus_ratings(data_dir, splits=("validation",), per_level=2)) == 2 * len(ratings)


def test_dailydialog_plusplus_negatives_never_repeat_a_positive(data_dir):
    # the release lists a context's reference among its random negatives in 3 validation contexts
    ratings = dailydialog_plusplus_ratings(data_dir, splits=("validation",), per_level=1)
    assert not [row for row in ratings if row["response"] == row["reference"]]


# ---- metric ------------------------------------------------------------------------------------------------------

def test_metric_scores_the_candidate_with_its_reference(tokenizer):
    model = tiny_rade_for(tokenizer).eval()
    with torch.no_grad():
        torch.nn.init.normal_(model.head.out.weight, std=1.0)
    metric = RADEMetric(model, tokenizer, device="cpu", batch_size=2)
    contexts = [CONTEXT, ["do you like tea ?"], ["where is it ?"]]
    output = metric.score_turns(contexts, [CANDIDATE, "yes , green tea", ""],
                                references=[REFERENCE, "no , coffee", "over there"])
    encoding, _ = encode_posterior(tokenizer, contexts[:2], [REFERENCE, "no , coffee"], [CANDIDATE, "yes , green tea"],
                                   48)
    with torch.no_grad():
        direct = [model(torch.tensor([ids]), token_type_ids=torch.tensor([types])).scores.item()
                  for ids, types in zip(encoding["input_ids"], encoding["token_type_ids"])]
    assert output.overall[:2] == pytest.approx(direct, abs=1e-5)
    assert output.overall[2] == 1.0  # an empty candidate scores the bottom of the human scale
    with pytest.raises(ValueError, match="reference"):
        metric.score_turns([CONTEXT], [CANDIDATE])


# ---- trainer -----------------------------------------------------------------------------------------------------

def _training_examples(tokenizer) -> datasets.Dataset:
    dataset = datasets.Dataset.from_dict({
        "context": [["hi , how are you ?", "fine , you ?"], ["do you like tea ?"], ["where is the station ?"],
                    ["good morning !"]] * 2,
        "response": ["i am good .", "no , coffee .", "the sky is blue .", "morning ! sleep well ?", "great , thanks",
                     "yes a lot", "over there", "hello"],
        "reference": ["good , thanks .", "yes , green tea .", "turn left at the bank .", "good morning to you ."] * 2,
        "reference_score": [3.0, 4.0, 5.0, None, 2.0, 4.0, 1.0, 3.0],
        "Overall": [4.0, 2.0, 1.0, 3.5, 2.5, 4.0, 3.0, 1.5]})
    return build_rade_examples(dataset, tokenizer, 48, 12).remove_columns("truncated")


def _arguments(tmp_path, **overrides) -> TrainingArguments:
    values = dict(output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=4, learning_rate=1e-3,
                  use_cpu=True, remove_unused_columns=False, report_to=[], save_strategy="no", logging_steps=1,
                  disable_tqdm=True)
    return TrainingArguments(**{**values, **overrides})


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


@pytest.mark.parametrize("stage, use_generation_loss, logged", [
    ("finetune", True, {"mse_candidate", "mse_reference", "ranking", "generation"}),
    ("pretrain", True, {"mse_candidate", "generation"}),
    ("finetune", False, {"mse_candidate", "mse_reference", "ranking"}),
])
def test_trainer_steps_log_the_stage_terms(tokenizer, tmp_path, stage, use_generation_loss, logged):
    model = tiny_rade_for(tokenizer)
    head, decoder, encoder = _state(model.head), _state(model.seq2seq.decoder), _state(model.seq2seq.encoder)
    decoder_calls = []
    model.seq2seq.decoder.register_forward_hook(lambda *_: decoder_calls.append(1))
    trainer = RADETrainer(model=model, args=_arguments(tmp_path), train_dataset=_training_examples(tokenizer),
                          data_collator=RADECollator(tokenizer), stage=stage, use_generation_loss=use_generation_loss)
    trainer.train()
    assert len(decoder_calls) == (3 if use_generation_loss else 0)  # without L_GEN the generator is not even run
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(steps) == 3
    all_terms = {"mse_candidate", "mse_reference", "ranking", "generation"}
    for entry in steps:
        assert logged <= entry.keys() and not (all_terms - logged) & entry.keys()
        assert entry["loss"] == pytest.approx(sum(entry[term] for term in logged), rel=1e-4)
    if "generation" in logged:  # a near-uniform guess over MiniLM's 30,522 tokens: about log(30522) ≈ 10.3
        assert 8.0 < steps[0]["generation"] < 12.0
    assert any(not torch.equal(value, model.head.state_dict()[key]) for key, value in head.items())
    assert any(not torch.equal(value, model.seq2seq.encoder.state_dict()[key]) for key, value in encoder.items())
    trained_decoder = model.seq2seq.decoder.state_dict()
    decoder_moved = any(not torch.equal(value, trained_decoder[key]) for key, value in decoder.items())
    assert decoder_moved == use_generation_loss


def test_the_head_learns_at_its_own_rate_when_given_one(tokenizer, tmp_path):
    model = tiny_rade_for(tokenizer)
    trainer = RADETrainer(model=model, args=_arguments(tmp_path), data_collator=RADECollator(tokenizer),
                          head_learning_rate=0.5)
    optimizer = trainer.create_optimizer()
    head = {id(p) for p in model.head.parameters()}
    rates = {("head" if id(p) in head else "backbone", group["lr"]) for group in optimizer.param_groups
             for p in group["params"]}
    assert rates == {("head", 0.5), ("backbone", trainer.args.learning_rate)}
    assert sum(len(group["params"]) for group in optimizer.param_groups) == len(
        [p for p in model.parameters() if p.requires_grad])
    plain = RADETrainer(model=tiny_rade_for(tokenizer), args=_arguments(tmp_path), data_collator=RADECollator(tokenizer))
    assert {group["lr"] for group in plain.create_optimizer().param_groups} == {plain.args.learning_rate}


def test_trainer_evaluates_candidate_correlations(tokenizer, tmp_path):
    model = tiny_rade_for(tokenizer)
    with torch.no_grad():
        torch.nn.init.normal_(model.head.out.weight, std=1.0)
    examples = _training_examples(tokenizer)
    collator = RADECollator(tokenizer)
    trainer = RADETrainer(model=model, args=_arguments(tmp_path, per_device_eval_batch_size=3), eval_dataset=examples,
                          data_collator=collator, compute_metrics=candidate_correlations)
    metrics = trainer.evaluate()
    batch = collator(list(examples))
    model.eval()
    with torch.no_grad():
        predicted = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).scores.numpy()
    human = batch["candidate_score"].numpy()
    assert metrics["eval_spearman"] == pytest.approx(stats.spearmanr(predicted, human).statistic, abs=1e-6)
    assert metrics["eval_pearson"] == pytest.approx(stats.pearsonr(predicted, human).statistic, abs=1e-5)
    assert {"eval_mse_candidate", "eval_mse_reference", "eval_ranking", "eval_generation"} <= metrics.keys()


def test_candidate_correlations_within_domains():
    # predictions (ŝ_h, ŝ_a) and labels (s_h, s_a): domain "a" ranked right, domain "b" exactly reversed, and the
    # two domains' score levels apart, so the pooled Spearman differs from both
    candidate = np.array([1.0, 2.0, 3.0, 10.0, 9.0, 8.0])
    human = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    prediction = EvalPrediction(predictions=np.stack([np.zeros(6), candidate], -1),
                                label_ids=np.stack([np.zeros(6), human], -1))
    metrics = candidate_correlations(prediction, domains=["a", "a", "a", "b", "b", "b"])
    assert metrics["spearman_a"] == pytest.approx(1.0) and metrics["spearman_b"] == pytest.approx(-1.0)
    assert metrics["mean_domain_spearman"] == pytest.approx(0.0)
    assert metrics["spearman"] == pytest.approx(stats.spearmanr(candidate, human).statistic)
    assert candidate_correlations(prediction)["mean_domain_spearman"] == pytest.approx(metrics["spearman"])
    with pytest.raises(ValueError, match="one domain per validation item"):
        candidate_correlations(prediction, domains=["a"])


def test_trainer_rejects_bad_settings(tokenizer, tmp_path):
    model = tiny_rade("bert2bert")
    with pytest.raises(ValueError, match="remove_unused_columns"):
        RADETrainer(model=model, args=_arguments(tmp_path, remove_unused_columns=True))
    with pytest.raises(ValueError, match="stage"):
        RADETrainer(model=model, args=_arguments(tmp_path), stage="warmup")


@pytest.mark.slow
def test_train_rade_end_to_end(tiny_bert_folder, data_dir, tmp_path):
    """``hf-dialeval train rade`` in miniature: a tiny BERT made into an encoder-decoder, LoRA, a RADE domain and
    DailyDialog++ mixed, validation on the domain's validation split, the run's folder loaded back."""
    out = train_rade(RADETrainingArguments(
        output_dir=str(tmp_path / "run"), backbone=tiny_bert_folder, data_dir=str(data_dir),
        train_data=["rade-chitchat", "dailydialog-plusplus"], max_train_items=16, max_steps=2,
        per_device_train_batch_size=8, per_device_eval_batch_size=64, max_seq_length=64, max_reference_length=16,
        lora_rank=4, learning_rate=1e-3, logging_steps=1, use_cpu=True, report_to=[], disable_tqdm=True))
    assert {"config.json", "model.safetensors", "tokenizer.json", "training_record.json"} <= {
        p.name for p in out.iterdir()}
    assert (out / "adapter" / "adapter_model.safetensors").is_file() and not list(out.glob("checkpoint-*"))
    record = json.loads((out / "training_record.json").read_text())
    assert record["train_items"] == 16 and record["arguments"]["eval_data"] == ["rade-chitchat"]
    assert -1.0 <= record["validation"]["eval_spearman"] <= 1.0
    steps = [entry for entry in record["log_history"] if "loss" in entry]
    assert len(steps) == 2
    assert all({"mse_candidate", "mse_reference", "ranking", "generation"} <= entry.keys() for entry in steps)

    model, tokenizer = load_checkpoint("rade", out)
    assert isinstance(model, RADEModel) and isinstance(model.seq2seq, EncoderDecoderModel) and not model.training
    assert model.config.max_reference_length == 16 and model.config.backbone_name_or_path == tiny_bert_folder
    contexts, responses, references = [CONTEXT, ["do you like tea ?"]], [CANDIDATE, "yes"], [REFERENCE, "no , coffee"]
    scores = RADEMetric(model, tokenizer, device="cpu").score_turns(contexts, responses, references=references).overall
    reloaded = AutoModel.from_pretrained(out)
    assert RADEMetric(reloaded, tokenizer, device="cpu").score_turns(
        contexts, responses, references=references).overall == pytest.approx(scores, abs=1e-6)
    adapter, _ = load_checkpoint("rade", out / "adapter")  # rebuilt from the backbone (its fixed-seed cross-attention) + adapter
    assert RADEMetric(adapter, tokenizer, device="cpu").score_turns(
        contexts, responses, references=references).overall == pytest.approx(scores, abs=1e-3)


def test_scoring_throughput_times_the_raw_forward_pass_and_the_scoring(tokenizer, monkeypatch, pytestconfig):
    monkeypatch.syspath_prepend(pytestconfig.rootpath)  # the study helpers are benchmarks/common/, outside the package
    from benchmarks.common.throughput import scoring_throughput

    metric = RADEMetric(tiny_rade_for(tokenizer).eval(), tokenizer, device="cpu", batch_size=2)
    contexts, references, candidates = [CONTEXT, ["do you like tea ?"], ["hi"]], [REFERENCE, "no", "hey"], \
        [CANDIDATE, "yes , green tea", "hello"]
    encoding, _ = encode_posterior(tokenizer, contexts, references, candidates, 48)
    calls = []

    def score():
        calls.append(1)
        return metric.score_turns(contexts, candidates, references=references)

    result = scoring_throughput(metric, encoding, score, repeats=2)
    assert len(calls) == 2 and result["items"] == 3 and result["batch_size"] == 2
    assert result["raw_forward_s"] > 0 and result["scoring_s"] > 0
    assert result["ratio_raw_over_scoring"] == round(result["raw_forward_s"] / result["scoring_s"], 3)


# ---- on a causal LM (this package's adaptation): one Llama / Gemma 3 reads the posterior input and generates -------

CAUSAL_KINDS = ("llama", "gemma3")


def tiny_causal_rade(kind: str, tokenizer, seed: int = 0, **kwargs) -> RADEModel:
    torch.manual_seed(seed)
    backbone = tiny_config(kind, vocab_size=len(tokenizer), pad_token_id=0, eos_token_id=1, bos_token_id=2)
    kwargs.setdefault("pooling", "last")
    return RADEModel(RADEConfig(backbone_config=backbone, lm_kind="causal-lm", max_seq_length=64,
                                max_reference_length=8, **kwargs)).eval()


def test_causal_config_pools_last_or_mean():
    RADEConfig(backbone_config=tiny_config("llama"), lm_kind="causal-lm", pooling="mean")
    for bad in ({"pooling": "segments"}, {"pooling": "first"}, {"lm_kind": "encoder"}):
        with pytest.raises(ValueError, match="pools last or mean|lm_kind must be one of"):
            RADEConfig(backbone_config=tiny_config("llama"), **{"lm_kind": "causal-lm", **bad})


@pytest.mark.parametrize("kind", CAUSAL_KINDS)
def test_causal_posterior_and_generator_inputs_are_transcripts(kind):
    tokenizer = causal_tokenizer(kind)
    layout = Layout.of(tokenizer, "speaker-tags")
    start = [tokenizer.bos_token_id] if kind == "gemma3" else []
    context = ["hi , how are you ?", "i am fine ."]
    rows, truncated = encode_causal_posterior(tokenizer, layout, context_lines(tokenizer, layout, [context, []]),
                                              ["i like tea .", "ok"], ["yes with milk .", "no"], 64)
    assert truncated == [False, False] and rows["input_ids"][0][: len(start)] == start
    assert tokenizer.decode(rows["input_ids"][0][len(start):]) == \
        "A: hi , how are you ?\nB: i am fine .\nReference: i like tea .\nCandidate: yes with milk ."
    assert tokenizer.decode(rows["input_ids"][1][len(start):]) == "Reference: ok\nCandidate: no"
    full = len(rows["input_ids"][0])
    cut, cut_truncated = encode_causal_posterior(tokenizer, layout, context_lines(tokenizer, layout, [context]),
                                                 ["i like tea ."], ["yes with milk ."], full - 3)
    assert cut_truncated == [True] and len(cut["input_ids"][0]) == full - 3
    assert cut["input_ids"][0][-(full - 3 - len(start)):] == rows["input_ids"][0][-(full - 3 - len(start)):]
    generation = encode_causal_generation(layout, context_lines(tokenizer, layout, [context]),
                                          utterance_ids(tokenizer, layout, ["i like tea ."]), 64, 8)
    ids, labels = generation["input_ids"][0], generation["labels"][0]
    assert tokenizer.decode(ids[len(start):]) == "A: hi , how are you ?\nB: i am fine .\nA: i like tea ."
    reference = len(tokenizer(" i like tea .", add_special_tokens=False)["input_ids"])
    assert labels == [-100] * (len(ids) - reference) + ids[-reference:]  # the reference's tokens, nothing else


@pytest.mark.parametrize("kind", CAUSAL_KINDS)
@pytest.mark.parametrize("pooling", ["last", "mean"])
def test_causal_rade_pools_the_lm_and_its_generation_loss_is_the_lms(kind, pooling):
    tokenizer = causal_tokenizer(kind)
    model = tiny_causal_rade(kind, tokenizer, pooling=pooling)
    assert model.head_names() == ["head"] and type(model.lm).__name__.endswith("ForCausalLM")
    layout = Layout.of(tokenizer, "speaker-tags")
    rows, _ = encode_causal_posterior(tokenizer, layout,
                                      context_lines(tokenizer, layout, [["hi , how are you ?"], ["do you like tea ?"]]),
                                      ["i am fine .", "no"], ["fine , thanks .", "yes , with milk ."], 64)
    collator = RADECollator(tokenizer)
    batch = collator([{"input_ids": i, "attention_mask": m} for i, m in zip(rows["input_ids"], rows["attention_mask"])])
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
        for row, ids in enumerate(rows["input_ids"]):
            hidden = model.lm.base_model(input_ids=torch.tensor([ids])).last_hidden_state[0]
            expected = hidden[-1] if pooling == "last" else hidden.mean(0)
            assert torch.allclose(output.pooled_output[row], expected, atol=1e-5)  # padding changes nothing
    generation = encode_causal_generation(layout, context_lines(tokenizer, layout, [["hi , how are you ?"], []]),
                                          utterance_ids(tokenizer, layout, ["i am fine .", "ok"]), 64, 8)
    features = [{"input_ids": rows["input_ids"][0], "attention_mask": rows["attention_mask"][0],
                 "generator_input_ids": ids, "generator_attention_mask": mask, "generator_labels": labels}
                for ids, mask, labels in zip(generation["input_ids"], generation["attention_mask"],
                                             generation["labels"])]
    for side in ("right", "left"):  # the labels line up with the padded inputs on either side
        tokenizer.padding_side = side
        batch = RADECollator(tokenizer)(features)
        with torch.no_grad():
            loss = model(**batch).generation_loss.item()
            terms = []
            for ids, labels in zip(generation["input_ids"], generation["labels"]):
                log_probs = torch.log_softmax(model.lm(input_ids=torch.tensor([ids])).logits[0].double(), -1)
                terms += [-log_probs[p - 1, label].item() for p, label in enumerate(labels) if label != -100]
        assert loss == pytest.approx(sum(terms) / len(terms), abs=1e-4)


def test_train_causal_rade_end_to_end(data_dir, tmp_path):
    """``hf-dialeval train rade`` with a causal LM: a tiny Llama, LoRA, the run loaded back and scoring."""
    tokenizer = causal_tokenizer("llama")
    backbone = tmp_path / "lm"
    tiny_causal_rade("llama", tokenizer).lm.save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    out = train_rade(RADETrainingArguments(
        output_dir=str(tmp_path / "run"), backbone=str(backbone), data_dir=str(data_dir), detokenize=True,
        train_data=["rade-chitchat"], max_train_items=16, max_eval_items=16, max_steps=2,
        per_device_train_batch_size=8, per_device_eval_batch_size=16, max_seq_length=64, max_reference_length=16,
        lora_rank=4, learning_rate=1e-3, logging_steps=1, use_cpu=True, report_to=[], disable_tqdm=True))
    record = json.loads((out / "training_record.json").read_text())
    steps = [entry for entry in record["log_history"] if "loss" in entry]
    assert len(steps) == 2 and all({"mse_candidate", "generation", "ranking"} <= entry.keys() for entry in steps)
    model, loaded_tokenizer = load_checkpoint("rade", out)
    assert (model.config.lm_kind, model.config.pooling, model.config.detokenize) == ("causal-lm", "last", True)
    contexts, responses, references = [CONTEXT, ["do you like tea ?"]], [CANDIDATE, "yes"], [REFERENCE, "no , coffee"]
    scores = RADEMetric(model, loaded_tokenizer, device="cpu").score_turns(
        contexts, responses, references=references).overall
    assert all(1.0 < score < 5.0 for score in scores)
    adapter, _ = load_checkpoint("rade", out / "adapter")
    assert RADEMetric(adapter, loaded_tokenizer, device="cpu").score_turns(
        contexts, responses, references=references).overall == pytest.approx(scores, abs=1e-3)
    # LoRA and the regression head train; the LM's output layer (tied to its embeddings) stays the backbone's
    saved = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert {name.split(".")[2] for name in saved} == {"head", "lm"}
    assert not [name for name in saved if ".lm." in name and "lora_" not in name]
    original = AutoModelForCausalLM.from_pretrained(backbone).get_output_embeddings().weight
    assert torch.equal(model.lm.get_output_embeddings().weight, original)


def test_lora_on_causal_rade_trains_its_head_not_the_lms_output_layer(tmp_path):
    """``head`` names RADE's regression head; the LM's ``lm_head`` (which ends with the same word) is not one. An
    adapter saved with a copy of the output layer under the entry ``head`` (as before this was so, when peft matched
    entries as name suffixes) still loads with it, whichever peft reads it."""
    tokenizer = causal_tokenizer("llama")
    model = tiny_causal_rade("llama", tokenizer)
    adapted = add_lora(model, rank=4, modules_to_save=model.head_names())
    trained = sorted({name.split(".modules_to_save")[0] for name, parameter in adapted.named_parameters()
                      if parameter.requires_grad and "lora_" not in name})
    assert trained == ["base_model.model.head"]
    # that layout, built by naming both modules (peft 0.22 matches whole names: "head" no longer copies lm_head),
    # then saved with the one entry the package wrote then
    with_output_layer = get_peft_model(tiny_causal_rade("llama", tokenizer), LoraConfig(
        r=4, target_modules=lora_target_pattern(model), modules_to_save=["lm_head", "head"]))
    assert [name for name, module in with_output_layer.base_model.model.named_modules()
            if isinstance(module, ModulesToSaveWrapper)] == ["lm.lm_head", "head"]
    with torch.no_grad():
        with_output_layer.base_model.model.lm.lm_head.modules_to_save["default"].weight.add_(1.0)
    with_output_layer.save_pretrained(tmp_path)
    adapter_config = tmp_path / "adapter_config.json"
    adapter_config.write_text(json.dumps({**json.loads(adapter_config.read_text()), "modules_to_save": ["head"]}))
    merged = load_adapter(tiny_causal_rade("llama", tokenizer), tmp_path).merge_and_unload()
    expected = tiny_causal_rade("llama", tokenizer).lm.get_output_embeddings().weight + 1.0
    assert torch.equal(merged.lm.get_output_embeddings().weight, expected)
