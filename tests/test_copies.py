"""What a reply copies (hf_dialeval.data.copies): runs of tokens said before, in the context or the reply itself."""

import pytest

from hf_dialeval.data.copies import copied_tokens


def test_a_run_copied_from_the_history_is_marked_and_the_rest_is_not():
    assert copied_tokens([1, 2, 3, 4, 5], [9, 2, 3, 4, 5, 8], min_span=4) == [False, True, True, True, True, False]
    # three tokens in a row are not a run of four
    assert copied_tokens([1, 2, 3, 4, 5], [9, 2, 3, 4, 8], min_span=4) == [False] * 5


def test_an_echo_and_a_short_reply_said_again_are_copies_whole():
    assert copied_tokens([7, 1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], min_span=4) == [True] * 6
    # shorter than min_span: a copy only when all of it was said before, in a row
    assert copied_tokens([7, 1, 2, 8], [1, 2], min_span=4) == [True, True]
    assert copied_tokens([7, 1, 8, 2], [1, 2], min_span=4) == [False, False]


def test_a_loop_copies_its_own_first_turn_and_may_overlap_it():
    assert copied_tokens([], [1, 2, 3, 1, 2, 3, 1, 2, 3], min_span=4) == [False] * 3 + [True] * 6
    assert copied_tokens([], [5, 5, 5, 5, 5, 5], min_span=4) == [False] + [True] * 5  # one word said over and over
    assert copied_tokens([], [1, 2, 3, 4], min_span=4) == [False] * 4


def test_min_span_must_be_positive():
    with pytest.raises(ValueError, match="min_span"):
        copied_tokens([1], [1], min_span=0)
