"""A prefix that several continuations share runs once, and each continuation's log-probabilities equal those of
the prefix and continuation run as one sequence, for every causal-LM family a metric scores with."""

import math

import pytest
import torch
from conftest import TINY_VOCAB, tiny_config
from transformers import AutoModelForCausalLM, BertLMHeadModel

from hf_dialeval.inference import shared_prefixes
from hf_dialeval.inference.shared_prefixes import continuation_log_probs


def tiny_lm(family: str):
    torch.manual_seed(1)
    if family == "bert":
        return BertLMHeadModel(tiny_config("bert", is_decoder=True)).eval()
    overrides = {"sliding_window": 64} if family == "gemma3" else {}
    return AutoModelForCausalLM.from_config(tiny_config(family, **overrides)).eval()


def whole_sequence_log_probs(lm, prefix: list[int], continuation: list[int]) -> list[float]:
    logits = lm(input_ids=torch.tensor([prefix + continuation])).logits[0].double()
    return [torch.log_softmax(logits[len(prefix) - 1 + t], -1)[token].item() for t, token in enumerate(continuation)]


@pytest.mark.parametrize("family", ["gpt2", "bert", "llama", "gemma3"])
@pytest.mark.parametrize("branch_positions", [256, 1])  # a prefix's continuations in one row, or one a row
def test_continuations_score_as_whole_sequences(family, branch_positions, monkeypatch):
    monkeypatch.setattr(shared_prefixes, "BRANCH_POSITIONS", branch_positions)
    lm = tiny_lm(family)
    generator = torch.Generator().manual_seed(0)
    prefixes = [torch.randint(3, TINY_VOCAB, (length,), generator=generator).tolist() for length in (5, 2, 9, 1)]
    continuations = [(prefix, torch.randint(3, TINY_VOCAB, (length,), generator=generator).tolist())
                     for prefix, length in [(0, 3), (0, 6), (1, 1), (2, 4), (2, 2), (3, 5), (0, 3)]]
    ran: list[tuple[int, ...]] = []
    hook = lm.base_model.register_forward_pre_hook(
        lambda _, args, kwargs: ran.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    with torch.no_grad():
        scored = continuation_log_probs(lm, prefixes, continuations, batch_size=2, pad_token_id=0)
        hook.remove()
        if branch_positions > 1:  # each prefix ran once, its continuations after it: 5 + 3 + 6 + 3 tokens the longest
            assert sum(rows for rows, _ in ran) == len(prefixes) and ran[0] == (2, 17)
        else:  # each continuation in a row of its own, after its prefix: 9 + 4 tokens the longest
            assert sum(rows for rows, _ in ran) == len(continuations) and ran[0] == (2, 13)
        for (prefix, continuation), values in zip(continuations, scored):
            assert values == pytest.approx(whole_sequence_log_probs(lm, prefixes[prefix], continuation), abs=1e-5)


def test_a_prefix_without_continuations_does_not_run():
    lm = tiny_lm("llama")
    ran: list[int] = []
    lm.base_model.register_forward_pre_hook(lambda _, args, kwargs: ran.append(kwargs["input_ids"].shape[0]),
                                            with_kwargs=True)
    with torch.no_grad():
        scored = continuation_log_probs(lm, [[5, 6, 7], [8, 9]], [(1, [10, 11])], batch_size=4, pad_token_id=0)
    assert ran == [1] and len(scored) == 1 and len(scored[0]) == 2


def test_a_continuation_beyond_the_sliding_window_is_refused():
    lm = tiny_lm("gemma3")  # a sliding window of 64 tokens
    with pytest.raises(ValueError, match="exceed the model's sliding window of 64"):
        continuation_log_probs(lm, [[5] * 60], [(0, [6] * 5)], batch_size=4, pad_token_id=0)


def test_a_non_finite_continuation_leaves_its_row_mates_finite():
    lm = tiny_lm("llama")
    with torch.no_grad():
        lm.get_input_embeddings().weight[9] = math.nan  # the model computes nan wherever it reads token 9
        scored = continuation_log_probs(lm, [[5, 6]], [(0, [7, 8]), (0, [9, 8]), (0, [4])], batch_size=4,
                                        pad_token_id=0)
        assert scored[0] == pytest.approx(whole_sequence_log_probs(lm, [5, 6], [7, 8]), abs=1e-5)
        assert scored[2] == pytest.approx(whole_sequence_log_probs(lm, [5, 6], [4]), abs=1e-5)
    assert math.isnan(scored[1][1])


def test_a_continuation_given_twice_runs_once():
    lm = tiny_lm("llama")
    ran: list[tuple[int, ...]] = []
    lm.base_model.register_forward_pre_hook(lambda _, args, kwargs: ran.append(tuple(kwargs["input_ids"].shape)),
                                            with_kwargs=True)
    with torch.no_grad():
        scored = continuation_log_probs(lm, [[5, 6]], [(0, [7, 8]), (0, [7, 8])], batch_size=4, pad_token_id=0)
    assert ran == [(1, 4)] and scored[0] == scored[1] and len(scored[0]) == 2
