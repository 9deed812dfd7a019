"""A context and a response encoded within the token limit: what is kept is what the tokenizer keeps of the whole
pair, the oldest context tokens dropped first, then the response's last, though words past the limit are cut
before tokenizing."""

import random

import pytest
from transformers import AutoTokenizer

from hf_dialeval.inference.model_metric import encode_context_response, first_words, last_words
from hf_dialeval.modeling.offline_models import offline_backbone_path

WORDS = "the a cat , . ! ?? dog\n likes  runs hello-world don't 123 café naïve".split(" ")


def whole_pair_kept(tokenizer, context, response, max_length):
    """The pair tokenized whole, then cut as the docstring of encode_context_response says."""
    encoding = tokenizer(f" {tokenizer.sep_token} ".join(context), response)
    ids, sequence = encoding["input_ids"], encoding.sequence_ids()
    excess = len(ids) - max_length
    drop = set([p for p, s in enumerate(sequence) if s == 0][:max(excess, 0)])
    if excess > len(drop):
        drop.update([p for p, s in enumerate(sequence) if s == 1][-(excess - len(drop)):])
    return [token for p, token in enumerate(ids) if p not in drop], bool(drop)


@pytest.mark.parametrize("max_length", [16, 64])
def test_long_texts_keep_what_the_whole_pair_keeps(max_length):
    tokenizer = AutoTokenizer.from_pretrained(offline_backbone_path())
    rng = random.Random(0)
    contexts = [[" ".join(rng.choices(WORDS, k=rng.randint(1, 120))) for _ in range(rng.randint(1, 6))]
                for _ in range(40)]
    responses = [" ".join(rng.choices(WORDS, k=rng.randint(1, 150))) for _ in range(40)]
    contexts[0], responses[0] = ["hello"] * 2000, "word " * 5000  # far past any limit
    encoding, truncated = encode_context_response(tokenizer, contexts, responses, max_length)
    expected = [whole_pair_kept(tokenizer, c, r, max_length) for c, r in zip(contexts, responses)]
    assert encoding["input_ids"] == [ids for ids, _ in expected]
    assert truncated == [cut for _, cut in expected] and truncated[0]


def test_words_are_cut_with_their_own_spacing():
    assert last_words(["a b c", "d  e\nf", "g h"], 4) == ["e\nf", "g h"]
    assert last_words(["a b", "c d"], 2) == ["c d"] and last_words(["a b"], 5) == ["a b"]
    assert first_words("a  b\nc d e", 3) == "a  b\nc" and first_words("a b c ", 3) == "a b c "
