"""HolisticEval's logical self-consistency (hf_dialeval.metrics.holistic_eval.consistency) with tiny random RoBERTa NLI classifiers."""

import math

import pytest
import torch

from hf_dialeval.auxiliary.classifiers import label_column
from hf_dialeval.metrics.holistic_eval.consistency import NLI_DEFAULT, NLIConsistencyScorer
from hf_dialeval.modeling.checkpoints import CheckpointError

WORDS = ("i like tea . do you ? no , hate it coffee is fine my dog sleeps all day we have a cat never had pets "
         "where live in paris london always lived there").split()
#: roberta-large-mnli's order, and the reverse one of other MNLI checkpoints
MNLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
REVERSED_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}
#: the pairs' hypotheses are responses, their premises the same speaker's earlier utterances
CONTEXTS = [
    ["i like tea .", "do you ?", "no , i hate tea .", "coffee is fine .", "my dog sleeps all day ."],
    ["hi ."],
    ["we have a cat .", "where do you live ?"],
    ["i live in paris .", "i live in london ?", "", "where do you live ?"],
]
RESPONSES = ["i never had pets .", "hello .", "i always lived in paris .", "i lived there all day ."]


def tiny_tokenizer(model_max_length: int = 512):
    """A word-level tokenizer with RoBERTa's special tokens and pair format (``<s> a </s></s> b </s>``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {token: index for index, token in enumerate(specials + sorted(set(WORDS)))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", pad_token="<pad>", unk_token="<unk>",
                                   model_max_length=model_max_length,
                                   model_input_names=["input_ids", "attention_mask"])


def save_nli(folder, id2label, seed: int = 0, model_max_length: int = 512) -> str:
    """A tiny random RoBERTa sequence classifier with ``id2label``, saved (safetensors) with its tokenizer."""
    from transformers import RobertaConfig, RobertaForSequenceClassification

    tokenizer = tiny_tokenizer(model_max_length)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                           id2label=id2label, label2id={label: index for index, label in id2label.items()})
    torch.manual_seed(seed)
    RobertaForSequenceClassification(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def mnli_folder(tmp_path_factory) -> str:
    return save_nli(tmp_path_factory.mktemp("mnli"), MNLI_LABELS)


@pytest.fixture(scope="module")
def scorer(mnli_folder) -> NLIConsistencyScorer:
    return NLIConsistencyScorer(mnli_folder, device="cpu", batch_size=3)


def manual_contradiction(scorer: NLIConsistencyScorer, premise: str, hypothesis: str, column: int) -> float:
    """The softmax of the model's logits for one unpadded pair, at ``column``."""
    inputs = scorer.nli.tokenizer(premise, hypothesis, return_tensors="pt")
    with torch.no_grad():
        logits = scorer.nli.model(**inputs).logits[0]
    return logits.softmax(dim=-1)[column].item()


def test_label_index_follows_id2label(scorer, tmp_path):
    from transformers import RobertaConfig

    assert scorer.nli.column == 0
    reversed_scorer = NLIConsistencyScorer(save_nli(tmp_path, REVERSED_LABELS, seed=1), device="cpu")
    assert reversed_scorer.nli.column == 2
    assert label_column(RobertaConfig(id2label={0: "Entailment", 1: "Contradict"}), "contradiction") == 1
    for model, column in ((scorer, 0), (reversed_scorer, 2)):
        got = model.contradiction_probabilities(["i like tea .", "my dog sleeps ."],
                                                ["i hate tea .", "we have a cat ."])
        expected = [manual_contradiction(model, "i like tea .", "i hate tea .", column),
                    manual_contradiction(model, "my dog sleeps .", "we have a cat .", column)]
        assert got == pytest.approx(expected, abs=1e-5)


def test_config_without_contradiction_label_raises(tmp_path):
    from transformers import RobertaConfig

    with pytest.raises(ValueError, match="contradiction") as error:
        label_column(RobertaConfig(id2label={0: "LABEL_0", 1: "LABEL_1"}), "contradiction")
    assert "LABEL_0" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ValueError, match="LABEL_1"):
        NLIConsistencyScorer(save_nli(tmp_path, {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}), device="cpu")


def test_scores_average_same_speaker_pairs(scorer):
    def p(premise: str, response: str) -> float:
        return manual_contradiction(scorer, premise, response, 0)

    scores = scorer.score(CONTEXTS, RESPONSES)
    # five utterances: the response's speaker said the 4th and the 2nd (context[-2], context[-4])
    first = 1 - (p("coffee is fine .", RESPONSES[0]) + p("do you ?", RESPONSES[0])) / 2
    assert scores[0] == pytest.approx(first, abs=1e-5)
    assert math.isnan(scores[1])  # no prior utterance of the same speaker
    assert scores[2] == pytest.approx(1 - p("we have a cat .", RESPONSES[2]), abs=1e-5)
    # context[-2] is empty: only context[-4] counts
    assert scores[3] == pytest.approx(1 - p("i live in paris .", RESPONSES[3]), abs=1e-5)
    assert all(0.0 <= s <= 1.0 for s in scores if not math.isnan(s))


def test_nan_when_no_prior_utterance(scorer):
    scores = scorer.score([["hi ."], [], ["", "where do you live ?"]], ["hello .", "hello .", "in paris ."])
    assert all(math.isnan(s) for s in scores)
    assert scorer.contradiction_probabilities([], []) == []


def test_batch_size_and_order(scorer, mnli_folder):
    reference = scorer.score(CONTEXTS, RESPONSES)
    for batch_size in (1, 64):
        other = NLIConsistencyScorer(mnli_folder, device="cpu", batch_size=batch_size).score(CONTEXTS, RESPONSES)
        assert other == pytest.approx(reference, abs=1e-5, nan_ok=True)
    order = [3, 0, 2, 1]
    permuted = scorer.score([CONTEXTS[i] for i in order], [RESPONSES[i] for i in order])
    assert permuted == pytest.approx([reference[i] for i in order], abs=1e-5, nan_ok=True)


def test_long_premise_is_cut_and_hypothesis_kept(tmp_path):
    short = NLIConsistencyScorer(save_nli(tmp_path, MNLI_LABELS, model_max_length=16), device="cpu")
    assert short.nli.max_length == 16
    premise, hypothesis = "i like tea . " * 20, "my dog sleeps all day ."
    cut = short.contradiction_probabilities([premise], [hypothesis])[0]
    # what the model sees: the end of the premise, then the whole hypothesis (16 tokens with the specials)
    kept = " ".join(premise.split()[-6:])
    assert cut == pytest.approx(manual_contradiction(short, kept, hypothesis, 0), abs=1e-5)


def test_missing_checkpoint_names_the_option(tmp_path):
    with pytest.raises(CheckpointError, match="--nli-checkpoint") as error:
        NLIConsistencyScorer(str(tmp_path / "no-such-nli"), device="cpu")
    assert "nli_checkpoint" in str(error.value) and "\n" not in str(error.value)
    assert NLI_DEFAULT == "roberta-large-mnli"


def test_invalid_arguments(scorer, mnli_folder):
    with pytest.raises(ValueError, match="batch_size"):
        NLIConsistencyScorer(mnli_folder, device="cpu", batch_size=0)
    with pytest.raises(ValueError, match="one context per response"):
        scorer.score([["a", "b"]], [])
    with pytest.raises(ValueError, match="give them in pairs"):
        scorer.contradiction_probabilities(["a"], [])
